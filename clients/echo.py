"""The echo harness: replies with the input. Free; a dry run of the plumbing."""

from __future__ import annotations

from machine.runs import HarnessRequest, HarnessResult, Message, Turn, run_loop


class EchoHarness:
    name = "echo"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=request.input))

        return await run_loop(request, reply)
