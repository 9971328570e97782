"""The marks of tests that need real bubblewrap: off CI they skip with what to install, under
``CI=true`` they fail, since `make test` installs bubblewrap there and a skip would hide that
isolation went untested."""

from __future__ import annotations

import os

import pytest

from machine.sandboxes import bubblewrap

ON_CI = os.environ.get("CI", "").strip().lower() == "true"
NO_BWRAP = (
    "bubblewrap (bwrap) is not installed, or cannot create namespaces here: install it "
    "(Debian/Ubuntu: apt-get install bubblewrap; `make test` does) to run the sandbox isolation tests"
)


def needs_bubblewrap() -> list[pytest.MarkDecorator]:
    """A module's ``pytestmark`` for tests that run commands under bubblewrap."""
    skip = pytest.mark.skipif(bubblewrap() is None and not ON_CI, reason=NO_BWRAP)
    fail = pytest.mark.usefixtures("bubblewrap_or_fail")
    return [skip, fail]


@pytest.fixture
def bubblewrap_or_fail() -> None:
    """Reached only where the skip did not apply: off CI bubblewrap works; on CI it must."""
    if bubblewrap() is None:
        pytest.fail(f"CI=true, and {NO_BWRAP}", pytrace=False)
