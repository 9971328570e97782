"""``machine trust``: code a model wrote is refused by every command until the person has read and trusted
it, and again after any change; files no model wrote are the person's own and need no trust. Driven through
the installed console script in real subprocesses, so each command imports the workspace afresh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli_workspace import Command, WorkspaceFolder

from machine.spec import TRUST_FILE

MARKER = "imported.txt"
"""Written beside the workspace by the model-written child when it is imported."""


def model_writes_child(ws: WorkspaceFolder, *, mark: bool = False) -> Path:
    """What specialize does: greet/shy's code recorded as written by a model, then written."""
    marker = ws.root / MARKER
    files = {
        "machine.py": f"""\
from pathlib import Path

from machine import check, define_child, define_evaluator

from ..machine import machine as parent
from .rubric import rubric

Path({str(marker)!r}).write_text("imported")

machine = define_child(
    parent,
    name="greet/shy",
    intent="Greet the person quietly.",
    instructions="Use small letters only.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"quiet": check("lower", lambda run: run.output.islower())}}),
)
""",
        "rubric.py": """\
from machine import define_rubric

rubric = define_rubric({"quiet": "The reply is in small letters."})
""",
    }
    ws.write_as_model("greet/shy", files, by="specialize greet (author test/model)", mark=mark)
    ws.write_json("machines/greet/shy/cases.json", [{"id": "ann", "input": "greet ann"}])
    return marker


