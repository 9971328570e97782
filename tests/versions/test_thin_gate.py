"""The warning a plan gives when the gate cannot pass on so few cases: it agrees with the gate itself (no
warning exactly where a candidate better on every case passes), and names the numbers."""

from __future__ import annotations

import pytest

from machine.measure import stats
from machine.versions import evidence_floor, gate, thin_gate


def all_better(cases: int) -> stats.Paired:
    """Every one of ``cases`` rising from 0 to 1, with a little spread so z is defined."""
    before = {f"c{i}": [0.0] for i in range(cases)}
    after = {f"c{i}": [1.0 if i else 0.9] for i in range(cases)}
    return stats.paired(before, after)


@pytest.mark.parametrize("min_z", [1.0, 1.5, 2.0, 2.5, 3.0])
def test_it_warns_exactly_where_the_gate_cannot_pass_a_candidate_better_on_every_case(min_z: float) -> None:
    for cases in range(2, 14):
        outcome, _ = gate(all_better(cases), min_z, None)
        warning = thin_gate(cases, min_z, where="holdout.json")
        assert (warning is None) == (outcome == "passed"), (cases, min_z, outcome)


def test_it_names_the_file_the_cases_the_floor_and_what_to_add() -> None:
    said = thin_gate(4, 2.0, where="holdout.json")
    assert evidence_floor(2.0) == 6
    assert said is not None
    assert said.startswith("no candidate can pass the gate: holdout.json holds only 4 held-out cases")
    assert "at min_z 2 the gate's exact sign test needs at least 6 cases that change" in said
    assert said.endswith("add at least 2 more held-out cases to holdout.json first")


def test_enough_cases_or_none_at_all_give_no_warning() -> None:
    assert thin_gate(6, 2.0, where="holdout.json") is None
    assert thin_gate(40, 2.0, where="holdout.json") is None
    assert thin_gate(0, 2.0, where="holdout.json") is None  # the operation itself refuses no cases


def test_cases_given_in_code_are_named_as_such() -> None:
    said = thin_gate(1, 2.0, where="(given)", kind="", what="no proposal can be kept")
    assert said is not None and said.startswith("no proposal can be kept: the list given holds only 1 case,")
