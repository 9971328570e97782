"""The train extra's packages are heavy (torch, transformers): ``machine --help`` and ``import machine``
(which brings in the Tinker trainer) must not import any of them."""

from __future__ import annotations

import subprocess
import sys

from helpers.env import clean_env

HEAVY = ("torch", "transformers", "tinker", "tinker_cookbook", "tml_renderers")


def test_help_and_the_trainer_import_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from machine.cli import cli\n"
        "from machine.clients.tinker import TinkerTrainer\nfrom machine.training import TrainSettings\n"
        "TinkerTrainer(); TrainSettings(base_model='thinkingmachines/Inkling')\n"
        "result = CliRunner().invoke(cli, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
