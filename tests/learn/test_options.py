"""Each learning operation's options model is the one place its options' defaults, bounds and descriptions
are written: the command's flags, the MCP tool's input schema (from the real server, over the SDK's
client) and the SDK handle and the operation (which take the model or its fields) all show the model's.
A default or a bound changed on one face only fails here."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from annotated_types import Ge, Gt, Le, Lt
from helpers.server_workspace import copy_red, make_server
from mcp import Client
from pydantic.fields import FieldInfo

import machine
from machine import BadInputError
from machine.cli._export import export_command
from machine.cli._optimize import optimize_command
from machine.cli._specialize import draft_rubric_command, specialize_command
from machine.cli._train import train_command
from machine.learn import (
    ExportOptions,
    OptimizeOptions,
    Options,
    SpecializeOptions,
    TrainOptions,
    draft_rubric,
    export,
    optimize,
    specialize,
    train,
)
from machine.learn.rl import RLOptions
from machine.learn.specialize import DraftRubricOptions
from machine.ops import MachineHandle
from machine.spec import DEFAULT_MIN_Z


@dataclass
class Faces:
    """Where one model's options are shown: its command, its tool, its handle method, its operation."""

    model: type[Options]
    command: click.Command
    operation: Callable[..., Any]
    handle: str | None = None
    tool: str | None = None
    command_own: dict[str, str] = field(default_factory=dict)
    """Fields the command takes through options it declares itself (``--model`` of the run options), and
    the name of each option's parameter."""
    tool_own: set[str] = field(default_factory=set)
    """Fields the tool declares itself, with the length bounds of a tool's string arguments."""
    tool_absent: set[str] = field(default_factory=set)
    """Fields a tool's caller does not choose: the model's default holds."""
    nested: set[str] = field(default_factory=set)
    """Fields that are an options model of their own, whose flags are that model's face."""


FACES = [
    Faces(
        OptimizeOptions,
        optimize_command,
        optimize,
        handle="optimize",
        tool="optimize",
        command_own={"model": "model"},
        tool_own={"cases", "holdout", "optimizer_model", "model"},
        tool_absent={"concurrency"},
    ),
    Faces(
        TrainOptions,
        train_command,
        train,
        handle="train",
        tool="train",
        command_own={"effort": "effort"},
        tool_own={"resume"},
        tool_absent={"concurrency", "effort"},
        nested={"rl"},
    ),
    Faces(RLOptions, train_command, train),
    Faces(
        SpecializeOptions,
        specialize_command,
        specialize,
        handle="specialize",
        tool="specialize",
        command_own={"model": "model"},
        tool_own={"focus", "slug", "model", "author_model"},
    ),
    Faces(DraftRubricOptions, draft_rubric_command, draft_rubric, handle="draft_rubric"),
    Faces(ExportOptions, export_command, export, command_own={"cases": "cases_file"}),
]
IDS = [faces.model.__name__ for faces in FACES]
FLAGS = {
    "optimize": "--trials --rounds --candidates --min-z --cases --holdout --optimizer-model --allow-overlap "
    "--concurrency --pass-score --seed --json",
    "train": "--samples --trials --best-of --min-score --epochs --lr --rank --max-length --batch-size "
    "--lora-alpha --lora-dropout --target-modules --any-model --trainer --resume --min-z --concurrency "
    "--pass-score --json",
    "specialize": "--focus --slug --cases --holdout-share --reuse-cases --author-model --retries --timeout "
    "--json",
    "draft-rubric": "--author-model --retries --timeout --json",
    "export": "--out --tree --min-score --best --since --cases --from --per-turn --tags --include-holdout "
    "--json",
}
"""The flags each command had before its options were made from the model: every one still works."""


def model_bounds(info: FieldInfo) -> dict[str, float]:
    kinds = {Ge: "ge", Gt: "gt", Le: "le", Lt: "lt"}
    return {kinds[type(b)]: getattr(b, kinds[type(b)]) for b in info.metadata if type(b) in kinds}


def click_bounds(kind: click.ParamType[Any, Any]) -> dict[str, float]:
    """The bounds of an ``IntRange``/``FloatRange`` as the model spells them (none for another type)."""
    if not isinstance(kind, (click.IntRange, click.FloatRange)):
        return {}
    found: dict[str, float] = {}
    if kind.min is not None:
        found["gt" if kind.min_open else "ge"] = kind.min
    if kind.max is not None:
        found["lt" if kind.max_open else "le"] = kind.max
    return found


@pytest.mark.parametrize("faces", FACES, ids=IDS)
def test_every_flag_has_the_models_default_bound_and_help(faces: Faces) -> None:
    params = {p.name: p for p in faces.command.params}
    for name, info in faces.model.model_fields.items():
        if name in faces.nested:
            continue
        param = params[faces.command_own.get(name, name)]
        assert isinstance(param, click.Option), name
        if info.is_required():
            assert param.required, name
        else:
            assert param.default == info.default, (name, param.default, info.default)
        if name in faces.command_own:
            continue
        assert param.help == info.description, name
        assert click_bounds(param.type) == model_bounds(info), name
        assert param.is_flag == (info.annotation is bool), name


@pytest.mark.parametrize("faces", FACES, ids=IDS)
def test_every_flag_a_command_had_still_works(faces: Faces) -> None:
    assert faces.command.name is not None
    flags = {flag for p in faces.command.params for flag in p.opts}
    assert set(FLAGS[faces.command.name].split()) <= flags


