"""``machine export`` and ``machine train`` say how many secrets they kept out of the training data, in
words and in ``--json``, and what they wrote holds none of them; ``export`` says what it found by kind,
for each shape people paste (a URL's password, a .env value, a password on a command line or in a
header)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers.secret_runs import (
    DOTENV_URL,
    ENVIRONMENT,
    KEY,
    PASTED,
    SECRETS_PER_RUN,
    pasted,
    read_dotenv,
)
from helpers.training import TRAIN_CASES, Counting, make_caps

from machine import open_workspace
from machine.clients import TRAINERS, TrainerEntry

Invoke = Callable[..., Result]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """caps with two stored good runs that read the project's .env, its key also in the environment."""
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    make_caps(tmp_path / "ws")
    ws = open_workspace(tmp_path / "ws", budget="none")
    ws.store.put_many([read_dotenv(ws, c["id"], "caps") for c in TRAIN_CASES[:2]])
    rules = [{"match": ".", "turns": [{"text": "no idea"}]}]
    (tmp_path / "ws" / "script.json").write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return tmp_path / "ws"


def test_export_says_how_many_secrets_it_redacted(invoke: Invoke, root: Path) -> None:
    out = root / "caps.jsonl"
    done = invoke("export", "caps", "--out", out, "--workspace", root)
    assert done.exit_code == 0, done.output
    said = f"redacted {2 * SECRETS_PER_RUN} things that look like secrets from what was written: "
    assert f"{said}{2 * SECRETS_PER_RUN} values from the environment or .env" in done.stdout.splitlines()
    assert KEY not in out.read_text(encoding="utf-8")
    done = invoke("export", "caps", "--out", out, "--json", "--workspace", root)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["redacted"] == 2 * SECRETS_PER_RUN


def test_train_says_how_many_secrets_it_redacted(
    invoke: Invoke, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = Counting()
    monkeypatch.setitem(TRAINERS, "counting", TrainerEntry(lambda _request: trainer))
    common = ["--harness", "scripted", "--script", root / "script.json", "--workspace", root]
    args = ["train", "caps", "--trainer", "counting", "--any-model", "--trials", "1", "--force", *common]
    done = invoke(*args)
    assert done.exit_code == 0, done.output
    [record] = (root / ".machine" / "training").iterdir()
    redacted = 2 * SECRETS_PER_RUN
    assert (
        f"training record {record.name}: 2 examples from 2 runs (2 of " in done.stderr
        and f"; {redacted} secrets redacted)" in done.stderr
    )
    assert f"of them targets; {redacted} secrets redacted" in done.stdout
    done = invoke(*args, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["report"]["training"]["redacted"] == redacted
    assert all(KEY not in json.dumps(e.messages) for examples in trainer.prepared for e in examples)


KINDS = {
    "url": "1 password in a URL", "dotenv": "1 value from the environment or .env",
    "word_password": "1 value set for a secret's name", "curl": "1 password on a command line",
    "mysql": "1 password on a command line", "basic": "1 authorization header",
    "token": "1 authorization header", "pgpassword": "1 value set for a secret's name",
    "yaml": "1 value set for a secret's name",
}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(PASTED))
def test_export_redacts_what_people_paste_and_says_what_it_found(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """A URL's password (scheme, user and host kept), a value of the workspace's .env whatever its name,
    a password set by name without a digit, on a command line, in a header: each is gone from the file,
    and the line says what was found, not that every secret is gone."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "ws"
    make_caps(root)
    (root / ".env").write_text(f"DATABASE_URL={DOTENV_URL}\nDEBUG=true\n", encoding="utf-8")
    text, secret, written = PASTED[shape]
    ws = open_workspace(root, budget="none")
    ws.store.put_many([pasted(ws, "ann", "caps", text)])
    out = root / "caps.jsonl"
    done = invoke("export", "caps", "--out", out, "--workspace", root)
    assert done.exit_code == 0, done.output
    [row] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    [tool] = [m["content"] for m in row["messages"] if m["role"] == "tool"]
    assert secret not in json.dumps(row) and written in tool
    found = f"redacted 1 thing that looks like a secret from what was written: {KINDS[shape]}"
    assert found in done.stdout.splitlines()
    done = invoke("export", "caps", "--out", out, "--json", "--workspace", root)
    assert json.loads(done.stdout)["redacted"] == 1
