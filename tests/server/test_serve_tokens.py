"""``machine serve --http``'s bearer token: a chosen token shorter than the minimum is refused, one at the
minimum is taken (surrounding spaces dropped), none makes a fresh one announced once; the verifier accepts
exactly its token and no near miss of it."""

from __future__ import annotations

import pytest

from machine.clients.listening import MIN_CHOSEN_TOKEN as MIN_TOKEN_CHARS
from machine.errors import BadInputError
from machine.server.serve import (
    SCOPE,
    TOKEN_ENV,
    StaticTokenVerifier,
    http_auth,
    token_from_env,
)

TOKEN = "Zq9-_" * 8  # 40 characters, both cases, digits and the URL-safe symbols


def _announced(monkeypatch: pytest.MonkeyPatch, value: str | None) -> tuple[str, list[str]]:
    if value is None:
        monkeypatch.delenv(TOKEN_ENV, raising=False)
    else:
        monkeypatch.setenv(TOKEN_ENV, value)
    said: list[str] = []
    return token_from_env(said.append), said


@pytest.mark.parametrize("length", [1, 8, MIN_TOKEN_CHARS - 1])
def test_a_chosen_token_below_the_minimum_is_refused_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    chosen = "Q" * length
    with pytest.raises(BadInputError) as refused:
        _announced(monkeypatch, f"  {chosen}  ")
    message = str(refused.value)
    assert f"{TOKEN_ENV} is too short" in message and f"({length} characters)" in message
    assert f"at least {MIN_TOKEN_CHARS}" in message
    assert chosen not in message.replace(f"{TOKEN_ENV}", "")


def test_a_chosen_token_at_the_minimum_is_taken_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = "m" * MIN_TOKEN_CHARS
    assert _announced(monkeypatch, chosen) == (chosen, [])
    assert _announced(monkeypatch, f"\t{chosen}\n") == (chosen, [])  # the spaces around are not the token


@pytest.mark.parametrize("value", [None, "", "   "])
def test_no_chosen_token_makes_a_fresh_one_announced_once(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    token, said = _announced(monkeypatch, value)
    assert len(token) >= 43 and len(said) == 1
    assert token in said[0] and TOKEN_ENV in said[0] and "Authorization: Bearer <token>" in said[0]
    again, _ = _announced(monkeypatch, value)
    assert again != token


async def test_the_verifier_accepts_exactly_its_token() -> None:
    verifier, settings = http_auth(TOKEN, "127.0.0.1", 0)
    assert isinstance(verifier, StaticTokenVerifier)
    assert settings.required_scopes == [SCOPE]
    granted = await verifier.verify_token(TOKEN)
    assert granted is not None and granted.scopes == [SCOPE]
    # what the SDK keeps of the grant (sessions are bound to its client id) is a label, never the secret
    assert (granted.token, granted.client_id) == ("machine-serve", "machine-serve-user")
    middle = len(TOKEN) // 2
    misses = [
        "",
        TOKEN[:-1],
        TOKEN[:middle],
        TOKEN[1:],
        TOKEN + "x",
        "x" + TOKEN,
        TOKEN + TOKEN,
        "A" + TOKEN[1:],
        TOKEN[:middle] + "A" + TOKEN[middle + 1 :],
        TOKEN[:-1] + "A",
        TOKEN.upper(),
        TOKEN.lower(),
        TOKEN.swapcase(),
        f" {TOKEN}",
        f"Bearer {TOKEN}",
    ]
    for miss in misses:
        assert await verifier.verify_token(miss) is None, miss
    assert TOKEN not in repr(verifier)
