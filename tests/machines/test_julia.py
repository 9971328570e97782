"""julia and its children: reading Julia source without Julia, the children's checks, run_julia (which says
clearly when Julia is missing, and mounts only the installation when it is there), and the family's
inheritance and scripted suites under real bubblewrap."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers.env import on_ci

from machine import Message, Run, ToolCall, ToolContext, ToolFailure, Workspace, run_suite
from machine.clients.scripted import ScriptedHarness
from machine.sandboxes import LocalSandbox, bubblewrap

REPO = Path(__file__).resolve().parents[2]
JULIA = REPO / "machines" / "julia"
CHILDREN = ["julia/parametric", "julia/generic", "julia/fast", "julia/inline"]
OWN = {
    "julia/parametric": {"type_parameters": "check"},
    "julia/generic": {"no_concrete_arguments": "check", "shown_on_several_types": "judge"},
    "julia/fast": {"timed": "check", "written_for_speed": "judge"},
    "julia/inline": {"short_or_inline": "check"},
}

ON_CI = on_ci()
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap() is None and not ON_CI,
    reason="bubblewrap (bwrap) is missing or cannot make namespaces here; `make test` installs it",
)


def require_bubblewrap() -> None:
    if bubblewrap() is None:  # reached only under CI=true, where the isolated runs must be tested
        pytest.fail("CI=true and bubblewrap does not work here: run_julia's isolated runs must be tested")


def module_of(ws: Workspace, name: str) -> ModuleType:
    """A module of the julia family as the loader imported it (``source``, ``program``, ``run_julia``)."""
    julia = ws.load("julia")
    package = sys.modules[julia.evaluator.graders["runs"].fn.__module__].__package__  # type: ignore[attr-defined]
    return sys.modules[f"{package}.{name}"]


@pytest.fixture
def source(ws: Workspace) -> ModuleType:
    return module_of(ws, "source")


# --- reading source: comments and literals are not code ---------------------------------------------------


def test_code_only_blanks_comments_and_literal_text(source: ModuleType) -> None:
    text = (
        "# where T @time function f(x::Int) end\n"
        "#= block #= nested where =# still @time =#\n"
        '"""\ndocstring: function f(x::Int)\n"""\n'
        's = "where @time ::Int"\n'
        "c = 'w'; q = '\\''; t = A' * x''\n"
        'r = r"where\\d+"; raw = raw"@time"; cmd = `echo where`\n'
    )
    code = source.code_only(text)
    assert len(code) == len(text)
    assert code.count("\n") == text.count("\n")
    for word in ("where", "@time", "::Int", "function"):
        assert word not in code, word
    assert 's = "' in code and "t = A' * x''" in code  # adjoints stay code


def test_interpolations_are_code_and_may_hold_strings(source: ModuleType) -> None:
    text = 'println("took $(@elapsed f("x # y")) s") # @btime\nz = 1\n'
    code = source.code_only(text)
    assert "@elapsed f(" in code
    assert "x # y" not in code and "@btime" not in code
    assert code.endswith("z = 1\n")  # the string closed where it should


def test_unterminated_literals_do_not_crash(source: ModuleType) -> None:
    for text in ['"open', '"""open', "#= open", "'", "f(x) = x'", "`open"]:
        assert len(source.code_only(text)) == len(text)


# --- function definitions ---------------------------------------------------------------------------------


def test_definitions_in_every_form(source: ModuleType) -> None:
    text = """
@inline function fast(x::Vector{Int}, y::T; tol::Float64=1e-8) where {T<:Number}
    x .+ y
end
function slow(a,
              b::String)::Int
    @inline
    return 1
end
Base.show(io::IO, p::Point) = print(io, "P")
Base.:+(a::Point, b::Point) = a
area(r::AbstractVector{<:Real}, n::Integer=3)::Float64 where T = 1.0
@noinline h(x) = x
map((a::Int, b) -> a + b, xs, ys)
function (p::Point)(x)
    x
end
y = f(x) == 3
f(x)[1] = 2
if g(x) == 1 end
"""
    found = source.definitions(source.code_only(text))
    summary = [(d.form, d.name, d.inline, d.noinline, d.line) for d in found]
    assert summary == [
        ("long", "fast", True, False, 2),
        ("long", "slow", True, False, 5),  # @inline as the first statement of the body
        ("short", "Base.show", False, False, 10),
        ("short", "Base.:+", False, False, 11),
        ("short", "area", False, False, 12),
        ("short", "h", False, True, 13),
        ("anonymous", "", False, False, 14),
        ("long", "(p::Point)", False, False, 15),
    ]
    assert found[1].arguments.split() == ["a,", "b::String"]  # a signature over two lines
    assert found[0].wheres == ("{T<:Number}",)
    assert found[4].wheres == ("T",)


