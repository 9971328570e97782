"""What one ``train`` call and one ``export`` take: every default and bound once, for the SDK, the command
line and the MCP tool alike. ``TrainOptions`` holds the hyperparameters too and makes the
``TrainSettings`` a trainer is given, so nothing else builds those field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from pydantic import Field, model_validator

from machine.errors import BadInputError
from machine.measure import MeasureOptions
from machine.spec import DEFAULT_MIN_Z, Case, checked_min_z
from machine.training import Checkpoint, LrSchedule, Method, TrainSettings

from .._options import MAX_TRIALS, Options
from ..rl import RLOptions
from ._select import TagFilter

MAX_SAMPLES = 20
NOT_RL = (
    "samples",
    "best_of",
    "min_score",
    "epochs",
    "batch_size",
    "max_length",
    "any_model",
    "from_model",
    "from_suite",
    "all_sources",
    "beta",
    "rpo_alpha",
    "force",
)
"""What selects stored runs or plans epochs over them: nothing of it means anything to RL."""
MAX_EPOCHS = 20
Module = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]+$", max_length=100)]
"""A module of the model an adapter wraps, by name (``q_proj``, ``model.layers.0.mlp``)."""


class TrainOptions(Options):
    """The options of ``train``: what to learn from, the hyperparameters, and the gate it must pass."""

    operation = "train"

    samples: int = Field(
        0,
        ge=0,
        le=MAX_SAMPLES,
        strict=True,
        description="New runs of each case the live version makes first, graded, before the good runs are "
        "selected (0: learn from the runs stored already).",
    )
    trials: int = Field(3, ge=1, le=MAX_TRIALS, strict=True, description="Runs per held-out case, each.")
    best_of: int = Field(2, ge=1, strict=True, description="Best runs kept a case.")
    min_score: float = Field(1.0, ge=0, le=1, description="The score a run must reach.")
    epochs: int | None = Field(
        None,
        ge=1,
        le=MAX_EPOCHS,
        strict=True,
        description="Passes over the examples (default: planned, enough for 30 optimizer steps; 3 for dpo).",
    )
    lr: float | None = Field(
        None, gt=0, description="Learning rate (default: the trainer's for the base and the method)."
    )
    lr_schedule: LrSchedule = Field(
        "constant",
        description="How the learning rate moves over the steps: constant, or linear (from the rate at the "
        "first step down toward 0 at the last).",
    )
    rank: int | None = Field(
        None, ge=1, strict=True, description="LoRA rank (default: 32 on Tinker, 16 local)."
    )
    max_length: int | None = Field(
        None, ge=2, strict=True, description="Tokens a training sequence is cut to (default: uncut)."
    )
    batch_size: int | None = Field(
        None, ge=1, strict=True, description="Sequences a step (default: planned, at most 8)."
    )
    lora_alpha: int | None = Field(
        None, ge=1, strict=True, description="LoRA scale (local; default: 2 x rank)."
    )
    lora_dropout: float | None = Field(
        None, ge=0, lt=1, description="Dropout on the LoRA layers (local; default: 0.05, none for dpo)."
    )
    target_modules: list[Module] | None = Field(
        None,
        min_length=1,
        max_length=50,
        description="Modules the adapter wraps (local; default: q_proj,k_proj,v_proj,o_proj).",
    )
    kl: float | None = Field(
        None,
        ge=0,
        le=10,
        description="Weight of a penalty on drifting from the base model, per target token (local; "
        "default: none).",
    )
    method: Method = Field(
        "sft",
        description="sft: learn the good runs' answers; dpo: learn to prefer the chosen answer of each "
        "preference pair (good over bad, corrected over original) over its rejected one, starting from "
        "the live version's checkpoint, which is also the reference; rl: learn from the model's own runs "
        "of the cases, sampled in groups and rewarded by the machine's evaluator (no good runs needed).",
    )
    rl: RLOptions | None = Field(
        None,
        description="With rl: the groups sampled, the steps and the policy loss (default: RLOptions' "
        "defaults).",
    )
    beta: float = Field(
        0.1,
        gt=0,
        le=10,
        description="DPO's beta: how far the model may move from the reference, the live model (with dpo).",
    )
    rpo_alpha: float | None = Field(
        None,
        ge=0,
        le=10,
        description="DPO: weight of the chosen answers' own loss (cross-entropy per token) added to DPO's, "
        "so they stay likely while the margin widens (RPO; default: none).",
    )
    any_model: bool = Field(
        False,
        description="Learn from the good runs of any model, not only the machine's own: distillation, e.g. "
        "from a scripted or stronger teacher's rehearsed runs.",
    )
    from_model: str | None = Field(
        None,
        min_length=1,
        max_length=1_000,
        description="Learn only from this model's runs (a teacher's, say), whatever harness ran them.",
    )
    from_suite: str | None = Field(
        None, min_length=1, max_length=100, description="Learn only from the runs of this suite (its id)."
    )
    all_sources: bool = Field(
        False, description="With any_model, learn from runs of several models or harnesses at once."
    )
    force: bool = Field(False, description="Train on a plan too short to learn (under 30 steps).")
    resume: str | None = Field(None, description="Continue the stopped training with this record id.")
    min_z: float = Field(
        DEFAULT_MIN_Z,
        ge=0,
        description="Standard errors the checkpoint's held-out gain must reach to pass the gate.",
    )
    allow_weak_gate: bool = Field(
        False,
        description="Accept a min_z below 1: a gate that passes gains chance alone often gives.",
    )
    concurrency: int = MeasureOptions.field("concurrency")
    pass_score: float = MeasureOptions.field("pass_score")
    effort: float | None = Field(
        None,
        ge=0,
        le=0.99,
        description="The reasoning effort examples are rendered at when their run recorded none "
        "(default: the workspace's).",
    )

    @model_validator(mode="after")
    def _gate_means_something(self) -> Self:
        """A min_z below 1 only when asked for (``checked_min_z``); a DPO term only with DPO."""
        checked_min_z(self.min_z, self.allow_weak_gate)
        if self.method == "rl" or self.rl is not None:
            self._fits_rl()
        if self.rpo_alpha and self.method != "dpo":
            raise BadInputError(
                "rpo_alpha weighs the chosen answers' loss in DPO; sft learns every answer by its loss "
                "already: leave it out, or train with dpo"
            )
        return self

    def _fits_rl(self) -> None:
        """RL's options only with rl, and none of what selects good runs or plans epochs over them (given
        other than its default)."""
        if self.method != "rl":
            raise BadInputError(
                f"the rl options shape training by reinforcement; {self.method} learns from stored runs: "
                "leave them out, or train with method rl"
            )
        given = self.changed(NOT_RL)
        if given:
            raise BadInputError(
                f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for choosing or scheduling "
                "stored runs to learn from; rl learns from its own samples of the cases instead (its "
                "group, cases_per_step and rl_steps): leave them out"
            )

    @property
    def reinforcement(self) -> RLOptions:
        """RL's options: the ones given, else the defaults."""
        return self.rl or RLOptions()

    def settings(
        self, base_model: str, effort: float | None = None, start: Checkpoint | None = None
    ) -> TrainSettings:
        """How the trainer trains ``base_model``: these hyperparameters, at this call's effort, else at
        ``effort`` (the workspace's); DPO starts from ``start`` (the live version's checkpoint)."""
        return TrainSettings(
            base_model=base_model,
            epochs=self.epochs or 1,  # both planned (``schedule``) before the trainer is given them
            learning_rate=self.lr,
            rank=self.rank,
            batch_size=self.batch_size or 1,
            effort=self.effort if self.effort is not None else effort,
            max_length=self.max_length,
            lora_alpha=self.lora_alpha,
            lora_dropout=self.lora_dropout,
            target_modules=self.target_modules,
            kl=self.kl,
            lr_schedule=self.lr_schedule,
            method=self.method,
            beta=self.beta,
            rpo_alpha=self.rpo_alpha,
            start=start if self.method != "sft" else None,
        )


