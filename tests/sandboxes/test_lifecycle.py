"""Creating, seeding and removing sandboxes; the workspace's keep_sandboxes; and what a sandbox
without bubblewrap still guarantees (a scrubbed environment, its own process group)."""

from __future__ import annotations

import os
import random
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from machine import (
    ToolContext,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    tool,
)
from machine.clients.scripted import Script, ScriptedHarness
from machine.errors import BadInputError
from machine.sandboxes import LocalSandbox, SandboxEscape
from machine.sandboxes._local import ENVIRONMENT

# --- create -----------------------------------------------------------------------------------------


def test_create_makes_a_private_folder_seeded_with_nested_files(tmp_path: Path) -> None:
    files = {"README.md": "# hi\n", "src/pkg/mod.py": "x = 1\n", "tests/test_mod.py": "", "ünï.txt": "ü"}
    box = LocalSandbox.create(tmp_path / "sandboxes", "run-1", files, isolate=False)
    assert box.path == (tmp_path / "sandboxes" / "run-1").resolve()
    assert stat.S_IMODE(box.path.stat().st_mode) == 0o700
    found = {p.relative_to(box.path).as_posix(): p.read_text() for p in box.path.rglob("*") if p.is_file()}
    assert found == files


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/evil", "a/../../escape.txt", "x\x00y", ".", "/work"])
def test_create_refuses_a_starting_file_that_escapes_and_leaves_nothing(tmp_path: Path, name: str) -> None:
    root = tmp_path / "sandboxes"
    with pytest.raises(BadInputError):
        LocalSandbox.create(root, "run-1", {"fine.txt": "ok", name: "bad"}, isolate=False)
    assert list(root.iterdir()) == []  # the half-made sandbox is gone
    assert not (tmp_path / "escape.txt").exists()


def test_create_reports_a_starting_file_it_cannot_write(tmp_path: Path) -> None:
    root = tmp_path / "sandboxes"
    with pytest.raises(BadInputError, match=r"starting file 'a/b\.txt' could not be written"):
        LocalSandbox.create(root, "run-1", {"a": "a file", "a/b.txt": "under a file"}, isolate=False)
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("run_id", ["", ".", "..", "a/b", "../x"])
def test_create_refuses_a_run_id_that_is_not_one_folder_name(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(BadInputError):
        LocalSandbox.create(tmp_path / "sandboxes", run_id, isolate=False)
    assert not (tmp_path / "x").exists()


def test_escaping_is_a_sandbox_escape(tmp_path: Path) -> None:
    with pytest.raises(SandboxEscape):
        LocalSandbox.create(tmp_path, "run-1", {"../x": ""}, isolate=False)


# --- remove -----------------------------------------------------------------------------------------


def test_remove_deletes_everything_even_locked_folders_and_leaves_links_targets(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    box = LocalSandbox.create(
        tmp_path / "sandboxes", "run-1", {"a/b/c.txt": "c", "d.txt": "d"}, isolate=False
    )
    os.symlink(outside, box.path / "link-out")
    os.symlink(outside / "keep.txt", box.path / "a" / "file-link")
    (box.path / "a" / "b").chmod(0o000)
    (box.path / "a").chmod(0o500)
    box.remove()
    assert not box.path.exists()
    assert (outside / "keep.txt").read_text() == "keep"  # links are removed, never followed
    assert (tmp_path / "sandboxes").is_dir()
    box.remove()  # a second time is a no-op


# --- the workspace ------------------------------------------------------------------------------------


CALL_THE_TOOL = ScriptedHarness(
    Script.model_validate(
        {"rules": [{"match": ".", "turns": [{"tool_calls": [{"name": "scribble"}]}, {"text": "done"}]}]}
    )
)
"""Calls the machine's one tool, then answers: enough to make Workspace.run build a sandbox."""


def machine_that_writes(seen: list[Any]) -> Any:
    @tool
    async def scribble(ctx: ToolContext) -> str:
        """Write a file in the sandbox."""
        assert isinstance(ctx.sandbox, LocalSandbox)
        seen.append(ctx.sandbox)
        (ctx.sandbox.path / "made.txt").write_text("made")
        return "ok"

    rubric = define_rubric({"any": "Anything."})

    return define_machine(
        name="scribbler",
        intent="Write a file.",
        instructions="Write a file.",
        model="echo",
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"any": check("any", lambda run: True)}),
        tools=[scribble],
    )


