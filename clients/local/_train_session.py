"""One LoRA training of a local model, step by step: the peft model on a copy of the loaded base (a new
adapter, or the live one to build on), AdamW, the loss on target tokens only (or DPO's over pairs, against
the reference's log-probabilities measured once), gradient accumulation over micro-batches, and the saved
state (adapter, optimizer, step, random state) a stopped training resumes from with the same weights it
would have had.

Blocking torch work: the trainer calls each method in a worker thread. torch and peft are imported here.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine.errors import BadInputError
from machine.training import epoch_batches

from .._rl_turns import RLSequence
from ._batch import Batcher
from ._models import LocalModel
from ._rl import RLLoss, RLMetrics, rl_step
from ._train_data import IGNORE, PairSequence, TrainSequence
from ._train_pass import kept_logits, micro_batches

STATE_FILE = "trainer_state.json"
ADAPTER_DIR = "adapter"
"""The training folder's subfolder the final adapter (the checkpoint) is saved in."""
STATES_DIR = "states"
"""The training folder's subfolder each saved state (``step-N``) is saved in."""


@dataclass(frozen=True)
class Lora:
    """The adapter's shape: rank, scale (alpha), the modules it wraps, and its dropout."""

    rank: int
    alpha: int
    target_modules: tuple[str, ...]
    dropout: float

    def config(self, start: Path | None = None) -> Any:
        """peft's config of this shape; of ``start``'s adapter (its shape) with this dropout when given."""
        from peft import LoraConfig

        if start is not None:
            config = LoraConfig.from_pretrained(str(start))
            config.lora_dropout, config.inference_mode = self.dropout, False
            return config
        return LoraConfig(
            r=self.rank,
            lora_alpha=self.alpha,
            target_modules=list(self.target_modules),
            lora_dropout=self.dropout,
            bias="none",
            task_type="CAUSAL_LM",
        )


@dataclass
class Batch:
    """One optimizer step's sequences (their indices in the prepared data)."""

    number: int
    """1-based, over every epoch."""
    epoch: int
    indices: list[int]


def plan(count: int, batch_size: int, epochs: int, seed: int) -> list[Batch]:
    """Every optimizer step, in order: each epoch walks the sequences in an order drawn from the seed (the
    same order on a resumed training, so it continues with the batches it would have had), in batches
    whose sizes differ by one at most (``epoch_batches``)."""
    steps: list[Batch] = []
    for epoch in range(1, epochs + 1):
        for part in epoch_batches(count, batch_size, seed, epoch):
            steps.append(Batch(len(steps) + 1, epoch, part))
    return steps


