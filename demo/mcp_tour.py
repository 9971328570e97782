"""The MCP half of the demo: `machine serve` driven by a real MCP client, as an agent host drives it.

This script is the host. It starts `machine serve` over stdio as its subprocess (the same way Claude
Desktop or opencode start it from their configuration), with a small spending allowance in the server's
environment, then calls the tools an agent would call and prints what the host sees:

    list_machines -> show_machine red -> rehearse red (progress notifications) -> recent_runs red

and a rehearse the allowance does not cover, refused. The server replays red's scripted model
(`--harness scripted`), so nothing here needs a key or the network, and nothing is charged. Then the
learning tools, in a scratch workspace of copies (they write machines and versions):

    rehearse dev -> specialize dev (a scripted author writes dev/edge)
    rehearse signoff with a scripted teacher (free) -> train signoff (the local model, LoRA on this CPU)

    .venv/bin/python demo/mcp_tour.py [--workspace DIR] [--timeout SECONDS]

`--workspace` defaults to this repository; its runs and its spending log go to DIR/.machine/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
ALLOWANCE_USD = "0.5"
BUDGET_USD = 0.1
WIDTH = 100
SHOWN_PROGRESS = 3


class TourError(Exception):
    """A step did not answer as the tour expects."""


def say(text: str) -> None:
    if sys.stdout.isatty():
        print(f"\n\033[1m== {text}\033[0m", flush=True)
    else:
        print(f"\n== {text}", flush=True)


def line(text: str = "", indent: int = 2) -> None:
    """One line of output, cut at WIDTH characters."""
    text = " " * indent + " ".join(text.split("\n"))
    if len(text) > WIDTH:
        text = text[: WIDTH - 3].rsplit(" ", 1)[0].rstrip(" ,:;") + " ..."
    print(text, flush=True)


def paragraph(text: str, indent: int = 2) -> None:
    """A longer text (a refusal the person should read whole), wrapped at WIDTH characters."""
    pad = " " * indent
    print(textwrap.fill(text, WIDTH, initial_indent=pad, subsequent_indent=pad + "  "), flush=True)


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def structured(result: Any, step: str) -> dict[str, Any]:
    """The call's structuredContent; a tool error (or no structured result) stops the tour."""
    if result.is_error:
        raise TourError(f"{step} answered with an error: {text_of(result)}")
    if not isinstance(result.structured_content, dict):
        raise TourError(f"{step} returned no structured result: {text_of(result)}")
    return result.structured_content


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content).strip()


def describe_tool(tool: Any) -> str:
    notes = []
    hints = tool.annotations
    if hints is not None:
        if hints.read_only_hint:
            notes.append("read-only")
        if hints.destructive_hint:
            notes.append("destructive")
        if hints.open_world_hint:
            notes.append("open-world")
    params = list((tool.input_schema or {}).get("properties", {}))
    required = set((tool.input_schema or {}).get("required", []))
    signature = ", ".join(p if p in required else f"{p}?" for p in params)
    first = (tool.description or "").strip().splitlines()[0] if tool.description else ""
    tag = f" [{', '.join(notes)}]" if notes else ""
    return f"{tool.name}({signature}){tag}: {first}"


