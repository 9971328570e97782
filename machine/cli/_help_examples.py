"""The examples that end each command's ``--help``: one or two lines a person can copy, on the example
machines (``red``, ``signoff``, ``coder``) and flags that exist. A test runs ``--help`` of every command
and requires its examples."""

from __future__ import annotations

EXAMPLES: dict[str, list[str]] = {
    "list": ["machine list", "machine list --json"],
    "show": ["machine show red", "machine show coder --json"],
    "tree": ["machine tree julia"],
    "run": [
        'machine run red "Roses are red." --eval',
        "machine run chatbot            # talk to it in the terminal",
    ],
    "runs": ["machine runs red", "machine runs red --limit 5 --json"],
    "show-run": [
        "machine show-run 20261203-154001-3f9a2c8e1b7d4a60",
        "machine show-run 20261203-154001-3f9a2c8e1b7d4a60 --json",
    ],
    "eval": ["machine eval red 20261203-154001-3f9a2c8e1b7d4a60"],
    "suite": [
        "machine suite red --trials 3",
        "machine suite red --harness scripted --script machines/red/script.json",
    ],
    "converse": ["machine converse chatbot compound-interest --eval"],
    "compare": ["machine compare red --ref HEAD~1 --trials 3"],
    "agree": [
        "machine agree coder does_task --with jev",
        "machine agree coder does_task --with judge --limit 50",
    ],
    "versions": ["machine versions red", "machine versions red --record --note 'clearer rule'"],
    "propose": ["machine propose red --model Qwen/Qwen3.8-27B --trials 3"],
    "optimize": ["machine optimize red --rounds 2 --budget 5"],
    "train": [
        "machine train signoff --any-model --dry-run     # the plan; spends nothing",
        "machine train signoff --any-model --budget 2",
    ],
    "training": ["machine training list signoff", "machine training show 20261203-160512-8d41e0c2b99a7f13"],
    "specialize": ['machine specialize coder --focus "SQL migrations" --cases 12'],
    "draft-rubric": ["machine draft-rubric signoff"],
    "trust": ["machine trust --list", "machine trust coder/sql"],
    "commit": ["machine commit signoff"],
    "revert": ["machine revert signoff", "machine revert signoff --to v1"],
    "export": [
        "machine export red --out red.jsonl",
        "machine export signoff --out good.jsonl --tags good",
        "machine export red --format inspect --out logs/ --suite 20261130-084912-3f9a",
    ],
    "import": [
        "machine import red logs/2026-01-05T10-00-00_red.eval",
        "machine import red traces.json --format otlp --json",
    ],
    "tagged": ["machine tagged", "machine tagged chatbot --json"],
    "data": ["machine data", "machine data --json"],
    "observe": ["machine observe on", "machine observe"],
    "observed": ["machine observed", "machine observed red --limit 5"],
    "fork": ["machine fork use the existing helper instead of rewriting it"],
    "correction": ["machine correction --id 20261203-154001-3f9a2c8e1b7d4a60 answer in one line"],
    "serve": ["machine serve", "machine serve --print-config claude-desktop"],
    "store": ["machine store copy --from .machine/store.db --to postgresql://machine@db.example:5432/runs"],
    "dashboard": ["machine dashboard", "machine dashboard --port 0"],
    "machinist": ["machine machinist", "machine machinist --continue"],
    "completion": [
        "machine completion bash",
        "machine completion fish",
    ],
}
"""Each command's examples by name (``training``'s also end its subcommands' help)."""


def epilog(name: str) -> str | None:
    """The examples block for command ``name``, as click prints an epilog (``\\b`` keeps its lines)."""
    lines = EXAMPLES.get(name)
    if not lines:
        return None
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
