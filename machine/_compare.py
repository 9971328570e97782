"""Compare: the working tree's machine (B) against the same machine at a git revision (A), paired by case.

Version A is read from git, never checked out: the revision's whole ``machines/`` tree (machines import
siblings and parents) is exported into a temporary folder and loaded by a loader of its own, under a
private package name, so the two versions never meet in ``sys.modules``. Both versions run on the same
cases, interleaved (A and B alternate per case and trial) through the same harness and model options,
and BOTH are graded with the current rubric and evaluator: the comparison measures the change in
behaviour and nothing else. Every run is stored; A's with the ref's commit as its revision.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from . import _stats
from ._cases import Case
from ._conversation import converse
from ._errors import BadInputError, BudgetExceeded, DefinitionError
from ._loader import MachineLoader
from ._runs import Run
from ._spec import Machine
from ._stats import Paired
from ._suite import BatchWriter, CaseResult, tally
from ._workspace import Workspace

EVIDENCE_Z = 2.0
"""A difference within about this many standard errors of zero is not evidence either way."""


@dataclass
class Side:
    """One version's runs, tallied per case."""

    label: str
    """How the report names it: the ref (``HEAD``) or ``working tree``."""
    revision: str | None
    """What its runs record as their revision."""
    cases: dict[str, CaseResult] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, list[float]]:
        return {case_id: list(result.scores) for case_id, result in self.cases.items()}

    @property
    def runs(self) -> int:
        return sum(c.trials for c in self.cases.values())

    @property
    def mean(self) -> float | None:
        scores = [s for c in self.cases.values() for s in c.scores]
        return sum(scores) / len(scores) if scores else None

    @property
    def pass_rate(self) -> float | None:
        scored = sum(len(c.scores) for c in self.cases.values())
        return sum(c.passes for c in self.cases.values()) / scored if scored else None

    @property
    def unscored(self) -> int:
        """Criterion grades that came back UNSCORED (left out of their runs' scores)."""
        return sum(c.unscored_grades for c in self.cases.values())

    @property
    def unscored_runs(self) -> int:
        """Runs with no scored criterion at all (left out of the comparison)."""
        return sum(c.unscored for c in self.cases.values())

    @property
    def errors(self) -> int:
        return sum(c.errors for c in self.cases.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "pass_rate": self.pass_rate,
            "runs": self.runs,
            "unscored": self.unscored,
            "unscored_runs": self.unscored_runs,
            "errors": self.errors,
            "revision": self.revision,
        }


@dataclass
class Plan:
    """What is about to be compared: known before any run starts, so a front end can say it first."""

    machine: str
    ref: str
    commit: str
    changes: list[str]
    """What differs between A and B: instructions, model, tools, max_steps, rubric."""
    cases: int
    trials: int

    @property
    def rubric_changed(self) -> bool:
        return "rubric" in self.changes

    @property
    def unchanged(self) -> bool:
        return not self.changes


@dataclass
class Comparison:
    plan: Plan
    a: Side
    b: Side
    paired: Paired | None
    """None when no case has a scored run of both versions."""
    cost_usd: float = 0.0
    stopped: str | None = None
    """Why scheduling stopped early (the budget), or None."""

    @property
    def machine(self) -> str:
        return self.plan.machine

    @property
    def ref(self) -> str:
        return self.plan.ref

    @property
    def commit(self) -> str:
        """The commit the ref named: A's revision."""
        return self.plan.commit

    @property
    def rubric_changed(self) -> bool:
        return self.plan.rubric_changed

    @property
    def unchanged(self) -> bool:
        return self.plan.unchanged

    @property
    def diff(self) -> float | None:
        return None if self.paired is None else self.paired.diff

    @property
    def se(self) -> float | None:
        return None if self.paired is None else self.paired.se

    @property
    def z(self) -> float | None:
        return None if self.paired is None else self.paired.z

    @property
    def cases(self) -> int:
        return 0 if self.paired is None else self.paired.cases

    @property
    def unscored(self) -> int:
        return self.a.unscored + self.b.unscored

    @property
    def errors(self) -> int:
        return self.a.errors + self.b.errors

    @property
    def verdict(self) -> str:
        """The comparison in words, with what it is and is not evidence of."""
        p, a, b = self.paired, f"A ({self.ref})", "B (the working tree)"
        if p is None or p.cases == 0:
            return "No case has a scored run of both versions, so there is nothing to compare."
        if p.cases < 2:
            return (
                "Only one case has scored runs of both versions, so the difference has no standard "
                "error and is not evidence that either version is better; compare on more cases."
            )
        if p.se == 0:
            if p.diff == 0:
                return "Every case scored the same under both versions: no difference at all."
            better = b if p.diff > 0 else a
            return (
                f"Every case moved by the same {p.diff:+.3f} (standard error 0): {better} scored "
                "higher on every case."
            )
        if abs(p.diff) < EVIDENCE_Z * p.se:
            return (
                "The difference is within about two standard errors of zero: it is not evidence that "
                "either version is better (run more cases or --trials to tell)."
            )
        better, worse = (b, a) if p.diff > 0 else (a, b)
        return (
            f"The difference is {abs(p.diff) / p.se:.1f} standard errors from zero: evidence that "
            f"{better} scores higher than {worse}."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "ref": self.ref,
            "commit": self.commit,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "diff": self.diff,
            "se": self.se,
            "z": self.z,
            "cases": self.cases,
            "unscored": self.unscored,
            "errors": self.errors,
            "rubric_changed": self.rubric_changed,
            "unchanged": self.unchanged,
            "changes": list(self.plan.changes),
            "verdict": self.verdict,
            "cost_usd": self.cost_usd,
            "stopped": self.stopped,
        }