async def tour(workspace: Path, machine_bin: str) -> None:
    script = workspace / "machines" / "red" / "script.json"
    args = ["serve", "--workspace", str(workspace), "--harness", "scripted", "--script", str(script)]
    env = {"MACHINE_ALLOW_SPEND_USD": ALLOWANCE_USD, "PYTHONDONTWRITEBYTECODE": "1"}
    params = StdioServerParameters(command=machine_bin, args=args, env=env)

    say("An agent host starts `machine serve` over stdio, as its MCP configuration says")
    line(f"command: {machine_bin}")
    paragraph(f"args:    {' '.join(args)}")
    line(f"env:     MACHINE_ALLOW_SPEND_USD={ALLOWANCE_USD}  (the person's allowance, a running total)")

    async with Client(params, mode="legacy") as client:
        info = client.server_info
        line(f"connected: server {info.name if info else '?'}, protocol {client.protocol_version}")

        say("tools/list: what the agent is told it can call")
        for tool in (await client.list_tools()).tools:
            line(describe_tool(tool))

        say("list_machines")
        listed = structured(await client.call_tool("list_machines", {}), "list_machines")
        for m in listed["machines"]:
            line(f"{m['name']:<20} {m.get('intent') or m.get('error') or ''}")

        say("show_machine red")
        red = structured(await client.call_tool("show_machine", {"name": "red"}), "show_machine")
        line(f"intent: {red['intent']}")
        line(f"model:  {red['model']}")
        for c in red["criteria"]:
            line(f"criterion {c['name']} (weight {fmt(c['weight'])}, {c['grader']}): {c['description']}")
        for t in red["tools"]:
            line(f"tool {t['name']}: {t['description']}")
        line(f"cases files: {', '.join(red['cases_files'])}")

        say(f"rehearse red, budget_usd={BUDGET_USD} (spends: the allowance consents; progress per run)")

        notifications: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            # Every notification arrives; the first few and the last are shown.
            notifications.append(progress)
            if progress <= SHOWN_PROGRESS or progress == total:
                line(f"progress {progress:g}/{f'{total:g}' if total else '?'}: {message or ''}", indent=4)
            elif progress == SHOWN_PROGRESS + 1:
                line("...", indent=4)

        rehearsed = structured(
            await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": BUDGET_USD}, progress_callback=on_progress
            ),
            "rehearse",
        )
        summary = rehearsed["summary"]
        line(f"{len(notifications)} progress notifications received")
        line(
            f"suite {rehearsed['suite_id']}: {summary['runs']} runs, mean {fmt(summary['mean'])}, "
            f"pass rate {fmt(summary['pass_rate'])}, errors {summary['errors']}"
        )
        line(f"spent ${rehearsed['spent_usd']:.4f} of budget ${rehearsed['budget_usd']:.2f}")
        consent = rehearsed["consent"]
        line(f"consent: {consent['how']}: {consent['detail']}")
        line(f"logged in .machine/spending.jsonl as {consent['correlation_id']}")
        line(f"run ids: {len(rehearsed['run_ids'])} ({', '.join(rehearsed['run_ids'][:2])}, ...)")
        if rehearsed["stopped"]:
            line(f"stopped early: {rehearsed['stopped']}")

        say("recent_runs red, limit 5")
        recent = structured(await client.call_tool("recent_runs", {"name": "red", "limit": 5}), "recent_runs")
        for r in recent["runs"]:
            verdict = "pass" if r["passed"] else ("fail" if r["passed"] is False else "unscored")
            line(
                f"{r['id']}  {r['case_id'] or '-':<22} score {fmt(r['score']):<4} {verdict:<8} "
                f"{r['harness']} ${r['cost_usd']:.4f}"
            )

        say("rehearse red, budget_usd=1: more than the allowance has left, so the server refuses")
        refused = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1})
        if not refused.is_error:
            raise TourError("rehearse over the allowance was not refused")
        paragraph(f"isError: {text_of(refused)}")


