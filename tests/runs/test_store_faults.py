"""A store that cannot be used is refused in words, never written into: damaged pages, not a database, a
folder, read-only, a full disk. Each on a real SQLite file (and a real small tmpfs for the last two)."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

import pytest
from helpers.filesystems import remount_read_only, small_tmpfs

from machine.errors import StoreError
from machine.runs import Run, SQLiteStore, Timings

PAGE = 8192


def make_run(index: int, size: int = 2000) -> Run:
    return Run(
        id=f"r{index:05d}",
        machine="red",
        model="echo",
        harness="echo",
        input=f"input {index}",
        output="o" * size,
        timings=Timings(),
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sound(path: Path) -> bool:
    """What SQLite itself says of the file (a check that fails outright means damage too)."""
    check = sqlite3.connect(path)
    try:
        return bool(check.execute("PRAGMA quick_check").fetchone()[0] == "ok")
    except sqlite3.DatabaseError:
        return False
    finally:
        check.close()


def damaged_copy(tmp_path: Path) -> Path:
    """A real store of 300 runs, closed (so its WAL is folded in), then pages in the middle of the file
    overwritten with noise, as a failing disk or a stray writer would leave it."""
    path = tmp_path / "store.db"
    store = SQLiteStore(path)
    store.put_many(make_run(i) for i in range(300))
    store.close()
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    pages = path.stat().st_size // PAGE
    assert pages > 20
    noise = random.Random(11)
    with path.open("r+b") as file:
        for page in range(pages // 2 - 2, pages // 2 + 2):
            file.seek(page * PAGE)
            file.write(noise.randbytes(PAGE))
    return path


def test_a_damaged_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = damaged_copy(tmp_path)
    before = sha256(path)
    store = SQLiteStore(path)  # opening reads only the schema: a listing may still be tried
    with pytest.raises(StoreError, match="is damaged") as refused:
        store.ready_to_write()
    assert ".recover" in str(refused.value) and str(path) in str(refused.value)
    for write in (lambda: store.put(make_run(9999)), lambda: store.put_many([make_run(9998)])):
        with pytest.raises(StoreError, match="is damaged"):
            write()
    store.close()
    assert sha256(path) == before  # not a byte changed
    assert not sound(path)  # the damage is real


def test_a_sound_store_passes_the_check_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    store.put_many(make_run(i) for i in range(50))
    store.ready_to_write()
    store.put(make_run(50))
    assert store.count() == 51
    store.close()


def test_a_file_that_is_not_a_database_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_text("these are someone's notes, not a database\n" * 100)
    before = sha256(path)
    with pytest.raises(StoreError, match="is not a SQLite database") as refused:
        SQLiteStore(path)
    assert "move it aside" in str(refused.value)
    assert sha256(path) == before


def test_a_folder_in_the_stores_place_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.mkdir()
    with pytest.raises(StoreError, match="is a folder, not a file"):
        SQLiteStore(path)


def test_a_store_on_a_read_only_file_system_is_refused_in_words(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "ro", 1024) as mounted:
        path = mounted / "store.db"
        store = SQLiteStore(path)
        store.put(make_run(1))
        store.close()
        remount_read_only(mounted)
        with pytest.raises(StoreError, match="is read-only") as refused:
            SQLiteStore(path)
        assert "writable" in str(refused.value)


def test_a_full_disk_is_said_and_what_was_written_stays(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", 384) as mounted:
        store = SQLiteStore(mounted / "store.db")
        written = 0
        with pytest.raises(StoreError, match="the disk is full") as refused:
            for index in range(1000):  # 1000 x 20 KB cannot fit in 384 KiB
                store.put(make_run(index, size=20_000))
                written += 1
        assert "free space" in str(refused.value)
        assert written > 0
        assert store.count() == written
        assert [run.id for run in store.iter_runs()] == [f"r{i:05d}" for i in range(written)]
        store.close()