class ExportOptions(Options):
    """The options of ``export``: where to write, and which runs to select."""

    operation = "export"

    out: str | Path = Field(description="The JSONL file to write (0600).")
    tree: bool = Field(
        False, description="Export the whole family (the machine and its children), each its own runs."
    )
    min_score: float = Field(1.0, ge=0, le=1, description="The score a run must reach.")
    best: int | None = Field(None, ge=1, strict=True, description="Each case's best K runs.")
    since: str | None = Field(None, description="Only runs of this suite, or since this time.")
    cases: list[Case] | None = Field(None, description="Only runs of these cases.")
    source: str | None = Field(
        None, description="Export this other machine's runs as the machine's own (its reasoning rewritten)."
    )
    per_turn: bool = Field(False, description="One example per assistant message, ending at it.")
    pairs: bool = Field(
        False,
        description="Write preference pairs in the DPO shape (prompt, chosen, rejected): on the same input, "
        "a run marked good (or passing) over one marked bad (or failing); and each corrected run over "
        "the run it corrects.",
    )
    tags: TagFilter = Field(
        "all",
        description="good: only runs marked good; bad: only runs marked bad; all: graded runs (a bad mark "
        "keeps one out).",
    )
    include_holdout: bool = Field(
        False,
        description="Export the runs of held-out cases too (left out by default: they are what the gate "
        "measures).",
    )
    rl_samples: bool = Field(
        False,
        description="Export the runs RL trainings sampled too (left out by default unless a person marked "
        "them good: they are a policy's attempts while it learned, not the model's answers).",
    )
