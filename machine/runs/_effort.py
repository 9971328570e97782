"""Reasoning effort: OpenAI's names and Tinker's numbers for the same knob, mapped both ways."""

from __future__ import annotations

from dataclasses import dataclass

from machine.errors import BadInputError

LEVELS: dict[str, float] = {
    "none": 0.0,
    "minimal": 0.1,
    "low": 0.2,
    "medium": 0.7,
    "high": 0.9,
    "xhigh": 0.99,
}


@dataclass(frozen=True)
class Effort:
    """A reasoning effort: the name endpoints are sent and Tinker's number, recorded on the run."""

    name: str
    """The OpenAI-style name sent as ``reasoning_effort``: the nearest level to ``value``."""
    value: float
    """Tinker's number in [0, 0.99], recorded on the run; endpoints are sent ``name``, the nearest level."""

    def __str__(self) -> str:
        return self.name if LEVELS[self.name] == self.value else f"{self.value:g} (~{self.name})"


def parse_effort(text: str | float | None) -> Effort | None:
    """``"medium"`` or ``0.7`` (either spelling of the same effort); None leaves the endpoint's default."""
    if text is None:
        return None
    if isinstance(text, str) and text.strip().lower() in LEVELS:
        name = text.strip().lower()
        return Effort(name, LEVELS[name])
    try:
        value = float(text)
    except ValueError:
        raise BadInputError(
            f"effort {text!r} is not one of {', '.join(LEVELS)} nor a number in [0, 0.99]"
        ) from None
    if not 0.0 <= value <= 0.99:
        raise BadInputError(f"effort {text!r} is out of range: a number must lie in [0, 0.99]")
    nearest = min(LEVELS, key=lambda name: abs(LEVELS[name] - value))
    return Effort(nearest, value)
