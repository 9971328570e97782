"""Reading Julia source text without running it: what the children's checks look at.

Nothing here needs Julia. ``code_only`` blanks every comment and the text of every string, character
and command literal (keeping line breaks, delimiters and ``$(...)`` interpolations, which are code),
so a pattern that only appears in a comment or a string is never mistaken for code. The other
functions find function definitions in what is left: the long form (``function f(x) ... end``), the
short form (``f(x) = ...``) and anonymous functions (``x -> ...``), each with its argument list,
where-clause and whether it is marked ``@inline``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IDENT = r"[^\W\d][\w!]*"
"""A Julia identifier (letters, digits, underscores and ``!``; not starting with a digit)."""
QUALIFIED = rf"{IDENT}(?:\.{IDENT})*"
"""``name`` or ``Module.name``."""
_IDENT_CHAR = re.compile(r"[\w!]")


def _is_ident_char(char: str) -> bool:
    return bool(char) and _IDENT_CHAR.match(char) is not None


class _Blanker:
    """One pass over the source that copies code and blanks literal text and comments."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.i = 0

    def blank(self, upto: int) -> None:
        """Replace text[i:upto] by spaces, keeping line breaks."""
        self.out.append("".join("\n" if c == "\n" else " " for c in self.text[self.i : upto]))
        self.i = upto

    def keep(self, upto: int) -> None:
        self.out.append(self.text[self.i : upto])
        self.i = upto

    def code(self, closing: str | None = None) -> None:
        """Copy code until the end, or until the ``closing`` bracket that ends an interpolation."""
        text, depth = self.text, 0
        while self.i < len(text):
            c = text[self.i]
            if closing is not None:
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    if depth == 0:
                        return
                    depth -= 1
            if text.startswith("#=", self.i):
                self.block_comment()
            elif c == "#":
                end = text.find("\n", self.i)
                self.blank(len(text) if end < 0 else end)
            elif c == '"' or c == "`":
                prefixed = self.i > 0 and _is_ident_char(text[self.i - 1])
                self.literal(c, interpolates=not prefixed or c == "`")
            elif c == "'" and self.starts_char_literal():
                self.char_literal()
            else:
                self.keep(self.i + 1)

    def block_comment(self) -> None:
        """``#= ... =#``, which nest in Julia."""
        text, j, depth = self.text, self.i + 2, 1
        while j < len(text) and depth:
            if text.startswith("#=", j):
                depth, j = depth + 1, j + 2
            elif text.startswith("=#", j):
                depth, j = depth - 1, j + 2
            else:
                j += 1
        self.blank(j)

    def literal(self, quote: str, *, interpolates: bool) -> None:
        """A string or command literal (single or triple quoted). Its text is blanked; ``$(...)``
        inside an interpolating literal is code and is copied (it may hold literals of its own)."""
        text = self.text
        delimiter = quote * 3 if text.startswith(quote * 3, self.i) else quote
        self.keep(self.i + len(delimiter))
        while self.i < len(text):
            if text.startswith(delimiter, self.i):
                self.keep(self.i + len(delimiter))
                return
            c = text[self.i]
            if c == "\\":
                self.blank(min(self.i + 2, len(text)))
            elif interpolates and text.startswith("$(", self.i):
                self.keep(self.i + 2)
                self.code(closing=")")
                if self.i < len(text):
                    self.keep(self.i + 1)
            else:
                self.blank(self.i + 1)

    def starts_char_literal(self) -> bool:
        """``'`` opens a character literal unless it follows a value, where it is the adjoint (``A'``)."""
        if self.i == 0:
            return True
        before = self.text[self.i - 1]
        return not (_is_ident_char(before) or before in ")]}'.")

    def char_literal(self) -> None:
        text = self.text
        j = self.i + 1
        if j < len(text) and text[j] == "\\":
            found = _CHAR_ESCAPE.match(text, j)
            j = found.end() if found else j + 1
        else:
            j += 1
        if j < len(text) and text[j] == "'":
            self.keep(self.i + 1)
            self.blank(j)
            self.keep(j + 1)
        else:  # not a character literal after all
            self.keep(self.i + 1)


_CHAR_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.S)


def code_only(source: str) -> str:
    """``source`` with comments and literal text replaced by spaces; same length, same line breaks."""
    blanker = _Blanker(source)
    blanker.code()
    return "".join(blanker.out)


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


