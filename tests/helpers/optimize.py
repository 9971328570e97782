"""A machine to optimize, ``shout`` (and its child ``shout/kid``), through a harness whose replies depend
on the SYSTEM PROMPT, so what each proposal gains on the cases and on the held-out cases is known exactly.

The machine answers a case right (its input in capital letters) when its instructions say so:

- any instructions: inputs starting with ``a`` (``ann`` among the cases, ``amelia`` held out);
- ``CAPITALS`` in them: every input (a general rule: it wins on the cases and holds on the held-out ones);
- ``MEMO``: exactly the inputs of the cases, nothing else (it wins on the cases, loses ``amelia``);
- ``TABLE``: the inputs of the cases, and what any instructions get right (it wins on the cases and
  changes nothing held out, as a key-to-answer table of the cases would);
- ``ONE``: also ``bob`` (one case more of seven: a gain of exactly 1 standard error);
- ``MUTE``: a reply the ``short`` grader cannot judge (``short`` UNSCORED on every run);
- ``CRASH``: the model call fails on ``cat`` (a failed run).

The live instructions hold none of the keywords, so the live version passes ``ann`` only (cases mean
(1 + 6 x 0.25) / 7) and ``amelia`` only of the held-out cases (the same mean). For the optimizer and
the author the harness plays the replies the test queued, and records every request.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from machine.runs import HarnessRequest, HarnessResult, Message, Turn, Usage, run_loop

MODEL = "Qwen/Qwen3.8-27B"
"""The machine's model: priced ($1.86 a million input tokens), so usage costs money under a budget."""
LIVE = "Repeat the input back."
PARENT = "Answer every message at once."
KID = "Keep it short."
LONG = "please shout this whole sentence back to me right now"
"""A case input of 11 words: a proposal quoting 8 of them in a row has copied it."""

NAMES = ["ann", "bob", "cat", "dan", "eve", "fay"]
CASES = [{"id": n, "input": n, "expected": n.upper()} for n in NAMES]
CASES.append({"id": "long", "input": LONG, "expected": LONG.upper()})
HOLDOUT = [
    {"id": f"held-{n}", "input": n, "expected": n.upper()}
    for n in ("amelia", "gustav", "harriet", "ignatius", "oscar", "quentin", "ursula")
]
"""Seven held-out cases, six of which the live version fails: enough that a gain on all six is evidence
(the gate needs six cases that changed at min_z 2)."""
CASE_INPUTS = frozenset(c["input"] for c in CASES)
HELD_INPUTS = [c["input"] for c in HOLDOUT]

RUBRIC_PY = """\
from machine import define_rubric

rubric = define_rubric(
    {
        "correct": {"description": "The reply is the input in capital letters.", "weight": 3},
        "short": {"description": "The reply is at most 80 characters.", "weight": 1},
    }
)
"""

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, instructions_from, model_from

from .rubric import rubric


def correct(run, case):
    wanted = case["expected"]
    return run.output == wanted, f"wanted {wanted!r}, got {run.output!r}"


def short(run):
    if run.output.startswith("[mute]"):
        raise ValueError("a muted reply cannot be measured")
    return len(run.output) <= 80, f"{len(run.output)} characters (at most 80)"


machine = define_machine(
    name="shout",
    intent="Say the input back in capital letters.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "MODEL"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"correct": check("upper", correct), "short": check("length", short)}),
)
""".replace("MODEL", MODEL)

KID_PY = """\
from machine import define_child, instructions_from

from ..machine import machine as parent

