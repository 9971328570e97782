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


DOTENV_URL = "postgres://admin:Tr0ub4dor-and-3@db.internal/prod"
"""The workspace's .env holds it as DATABASE_URL: a name that marks no secret."""
PASTED = {
    "url": ("psql postgres://admin:s3cret-word@db.internal/prod", "s3cret-word",
            "postgres://admin:[REDACTED]@db.internal/prod"),
    "dotenv": (f"connecting to {DOTENV_URL}", "Tr0ub4dor-and-3", "[REDACTED:DATABASE_URL]"),
    "word_password": ("db_password=correcthorsebattery", "correcthorsebattery", "db_password=[REDACTED:"),
    "curl": ("curl -u user:pass https://api.example.com", "user:pass", "-u user:[REDACTED]"),
    "mysql": ("mysql -u root -pletmein shop", "letmein", "-p[REDACTED] shop"),
    "basic": ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "Basic [REDACTED]"),
    "token": ("Authorization: Token 9a8b7c", "9a8b7c", "Token [REDACTED]"),
    "pgpassword": ('PGPASSWORD="hunter2" psql -h db', "hunter2", 'PGPASSWORD="[REDACTED:PGPASSWORD]"'),
    "yaml": ("user: bob\npassword: opensesame\n", "opensesame", "password: [REDACTED:password]"),
}  # fmt: skip
"""What people paste, by shape: (the text a tool printed, the secret in it, what is written instead)."""


def pasted(ws: Workspace, case: str, machine: str, text: str) -> Run:
    """A good run of ``case`` whose tool printed ``text``."""
    call = ToolCall(id="call_0_0", name="read_file", arguments={"path": "notes.txt"})
    trajectory = [
        Message(role="user", content=f"input of {case}"),
        Message(role="assistant", reasoning="I read the notes.", tool_calls=[call]),
        Message(role="tool", content=text, tool_call_id="call_0_0", name="read_file"),
        Message(role="assistant", content=case.upper()),
    ]
    return graded(ws, case, 1.0, machine=machine, trajectory=trajectory, output=case.upper())