# --- julia/parametric -------------------------------------------------------------------------------------

PARAMETRIC = [
    ("struct Point{T}\n    x::T\nend\n", True),
    ("mutable struct Box{T<:Real}\n    v::T\nend\n", True),
    ("abstract type Shape{N} end\n", True),
    ("total(xs::AbstractVector{T}) where {T<:Number} = sum(xs; init = zero(T))\n", True),
    ("function f(x::T) where T\n    x\nend\n", True),
    ("function f(\n    x::T,\n    y::T,\n) where {T}\n    x + y\nend\n", True),
    ("const V = Vector{T} where T\n", True),
    ("struct Point\n    x::Float64\nend\n", False),
    ("f(x::Vector{Int}) = sum(x)\n", False),  # a parameterized type used, no type parameter declared
    ("# struct Point{T} where T\nf(x) = x\n", False),
    ('msg = "use where T and struct P{T}"\n', False),
    ("#= struct P{T} =# g(x) = x\n", False),
    ("somewhere(x) = x\nnowhere = 1\n", False),
]


@pytest.mark.parametrize(("text", "expected"), PARAMETRIC)
def test_type_parameters(source: ModuleType, text: str, expected: bool) -> None:
    assert bool(source.type_parameters(source.code_only(text))) is expected


# --- julia/generic ----------------------------------------------------------------------------------------

GENERIC = [
    ("f(x) = 2x\n", []),
    ("f(x::Number, y::Real) = x + y\n", []),
    ("f(xs::AbstractVector{<:Real}) = sum(xs)\n", []),
    ("f(xs::AbstractVector{T}) where {T<:Integer} = sum(xs)\n", []),
    ("f(s::AbstractString, n::Integer=1) = s^n\n", []),
    ("f(::Type{Int}, x) = x\n", []),  # dispatch on a type itself
    ("f(x::Nothing) = 0\nf(x::Missing) = 0\n", []),
    ("struct P\n    x::Float64\nend\narea(p::P) = p.x^2\n", []),  # fields and the program's own types
    ("f(x)::Float64 = x\n", []),  # a return type is not an argument type
    ("function g(x)\n    y::Int = 3\n    x + y\nend\n", []),  # a local annotation is not an argument
    ("# f(x::Int) = x\nf(x) = x\n", []),
    ('f(x) = "::Int"\n', []),
    ("f(x::Int) = x\n", ["x::Int"]),
    ("f(x::Float64, y) = x\n", ["x::Float64"]),
    ("f(s::String) = s\n", ["s::String"]),
    ("f(v::Vector{Int}) = v\n", ["v::Vector{Int}"]),
    ("f(v::Vector{T}) where T = v\n", ["v::Vector{T}"]),  # a concrete container, whatever T is
    ("f(v::AbstractVector{Float64}) = v\n", ["v::AbstractVector{Float64}"]),
    ("f(d::Dict{String,Int}) = d\n", ["d::Dict{String,Int}"]),
    ("f(x::Union{Int,Float64}) = x\n", ["x::Union{Int,Float64}"]),
    ("f(x::Base.Int64) = x\n", ["x::Base.Int64"]),
    ("f(xs::Int...) = sum(xs)\n", ["xs::Int..."]),
    ("f(x; tol::Float64=1e-8) = x\n", ["tol::Float64=1e-8"]),
    ("f(x::T) where {T<:Float64} = x\n", ["where T<:Float64"]),
    ("function f(a,\n           b::Int)\n    a + b\nend\n", ["b::Int"]),
    ("@inline function f(x::UInt8)::Int\n    x\nend\n", ["x::UInt8"]),
    ("map(x::Int -> x + 1, xs)\n", ["x::Int"]),
    ("sum(((a::Int, b) -> a * b)(2, 3))\n", ["a::Int"]),
]


