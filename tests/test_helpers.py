"""The shared test helpers read the environment as CI sets it."""

from __future__ import annotations

import pytest
from helpers.env import on_ci


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        (" TRUE\n", True),
        ("", False),
        ("false", False),
        ("1", False),
        (None, False),
    ],
)
def test_on_ci_reads_ci_true_in_any_case_and_spacing(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert on_ci() is expected
