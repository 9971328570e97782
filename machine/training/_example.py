"""One example a trainer learns from: a chat conversation with the assistant messages to learn marked
(its targets), the rest context. Every trainer reads the same marks, so what is learned is decided here,
not by each trainer: an export's ``"weight": 0`` on a turn (OpenAI's chat fine-tuning mark, which the
export writes on the turns a conversation had before the one approved) makes it context."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, model_validator

from machine._data import Model
from machine.errors import BadInputError


class TrainExample(Model):
    """One conversation to learn from: chat messages (system first), the tools offered, and the indices of
    the assistant messages that are targets (the others are context). Made from an exported row, an
    assistant message marked ``"weight": 0`` (OpenAI's chat fine-tuning mark, which the export writes on
    earlier turns) is context whatever ``targets`` says, and ``targets`` defaults to the others; the mark
    is read here, once, so every trainer learns exactly the targets and renders plain chat messages."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    targets: list[int] = Field(default_factory=list)
    """The indices of the assistant messages to learn (not given: each one not marked as context)."""
    run_id: str = ""
    case_id: str | None = Field(default=None, validation_alias=AliasChoices("case_id", "case"))
    """The run's case (read as ``case`` from records written before it had this name)."""
    effort: float | None = None
    """The reasoning effort the run was sampled at: a renderer that writes effort into the prompt renders
    the example at it, so the model learns from the prompt it was given."""
    rejected: list[dict[str, Any]] | None = None
    """For a preference pair (DPO): the assistant message preferred less, in place of the one target
    (the last message, preferred), after the same prompt."""

    @model_validator(mode="before")
    @classmethod
    def _weights_read(cls, data: Any) -> Any:
        """The export's weights as targets: a weight-0 message is never one; the marks are dropped."""
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            return data
        messages = data["messages"]
        marked = [isinstance(m, dict) and "weight" in m for m in messages]
        if "targets" in data and not any(marked):
            return data
        context = {i for i, m in enumerate(messages) if marked[i] and not m["weight"]}
        said = data.get("targets")
        if said is None:
            said = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]
        plain = [
            {k: v for k, v in m.items() if k != "weight"} if marked[i] else m for i, m in enumerate(messages)
        ]
        return {**data, "messages": plain, "targets": [t for t in said if t not in context]}

    def sides(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """A preference pair's two conversations: the prompt with the chosen answer (its one target, last),
        and the same prompt with the rejected answer; an example that is no pair is refused."""
        if not self.rejected or len(self.targets) != 1:
            raise BadInputError(
                f"example of run {self.run_id!r} is no preference pair (one target, a rejected answer): "
                "DPO trains on the pairs export writes"
            )
        [target] = self.targets
        return self.messages[: target + 1], [*self.messages[:target], *self.rejected[:1]]