@pytest.mark.parametrize(("text", "flagged"), GENERIC)
def test_concrete_arguments(source: ModuleType, text: str, flagged: list[str]) -> None:
    found = source.concrete_arguments(source.code_only(text))
    assert [f.argument for f in found] == flagged


# --- julia/fast -------------------------------------------------------------------------------------------

TIMING = [
    ("@time f(10)\n", "@time"),
    ("t = @elapsed f(10)\n", "@elapsed"),
    ("stats = @timed f(10)\n", "@timed"),
    ("@timev f(10)\n", "@timev"),
    ("using BenchmarkTools\n@btime f($x)\n", "@btime"),
    ("@benchmark f(10)\n", "@benchmark"),
    ("t = Base.@elapsed f(10)\n", "Base.@elapsed"),
    ("t0 = time_ns(); f(10); println(time_ns() - t0)\n", "time_ns("),
    ("# @time f(10)\nf(10)\n", None),
    ('println("use @time next time")\n', None),
    ("#= @btime =# f(10)\n", None),
    ("@timeout f(10)\n", None),
    ("my_time_ns() = 0\n", None),
    ("f(10)\n", None),
]


@pytest.mark.parametrize(("text", "first"), TIMING)
def test_timings(source: ModuleType, text: str, first: str | None) -> None:
    found = source.timings(source.code_only(text))
    assert (found[0][0] if found else None) == first


# --- julia/inline (through its check function) ------------------------------------------------------------

INLINE = [
    ("f(x) = x + 1\ng(x) = f(x) * 2\n", True),
    ("@inline function f(x)\n    x + 1\nend\n", True),
    ("Base.@inline function f(x)\n    x + 1\nend\n", True),
    ("function f(x)\n    @inline\n    x + 1\nend\n", True),  # @inline as the body's first statement
    ("@inline f(x) = x\n", True),
    ("f(x) = begin\n    y = x + 1\n    y * 2\nend\n", True),
    ("f(xs) = map(x -> x + 1, xs)\n", True),
    ("f(xs) = foreach(xs) do x\n    println(x)\nend\n", True),
    ("f(x) = x\n# function g(x) ... end\n", True),
    ('f(x) = "function g end"\n', True),
    ("function f(x)\n    x + 1\nend\n", False),
    ("f(x) = x\nfunction g(x)\n    x\nend\n", False),
    ("@noinline f(x) = x\n", False),
    ("@inline f(x) = x\nh = function (x)\n    x\nend\n", False),  # an anonymous function ... end block
    ("function f end\n", False),
    ("x = 1\nprintln(x)\n", False),  # no function at all
    ("map(x -> x + 1, [1, 2])\n", False),
]


def inline_check(ws: Workspace) -> Any:
    ws.load("julia/inline")
    return module_of(ws, "inline.machine").short_or_inline  # the function of the code, behind on_program


@pytest.mark.parametrize(("text", "expected"), INLINE)
def test_short_or_inline(ws: Workspace, source: ModuleType, text: str, expected: bool) -> None:
    ok, reason = inline_check(ws)(source.code_only(text))
    assert ok is expected, reason


def test_inline_reasons_name_the_line(ws: Workspace, source: ModuleType) -> None:
    check = inline_check(ws)
    text = "f(x) = x\n\nfunction g(x)\n    x\nend\n"
    assert check(source.code_only(text)) == (
        False,
        "line 3: function g is a function ... end block without @inline",
    )
    assert check(source.code_only("f(x) = x\n@inline function g(x)\n    x\nend\n")) == (
        True,
        "1 short-form and 1 @inline function definitions, nothing else",
    )


# --- graded runs: the program a run produced --------------------------------------------------------------


def make_run(
    machine: str,
    calls: list[tuple[str, dict[str, Any], str, bool]],
    files: dict[str, str] | None = None,
) -> Run:
    """A run whose model made ``calls`` in order, each answered with (result text, is_error)."""
    trajectory = [Message(role="user", content="Write it in Julia.")]
    for index, (name, arguments, result, is_error) in enumerate(calls):
        call = ToolCall(id=f"c{index}", name=name, arguments=arguments)
        trajectory.append(Message(role="assistant", tool_calls=[call]))
        trajectory.append(
            Message(role="tool", tool_call_id=call.id, name=name, content=result, is_error=is_error)
        )
    trajectory.append(Message(role="assistant", content="Done."))
    case = {"id": "c", "input": "Write it in Julia.", "files": files or {}}
    return Run(
        machine=machine,
        model="echo",
        harness="echo",
        input="Write it in Julia.",
        output="Done.",
        trajectory=trajectory,
        case=case,
    )


