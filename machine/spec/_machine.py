"""Machines: a small agent defined in code, and children that specialize one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machine.errors import DefinitionError
from machine.grade import define_evaluator, define_rubric
from machine.runs import Tool, check_name

if TYPE_CHECKING:
    from machine.grade import Evaluator, Rubric
    from machine.runs import Run


@dataclass(frozen=True)
class Machine:
    """A small agent defined in code: intent, instructions, model, tools, rubric and evaluator (made with
    ``define_machine`` or ``define_child``)."""

    name: str
    intent: str
    instructions: str
    model: str
    rubric: Rubric
    evaluator: Evaluator
    tools: tuple[Tool, ...] = ()
    max_steps: int = 8
    transform_reasoning: Callable[[str], str] | None = None
    parent: Machine | None = None
    own_instructions: str = ""
    own_tools: tuple[str, ...] = ()
    counterpart: Counterpart | None = None
    source: Path | None = field(default=None, compare=False)

    @property
    def own_criteria(self) -> list[str]:
        """The criteria this machine declares (not inherited)."""
        return [name for name in self.rubric if self.evaluator.origins.get(name, self.name) == self.name]

    def origin(self, criterion: str) -> str:
        """The machine that declared ``criterion`` (this one, or an ancestor)."""
        return self.evaluator.origins.get(criterion, self.name)

    def tool(self, name: str) -> Tool | None:
        """The tool called ``name``, if the machine has one."""
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True)
class Counterpart:
    """The other side of a machine's conversations, such as a simulated user playing a hidden scenario.

    A case is then the counterpart's starting point: the counterpart speaks first, the two alternate,
    and the conversation ends after the first turn, of either side, for which ``until(run)`` holds (never
    before the machine has answered once), or after ``max_turns`` turns of both sides together, the
    counterpart's opening included. An even ``max_turns`` ends on the machine's answer; an odd one ends
    on a counterpart turn that nobody answers. The machine's last turn is the conversation's graded run.
    """

    machine: Machine
    until: Callable[[Run], bool] | None = None
    max_turns: int = 8


def _counterpart(value: Any, owner: str) -> Counterpart | None:
    if value is None:
        return None
    if not isinstance(value, Counterpart):
        raise DefinitionError(
            f"machine {owner!r}: counterpart must be a Counterpart(machine=..., until=..., max_turns=...), "
            f"got {type(value).__name__}"
        )
    if not isinstance(value.machine, Machine):
        raise DefinitionError(
            f"machine {owner!r}: its counterpart's machine must be a Machine made with define_machine, "
            f"got {type(value.machine).__name__}"
        )
    if value.machine.name == owner:
        raise DefinitionError(
            f"machine {owner!r} cannot be its own counterpart: the two sides' turns would be stored as "
            "one machine's runs; make the other side a machine of its own"
        )
    if value.until is not None and not callable(value.until):
        raise DefinitionError(
            f"machine {owner!r}: its counterpart's until must be a function of the finished Run "
            f"(or None), got {type(value.until).__name__}"
        )
    turns = value.max_turns
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 2:
        raise DefinitionError(
            f"machine {owner!r}: its counterpart's max_turns must be an integer of at least 2 "
            f"(it counts both sides' turns, and the machine answers on the second), got {turns!r}"
        )
    return value


def _tools(tools: Sequence[Tool], owner: str) -> tuple[Tool, ...]:
    seen: set[str] = set()
    for t in tools:
        if not isinstance(t, Tool):
            raise DefinitionError(f"machine {owner!r}: {t!r} is not a Tool; wrap the function with @tool")
        if t.name in seen:
            raise DefinitionError(f"machine {owner!r} has two tools named {t.name!r}")
        seen.add(t.name)
    return tuple(tools)


def _text(value: Any, what: str, owner: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DefinitionError(f"machine {owner!r} needs a non-empty {what}")
    return value.strip()


def define_machine(
    *,
    name: str,
    intent: str,
    instructions: str,
    model: str,
    rubric: Rubric,
    evaluator: Evaluator,
    tools: Sequence[Tool] = (),
    max_steps: int = 8,
    counterpart: Counterpart | None = None,
    transform_reasoning: Callable[[str], str] | None = None,
) -> Machine:
    """A machine from its parts; anything missing or inconsistent is a DefinitionError naming it."""
    check_name(name)
    if evaluator.rubric is not rubric and evaluator.rubric.fingerprint != rubric.fingerprint:
        raise DefinitionError(f"machine {name!r}: its evaluator was defined for another rubric")
    if not isinstance(max_steps, int) or max_steps < 1:
        raise DefinitionError(f"machine {name!r}: max_steps must be a positive integer, got {max_steps!r}")
    tools = _tools(tools, name)
    counterpart = _counterpart(counterpart, name)
    return Machine(
        name=name,
        intent=_text(intent, "intent", name),
        instructions=_text(instructions, "instructions", name),
        model=_text(model, "model", name),
        rubric=rubric,
        evaluator=replace(evaluator, origins={c: name for c in rubric}),
        tools=tools,
        max_steps=max_steps,
        transform_reasoning=transform_reasoning,
        own_instructions=instructions.strip(),
        own_tools=tuple(t.name for t in tools),
        counterpart=counterpart,
    )


def define_child(
    parent: Machine,
    *,
    name: str,
    intent: str,
    instructions: str = "",
    rubric: Rubric | None = None,
    evaluator: Evaluator | None = None,
    tools: Sequence[Tool] = (),
    model: str | None = None,
    max_steps: int | None = None,
    transform_reasoning: Callable[[str], str] | None = None,
) -> Machine:
    """A machine that specializes ``parent``: it keeps every parent criterion with its grader, the
    parent's instructions (its own follow them), tools (it may add more) and model (unless it names one)."""
    if not isinstance(parent, Machine):
        raise DefinitionError(
            f"define_child({name!r}): the parent must be a Machine, got {type(parent).__name__}"
        )
    check_name(name)
    if not name.startswith(parent.name + "/"):
        raise DefinitionError(f"child {name!r} of {parent.name!r} must be named {parent.name}/<something>")
    rubric = rubric if rubric is not None else define_rubric({})
    evaluator = evaluator if evaluator is not None else define_evaluator(rubric, {})
    if evaluator.rubric.fingerprint != rubric.fingerprint:
        raise DefinitionError(f"child {name!r}: its evaluator was defined for another rubric")
    redefined = [c for c in rubric if c in parent.rubric]
    if redefined:
        raise DefinitionError(
            f"child {name!r} redefines criterion {redefined[0]!r} of {parent.origin(redefined[0])!r}: "
            "a child inherits its parent's criteria as they are; give the new criterion another name"
        )
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
        raise DefinitionError(f"machine {name!r}: max_steps must be a positive integer, got {max_steps!r}")
    own_tools = _tools(tools, name)
    clashing = [t.name for t in own_tools if parent.tool(t.name) is not None]
    if clashing:
        raise DefinitionError(
            f"child {name!r} redefines the tool {clashing[0]!r} it inherits from {parent.name!r}"
        )
    own = instructions.strip()
    return Machine(
        name=name,
        intent=_text(intent, "intent", name),
        instructions=parent.instructions + ("\n\n" + own if own else ""),
        model=_text(model, "model", name) if model is not None else parent.model,
        rubric=parent.rubric.merged(rubric),
        evaluator=parent.evaluator.merged(evaluator, origin=name),
        tools=parent.tools + own_tools,
        max_steps=max_steps if max_steps is not None else parent.max_steps,
        transform_reasoning=transform_reasoning or parent.transform_reasoning,
        parent=parent,
        own_instructions=own,
        own_tools=tuple(t.name for t in own_tools),
        counterpart=parent.counterpart,
    )


def _beside(file: str | Path, name: str) -> Path:
    return Path(file).resolve().parent / name


def instructions_from(file: str | Path, name: str = "instructions.md") -> str:
    """The instructions kept in ``instructions.md`` beside the machine file (pass ``__file__``)."""
    path = _beside(file, name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DefinitionError(f"{path} does not exist: write the machine's instructions there") from None
    if not text.strip():
        raise DefinitionError(f"{path} is empty: write the machine's instructions there")
    return text.strip()


def model_from(file: str | Path, default: str) -> str:
    """The committed model in ``model.json`` beside the machine file, else ``default``."""
    path = _beside(file, "model.json")
    if not path.exists():
        return default
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DefinitionError(f"{path} is not valid JSON ({error}); fix it or delete it") from None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, str) or not model:
        raise DefinitionError(f'{path} must hold {{"model": "<model id>"}}')
    return model
