"""One spending call under the policy: settled once, its unspent reservation always given back, and a
log line only for a call that finished or spent something."""

from __future__ import annotations

import pytest

from machine import Budget, SpendingPolicy
from machine.ops._spend import Spend


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MACHINE_ALLOW_SPEND_USD", "MACHINE_MAX_SPEND_USD", "MACHINE_SPENDING_LOG"):
        monkeypatch.delenv(name, raising=False)


def allowed(policy: SpendingPolicy, usd: float) -> Spend:
    correlation_id, consent = policy.reserve(usd, tool="rehearse", machine="red")
    return Spend(policy, correlation_id, consent, Budget(usd))


def test_a_call_that_failed_before_spending_gives_its_reservation_back_and_logs_nothing() -> None:
    policy = SpendingPolicy(allowance=5)
    spend = allowed(policy, 4)
    assert policy.allowance_left == 1.0
    spend.settle(finished=False)
    assert policy.allowance_left == 5.0  # the whole reservation is back
    assert policy.log() == []
    spend.settle()  # only the first settle counts
    assert policy.log() == [] and policy.allowance_left == 5.0


def test_a_call_that_spent_is_logged_however_it_ended() -> None:
    policy = SpendingPolicy(allowance=5)
    spend = allowed(policy, 4)
    spend.budget.spent_by_kind["runs"] = 1.25  # what its runs cost before it failed
    spend.settle(finished=False)
    assert policy.allowance_left == pytest.approx(3.75)
    [line] = policy.log()
    assert line["spent_usd"] == 1.25 and line["tool"] == "rehearse"
