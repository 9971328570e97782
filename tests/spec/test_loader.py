import textwrap
from pathlib import Path

import pytest

from machine import DefinitionError, NotFoundError
from machine.spec import MachineLoader

RUBRIC = """\
from machine import define_rubric

rubric = define_rubric({"correct": "Right answer."})
"""

PARENT = """\
from machine import define_evaluator, define_machine, judge

from .rubric import rubric

machine = define_machine(
    name="{name}",
    intent="Answer questions.",
    instructions="{instructions}",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"correct": judge()}}),
)
"""

CHILD = """\
from machine import define_child, define_evaluator, define_rubric, judge

from ..machine import machine as parent

rubric = define_rubric({"short": "Brief."})
machine = define_child(
    parent,
    name="red/strict",
    intent="Answer strictly.",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"short": judge()}),
)
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path.resolve()


def add_machine(machines: Path, name: str, instructions: str = "Be brief.") -> Path:
    write(machines, f"{name}/rubric.py", RUBRIC)
    return write(machines, f"{name}/machine.py", PARENT.format(name=name, instructions=instructions))


@pytest.fixture
def machines(tmp_path: Path) -> Path:
    folder = tmp_path / "machines"
    add_machine(folder, "red")
    write(folder, "red/strict/machine.py", CHILD)
    return folder


def test_names_include_nested_machines(machines: Path) -> None:
    (machines / "__pycache__" / "x").mkdir(parents=True)
    write(machines, ".hidden/machine.py", "")
    write(machines, "Bad/machine.py", "")
    assert MachineLoader(machines).names() == ["red", "red/strict"]


def test_names_of_missing_folder_is_empty(tmp_path: Path) -> None:
    assert MachineLoader(tmp_path / "nope").names() == []


def test_loads_machine_with_sibling_rubric(machines: Path) -> None:
    red = MachineLoader(machines).load("red")
    assert red.name == "red"
    assert list(red.rubric) == ["correct"]
    assert red.source == (machines / "red" / "machine.py").resolve()


def test_child_imports_its_parent(machines: Path) -> None:
    loader = MachineLoader(machines)
    child = loader.load("red/strict")
    assert child.parent is not None
    assert child.parent.name == "red"
    assert list(child.rubric) == ["correct", "short"]
    assert child.parent == loader.load("red")


def test_load_is_cached(machines: Path) -> None:
    loader = MachineLoader(machines)
    assert loader.load("red") is loader.load("red")


def test_two_workspaces_with_same_names_do_not_collide(tmp_path: Path) -> None:
    add_machine(tmp_path / "one" / "machines", "red", instructions="First.")
    add_machine(tmp_path / "two" / "machines", "red", instructions="Second.")
    assert MachineLoader(tmp_path / "one" / "machines").load("red").instructions == "First."
    assert MachineLoader(tmp_path / "two" / "machines").load("red").instructions == "Second."


def test_raise_at_import_names_file_and_line(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    file = write(machines, "bad/machine.py", "import os\n\nraise RuntimeError('boom')\n")
    with pytest.raises(DefinitionError, match="RuntimeError: boom") as info:
        MachineLoader(machines).load("bad")
    assert f"{file}:3" in str(info.value)


def test_error_in_sibling_module_names_that_file(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    rubric = write(machines, "bad/rubric.py", "x = 1\nrubric = 1 / 0\n")
    write(machines, "bad/machine.py", "from .rubric import rubric\n")
    with pytest.raises(DefinitionError, match="ZeroDivisionError") as info:
        MachineLoader(machines).load("bad")
    assert f"{rubric}:2" in str(info.value)


def test_definition_error_names_line_of_the_definition(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    file = write(
        machines,
        "bad/machine.py",
        """\
        from machine import define_evaluator, define_rubric

        rubric = define_rubric({"correct": "Right."})
        evaluator = define_evaluator(rubric, {})
        """,
    )
    with pytest.raises(DefinitionError, match="criterion 'correct' has no grader") as info:
        MachineLoader(machines).load("bad")
    assert f"{file}:4" in str(info.value)


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    file = write(machines, "bad/machine.py", "x = 1\n\ndef f(:\n    pass\n")
    with pytest.raises(DefinitionError, match="SyntaxError") as info:
        MachineLoader(machines).load("bad")
    assert f"{file}:3" in str(info.value)


def test_unknown_machine_lists_known_ones(machines: Path) -> None:
    with pytest.raises(NotFoundError, match="no machine 'blue'; the known machines are: red, red/strict"):
        MachineLoader(machines).load("blue")


def test_a_machine_loads_exactly_when_it_is_listed(tmp_path: Path) -> None:
    """``load`` finds a machine without walking the folder; it must agree with the listing on hidden,
    cached, badly named and linked folders, none of which is a machine."""
    machines = tmp_path / "machines"
    add_machine(machines, "red")
    for hidden in (".draft", "__pycache__", "Bad Name", "red/.old"):
        write(machines, f"{hidden}/machine.py", PARENT.format(name="red", instructions="x"))
    (machines / "linked").symlink_to(machines / "red", target_is_directory=True)
    loader = MachineLoader(machines)
    assert loader.names() == ["red"]
    assert loader.load("red").name == "red"
    bad_name = "machines/Bad Name holds a machine.py, but its name breaks the naming rule"
    for name in (".draft", "__pycache__", "red/.old", "linked", "red/", "", "../machines/red"):
        with pytest.raises(NotFoundError, match=rf"the known machines are: red; {bad_name}"):
            loader.load(name)
    with pytest.raises(DefinitionError, match=rf"^{bad_name} .* rename the folder to machines/bad-name$"):
        loader.load("Bad Name")
    assert list(loader.misnamed()) == ["Bad Name"]


def test_unknown_machine_in_empty_folder_says_where_to_put_one(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"none \(no machines/<name>/machine.py under"):
        MachineLoader(tmp_path / "machines").load("red")


def test_module_without_machine_attribute(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    file = write(machines, "empty/machine.py", "value = 1\n")
    with pytest.raises(DefinitionError, match="must define a module attribute `machine`") as info:
        MachineLoader(machines).load("empty")
    assert str(file) in str(info.value)


def test_machine_attribute_of_wrong_type(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    write(machines, "odd/machine.py", "machine = 'not a machine'\n")
    with pytest.raises(DefinitionError, match="must define a module attribute `machine`"):
        MachineLoader(machines).load("odd")


def test_name_mismatch_between_folder_and_machine(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    write(machines, "green/rubric.py", RUBRIC)
    write(machines, "green/machine.py", PARENT.format(name="blue", instructions="Be brief."))
    with pytest.raises(DefinitionError, match="defines a machine named 'blue'; its folder makes it 'green'"):
        MachineLoader(machines).load("green")


def test_folder_names_with_dash_and_dot_load(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    add_machine(machines, "my-bot.v2")
    add_machine(machines, "2fast")
    loader = MachineLoader(machines)
    assert loader.load("my-bot.v2").name == "my-bot.v2"
    assert loader.load("2fast").name == "2fast"


def test_folders_differing_only_in_dash_and_underscore_load_separately(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    add_machine(machines, "a-b")
    add_machine(machines, "a_b")
    loader = MachineLoader(machines)
    assert loader.load("a-b").name == "a-b"
    assert loader.load("a_b").name == "a_b"


def test_a_machine_imported_by_another_is_the_one_the_loader_returns(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    add_machine(machines, "simulated_user")
    write(machines, "talker/rubric.py", RUBRIC)
    write(
        machines,
        "talker/machine.py",
        PARENT.format(name="talker", instructions="Talk.")
        + "\nfrom ..simulated_user.machine import machine as other\n",
    )
    loader = MachineLoader(machines)
    talker_module = __import__(loader._package_for("talker") + ".machine", fromlist=["other"])
    assert talker_module.other is loader.load("simulated_user")
    assert loader.load("talker").name == "talker"


def test_an_import_of_a_machine_folder_that_is_not_there_says_to_copy_it(tmp_path: Path) -> None:
    """The break: copying machines/dev alone, its `from ..coder.steps import ...` failed with "No module
    named '_machine_workspace_1e652053d0bb.coder'", a name that is nowhere on disk."""
    machines = tmp_path / "machines"
    file = write(machines, "dev/machine.py", "import os\n\nfrom ..coder.steps import steps\n")
    with pytest.raises(DefinitionError) as info:
        MachineLoader(machines).load("dev")
    said = str(info.value)
    assert said == (
        f"{file}:3: it imports from the machine folder 'coder', which {machines.resolve()} does not have: "
        "copy that folder into it as well (a machine that imports another's files needs both)"
    )
    assert "_machine_workspace" not in said
    write(machines, "coder/rubric.py", RUBRIC)  # the folder, but not the file dev reads
    with pytest.raises(DefinitionError) as info:
        MachineLoader(machines).load("dev")
    assert str(info.value) == (
        f"{file}:3: it imports coder/steps from {machines.resolve()}, which has no such file or folder"
    )


def test_a_missing_library_module_is_named_as_python_names_it(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    file = write(machines, "bad/machine.py", "import no_such_library_here\n")
    with pytest.raises(DefinitionError) as info:
        MachineLoader(machines).load("bad")
    assert str(info.value) == f"{file}:1: ModuleNotFoundError: No module named 'no_such_library_here'"
