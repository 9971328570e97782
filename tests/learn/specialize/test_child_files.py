"""Reading a child's files out of an author's reply: only the child's own files, by bare name, up to a
size; every other block refused with a sentence that says which path, why, and what is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from machine.learn.specialize._files import CHILD_FILES, MAX_FILE_BYTES, read_files, write_child

REPLY = """\
Here is the child. It adds one check.

<file path="machine.py">
from ..machine import machine as parent
</file>

<file path='rubric.py'>
rubric = 1
</file>
<file path="instructions.md">
Show your steps.

</file>
That is all.
"""


def test_a_reply_gives_each_file_with_its_first_and_last_newline_trimmed() -> None:
    read = read_files(REPLY)
    assert read.files == {
        "machine.py": "from ..machine import machine as parent",
        "rubric.py": "rubric = 1",
        "instructions.md": "Show your steps.\n",
    }
    assert read.refused == [] and read.missing == [] and read.ok
    assert read.explanation.startswith("Here is the child. It adds one check.")
    assert read.explanation.endswith("That is all.")
    assert "<file" not in read.explanation and "parent" not in read.explanation


def test_the_last_block_of_a_path_wins_and_a_wrapping_code_fence_is_dropped() -> None:
    text = (
        '<file path="machine.py">\nfirst = 1\n</file>\n'
        '<file path="machine.py">\n```python\nsecond = 2\n```\n</file>\n'
        '<file path="rubric.py">\nr = 1\n</file>'
    )
    assert read_files(text).files["machine.py"] == "second = 2"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../x.py", 'climbs out of the child\'s folder with ".."'),
        ("/etc/x", "is absolute"),
        ("sub/x.py", "inside a folder"),
        ("other.py", "not one of the files that may be written"),
        ("model.json", "not one of the files that may be written"),
        ("C:machine.py", "names a drive"),
        ("..\\machine.py", "backslash"),
        ("", "empty"),
    ],
)
def test_a_path_outside_the_childs_own_files_is_refused_with_a_sentence(path: str, why: str) -> None:
    read = read_files(f'<file path="{path}">\nimport os\n</file>\n<file path="rubric.py">\nr = 1\n</file>')
    assert list(read.files) == ["rubric.py"]
    [sentence] = read.refused
    assert repr(path) in sentence and why in sentence
    assert all(name in sentence for name in CHILD_FILES)
    assert not read.ok and sentence in read.problems


def test_a_file_over_the_size_limit_is_refused() -> None:
    big = "x" * (MAX_FILE_BYTES + 1)
    read = read_files(f'<file path="machine.py">\n{big}\n</file><file path="rubric.py">r</file>')
    assert "machine.py" not in read.files and read.missing == ["machine.py"]
    assert f"{MAX_FILE_BYTES + 1:,} bytes" in read.refused[0]


def test_machine_py_and_rubric_py_are_required_and_instructions_are_not() -> None:
    read = read_files('<file path="instructions.md">\nBe brief.\n</file>')
    assert read.missing == ["machine.py", "rubric.py"]
    assert any("no machine.py was written" in p for p in read.problems)
    assert read_files('<file path="machine.py">m</file><file path="rubric.py">r</file>').missing == []


def test_a_reply_with_no_blocks_is_all_explanation() -> None:
    read = read_files("I cannot write this child.")
    assert read.files == {} and read.explanation == "I cannot write this child."
    assert read.missing == ["machine.py", "rubric.py"]


def test_writing_a_child_writes_its_files_and_touches_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "red" / "kind"
    (folder / "deeper").mkdir(parents=True)
    (folder / "cases.json").write_text('[{"id": "a", "input": "x"}]')
    (folder / "versions.json").write_text("{}")
    (folder / "deeper" / "machine.py").write_text("grandchild = 1\n")
    (folder / "machine.py").write_text("old = 1\n")
    write_child(folder, {"machine.py": "m = 1", "rubric.py": "r = 1\n"}, model="org/new")
    assert sorted(p.name for p in folder.iterdir()) == [
        "cases.json",
        "deeper",
        "machine.py",
        "model.json",
        "rubric.py",
        "versions.json",
    ]
    assert (folder / "machine.py").read_text() == "m = 1\n"
    assert (folder / "cases.json").read_text() == '[{"id": "a", "input": "x"}]'
    assert (folder / "deeper" / "machine.py").read_text() == "grandchild = 1\n"
    assert json.loads((folder / "model.json").read_text()) == {"model": "org/new"}


def test_writing_a_child_refuses_a_path_outside_its_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="climbs out"):
        write_child(tmp_path / "c", {"../evil.py": "x"})
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    "hiding",
    ["# -*- coding: utf-7 -*-\nx = 1\n", "x = 1  # \x1b[2Kclean\n", "x = '\u202e'\n", "x = 1\ry = 2\n"],
)
def test_python_whose_text_is_not_what_runs_is_refused(hiding: str) -> None:
    read = read_files(f'<file path="rubric.py">\n{hiding}</file>\n<file path="instructions.md">\nok\n</file>')
    assert "rubric.py" not in read.files and "instructions.md" in read.files
    assert read.refused[0].startswith("<file path='rubric.py'> was refused: ")


def test_a_name_that_is_not_ascii_or_a_character_that_renders_blank_is_refused_in_any_file() -> None:
    reply = (
        '<file path="machine.py">\nimport os\nLABEL, \u3164 = "loud", os.system\n</file>\n'
        '<file path="rubric.py">\nr = "caf\u00e9 \u65e5\u672c"  # visible text is fine: \u00e9\n</file>\n'
        '<file path="instructions.md">\nAnswer loudly.\U000e0049\U000e0067\U000e006e\n</file>'
    )  # the tag characters spell, unseen, "Ign(ore ...)"
    read = read_files(reply)
    assert list(read.files) == ["rubric.py"]
    code, text = read.refused
    assert code.startswith(
        "<file path='machine.py'> was refused: line 2, column 8 holds \\u3164 (HANGUL FILLER)"
    )
    assert "write every name in ASCII" in code
    assert text.startswith(
        "<file path='instructions.md'> was refused: line 1, column 15 holds \\U000e0049 "
        "(TAG LATIN CAPITAL LETTER I)"
    )
    assert read_files('<file path="instructions.md">\nR\u00e9ponds fort.\n</file>').refused == []