def test_a_model_given_a_bad_value_names_the_option_and_its_bound() -> None:
    with pytest.raises(BadInputError) as caught:
        TrainOptions.of(epochs=0)
    assert str(caught.value) == "epochs must be a whole number from 1 to 20, got 0; pass epochs=N"
    with pytest.raises(BadInputError, match="lora_dropout must be a number of at least 0 and below 1, got 1"):
        TrainOptions.of(lora_dropout=1)
    with pytest.raises(BadInputError, match="lr must be a number above 0, got 0"):
        TrainOptions.of(lr=0)
    with pytest.raises(BadInputError, match=r"optimize takes no option 'trails'; its options are: trials, "):
        OptimizeOptions.of(trails=2)
    assert TrainOptions().settings("base", 0.5).effort == 0.5  # the workspace's, when the call gives none
    assert TrainOptions(effort=0.2, lr=1e-4).settings("base", 0.5).model_dump(
        include={"effort", "learning_rate"}
    ) == {
        "effort": 0.2,
        "learning_rate": 1e-4,
    }
    assert OptimizeOptions().min_z == TrainOptions().min_z == DEFAULT_MIN_Z


@pytest.mark.parametrize("model", [OptimizeOptions, TrainOptions])
def test_a_min_z_below_1_is_refused_unless_a_weak_gate_is_allowed(
    model: type[OptimizeOptions] | type[TrainOptions],
) -> None:
    """The break: ``min_z 0.5`` was taken as given, a gate that passes what chance alone gives about a
    third of the time."""
    with pytest.raises(BadInputError) as caught:
        model.of(min_z=0.5)
    assert str(caught.value) == (
        "min_z 0.5 is below 1: a gate that passes a gain of fewer than 1 standard errors passes what "
        "chance alone gives about one time in 3; pass min_z=2 for the usual gate or pass "
        "allow_weak_gate=True to use the weak gate anyway"
    )
    with pytest.raises(BadInputError, match="min_z 0 is below 1"):
        model(min_z=0)  # made directly, too
    assert model.of(min_z=0.5, allow_weak_gate=True).min_z == 0.5
    assert model.of(min_z=1).min_z == 1.0  # 1 itself is allowed
    with pytest.raises(BadInputError, match="min_z must be a number of at least 0, got -1"):
        model.of(min_z=-1, allow_weak_gate=True)  # never negative


def keyword_defaults(fn: Callable[..., Any]) -> dict[str, Any]:
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()}


@pytest.mark.parametrize("faces", FACES, ids=IDS)
def test_the_handle_and_the_operation_take_the_model_or_its_fields(faces: Faces) -> None:
    """Neither spells an option's default itself: each takes the model, or its fields as keywords."""
    methods = [faces.operation] + ([getattr(MachineHandle, faces.handle)] if faces.handle else [])
    for method in methods:
        parameters = inspect.signature(method).parameters
        assert parameters["options"].default is None, method
        assert parameters["fields"].kind is inspect.Parameter.VAR_KEYWORD, method
        assert not set(parameters) & set(faces.model.model_fields), (method, set(parameters))


async def test_the_handle_checks_its_fields_against_the_model(tmp_path: Path) -> None:
    copy_red(tmp_path)
    red = machine.load("red", workspace=tmp_path, harness="echo")
    with pytest.raises(BadInputError, match="trials must be a whole number from 1 to 20, got 0"):
        await red.optimize(trials=0)
    with pytest.raises(BadInputError, match="train takes no option 'epoch'"):
        await red.train(epoch=2)
    with pytest.raises(BadInputError, match="specialize needs focus"):
        await red.specialize()
    with pytest.raises(BadInputError, match="retries must be a whole number from 0 to 5, got 6"):
        await red.draft_rubric(retries=6)
    assert not (tmp_path / ".machine" / "training").exists()


async def test_the_handle_refuses_a_weak_gate_unless_allowed(tmp_path: Path) -> None:
    copy_red(tmp_path)
    red = machine.load("red", workspace=tmp_path, harness="echo")
    for call in (red.propose(model="other", min_z=0.5), red.optimize(min_z=0.5), red.train(min_z=0.5)):
        with pytest.raises(BadInputError, match=r"min_z 0\.5 is below 1: .* pass allow_weak_gate=True"):
            await call
    assert not (tmp_path / "machines" / "red" / "versions.json").exists()


async def tool_schemas(root: Path) -> dict[str, dict[str, Any]]:
    """Each tool's input schema, as the server built the way ``machine serve`` builds it lists it."""
    server, _ = make_server(copy_red(root))
    with anyio.fail_after(60):
        async with Client(server) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("faces", [f for f in FACES if f.tool], ids=[f.tool or "" for f in FACES if f.tool])
async def test_every_tool_argument_has_the_models_schema(faces: Faces, tmp_path: Path) -> None:
    assert faces.tool is not None
    properties = (await tool_schemas(tmp_path))[faces.tool]["properties"]
    wanted = faces.model.model_json_schema()["properties"]
    for name, info in faces.model.model_fields.items():
        if name in faces.tool_absent:
            assert name not in properties, name
        elif name in faces.tool_own:
            assert properties[name].get("default") == (None if info.is_required() else info.default), name
        else:
            assert properties[name] == wanted[name], name
