"""Marking a chat's exchanges: ``/good [--as TEXT] [--trace] [--reasoning] [NOTE]``, ``/bad NOTE``,
``/correct NOTE``, ``/tagged``, and the footer with the session's counts."""

from __future__ import annotations

import io
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

import click

from machine.errors import BadInputError
from machine.ops import MarkedRun, tagged
from machine.runs import Run, counted, inert
from machine.workspace import Workspace

from ._run_view import fmt_time, tag_words
from ._table import print_table

FLAGS = {"--trace": "trace", "--trajectory": "trace", "--reasoning": "reasoning"}
ANSWER = ("--as", "--rewrite")


@dataclass
class GoodMark:
    """What ``/good`` was given."""

    answer: str | None = None
    trace: bool = False
    reasoning: bool = False
    note: str | None = None


def parse_good(arg: str) -> GoodMark:
    """``/good``'s words: ``--trace``, ``--reasoning``, ``--as TEXT`` (quoted, or else the rest of the
    line), ``--note TEXT``; the words left over are the note. Any other ``--word`` is refused (a
    mistyped option taken as the note would be saved as one); after ``--`` every word is the note."""
    mark, words, rest = GoodMark(), [], arg.strip()
    while rest:
        word, _, after = rest.partition(" ")
        after = after.lstrip()
        if word == "--":
            words.append(after)
            break
        if word in FLAGS:
            setattr(mark, FLAGS[word], True)
        elif word in ANSWER or word == "--note":
            text, after = _value(word, after)
            if word == "--note":
                words.append(text)
            else:
                mark.answer = text
        elif word.startswith("--"):
            raise BadInputError(_no_option("/good", word))
        else:
            words.append(word)
        rest = after
    mark.note = " ".join(w for w in words if w) or None
    return mark


def parse_note(command: str, arg: str) -> str:
    """The note of ``/bad`` or ``/correct``, which take no options: a first word like ``--out`` is
    refused rather than saved as the note; after ``--`` the rest is the note as typed."""
    word, _, after = arg.partition(" ")
    if word == "--":
        return after.strip()
    if word.startswith("--"):
        raise BadInputError(_no_option(command, word))
    return arg


def _no_option(command: str, word: str) -> str:
    takes = (
        "it takes --as TEXT, --trace, --reasoning and --note TEXT, then the note"
        if command == "/good"
        else "it takes only a note"
    )
    return f"{command} has no option {word}: {takes} (put -- before a note that starts with --)"


def _value(flag: str, rest: str) -> tuple[str, str]:
    """The text ``flag`` takes from ``rest``, and what is left: one quoted argument, or every word left."""
    if rest[:1] in ("'", '"'):
        stream = io.StringIO(rest)
        lexer = shlex.shlex(stream, posix=True)
        lexer.whitespace_split = True
        try:
            text = lexer.get_token() or ""
        except ValueError:
            raise BadInputError(f"{flag}'s quote is not closed: end the text with {rest[0]}") from None
        return text, stream.read().lstrip()
    if not rest:
        raise BadInputError(f"{flag} needs text after it, e.g. /good {flag} The capital is Paris.")
    return rest, ""


@dataclass
class Counts:
    """The marks this session made, by run: a later verdict on a run replaces its earlier one."""

    verdicts: dict[str, str] = field(default_factory=dict)
    corrections: int = 0

    def add(self, run: Run) -> None:
        last = run.tags[-1]
        if last.verdict:
            self.verdicts[run.id] = last.kind
        else:
            self.corrections += 1

    def footer(self) -> str:
        good = sum(kind == "good" for kind in self.verdicts.values())
        bad = len(self.verdicts) - good
        return f"this session: {good} good · {bad} bad · {counted(self.corrections, 'correction')}"


def mark(ws: Workspace, command: str, arg: str, last: Run) -> Run | None:
    """Mark ``last`` as ``command`` says, and say so; None when the words were wrong (said why)."""
    try:
        good = parse_good(arg) if command == "/good" else GoodMark(note=parse_note(command, arg))
    except BadInputError as error:
        click.echo(str(error))
        return None
    if command in ("/bad", "/correct") and not good.note:
        example = "too terse" if command == "/bad" else "answer in one line"
        click.echo(f"{command} needs a note saying why, e.g. {command} {example}")
        return None
    kind = {"/good": "good", "/bad": "bad", "/correct": "correction"}[command]
    marks = {"answer": good.answer, "trace": good.trace, "reasoning": good.reasoning}
    marked = ws.tag(last, kind, good.note, **(marks if kind == "good" else {}))
    click.echo(inert(f"marked run {marked.id} {tag_words(marked.tags[-1])}"))
    return marked


def print_marked(rows: Sequence[MarkedRun], *, machine: bool = True) -> None:
    """The rows as a table: run, when, (machine,) the last mark, input → output (the table makes each cell
    inert)."""

    def cells(r: MarkedRun) -> tuple[str, ...]:
        said = "; ".join(map(tag_words, r.tags)) or ("observed" if r.observed else "-")
        flow = f"{r.input_preview[:40]!r} → {r.output_preview[:40]!r}"
        return (r.id, fmt_time(r.created_at), *([r.machine] if machine else []), said, flow)

    headers = ("id", "when", *(["machine"] if machine else []), "mark", "input → output")
    print_table(headers, [cells(r) for r in rows])


def show_tagged(ws: Workspace, name: str) -> None:
    """``/tagged``: this machine's recently marked runs."""
    rows = tagged(ws, name, 10)
    if not rows:
        click.echo(f"no run of {name} is marked yet: /good or /bad marks the last exchange")
        return
    print_marked(rows, machine=False)
