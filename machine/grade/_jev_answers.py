"""Jev's answers turned into scores, and its failures into reasons (see ``_jev`` for the graders)."""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from machine.runs import passes

API_KEY_ENV = "TYPESAFE_API_KEY"
UNSURE_LOW = 0.3
UNSURE_HIGH = 0.7
PASS_MARK = 0.5
"""A level or option scoring at least this counts towards the probability that the criterion passes."""

QuestionKind = Literal["noul", "score", "choice"]


@dataclass(frozen=True)
class Option:
    """One option of a multiple-choice question, with its score."""

    label: str
    score: float
    description: str | None = None


def load_sdk() -> Any:
    """The typesafe_sdk module, imported only when a Jev criterion is graded: it is the optional
    ``jev`` extra, and importing it costs start-up time the CLI does not otherwise pay."""
    return importlib.import_module("typesafe_sdk")


class Malformed(Exception):
    pass


def _probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Malformed(f"{what} is {value!r}, not a number")
    if not -1e-6 <= value <= 1 + 1e-6:
        raise Malformed(f"{what} is {value!r}, outside [0, 1]")
    return min(max(float(value), 0.0), 1.0)


def _expect(answer: Any, answer_type: type, question: str) -> None:
    if not isinstance(answer, answer_type):
        raise Malformed(f"a {question} question got a {type(answer).__name__}, not a {answer_type.__name__}")


def _from_noul(answer: Any, sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.NoulAnswer, "noul")
    p = _probability(answer.noul, "P(yes)")
    details = {"probability": p, "answer": "yes" if p >= PASS_MARK else "no"}
    return p, details, f"Jev: P(yes) = {p:.3f}"


def _weights(raw: Any, keys: Sequence[Any], names: Sequence[str]) -> dict[str, float]:
    """Probabilities keyed by level or label, checked and normalised to sum to 1."""
    if not isinstance(raw, Mapping) or not raw:
        raise Malformed(f"its probabilities are {raw!r}")
    unknown = [key for key in raw if key not in keys]
    if unknown:
        raise Malformed(f"it gives a probability to {unknown[0]!r}, which the question does not have")
    weights = {
        name: _probability(raw.get(key, 0.0), f"the probability of {name!r}")
        for key, name in zip(keys, names, strict=True)
    }
    total = sum(weights.values())
    if total <= 0:
        raise Malformed("its probabilities sum to 0")
    return {name: w / total for name, w in weights.items()}


def _from_score(answer: Any, levels: tuple[str, ...], sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.ScoreAnswer, "score")
    top = len(levels) - 1
    expected = answer.score
    if isinstance(expected, bool) or not isinstance(expected, int | float) or not math.isfinite(expected):
        raise Malformed(f"its expected level is {expected!r}, not a number")
    if not -1e-6 <= expected <= top + 1e-6:
        raise Malformed(f"its expected level {expected!r} is outside the levels 0..{top}")
    weights = _weights(answer.probabilities, range(len(levels)), levels)
    score = min(max(float(expected) / top, 0.0), 1.0)
    p_pass = sum(w for i, w in enumerate(weights.values()) if passes(i / top, PASS_MARK))
    likeliest = max(weights, key=lambda level: weights[level])
    details = {
        "probability": p_pass,
        "answer": likeliest,
        "expected_level": float(expected),
        "probabilities": weights,
        "confidence": answer.confidence,
    }
    return score, details, f"Jev: expected level {expected:.2f} of 0..{top}, most likely {likeliest!r}"


def _from_choice(answer: Any, options: tuple[Option, ...], sdk: Any) -> tuple[float, dict[str, Any], str]:
    _expect(answer, sdk.ChoiceAnswer, "choice")
    labels = [option.label for option in options]
    if answer.choice not in labels:
        raise Malformed(f"it chose {answer.choice!r}, which is not one of {labels!r}")
    weights = _weights(answer.probabilities, labels, labels)
    scores = {option.label: option.score for option in options}
    score = min(max(sum(weights[label] * scores[label] for label in labels), 0.0), 1.0)
    p_pass = sum(weights[label] for label in labels if passes(scores[label], PASS_MARK))
    details = {
        "probability": p_pass,
        "answer": answer.choice,
        "probabilities": weights,
        "confidence": answer.confidence,
    }
    return (
        score,
        details,
        f"Jev: chose {answer.choice!r} (p={weights[answer.choice]:.3f}), expected score {score:.3f}",
    )


# --- errors to reasons -------------------------------------------------------------------------


def describe_error(error: Exception) -> str:
    """A sentence naming what went wrong with the Jev request and what to do."""
    try:
        sdk = load_sdk()
    except ImportError:  # pragma: no cover - an error from the SDK implies it is installed
        return f"the Jev request failed: {type(error).__name__}: {error}"
    name = type(error).__name__
    if isinstance(error, sdk.TypeSafeRateLimitError):
        wait = error.retry_after_ms
        after = f"; TypeSafe asks to wait {wait / 1000:.1f} s" if wait is not None else ""
        return (
            f"Jev rate limit: TypeSafe answered 429 after the SDK's retries ({name}: {error}){after}; "
            "try again later"
        )
    if isinstance(error, sdk.TypeSafeAPITimeoutError):
        return f"the Jev request timed out ({name}: {error}); try again, or raise the client's timeout"
    if isinstance(error, sdk.TypeSafeAuthenticationError):
        return f"TypeSafe rejected the API key ({name}: {error}): check {API_KEY_ENV}"
    if isinstance(error, sdk.TypeSafePermissionDeniedError):
        return f"TypeSafe refused this request for the API key ({name}: {error}): check the key's access"
    if isinstance(error, sdk.TypeSafeAPIResponseValidationError):
        return f"Jev's reply was malformed at {error.field_path!r} ({name}: {error})"
    if isinstance(error, sdk.TypeSafeNotFoundError):
        return f"TypeSafe found no such resource ({name}: {error}): check the Jev model name"
    if isinstance(error, sdk.TypeSafeBadRequestError | sdk.TypeSafeUnprocessableEntityError):
        return f"TypeSafe rejected the Jev request as invalid ({name}: {error})"
    if isinstance(error, sdk.TypeSafeInternalServerError):
        return (
            f"TypeSafe failed with a server error after the SDK's retries ({name}: {error}); try again later"
        )
    if isinstance(error, sdk.TypeSafeAPIConnectionError):
        return f"could not reach TypeSafe ({name}: {error}); check the network or TYPESAFE_BASE_URL"
    if isinstance(error, sdk.TypeSafeError):
        return f"the Jev request failed ({name}: {error})"
    return f"the Jev request failed with an unexpected error ({name}: {error})"


def answer_score(
    answer: Any, kind: QuestionKind, levels: tuple[str, ...], options: tuple[Option, ...], sdk: Any
) -> tuple[float, dict[str, Any], str]:
    """The score, details and reason of one answer to a question of ``kind``; Malformed when unusable."""
    if kind == "noul":
        return _from_noul(answer, sdk)
    if kind == "score":
        return _from_score(answer, levels, sdk)
    return _from_choice(answer, options, sdk)
