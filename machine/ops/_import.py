"""Import: samples and traces kept elsewhere brought in as observed runs of a machine, so they can be graded
with its rubric, marked, exported and trained on like the runs it made. Three formats: Inspect eval logs
(``_import_inspect``), chat JSONL as an export writes it (``_import_chat``) and OTLP/JSON GenAI traces
(``_import_otlp``). Imported runs are unlabelled, as the runs outside hosts make through the server are:
a person's mark or the machine's grading decides what is good.

All or nothing: the whole file is read and checked first, then its runs are stored in one transaction;
a file refused (too large, not its format, nested too deep, a zip bomb, a sample out of shape) leaves
the store as it was. Each run is made as it is read and held only as the row the store writes, not as
objects: a file of many runs costs its rows' memory, not its runs'. What is stored has its secrets
redacted as an export redacts them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import Field

from machine.errors import BadInputError, Fix, NotFoundError
from machine.runs import Model, Redactor, Run
from machine.workspace import Workspace

from ._import_chat import chat_lines
from ._import_inspect import inspect_samples
from ._import_otlp import otlp_documents, trace_runs
from ._import_read import MAX_IMPORT_BYTES, MAX_IMPORT_RUNS, Outside, refusal, run_of

ImportFormat = Literal["inspect", "chat", "otlp"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = ("inspect", "chat", "otlp")
"""What ``import_runs`` reads: Inspect eval logs, chat JSONL, OTLP/JSON GenAI traces."""
SKIPS_SHOWN = 5
"""Items passed over that a report names; the rest are counted."""
PEEK_BYTES = 64 * 1024
"""How much of a file is read to tell its format."""


class ImportReport(Model):
    """What an import stored."""

    machine: str
    file: str
    format: str
    runs: int
    run_ids: list[str] = Field(default_factory=list)
    skipped: int = 0
    """Samples or traces that hold no run (a trace recorded without its messages), passed over."""
    skipped_why: list[str] = Field(default_factory=list)
    """Why, for the first few."""
    redacted: int = 0
    """Things that look like secrets replaced by a marker in what was stored; a count of what was found,
    not a promise that nothing secret is left."""
    redacted_kinds: dict[str, int] = Field(default_factory=dict)


def _otlp(path: Path) -> Iterator[Outside | str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise refusal(path, "", "it is not UTF-8 text") from None
    return trace_runs(path, otlp_documents(path, text))


READERS: dict[str, Callable[[Path], Iterator[Outside | str]]] = {
    "inspect": inspect_samples,
    "chat": chat_lines,
    "otlp": _otlp,
}


def guess_format(path: Path) -> ImportFormat:
    """The format of the file at ``path``, from its name and its first bytes."""
    if path.suffix == ".eval":
        return "inspect"
    with path.open("rb") as handle:
        head = handle.read(PEEK_BYTES)
    if b'"resourceSpans"' in head:
        return "otlp"
    if head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head:
        return "inspect"
    if b'"messages"' in head:
        return "chat"
    raise BadInputError(
        f"cannot tell what format {path} is in: name it (inspect, chat or otlp)",
        fixes=[Fix("format", "chat", "for chat JSONL")],
    )


def _checked_file(path: Path) -> Path:
    """``path`` if it is a file small enough to read; else an error saying what it is."""
    if not path.exists():
        raise NotFoundError(f"there is no file {path} to import")
    if not path.is_file():
        raise BadInputError(f"{path} is not a file: name an Inspect log, a chat JSONL or an OTLP/JSON file")
    size = path.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise refusal(path, "", f"it is {size:,} bytes, over the {MAX_IMPORT_BYTES:,} one import reads")
    return path


def read_runs(
    path: Path, machine: str, format: ImportFormat, redactor: Redactor, skipped: list[str]
) -> Iterator[Run]:
    """Each run of the file at ``path`` as an observed run of ``machine``, made as it is read (held one at
    a time, not all at once), noting in ``skipped`` why items were passed over; refused at the first item
    out of shape."""
    made = 0
    items = READERS[format](path)
    while True:
        try:
            item = next(items, None)
        except OSError as error:
            raise refusal(path, "", f"it cannot be read ({error.strerror or error})") from None
        if item is None:
            return
        if isinstance(item, str):
            skipped.append(item)
            continue
        if made >= MAX_IMPORT_RUNS:
            raise refusal(
                path, item.where, f"it holds more than the {MAX_IMPORT_RUNS:,} runs one import takes"
            )
        made += 1
        yield run_of(path, item, machine, f"import:{format}", redactor)


def _noted(runs: Iterator[Run], ids: list[str]) -> Iterator[Run]:
    for run in runs:
        ids.append(run.id)
        yield run


def import_runs(
    ws: Workspace, name: str, file: str | Path, format: ImportFormat | None = None
) -> ImportReport:
    """Store the samples or traces of ``file`` as observed runs of machine ``name``: all of them, or,
    where any is refused, none. ``format`` is guessed from the file when not given."""
    spec = ws.load(name)  # a machine of the workspace: its rubric grades what comes in
    path = _checked_file(Path(file))
    if format is not None and format not in IMPORT_FORMATS:
        raise BadInputError(f"there is no import format {format!r}: give inspect, chat or otlp")
    chosen = format or guess_format(path)
    redactor = Redactor.here(ws.root)
    skipped: list[str] = []
    ids: list[str] = []
    # put_many reads every run before it writes one: a refusal part way stores nothing
    ws.store.put_many(_noted(read_runs(path, spec.name, chosen, redactor, skipped), ids))
    if not ids:
        why = f": {skipped[0]}" if skipped else ""
        raise BadInputError(f"{path} holds no run to import as {chosen}{why}")
    return ImportReport(
        machine=spec.name,
        file=str(path),
        format=chosen,
        runs=len(ids),
        run_ids=ids,
        skipped=len(skipped),
        skipped_why=skipped[:SKIPS_SHOWN],
        redacted=redactor.count,
        redacted_kinds=dict(redactor.kinds),
    )
