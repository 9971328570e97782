"""The runs a training makes besides its steps, counted into its plan so the plan's time estimate covers
the whole training: the cases sampled first, and the held-out cases measured on both sides (the live
version before the first step, the checkpoint after the last). A plan that counted the steps alone said
"about 44 s" of a training whose held-out runs took longer than its steps."""

from __future__ import annotations

from machine.training import Prepared, TrainingPlan

from ._options import TrainOptions


def with_runs(plan: TrainingPlan, prepared: Prepared, o: TrainOptions, cases: int, held: int) -> TrainingPlan:
    """``plan`` with the runs around its steps: ``samples`` of each of ``cases`` (none when it resumes, as
    a resumed training does not sample again) and ``trials`` of each of ``held`` held-out cases on each
    side, at most (stored runs of the live version are reused), each at the trainer's time per run."""
    sampled = 0 if o.resume else o.samples * cases
    return plan.model_copy(
        update={
            "sample_runs": sampled,
            "measure_runs": 2 * o.trials * held,
            "run_seconds": prepared.run_seconds,
        }
    )
