"""Completions for the arguments of the server's prompts and resource templates (``completion/complete``):
the machine names, run ids and training record ids that start with what the person has typed so far, so a
host can offer them as they type. At most ``MAX_VALUES`` a reply (the protocol's bound), with the total
where it is known. Run ids are looked for among the newest ``RECENT_RUNS`` runs: listing them costs the
same however many the store holds. An argument the server has nothing to offer for (a prompt or template
it does not have, a focus to write) gets no values, as the protocol allows, never an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Completion, CompletionArgument, PromptReference, ResourceTemplateReference

from machine.errors import MachineError
from machine.runs import RunFilter

if TYPE_CHECKING:
    from ._service import Service

MAX_VALUES = 100
RECENT_RUNS = 500
TRAINING_DIR = "training"
"""Where the training records are, under the workspace's data folder (``.machine/training/<id>``)."""

Found = tuple[list[str], bool]
"""The values a source offers, and whether they are all there are."""


def machine_names(service: Service) -> Found:
    service.refresh()  # a machine added since the last call is offered
    return list(service.names()), True


def run_ids(service: Service) -> Found:
    """The newest runs' ids, newest first."""
    page = service.ws.store.page(RunFilter(), limit=RECENT_RUNS)
    return [run.id for run in page.runs], page.next is None


def training_ids(service: Service) -> Found:
    """The training records' ids, newest first (an id starts with when it was made)."""
    root = service.ws.data_dir / TRAINING_DIR
    if not root.is_dir():
        return [], True
    found = [f.name for f in root.iterdir() if not f.is_symlink() and (f / "record.json").is_file()]
    return sorted(found, reverse=True), True


SOURCES: dict[tuple[str, str], Callable[[Service], Found]] = {
    ("improve_machine", "name"): machine_names,
    ("specialize_machine", "name"): machine_names,
    ("explain_run", "id"): run_ids,
    ("machine://machines/{+name}", "name"): machine_names,
    ("machine://runs/{id}", "id"): run_ids,
    ("machine://training/{id}", "id"): training_ids,
}
"""What completes each argument, by the prompt's name or the template's URI and the argument's name."""


def completion(
    service: Callable[[], Service],
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
) -> Completion:
    """The values of ``argument`` of ``ref`` that start with what was typed (``argument.value``)."""
    where = ref.name if isinstance(ref, PromptReference) else ref.uri
    source = SOURCES.get((where, argument.name))
    if source is None:
        return Completion(values=[], total=0, has_more=False)
    try:
        offered, whole = source(service())
    except (MachineError, ToolError):  # a workspace that cannot be served: nothing to offer
        return Completion(values=[], total=0, has_more=False)
    found = [value for value in offered if value.startswith(argument.value)]
    return Completion(
        values=found[:MAX_VALUES],
        total=len(found) if whole else None,
        has_more=len(found) > MAX_VALUES or not whole,
    )
