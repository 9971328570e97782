"""Importing outside runs: an Inspect log, a chat JSONL and an OTLP trace become observed, unlabelled runs
of the machine, with their messages, model and usage, their secrets redacted, that grade, mark and export
like the machine's own."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.import_files import KEY, chat_jsonl, inspect_log, otlp_trace, workspace

from machine.learn.train import export, iter_rows
from machine.ops import import_runs
from machine.runs import Run
from machine.workspace import Workspace, tag_run


def _runs(ws: Workspace, ids: list[str]) -> list[Run]:
    return [ws.store.get(run_id) for run_id in ids]


def _unlabelled(run: Run) -> bool:
    return run.observed and not run.tags and run.scorecard is None


def test_a_chat_jsonl_becomes_observed_runs(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    report = import_runs(ws, "shout", chat_jsonl(tmp_path / "chat.jsonl", rows=3))
    assert report.format == "chat" and report.runs == 3 and report.redacted == 3
    run = _runs(ws, report.run_ids)[0]
    assert _unlabelled(run) and run.machine == "shout" and run.harness == "import:chat"
    assert run.model == "teacher" and run.case_id == "case-0" and run.trial == 1
    assert run.instructions == "Repeat the input in capital letters." and run.output == "HELLO 0"
    assert [m.role for m in run.trajectory] == ["user", "assistant", "tool", "assistant"]
    assert run.tool_calls[0].name == "shout" and run.tool_calls[0].arguments == {"text": "hi"}
    assert KEY not in run.model_dump_json() and "[REDACTED]" in run.input


def test_an_inspect_log_becomes_a_run_a_sample(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    for name in ("log.eval", "log.json"):
        report = import_runs(ws, "shout", inspect_log(tmp_path / name, samples=2))
        assert report.format == "inspect" and report.runs == 2
        run = _runs(ws, report.run_ids)[1]
        assert _unlabelled(run) and run.harness == "import:inspect"
        assert (
            run.model == "openai/gpt-4o-mini"
            and run.usage.input_tokens == 10
            and run.usage.output_tokens == 3
        )
        assert (
            run.case_id == "q1"
            and run.trial == 1
            and run.case == {"id": "q1", "input": "roses 1", "target": "RED"}
        )
        assert run.instructions == "Be loud." and run.input == "roses 1" and run.output == "RED 1"
        assert run.tool_calls[0].arguments == {"at": "roses"}
        assert (
            run.tool_results[0].content.startswith("they are red") and KEY not in run.tool_results[0].content
        )


def test_an_otlp_trace_becomes_a_run_a_trace(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    report = import_runs(ws, "shout", otlp_trace(tmp_path / "trace.json"))
    assert report.format == "otlp" and report.runs == 2
    agent, call = _runs(ws, report.run_ids)
    assert _unlabelled(agent) and agent.harness == "import:otlp"
    assert agent.input == "whisper" and agent.output == "WHISPER" and agent.model == "gpt-x-1"
    assert [m.role for m in agent.trajectory] == ["user", "assistant", "tool", "assistant"]
    assert agent.tool_calls[0].arguments == {"text": "whisper"} and agent.tool_results[0].tool_call_id == "t1"
    assert agent.usage.input_tokens == 40 and agent.usage.output_tokens == 10
    assert agent.timings.started_at.year == 2026
    assert call.instructions == "Be loud." and call.input == "psst" and call.model == "gpt-y"


def test_a_trace_without_content_is_passed_over_in_words(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    try:
        import_runs(ws, "shout", otlp_trace(tmp_path / "trace.json", content=False))
    except Exception as error:
        assert "holds no run to import" in str(error) and "capture content" in str(error)
    else:
        raise AssertionError("a trace with no messages was imported")
    assert ws.store.count() == 0


async def test_imported_runs_grade_mark_and_export(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    ids = import_runs(ws, "shout", chat_jsonl(tmp_path / "chat.jsonl", rows=2)).run_ids
    ids += import_runs(ws, "shout", otlp_trace(tmp_path / "trace.json")).run_ids
    ids += import_runs(ws, "shout", inspect_log(tmp_path / "log.eval", samples=1)).run_ids
    graded = await ws.grade(ws.store.get(ids[0]))
    assert graded.scorecard is not None and graded.passed is True
    marked = tag_run(ws.store, ws.store.get(ids[-1]), "good", trace=True)
    assert marked.verdict is not None and ws.store.get(ids[-1]).verdict is not None
    out = tmp_path / "out.jsonl"
    report = export(ws, "shout", out=str(out))
    exported = {row["metadata"]["run_id"] for row in iter_rows(out)}
    assert {ids[0], ids[-1]} <= exported and report.runs == 2
    assert KEY not in out.read_text()


def test_an_export_imports_back_as_the_runs_it_was_made_of(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    first = import_runs(ws, "shout", chat_jsonl(tmp_path / "chat.jsonl", rows=1)).run_ids[0]
    tag_run(ws.store, ws.store.get(first), "good", trace=True)
    out = tmp_path / "out.jsonl"
    export(ws, "shout", out=str(out))
    again = ws.store.get(import_runs(ws, "shout", out, "chat").run_ids[0])
    original = ws.store.get(first)
    assert again.trajectory == original.trajectory and again.instructions == original.instructions
    assert json.loads(out.read_text())["metadata"]["case_id"] == again.case_id


def test_a_password_in_a_tool_calls_arguments_is_redacted_by_its_name(tmp_path: Path) -> None:
    """Arguments come as JSON text: ``"password": "..."`` is read with its name, as an export reads it."""
    ws = workspace(tmp_path / "ws")
    arguments = json.dumps({"text": "hi", "password": "correct-horse-battery-9"})
    call = {"id": "c1", "type": "function", "function": {"name": "shout", "arguments": arguments}}
    said = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "HI"},
        {"role": "assistant", "content": "HI"},
    ]
    path = tmp_path / "arguments.jsonl"
    path.write_text(json.dumps({"messages": said}) + "\n")
    report = import_runs(ws, "shout", path)
    run = ws.store.get(report.run_ids[0])
    assert "correct-horse-battery-9" not in run.model_dump_json() and report.redacted == 1
    assert run.tool_calls[0].arguments == {"text": "hi", "password": "[REDACTED:password]"}
