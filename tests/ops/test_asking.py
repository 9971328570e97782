"""``AskingPolicy``: consent from the person's answer to the program's own question, or from the
allowance they typed; a forced change is always asked; any answer but a yes is a no; a smaller amount
caps the call; what a call may spend is held to the session's budget, and never passed."""

from __future__ import annotations

import pytest

from machine.budget import Budget
from machine.errors import BudgetExceeded, ConsentDeclined, ConsentRequired
from machine.ops import AskingPolicy, Spend
from machine.runs import Answer, Approver, Question

SPEND = Question("Rehearse machine 'red': ... spending at most $0.50.", 0.5)
FORCE = Question("Commit machine 'red' by force: ... although it was refused: ...", None, force=True)


class Person:
    def __init__(self, answer: Answer) -> None:
        self.answer, self.asked = answer, list[Question]()

    async def __call__(self, question: Question) -> Answer:
        self.asked.append(question)
        return self.answer


async def test_a_yes_consents_at_the_terminal_and_a_smaller_amount_caps_the_call() -> None:
    person = Person(Answer(yes=True, said="y 0.2", usd=0.2))
    policy = AskingPolicy(Approver(ask=person))
    correlation_id, consent, allowed = await policy.approve(SPEND, tool="rehearse", machine="red")
    assert person.asked == [SPEND] and allowed == 0.2
    assert consent.how == "terminal" and "'y 0.2'" in consent.detail
    larger = AskingPolicy(Approver(ask=Person(Answer(yes=True, said="y 5", usd=5.0))))
    assert (await larger.approve(SPEND, tool="rehearse", machine="red"))[2] == 0.5  # never more than asked
    policy.settle(correlation_id, spent_usd=0.1)
    [line] = policy.log()
    assert line["budget_usd"] == 0.2 and line["consent"]["how"] == "terminal"  # type: ignore[index]


async def test_a_no_is_declined_and_nobody_to_ask_is_refused() -> None:
    declined = AskingPolicy(Approver(ask=Person(Answer(yes=False, said="no way"))))
    with pytest.raises(ConsentDeclined, match="they answered 'no way'"):
        await declined.approve(SPEND, tool="rehearse", machine="red")
    with pytest.raises(ConsentRequired, match=r"nobody can be asked here .* no allowance was given"):
        await AskingPolicy(Approver()).approve(SPEND, tool="rehearse", machine="red")
    asking = AskingPolicy(Approver(ask=Person(Answer(yes=True, said="y"))))
    with pytest.raises(ConsentRequired, match="could not be put to the person"):
        await asking.approve(Question("", 0.5), tool="rehearse", machine="red")
    assert declined.log() == []


async def test_the_allowance_approves_without_asking_and_never_a_forced_change() -> None:
    person = Person(Answer(yes=False, said="n"))
    policy = AskingPolicy(Approver(allowance_usd=1.0, ask=person, allowance_source="machine run x --allow 1"))
    _, consent, allowed = await policy.approve(SPEND, tool="rehearse", machine="red")
    assert consent.how == "allowance" and "--allow 1 ($1.00 left" in consent.detail and allowed == 0.5
    assert person.asked == [] and policy.allowance_left == 0.5
    with pytest.raises(ConsentDeclined):  # more than is left: the person is asked, and says no
        await policy.approve(Question("...", 0.75), tool="rehearse", machine="red")
    with pytest.raises(ConsentDeclined):  # a forced change is asked about whatever the allowance
        await policy.approve(FORCE, tool="commit", machine="red")
    assert person.asked[-1] is FORCE
    unasked = AskingPolicy(Approver(allowance_usd=5.0))
    with pytest.raises(ConsentRequired, match="overrides a refusal"):
        await unasked.approve(FORCE, tool="commit", machine="red")
    _, gated, _ = await unasked.approve(Question("Commit ...", None), tool="commit", machine="red")
    assert gated.how == "allowance"  # a commit the gate passed


async def test_every_call_spends_from_the_session_too_and_never_past_what_was_approved() -> None:
    session = Budget(0.3)
    policy = AskingPolicy(Approver(ask=Person(Answer(yes=True, said="y"))), within=session)
    assert policy.limit(0.5) == 0.3  # a question never offers more than the session has left
    call = Budget(0.3)
    correlation_id, consent, _ = await policy.approve(SPEND, tool="rehearse", machine="red")
    spend = Spend(policy, correlation_id, consent, call)
    assert call.parent is session and call.hard
    call.spend(0.3)
    assert session.spent == 0.3
    with pytest.raises(BudgetExceeded):
        policy.limit(0.5)
    spend.settle()
    allowance = AskingPolicy(Approver(allowance_usd=2.0), within=session)
    assert allowance.ledger is not None and allowance.ledger.parent is session and allowance.ledger.hard
