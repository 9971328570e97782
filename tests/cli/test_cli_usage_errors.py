"""Click's own refusals (unknown option or command, missing argument, wrong type) read like the commands'
errors: one ``error:`` line with the nearest spelling when there is one, the usage, and exit status 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Command


@pytest.mark.parametrize(
    ("args", "error", "usage"),
    [
        (["suite", "greet", "--trails", "2"], "error: no such option '--trails' (did you mean '--trials'?)",
         "usage: machine suite [OPTIONS] NAME  (`machine suite --help` says more)"),
        (["suitee", "greet"], "error: no such command 'suitee' (did you mean 'suite'?)",
         "usage: machine [OPTIONS] COMMAND [ARGS]...  (`machine --help` says more)"),
        (["training", "lisst"], "error: no such command 'lisst' (did you mean 'list'?)",
         "usage: machine training [OPTIONS] COMMAND [ARGS]...  (`machine training --help` says more)"),
        (["suite"], "error: missing argument 'NAME'", "usage: machine suite [OPTIONS] NAME"),
        (["suite", "greet", "--trials", "x"], "error: invalid value for '--trials': 'x'",
         "usage: machine suite"),
        (["--frob"], "error: no such option '--frob'", "usage: machine [OPTIONS] COMMAND [ARGS]..."),
        (["completion", "tcsh"], "error: invalid value for 'SHELL': 'tcsh' is not one of",
         "usage: machine completion [OPTIONS] SHELL"),
    ],
)  # fmt: skip
def test_a_usage_error_is_one_error_line_and_the_usage(
    machine_cmd: Command, args: list[str], error: str, usage: str
) -> None:
    result = machine_cmd(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith(error) and lines[1].startswith(usage), result.stderr
    assert "Usage:" not in result.stderr and "Error:" not in result.stderr and not result.stdout
