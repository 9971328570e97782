"""The model a learner's helper machine (the optimizer, the author) runs on, checked before anything is
measured or spent: it must have a price where runs cost, and the harness the machine runs on must be able
to run it. The local harness runs only ``local:`` models, so the helpers' default model there would fail
each call only after the live version had been measured."""

from __future__ import annotations

from machine.errors import BadInputError, Fix
from machine.runs import LOCAL, is_free
from machine.workspace import Workspace


def check_helper_model(ws: Workspace, helper: str, model: str, option: str) -> None:
    """Refuse ``model`` for machine ``helper`` (named by ``option``) when it has no price under a budget,
    or when it cannot run on the workspace's harness."""
    harness = ws.harness.name
    if harness == "local" and not model.startswith(LOCAL):
        raise BadInputError(
            f"the {helper} machine's model {model!r} cannot run on the local harness, which runs only "
            f"local: models; the {helper} must write its reply in the form asked for, which a small local "
            "model rarely does",
            fixes=[
                Fix(option, "local:NAME", f"for a local model able to act as the {helper}"),
                Fix("harness", "HARNESS", f"for a harness that serves {model}"),
            ],
        )
    if not is_free(harness):
        ws.budget.probe_price(model)
