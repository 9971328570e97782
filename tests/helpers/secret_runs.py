"""A stored run that read a project's ``.env`` with a tool (an OpenAI-shaped key and a token of no known
shape in it) and repeated the key in its reasoning, for the tests that training data never carries a
secret."""

from __future__ import annotations

from helpers.learn_runs import graded
from machine import Run, Workspace
from machine.runs import Message, ToolCall

KEY = "sk-proj-Xq7vRt2LmN9pWc4ZbY8sHk3JdF6gA1eU"
"""A key shaped like OpenAI's, in the project's .env and in the environment."""
TOKEN = "wG5tY8uI2oP4aS6dF9hJ"
"""A value with no known shape: redacted because MY_SERVICE_TOKEN holds it."""
ENVIRONMENT = {"OPENAI_API_KEY": KEY, "MY_SERVICE_TOKEN": TOKEN}
SECRETS_PER_RUN = 3
"""The key in the tool result and in the reasoning, the token once."""


def read_dotenv(ws: Workspace, case: str, machine: str) -> Run:
    """A good run of ``case`` that read the project's .env with a tool, then answered."""
    call = ToolCall(id="call_0_0", name="read_file", arguments={"path": ".env"})
    trajectory = [
        Message(role="user", content=f"input of {case}"),
        Message(role="assistant", reasoning="I read the settings.", tool_calls=[call]),
        Message(
            role="tool",
            content=f"OPENAI_API_KEY={KEY}\nMY_SERVICE_TOKEN={TOKEN}\nDEBUG=1\n",
            tool_call_id="call_0_0",
            name="read_file",
        ),
        Message(role="assistant", content=case.upper(), reasoning=f"The key is {KEY}; done."),
    ]
    return graded(ws, case, 1.0, machine=machine, trajectory=trajectory, output=case.upper())
