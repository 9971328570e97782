"""SpendingPolicy: the per-call cap, the allowance as a running total, consent and the spending log."""

from __future__ import annotations

import json
import math
import re
import stat
import threading
from pathlib import Path

import pytest

from machine import BadInputError, Consent, ConsentRequired, MachineError, SpendingPolicy


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINIST_MAX_BUDGET", raising=False)
    monkeypatch.delenv("MACHINE_ALLOW_SPEND_USD", raising=False)


# -- the cap per call -------------------------------------------------------------------------------------


def test_default_cap_is_ten_dollars_and_no_allowance() -> None:
    policy = SpendingPolicy()
    assert policy.max_per_call == 10.0
    assert policy.allowance is None
    assert policy.allowance_left is None
    assert policy.check_amount(10) == 10.0
    assert policy.check_amount(0) == 0.0
    assert policy.check_amount(2.5) == 2.5
    with pytest.raises(BadInputError, match=r"over the cap of \$10\.00 per call.*MACHINIST_MAX_BUDGET"):
        policy.check_amount(10.01)


def test_cap_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINIST_MAX_BUDGET", "25")
    policy = SpendingPolicy.from_env()
    assert policy.max_per_call == 25.0
    assert policy.check_amount(25) == 25.0
    with pytest.raises(BadInputError, match=r"cap of \$25\.00.*set by MACHINIST_MAX_BUDGET"):
        policy.check_amount(30)


def test_explicit_cap_wins_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINIST_MAX_BUDGET", "25")
    assert SpendingPolicy(max_per_call=3).max_per_call == 3.0


@pytest.mark.parametrize("bad", [-1, -0.01, math.nan, math.inf, -math.inf, "5", "five", None, True, [1]])
def test_check_amount_refuses_what_is_not_an_allowed_number(bad: object) -> None:
    with pytest.raises(BadInputError) as caught:
        SpendingPolicy().check_amount(bad)
    message = str(caught.value)
    assert "budget_usd" in message
    assert "from 0 to 10" in message and "MACHINIST_MAX_BUDGET" in message


@pytest.mark.parametrize("variable", ["MACHINIST_MAX_BUDGET", "MACHINE_ALLOW_SPEND_USD"])
@pytest.mark.parametrize("raw", ["-1", "nan", "inf", "lots", "5usd"])
def test_bad_env_values_are_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, raw: str
) -> None:
    monkeypatch.setenv(variable, raw)
    with pytest.raises(BadInputError, match=variable):
        SpendingPolicy.from_env()


def test_empty_env_values_mean_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINIST_MAX_BUDGET", "")
    monkeypatch.setenv("MACHINE_ALLOW_SPEND_USD", " ")
    policy = SpendingPolicy.from_env()
    assert policy.max_per_call == 10.0
    assert policy.allowance is None


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf])
def test_bad_explicit_values_are_refused(bad: float) -> None:
    with pytest.raises(BadInputError, match="max_per_call"):
        SpendingPolicy(max_per_call=bad)
    with pytest.raises(BadInputError, match="allowance"):
        SpendingPolicy(allowance=bad)


# -- the allowance ----------------------------------------------------------------------------------------


def test_allowance_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_ALLOW_SPEND_USD", "5")
    policy = SpendingPolicy.from_env()
    assert policy.allowance == 5.0
    assert policy.allowance_left == 5.0


def test_reserve_and_settle_keep_a_running_total_across_calls() -> None:
    policy = SpendingPolicy(allowance=5)
    first, consent = policy.reserve(2, tool="rehearse", machine="red")
    assert consent == Consent("allowance", "MACHINE_ALLOW_SPEND_USD=5 ($5.00 left before this call)")
    assert policy.allowance_left == 3.0
    policy.settle(first, spent_usd=2)
    assert policy.allowance_left == 3.0

    second, consent = policy.reserve(1.5, tool="rehearse", machine="red")
    assert consent.detail == "MACHINE_ALLOW_SPEND_USD=5 ($3.00 left before this call)"
    assert policy.allowance_left == pytest.approx(1.5)
    policy.settle(second, spent_usd=1.5)
    assert policy.allowance_left == pytest.approx(1.5)
    assert first != second
    assert re.fullmatch(r"spend-[0-9a-f]{12}", first)


def test_settle_refunds_the_unspent_part() -> None:
    policy = SpendingPolicy(allowance=5)
    cid, _ = policy.reserve(4, tool="rehearse", machine="red")
    assert policy.allowance_left == 1.0
    policy.settle(cid, spent_usd=0.75)
    assert policy.allowance_left == pytest.approx(4.25)


