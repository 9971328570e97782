"""The redaction rules: a secret environment variable's value, ``NAME=value`` for a name that marks a
secret, and the common key formats are replaced and counted; short values, paths, code and prose are
left exactly as they were."""

from __future__ import annotations

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
