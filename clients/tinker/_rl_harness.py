"""The harness an RL session on Tinker samples its policy with (``TinkerRLSession.sampler``), one a step.

Each model turn renders the conversation (the instructions, the messages so far and the tools) to token
ids with the renderer the trainer renders with, samples ONE continuation of them from a sampler of the
latest weights (opened once a step), with the log q of each token, at the RL temperature over the whole
distribution, and keeps the turn (``TurnRecord``) under the run's id for the update. The reply is parsed
by the same renderer into the run's message: its text, its thinking as reasoning, its tool calls. Earlier
turns go back into the prompt with their reasoning, so each prompt extends the one before it with the
reply as it was sampled wherever the renderer allows (``sequences_of`` then merges the run's turns into one
sequence). Each turn's seed is drawn from (the training's seed, the step, the run's seed, the turn), as
the local harness draws it in RL mode. A turn is reserved and charged at the base model's price by
``_rl.sample``; a failure of the service is remembered by the session, which stops the step with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from machine.errors import TrainingError
from machine.runs import (
    HarnessRequest,
    HarnessResult,
    Message,
    ToolCall,
    Turn,
    Usage,
    openai_tools,
    run_loop,
    to_openai,
)

from .._rl_turns import Records, TurnRecord, rl_seed
from .._wire import tool_arguments
from ._calls import Caller
from ._render import Rendering, to_cookbook
from ._rl import sample

if TYPE_CHECKING:
    from machine.runs import Effort
    from machine.training import Checkpoint, RLSettings, TrainSettings


class Policy(Protocol):
    """What the harness reads of the RL session it samples for (``TinkerRLSession`` is one)."""

    trainer: Caller
    settings: TrainSettings
    rl: RLSettings
    rendering: Rendering
    records: Records
    saved: Checkpoint | None

    async def policy(self, step: int) -> Any:
        """A ``tinker.SamplingClient`` of the weights as step ``step`` samples them."""
        ...

    def failed(self, step: int, error: TrainingError) -> None:
        """Keep a failure of the service while step ``step`` sampled."""
        ...


def prompt_ids(rendering: Rendering, wire: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
    """The token ids the model continues: the OpenAI messages and tools rendered for generation."""
    conv, _shift = to_cookbook(wire, tools, rendering.renderer)
    prompt = rendering.renderer.build_generation_prompt(conv, **rendering.options())
    return [int(t) for t in prompt.to_ints()]


def reply_message(parsed: Mapping[str, Any], turn: int) -> Message:
    """A reply the renderer parsed as the run's assistant message: its text, its thinking as reasoning,
    and its tool calls; a call the renderer could not read is kept with no arguments and its raw text, so
    the loop tells the model what went wrong."""
    content = parsed.get("content") or ""
    parts = [] if isinstance(content, str) else list(content)
    text = (
        content
        if isinstance(content, str)
        else "".join(p.get("text", "") for p in parts if p["type"] == "text")
    )
    thinking = "".join(p.get("thinking", "") for p in parts if p["type"] == "thinking")
    calls = [
        ToolCall(
            id=call.id or f"call_{turn}_{index}",
            name=call.function.name,
            arguments=tool_arguments(call.function.arguments),
            raw_arguments=call.function.arguments,
        )
        for index, call in enumerate(parsed.get("tool_calls") or [])
    ]
    calls += [
        ToolCall(id=f"call_{turn}_unread_{index}", name="unread_call", raw_arguments=unread.raw_text)
        for index, unread in enumerate(parsed.get("unparsed_tool_calls") or [])
    ]
    return Message(role="assistant", content=text, reasoning=thinking or None, tool_calls=calls)


class _PolicySampler:
    """Samples step ``step``'s policy for the session (see the module). Private: a part of the Tinker
    trainer's RL session, not a harness chosen by name."""

    name = "tinker"

    def __init__(self, session: Policy, step: int) -> None:
        self.session, self.step = session, step

    def _rendering(self, effort: Effort | None) -> Rendering:
        """The session's rendering, at the run's effort where the renderer takes one."""
        rendering = self.session.rendering
        if effort is None or rendering.effort is None:
            return rendering
        return replace(rendering, effort=effort.value)

    async def run(self, request: HarnessRequest) -> HarnessResult:
        """The request's agent loop on the policy, every model turn recorded for the update."""
        session, step = self.session, self.step
        rendering = self._rendering(request.effort)
        tools = openai_tools(request.tools)
        temperature = session.rl.temperature if request.temperature is None else request.temperature
        stop = rendering.renderer.get_stop_sequences()
        cut: list[bool] = []

        async def reply(messages: list[Message], turn: int) -> Turn:
            wire = to_openai(request.instructions, messages, send_reasoning=True)
            prompt = prompt_ids(rendering, wire, tools)
            try:
                policy = await session.policy(step)
                (one,), cost = await sample(
                    session.trainer,
                    policy,
                    prompt,
                    1,
                    model=session.settings.base_model,
                    budget=request.budget,
                    max_tokens=session.rl.max_tokens,
                    temperature=temperature,
                    stop=stop,
                    seed=rl_seed(session.settings.seed, step, request.seed, turn),
                    step=step,
                    saved=session.saved,
                )
            except TrainingError as error:
                session.failed(step, error)
                raise
            session.records.add(request.run_id, TurnRecord(one.prompt, one.tokens, one.logprobs, one.stopped))
            cut.append(not one.stopped)
            parsed, _ending = rendering.renderer.parse_response(one.tokens)
            usage = Usage(input_tokens=len(prompt), output_tokens=len(one.tokens))
            return Turn(reply_message(parsed, turn), usage, cost_usd=cost)

        result = await run_loop(request, reply)
        if result.stop_reason == "end_turn" and cut and cut[-1]:
            result.stop_reason = "max_tokens"  # the last reply was cut at the token cap, not finished
        return result
