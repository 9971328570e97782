"""The run tool: a shell command in the run's sandbox, only where its commands are isolated."""

from __future__ import annotations

from machine.runs import EditProposal, ToolContext, ToolFailure, tool

from ._asked import asking
from ._paths import _sandbox

MAX_RUN_TIMEOUT_S = 600.0
RUN_OUTPUT_CHARS = 20_000


# ------------------------------------------------------------------------------------------- running


@tool
async def run(ctx: ToolContext, command: str, timeout_s: float = 60) -> str:
    """Run a shell command in the working directory, isolated: no network, only this folder, and no
    environment beyond PATH, HOME and LANG. Returns the exit code, stdout and stderr (each cut at
    20,000 characters).

    command: a shell command line, e.g. 'python3 main.py' or 'pytest -q'.
    timeout_s: seconds before the command and everything it started are killed (default 60, at most 600)."""
    sandbox = _sandbox(ctx)
    if not sandbox.isolated:
        raise ToolFailure(
            "run is refused here: commands run only where bubblewrap isolation works, and this "
            "sandbox is not isolated. Use the file tools instead"
        )
    if not command.strip():
        raise ToolFailure("command is empty: give a shell command line")
    if not 0 < timeout_s <= MAX_RUN_TIMEOUT_S:
        raise ToolFailure(
            f"timeout_s must be more than 0 and at most {MAX_RUN_TIMEOUT_S:g}, not {timeout_s:g}"
        )
    gate = asking(ctx)
    refused = None if gate is None else await gate.refusal(EditProposal(tool="run", command=command))
    if refused is not None:  # a command may change any file of the person's project: shown, then asked
        raise ToolFailure(refused)
    try:
        result = await sandbox.exec(command, timeout_s=timeout_s, max_output=RUN_OUTPUT_CHARS)
    except OSError as error:
        raise ToolFailure(f"the command could not be started: {error}") from None
    if result.timed_out:
        head = f"timed out after {timeout_s:g} s: the command and every process it started were killed"
    else:
        head = f"exit code: {result.exit_code}"
    if getattr(result, "truncated", False):
        head += f"\n[output cut: each stream keeps its first {RUN_OUTPUT_CHARS:,} characters]"
    return "\n".join(
        [
            head,
            "--- stdout ---",
            result.stdout.rstrip("\n") or "(empty)",
            "--- stderr ---",
            result.stderr.rstrip("\n") or "(empty)",
        ]
    )