async def learning(workspace: Path, scratch: Path, machine_bin: str) -> None:
    """specialize and train through the server, on copies of ``workspace``'s machines in ``scratch``."""
    for name in ("dev", "coder", "signoff"):
        shutil.copytree(workspace / "machines" / name, scratch / "machines" / name)
    dev = scratch / "machines" / "dev"
    rules = [json.loads((dev / f).read_text())["rules"] for f in ("author.json", "script.json")]
    script = scratch / "dev-and-author.json"
    script.write_text(json.dumps({"rules": rules[0] + rules[1]}), encoding="utf-8")
    env = {"MACHINE_ALLOW_SPEND_USD": ALLOWANCE_USD, "PYTHONDONTWRITEBYTECODE": "1"}
    served = ["serve", "--workspace", str(scratch), "--harness", "scripted", "--script", str(script)]

    say("specialize, in a scratch workspace: the author machine (scripted) writes a child of dev")
    async with Client(
        StdioServerParameters(command=machine_bin, args=served, env=env), mode="legacy"
    ) as client:
        rehearsed = structured(
            await client.call_tool("rehearse", {"name": "dev", "budget_usd": BUDGET_USD}), "rehearse"
        )
        line(
            f"rehearse dev: {rehearsed['summary']['runs']} runs stored, the author's checks are tried on them"
        )
        asked = {"parent": "dev", "focus": "edge cases of small helpers", "slug": "edge", "cases": 2}
        child = structured(
            await client.call_tool("specialize", {**asked, "budget_usd": BUDGET_USD}), "specialize"
        )
        line(f"specialize wrote {child['child']}: {', '.join(child['written'])}")
        line(f"cases kept: {child['kept_cases']} ({child['holdout_cases']} held out)")

    signoff = [
        "serve",
        "--workspace",
        str(scratch),
        "--script",
        str(scratch / "machines" / "signoff" / "script.json"),
    ]
    say("train, through the server: signoff's local model learns from a scripted teacher's runs")
    async with Client(
        StdioServerParameters(command=machine_bin, args=signoff, env=env), mode="legacy"
    ) as client:
        teacher = {"name": "signoff", "budget_usd": BUDGET_USD, "model": "teacher", "harness": "scripted"}
        taught = structured(await client.call_tool("rehearse", teacher), "rehearse")
        mean = fmt(taught["summary"]["mean"])
        line(f"rehearse signoff with model teacher on the free scripted harness: mean {mean}")

        async def on_progress(_done: float, _total: float | None, message: str | None) -> None:
            if (message or "").startswith("training step"):
                line(message or "", indent=4)

        short = {"name": "signoff", "budget_usd": BUDGET_USD, "any_model": True, "trials": 1, "epochs": 1}
        line("a short plan on purpose (one epoch, forced): the command-line loop next trains on the defaults")
        trained = structured(
            await client.call_tool("train", {**short, "force": True}, progress_callback=on_progress), "train"
        )
        t = trained["training"]
        rate = fmt(t["learning_rate"])
        line(f"training {t['record']}: {t['steps']} steps at lr {rate}, candidate {trained['candidate']}")
        before, after = fmt(trained["before"]["mean"]), fmt(trained["after"]["mean"])
        line(f"held-out mean {before} -> {after}: {trained['decision']}")
        line(f"spent ${trained['spent_usd']:.4f} (local training and the scripted teacher are free)")

    say("Next: docs/hosts.md adds this server to Claude Desktop, opencode or any MCP client")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workspace", type=Path, default=REPO, help="the workspace to serve (default: this repository)"
    )
    parser.add_argument(
        "--machine",
        default=str(Path(sys.executable).parent / "machine"),
        help="the machine command (default: the one beside this Python)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole tour")
    options = parser.parse_args(argv)
    workspace = options.workspace.resolve()
    if not (workspace / "machines" / "red" / "script.json").is_file():
        print(f"mcp_tour: {workspace} has no machines/red/script.json", file=sys.stderr)
        return 2

    async def bounded() -> None:
        with anyio.fail_after(options.timeout), tempfile.TemporaryDirectory(prefix="machine-mcp-") as scratch:
            await tour(workspace, options.machine)
            await learning(workspace, Path(scratch), options.machine)

    failed: list[str] = []
    try:
        anyio.run(bounded)
    except* TourError as errors:  # raised inside a client's task group, it comes wrapped in a group
        failed += [str(error) for error in errors.exceptions]
    except* TimeoutError:
        failed.append(f"the tour took longer than {options.timeout:g}s")
    for reason in failed:
        print(f"mcp_tour: {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