# --- function definitions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Definition:
    """One function definition found in the code."""

    form: str
    """"long" (function ... end), "short" (f(x) = ...) or "anonymous" (x -> ...)."""
    name: str
    arguments: str
    """The text between the parentheses of the signature (one bare argument for ``x -> ...``)."""
    wheres: tuple[str, ...]
    """The where-clauses after the signature, each without its keyword (``{T<:Real}``, ``T``)."""
    inline: bool
    """Marked ``@inline`` before the definition, or as the first statement of a long-form body."""
    noinline: bool
    line: int


def _match_bracket(code: str, start: int) -> int:
    """The index just after the bracket that closes the one at ``start`` (len(code) if unclosed)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[code[start]]]
    j = start + 1
    while j < len(code) and stack:
        c = code[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        elif c in ")]}":  # unbalanced: give up at it
            return j
        j += 1
    return j


_SPACE = re.compile(r"[ \t]*")
_SPACE_NL = re.compile(r"\s*")
_IDENT = re.compile(IDENT)
_TYPE_ATOM = re.compile(QUALIFIED)


def _skip(code: str, j: int, newlines: bool = False) -> int:
    pattern = _SPACE_NL if newlines else _SPACE
    found = pattern.match(code, j)
    return found.end() if found else j


def _type_end(code: str, j: int) -> int:
    """The end of a type expression at ``j``: ``Name``, ``A.B{...}``, ``<:T``, ``Union{...}``..."""
    j = _skip(code, j)
    if code.startswith("<:", j) or code.startswith(">:", j):
        j = _skip(code, j + 2)
    atom = _TYPE_ATOM.match(code, j)
    if atom:
        j = atom.end()
    elif j < len(code) and code[j] in "({":
        return _match_bracket(code, j)
    while j < len(code) and code[j] == "{":
        j = _match_bracket(code, j)
    return j


def _after_signature(code: str, j: int) -> tuple[int, tuple[str, ...]]:
    """Past an optional ``::ReturnType`` and any ``where`` clauses after a signature's ``)``.
    Returns the index after them and the where-clauses' text."""
    wheres: list[str] = []
    k = _skip(code, j)
    if code.startswith("::", k):
        j = _type_end(code, k + 2)
    while True:
        k = _skip(code, j)
        if not re.match(r"where\b", code[k : k + 6]):
            return j, tuple(wheres)
        start = _skip(code, k + 5)
        if start < len(code) and code[start] == "{":
            end = _match_bracket(code, start)
        else:
            end = start
            atom = _IDENT.match(code, start)
            if atom:
                end = atom.end()
                bound = re.compile(r"[ \t]*(<:|>:)").match(code, end)
                if bound:
                    end = _type_end(code, bound.end())
        wheres.append(code[start:end].strip())
        j = end


# A definition's name: ``f``, ``Base.show``, ``Base.:+``, ``(f::Foo)`` is handled apart.
_OPERATOR = r"[^\s\w(){}\[\],;\"'`#@.$]+"
_NAME = rf"(?:{IDENT}\.)*(?::?{_OPERATOR}|{IDENT})"
_MACRO = rf"(?:{IDENT}\.)*@{IDENT}"
_MACROS = rf"(?:{_MACRO}[ \t]+)*"
_LONG = re.compile(r"(?<![\w.@])function\b")
_SHORT = re.compile(rf"(?m)(?:^|;)[ \t]*(?P<macros>{_MACROS})(?P<name>{_NAME}|\([^()\n]*::[^()\n]*\))(?=\()")
_ARROW = re.compile(r"->")
_INLINE = re.compile(rf"(?<![\w@.])(?:{IDENT}\.)*@inline\b")
_NOINLINE = re.compile(rf"(?<![\w@.])(?:{IDENT}\.)*@noinline\b")
_KEYWORDS = {
    "if", "elseif", "while", "for", "return", "begin", "let", "quote", "do", "try", "catch", "else",
    "end", "global", "local", "const", "module", "using", "import", "export", "struct", "macro",
    "function", "abstract", "primitive", "mutable", "in", "isa", "where",
}  # fmt: skip


def _statement_prefix(code: str, index: int) -> str:
    """The text of the statement before ``index``: back to the line start or a ``;``."""
    start = max(code.rfind("\n", 0, index), code.rfind(";", 0, index)) + 1
    return code[start:index]


