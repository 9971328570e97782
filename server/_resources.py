"""What ``machine serve`` offers beside its tools: resources a host can read (or attach to a conversation)
without a tool call, and prompts it shows the person as commands.

Resources, each the JSON of the model the SDK and the CLI's ``--json`` give:

- ``machine://machines``: the workspace's machines (``list_machines``);
- ``machine://machines/{+name}``: one machine (``show_machine``; ``+`` so ``red/noted`` reads as one);
- ``machine://runs/{id}``: one stored run whole: its scorecard with every grader's reason, trajectory,
  cost and tags;
- ``machine://training/{id}``: a training record with its plan, gate, outcome and loss per step.

Prompts: ``improve_machine``, ``specialize_machine`` and ``explain_run``. Each says which tools and
resources to use, and that spending or changing waits for the person's yes to a stated budget.

No ``from __future__ import annotations`` here: the SDK reads the functions' annotations at run time.
"""

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import Message, UserMessage
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import EmbeddedResource, TextResourceContents
from pydantic import Field

from machine.errors import MachineError
from machine.learn import training_shown

from ._server import MachineServer, plain
from ._service import tool_error

JSON = "application/json"
CONSENT = (
    "Before any tool that spends (rehearse, optimize, specialize, train) or changes the live version "
    "(commit, revert), tell me what it will do and the most it may spend, and wait for my yes."
)
PromptName = Annotated[
    str, Field(max_length=200, description="The machine's name (list_machines gives them).")
]
Focus = Annotated[str, Field(max_length=2_000, description="What the specialist should be good at.")]
RunId = Annotated[str, Field(max_length=100, description="The run's id (recent_runs gives them).")]


def register_resources(server: MachineServer) -> None:
    """Add the resources and prompts to ``server`` (their functions reach its ``Service``)."""

    def machines() -> str:
        """Every machine of the workspace: name, intent, model and parent."""
        server.service.refresh()
        return server.service.machines().model_dump_json(indent=2)

    def machine(name: str) -> str:
        """One machine: intent, model, rubric criteria with their graders, tools and cases files."""
        server.service.refresh()
        return _found(lambda: server.service.show(name).model_dump_json(indent=2))

    def run(id: str) -> str:
        """One stored run whole: input, trajectory, output, scorecard with every grader's reason, cost,
        timings and tags."""
        return _found(lambda: server.service.ws.store.get(id).model_dump_json(indent=2))

    def training(id: str) -> str:
        """A training record: its plan, settings, data pins, gate, outcome, and the loss of every step."""
        return _found(lambda: training_shown(server.service.ws, id).model_dump_json(indent=2))

    for uri, read in (
        ("machine://machines", machines),
        ("machine://machines/{+name}", machine),
        ("machine://runs/{id}", run),
        ("machine://training/{id}", training),
    ):
        server.resource(uri, name=read.__name__, description=plain(read.__doc__), mime_type=JSON)(read)

    def improve_machine(name: PromptName) -> list[Message]:
        """Find out where a machine falls short and improve it: measure, propose, and act with my consent."""
        return [UserMessage(improving(name)), _attached(f"machine://machines/{name}", machine(name))]

    def specialize_machine(name: PromptName, focus: Focus) -> list[Message]:
        """Make a specialist child of a machine for a narrower job, with its own cases, and measure it."""
        return [
            UserMessage(specializing(name, focus)),
            _attached(f"machine://machines/{name}", machine(name)),
        ]

    def explain_run(id: RunId) -> list[Message]:
        """Explain one stored run: what it was asked, what it did, and how and why it was graded so."""
        return [UserMessage(explaining(id)), _attached(f"machine://runs/{id}", run(id))]

    for title, prompt in (
        ("Improve a machine", improve_machine),
        ("Specialize a machine", specialize_machine),
        ("Explain a run", explain_run),
    ):
        server.prompt(title=title, description=plain(prompt.__doc__))(prompt)


def _found(read: Callable[[], str]) -> str:
    """``read()``, with an unknown machine, run or record as the resource's not-found error, whose message
    names what there is."""
    try:
        return read()
    except ToolError as error:
        raise ResourceNotFoundError(str(error)) from error
    except MachineError as error:
        raise ResourceNotFoundError(str(tool_error(error))) from error


def _attached(uri: str, text: str) -> Message:
    """A resource's text attached to the prompt, so a host whose model cannot read resources has it."""
    return UserMessage(
        EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=JSON, text=text))
    )


def improving(name: str) -> str:
    return (
        f"Help me improve the machine {name!r}; its description is attached. Read its recent graded runs "
        "(recent_runs) and the worst of them whole (show_run) to see which criteria fail and why. Then "
        "propose one next step, with its reason and its cost: rehearse to measure it, optimize to rewrite "
        "its instructions, train to fine-tune its model on its good runs, or specialize for a narrower "
        f"job. {CONSENT} Report results as measured, failures included, and commit only a candidate that "
        "passed its gate."
    )


def specializing(name: str, focus: str) -> str:
    return (
        f"Make a specialist of the machine {name!r} for: {focus}\n\n"
        "The parent's description is attached. Propose the specialize call (parent, focus, how many "
        "cases, a budget) and, once the child is written, a rehearse of it on its cases and held-out "
        f"cases. {CONSENT} The child's code was written by a model: it runs only in the sandbox until I "
        "trust it (trust_machine shows it to me). Tell me what the child does better, as measured."
    )


def explaining(id: str) -> str:
    return (
        f"Explain the run {id!r}, attached whole. Say what the machine was asked, what it did step by "
        "step (each tool call and its result), its answer, and how each criterion of its scorecard was "
        "graded and why (quote the graders' reasons). If it failed or was unscored, say what went wrong "
        "and what would fix it. Spend nothing."
    )