class Session:
    """A peft model training on one device, with its optimizer; ``done`` steps are behind it. ``start``
    is an adapter to train on from where it is (the live one), instead of a new one; ``rpo_alpha`` weighs
    the chosen answers' own loss in DPO's. ``rl``: a session for RL, with no dropout anywhere (the LoRA's
    set to 0, the model in eval mode), so the policy trained is exactly the policy that sampled (ratio 1)."""

    def __init__(
        self,
        loaded: LocalModel,
        lora: Lora,
        learning_rate: float,
        seed: int,
        *,
        kl: float = 0.0,
        start: Path | None = None,
        rpo_alpha: float = 0.0,
        rl: bool = False,
    ) -> None:
        import torch
        from peft import PeftModel, get_peft_model

        lora = dataclasses.replace(lora, dropout=0.0) if rl else lora
        torch.manual_seed(seed)  # the adapter's initial weights
        base = copy.deepcopy(loaded.model).to(loaded.device)
        if start is None:
            self.model: Any = get_peft_model(base, lora.config())
        else:
            config = lora.config(start)
            self.model = PeftModel.from_pretrained(base, str(start), config=config, is_trainable=True)
        self.model.train(not rl)  # gradients flow in eval mode too; RL's must see no dropout
        self.loaded, self.rl = loaded, rl
        self._policy: LocalModel | None = None
        self.device, self.pad_id = loaded.device, loaded.pad_id
        self.learning_rate = learning_rate
        self.kl, self.rpo_alpha = kl, rpo_alpha
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trainable, lr=learning_rate, weight_decay=0.0)
        self.done = 0

    def step(self, sequences: list[TrainSequence], max_tokens: int, rate: float) -> float:
        """One optimizer step over ``sequences`` at learning rate ``rate``; the mean loss per target token."""
        import torch

        for group in self.optimizer.param_groups:
            group["lr"] = rate
        targets = sum(s.target_tokens for s in sequences)
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for group in micro_batches(sequences, max_tokens):
            loss, drift = self._loss_sum(group)
            ((loss + self.kl * drift) / targets).backward()
            total += float(loss.detach())
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        self.optimizer.step()
        self.done += 1
        return total / targets

    def rl_step(
        self, batch: list[RLSequence], loss: RLLoss, max_tokens: int, rate: float, passes: int = 1
    ) -> RLMetrics:
        """One RL step (``_rl.rl_step``) at learning rate ``rate``: ``passes`` optimizer steps over the
        batch (PPO's epochs), the last one's metrics; a batch with nothing to train moves no weight but is
        a step all the same, so a resumed training counts as this one did."""
        for _ in range(passes):
            metrics = rl_step(self.model, self.optimizer, batch, loss, max_tokens=max_tokens, rate=rate)
        self.done += 1
        return metrics

    def policy(self) -> LocalModel:
        """The model as it trains, as the local harness samples it (``RLSampling.policy``): the same
        weights, so each step samples the policy it then trains; one per session, with its batcher. Sample
        between steps, never during one: the step changes the weights the sampler reads."""
        if self._policy is None:
            loaded = self.loaded
            self._policy = LocalModel(
                loaded.model_id, self.model, loaded.tokenizer, self.device, loaded.stop_ids, loaded.pad_id
            )
            self._policy.batcher = Batcher(self._policy)
        return self._policy

    def close(self) -> None:
        """Stop the policy's generation thread, if it was started."""
        if self._policy is not None:
            self._policy.batcher.close()

    def _loss_sum(self, group: list[TrainSequence]) -> tuple[Any, Any]:
        """The summed cross-entropy of the group's target tokens (the head runs on those positions only,
        not on every position of every padded row) and, with a KL weight, the summed divergence there of
        the trained model's next-token distribution from the base's (the adapter switched off), else 0."""
        import torch
        import torch.nn.functional as F

        ids, wanted, mask, keep = self._tensors(group)
        logits = self._logits(ids, mask, keep)
        loss = F.cross_entropy(logits, wanted[keep], reduction="sum")
        if not self.kl:
            return loss, torch.zeros((), device=self.device)
        with torch.no_grad(), self.model.disable_adapter():
            base = F.log_softmax(self._logits(ids, mask, keep), dim=-1)
        trained = F.log_softmax(logits, dim=-1)
        return loss, F.kl_div(base, trained, log_target=True, reduction="sum")

    def _tensors(self, group: list[TrainSequence]) -> tuple[Any, Any, Any, Any]:
        """The group padded: ids, the token each position predicts, the attention mask, and which
        positions are targets."""
        import torch

        longest = max(len(s.input_ids) for s in group)
        ids = torch.full((len(group), longest), self.pad_id, dtype=torch.long)
        labels = torch.full((len(group), longest), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(group), longest), dtype=torch.long)
        for row, sequence in enumerate(group):
            size = len(sequence.input_ids)
            ids[row, :size] = torch.tensor(sequence.input_ids)
            labels[row, :size] = torch.tensor(sequence.labels)
            mask[row, :size] = 1
        ids, labels, mask = ids.to(self.device), labels.to(self.device), mask.to(self.device)
        wanted = labels[:, 1:]  # the token at t+1 is predicted at t
        return ids, wanted, mask, wanted != IGNORE

    def log_probs(self, group: list[TrainSequence]) -> Any:
        """Each sequence's summed log-probability of its target tokens, under the model as it is."""
        import torch
        import torch.nn.functional as F

        ids, wanted, mask, keep = self._tensors(group)
        tokens = -F.cross_entropy(self._logits(ids, mask, keep), wanted[keep], reduction="none")
        rows = keep.nonzero()[:, 0]  # the row of each target position, in the order the logits are
        return torch.zeros(len(group), device=self.device).index_add(0, rows, tokens)

    def measure(self, pairs: list[PairSequence]) -> None:
        """The reference's log-probability of both answers of every pair: the model as it is now, before
        the first step (a new adapter is no change: the base; a live adapter: the live model), without
        dropout. Measured once, so a resumed training compares against the same model as its start."""
        import torch

        self.model.eval()
        with torch.no_grad():
            for pair in pairs:
                chosen, rejected = self.log_probs([pair.chosen, pair.rejected]).tolist()
                pair.reference = (float(chosen), float(rejected))
        self.model.train()

    def dpo_terms(self, pairs: list[PairSequence], beta: float) -> tuple[Any, Any]:
        """DPO's loss over ``pairs``, a mean: -log sigmoid(beta x (the policy's log-ratio of chosen to
        rejected minus the reference's)), plus ``rpo_alpha`` times the chosen answers' cross-entropy per
        token; and the chosen answers' mean drift from the reference (log π − log π_ref, detached)."""
        import torch
        import torch.nn.functional as F

        if any(pair.reference is None for pair in pairs):
            raise ValueError("the reference's log-probabilities are measured before the first step")
        group = [s for pair in pairs for s in (pair.chosen, pair.rejected)]
        policy = self.log_probs(group).view(-1, 2)
        reference = torch.tensor([pair.reference for pair in pairs], device=self.device)
        margin = (policy[:, 0] - policy[:, 1]) - (reference[:, 0] - reference[:, 1])
        loss = -F.logsigmoid(beta * margin).mean()
        if self.rpo_alpha:
            tokens = torch.tensor([pair.chosen.target_tokens for pair in pairs], device=self.device)
            loss = loss + self.rpo_alpha * (-policy[:, 0] / tokens).mean()
        return loss, (policy[:, 0] - reference[:, 0]).detach().mean()

    def dpo_loss(self, pairs: list[PairSequence], beta: float) -> Any:
        """DPO's loss over ``pairs`` (``dpo_terms``)."""
        return self.dpo_terms(pairs, beta)[0]

    def dpo_step(self, pairs: list[PairSequence], beta: float, rate: float) -> tuple[float, float]:
        """One optimizer step on DPO's loss over ``pairs`` (a pair at a time, gradients summed); the
        mean loss and the chosen answers' mean drift from the reference, both before the step."""
        import torch

        for group in self.optimizer.param_groups:
            group["lr"] = rate
        self.optimizer.zero_grad(set_to_none=True)
        total = drift = 0.0
        for pair in pairs:
            loss, moved = self.dpo_terms([pair], beta)
            (loss / len(pairs)).backward()
            total += float(loss.detach()) / len(pairs)
            drift += float(moved) / len(pairs)
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        self.optimizer.step()
        self.done += 1
        return total, drift

    def _logits(self, ids: Any, mask: Any, keep: Any) -> Any:
        """The next-token logits at the ``keep`` positions, in float32."""
        return kept_logits(self.model, ids, mask, keep)

    def save_adapter(self, folder: Path, base_model: str) -> Path:
        """The adapter (peft's files), naming ``base_model`` so ``local:FOLDER`` alone finds its base."""
        with warnings.catch_warnings():  # a GGUF base has no config file for peft to check the vocabulary
            warnings.filterwarnings("ignore", message="Could not find a config file")
            self.model.save_pretrained(str(folder))
        config_file = folder / "adapter_config.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config["base_model_name_or_path"] = base_model
        config_file.write_text(json.dumps(config, indent=2), encoding="utf-8")
        return folder.resolve()

    def save_state(self, folder: Path, base_model: str) -> Path:
        """The adapter, the optimizer, the step and the random state: enough to go on as if never stopped."""
        import torch

        self.save_adapter(folder, base_model)
        torch.save(self.optimizer.state_dict(), folder / "optimizer.pt")
        torch.save({"torch": torch.get_rng_state()}, folder / "rng.pt")
        state = {"step": self.done, "learning_rate": self.learning_rate}
        (folder / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
        return folder.resolve()

    def restore(self, folder: Path) -> None:
        """Load a state ``save_state`` wrote: the adapter's weights, the optimizer, the step, the RNG."""
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        weights = folder / "adapter_model.safetensors"
        if not (folder / STATE_FILE).is_file() or not weights.is_file():
            raise BadInputError(f"{folder} holds no saved training state to resume from")
        set_peft_model_state_dict(self.model, load_file(str(weights), device=str(self.device)))
        self.optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=self.device))
        rng = torch.load(folder / "rng.pt")
        torch.set_rng_state(rng["torch"])
        self.done = int(json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))["step"])
