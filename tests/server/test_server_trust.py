"""Code a model wrote over MCP: after ``specialize``, the child is listed as untrusted and not imported;
``rehearse`` runs it only as a stand-in whose own checks grade in the sandbox, whatever the arguments
claim; ``trust_machine`` trusts it only when the person approves in the host's form (never through the
allowance or a client that cannot ask), and only then does it load like any machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.bwrap import needs_bubblewrap
from helpers.learn_server import CHILD, CHILD_RUBRIC, author_script
from helpers.server_workspace import Folder, make_server
from helpers.trust import imported_from
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from machine import SQLiteStore
from machine.ops import TrustReview
from machine.server._trust_tools import trust_question
from machine.spec import TRUST_FILE, TrustBook, marked

pytestmark = needs_bubblewrap()
LIMIT = 120
SPECIALIZE = {"parent": "red", "focus": "noting red", "slug": "noted", "cases": 4, "budget_usd": 1}
REHEARSE = {"name": "red/noted", "budget_usd": 1}


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answering(approve: bool, asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": approve})

    return callback


async def specialized(folder: Folder, tmp_path: Path, client: Client) -> Path:
    result = await client.call_tool("specialize", SPECIALIZE)
    assert not result.is_error, text(result)
    assert result.structured_content["untrusted"] == [
        "machines/red/noted/machine.py",
        "machines/red/noted/rubric.py",
    ]
    return folder.root / "machines" / "red" / "noted"


@pytest.mark.slow
async def test_an_untrusted_child_is_listed_refused_and_rehearsed_only_in_the_sandbox(
    folder: Folder, tmp_path: Path
) -> None:
    server, _ = make_server(folder, allowance=5, script=author_script(tmp_path / "author.json"))
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            child = await specialized(folder, tmp_path, client)
            listed = await client.call_tool("list_machines", {})
            shown = await client.call_tool("show_machine", {"name": "red/noted"})
            rehearsed = await client.call_tool("rehearse", {**REHEARSE, "trusted": True, "trust": True})
    rows = {m["name"]: m for m in listed.structured_content["machines"]}
    assert (
        rows["red/noted"]["untrusted"] == ["machine.py", "rubric.py"] and rows["red/noted"]["intent"] is None
    )
    assert shown.is_error and "holds code a model wrote that you have not trusted" in text(shown)
    assert "trust_machine tool asks them" in text(shown)
    assert not rehearsed.is_error, text(rehearsed)
    report = rehearsed.structured_content
    assert report["sandboxed"] is True and len(report["run_ids"]) == len(report["cases"]) > 0
    noted = report["criteria"]["noted"]  # the child's own check, graded in the sandbox
    assert noted["runs"] == len(report["run_ids"]) and noted["unscored"] == 0
    store = SQLiteStore(folder.root / ".machine" / "store.db")
    try:
        reasons = {store.get(i).scorecard.criteria["noted"].reason for i in report["run_ids"]}
    finally:
        store.close()
    assert all(reason.endswith("(graded in the sandbox)") for reason in reasons), reasons
    assert imported_from(child) == [], "the child's code was imported outside the sandbox"


async def test_trusting_needs_the_persons_approval_in_the_form(folder: Folder, tmp_path: Path) -> None:
    server, _ = make_server(folder, allowance=5, script=author_script(tmp_path / "author.json"))
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:  # no elicitation: the allowance does not stand in
            child = await specialized(folder, tmp_path, client)
            unasked = await client.call_tool("trust_machine", {"name": "red/noted", "approve": True})
        async with Client(server, elicitation_callback=answering(False, asked)) as client:
            declined = await client.call_tool("trust_machine", {"name": "red/noted"})
        async with Client(server, elicitation_callback=answering(True, asked)) as client:
            trusted = await client.call_tool("trust_machine", {"name": "red/noted"})
            shown = await client.call_tool("show_machine", {"name": "red/noted"})
    assert (
        unasked.is_error
        and "needs the person" in text(unasked)
        and "machine trust red/noted" in text(unasked)
    )
    assert declined.is_error and "declined" in text(declined)
    assert len(asked) == 2 and "machines/red/noted/machine.py" in asked[-1]
    assert "+def says_noted(run):" in asked[-1]  # the person is shown the code
    assert not trusted.is_error, text(trusted)
    assert {f["state"] for f in trusted.structured_content["files"]} == {"trusted"}
    assert not shown.is_error and shown.structured_content["parent"] == "red"
    assert imported_from(child)  # trusted, it is imported like any machine


@pytest.mark.slow
async def test_code_too_long_for_the_form_is_never_trusted_there(folder: Folder, tmp_path: Path) -> None:
    server, _ = make_server(folder, allowance=5, script=author_script(tmp_path / "author.json"))
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            child = await specialized(folder, tmp_path, client)
        rubric = child / "rubric.py"
        rubric.write_text(rubric.read_text() + "# padding\n" * 3_000 + "print('at the end')\n")
        async with Client(server, elicitation_callback=answering(True, asked)) as client:
            refused = await client.call_tool("trust_machine", {"name": "red/noted"})
    assert refused.is_error and "too long to show in the host's form" in text(refused)
    assert "machine trust red/noted" in text(refused) and asked == []  # never shown cut, never asked
    assert imported_from(child) == []


async def test_a_name_that_renders_blank_is_refused_without_asking_and_the_form_shows_escapes(
    folder: Folder,
) -> None:
    """The break: ``os.system`` bound to U+3164 (HANGUL FILLER), which renders blank. The tool says where
    and why, and the person is never asked to approve what they cannot see."""
    child = folder.root / "machines" / "red" / "noted"
    hangul = CHILD.replace(
        "from machine import", 'import os\nLABEL, \u3164 = "noted", os.system\nfrom machine import'
    )
    code = {
        child / "machine.py": marked(hangul, "specialize red", "red/noted"),
        child / "rubric.py": CHILD_RUBRIC,
    }
    TrustBook(folder.root / ".machine" / TRUST_FILE, folder.root / "machines").record(
        "red/noted", code, by="a"
    )
    for path, content in code.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    (child / "instructions.md").write_text("Flag red.\n", encoding="utf-8")
    server, _ = make_server(folder, allowance=5)
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answering(True, asked)) as client:
            refused = await client.call_tool("trust_machine", {"name": "red/noted"})
            listed = await client.call_tool("list_machines", {})
    assert refused.is_error and asked == [], text(refused)
    assert "machine.py cannot be trusted as it is: line 5, column 8 holds \\u3164 (HANGUL FILLER)" in text(
        refused
    )
    rows = {m["name"]: m for m in listed.structured_content["machines"]}
    assert rows["red/noted"]["untrusted"] == ["machine.py", "rubric.py"]
    assert imported_from(child) == []

    review = TrustReview.model_validate(
        {"machine": "red/noted", "files": [
            {"path": "red/noted/machine.py", "machine": "red/noted", "state": "untrusted", "by": "a",
             "diff": '+LABEL, \u3164 = "noted", os.system\n+x = "\u200b caf\u00e9"\n'},
        ]}
    )  # fmt: skip
    question = trust_question(review)
    assert '+LABEL, \\u3164 = "noted", os.system\n+x = "\\u200b caf\u00e9"' in question
    assert "\u3164" not in question and "\u200b" not in question