@pytest.mark.slow
def test_an_untrusted_child_is_refused_until_trusted_and_again_after_a_one_byte_change(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    marker = model_writes_child(ws)
    suite = ("suite", "greet/shy", "--harness", "echo", "--workspace", ws.root)

    listed = machine_cmd("list", "--json", "--workspace", ws.root)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["greet/shy"]["untrusted"] == ["machine.py", "rubric.py"]
    assert rows["greet"]["untrusted"] == [] and rows["greet"]["intent"]  # the person's own machine loads
    refused = machine_cmd(*suite)
    assert refused.returncode == 2
    assert "machine 'greet/shy' holds code a model wrote that you have not trusted" in refused.stderr
    assert "`machine trust greet/shy`" in refused.stderr
    assert not marker.exists(), "the model's code was imported before it was trusted"

    unasked = machine_cmd("trust", "greet/shy", "--workspace", ws.root)  # no terminal to ask on
    assert unasked.returncode == 2 and "pass --yes" in unasked.stderr
    assert "+Path(" in unasked.stdout and "machines/greet/shy/machine.py" in unasked.stdout
    assert "against the parent's file" in unasked.stdout
    assert machine_cmd(*suite).returncode == 2

    trusted = machine_cmd("trust", "greet/shy", "--yes", "--workspace", ws.root)
    assert trusted.returncode == 0, trusted.stderr
    assert "trusted 2 file(s) of greet/shy" in trusted.stdout
    ran = machine_cmd(*suite)
    assert ran.returncode == 0, ran.stderr
    assert marker.exists()
    marker.unlink()

    rubric = ws.machines / "greet" / "shy" / "rubric.py"
    rubric.write_bytes(rubric.read_bytes().replace(b"small", b"smalL"))
    again = machine_cmd(*suite)
    assert again.returncode == 2 and "rubric.py (changed since it was trusted)" in again.stderr
    assert not marker.exists()
    waiting = machine_cmd("trust", "--list", "--json", "--workspace", ws.root)
    assert [(f["path"], f["state"]) for f in json.loads(waiting.stdout)] == [
        ("greet/shy/rubric.py", "changed")
    ]
    review = machine_cmd("trust", "greet/shy", "--json", "--workspace", ws.root)
    files = {f["path"]: f for f in json.loads(review.stdout)["files"]}
    changed = files["greet/shy/rubric.py"]
    assert (
        changed["against"] == "trusted"
        and '-rubric = define_rubric({"quiet": "The reply is in small' in changed["diff"]
    )
    assert files["greet/shy/machine.py"]["state"] == "trusted"
    assert machine_cmd(*suite).returncode == 2  # --json alone trusts nothing


def test_a_file_no_model_wrote_needs_no_trust(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    shown = machine_cmd("trust", "greet/loud", "--workspace", ws.root)
    assert shown.returncode == 2 and "no model wrote any file of machine 'greet/loud'" in shown.stderr
    assert machine_cmd("trust", "--list", "--workspace", ws.root).stdout.strip() == (
        "no model-written file is waiting for trust"
    )


def test_a_machine_of_the_persons_own_cannot_import_untrusted_model_code(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    marker = model_writes_child(ws)
    ws.write(
        "machines/borrow/machine.py",
        """\
from machine import check, define_evaluator, define_machine, define_rubric

from ..greet.shy.rubric import rubric as borrowed

rubric = define_rubric({"nonempty": "The reply is not empty."})
machine = define_machine(
    name="borrow", intent="Echo.", instructions="Echo.", model="echo", rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
)
""",
    )
    shown = machine_cmd("show", "borrow", "--workspace", ws.root)
    assert shown.returncode == 2 and "machine 'greet/shy' holds code a model wrote" in shown.stderr
    assert "rubric.py" in shown.stderr and not marker.exists()


def test_the_marking_line_keeps_a_childs_code_untrusted_when_the_record_is_lost(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    marker = model_writes_child(ws, mark=True)
    assert (ws.root / ".machine" / ".gitignore").read_text() == "*\n"  # the record stays out of git
    suite = ("suite", "greet/shy", "--harness", "echo", "--workspace", ws.root)
    assert machine_cmd("trust", "greet/shy", "--yes", "--workspace", ws.root).returncode == 0
    assert machine_cmd(*suite).returncode == 0 and marker.exists()
    marker.unlink()
    (ws.root / ".machine" / TRUST_FILE).unlink()  # lost, deleted, or rolled back by git
    refused = machine_cmd(*suite)
    assert refused.returncode == 2 and "holds code a model wrote" in refused.stderr
    assert "written by specialize greet (author test/model)" in refused.stderr
    assert not marker.exists()
    shutil.copytree(ws.machines / "greet" / "shy", ws.machines / "greet" / "copy")  # copied: still a model's
    listed = machine_cmd("trust", "--list", "--json", "--workspace", ws.root)
    assert {f["path"] for f in json.loads(listed.stdout)} == {
        "greet/copy/machine.py",
        "greet/copy/rubric.py",
        "greet/shy/machine.py",
        "greet/shy/rubric.py",
    }


@pytest.mark.parametrize(
    ("hiding", "why"),
    [
        ("# -*- coding: utf-7 -*-\n# +AAo-print(+ACI-hidden+ACI-)\n", "declares the source encoding 'utf-7'"),
        (
            "x = 1  #\x1b[2K\x1b[G# a harmless comment\n",
            "line 1, column 9 holds \\u001b (a control character)",
        ),
        ("access = 'user' # \u202e } \u2066if admin:\u2069 \u2066\n", "\\u202e (RIGHT-TO-LEFT OVERRIDE)"),
    ],
    ids=["utf-7", "terminal-escape", "bidi-override"],
)
def test_code_whose_text_is_not_what_python_runs_cannot_be_trusted(
    ws: WorkspaceFolder, machine_cmd: Command, hiding: str, why: str
) -> None:
    marker = model_writes_child(ws, mark=True)
    machine_py = ws.machines / "greet" / "shy" / "machine.py"
    machine_py.write_text(hiding + machine_py.read_text(), encoding="utf-8")
    refused = machine_cmd("trust", "greet/shy", "--yes", "--workspace", ws.root)
    assert refused.returncode == 2, refused.stdout
    assert "cannot be trusted as it is" in refused.stderr and why in refused.stderr
    assert machine_cmd("suite", "greet/shy", "--harness", "echo", "--workspace", ws.root).returncode == 2
    assert not marker.exists()


def test_a_name_that_renders_blank_is_shown_as_an_escape_and_never_trusted_or_run(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    """The break: the author bound ``os.system`` to U+3164 (HANGUL FILLER, a letter that renders blank)
    and called it from the check; trusted with --yes, it ran on the host while grading."""
    marker = ws.root / "ran-on-the-host"
    machine_py = f"""\
import os

from machine import check, define_child, define_evaluator

from ..machine import machine as parent
from .rubric import rubric

LABEL, \u3164 = "quiet", os.system


def quiet(run):
    \u3164("touch {marker}")
    return run.output.islower(), LABEL


machine = define_child(
    parent,
    name="greet/shy",
    intent="Greet the person quietly.",
    instructions="Use small letters only.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"quiet": check("lower", quiet)}}),
)
"""
    rubric_py = 'from machine import define_rubric\n\nrubric = define_rubric({"quiet": "Small letters."})\n'
    files = {"machine.py": machine_py, "rubric.py": rubric_py}
    ws.write_as_model("greet/shy", files, by="specialize greet (author test/model)", mark=True)
    ws.write_json("machines/greet/shy/cases.json", [{"id": "ann", "input": "greet ann"}])

    refused = machine_cmd("trust", "greet/shy", "--yes", "--workspace", ws.root)
    assert refused.returncode == 2, refused.stdout
    assert (
        "machines/greet/shy/machine.py cannot be trusted as it is: line 9, column 8 holds \\u3164 "
        "(HANGUL FILLER), which shows as blank space or as nothing, in the name \\u3164" in refused.stderr
    )
    assert "write every name in ASCII" in refused.stderr
    assert '+LABEL, \\u3164 = "quiet", os.system' in refused.stdout  # the review shows it
    assert '+    \\u3164("touch' in refused.stdout
    assert "\u3164" not in refused.stdout + refused.stderr
    listed = machine_cmd("trust", "--list", "--json", "--workspace", ws.root)
    assert {(f["path"], f["state"]) for f in json.loads(listed.stdout)} == {
        ("greet/shy/machine.py", "untrusted"),
        ("greet/shy/rubric.py", "untrusted"),
    }
    suite = machine_cmd("suite", "greet/shy", "--harness", "echo", "--workspace", ws.root)
    assert suite.returncode == 2 and "holds code a model wrote that you have not trusted" in suite.stderr
    assert not marker.exists(), "the model's hidden call ran on the host"
