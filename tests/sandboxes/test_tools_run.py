"""The run tool: refused without isolation, and a real bubblewrap command where isolation works."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.env import on_ci

from machine import ToolContext, ToolFailure
from machine.sandboxes import LocalSandbox, bubblewrap
from machine.sandboxes.tools import read_file, run

ON_CI = on_ci()
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap() is None and not ON_CI,
    reason="bubblewrap (bwrap) is missing or cannot make namespaces here; `make test` installs it",
)


@pytest.fixture
def isolated(tmp_path: Path) -> LocalSandbox:
    if bubblewrap() is None:  # only reached under CI=true, where isolation must be tested
        pytest.fail("CI=true and bubblewrap does not work here: the run tool's tests must run", pytrace=False)
    box = LocalSandbox.create(tmp_path / "sandboxes", "r1", {"main.py": "print('hi from python')\n"})
    assert box.isolated
    return box


def ctx(sandbox: LocalSandbox) -> ToolContext:
    return ToolContext(run_id="r1", sandbox=sandbox)


async def test_run_refuses_when_the_sandbox_is_not_isolated(tmp_path: Path) -> None:
    plain = LocalSandbox.create(tmp_path / "sandboxes", "r1", isolate=False)
    assert not plain.isolated
    marker = plain.path / "ran.txt"
    with pytest.raises(ToolFailure) as caught:
        await run.invoke({"command": "touch ran.txt"}, ctx(plain))
    assert "bubblewrap" in str(caught.value)
    assert "not isolated" in str(caught.value)
    assert not marker.exists()


async def test_run_needs_a_sandbox() -> None:
    with pytest.raises(ToolFailure, match="working directory"):
        await run.invoke({"command": "true"}, ToolContext(run_id="r1"))


@needs_bubblewrap
async def test_run_returns_exit_code_and_both_streams(isolated: LocalSandbox) -> None:
    result = await run.invoke({"command": "echo out; echo err >&2; exit 3"}, ctx(isolated))
    assert result == "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr"


@needs_bubblewrap
async def test_run_works_in_the_run_s_directory(isolated: LocalSandbox) -> None:
    result = await run.invoke({"command": "python3 main.py > out.txt && cat out.txt"}, ctx(isolated))
    assert result.startswith("exit code: 0\n")
    assert "hi from python" in result
    assert "hi from python" in await read_file.invoke({"path": "out.txt"}, ctx(isolated))


@needs_bubblewrap
async def test_run_kills_at_the_timeout_with_a_note(isolated: LocalSandbox) -> None:
    result = await run.invoke({"command": "echo started; sleep 30", "timeout_s": 0.5}, ctx(isolated))
    assert result.startswith("timed out after 0.5 s")
    assert "started" in result


@needs_bubblewrap
async def test_run_caps_output(isolated: LocalSandbox) -> None:
    result = await run.invoke({"command": "head -c 50000 /dev/zero | tr '\\0' x"}, ctx(isolated))
    assert "[output cut: each stream keeps its first 20,000 characters]" in result
    assert result.count("x") < 21_000


@needs_bubblewrap
async def test_run_checks_its_arguments(isolated: LocalSandbox) -> None:
    for arguments in (
        {"command": "  "},
        {"command": "true", "timeout_s": 0},
        {"command": "true", "timeout_s": 601},
    ):
        with pytest.raises(ToolFailure):
            await run.invoke(arguments, ctx(isolated))