OK = "exit code: 0\n--- stdout ---\n5.0\n--- stderr ---\n(empty)"
FAILED = "exit code: 1\n--- stdout ---\n(empty)\n--- stderr ---\nERROR: UndefVarError"
WROTE = "wrote 40 bytes to main.jl (new file)"


def write(path: str, content: str) -> tuple[str, dict[str, Any], str, bool]:
    return ("write_file", {"path": path, "content": content}, WROTE, False)


def run_julia(
    result: str = OK, is_error: bool = False, **arguments: str
) -> tuple[str, dict[str, Any], str, bool]:
    return ("run_julia", arguments or {"path": "main.jl"}, result, is_error)


async def scores(ws: Workspace, run: Run) -> dict[str, tuple[float | None, str]]:
    graded = await ws.grade(run, store=False)
    assert graded.scorecard is not None
    return {name: (c.score, c.reason) for name, c in graded.scorecard.criteria.items()}


@pytest.mark.parametrize(
    ("calls", "score", "reason"),
    [
        ([write("main.jl", "f(x) = x"), run_julia()], 1.0, "run_julia ran main.jl and it exited 0"),
        ([run_julia(code='println("hi")')], 1.0, "run_julia ran a snippet and it exited 0"),
        (
            [write("main.jl", "f("), run_julia(FAILED), run_julia()],
            1.0,
            "run_julia ran main.jl and it exited 0",
        ),
        (
            [write("main.jl", "f("), run_julia(FAILED)],
            0.0,
            "no run_julia call passed; the last one ran main.jl and exited 1",
        ),
        (
            [write("main.jl", "x"), run_julia("Julia is not installed on this machine, so ...", True)],
            0.0,
            "run_julia did not run main.jl: Julia is not installed on this machine, so ...",
        ),
        ([write("main.jl", "x")], 0.0, "never called run_julia"),
        (
            [
                write("main.jl", "x"),
                run_julia("timed out after 120 s: Julia and everything it started were killed"),
            ],
            0.0,
            "no run_julia call passed; the last one ran main.jl and timed out",
        ),
    ],
)
async def test_runs(ws: Workspace, calls: list[Any], score: float, reason: str) -> None:
    assert (await scores(ws, make_run("julia", calls)))["runs"] == (score, reason)


async def test_children_grade_the_program_it_ran_last(ws: Workspace) -> None:
    plain = "f(x) = x\nprintln(f(1))\n"
    parametric = "struct P{T}\n    x::T\nend\nprintln(P(1))\n"
    run = make_run(
        "julia/parametric", [write("main.jl", parametric), run_julia(), write("main.jl", plain), run_julia()]
    )
    assert (await scores(ws, run))["type_parameters"][0] == 0.0
    run = make_run(
        "julia/parametric", [write("main.jl", plain), run_julia(), write("main.jl", parametric), run_julia()]
    )
    assert (await scores(ws, run))["type_parameters"] == (1.0, "main.jl: a parametric struct on line 1")


async def test_the_program_follows_edits_and_the_case_files(ws: Workspace) -> None:
    start = "function f(x)\n    x + 1\nend\nprintln(f(1))\n"
    edit = (
        "edit_file",
        {"path": "main.jl", "old": "function f(x)\n    x + 1\nend", "new": "f(x) = x + 1"},
        "replaced 1 occurrence",
        False,
    )
    failed_edit = (
        "edit_file",
        {"path": "main.jl", "old": "nowhere", "new": "f(x) = x"},
        "old was not found",
        True,
    )
    cases = [
        ([run_julia()], 0.0),  # the case's own file, with its long-form function
        ([edit, run_julia(path="./main.jl")], 1.0),
        ([edit, run_julia(path="/work/main.jl")], 1.0),
        ([failed_edit, run_julia()], 0.0),  # a refused edit changed nothing
    ]
    for calls, expected in cases:
        run = make_run("julia/inline", calls, files={"main.jl": start})
        assert (await scores(ws, run))["short_or_inline"][0] == expected, calls
    # the program is what the LAST run_julia call ran: here the file before the edit
    run = make_run("julia/inline", [run_julia(), edit], files={"main.jl": start})
    assert (await scores(ws, run))["short_or_inline"][0] == 0.0


