"""An author's child of ``wordmath`` to vet, and the call that vets it in the real sandbox: shared by the
vetting tests."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from machine import Run
from machine.learn.specialize.vetting._child import vet_child
from machine.learn.specialize.vetting._result import Vetting
from machine.sandboxes import LocalSandbox

REPO = Path(__file__).resolve().parents[2]
MODEL = "org/child-model"

HEADER = """\
from machine import check, define_child, define_evaluator, define_machine, instructions_from, judge
from machine import model_from

from ..machine import machine as parent
from .rubric import rubric
"""

SHOWS_WORK = """
def shows_work(run):
    lines = run.output.strip().splitlines()
    return len(lines) > 1, f"{len(lines)} line(s)"
"""


def child_py(
    graders: str = '{"shows_work": check("shows_work", shows_work), "clear": judge()}',
    *,
    extra: str = "",
    model: str = "model_from(__file__, parent.model)",
) -> str:
    return (
        HEADER
        + extra
        + SHOWS_WORK
        + f"""
machine = define_child(
    parent,
    name="wordmath/steps",
    intent="Solve word problems and show each step.",
    instructions=instructions_from(__file__),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {graders}),
    model={model},
)
"""
    )


RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({
    "shows_work": "The reply shows its steps before the answer.",
    "clear": "The steps are easy to follow.",
})
"""


def child(machine_py: str | None = None, rubric_py: str = RUBRIC) -> dict[str, str]:
    return {
        "machine.py": child_py() if machine_py is None else machine_py,
        "rubric.py": rubric_py,
        "instructions.md": "Write each step on its own line, then the answer.",
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with the wordmath machine (one check criterion, ``correct``) as the parent."""
    parent = tmp_path / "machines" / "wordmath"
    parent.mkdir(parents=True)
    for name in ("machine.py", "rubric.py", "instructions.md"):
        shutil.copy(REPO / "machines" / "wordmath" / name, parent / name)
    return tmp_path


def sample(output: str, answer: int, case: str) -> Run:
    return Run(
        machine="wordmath",
        model="m",
        harness="scripted",
        input=f"What is the answer to {case}?",
        output=output,
        case_id=case,
        case={"id": case, "input": f"What is the answer to {case}?", "answer": answer},
    )


SAMPLES = [sample("2 + 3 = 5\n5", 5, "add"), sample("12", 12, "dozen"), sample("7", 8, "off-by-one")]


def vet(
    root: Path,
    files: dict[str, str],
    *,
    model: str | None = MODEL,
    samples: Sequence[Run] = SAMPLES,
    timeout_s: float = 30.0,
    check_timeout_s: float = 10.0,
) -> Vetting:
    return anyio.run(
        functools.partial(
            vet_child,
            root,
            "wordmath",
            "steps",
            files,
            model=model,
            samples=samples,
            sandboxes=LocalSandbox,
            timeout_s=timeout_s,
            check_timeout_s=check_timeout_s,
        )
    )
