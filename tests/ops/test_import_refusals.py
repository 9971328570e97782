"""Hostile and malformed files are refused in words that name the file and the line, sample or trace at
fault, and nothing of them is stored: not JSON, the wrong shape, nested too deep, too long a line, too
large a file, a zip bomb, an unknown machine, and Inspect logs without inspect_ai."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.import_files import chat_jsonl, chat_row, inspect_log, otlp_trace, workspace

import machine.ops._import as import_module
import machine.ops._import_chat as chat_module
from machine.errors import BadInputError, NotFoundError
from machine.ops import import_runs


def _refused(tmp_path: Path, text: str | bytes, *words: str, format: str | None = "chat") -> None:
    ws = workspace(tmp_path / "ws")
    path = tmp_path / "in.jsonl"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(BadInputError) as caught:
        import_runs(ws, "shout", path, format)  # type: ignore[arg-type]
    said = str(caught.value)
    assert str(path) in said and "nothing was imported" in said, said
    assert all(word in said for word in words), said
    assert ws.store.count() == 0


GOOD = json.dumps(chat_row(0)) + "\n"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GOOD + "{not json\n", ("line 2", "not valid JSON")),
        (GOOD + '["a list"]\n', ("line 2", '"messages" list')),
        (GOOD + '{"messages": [{"role": "wizard", "content": "hi"}]}\n', ("line 2", "'wizard'")),
        (GOOD + '{"messages": [{"role": "user", "content": 7}]}\n', ("line 2", "content is int")),
        (GOOD + '{"messages": [{"role": "assistant", "content": "hi"}]}\n', ("line 2", "no user message")),
        (GOOD + '{"messages": [{"role": "user", "content": "x", "tool_calls": [{}]}]}' + "\n", ()),
        (
            GOOD
            + '{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": "x"}]}\n',
            ("line 2", "tool_calls is not a list"),
        ),
        (GOOD + '{"messages": ' + "[" * 100 + "]" * 100 + "}\n", ("line 2", "nest more than 64")),
        (GOOD + '{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}\n", ("line 2", "nest more than 64")),
        (GOOD.encode() + b'{"messages": "\xff\xfe"}\n', ("line 2", "not UTF-8")),
    ],
)
def test_a_malformed_line_refuses_the_whole_file(
    tmp_path: Path, text: str | bytes, words: tuple[str, ...]
) -> None:
    if words:
        _refused(tmp_path, text, *words)
    else:  # a user message's tool calls are not kept, so the line is fine
        ws = workspace(tmp_path / "ws")
        (tmp_path / "in.jsonl").write_text(str(text))
        assert import_runs(ws, "shout", tmp_path / "in.jsonl").runs == 2


def test_too_long_a_line_and_too_large_a_file_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat_module, "MAX_LINE_BYTES", 4096)
    _refused(
        tmp_path / "a",
        GOOD + json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]}) + "\n",
        "line 2",
        "longer than 4,096 bytes",
    )
    monkeypatch.setattr(import_module, "MAX_IMPORT_BYTES", 1024)
    _refused(tmp_path / "b", GOOD * 3, "over the 1,024")


def test_a_huge_message_is_refused_and_a_long_reply_is_cut(tmp_path: Path) -> None:
    huge = {"messages": [{"role": "user", "content": "x" * 5_000_000}, {"role": "assistant", "content": "y"}]}
    _refused(tmp_path / "a", GOOD + json.dumps(huge) + "\n", "line 2", "characters of text")
    ws = workspace(tmp_path / "ws")
    long = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Y" * 500_000}]}
    (tmp_path / "long.jsonl").write_text(json.dumps(long) + "\n")
    run = ws.store.get(import_runs(ws, "shout", tmp_path / "long.jsonl").run_ids[0])
    assert len(run.trajectory[-1].content) < 140_000 and "[cut:" in run.trajectory[-1].content


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", b"\0" * 50_000_000)
    with pytest.raises(BadInputError, match="over 100 times its packed size"):
        import_runs(ws, "shout", bomb)
    assert ws.store.count() == 0


def test_a_file_that_is_no_inspect_log_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    fake = tmp_path / "fake.eval"
    fake.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(BadInputError, match=r"fake\.eval"):
        import_runs(ws, "shout", fake)
    assert ws.store.count() == 0


def test_an_unknown_machine_a_missing_file_and_an_unknown_format_are_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    path = chat_jsonl(tmp_path / "chat.jsonl")
    with pytest.raises(NotFoundError, match="nosuch"):
        import_runs(ws, "nosuch", path)
    with pytest.raises(NotFoundError, match="no file"):
        import_runs(ws, "shout", tmp_path / "missing.jsonl")
    odd = tmp_path / "odd.txt"
    odd.write_text("hello")
    with pytest.raises(BadInputError, match="cannot tell what format"):
        import_runs(ws, "shout", odd)
    assert ws.store.count() == 0


def test_an_inspect_log_without_inspect_ai_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path / "ws")
    log = inspect_log(tmp_path / "log.eval", samples=1)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(BadInputError, match=r"machine\[inspect\]"):
        import_runs(ws, "shout", log)
    assert ws.store.count() == 0


def test_odd_otlp_values_are_read_as_nothing_not_a_crash(tmp_path: Path) -> None:
    """An array or a key-value list holding something other than an object of values, or a message whose
    parts are no list, reads as empty."""
    ws = workspace(tmp_path / "ws")
    path = otlp_trace(tmp_path / "trace.json")
    document = json.loads(path.read_text())
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] += [
        {"key": "odd.array", "value": {"arrayValue": ["not", "an", "object"]}},
        {"key": "odd.list", "value": {"kvlistValue": 7}},
    ]
    for batch in document["resourceSpans"]:
        for said in (a["value"] for s in batch["scopeSpans"][0]["spans"] for a in s["attributes"]):
            if said.get("stringValue", "").startswith('[{"role"'):
                odd = {"role": "assistant", "parts": 5}
                said["stringValue"] = json.dumps([*json.loads(said["stringValue"]), odd])
    path.write_text(json.dumps(document))
    assert import_runs(ws, "shout", path).runs == 2


def test_an_inspect_sample_whose_input_is_an_empty_list_is_read_not_a_crash(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    path = inspect_log(tmp_path / "log.json")
    log = json.loads(path.read_text())
    log["samples"][0]["input"] = []
    path.write_text(json.dumps(log))
    report = import_runs(ws, "shout", path)
    assert report.runs == 2
    assert ws.store.get(report.run_ids[0]).case == {"id": "q0", "input": "", "target": "RED"}
