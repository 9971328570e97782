"""What the chat-completions tests share: the fake endpoint on 127.0.0.1, one per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake
