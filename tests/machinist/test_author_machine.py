"""The built-in author machine: it loads in any workspace, says how to write what it is asked for, and its
check says whether a reply carries its work in the blocks that are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from machine import Run, Workspace
from machine.learn.specialize import AUTHOR
from machine.machinist.machines.author.machine import DEFAULT_MODEL, in_blocks


def test_the_built_in_author_loads_in_an_empty_workspace(tmp_path: Path) -> None:
    spec = Workspace(tmp_path).load(AUTHOR)
    assert (spec.name, spec.model) == ("author", DEFAULT_MODEL)
    assert spec.max_steps == 1 and spec.tools == ()
    for needed in ('<file path="machine.py">', "define_child", "<case>", "<topic>", "rubric_draft.py"):
        assert needed in spec.instructions, needed
    assert not (tmp_path / "machines").exists()


@pytest.mark.parametrize(
    ("output", "passed", "said"),
    [
        ('<file path="machine.py">x = 1</file><file path="rubric.py">r</file>', True, "2 file"),
        ("<case>{}</case><topic>t</topic>", True, "1 case, 1 topic"),
        ("I would write a machine.py that...", False, "no <file>"),
        ('<file path="machine.py">never closed', False, "no <file>"),
    ],
)
def test_its_check_counts_the_blocks_a_reply_carries(output: str, passed: bool, said: str) -> None:
    run = Run(machine="author", model="m", harness="echo", input="x", output=output)
    ok, reason = in_blocks(run)
    assert ok is passed and said in reason
