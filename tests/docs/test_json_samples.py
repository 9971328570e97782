"""Each ``--json`` sample of docs/cli.md names exactly the fields the command prints: the top-level keys
of the sample (of its first item, for a list) are the keys of the model the command dumps."""

from __future__ import annotations

import json
import re

import pytest
from helpers.doc_blocks import REPO, blocks
from pydantic import BaseModel

from machine.measure import AgreementReport, Comparison, SuiteReport
from machine.ops import MachineInfo, MachineSummary
from machine.runs import Run, RunSummary, Scorecard
from machine.workspace import Conversation

DUMPED: dict[str, type[BaseModel]] = {
    "machine list": MachineSummary,
    "machine show": MachineInfo,
    "machine run": Scorecard,  # the run's own fields are listed in the text before it
    "machine converse": Conversation,
    "machine runs": RunSummary,
    "machine suite": SuiteReport,
    "machine compare": Comparison,
    "machine agree": AgreementReport,
}


def printed_keys(model: type[BaseModel]) -> set[str]:
    """The keys ``model_dump(mode="json", by_alias=True)`` writes: fields and computed fields, less the
    excluded ones."""
    schema = model.model_json_schema(mode="serialization", by_alias=True)
    return set(schema["properties"])


def samples() -> dict[str, object]:
    """Each command section's first JSON block, by the section's heading."""
    found: dict[str, object] = {}
    lines = (REPO / "docs/cli.md").read_text().splitlines()
    for block in blocks("docs/cli.md"):
        if block.lang != "json":
            continue
        heading = [line for line in lines[: block.line] if line.startswith("## ")][-1]
        found.setdefault(heading.removeprefix("## "), json.loads(block.text))
    return found


def test_every_json_sample_is_of_a_known_command() -> None:
    assert set(samples()) == set(DUMPED)


@pytest.mark.parametrize("section", sorted(DUMPED))
def test_the_sample_names_the_fields_printed(section: str) -> None:
    sample = samples()[section]
    first = sample[0] if isinstance(sample, list) else sample
    assert isinstance(first, dict)
    assert set(first) == printed_keys(DUMPED[section])


def test_the_fields_listed_for_run_json_are_the_runs() -> None:
    text = (REPO / "docs/cli.md").read_text()
    listed = text.split("prints the whole run as\none object: ", 1)[1].split(". `version` is", 1)[0]
    assert set(re.findall(r"`(\w+)`", listed)) == printed_keys(Run)


def test_the_suite_samples_case_names_the_fields_printed() -> None:
    """The break: a suite's case said ``id`` where every other JSON says ``case_id``; the sample and the
    model agree on each case's keys, as on the report's."""
    sample = samples()["machine suite"]
    assert isinstance(sample, dict)
    schema = SuiteReport.model_json_schema(mode="serialization", by_alias=True)
    case = set(schema["$defs"]["CaseResult"]["properties"])
    assert "case_id" in case and "id" not in case
    assert set(sample["cases"][0]) == case


def test_a_runs_json_and_a_listed_runs_json_both_say_created_at() -> None:
    """The break: ``runs --json`` had ``created_at`` and ``run --json`` (the run itself) had not."""
    assert "created_at" in printed_keys(Run) and "created_at" in printed_keys(RunSummary)
