"""Export runs as evaluation logs: a suite's runs, or a machine's newest runs grouped into evals (one per
suite, version and model), each eval written by a log writer the face hands in (the Inspect AI writer is an
adapter in ``machine.clients``). Unlike the training export, nothing is filtered by score: an evaluation log
holds the failing, failed and unscored runs too. What is written is redacted as the training export is."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, model_validator

from machine._backends import part
from machine.errors import BadInputError, Fix, NotFoundError
from machine.measure import Options
from machine.runs import Model, Redactor, Run
from machine.workspace import Workspace

MAX_RUNS = 10_000
"""The most runs one export reads without a suite (each eval is built in memory before it is written)."""


class EvalLogOptions(Options):
    """The options of an eval-log export: where to write, and which runs."""

    operation = "export"

    out: str | Path = Field(description="The folder to write the logs to (made if missing).")
    suite: str | None = Field(
        None, min_length=1, max_length=100, description="Export this suite's runs (its id) as one eval."
    )
    limit: int = Field(
        100,
        ge=1,
        le=MAX_RUNS,
        strict=True,
        description="Without a suite: the machine's newest runs to export, one eval per suite, version "
        "and model.",
    )

    @model_validator(mode="after")
    def _one_selection(self) -> EvalLogOptions:
        if self.suite is not None and "limit" in self.model_fields_set:
            raise BadInputError("an eval of a suite holds all its runs: give suite or limit, not both")
        return self


@dataclass
class EvalRuns:
    """The runs of one eval and what describes it: the task (the machine), the suite, its rubric."""

    task: str
    runs: list[Run]
    suite_id: str | None = None
    criteria: dict[str, str] = field(default_factory=dict)
    """Each criterion's description, in the rubric's order."""


class LogWriter(Protocol):
    """Writes one eval's runs as a log file in ``folder``, returning the file's path."""

    def __call__(self, group: EvalRuns, folder: Path) -> Path: ...


class EvalLogFile(Model):
    """One log written: where, and what it holds."""

    path: str
    suite_id: str | None
    version: str | None
    model: str
    samples: int


class EvalLogReport(Model):
    """What an eval-log export wrote."""

    machine: str
    out: str
    logs: list[EvalLogFile] = Field(default_factory=list)
    runs: int = 0
    redacted: int = 0
    redacted_kinds: dict[str, int] = Field(default_factory=dict)


def export_eval_logs(
    ws: Workspace,
    name: str,
    options: EvalLogOptions | None = None,
    *,
    write: LogWriter | None = None,
    **fields: Any,
) -> EvalLogReport:
    """Write machine ``name``'s runs (a suite's, else the newest ``limit``) as eval logs under ``out``
    with ``write`` (default: Inspect's, from the ``inspect_log`` part); no runs to write is an error that says
    where to find some."""
    o = EvalLogOptions.of(options, **fields)
    writer: LogWriter = write or part("inspect_log")()  # a missing extra said before anything is read
    spec = ws.load(name)  # an unknown machine is named before anything is read
    criteria = {key: criterion.description for key, criterion in spec.rubric.items()}
    redactor = Redactor.here(ws.root)
    groups = [
        EvalRuns(
            task=name, runs=[_redacted(run, redactor) for run in runs], suite_id=suite, criteria=criteria
        )
        for suite, runs in _selected(ws, name, o)
    ]
    if not groups:
        raise BadInputError(
            f"machine {name!r} has no stored runs to export: run it, or a suite of its cases, first",
            fixes=[Fix(operation="suite", machine=name, purpose="makes some")],
        )
    folder = Path(o.out)
    report = EvalLogReport(machine=name, out=str(folder))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for group in groups:
            path = writer(group, folder)
            first = group.runs[0]
            report.logs.append(
                EvalLogFile(
                    path=str(path),
                    suite_id=group.suite_id,
                    version=first.version,
                    model=first.model,
                    samples=len(group.runs),
                )
            )
            report.runs += len(group.runs)
    except OSError as error:
        raise BadInputError(
            f"cannot write the logs to {folder}: {error.strerror or error}",
            fixes=[Fix("out", "DIR", "(a folder you can write)")],
        ) from None
    report.redacted, report.redacted_kinds = redactor.count, dict(redactor.kinds)
    return report


def _selected(ws: Workspace, name: str, o: EvalLogOptions) -> list[tuple[str | None, list[Run]]]:
    """(suite id, runs) for each eval: the suite's runs as one, else the newest runs by suite, version
    and model, oldest first within each, the groups in the order of their first run."""
    if o.suite is not None:
        try:
            suite = ws.store.get_suite(o.suite)
        except NotFoundError:
            raise BadInputError(
                f"there is no suite {o.suite!r}: give the id a suite of {name} printed",
                fixes=[Fix(operation="suite", machine=name, purpose="makes one")],
            ) from None
        if suite.machine != name:
            raise BadInputError(f"suite {o.suite!r} ran machine {suite.machine!r}, not {name!r}")
        runs = list(ws.store.iter_suite_runs(o.suite))
        return [(o.suite, runs)] if runs else []
    return _grouped(reversed(ws.store.runs(name, limit=o.limit)), lambda r: (r.suite_id, r.version, r.model))


def _grouped(
    runs: Iterable[Run], key: Callable[[Run], tuple[str | None, str | None, str]]
) -> list[tuple[str | None, list[Run]]]:
    groups: dict[tuple[str | None, str | None, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(key(run), []).append(run)
    return [(suite, runs) for (suite, _, _), runs in groups.items()]


def _redacted(run: Run, redactor: Redactor) -> Run:
    """``run`` with the secrets in what it read and wrote replaced by a marker."""
    return Run.model_validate(redactor.data(run.model_dump(mode="json")))
