"""The distribution: a built wheel holds every subpackage, and imports from itself alone.

machine.server, machine.clients, machine.sandboxes and machine.machinist live in top-level folders
mapped by pyproject.toml's package-dir, so an editable install can hide a packaging mistake that a
wheel would ship. These tests build a real wheel from a snapshot of the source and import it in a
fresh interpreter where neither the source tree nor the editable install can stand in for it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE_DIRS: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
SUBPACKAGES = [
    "machine.runs",
    "machine.grade",
    "machine.spec",
    "machine.workspace",
    "machine.measure",
    "machine.versions",
    "machine.learn",
    "machine.learn.optimize",
    "machine.learn.rl",
    "machine.learn.train",
    "machine.learn.specialize",
    "machine.learn.specialize.vetting",
    "machine.ops",
    "machine.cli",
    "machine.server",
    "machine.clients",
    "machine.clients.chat",
    "machine.clients.hosts",
    "machine.clients.hosts.opencode",
    "machine.clients.local",
    "machine.clients.postgres",
    "machine.clients.ray",
    "machine.clients.tinker",
    "machine.sandboxes",
    "machine.sandboxes.tools",
    "machine.machinist",
    "machine.dashboard",
]
PACKAGE_DATA = [
    "machine/py.typed",
    "machine/clients/hosts/pi_extension.ts",
    "machine/machinist/machines/optimizer/instructions.md",
    "machine/machinist/machines/author/instructions.md",
    "machine/dashboard/static/index.html",
    *(
        f"machine/dashboard/static/{m}.js"
        for m in (
            *("app", "chart", "ui", "machines", "runs", "run", "quality", "training", "spending", "pair"),
            "failures",
        )
    ),
    "machine/dashboard/static/style.css",
]
"""Files besides the modules that the wheel must ship (pyproject's package-data)."""
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def _snapshot(dest: Path) -> Path:
    """Copy what a build reads into ``dest``, so building never writes into the working tree."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "setup.cfg"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    for folder in sorted({path.split("/")[0] for path in PACKAGE_DIRS.values()} | {"machine"}):
        shutil.copytree(ROOT / folder, dest / folder, ignore=IGNORED)
    return dest


def _build_wheel(source: Path, out: Path) -> Path:
    python = sys.executable
    try:
        import build  # noqa: F401

        command = [python, "-m", "build", "--wheel", "--outdir", str(out), str(source)]
    except ImportError:
        command = [python, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(out), str(source)]
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"building the wheel failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    wheels = list(out.glob("machine-*.whl"))
    assert len(wheels) == 1, f"expected one machine wheel in {out}, found {wheels}"
    return wheels[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    return _build_wheel(_snapshot(base / "src"), base / "dist")


def _expected_files() -> set[str]:
    """Every .py file under the mapped folders, at the path the mapping gives it inside the wheel.

    A new subfolder that pyproject.toml does not list as a package shows up here as missing."""
    expected = set(PACKAGE_DATA)
    for package, folder in PACKAGE_DIRS.items():
        base = ROOT / folder
        for file in base.rglob("*.py"):
            relative = file.relative_to(base)
            if "__pycache__" in relative.parts or any(part.startswith(".") for part in relative.parts):
                continue
            expected.add(package.replace(".", "/") + "/" + relative.as_posix())
    return expected


@pytest.mark.slow
def test_wheel_holds_every_subpackage_and_module(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        record = {row[0] for row in csv.reader(io.StringIO(archive.read(record_name).decode())) if row}
        entry_points = archive.read(record_name.replace("RECORD", "entry_points.txt")).decode()
    for package in ["machine", *SUBPACKAGES]:
        init = package.replace(".", "/") + "/__init__.py"
        assert init in names, f"{init} is missing from the wheel"
        assert init in record, f"{init} is missing from the wheel's RECORD"
    for data in PACKAGE_DATA:
        assert data in names and data in record, f"{data} is missing from the wheel"
    missing = sorted(_expected_files() - names)
    assert not missing, (
        f"source files missing from the wheel (add their package to pyproject.toml): {missing}"
    )
    strays = sorted(n for n in names if not n.startswith(("machine/", "machine-")))
    assert not strays, f"the wheel installs files outside the machine package: {strays}"
    assert "machine = machine.cli:main" in entry_points.replace("  ", " ")


_IMPORT_ALL = """
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    found[name] = importlib.import_module(name).__file__
print(json.dumps(found))
"""


@pytest.mark.slow
def test_installed_wheel_imports_from_itself(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"installing the wheel failed:\n{done.stdout}\n{done.stderr}"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "MACHINE_"))}
    env["PYTHONPATH"] = str(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    # -P: the current directory is not put on sys.path. PYTHONPATH comes before site-packages, so the
    # wheel's copy is found before the editable install's finder is ever asked.
    done = subprocess.run(
        [sys.executable, "-P", "-c", _IMPORT_ALL, "machine", *SUBPACKAGES],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"importing the installed wheel failed:\n{done.stderr}"
    files = json.loads(done.stdout.strip().splitlines()[-1])
    for name, file in files.items():
        assert file is not None, f"{name} imported as a namespace package, not from the wheel"
        assert Path(file).resolve().is_relative_to(site.resolve()), (
            f"{name} came from {file}, not from {site}"
        )


def test_console_script_prints_help() -> None:
    script = Path(sys.executable).parent / "machine"
    assert script.exists(), f"no console script at {script}: install the project with `make test`"
    done = subprocess.run(
        [str(script), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"`machine --help` failed:\n{done.stdout}\n{done.stderr}"
    assert "Usage: machine" in done.stdout
    for command in ("list", "show", "tree", "run", "runs", "eval", "suite"):
        assert f"  {command} " in done.stdout or f"  {command}\n" in done.stdout, (
            f"`machine --help` does not list the {command!r} command:\n{done.stdout}"
        )
