"""Running a page of the docs as a reader would, from top to bottom, in a workspace of its own.

The workspace is a copy of this repository's ``machines/`` under git (``compare`` needs a commit). Every
block runs there, in order, so a later block sees what an earlier one wrote. Commands run with the
scripted harness replaying each machine's own script (``MACHINE_HARNESS=scripted``,
``MACHINE_SCRIPT=machines``) unless the block sets an API key or names a machine whose own model is local
(``signoff``, which runs on that model as the reader's would), and every remote service's URL points at a
local OpenAI-compatible server, so a block that names Tinker, OpenRouter, the Gateway or an Ollama address
is answered on 127.0.0.1 and nothing leaves the machine. ``HOME`` is a folder of the test's, holding the
``~/src/myproject`` and ``~/machine`` the pages name. A python block that is not a file runs as a program.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from helpers.doc_blocks import REPO, Block, Outcome, blocks, excerpt_missing, output_missing
from helpers.openai_server import FakeOpenAI, text

BLOCK_TIMEOUT_S = 420
VENV_BIN = Path(sys.executable).parent
STATUS_TRAP = 'trap \'printf "%s\\t%s\\n" "$?" "$BASH_COMMAND" >> "$DOC_STATUS"\' ERR\n'
SERVE_PORT = re.compile(r"(serve --http|dashboard).*?(?:--port (\d+)|$)", re.M)
PORTS = {"serve --http": 8765, "dashboard": 4242}
"""Where each server a page starts listens unless its ``--port`` says otherwise."""
READY_S = 60
KEYS = ("TINKER_API_KEY", "OPENROUTER_API_KEY", "AI_GATEWAY_API_KEY", "OPENAI_API_KEY", "TYPESAFE_API_KEY")


def workspace(tmp: Path) -> Path:
    """A copy of the repository's machines, committed to a git repository of its own."""
    ws = tmp / "ws"
    shutil.copytree(REPO / "machines", ws / "machines", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(ws), "-c", "user.name=docs", "-c", "user.email=docs@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "machines"], check=True)
    home = tmp / "home"
    (home / "src" / "myproject").mkdir(parents=True)
    for name in ("machine", "machines"):
        (home / name).symlink_to(ws)
    return ws


def environment(ws: Path, home: Path, service: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("MACHINE_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        NO_COLOR="1",
        HF_HUB_OFFLINE="1",
        MACHINE_SCRIPT=str(ws / "machines"),
        TINKER_BASE_URL=service,
        OPENROUTER_BASE_URL=f"{service}/api/v1",
        AI_GATEWAY_BASE_URL=f"{service}/v1",
        OPENAI_BASE_URL=f"{service}/v1",
    )
    return env


class PageRun:
    """One page's blocks run in order; ``substitutions`` stand in for the page's placeholders."""

    def __init__(
        self, page: str, tmp: Path, substitutions: Mapping[str, str] = {}, env: Mapping[str, str] = {}
    ) -> None:
        self.page, self.tmp = page, tmp
        self.ws = workspace(tmp)
        self.stack = ExitStack()
        fake = self.stack.enter_context(FakeOpenAI(default=text("A reply from the local stand-in.")))
        self.env = {**environment(self.ws, tmp / "home", fake.url), **env}
        self.substitutions = {
            "/abs/path/to/machine/.venv/bin/machine": str(VENV_BIN / "machine"),
            "/abs/path/to/machine": str(self.ws),
            "http://127.0.0.1:11434": fake.url,
            "/tmp/": f"{tmp}/",
            **substitutions,
        }
        self.background: subprocess.Popen[bytes] | None = None
        machines = self.ws.glob("machines/*/machine.py")
        self.local_machines = [path.parent.name for path in machines if '"local:' in path.read_text()]

    def __enter__(self) -> PageRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_background()
        self.stack.close()

    def source(self, block: Block) -> str:
        """The block with its placeholders replaced, in one pass (a value is never replaced again)."""
        placeholders = sorted(self.substitutions, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(p) for p in placeholders))
        return pattern.sub(lambda found: self.substitutions[found.group(0)], block.text)

    def run(self, block: Block) -> Outcome | None:
        """Run one block (or check it); None when there is nothing to run."""
        if block.mark == "excerpt":
            missing = excerpt_missing(block)
            return Outcome(block, "\n".join(missing), [(1, m) for m in missing], 1 if missing else 0)
        if block.file is not None:
            path = self.ws / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
            return None
        if block.lang == "json":
            json.loads(block.text)  # a shape shown: it must at least be JSON
            return None
        if block.lang == "python":
            return self._program(block)
        if block.lang == "sh" and block.mark != "set-up":
            return self._shell(block)
        return None

    def _env(self, block: Block) -> dict[str, str]:
        """The scripted harness by default, except for a block about a service (which runs on the local
        stand-in) or about a machine whose own model is local (which runs on it, needing no key)."""
        env = dict(self.env)
        on_local = any(re.search(rf"\b{name}\b", block.text) for name in self.local_machines)
        if "API_KEY" not in block.text and not on_local:
            env["MACHINE_HARNESS"] = "scripted"
        return env

    def _program(self, block: Block) -> Outcome:
        program = self.tmp / f"block_{block.line}.py"
        program.write_text(self.source(block))
        done = subprocess.run(
            [sys.executable, str(program)],
            cwd=self.ws,
            env=self._env(block),
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        return Outcome(block, done.stdout + done.stderr, [], done.returncode)

    def _shell(self, block: Block) -> Outcome:
        status = self.tmp / f"status_{block.line}.tsv"
        env = {**self._env(block), "DOC_STATUS": str(status)}
        script = STATUS_TRAP + self.source(block)
        if block.mark == "background":
            self.background = subprocess.Popen(
                ["bash", "-c", script],
                cwd=self.ws,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self._await_server(block)
            return Outcome(block, "", [], 0)
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.ws,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        failed = []
        if status.exists():
            for line in status.read_text().splitlines():
                code, command = line.split("\t", 1)
                failed.append((int(code), command))
        return Outcome(block, done.stdout + done.stderr, failed, done.returncode)

    def _await_server(self, block: Block) -> None:
        """Wait until the server a background block starts accepts connections, as a reader would."""
        found = SERVE_PORT.search(self.source(block))
        if found is None:
            return
        port = int(found.group(2) or PORTS[found.group(1)])
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            assert self.background is not None and self.background.poll() is None, f"{block.where} exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{block.where}: nothing listened on port {port} within {READY_S} s")

    def stop_background(self) -> None:
        if self.background is not None:
            os.killpg(self.background.pid, 15)
            self.background.wait(timeout=20)
            self.background = None


def run_page(
    page: str,
    tmp: Path,
    refusals: Mapping[str, str] = {},
    substitutions: Mapping[str, str] = {},
    env: Mapping[str, str] = {},
) -> list[Outcome]:
    """Every block of ``page`` in order. A command that fails must be one of ``refusals`` (a piece of the
    command, and a piece of what it must say), and nothing may print a traceback. ``env`` is what the
    reader's shell holds (a key, a token)."""
    outcomes: list[Outcome] = []
    with PageRun(page, tmp, substitutions, env) as page_run:
        waiting = False
        for block in blocks(page):
            if block.mark == "output":  # what the last command printed, as the page shows it
                assert outcomes, f"{block.where}: an output sample follows no command"
                missing = output_missing(block, outcomes[-1].output)
                assert not missing, f"{block.where}: not printed: {missing}\n{outcomes[-1].describe()}"
                continue
            outcome = page_run.run(block)
            if waiting:
                page_run.stop_background()
                waiting = False
            if block.mark == "background":
                waiting = True
            if outcome is None:
                continue
            outcomes.append(outcome)
            assert "Traceback" not in outcome.output, outcome.describe()
            for code, command in outcome.failed:
                expected = [said for part, said in refusals.items() if part in command]
                assert expected, f"{block.where}: {command!r} exited {code}\n{outcome.describe()}"
                assert expected[0] in outcome.output, outcome.describe()
            if block.lang == "python" or block.mark == "excerpt":
                assert outcome.returncode == 0, outcome.describe()
    return outcomes
