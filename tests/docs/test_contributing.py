"""CONTRIBUTING.md says what is true: the make targets it names exist, its floor plan draws the layers the
layer test enforces, in the same order, the rooms it names are there, and its example of a harness
registered at run time runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from helpers.doc_blocks import REPO, blocks
from test_layers import CORE

PAGE = (REPO / "CONTRIBUTING.md").read_text()


def _blocks(lang: str) -> list[str]:
    return [block.text for block in blocks("CONTRIBUTING.md") if block.lang == lang]


def test_every_make_target_it_names_exists() -> None:
    makefile = (REPO / "Makefile").read_text()
    named = set(re.findall(r"make ([a-z][a-z-]*)", PAGE))
    assert {"test", "test-fast", "lint"} <= named
    missing = [target for target in named if not re.search(rf"^{re.escape(target)}:", makefile, re.M)]
    assert not missing, f"CONTRIBUTING.md names make targets the Makefile lacks: {missing}"


def test_the_floor_plan_draws_the_core_layers_in_their_order() -> None:
    picture = _blocks("")[0]
    drawn = [name for name in re.findall(r"^\s*(machine\.[a-z_]+)\s", picture, re.M) if name in CORE]
    enforced = [name for name in CORE if name not in ("machine._lazy", "machine._data")]
    assert list(reversed(drawn)) == enforced


def test_the_rooms_it_names_are_there() -> None:
    (adapters,) = re.findall(r"^\s*clients/(.*)$", _blocks("")[0], re.M)
    named = set(re.findall(r"([a-z]+)/", adapters))
    for room in ("chat", "local", "tinker", "hosts", "postgres", "ray"):
        assert room in named and (REPO / "clients" / room / "__init__.py").is_file(), room
    named_paths = re.findall(r"`((?:machine|clients|server|tests)/[\w/.]+\.py)`", PAGE)
    named_paths += [path for block in _blocks("sh") for path in re.findall(r"\b(tests/[\w/.]+)", block)]
    for path in named_paths:
        assert (REPO / path).exists(), f"CONTRIBUTING.md names {path}, which does not exist"


def test_the_example_of_a_harness_registered_at_run_time_runs(tmp_path: Path) -> None:
    (example,) = _blocks("python")
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["HELLO", "1.0"]