async def test_inline_code_and_unrun_files(ws: Workspace) -> None:
    run = make_run("julia/fast", [run_julia(code="@time sum(1:10)")])
    assert (await scores(ws, run))["timed"] == (
        1.0,
        "the code given to run_julia: times its work with @time on line 1",
    )
    run = make_run("julia/fast", [write("bench.jl", "f(x) = x\n@elapsed f(1)\n")])  # written, never run
    assert (await scores(ws, run))["timed"] == (1.0, "bench.jl: times its work with @elapsed on line 2")
    run = make_run("julia/fast", [write("notes.txt", "@time")])
    assert (await scores(ws, run))["timed"] == (0.0, "the run wrote and ran no Julia program")


async def test_generic_reasons(ws: Workspace) -> None:
    concrete = "area(r::Float64) = pi * r^2\nprintln(area(2.0))\n"
    run = make_run("julia/generic", [write("main.jl", concrete), run_julia()])
    result = await scores(ws, run)
    assert result["no_concrete_arguments"] == (
        0.0,
        "main.jl: line 1: area declares `r::Float64` (Float64 is concrete)",
    )
    assert result["shown_on_several_types"][0] is None  # judged: UNSCORED without a judge
    generic = "area(r::Real) = pi * r^2\nscaled(xs, k) = k .* xs\n"
    run = make_run("julia/generic", [write("main.jl", generic), run_julia()])
    assert (await scores(ws, run))["no_concrete_arguments"] == (
        1.0,
        "main.jl: 2 function definitions, none with a concrete argument type",
    )
    run = make_run("julia/generic", [write("main.jl", "println(sum(1:10))\n"), run_julia()])
    assert (await scores(ws, run))["no_concrete_arguments"][0] == 0.0


# --- finding Julia, and run_julia without it --------------------------------------------------------------


def fake_installation(root: Path, script: str = 'echo "fake julia $*"\n') -> Path:
    """A folder laid out like a Julia installation whose bin/julia is a shell script."""
    (root / "bin").mkdir(parents=True)
    (root / "share" / "julia").mkdir(parents=True)
    binary = root / "bin" / "julia"
    binary.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return root


def test_find_julia_looks_in_every_usual_place(ws: Workspace, tmp_path: Path) -> None:
    find = module_of(ws, "run_julia").find_julia
    home = tmp_path / "home"
    empty = {"PATH": str(tmp_path / "nothing"), "HOME": str(home)}
    assert find(empty, home) is None

    direct = fake_installation(tmp_path / "julia-1.11.2")
    assert find({**empty, "JULIA_BINDIR": str(direct / "bin")}, home).root == direct
    assert find({**empty, "PATH": f"/nonexistent:{direct / 'bin'}"}, home).root == direct

    # juliaup: the `julia` on PATH is its launcher, not an installation; its config names the default
    juliaup = home / ".julia" / "juliaup"
    old = fake_installation(juliaup / "julia-1.10.4+0.x64.linux.gnu")
    new = fake_installation(juliaup / "julia-1.11.2+0.x64.linux.gnu")
    launcher = home / ".juliaup" / "bin" / "julia"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\n", encoding="utf-8")
    launcher.chmod(0o755)
    with_launcher = {**empty, "PATH": str(launcher.parent)}
    assert find(with_launcher, home).root == new  # no config: the newest version
    config = {
        "Default": "lts",
        "InstalledVersions": {"1.10.4+0.x64.linux.gnu": {"Path": "./julia-1.10.4+0.x64.linux.gnu"}},
        "InstalledChannels": {"lts": {"Version": "1.10.4+0.x64.linux.gnu"}},
    }
    (juliaup / "juliaup.json").write_text(json.dumps(config), encoding="utf-8")
    assert find(with_launcher, home).root == old  # the default channel
    elsewhere = tmp_path / "depot"
    moved = fake_installation(elsewhere / "juliaup" / "julia-1.12.0+0.x64.linux.gnu")
    assert find({**with_launcher, "JULIAUP_DEPOT_PATH": str(elsewhere)}, home).root == moved
    assert find({**with_launcher, "JULIA_DEPOT_PATH": f"{elsewhere}:/other"}, home).root == moved


