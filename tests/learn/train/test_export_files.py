"""What export writes beside ``--out``: never through a symlink planted where its temporary file would go,
and never at a name anyone can guess; the output is whole and right, the victim byte for byte as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.learn_runs import calc_workspace, graded, read_rows

from machine import Workspace
from machine.learn import export
from machine.runs import write_atomic

VICTIM = b"the person's own file\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    made = calc_workspace(tmp_path / "ws")
    made.store.put_many([graded(made, "sum", 1.0), graded(made, "half", 1.0)])
    return made


def plant(out: Path, victim: Path) -> list[Path]:
    """Symlinks to ``victim`` at every temporary name beside ``out`` one could predict."""
    names = [f".{out.name}.{os.getpid()}.tmp", f".{out.name}.tmp", f"{out.name}.tmp", f"{out.name}~"]
    planted = [out.with_name(name) for name in names]
    for link in planted:
        link.symlink_to(victim)
    return planted


def test_export_never_writes_through_a_symlink_planted_beside_out(ws: Workspace, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    out = tmp_path / "shared" / "out.jsonl"
    out.parent.mkdir()
    planted = plant(out, victim)
    report = export(ws, "calc", out=out)
    assert victim.read_bytes() == VICTIM
    assert not out.is_symlink() and (out.stat().st_mode & 0o777) == 0o600
    assert report.rows == 2 and {r["metadata"]["case_id"] for r in read_rows(out)} == {"sum", "half"}
    assert all(link.is_symlink() for link in planted)  # left as they were, not followed, not removed
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, *(p.name for p in planted)])


def test_export_over_a_symlink_at_out_replaces_the_link_not_its_target(ws: Workspace, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    out = tmp_path / "out.jsonl"
    out.symlink_to(victim)
    export(ws, "calc", out=out)
    assert victim.read_bytes() == VICTIM and not out.is_symlink()
    assert len(read_rows(out)) == 2


def test_a_failed_export_leaves_no_temporary_file(ws: Workspace, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(Exception, match="no run"):
        export(ws, "calc", out=out, since="2099-01-01")
    assert list(tmp_path.glob(".out.jsonl*")) == [] and not out.exists()


def test_write_atomic_keeps_the_umask_mode_and_ignores_planted_names(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    target = tmp_path / "versions.json"
    plant(target, victim)
    write_atomic(target, b"{}\n")
    assert target.read_bytes() == b"{}\n" and victim.read_bytes() == VICTIM
    write_atomic(target, b"[]\n", private=True)
    assert (target.stat().st_mode & 0o777) == 0o600 and target.read_bytes() == b"[]\n"
