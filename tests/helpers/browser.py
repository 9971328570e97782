"""The dashboard's browser tests' common parts: Debian's chromium driven by Playwright (required under
CI=true, else the module is skipped saying what to install), a page per test, a route visited until the
page says it is drawn, and screenshots in build/test-artifacts/dashboard/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .dashboard import Served
from .env import REPO, installed_or_skip, on_ci

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "build" / "test-artifacts" / "dashboard"
WAIT_MS = 10_000


def playwright_api() -> Any:
    """``playwright.sync_api``, for a module of browser tests: missing chromium fails under CI=true and
    skips the module elsewhere."""
    if not CHROMIUM.exists() or shutil.which("chromium") is None:
        if on_ci():
            raise RuntimeError("Debian's chromium is missing, and CI=true requires it: make test installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)
    installed_or_skip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    import playwright.sync_api

    return playwright.sync_api


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium, closed at the end."""
    with playwright_api().sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def new_page(browser: Any) -> Iterator[Any]:
    """A page of its own (its own cookies), waiting at most ``WAIT_MS`` for anything."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        opened = context.new_page()
        opened.set_default_timeout(WAIT_MS)
        yield opened
    finally:
        context.close()


def visit(page: Any, served: Served, route: str) -> None:
    """Go to ``route`` (``#/...``) and wait until it is drawn."""
    page.goto(served.url + route)
    page.wait_for_selector(f'body[data-ready="{route}"]')


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def cell(row: Any, testid: str) -> str:
    return str(row.locator(f"[data-testid={testid}]").inner_text()).strip()
