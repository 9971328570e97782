"""Text that others wrote, made inert before a terminal, or a host's form, shows it. A model's reply, a
tool's result, a stored run or a model-written file may hold escape sequences a terminal obeys: set the
window title (OSC 0), write the clipboard (OSC 52), conceal text (SGR 8), move the cursor, clear the
screen; a carriage return overwrites a line and a bidi override reorders it. "costs at most
$0.50\\x1b[8m (a full training costs $40)\\x1b[0m" shows only "$0.50". Every such string passes through
``inert`` before it is shown, so the person sees every character that is there."""

from __future__ import annotations

import re

_BIDI = "\u202a-\u202e\u2066-\u2069"
"""The bidi embeddings, overrides and isolates: they reorder what is shown (Trojan Source)."""

_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
"""Every character ``inert`` shows visibly: C0 controls but tab and newline, DEL, C1 controls (the 8-bit
CSI U+009B and OSC U+009D among them), bidi controls."""


def _visible(code: int) -> str:
    if code == 0x1B:
        return "␛"  # the rest of the sequence follows as the plain characters it is made of
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_SHOWN = {
    chr(code): _visible(code)
    for span in ((0x00, 0x09), (0x0B, 0x20), (0x7F, 0xA0), (0x202A, 0x202F), (0x2066, 0x206A))
    for code in range(*span)
}


def inert(text: str) -> str:
    """``text`` with every terminal control shown as characters: ESC as ``␛`` (``\\x1b[8m`` reads
    ``␛[8m``), other C0 and C1 controls, DEL and a lone carriage return as ``\\x07``, ``\\x9b``, ``\\x0d``,
    bidi controls as ``\\u202e``. Newline and tab stay; so does ``\\r\\n``, as a newline (it overwrites
    nothing). Ordinary text is returned as it is, after one scan."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda found: _SHOWN[found.group()], text.replace("\r\n", "\n"))


_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}]")


def inert_json(text: str) -> str:
    """JSON text (``json.dumps`` with ``ensure_ascii=False``) with the controls JSON leaves raw, DEL, C1
    and bidi controls, written as ``\\u`` escapes: the same JSON to a parser, inert on a terminal. (JSON
    escapes C0 controls, ESC among them, itself; these characters occur only inside its strings.)"""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
