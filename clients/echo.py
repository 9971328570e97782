"""The echo harness: replies with the input. Free; a dry run of the plumbing."""

from __future__ import annotations

import anyio.lowlevel

from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop


class EchoHarness:
    name = "echo"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        async def reply(messages: list[Message], step: int) -> Turn:
            # A model call is where a run can be stopped: even a reply that costs nothing gives the
            # event loop its turn, so a suite of echo runs stops at Ctrl-C like one on a real model.
            await anyio.lowlevel.checkpoint()
            return Turn(Message(role="assistant", content=request.input))

        return await run_loop(request, reply)
