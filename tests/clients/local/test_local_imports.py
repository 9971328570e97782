"""The local harness costs nothing until a local model runs: importing it, the harness registry and the
command line imports neither torch nor transformers."""

from __future__ import annotations

import subprocess
import sys


def test_the_local_harness_imports_no_torch_until_a_model_loads() -> None:
    code = (
        "import sys, machine.cli, machine.clients.local\n"
        "from machine.clients import make_harness\n"
        "make_harness('local')\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