@pytest.mark.parametrize("keep", [True, False])
async def test_the_workspace_keeps_the_sandbox_only_when_asked(tmp_path: Path, keep: bool) -> None:
    seen: list[LocalSandbox] = []
    ws = open_workspace(tmp_path, harness=CALL_THE_TOOL, keep_sandboxes=keep)
    run = await ws.run(machine_that_writes(seen), "go")
    assert run.status == "ok", run.error
    assert run.tool_results[0].is_error is False
    folder = tmp_path.resolve() / ".machine" / "sandboxes" / run.id
    assert seen[0].path == folder
    assert folder.exists() is keep
    if keep:
        assert (folder / "made.txt").read_text() == "made"


# --- without bubblewrap: the environment is still scrubbed ---------------------------------------


async def test_an_unisolated_sandbox_says_so_and_still_scrubs_the_environment(
    plain: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "sk-fake-should-not-leak")
    assert plain.isolated is False
    assert plain.command_line(["true"]) == ["true"]
    result = await plain.exec(["env"])
    assert result.ok
    assert "TINKER_API_KEY" not in result.stdout and "sk-fake" not in result.stdout
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert names <= {*ENVIRONMENT, "PWD"}
    assert f"HOME={plain.path}" in result.stdout.splitlines()
    where = await plain.exec("pwd; echo x > here.txt")
    assert where.stdout.strip() == str(plain.path)
    assert (plain.path / "here.txt").exists()


async def test_an_unisolated_command_gets_exit_codes_and_a_missing_program_is_127(
    plain: LocalSandbox,
) -> None:
    failed = await plain.exec("echo oops >&2; exit 4")
    assert (failed.exit_code, failed.stderr) == (4, "oops\n")
    missing = await plain.exec(["no-such-program-here"])
    assert missing.exit_code == 127 and "No such file or directory" in missing.stderr


def holders(duration: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", duration.encode()]:
                found.append(int(entry))
    return found


async def test_an_unisolated_timeout_kills_the_commands_process_group(plain: LocalSandbox) -> None:
    """Without bubblewrap the group is what can be killed: background children die with the command.
    (A child that calls setsid leaves the group and may survive: that is why ``run`` refuses there.)"""
    duration = f"{random.randint(300_000, 999_999)}.{random.randint(100, 999)}"
    try:
        result = await plain.exec(f"sleep {duration} & sleep 600", timeout_s=1)
        assert result.timed_out and result.exit_code is None
        assert "killed after 1 s, the time limit]" in result.stderr
        deadline = time.monotonic() + 3
        while holders(duration) and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        assert holders(duration) == []
    finally:
        for pid in holders(duration):
            os.kill(pid, 9)


# --- finding a bubblewrap that works ---------------------------------------------------------------


@pytest.fixture
def fake_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in ``bwrap`` first on PATH, whose behaviour each test writes; the real check runs again
    for the next test."""
    from machine.sandboxes import _local

    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    _local._working_bwrap.cache_clear()
    try:
        yield folder / "bwrap"
    finally:
        _local._working_bwrap.cache_clear()


def write_script(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_an_older_bubblewrap_runs_without_the_nested_namespace_ban(fake_bwrap: Path, tmp_path: Path) -> None:
    write_script(fake_bwrap, 'for a in "$@"; do [ "$a" = --disable-userns ] && exit 1; done; exit 0')
    from machine.sandboxes._local import system_args

    box = LocalSandbox.create(tmp_path / "sandboxes", "run-1", isolate=True)
    assert box.isolated
    assert "--disable-userns" not in system_args() and "--unshare-all" in system_args()
    assert box.command_line(["true"])[0] == str(fake_bwrap)


def test_a_bubblewrap_that_cannot_make_namespaces_means_not_isolated(
    fake_bwrap: Path, tmp_path: Path
) -> None:
    write_script(fake_bwrap, 'echo "bwrap: No permissions to create new namespace" >&2; exit 1')
    box = LocalSandbox.create(tmp_path / "sandboxes", "run-1", isolate=True)
    assert box.isolated is False
    assert box.command_line(["true"]) == ["true"]