def definitions(code: str) -> list[Definition]:
    """Every function definition in ``code`` (already passed through ``code_only``), in order."""
    found: list[tuple[int, Definition]] = []
    for match in _LONG.finditer(code):
        found.append((match.start(), _long(code, match.start(), match.end())))
    for match in _SHORT.finditer(code):
        name = match.group("name")
        if name in _KEYWORDS:
            continue
        opening = match.end()
        closing = _match_bracket(code, opening)
        end, wheres = _after_signature(code, closing)
        k = _skip(code, end)
        if code[k : k + 1] == "=" and code[k + 1 : k + 2] not in ("=", ">"):
            macros = match.group("macros") or ""
            found.append(
                (
                    match.start("name"),
                    Definition(
                        form="short",
                        name=name,
                        arguments=code[opening + 1 : closing - 1],
                        wheres=wheres,
                        inline=bool(_INLINE.search(macros)),
                        noinline=bool(_NOINLINE.search(macros)),
                        line=line_of(code, match.start("name")),
                    ),
                )
            )
    for match in _ARROW.finditer(code):
        definition = _anonymous(code, match.start())
        if definition is not None:
            found.append((match.start(), definition))
    return [d for _, d in sorted(found, key=lambda pair: pair[0])]


def _long(code: str, start: int, after_keyword: int) -> Definition:
    prefix = _statement_prefix(code, start)
    j = _skip(code, after_keyword)
    name_match = re.compile(_NAME).match(code, j)
    name = ""
    if code[j : j + 1] == "(":  # anonymous ``function (x) ... end`` or a callable ``function (f::Foo)(x)``
        close = _match_bracket(code, j)
        if code[close : close + 1] == "(":
            name, j = code[j:close], close
    elif name_match:
        name, j = name_match.group(0), name_match.end()
        j = _skip(code, j)
        while code[j : j + 1] == "{":  # a constructor's ``Point{T}(x) where T``
            j = _match_bracket(code, j)
    arguments, body = "", j
    wheres: tuple[str, ...] = ()
    if code[j : j + 1] == "(":
        closing = _match_bracket(code, j)
        arguments = code[j + 1 : closing - 1]
        body, wheres = _after_signature(code, closing)
    first = code[_skip_separators(code, body) :]
    return Definition(
        form="long",
        name=name,
        arguments=arguments,
        wheres=wheres,
        inline=bool(_INLINE.search(prefix) or _INLINE.match(first)),
        noinline=bool(_NOINLINE.search(prefix) or _NOINLINE.match(first)),
        line=line_of(code, start),
    )


def _skip_separators(code: str, j: int) -> int:
    while j < len(code) and (code[j].isspace() or code[j] == ";"):
        j += 1
    return j


_LAMBDA_ARGUMENT = re.compile(rf"((?:{IDENT})?(?:::[\w.{{}}<:, ]+)?)$")


def _anonymous(code: str, arrow: int) -> Definition | None:
    """The anonymous function whose ``->`` is at ``arrow``: ``(x, y) -> ...`` or ``x::T -> ...``."""
    j = arrow
    while j > 0 and code[j - 1] in " \t":
        j -= 1
    if j > 0 and code[j - 1] == ")":
        depth, k = 0, j - 1
        while k >= 0:
            if code[k] in ")]}":
                depth += 1
            elif code[k] in "([{":
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        if k < 0 or code[k] != "(":
            return None
        if k > 0 and (_is_ident_char(code[k - 1]) or code[k - 1] in ")]}"):
            return None  # ``f(x) -> ...`` is not an anonymous function's argument list
        arguments, start = code[k + 1 : j - 1], k
    else:
        single = _LAMBDA_ARGUMENT.search(code[:j])
        if not single or not single.group(1).strip():
            return None
        arguments, start = single.group(1).strip(), single.start(1)
    return Definition(
        form="anonymous",
        name="",
        arguments=arguments,
        wheres=(),
        inline=False,
        noinline=False,
        line=line_of(code, start),
    )


# --- argument types ---------------------------------------------------------------------------------


