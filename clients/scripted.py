"""The scripted harness: replays assistant turns from a script file, so tests and demos can drive
tool use deterministically.

A script is JSON: ``{"rules": [{"match": REGEX, "turns": [TURN, ...]}, ...]}``. The first rule whose
regular expression is found in the run's input wins; a rule that also has ``"instructions": REGEX``
applies only when that is found in the instructions the run was given, so a script can answer as a model
whose behaviour follows its system prompt. A TURN holds any of ``text``, ``reasoning``,
``tool_calls`` (``[{"name", "arguments"}]``; ``arguments`` may be a string, which the model "sent" as
raw JSON, valid or not), ``usage`` (``{"input_tokens", "cached_input_tokens", "output_tokens"}``) and
``delay`` (seconds the "model" takes to send the turn, to replay a slow model; cancelling the run stops
the wait).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from machine.errors import Fix, HarnessError
from machine.runs import HarnessRequest, HarnessResult, Message, ToolCall, Turn, Usage, run_loop


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptedCall(_Strict):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ScriptedTurn(_Strict):
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    delay: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)


class Rule(_Strict):
    match: str
    instructions: str | None = None
    turns: list[ScriptedTurn] = Field(min_length=1)

    @field_validator("match", "instructions")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"{value!r} is not a regular expression: {error}") from None
        return value


class Script(_Strict):
    rules: list[Rule] = Field(min_length=1)


def load_script(path: str | Path) -> Script:
    return _loaded(Path(path))[0]


def _loaded(path: Path) -> tuple[Script, str]:
    """The script at ``path`` and the sha256 of the bytes it was read from (a run records it)."""
    try:
        raw = path.read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        missing = Fix("script", "PATH", "naming a script file that exists")
        raise HarnessError(f"script {path} does not exist", fixes=[missing]) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HarnessError(f"script {path} is not valid JSON: {error}") from None
    try:
        return Script.model_validate(data), hashlib.sha256(raw).hexdigest()
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise HarnessError(f"script {path} is malformed at {where}: {first['msg']}") from None


def _message(turn: ScriptedTurn, step: int) -> Message:
    calls = []
    for index, call in enumerate(turn.tool_calls):
        call_id = f"call_{step}_{index}"
        if isinstance(call.arguments, str):
            try:
                parsed = json.loads(call.arguments)
            except json.JSONDecodeError:
                parsed = None
            arguments = parsed if isinstance(parsed, dict) else None
            calls.append(
                ToolCall(id=call_id, name=call.name, arguments=arguments, raw_arguments=call.arguments)
            )
        else:
            calls.append(ToolCall(id=call_id, name=call.name, arguments=call.arguments))
    return Message(role="assistant", content=turn.text, reasoning=turn.reasoning, tool_calls=calls)


class ScriptedHarness:
    """Replays a script. Given a folder instead of a file, each machine replays its own
    ``FOLDER/<machine>/script.json`` (``--script machines``: a family suite runs every member on its
    own script)."""

    name = "scripted"

    def __init__(self, script: Script | str | Path) -> None:
        self.folder = None if isinstance(script, Script) or not Path(script).is_dir() else Path(script)
        self.scripts: dict[str, Script] = {}
        self.digests: dict[str, str] = {}
        """Each script's sha256, by machine ("" for the one every machine replays)."""
        self.script: Script | None = None
        if isinstance(script, Script):
            self.script = script
            self.digests[""] = hashlib.sha256(script.model_dump_json().encode("utf-8")).hexdigest()
        elif self.folder is None:
            self.script, self.digests[""] = _loaded(Path(script))
        self.source = None if isinstance(script, Script) else str(script)

    def setup(self, machine: str, model: str, root: Path | None = None) -> str | None:
        """The script ``machine``'s runs replay, by its sha256 (worked out as it is loaded, once): a run
        made with one script is never reused as a run of another. None: the script cannot be read."""
        if self.folder is not None and machine not in self.digests:
            try:
                self.script_of(machine)
            except HarnessError:
                return None  # the run fails for it, and says why
        digest = self.digests.get("" if self.folder is None else machine)
        return None if digest is None else f"script sha256:{digest}"

    def script_of(self, machine: str) -> tuple[Script, str | None]:
        """The script machine ``machine``'s runs replay, and where it came from."""
        if self.script is not None:
            return self.script, self.source
        assert self.folder is not None  # one or the other, from the start
        file = self.folder / machine / "script.json"
        if machine not in self.scripts:
            if not file.is_file():
                raise HarnessError(
                    f"the scripted harness replays each machine's own script from {self.folder}, and "
                    f"{file} does not exist: write it",
                    fixes=[Fix("script", "FILE", "to replay one script for every machine")],
                )
            self.scripts[machine], self.digests[machine] = _loaded(file)
        return self.scripts[machine], str(file)

    def rule_for(self, text: str, instructions: str = "", machine: str = "") -> Rule:
        script, source = self.script_of(machine)
        for rule in script.rules:
            if re.search(rule.match, text) and (
                rule.instructions is None or re.search(rule.instructions, instructions)
            ):
                return rule
        where = f" in {source}" if source else ""
        raise HarnessError(f"no rule{where} matches the input {text[:80]!r}; add a rule whose match fits it")

    async def run(self, request: HarnessRequest) -> HarnessResult:
        turns = self.rule_for(request.input, request.instructions, request.machine).turns

        async def reply(messages: list[Message], step: int) -> Turn:
            # Every replayed model call waits (at least a checkpoint), so cancellation reaches the run
            # here as it would in a real model call.
            if step >= len(turns):  # the script ran out while the model still had tool results to answer
                await anyio.lowlevel.checkpoint()
                return Turn(Message(role="assistant", content=""))
            scripted = turns[step]
            # The turn's usage is known before it is "sent": reserved as a real call's bound would be, at
            # the model's price; a model with none (a scripted teacher) is a replay that costs nothing.
            usage = scripted.usage if request.budget.prices(request.model) else Usage()
            async with request.budget.reserve(request.model, usage) as hold:
                await anyio.sleep(scripted.delay)
                turn = Turn(_message(scripted, step), scripted.usage)
                turn.cost_usd = hold.settle(usage)
            return turn

        return await run_loop(request, reply)
