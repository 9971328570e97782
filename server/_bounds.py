"""How long each string argument of the MCP tools may be. A tool's caller is a model: an argument far past
anything real (a 100,000-character model id) is refused by the SDK's validation, as an ``isError`` result
naming the argument, before the person is asked and before anything is read, spent or written.

No ``from __future__ import annotations`` here: the tools' signatures use these types at run time.
"""

from typing import Annotated

from pydantic import Field

MachineName = Annotated[str, Field(min_length=1, max_length=200, description="a machine's name")]
"""A machine's name (``red``, ``red/noted``): a few ``/``-separated parts."""
ModelId = Annotated[str, Field(min_length=1, max_length=1_000, description="a model id")]
"""A model id: a provider's (``Qwen/Qwen3-8B``), a checkpoint (``tinker://…``) or a local path."""
CasesFile = Annotated[str, Field(min_length=1, max_length=200, description="a file in the machine's folder")]
"""A cases file in the machine's folder (``holdout.json``)."""
HarnessName = Annotated[str, Field(min_length=1, max_length=100, description="a harness's name")]
Slug = Annotated[str, Field(min_length=1, max_length=100, description="the child's last name part")]
TrainerName = Annotated[str, Field(min_length=1, max_length=50, description="a trainer's name")]
RecordId = Annotated[str, Field(min_length=1, max_length=100, description="a training record's id")]
Focus = Annotated[str, Field(min_length=1, max_length=2_000)]
"""What a child specializes in, in a sentence or a few."""