def split_top(text: str, separators: str = ",;") -> list[str]:
    """``text`` split at separators that are not inside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c in separators and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def argument_type(argument: str) -> str | None:
    """The declared type of one argument (``x::T = 1`` gives ``T``, ``::Type{Int}`` gives
    ``Type{Int}``, ``xs::Int...`` gives ``Int``), or None when it has none."""
    depth, j = 0, 0
    while j < len(argument):
        c = argument[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and argument.startswith("::", j):
            end = _type_end(argument, j + 2)
            return argument[j + 2 : end].strip() or None
        elif depth == 0 and c == "=":
            return None  # a default value with no annotation before it
        j += 1
    return None


CONCRETE_TYPES = frozenset(
    {
        "Int", "Int8", "Int16", "Int32", "Int64", "Int128",
        "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "UInt128",
        "Float16", "Float32", "Float64", "BigInt", "BigFloat",
        "ComplexF16", "ComplexF32", "ComplexF64",
        "Bool", "Char", "String", "Symbol",
    }
)  # fmt: skip
"""Base's concrete types: an argument declared as one of them accepts nothing else."""
CONCRETE_CONTAINERS = frozenset(
    {
        "Vector", "Matrix", "Array", "Dict", "Set", "BitVector", "BitMatrix", "BitArray",
        "UnitRange", "StepRange", "SubString",
    }
)  # fmt: skip
"""Base's concrete container families: whatever their parameters, only that one storage is accepted
(``AbstractVector`` accepts a Vector, a range, a view...)."""


def concrete_parts(type_expression: str) -> list[str]:
    """The concrete types a type expression names: ``Vector{Int}`` gives ``["Vector", "Int"]``,
    ``AbstractVector{<:Real}`` gives none. ``Type{...}`` (dispatch on a type itself) is skipped."""
    text = re.sub(r"(?<![\w.])(?:Core\.|Base\.)+", "", type_expression)
    found: list[str] = []
    j = 0
    while j < len(text):
        atom = _TYPE_ATOM.match(text, j)
        if atom is None:
            j += 1
            continue
        name = atom.group(0)
        j = atom.end()
        if name == "Type" and text[j : j + 1] == "{":
            j = _match_bracket(text, j)
            continue
        if name in CONCRETE_TYPES or name in CONCRETE_CONTAINERS:
            found.append(name)
    return found


@dataclass(frozen=True)
class ConcreteArgument:
    definition: str
    argument: str
    concrete: list[str]
    line: int


def concrete_arguments(code: str) -> list[ConcreteArgument]:
    """Each argument (keyword arguments too) whose declared type is or is built on a concrete type,
    and each where-clause parameter bounded by one (``where T<:Float64`` allows only Float64)."""
    found: list[ConcreteArgument] = []
    for definition in definitions(code):
        label = definition.name or "an anonymous function"
        for argument in split_top(definition.arguments):
            declared = argument_type(argument)
            if declared is None:
                continue
            concrete = concrete_parts(declared)
            if concrete:
                found.append(ConcreteArgument(label, argument, concrete, definition.line))
        parameters = [
            p
            for clause in definition.wheres
            for p in split_top(clause[1:-1] if clause[:1] == "{" else clause)
        ]
        for parameter in parameters:
            bound = re.search(r"<:(.*)$", parameter)
            if bound:
                concrete = concrete_parts(bound.group(1))
                if concrete:
                    found.append(ConcreteArgument(label, f"where {parameter}", concrete, definition.line))
    return found


# --- the children's specialties ---------------------------------------------------------------------

_TYPE_PARAMETERS = [
    (re.compile(r"(?<![\w.])where\b"), "a where-clause"),
    (re.compile(r"(?<![\w.])(?:mutable[ \t]+)?struct[ \t]+[A-Za-z_]\w*[ \t]*\{"), "a parametric struct"),
    (re.compile(r"(?<![\w.])abstract[ \t]+type[ \t]+[A-Za-z_]\w*[ \t]*\{"), "a parametric abstract type"),
]


def type_parameters(code: str) -> list[tuple[str, int]]:
    """Where the code declares type parameters: where-clauses and parametric structs or abstract
    types, as (what, line)."""
    found = [
        (what, line_of(code, m.start())) for pattern, what in _TYPE_PARAMETERS for m in pattern.finditer(code)
    ]
    return sorted(found, key=lambda pair: pair[1])


TIMING = re.compile(
    rf"(?<![\w@.])(?:{IDENT}\.)*@(?:time|timev|timed|elapsed|btime|belapsed|benchmark)\b|(?<![\w.])time_ns\("
)
"""Base's timing macros (``@time``, ``@timev``, ``@timed``, ``@elapsed``), BenchmarkTools'
(``@btime``, ``@belapsed``, ``@benchmark``) and a ``time_ns()`` stopwatch."""


def timings(code: str) -> list[tuple[str, int]]:
    return [(m.group(0), line_of(code, m.start())) for m in TIMING.finditer(code)]
