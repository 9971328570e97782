"""How long each string argument of the MCP tools may be. A tool's caller is a model: an argument far past
anything real (a 100,000-character model id) is refused by the SDK's validation, as an ``isError`` result
naming the argument, before the person is asked and before anything is read, spent or written.

No ``from __future__ import annotations`` here: the tools' signatures use these types at run time.
"""

from typing import Annotated

from pydantic import Field

MachineName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A machine's name, as list_machines gives it (red, red/noted).",
    ),
]
"""A machine's name (``red``, ``red/noted``): a few ``/``-separated parts."""
ModelId = Annotated[str, Field(min_length=1, max_length=1_000, description="a model id")]
"""A model id: a provider's (``Qwen/Qwen3-8B``), a checkpoint (``tinker://…``) or a local path."""
CasesFile = Annotated[str, Field(min_length=1, max_length=200, description="a file in the machine's folder")]
"""A cases file in the machine's folder (``holdout.json``)."""
HarnessName = Annotated[str, Field(min_length=1, max_length=100, description="a harness's name")]
Slug = Annotated[str, Field(min_length=1, max_length=100, description="the child's last name part")]
TrainerName = Annotated[str, Field(min_length=1, max_length=50, description="a trainer's name")]
RecordId = Annotated[
    str, Field(min_length=1, max_length=100, description="A training record's id (train gives it).")
]
RunId = Annotated[
    str, Field(min_length=1, max_length=100, description="A run's id (recent_runs gives them).")
]
Focus = Annotated[str, Field(min_length=1, max_length=2_000)]
"""What a child specializes in, in a sentence or a few."""

# Each argument as a host's model reads it: what it does and its default, in the tool's input schema.
Limit = Annotated[int, Field(description="How many runs at most, newest first (1 to 500).")]
Trials = Annotated[int, Field(description="How many times each case runs; more trials give a surer mean.")]
RunCases = Annotated[
    CasesFile | None,
    Field(description="The cases file in the machine's folder to run (default cases.json, or holdout.json)."),
]
RunModel = Annotated[
    ModelId | None,
    Field(
        description="The model to run instead of the machine's own (its model.json): a provider's id, a "
        "tinker:// checkpoint or local:NAME."
    ),
]
RunHarness = Annotated[
    HarnessName | None,
    Field(
        description="What runs the model: tinker, openrouter, openai, local, or the free scripted and "
        "echo (default: the server's, else the one the model needs). On a free harness any model runs at "
        "no cost, e.g. a scripted teacher."
    ),
]
Force = Annotated[
    bool,
    Field(description="Make the candidate live even though it did not pass its gate (the person decides)."),
]
ChildSlug = Annotated[
    Slug | None,
    Field(description="The child's last name part (PARENT/SLUG; default: made from the focus)."),
]
ChildModel = Annotated[ModelId | None, Field(description="The child's own model (default: the parent's).")]
AuthorModel = Annotated[
    ModelId | None,
    Field(description="The model the author machine writes the child with (default: the author's own)."),
]
OptimizerModel = Annotated[
    ModelId | None,
    Field(description="The model the optimizer machine writes rewrites with (default: the optimizer's own)."),
]
HoldoutCases = Annotated[
    CasesFile | None,
    Field(description="The held-out cases file a rewrite must also win on (default holdout.json)."),
]
Trainer = Annotated[
    TrainerName | None,
    Field(description="tinker or local (default: local for a local: model, else tinker)."),
]
Resume = Annotated[
    RecordId | None,
    Field(description="A stopped training's record id, to continue it from its last saved state."),
]
ChildFocus = Annotated[Focus, Field(description="What the child specializes in, in a sentence or a few.")]
