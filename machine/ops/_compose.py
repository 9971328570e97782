"""The one place that wires the core to its adapters by name: harnesses and trainers
(``machine.clients``), sandboxes (``machine.sandboxes``) and the judges' model access. Every face builds
its workspace here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from machine.runs import Budget, parse_budget
from machine.workspace import Adapters, Workspace

if TYPE_CHECKING:
    from machine.grade import Grader
    from machine.runs import (
        Effort,
        Harness,
        ModelAccess,
        Sandboxes,
        Store,
        Tool,
        Trainer,
    )


def make_harness(
    name: str | None = None,
    *,
    script: str | Path | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> Harness:
    """The harness called ``name`` (default: ``MACHINE_HARNESS``, else ``local`` for a ``local:`` model,
    else ``tinker``); one that cannot be made (no key, no script, no program) says what to set."""
    from machine.clients import make_harness as make

    harness: Harness = make(name, script=script, base_url=base_url, model=model)
    return harness


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
    ``local:`` model runs on the local harness), else ``tinker``. Machine ``name`` is loaded first, so
    an unknown or broken one is reported before a harness asks for its key or program."""
    own = ws.load(name).model if name is not None else None
    runs_model = model
    if harness is None and runs_model is None and not os.environ.get("MACHINE_HARNESS"):
        runs_model = own
    return make_harness(harness, script=script, base_url=base_url, model=runs_model)


def default_harness_name(model: str | None = None) -> str:
    """The harness used when none is named: ``MACHINE_HARNESS``, else ``local`` for a ``local:`` model
    (``model``, when known), else ``tinker``."""
    from machine.clients import default_harness_name as default

    name: str = default(model)
    return name


def model_access(harness: Harness | None) -> ModelAccess:
    """Model calls for the judges: the run harness's endpoint when it has one, else routed by model id.
    A chat harness lends its client, so the judges' calls reuse the connections of the suite's runs."""
    from machine.clients.chat import ChatClient, ModelRouter

    client = getattr(harness, "client", None)
    shared = client if isinstance(client, ChatClient) else None
    models: ModelAccess = ModelRouter(default=getattr(harness, "endpoint", None), client=shared)
    return models


def make_trainer(name: str | None, base_model: str, root: Path | None = None) -> Trainer:
    """The trainer called ``name`` (``tinker`` or ``local``), else the one for ``base_model`` (the local
    trainer for a ``local:`` model, else Tinker's), from ``machine.clients.TRAINERS``; one whose extra is
    not installed is refused before anything is spent. ``root``, the workspace's, is where a local
    checkpoint is recorded relative to."""
    from machine.clients import make_trainer as make

    trainer: Trainer = make(name, base_model, root)
    return trainer


def library_tools() -> dict[str, Tool]:
    """The library's standard tools by name (the file tools, ``run``, ``web_fetch``), as they ship."""
    from machine.sandboxes import FILE_TOOLS, run, web_fetch

    return {tool.name: tool for tool in (*FILE_TOOLS, run, web_fetch)}


def hidden_tests_grader(machine_file: Path, *, command: str | None, timeout_s: float) -> Grader:
    """The library's hidden-tests grader for the machine defined in ``machine_file``."""
    from machine.sandboxes import hidden_tests

    options = {"command": command} if command else {}
    grader: Grader = hidden_tests(str(machine_file), timeout_s=timeout_s, **options)
    return grader


def local_sandboxes() -> Sandboxes:
    """Sandboxes in the workspace's ``.machine/sandboxes``, isolated by bubblewrap where it works."""
    from machine.sandboxes import LocalSandbox

    sandboxes: Sandboxes = LocalSandbox
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
            harness=lazy, models=model_access, sandboxes=local_sandboxes, harness_name=default_harness_name
        ),
        keep_sandboxes=keep_sandboxes,
        data_dir=data_dir,
        project=project,
    )
