"""The dashboard's per-page CSRF tokens: each is new, good only on the server that made it and only for
a day, and a token cut, changed or made up is refused."""

from __future__ import annotations

from machine.dashboard._csrf import TOKEN_LIFE_S, PageTokens


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_is_good_on_its_own_server_for_a_day() -> None:
    clock = Clock()
    pages = PageTokens(clock)
    token = pages.mint()
    assert token != pages.mint() and pages.valid(token)
    assert not PageTokens(clock).valid(token)  # another server, or this one restarted
    clock.now += TOKEN_LIFE_S
    assert pages.valid(token)
    clock.now += 1
    assert not pages.valid(token)


def test_a_changed_or_made_up_token_is_refused() -> None:
    pages = PageTokens()
    made, nonce, mac = pages.mint().split(".")
    flipped = ("0" if mac[0] != "0" else "1") + mac[1:]
    for token in (
        "", ".", "..", f"{made}.{nonce}", f"{made}.{nonce}.{flipped}", f"{int(made) + 1}.{nonce}.{mac}",
        f"{made}.{nonce}x.{mac}", f"x{made}.{nonce}.{mac}", f"{made}.{nonce}.{mac}0", f"-1.{nonce}.{mac}",
    ):  # fmt: skip
        assert not pages.valid(token), token
