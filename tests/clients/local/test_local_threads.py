"""torch's thread count for local models: ``MACHINE_LOCAL_THREADS`` when set (a whole number, else refused
naming the setting), else one thread on 1 or 2 CPUs and half of them beyond (a CPU quota counted), set
before a model is loaded, so a local run or training on a busy 2-core machine does not run many times
slower than it would on one thread."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.env import clean_env
from helpers.tiny_model import needs_local_stack, tiny_model_folder

from machine.clients.local._threads import THREADS_ENV, chosen_threads, default_threads, usable_cpus
from machine.errors import BadInputError


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (12, 6), (64, 8)])
def test_the_default_leaves_room_for_other_work(cpus: int, threads: int) -> None:
    assert default_threads(cpus) == threads


def test_a_cgroup_quota_counts_as_fewer_cpus(tmp_path: Path) -> None:
    quota = tmp_path / "cpu.max"
    quota.write_text("150000 100000\n")  # a container's --cpus 1.5
    assert usable_cpus(quota) == min(2, usable_cpus(tmp_path / "none"))
    quota.write_text("max 100000\n")
    assert usable_cpus(quota) == usable_cpus(tmp_path / "none")


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "1025"])
def test_a_setting_that_is_no_count_of_threads_is_refused_naming_it(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THREADS_ENV, raw)
    with pytest.raises(BadInputError, match=f"{THREADS_ENV}={raw!r} is not a whole number of threads"):
        chosen_threads()


def test_the_setting_is_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, " 3 ")
    assert chosen_threads() == 3
    monkeypatch.delenv(THREADS_ENV)
    assert chosen_threads() == default_threads(usable_cpus())


PROBE = """
import json, sys, threading
import torch
from machine.clients.local import _models as _local_models
before = torch.get_num_threads()
loaded = _local_models.load(sys.argv[1])
seen = []
worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))  # as the generator's thread
worker.start(); worker.join()
print(json.dumps({"before": before, "after": torch.get_num_threads(), "worker": seen[0],
                  "interop": torch.get_num_interop_threads()}))
"""


def loaded_threads(model: Path, env: dict[str, str]) -> dict[str, int]:
    """torch's thread counts in a fresh process that loads ``model`` (torch fixes some once a process),
    with no ``OMP_NUM_THREADS`` to decide them instead."""
    environment = {k: v for k, v in clean_env(env).items() if k != "OMP_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, f"local:{model}"], capture_output=True, text=True, timeout=300,
        env=environment, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.slow
def test_loading_a_model_sets_torchs_threads_for_every_thread(tmp_path: Path) -> None:
    needs_local_stack()
    model = tiny_model_folder(tmp_path / "model")
    one = loaded_threads(model, {THREADS_ENV: "1"})
    assert (one["after"], one["worker"], one["interop"]) == (1, 1, 1)
    three = loaded_threads(model, {THREADS_ENV: "3"})
    assert (three["after"], three["worker"]) == (3, 3)
    assert one["before"] != 1 or three["before"] != 3  # torch chose otherwise: the setting changed it
