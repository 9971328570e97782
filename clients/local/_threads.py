"""How many threads torch works a local model with: ``MACHINE_LOCAL_THREADS``, else a default chosen for
the CPUs this process may use.

torch starts one intra-op thread per physical core, and its OpenMP threads spin at every barrier waiting
for each other. On a 2-core machine with anything else running, a thread that lost its core holds the
others spinning: a decoding loop ran 21x slower with torch's 2 threads than with 1 (396 s against 18.5 s),
while on an idle machine the second thread gains far less than that (``benchmarks/local_threads.py``
prints both, idle and loaded). So the default leaves room for other work: one thread where the process
may use 1 or 2 CPUs, else half of them, at most ``MAX_DEFAULT``. Applied before a model is loaded and
before every training; torch is imported by the caller, never when this module is.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

from machine.errors import BadInputError

THREADS_ENV = "MACHINE_LOCAL_THREADS"
MOST_THREADS = 1024
MAX_DEFAULT = 8
"""The most threads the default gives: past that, a model of this size gains little from more."""
CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""A cgroup v2 CPU quota (a container's ``--cpus``): ``QUOTA PERIOD``, or ``max PERIOD`` for none."""


def usable_cpus(cpu_max: Path = CPU_MAX) -> int:
    """The CPUs this process may run on (its affinity: taskset, a container's cpuset), within its
    cgroup's CPU quota where there is one."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        count = os.cpu_count() or 1
    quota = _quota(cpu_max)
    return max(1, min(count, quota) if quota else count)


def _quota(cpu_max: Path) -> int | None:
    try:
        limit, period = cpu_max.read_text(encoding="utf-8").split()[:2]
    except (OSError, ValueError):
        return None
    if limit == "max" or not limit.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return max(1, math.ceil(int(limit) / int(period)))


def default_threads(cpus: int) -> int:
    """One thread on 1 or 2 CPUs (a second busy process there costs 2 threads far more than 1 gains),
    else half the CPUs, at most ``MAX_DEFAULT``."""
    return 1 if cpus <= 2 else min(cpus // 2, MAX_DEFAULT)


def chosen_threads() -> int:
    """``MACHINE_LOCAL_THREADS`` when set (a whole number from 1 to 1024), else the default for this
    process's CPUs."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return default_threads(usable_cpus())
    if not raw.isdigit() or not 1 <= int(raw) <= MOST_THREADS:
        raise BadInputError(
            f"{THREADS_ENV}={raw!r} is not a whole number of threads from 1 to {MOST_THREADS}; leave it "
            f"unset for the default ({default_threads(usable_cpus())} on this machine)"
        )
    return int(raw)


def use_threads() -> int:
    """Set torch's intra-op threads (and its inter-op threads, which torch lets be set only once, before
    any inter-op work) to ``chosen_threads``; the count set."""
    import torch

    count = chosen_threads()
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    if torch.get_num_interop_threads() != count:
        with contextlib.suppress(RuntimeError):  # set already, or inter-op work began: left as it is
            torch.set_num_interop_threads(count)
    return count
