"""Progress a spending tool reports to its client as it goes: each finished run, each training step, and
each line a training says of what it does (``resuming at step 25 of 32``)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
from mcp.server.mcpserver import Context

from machine.runs import Run
from machine.training import StepMetrics


async def report_progress(ctx: Context, receive: Any, total: int | None) -> None:
    """Tell the client about each finished run and each training step as it arrives."""
    done = 0
    async with receive:
        async for item in receive:
            done += 1
            await ctx.report_progress(done, total, _progress_line(item, total is None))


def told(send: Any, item: Run | StepMetrics | str) -> None:
    """Progress is told while someone listens: a call cancelled mid-step (its reporter gone with it)
    finishes the step in its thread and then stops at the cancel, not at a closed stream."""
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        send.send_nowait(item)


def _progress_line(item: Run | StepMetrics | str, whose: bool) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, StepMetrics):
        loss = "-" if item.loss is None else f"{item.loss:.4f}"
        return f"training step {item.step} (epoch {item.epoch}): loss {loss}, {item.tokens} tokens"
    score = item.scorecard.score if item.scorecard is not None else None
    note = "error" if item.status == "error" else f"score {score}"
    return f"{item.machine + ' ' if whose else ''}case {item.case_id} trial {item.trial}: {note}"
