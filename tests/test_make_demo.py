"""``make demo`` on a fresh clone sets up what its main job needs: bubblewrap, installed as ``make test``
installs it, and where it cannot be installed or cannot isolate commands, one line that says what the
demo shows degraded (the tour's coder run, specialize's case checks) before the demo goes on.

A real ``git clone`` of this repository (the working tree's Makefile copied over it, so uncommitted
edits count) and real ``make``. The degraded runs use a PATH holding only the programs the Makefile's
logic needs, so apt-get, sudo and bwrap are absent (or bwrap is a stand-in that fails, as a bwrap that
cannot make namespaces does); nothing is ever installed, and the demo's scripts are replaced by stubs
that say they ran."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.env import on_ci

from machine.sandboxes import bubblewrap

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
GIT = shutil.which("git")
DEGRADED = (
    "the tour's coder run is refused and specialize keeps no cases (both need bubblewrap isolation); "
    "the rest of the demo runs as usual"
)
TOOLS = ("bash", "sh", "python3", "id", "env")
"""What the Makefile's own logic runs (its hashes, apt_install's checks): no apt-get, sudo or bwrap."""

pytestmark = pytest.mark.skipif(
    (MAKE is None or GIT is None) and not on_ci(), reason="make and git are needed to run the Makefile"
)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A fresh clone: no .venv, no stamps, no .machine; the working tree's Makefile over HEAD's."""
    dest = tmp_path / "clone"
    subprocess.run(
        [str(GIT), "clone", "-q", "--depth", "1", f"file://{ROOT}", str(dest)], check=True, timeout=120
    )
    shutil.copy2(ROOT / "Makefile", dest / "Makefile")
    assert not (dest / ".venv").exists()
    return dest


def _bin(tmp_path: Path, failing_bwrap: bool = False) -> Path:
    """A PATH folder with only ``TOOLS`` (and, with ``failing_bwrap``, a bwrap that cannot run)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (folder / tool).symlink_to(found)
    if failing_bwrap:
        fake = folder / "bwrap"
        fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
        fake.chmod(0o755)
    return folder


def _stub_demo(clone: Path) -> None:
    """The demo's three scripts, replaced by ones that only say they ran."""
    (clone / "demo" / "tour.sh").write_text("echo 'tour ran'\n")
    (clone / "demo" / "teach_local.sh").write_text("echo 'teach_local ran'\n")
    (clone / "demo" / "mcp_tour.py").write_text("print('mcp_tour ran')\n")


def _make_demo(clone: Path, bin_folder: Path) -> subprocess.CompletedProcess[str]:
    """``make demo`` as installed already (a stamp that exists, this interpreter with machine in it)."""
    stamp = clone / "installed.stamp"
    stamp.touch()
    env = {"PATH": str(bin_folder), "HOME": str(clone), "CI": "", "LANG": "C.UTF-8"}
    return subprocess.run(
        [str(MAKE), "-s", "demo", f"STAMP={stamp}", f"PY={sys.executable}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_demo_depends_on_installing_bubblewrap_before_the_tour(clone: Path) -> None:
    """The break: in a fresh clone `make demo` never installed bubblewrap (only `make test` did)."""
    database = subprocess.run(
        [str(MAKE), "-pn", "demo"], cwd=clone, capture_output=True, text=True, timeout=60, check=False
    )
    assert database.returncode == 0, database.stderr
    [rule] = re.findall(r"^demo: (?!WITHOUT_BWRAP).*$", database.stdout, re.MULTILINE)
    assert "bwrap" in rule.split() and "sandbox-check" in rule.split()
    assert "demo: WITHOUT_BWRAP = $(DEMO_DEGRADED)" in database.stdout
    dry = subprocess.run(
        [str(MAKE), "-n", "demo"], cwd=clone, capture_output=True, text=True, timeout=60, check=False
    ).stdout
    lines = dry.splitlines()
    venv = lines.index("python3 -m venv .venv")
    install = next(i for i, line in enumerate(lines) if "apt-get install -y -qq bubblewrap" in line)
    probe = next(i for i, line in enumerate(lines) if "from machine.sandboxes import bubblewrap" in line)
    tour = lines.index("bash demo/tour.sh")
    assert venv < install < probe < tour
    assert f"warning: could not install bubblewrap; {DEGRADED}." in lines[install]


def test_without_apt_get_the_demo_says_in_one_line_what_is_degraded_and_goes_on(
    clone: Path, tmp_path: Path
) -> None:
    _stub_demo(clone)
    done = _make_demo(clone, _bin(tmp_path))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == [
        "bubblewrap (bwrap) is missing; trying to install it with apt-get",
        "tour ran",
        "mcp_tour ran",
        "teach_local ran",
    ]
    assert done.stderr.splitlines() == [
        f"warning: could not install bubblewrap; {DEGRADED}.",
        "         Install it with your package manager (Debian/Ubuntu: apt-get install bubblewrap).",
    ]


def test_a_bubblewrap_that_cannot_isolate_here_is_said_in_one_line(clone: Path, tmp_path: Path) -> None:
    """Installed but unable to make namespaces (some containers): machine's own probe says so."""
    _stub_demo(clone)
    done = _make_demo(clone, _bin(tmp_path, failing_bwrap=True))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["tour ran", "mcp_tour ran", "teach_local ran"]
    assert done.stderr == f"note: bubblewrap cannot isolate commands here, so {DEGRADED}.\n"


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot isolate commands here")
def test_where_bubblewrap_works_the_demo_says_nothing_of_it(clone: Path, tmp_path: Path) -> None:
    _stub_demo(clone)
    folder = _bin(tmp_path)
    working = bubblewrap()
    assert working is not None
    (folder / "bwrap").symlink_to(working)
    done = _make_demo(clone, folder)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["tour ran", "mcp_tour ran", "teach_local ran"]
    assert done.stderr == ""