async def test_run_julia_without_julia_says_how_to_install_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = ws.load("julia").tool("run_julia")
    assert tool is not None
    box = LocalSandbox.create(
        tmp_path / "sandboxes", "r1", {"main.jl": 'println("hi")\n'}
    )  # before PATH changes
    for setting in ("JULIA_BINDIR", "JULIAUP_DEPOT_PATH", "JULIA_DEPOT_PATH"):
        monkeypatch.delenv(setting, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-julia-here"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(ToolFailure) as caught:
        await tool.invoke({"path": "main.jl"}, ToolContext(run_id="r1", sandbox=box))
    message = str(caught.value)
    assert message.startswith("Julia is not installed on this machine")
    assert "juliaup" in message and "https://install.julialang.org" in message and "JULIA_BINDIR" in message


async def test_run_julia_refuses_bad_arguments(ws: Workspace, tmp_path: Path) -> None:
    tool = ws.load("julia").tool("run_julia")
    assert tool is not None
    box = LocalSandbox.create(tmp_path / "sandboxes", "r1")
    ctx = ToolContext(run_id="r1", sandbox=box)
    for arguments, expected in [
        ({}, "give run_julia `path`"),
        ({"path": "a.jl", "code": "1"}, "not both"),
        ({"code": "1", "timeout_s": 0}, "timeout_s"),
    ]:
        with pytest.raises(ToolFailure, match=expected):
            await tool.invoke(arguments, ctx)
    with pytest.raises(ToolFailure, match="needs a sandbox"):
        await tool.invoke({"code": "1"}, ToolContext(run_id="r1"))


@pytest.fixture
def fake_julia(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A fake Julia installation (a shell script that reports what it can see) that run_julia finds,
    inside a fake ~/.julia that also holds a secret the sandbox must not show."""
    depot = tmp_path / "home" / ".julia"
    secret = depot / "registries" / "token.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("s3cret\n", encoding="utf-8")
    script = f"""echo "args: $*"
echo "depot: $JULIA_DEPOT_PATH"
echo "cwd: $(pwd)"
if cat "{secret}" >/dev/null 2>&1; then echo "secret: visible"; else echo "secret: hidden"; fi
if touch /julia/probe 2>/dev/null; then echo "installation: writable"; else echo "installation: read-only"; fi
case "$*" in *fail*) echo "ERROR: failed on purpose" >&2; exit 3;; esac
"""
    root = fake_installation(depot / "juliaup" / "julia-1.11.2+0.x64.linux.gnu", script)
    module = module_of(ws, "run_julia")
    monkeypatch.setattr(module, "find_julia", lambda: module.Installation(root))
    return root, secret


@needs_bubblewrap
async def test_run_julia_mounts_only_the_installation(
    ws: Workspace, tmp_path: Path, fake_julia: tuple[Path, Path]
) -> None:
    require_bubblewrap()
    tool = ws.load("julia").tool("run_julia")
    assert tool is not None
    box = LocalSandbox.create(tmp_path / "sandboxes", "r1", {"main.jl": 'println("hi")\n'})
    ctx = ToolContext(run_id="r1", sandbox=box)
    result = await tool.invoke({"path": "./main.jl"}, ctx)
    assert result.startswith("exit code: 0\n--- stdout ---\n")
    assert "args: --startup-file=no --history-file=no --color=no -- main.jl" in result
    assert "depot: /tmp/julia-depot:" in result
    assert "cwd: /work" in result
    assert "secret: hidden" in result  # the rest of ~/.julia stays out of the sandbox
    assert "installation: read-only" in result
    assert not (fake_julia[0] / "probe").exists()

    failed = await tool.invoke({"code": "fail()"}, ctx)
    assert failed.startswith("exit code: 3\n")
    assert "args: --startup-file=no --history-file=no --color=no -e fail()" in failed
    assert failed.endswith("--- stderr ---\nERROR: failed on purpose")
    with pytest.raises(ToolFailure, match="does not exist"):
        await tool.invoke({"path": "missing.jl"}, ctx)
    with pytest.raises(ToolFailure, match="outside"):
        await tool.invoke({"path": "../escape.jl"}, ctx)


async def test_run_julia_refuses_without_isolation(
    ws: Workspace, tmp_path: Path, fake_julia: tuple[Path, Path]
) -> None:
    tool = ws.load("julia").tool("run_julia")
    assert tool is not None
    plain = LocalSandbox.create(tmp_path / "sandboxes", "r1", {"main.jl": "1\n"}, isolate=False)
    with pytest.raises(ToolFailure, match="isolated sandbox"):
        await tool.invoke({"path": "main.jl"}, ToolContext(run_id="r1", sandbox=plain))


# --- the family: loading, inheritance, cases and scripted suites ------------------------------------------


def test_the_family_loads_and_inherits(ws: Workspace) -> None:
    julia = ws.load("julia")
    assert list(julia.rubric) == ["runs", "does_task", "idiomatic"]
    assert {n: g.kind for n, g in julia.evaluator.graders.items()} == {
        "runs": "check",
        "does_task": "judge",
        "idiomatic": "judge",
    }
    assert [t.name for t in julia.tools] == [
        "list_files",
        "read_file",
        "write_file",
        "edit_file",
        "run_julia",
    ]
    assert julia.model == "Qwen/Qwen3.8-27B"
    for name in CHILDREN:
        child = ws.load(name)
        assert child.parent is julia
        assert list(child.rubric)[:3] == ["runs", "does_task", "idiomatic"]
        assert {c: child.evaluator.graders[c].kind for c in list(child.rubric)[3:]} == OWN[name]
        assert all(child.origin(c) == "julia" for c in ("runs", "does_task", "idiomatic"))
        assert child.evaluator.graders["runs"] is julia.evaluator.graders["runs"]
        assert [t.name for t in child.tools] == [t.name for t in julia.tools]
        assert child.model == julia.model
        assert child.instructions.startswith(julia.instructions)
        assert len(child.instructions) > len(julia.instructions)
    assert set(CHILDREN) <= set(ws.names())


def test_every_machine_has_cases(ws: Workspace) -> None:
    assert len(ws.cases("julia")) >= 4
    assert len(ws.cases("julia", "holdout.json")) >= 2
    for name in CHILDREN:
        assert len(ws.cases(name)) >= 3, name


def scripted_cases(ws: Workspace, name: str) -> list[Any]:
    rules = json.loads((REPO / "machines" / name / "script.json").read_text(encoding="utf-8"))["rules"]
    cases = [c for c in ws.cases(name) if any(re.search(r["match"], c.input) for r in rules)]
    assert cases, name
    return cases


@needs_bubblewrap
@pytest.mark.parametrize("name", ["julia", *CHILDREN])
async def test_scripted_suites_pass_the_source_checks(
    ws: Workspace, name: str, fake_julia: tuple[Path, Path]
) -> None:
    """Each machine's script writes main.jl and runs it through run_julia, here on the fake Julia:
    `runs` passes for real under bubblewrap, and the child's own checks pass on the written source."""
    require_bubblewrap()
    machine = ws.load(name)
    cases = scripted_cases(ws, name)
    report = await run_suite(
        ws, machine, cases, harness=ScriptedHarness(REPO / "machines" / name / "script.json")
    )
    assert report.errors == 0
    checks = [c for c, g in machine.evaluator.graders.items() if g.kind == "check"]
    for run in ws.store.runs(name, limit=100):
        assert run.scorecard is not None
        for criterion in checks:
            result = run.scorecard.criteria[criterion]
            assert result.score == 1.0, (run.case_id, criterion, result.reason)
        assert [m.name for m in run.tool_results] == ["write_file", "run_julia"]
        assert "args: --startup-file=no" in run.tool_results[1].content


async def test_without_julia_a_scripted_run_fails_runs_with_the_reason(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = module_of(ws, "run_julia")
    monkeypatch.setattr(module, "find_julia", lambda: None)
    machine = ws.load("julia/inline")
    report = await run_suite(
        ws,
        machine,
        scripted_cases(ws, "julia/inline"),
        harness=ScriptedHarness(JULIA / "inline" / "script.json"),
    )
    assert report.errors == 0
    (run,) = ws.store.runs("julia/inline", limit=10)
    assert run.scorecard is not None
    runs = run.scorecard.criteria["runs"]
    assert runs.score == 0.0
    assert runs.reason.startswith("run_julia did not run main.jl: Julia is not installed on this machine")
    assert run.scorecard.criteria["short_or_inline"].score == 1.0  # graded on the source all the same
