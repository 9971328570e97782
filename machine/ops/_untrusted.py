"""An untrusted machine as a host may rehearse it before the person trusts it: its stand-in, rebuilt from
what loading it inside the sandbox reported and from trusted code alone
(``machine.learn.specialize.vetting``).

Its parent is loaded as usual (so it must be trusted, or the person's own); its library tools are the
library's own, found by name; its judges are the library's judge with the settings it named; its hidden
tests are the library's grader, reading hidden.json beside it; its own checks are graded in a sandbox.
"""

from __future__ import annotations

from machine.errors import NotTrusted
from machine.grade import Grader, define_evaluator, define_rubric, judge
from machine.learn.specialize.vetting import SandboxChecks, SandboxedCheck, StandIn, describe_untrusted
from machine.spec import Machine, define_child
from machine.workspace import Workspace

from ._compose import hidden_tests_grader, library_tools


def _graders(ws: Workspace, name: str, described: StandIn) -> dict[str, Grader]:
    checks = SandboxChecks(ws.machines_dir, name, ws.sandboxes)
    graders: dict[str, Grader] = {}
    for note in described.criteria:
        if note.how == "judge":
            graders[note.name] = judge(model=note.judge_model, effort=note.judge_effort)
        elif note.how == "hidden_tests":
            graders[note.name] = hidden_tests_grader(
                ws.machines_dir / name / "machine.py", command=note.command, timeout_s=note.timeout_s or 60.0
            )
        else:
            graders[note.name] = SandboxedCheck(note.grader, checks)
    return graders


async def stand_in(ws: Workspace, name: str) -> Machine:
    """The untrusted machine ``name`` rebuilt to run outside the sandbox with none of its own code; its
    own checks grade inside. NotTrusted when it cannot be (see ``describe_untrusted``)."""
    described = await describe_untrusted(ws.machines_dir, name, sandboxes=ws.sandboxes)
    parent_name = name.rpartition("/")[0]
    if described.name != name or described.parent != parent_name:
        raise NotTrusted(
            f"machine {name!r} holds code a model wrote that you have not trusted, and loading it in the "
            f"sandbox reported another machine ({described.name!r}, a child of {described.parent!r})",
            machine=name,
        )
    parent = ws.load(parent_name)
    library = library_tools()
    unknown = [t.name for t in described.tools if t.origin == "library" and t.name not in library]
    if unknown:
        raise NotTrusted(
            f"machine {name!r} is untrusted and names tools the library does not have ({', '.join(unknown)})",
            machine=name,
        )
    rubric = define_rubric(
        {
            c.name: {"description": c.description, "weight": c.weight, "required": c.required}
            for c in described.criteria
        }
    )
    return define_child(
        parent,
        name=name,
        intent=described.intent,
        instructions=described.instructions,
        rubric=rubric,
        evaluator=define_evaluator(rubric, _graders(ws, name, described)),
        tools=[library[t.name] for t in described.tools if t.origin == "library"],
        model=described.model,
        max_steps=described.max_steps,
    )