def test_an_overdraft_is_carried_into_the_next_calls() -> None:
    policy = SpendingPolicy(allowance=5)
    cid, _ = policy.reserve(2, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=2.5)  # spent past what it reserved
    assert policy.allowance_left == pytest.approx(2.5)
    cid, _ = policy.reserve(2.5, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=3)
    assert policy.allowance_left == pytest.approx(-0.5)  # not forgotten
    with pytest.raises(ConsentRequired, match=r"overdrawn by \$0\.50"):
        policy.reserve(0.01, tool="rehearse", machine="red")
    cid, _ = policy.reserve(0, tool="commit", machine="red")  # a call that spends nothing still may
    policy.settle(cid, spent_usd=0)
    assert policy.allowance_left == pytest.approx(-0.5)


def test_running_out_refuses_the_next_call_and_says_how_to_allow_more() -> None:
    policy = SpendingPolicy(allowance=5)
    cid, _ = policy.reserve(4, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=4)
    with pytest.raises(ConsentRequired) as caught:
        policy.reserve(2, tool="rehearse", machine="red")
    message = str(caught.value)
    assert "$1.00 is left" in message
    assert "MACHINE_ALLOW_SPEND_USD=5" in message
    assert '"MACHINE_ALLOW_SPEND_USD": "7"' in message
    assert "restart" in message and "elicitation" in message
    assert isinstance(caught.value, MachineError)
    assert policy.allowance_left == 1.0  # a refusal takes nothing
    cid, _ = policy.reserve(1, tool="rehearse", machine="red")  # what is left can still be used
    assert policy.allowance_left == 0.0


def test_no_allowance_refuses_with_how_to_allow() -> None:
    policy = SpendingPolicy()
    with pytest.raises(ConsentRequired) as caught:
        policy.reserve(1, tool="rehearse", machine="red")
    message = str(caught.value)
    assert "rehearse" in message and "'red'" in message
    assert '"MACHINE_ALLOW_SPEND_USD": "5"' in message
    assert '"env" of the machine server' in message
    assert "restart" in message and "elicitation" in message
    assert policy.log() == []


def test_reserve_checks_the_amount_first() -> None:
    policy = SpendingPolicy(allowance=100)
    with pytest.raises(BadInputError, match="MACHINIST_MAX_BUDGET"):
        policy.reserve(11, tool="rehearse", machine="red")
    with pytest.raises(BadInputError):
        policy.reserve(-1, tool="rehearse", machine="red")
    assert policy.allowance_left == 100.0


def test_settle_refuses_unknown_or_repeated_ids_and_bad_amounts() -> None:
    policy = SpendingPolicy(allowance=5)
    with pytest.raises(BadInputError, match="spend-000000000000"):
        policy.settle("spend-000000000000", spent_usd=0)
    cid, _ = policy.reserve(1, tool="rehearse", machine="red")
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(BadInputError, match="spent_usd"):
            policy.settle(cid, spent_usd=bad)
    policy.settle(cid, spent_usd=0.5)  # still open after the refused attempts
    with pytest.raises(BadInputError, match="already settled"):
        policy.settle(cid, spent_usd=0.5)
    assert policy.allowance_left == 4.5


# -- consent given another way ----------------------------------------------------------------------------


def test_consented_does_not_touch_the_allowance() -> None:
    policy = SpendingPolicy(allowance=2)
    cid, consent = policy.consented("elicitation", "accepted in the host's form")
    assert consent == Consent("elicitation", "accepted in the host's form")
    assert re.fullmatch(r"spend-[0-9a-f]{12}", cid)
    policy.settle(cid, spent_usd=1.25)
    assert policy.allowance_left == 2.0
    cid, consent = policy.consented(
        "command", "machine rehearse red --budget 3", budget_usd=3, tool="rehearse"
    )
    policy.settle(cid, spent_usd=3)
    [first, second] = policy.log()
    assert first["consent"] == {"how": "elicitation", "detail": "accepted in the host's form"}
    assert first["spent_usd"] == 1.25 and first["tool"] is None and first["budget_usd"] is None
    assert second["consent"] == {"how": "command", "detail": "machine rehearse red --budget 3"}
    assert second["budget_usd"] == 3.0 and second["tool"] == "rehearse"


def test_consented_works_without_an_allowance_and_refuses_other_hows() -> None:
    policy = SpendingPolicy()
    cid, _ = policy.consented("command", "typed by the person")
    policy.settle(cid, spent_usd=0)
    with pytest.raises(BadInputError, match="reserve"):
        policy.consented("allowance", "forged")  # type: ignore[arg-type]
    with pytest.raises(BadInputError, match="MACHINIST_MAX_BUDGET"):
        policy.consented("command", "x", budget_usd=50)