def changes_between(a: Machine, b: Machine) -> list[str]:
    """What decides behaviour or grading and differs between the two versions."""
    changes = []
    if a.instructions != b.instructions:
        changes.append("instructions")
    if a.model != b.model:
        changes.append("model")
    if [t.name for t in a.tools] != [t.name for t in b.tools]:
        changes.append("tools")
    if a.max_steps != b.max_steps:
        changes.append("max_steps")
    if a.rubric.fingerprint != b.rubric.fingerprint:
        changes.append("rubric")
    return changes


@dataclass
class Baseline:
    """The machine as it was at a git revision, loaded from an exported copy of that revision."""

    ref: str
    commit: str
    machine: Machine


@contextmanager
def machine_at(workspace: Workspace, name: str, ref: str = "HEAD") -> Iterator[Baseline]:
    """Load machine ``name`` as it was at ``ref``; the exported copy is removed on exit."""
    import git

    try:
        repo = git.Repo(workspace.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise BadInputError(
            f"workspace {workspace.root} is not in a git repository, so there is no earlier version of "
            f"machine {name!r} to compare with: run `git init` there and commit machines/ first"
        ) from None
    with repo:
        if repo.working_tree_dir is None:
            raise BadInputError(f"the git repository at {repo.git_dir} is bare; compare needs a working tree")
        try:
            commit = repo.commit(ref)
        except Exception:  # BadName, BadObject, ValueError (no commits yet, not a commit): all the same here
            raise BadInputError(
                f"git revision {ref!r} does not exist in {repo.working_tree_dir} (or names no commit): "
                "pass --ref with a commit, branch or tag that does, such as HEAD~1"
            ) from None
        where = f"{ref} ({commit.hexsha[:12]})"
        try:
            inside = workspace.machines_dir.resolve().relative_to(Path(repo.working_tree_dir).resolve())
        except ValueError:
            raise BadInputError(
                f"{workspace.machines_dir} is outside the git repository at {repo.working_tree_dir}"
            ) from None
        folder = inside.as_posix()
        try:
            tree = commit.tree / folder if folder != "." else commit.tree
            tree / f"{name}/machine.py"
        except KeyError:
            raise BadInputError(
                f"machine {name!r} did not exist at {where}: {folder}/{name}/machine.py is not in that "
                "commit, so there is no earlier version to compare with; pass --ref with a commit that has it"
            ) from None
        with tempfile.TemporaryDirectory(prefix="machine-compare-") as temp:
            machines = Path(temp) / "machines"
            _export(tree, machines)
            loader = MachineLoader(machines)
            try:
                try:
                    spec = loader.load(name)
                except DefinitionError as error:
                    raise DefinitionError(f"machine {name!r} at {where}: {error}") from None
                yield Baseline(ref=ref, commit=commit.hexsha, machine=spec)
            finally:
                for module in [
                    m for m in sys.modules if m == loader.package or m.startswith(loader.package + ".")
                ]:
                    del sys.modules[module]


def _export(tree: Any, dest: Path) -> None:
    """Write a git tree's files under ``dest`` (no checkout: the person's working tree is never touched)."""
    dest.mkdir(parents=True)
    base = PurePosixPath(tree.path) if tree.path else PurePosixPath()
    for item in tree.traverse():
        target = dest.joinpath(*PurePosixPath(item.path).relative_to(base).parts)
        if item.type == "tree":
            target.mkdir(parents=True, exist_ok=True)
        elif item.type == "blob":
            target.parent.mkdir(parents=True, exist_ok=True)
            data = item.data_stream.read()
            if item.mode == 0o120000:  # a symbolic link: its target is the blob's content
                os.symlink(data.decode(), target)
            else:
                target.write_bytes(data)


async def compare(
    workspace: Workspace,
    name: str,
    *,
    ref: str = "HEAD",
    cases: str | Path | Sequence[Case] | None = None,
    trials: int = 1,
    concurrency: int = 4,
    pass_score: float = 1.0,
    model: str | None = None,
    on_run: Callable[[Run], None] | None = None,
    on_start: Callable[[Plan], None] | None = None,
) -> Comparison:
    """Run the working tree's ``name`` (B) and ``name`` at ``ref`` (A) on the same cases, ``trials``
    each, interleaved, at most ``concurrency`` runs at once; grade both with the current evaluator;
    store every run; and compare them paired by case.

    ``cases`` is a cases file (default the machine's cases.json in the working tree) or the cases
    themselves. ``on_start`` sees the plan (what changed) before any run starts; ``on_run`` each
    finished run (A's record the ref's commit as their revision).
    """
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    current = workspace.load(name)
    chosen = (
        list(cases)
        if cases is not None and not isinstance(cases, (str, Path))
        else workspace.cases(current, cases)
    )
    with machine_at(workspace, name, ref) as baseline:
        plan = Plan(
            machine=name,
            ref=ref,
            commit=baseline.commit,
            changes=changes_between(baseline.machine, current),
            cases=len(chosen),
            trials=trials,
        )
        if on_start is not None:
            on_start(plan)
        a = Side(ref, baseline.commit, {c.id: CaseResult(c.id) for c in chosen})
        b = Side("working tree", workspace.revision, {c.id: CaseResult(c.id) for c in chosen})
        comparison = Comparison(plan=plan, a=a, b=b, paired=None)
        versions = ((a, baseline.machine), (b, current))
        pending: Iterator[tuple[Side, Machine, Case, int]] = (
            (side, spec, case, trial) for trial in range(trials) for case in chosen for side, spec in versions
        )
        writer = BatchWriter(workspace.store)
        spent_before = workspace.budget.spent

        async def one(side: Side, spec: Machine, case: Case, trial: int) -> tuple[Run | None, list[Run]]:
            """Run one (version, case, trial), stamp its revision, and grade it with the CURRENT machine."""
            if spec.counterpart is not None:  # a case is a whole conversation; its machine's last turn counts
                conversation = await converse(
                    workspace, spec, case, trial=trial, model=model, grade=False, store=False
                )
                comparison.stopped = comparison.stopped or conversation.stopped
                turns = [t.model_copy(update={"revision": side.revision}) for t in conversation.turns]
                result = conversation.result
                index = next((i for i, t in enumerate(turns) if result and t.id == result.id), None)
            else:
                run = await workspace.run(spec, case.input, case=case, trial=trial, model=model, store=False)
                turns, index = [run.model_copy(update={"revision": side.revision})], 0
            if index is None:
                return None, turns
            if turns[index].status == "ok":
                turns[index] = await workspace.grade(
                    turns[index], current, pass_score=pass_score, store=False
                )
            return turns[index], turns

        async def worker() -> None:
            for side, spec, case, trial in pending:
                if comparison.stopped:
                    return
                try:
                    run, turns = await one(side, spec, case, trial)
                except BudgetExceeded as error:
                    comparison.stopped = str(error)
                    return
                if run is not None:
                    tally(side.cases[case.id], run)
                writer.add(turns)
                if on_run is not None and run is not None:
                    on_run(run)

        try:
            async with anyio.create_task_group() as group:
                for _ in range(min(concurrency, 2 * len(chosen) * trials)):
                    group.start_soon(worker)
        finally:
            writer.flush()
    comparison.cost_usd = workspace.budget.spent - spent_before
    a_scores, b_scores = a.scores, b.scores
    if any(a_scores[c] and b_scores[c] for c in a_scores):
        comparison.paired = _stats.paired(a_scores, b_scores)
    return comparison