machine = define_child(
    parent, name="shout/kid", intent="Say the input back, briefly.", instructions=instructions_from(__file__)
)
"""


def answer(instructions: str, text: str) -> str:
    """What the machine says to ``text`` under ``instructions`` (see the module's docstring)."""
    if "CRASH" in instructions and text == "cat":
        raise RuntimeError("the model fell over")
    if "MUTE" in instructions:
        return "[mute] " + text.upper()
    if "MEMO" in instructions:
        right = text in CASE_INPUTS
    elif "TABLE" in instructions:
        right = text in CASE_INPUTS or text.startswith("a")
    else:
        right = text.startswith("a") or "CAPITALS" in instructions
        right = right or ("ONE" in instructions and text == "bob")
    return text.upper() if right else "no idea"


def block(instructions: str, explanation: str = "Said what the rule is, for every input alike.") -> str:
    """An optimizer reply proposing ``instructions``."""
    return f"{explanation}\n<instructions>\n{instructions}\n</instructions>"


@dataclass(frozen=True)
class Seen:
    """One request as the harness saw it."""

    machine: str
    instructions: str
    input: str
    history: list[Message]
    model: str

    @property
    def texts(self) -> list[str]:
        """Everything the model was sent: the system prompt, the history and the input."""
        return [self.instructions, *(m.content for m in self.history), self.input]


Scripted = str | Callable[[HarnessRequest], str]
AUTHORS = ("optimizer", "author")
"""The built-in machines whose replies a test queues."""


@dataclass
class Keyed:
    """The harness: the machine answers by its system prompt, the optimizer plays ``replies`` in turn
    (a string, or a function of the request); ``usage`` is what every machine turn reports,
    ``optimizer_usage`` every optimizer turn."""

    replies: Iterable[Scripted] = ()
    usage: Usage = field(default_factory=Usage)
    optimizer_usage: Usage = field(default_factory=Usage)
    name: str = "keyed"
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queue: deque[Scripted] = deque(self.replies)

    def push(self, *replies: Scripted) -> None:
        self.queue.extend(replies)

    @property
    def optimizer(self) -> list[Seen]:
        return [s for s in self.seen if s.machine == "optimizer"]

    @property
    def author(self) -> list[Seen]:
        return [s for s in self.seen if s.machine == "author"]

    def machine_runs(self, instructions: str | None = None) -> list[Seen]:
        """The machine's requests (with ``instructions`` as their system prompt, when given)."""
        return [
            s
            for s in self.seen
            if s.machine not in AUTHORS and (instructions is None or s.instructions == instructions)
        ]

    async def run(self, request: HarnessRequest) -> HarnessResult:
        self.seen.append(
            Seen(request.machine, request.instructions, request.input, list(request.history), request.model)
        )
        if request.machine in AUTHORS:
            item = (
                self.queue.popleft() if self.queue else f"(no {request.machine} reply was scripted for this)"
            )
            said = item if isinstance(item, str) else item(request)
            usage = self.optimizer_usage
        else:
            said, usage = answer(request.instructions, request.input), self.usage

        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(Message(role="assistant", content=said), usage=usage)

        return await run_loop(request, reply)


def write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def make_shout(root: Path, *, instructions: str = LIVE, machine_py: str = MACHINE_PY) -> Path:
    """``root/machines/shout`` with its instructions.md, cases.json and holdout.json; its folder."""
    folder = root / "machines" / "shout"
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(machine_py, encoding="utf-8")
    (folder / "rubric.py").write_text(RUBRIC_PY, encoding="utf-8")
    (folder / "instructions.md").write_text(instructions + "\n", encoding="utf-8")
    write(folder / "cases.json", CASES)
    write(folder / "holdout.json", HOLDOUT)
    return folder


def make_kid(root: Path) -> Path:
    """``shout/kid``, a child of ``shout`` (whose own instructions are then ``PARENT``); its folder."""
    make_shout(root, instructions=PARENT)
    folder = root / "machines" / "shout" / "kid"
    folder.mkdir()
    (folder / "machine.py").write_text(KID_PY, encoding="utf-8")
    (folder / "instructions.md").write_text(KID + "\n", encoding="utf-8")
    write(folder / "cases.json", CASES)
    write(folder / "holdout.json", HOLDOUT)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` byte for byte (bytecode left out)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
