"""The one place that composes a workspace from what the adapters provide: harnesses and trainers by
name (the ``machine.harnesses`` and ``machine.trainers`` registries), sandboxes, the library's tools and
the judges' model access (the ``machine.parts`` entry points). It imports no adapter: each is found
through its entry point. Every face builds its workspace here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from machine._backends import part
from machine.budget import Budget, parse_budget
from machine.runs import HARNESS_ENV, default_harness_name, make_harness
from machine.training import make_trainer
from machine.workspace import Adapters, Workspace

if TYPE_CHECKING:
    from machine.grade import Grader
    from machine.runs import Effort, Harness, ModelAccess, Sandboxes, Store, Tool


def harness_for(
    ws: Workspace,
    name: str | None = None,
    *,
    harness: str | None = None,
    model: str | None = None,
    script: str | Path | None = None,
    base_url: str | None = None,
) -> Harness:
    """The harness a call's runs use, chosen one way for every face: the one named, else
    ``MACHINE_HARNESS``, else the one for the runs' model (``model``, else machine ``name``'s own: a
    ``local:`` model runs on the harness that serves it), else the default. Machine ``name`` is loaded
    first, so an unknown or broken one is reported before a harness asks for its key or program."""
    own = ws.load(name).model if name is not None else None
    runs_model = model
    if harness is None and runs_model is None and not os.environ.get(HARNESS_ENV):
        runs_model = own
    return make_harness(harness, script=script, base_url=base_url, model=runs_model)


def model_access(harness: Harness | None) -> ModelAccess:
    """Model calls for the judges: the run harness's endpoint when it has one, else routed by model id
    (the ``models`` part: a chat harness lends its client, so the judges' calls reuse its connections)."""
    models: ModelAccess = part("models")(harness)
    return models


def library_tools() -> dict[str, Tool]:
    """The library's standard tools by name (the file tools, ``run``, ``web_fetch``), as they ship."""
    tools: dict[str, Tool] = part("tools")()
    return tools


def hidden_tests_grader(machine_file: Path, *, command: str | None, timeout_s: float) -> Grader:
    """The library's hidden-tests grader for the machine defined in ``machine_file``."""
    options = {"command": command} if command else {}
    grader: Grader = part("hidden_tests")(str(machine_file), timeout_s=timeout_s, **options)
    return grader


def local_sandboxes() -> Sandboxes:
    """Sandboxes in the workspace's ``.machine/sandboxes``, isolated by bubblewrap where it works."""
    sandboxes: Sandboxes = part("sandboxes")
    return sandboxes


def open_workspace(
    root: str | Path | None = None,
    *,
    harness: Harness | str | None = None,
    script: str | Path | None = None,
    base_url: str | None = None,
    budget: Budget | float | str | None = None,
    effort: str | Effort | None = None,
    judge_model: str | None = None,
    judge_effort: str | Effort | None = None,
    models: ModelAccess | None = None,
    store: Store | None = None,
    keep_sandboxes: bool = False,
    data_dir: str | Path | None = None,
    project: str | Path | None = None,
) -> Workspace:
    """A workspace with everything a run needs. ``harness`` is a harness, or its name (made now, so a
    missing key or program is reported before any run); None makes the default harness on first use."""
    made = make_harness(harness, script=script, base_url=base_url) if isinstance(harness, str) else harness
    lazy = None if made is not None else (lambda: make_harness(None, script=script, base_url=base_url))
    return Workspace(
        root,
        store=store,
        harness=made,
        budget=budget if isinstance(budget, Budget) else Budget(parse_budget(budget)),
        judge_model=judge_model,
        judge_effort=judge_effort,
        effort=effort,
        models=models,
        adapters=Adapters(
            harness=lazy,
            models=model_access,
            sandboxes=local_sandboxes,
            harness_name=default_harness_name,
            trainer=make_trainer,
        ),
        keep_sandboxes=keep_sandboxes,
        data_dir=data_dir,
        project=project,
    )