def test_consented_uncapped_records_a_budget_over_the_cap_but_still_checks_it() -> None:
    policy = SpendingPolicy(max_per_call=10)
    cid, _ = policy.consented("command", "machine suite red --budget 50", budget_usd=50, capped=False)
    policy.settle(cid, spent_usd=12.5)
    [entry] = policy.log()
    assert entry["budget_usd"] == 50.0 and entry["spent_usd"] == 12.5
    for bad in (-1, math.nan, math.inf, "5", True):
        with pytest.raises(BadInputError, match="budget_usd"):
            policy.consented("command", "x", budget_usd=bad, capped=False)  # type: ignore[arg-type]


# -- the log ----------------------------------------------------------------------------------------------


def test_log_lines_hold_the_fields_and_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "tok-" + "f" * 64
    monkeypatch.setenv("MACHINE_SERVER_TOKEN", secret)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-key")
    log_path = tmp_path / "state" / "logs" / "spending.jsonl"
    policy = SpendingPolicy(allowance=5, log_path=log_path)
    cid, _ = policy.reserve(2, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=0.5)
    cid2, _ = policy.consented("elicitation", "accepted", budget_usd=1, tool="rehearse", machine="red")
    policy.settle(cid2, spent_usd=1)

    text = log_path.read_text()
    assert secret not in text and "sk-secret-key" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert set(first) == {"at", "correlation_id", "tool", "machine", "budget_usd", "spent_usd", "consent"}
    assert first["correlation_id"] == cid
    assert (first["tool"], first["machine"], first["budget_usd"], first["spent_usd"]) == (
        "rehearse",
        "red",
        2.0,
        0.5,
    )
    assert first["consent"] == {
        "how": "allowance",
        "detail": "MACHINE_ALLOW_SPEND_USD=5 ($5.00 left before this call)",
    }
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$", first["at"])  # as every dump writes it
    assert lines[1]["correlation_id"] == cid2 and lines[1]["consent"]["how"] == "elicitation"
    assert policy.log() == lines

    assert stat.S_IMODE(log_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log_path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log_path.parent.parent.stat().st_mode) == 0o700


def test_log_appends_and_tightens_an_existing_file(tmp_path: Path) -> None:
    log_path = tmp_path / "spending.jsonl"
    log_path.write_text('{"earlier": true}\n')
    log_path.chmod(0o644)
    policy = SpendingPolicy(allowance=1, log_path=log_path)
    cid, _ = policy.reserve(1, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=1)
    lines = log_path.read_text().splitlines()
    assert lines[0] == '{"earlier": true}' and json.loads(lines[1])["correlation_id"] == cid
    assert stat.S_IMODE(log_path.stat().st_mode) == 0o600
    assert policy.log()[0]["correlation_id"] == cid  # only what this process recorded


def test_log_returns_copies() -> None:
    policy = SpendingPolicy(allowance=1)
    cid, _ = policy.reserve(1, tool="rehearse", machine="red")
    policy.settle(cid, spent_usd=1)
    policy.log()[0]["spent_usd"] = 99
    assert policy.log()[0]["spent_usd"] == 1.0


def test_unwritable_log_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    policy = SpendingPolicy(allowance=1, log_path=blocker / "spending.jsonl")
    cid, _ = policy.reserve(1, tool="rehearse", machine="red")
    with pytest.raises(BadInputError, match="spending log"):
        policy.settle(cid, spent_usd=0.25)
    assert policy.allowance_left == 0.75  # the accounting still happened
    assert len(policy.log()) == 1


# -- concurrency ------------------------------------------------------------------------------------------


def test_concurrent_reservations_never_overdraw(tmp_path: Path) -> None:
    policy = SpendingPolicy(allowance=10, log_path=tmp_path / "spending.jsonl")
    granted: list[str] = []
    refused: list[int] = []
    start = threading.Barrier(16)
    guard = threading.Lock()

    def worker() -> None:
        start.wait()
        for _ in range(20):
            try:
                cid, _ = policy.reserve(0.25, tool="rehearse", machine="red")
            except ConsentRequired:
                with guard:
                    refused.append(1)
                continue
            left = policy.allowance_left
            assert left is not None and left >= 0
            with guard:
                granted.append(cid)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(granted) == 40  # $10 / $0.25, exactly
    assert len(set(granted)) == 40
    assert len(refused) == 16 * 20 - 40
    assert policy.allowance_left == 0.0

    settlers = [
        threading.Thread(target=policy.settle, args=(cid,), kwargs={"spent_usd": 0.125}) for cid in granted
    ]
    for thread in settlers:
        thread.start()
    for thread in settlers:
        thread.join()
    assert policy.allowance_left == pytest.approx(5.0)
    lines = (tmp_path / "spending.jsonl").read_text().splitlines()
    assert len(lines) == 40
    assert {json.loads(line)["correlation_id"] for line in lines} == set(granted)
