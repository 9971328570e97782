"""The model a learner's helper machine (the optimizer, the author) runs on, checked before anything is
measured or spent: it must have a price where runs cost, the harness the machine runs on must be able to
run it, and a local model must be able to answer in the form the helper's replies are read in. The local
harness runs only ``local:`` models, so the helpers' default model there would fail each call only after
the live version had been measured; and a small local model often writes no tagged block at all, which
would come out only once every proposal had been asked for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from machine.budget import LOCAL
from machine.errors import BadInputError, Fix
from machine.runs import is_free, serves_only
from machine.spec import Machine
from machine.workspace import Workspace

from ._replies import file_blocks, read_reply


@dataclass(frozen=True)
class Form:
    """The form a helper's reply is read in: its name, a short request for a reply in it (a format string
    filled with the machine being improved: ``name``, ``intent``, ``instructions``), and its reader."""

    name: str
    ask: str
    found: Callable[[str], bool]


INSTRUCTIONS_FORM = Form(
    "<instructions> block",
    "Here are the instructions of the machine {name!r} ({intent}):\n\n{instructions}\n\nRewrite them to be "
    "clearer. Reply with the complete new instructions between <instructions> and </instructions>.",
    lambda text: read_reply(text).instructions is not None,
)
FILE_FORM = Form(
    '<file path="..."> block',
    "Write a file named notes.md holding one sentence that says what the machine {name!r} is for "
    '({intent}). Reply with the file as <file path="notes.md">the sentence</file>.',
    lambda text: any(body.strip() for _path, body in file_blocks(text)),
)
SHOWN = 160
"""Characters of a probe's reply quoted in the refusal."""


async def check_helper_model(
    ws: Workspace, helper: Machine, model: str, option: str, form: Form, improved: Machine
) -> None:
    """Refuse ``model`` for machine ``helper`` (named by ``option``) when it has no price under a budget,
    when it cannot run on the workspace's harness, or, for a local model (which costs nothing to ask),
    when one short request for a reply in ``form`` about ``improved`` gets none."""
    harness = ws.harness.name
    only = serves_only(harness)
    if only is not None and not model.startswith(only):
        raise BadInputError(
            f"the {helper.name} machine's model {model!r} cannot run on the {harness} harness, which runs "
            f"only {only} models; the {helper.name} must write its reply in the form asked for, which a "
            "small local model rarely does",
            fixes=_fixes(helper, model, option),
        )
    if not is_free(harness):
        ws.budget.probe_price(model)
    if model.startswith(LOCAL):
        await _probe(ws, helper, model, option, form, improved)


async def _probe(
    ws: Workspace, helper: Machine, model: str, option: str, form: Form, improved: Machine
) -> None:
    """Ask the local ``model``, as ``helper``, once for a short reply in ``form`` (stored nowhere)."""
    own = improved.own_instructions or improved.instructions
    ask = form.ask.format(name=improved.name, intent=improved.intent, instructions=own)
    run = await ws.run(helper, ask, model=model, store=False)
    if run.status == "ok" and form.found(run.output):
        return
    if run.status == "error":
        what = f"the call failed ({run.error})"
    else:
        shown = run.output if len(run.output) <= SHOWN else run.output[:SHOWN] + "..."
        what = f"its reply held no {form.name}: {shown!r}"
    raise BadInputError(
        f"the {helper.name} machine cannot work on {model!r}: asked once, before anything was measured, "
        f"for a short reply in the form its replies are read in (an {form.name}), and {what}",
        fixes=_fixes(helper, model, option),
    )


def _fixes(helper: Machine, model: str, option: str) -> list[Fix]:
    if not model.startswith(LOCAL):
        served = f"for a harness that serves {model}"
    else:
        served = f"with the {helper.name} machine's own model ({helper.model}), on a harness that serves it"
    return [
        Fix(option, "local:NAME", f"for a local model able to act as the {helper.name}"),
        Fix("harness", "HARNESS", served),
    ]
