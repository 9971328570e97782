"""The redaction rules: a secret environment variable's value, every value of the workspace's .env,
``NAME=value`` for a name that marks a secret, the common key formats, and what people paste (a URL's
password, a password on a command line or in a header) are replaced and counted by kind; short values,
paths, code and prose are left exactly as they were."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from machine.runs import SECRET_WORDS, Redactor
from machine.runs._secrets import marks_secret

ENV = {
    "OPENAI_API_KEY": "sk-proj-Xq7vRt2LmN9pWc4ZbY8sHk3JdF6gA1eU",
    "GITLAB_PASSWORD": "mellon and friends",
    "SHORT_TOKEN": "abc123",
    "TOKENIZERS_PARALLELISM": "false",
    "SSH_KEY_PATH": "/home/me/.ssh/id_ed25519",
    "EDITOR": "vim-but-long-enough",
}


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("key sk-proj-Xq7vRt2LmN9pWc4ZbY8sHk3JdF6gA1eU.", "key [REDACTED:OPENAI_API_KEY]."),
        ("said: mellon and friends", "said: [REDACTED:GITLAB_PASSWORD]"),
        ("export DB_PASSWORD='s3cret-Value'", "export DB_PASSWORD='[REDACTED:DB_PASSWORD]'"),
        ('{"api_key": "ab12cd34ef56"}', '{"api_key": "[REDACTED:api_key]"}'),
        (
            "AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG",
            "AWS_SECRET_ACCESS_KEY: [REDACTED:AWS_SECRET_ACCESS_KEY]",
        ),
        ("sk-ant-api03-" + "A1b2" * 10, "[REDACTED]"),
        ("token ghp_" + "a1B2" * 9 + " here", "token [REDACTED] here"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"),
        ("id AKIAIOSFODNN7EXAMPLE in the log", "id [REDACTED] in the log"),
        ("xoxb-1234567890-abcdefghij", "[REDACTED]"),
        ("hf_" + "x1" * 17, "[REDACTED]"),
        ("tml-" + "Ab3" * 8, "[REDACTED]"),
        ("Authorization: Bearer abc.def-ghi_jkl012345", "Authorization: Bearer [REDACTED]"),
        (
            "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\nz",
            "a\n[REDACTED]\nz",
        ),
    ],
)
def test_secrets_are_replaced_by_a_marker(text: str, redacted: str) -> None:
    redactor = Redactor.here(environ=ENV)
    assert redactor.text(text) == redacted
    assert redactor.count == 1


@pytest.mark.parametrize(
    "text",
    [
        "abc123 is too short to be taken for SHORT_TOKEN's value, and false is false",
        "my key is at /home/me/.ssh/id_ed25519",
        "tokens = tokenizer.encode(text); key=itemgetter(1); MAX_TOKENS=100000000",
        "Primary key: customer_identifier; the password field; sk-learn; tml-renderers",
        "KEY_FILE=/etc/ssl/private/site.pem and vim-but-long-enough",
        "Bearer of bad news",
    ],
)
def test_what_is_no_secret_is_left_exactly_as_it_was(text: str) -> None:
    redactor = Redactor.here(environ=ENV)
    assert redactor.text(text) == text
    assert redactor.count == 0


def test_json_data_is_redacted_in_every_string_and_nothing_else_changes() -> None:
    redactor = Redactor.here(environ=ENV)
    data = {"role": "tool", "content": [{"type": "text", "text": "mellon and friends"}], "n": 3, "ok": None}
    redacted = {"type": "text", "text": "[REDACTED:GITLAB_PASSWORD]"}
    assert redactor.data(data) == {"role": "tool", "content": [redacted], "n": 3, "ok": None}
    assert redactor.count == 1


def test_the_names_that_mark_a_secret() -> None:
    assert {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} <= set(SECRET_WORDS)
    assert all(marks_secret(n) for n in ("OPENAI_API_KEY", "gh_token", "DB_PASSWD", "GOOGLE_CREDENTIALS"))
    assert not any(marks_secret(n) for n in ("HOME", "PATH", "DB_URL", "EDITOR"))


@pytest.mark.parametrize(
    ("text", "redacted", "kind"),
    [
        (
            "DATABASE_URL=postgres://admin:s3cret-word@db.internal/prod",
            "DATABASE_URL=postgres://admin:[REDACTED]@db.internal/prod",
            "url",
        ),
        ("redis://:opensesame@cache:6379/0", "redis://:[REDACTED]@cache:6379/0", "url"),
        ("postgresql://bob:p@ss@db/x", "postgresql://bob:[REDACTED]@db/x", "url"),
        ("db_password=correcthorsebattery", "db_password=[REDACTED:db_password]", "setting"),
        ("curl -u user:pass https://x.test", "curl -u user:[REDACTED] https://x.test", "command"),
        ("curl --user 'al:wonder land' x", "curl --user 'al:[REDACTED]' x", "command"),
        ("mysql -u root -pPASS shop", "mysql -u root -p[REDACTED] shop", "command"),
        ("wget --password=hunter2 x", "wget --password=[REDACTED] x", "command"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]", "header"),
        ('-H "authorization: Token 9a8b7c"', '-H "authorization: Token [REDACTED]"', "header"),
        ("X-Api-Key: abcdef0123456789", "X-Api-Key: [REDACTED]", "header"),
        ('PGPASSWORD="hunter2" psql', 'PGPASSWORD="[REDACTED:PGPASSWORD]" psql', "setting"),
        ("user: bob\npassword: opensesame\n", "user: bob\npassword: [REDACTED:password]\n", "setting"),
        ('{"password": "it\'s a secret"}', '{"password": "[REDACTED:password]"}', "setting"),
        ("SMTP_PASS=hunter2", "SMTP_PASS=[REDACTED:SMTP_PASS]", "setting"),
    ],
)
def test_what_people_paste_loses_its_secret_and_keeps_the_rest(text: str, redacted: str, kind: str) -> None:
    redactor = Redactor.here(environ={})
    assert redactor.text(text) == redacted
    assert redactor.kinds == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "the password field; enter your password: ",
        "Password: must be 8 characters long. Password: required",
        "def f(password: str) -> None: password = password; pw = self.password; password=$PW",
        "password = os.environ['PW']; password=get_password(); password: ********",
        "docker run -u 1000:1000 img; git push -u origin main; mysql -u root -p shop",
        "https://host:8080/path@x and http://localhost:8080/ and bob@example.com",
        "Authorization required here; compass_heading=north12345 bypass=yes; --password-stdin < f",
    ],
)
def test_prose_and_code_about_passwords_stay_as_they_were(text: str) -> None:
    redactor = Redactor.here(environ={})
    assert redactor.text(text) == text
    assert redactor.count == 0


def test_every_value_of_the_workspace_env_is_redacted_whatever_its_name(tmp_path: Path) -> None:
    """Past ``MIN_SECRET_CHARS``; paths, numbers and a few common words (production) are left."""
    (tmp_path / ".env").write_text(
        "DATABASE_URL=postgres://admin:Tr0ub4dor-and-3@db.internal/prod\nexport SESSION_COOKIE='qwertyuiop'\n"
        "NODE_ENV=production\nDEBUG=true\nPORT=5432\nCACHE_BYTES=100000000\nDATA=/srv/data/set\n",
        encoding="utf-8",
    )
    redactor = Redactor.here(tmp_path, environ={})
    text = "url postgres://admin:Tr0ub4dor-and-3@db.internal/prod; cookie qwertyuiop; production 5432"
    said = redactor.text(text + " true 100000000 /srv/data/set")
    assert said == (
        "url [REDACTED:DATABASE_URL]; cookie [REDACTED:SESSION_COOKIE]; production 5432"
        " true 100000000 /srv/data/set"
    )
    assert redactor.kinds == {"value": 2}


def test_the_password_of_a_url_in_the_environment_is_found_on_its_own() -> None:
    redactor = Redactor.here(environ={"DATABASE_URL": "postgres://admin:Tr0ub4dor-and-3@db/prod"})
    assert (
        redactor.text("psql asked; I typed Tr0ub4dor-and-3") == "psql asked; I typed [REDACTED:DATABASE_URL]"
    )


def test_what_was_found_is_said_by_kind() -> None:
    redactor = Redactor.here(environ={})
    redactor.data(["https://u:pw-one@h.test/", "https://u:pw-two@h.test/", "Authorization: Basic eHg="])
    assert Redactor.described(redactor.kinds) == "2 passwords in URLs, 1 authorization header"


def test_the_screen_finds_text_exactly_when_some_shape_would_look_at_it() -> None:
    """Text with no trigger of any shape skips every shape at once: the screen must find each trigger
    (inside words, at either end, beside another) and nothing else."""
    from machine.runs._secret_shapes import any_trigger, shapes

    screen = any_trigger()
    assert screen is not None
    triggers = sorted({t for shape in shapes() for t in shape.triggers})
    for trigger in triggers:
        for text in (trigger, f"x{trigger}y", f"ab\n{trigger}", f"{trigger}{trigger[:1]}"):
            assert screen.search(text) is not None, text
    rng = random.Random(7)
    letters = "abcdeghikmoprstuwxyz-_:/ \n"
    for _ in range(3000):
        text = "".join(rng.choice(letters) for _ in range(rng.randint(0, 12)))
        assert (screen.search(text) is not None) == any(t in text for t in triggers), text


def test_finds_says_whether_text_holds_a_secret_and_counts_nothing() -> None:
    redactor = Redactor.here(environ=ENV)
    assert redactor.finds("the key sk-proj-Xq7vRt2LmN9pWc4ZbY8sHk3JdF6gA1eU")
    assert redactor.finds("postgres://me:hunter2hunter2@db/app")
    assert not redactor.finds("nothing to see here, only prose about keys")
    assert redactor.count == 0
