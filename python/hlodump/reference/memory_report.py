"""Reference parser for the memory-usage report (FORMATS.md §2.8), every layout XLA printed.

* allocation list (jax 0.4.35 – 0.9): ``Total bytes used: N (H)``, ``Allocations sorted by
  size:`` with one row per allocation (cumulative size and percentage, bytes remaining, the
  allocation line ``allocation N: size H[, flag…]:``), then ``Allocations sorted by size with
  their values:``: each allocation line, followed (when it holds several values) by its
  offset-group table indented with a tab;
* table form (jax 0.10): ``Memory Space: NAME (color=C)``, ``Total bytes: N (H)`` and an
  offset-group table per allocation (indented with two spaces; which allocation is not
  printed);
* protobuf text (``memory_space_allocation_entries { … }``).

``row_kind`` is ``allocation`` for a row that describes one allocation (allocation list,
protobuf entries) and ``offsets`` for a row of an offset-group table. Written from the grammar
in FORMATS.md §2.8; the Rust core (``src/memory_report``) must give the same rows and errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .allocation_line import allocation_line, unknown_flag_note
from .lex import I32_MAX, I64_MAX, _Bad, _column, _Cursor, _to_int

__all__ = ["parse"]

_LIST_HEADER = "cumulative_size; total_size - cumulative_size; allocation"


def human_is_rounded(text: str, pos: int) -> bool:
    """Whether the ``HumanReadableNumBytes`` text at ``pos`` was rounded: any unit above ``B``
    prints one or two decimals (``29.49MiB``), so its byte count is approximate."""
    n = len(text[pos:]) - len(text[pos:].lstrip("0123456789.-"))
    return not text.startswith("B", pos + n)
_TABLE_HEADER_RE = re.compile(r"[ \t]*cumulative_size; +size; +offset; +used_by_n_values; +shapes_list")
_TABLE_RULE_RE = re.compile(r"[ \t]+-+")


def _ws(text: str) -> int:
    """Length of the leading spaces and tabs."""
    return len(text) - len(text.lstrip(" \t"))


def _percentage(cur: _Cursor) -> int | None:
    """``%3.0f`` of a percentage; ``nan`` / ``-nan`` (a total of 0) is None."""
    cur.spaces()
    if cur.accept("nan") or cur.accept("-nan"):
        return None
    return cur.uint("the percentage", I32_MAX)


def _cumulative_prefix(text: str) -> tuple[_Cursor, int, int | None]:
    """``R(HUMAN)(R3(PERCENT)%); `` after the indentation, which starts every table row:
    (cursor after it and its padding, cumulative bytes, percent)."""
    cur = _Cursor(text, _ws(text))
    cumulative = cur.human("the cumulative size")
    cur.expect("(")
    percent = _percentage(cur)
    cur.expect("%); ")
    cur.spaces()
    return cur, cumulative, percent


def _rest_line(text: str, start: int, what: str) -> tuple[int, int]:
    """``The rest N WHAT are less than P% of the total size and not shown.`` from ``start``."""
    cur = _Cursor(text, start + len("The rest "))
    rest = cur.uint(f"the number of {what} not shown")
    cur.expect(f" {what} are less than ")
    percent = cur.uint("the percentage")
    cur.expect("% of the total size and not shown.")
    cur.end("the cut-off line")
    return rest, percent


class _Parser:
    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        # "idle" | "space" | "list" | "values" | "proto"
        self.layout = "idle"
        # table forms
        self.space: str | None = None
        self.color: int | None = None
        self.tables = 0
        self.sub = "outside"  # "outside" | "rule" | "rows" | "cut"
        self.allocation: tuple[int, int] | None = None  # (index, color) in "values"
        # allocation list
        self.list_sub = "header"  # "header" | "rule" | "rows"
        self.rank = 0
        # protobuf text
        self.proto_tokens: list[_ProtoToken] = []
        self.proto_depth = 0
        self.proto_broken = False
        # a file cut short (FORMATS.md §2.8): rows of the current offset table, sections seen,
        # the last non-empty line (number, text)
        self.rows_in_table = 0
        self.saw_list = self.saw_with_values = False
        self.last: tuple[int, str] = (0, "")
        self.had_error = False  # a line was reported: the file's end is not judged again
        # Tables cut between their rows (XLA prints rows until they add up, or says what it
        # left out in a `The rest …` line right after the last): the last row (line, percent)
        # of the offset table and (line, bytes remaining) of the allocation list being read;
        # (line, message) of the tables that ended short. Rust: memory_report/checks.rs.
        self.table_last: tuple[int, int | None] | None = None
        self.list_last: tuple[int, int | None] | None = None
        self.short_tables: list[tuple[int, str]] = []

    def table_over(self) -> None:
        """The offset table (or allocation list) being read is over: its last row must close it."""
        if self.table_last is not None and self.table_last[1] is not None and self.table_last[1] < 100:
            self.short_tables.append((self.table_last[0], f"this table's rows stop at {self.table_last[1]}% of its "
                                      "total, with no 'The rest N values …' line: the file is cut short"))
        if self.list_last is not None and self.list_last[1] is not None and self.list_last[1] > 0:
            self.short_tables.append((self.list_last[0], f"the allocation list stops with {self.list_last[1]:,} bytes "
                                      "not listed and no 'The rest N allocations …' line: the file is cut short"))
        self.table_last = self.list_last = None

    def run(self, lines: list[str | None]) -> None:
        for lineno, text in enumerate(lines, start=1):
            if text is None:
                continue
            try:
                self.line(lineno, text)
            except _Bad as bad:
                self.had_error = True
                self.ctx.error(lineno, _column(text, bad.pos), bad.message, text)
        if self.layout == "proto" and self.proto_depth > 0:
            tok = self.proto_tokens[0]
            self.ctx.error(tok.line, _column(tok.text, tok.pos),
                           "file ended inside a memory_space_allocation_entries block "
                           "(missing '}')", tok.text)
        what = None if self.had_error else self.cut_short()
        if what is not None:
            line, text = self.last
            self.ctx.error(line, len(text.encode()) + 1, f"the file ends {what} (cut short)", text)
        self.table_over()
        if not self.ctx.has_errors():  # a file with errors is known to be incomplete
            for line, message in self.short_tables:
                self.ctx.error(line, 1, message)

    def cut_short(self) -> str | None:
        """What a file that ends here lacks, when every complete report has it."""
        lay, sub = self.layout, self.sub
        if lay == "space" and self.tables == 0:
            return "after the memory space's header: its allocation tables are missing"
        if lay in ("space", "values") and sub == "rule":
            return "after a table's column header: its dashed rule and rows are missing"
        if lay in ("space", "values") and sub == "rows" and self.rows_in_table == 0:
            return "after a table's dashed rule: its rows are missing"
        if lay == "list" and (self.list_sub in ("header", "rule") or self.rank == 0):
            return "before the rows of 'Allocations sorted by size:'"
        if lay == "values" and self.allocation is None and self.tables == 0:
            return "after 'Allocations sorted by size with their values:': its allocations are missing"
        if self.saw_list and not self.saw_with_values:
            return "before 'Allocations sorted by size with their values:', which follows the allocation list"
        return None

    def line(self, lineno: int, text: str) -> None:
        if self.layout == "proto" and self.proto_depth > 0:
            self.proto_line(lineno, text)  # inside a message every line belongs to it
            return
        if text == "":
            self.table_over()
            if self.layout in ("space", "values"):
                self.sub = "outside"
            elif self.layout == "list" and self.list_sub != "header":
                self.layout = "idle"
            return
        self.last = (lineno, text)
        if self.section_header(lineno, text):
            self.table_over()
            return
        if self.layout == "space":
            self.space_line(lineno, text)
        elif self.layout == "list":
            self.list_line(lineno, text)
        elif self.layout == "values":
            self.values_line(lineno, text)
        elif self.layout == "proto":
            self.proto_line(lineno, text)
        else:
            raise _Bad(0, "expected a memory-usage report section (Total bytes used: …, "
                          "Allocations sorted by size:, Allocations sorted by size with their "
                          "values:, Memory Space: …, memory_space_allocation_entries {) or an "
                          "empty line")

    def section_header(self, lineno: int, text: str) -> bool:
        if text.startswith("Total bytes used: "):
            self.layout = "idle"
            total = _Cursor(text, len("Total bytes used: ")).bytes_and_human("the total line")
            self.total("total_bytes_used", None, total, lineno)
        elif text == "Allocations sorted by size:":
            self.layout, self.list_sub, self.rank = "list", "header", 0
            self.saw_list = True
        elif text == "Allocations sorted by size with their values:":
            self.layout, self.allocation, self.tables, self.sub = "values", None, 0, "outside"
            self.saw_with_values = True
        elif text.startswith("Memory Space: "):
            self.memory_space_line(text)
        elif text.startswith("memory_space_allocation_entries"):
            self.layout, self.proto_tokens, self.proto_depth, self.proto_broken = "proto", [], 0, False
            self.proto_line(lineno, text)
        else:
            return False
        return True

    def total(self, key: str, color: int | None, value: int, lineno: int) -> None:
        self.ctx.add("totals", {"section": "memory_report", "key": key, "color": color,
                                "value": value, "line": lineno})

    # ------------------------------------------------------------------ table form (§2.8.1)
    def memory_space_line(self, text: str) -> None:
        self.layout = "idle"
        marker = text.rfind(" (color=")
        if marker < 0:
            raise _Bad(len(text), "expected ' (color=N)' after the memory space name")
        cur = _Cursor(text, marker + len(" (color="))
        color = cur.uint("the color", I32_MAX)
        cur.expect(")")
        cur.end("the memory space line")
        self.layout, self.space, self.color, self.tables, self.sub = (
            "space", text[len("Memory Space: "):marker] if marker > len("Memory Space: ") else "",
            color, 0, "outside")

    def space_line(self, lineno: int, text: str) -> None:
        if text.startswith("Total bytes: "):
            total = _Cursor(text, len("Total bytes: ")).bytes_and_human("the total line")
            self.total("total_bytes", self.color, total, lineno)
            return
        self.table_line(lineno, text, self.space, self.color, None, "'Total bytes: N (…)', ")

    def table_line(self, lineno: int, text: str, space: str | None, color: int | None,
                   allocation: int | None, other: str) -> None:
        """A line of an offset-group table: header, dashed rule, row or cut-off line."""
        body = _ws(text)
        if _TABLE_HEADER_RE.fullmatch(text):
            self.table_over()
            self.tables += 1
            self.sub = "rule"
            self.rows_in_table = 0
            return
        if body > 0 and _TABLE_RULE_RE.fullmatch(text):
            if self.sub != "rule":
                raise _Bad(0, "dashed rule not after the column header")
            self.sub = "rows"
            return
        if text.startswith("The rest ", body):
            if self.sub != "rows":
                raise _Bad(0, "'The rest N values …' outside an allocation table")
            rest, percent = _rest_line(text, body, "values")
            self.table_last = None  # cut on purpose
            self.total("rest_values", color, rest, lineno)
            self.total("rest_percent", color, percent, lineno)
            self.sub = "cut"
            return
        if self.sub == "rows":
            self.group_row(lineno, text, space, color, allocation)
            self.rows_in_table += 1
            return
        raise _Bad(0, f"expected {other}the column header 'cumulative_size; size; offset; "
                      "used_by_n_values; shapes_list', its dashed rule, a table row, or an "
                      "empty line")

    def group_row(self, lineno: int, text: str, space: str | None, color: int | None,
                  allocation: int | None) -> None:
        """``R9(HUMAN)(R3%); R10(HUMAN); R12(UINT); R16(UINT); SHAPES`` after the indent."""
        cur, cumulative, percent = _cumulative_prefix(text)
        rounded = human_is_rounded(text, cur.pos)
        size = cur.human("the size")
        cur.expect("; ")
        cur.spaces()
        offset = cur.uint("the offset")
        cur.expect("; ")
        cur.spaces()
        count = cur.uint("used_by_n_values", I32_MAX)
        cur.expect("; ")
        self.ctx.add("memory_report", {
            "memory_space": space, "color": color, "table": self.tables - 1,
            "allocation": allocation, "cumulative_bytes": cumulative, "percent": percent,
            "size": size, "size_is_rounded": rounded, "offset": offset, "used_by_n_values": count,
            "shapes": cur.rest(),
            "row_kind": "offsets", "remaining_bytes": None, "flags": None, "line": lineno,
        })
        self.table_last = (lineno, percent)

    # ------------------------------------------------------------------ allocation list (§2.8.2)
    def list_line(self, lineno: int, text: str) -> None:
        if self.list_sub == "header":
            if text != _LIST_HEADER:
                raise _Bad(0, f"expected the column header {_LIST_HEADER!r}")
            self.list_sub = "rule"
        elif self.list_sub == "rule":
            if text.strip("-"):
                raise _Bad(0, "expected the dashed rule under the column header")
            self.list_sub = "rows"
        elif text.startswith("The rest "):
            rest, percent = _rest_line(text, 0, "allocations")
            self.list_last = None  # cut on purpose
            self.total("rest_allocations", None, rest, lineno)
            self.total("rest_percent", None, percent, lineno)
            self.layout = "idle"
        else:
            self.list_row(lineno, text)
            self.rank += 1

    def list_row(self, lineno: int, text: str) -> None:
        """``R10(HUMAN)(R3%); R10(HUMAN); allocation N: size H[, FLAG…]:``"""
        cur, cumulative, percent = _cumulative_prefix(text)
        remaining = cur.human("the bytes remaining (total_size - cumulative_size)")
        cur.expect("; ")
        a = allocation_line(text, cur.pos, human_size=True)
        rounded = human_is_rounded(text, text.index(": size ", cur.pos) + 7)
        self.add_allocation(lineno, self.rank, a, cumulative, percent, remaining, rounded)
        self.list_last = (lineno, remaining)
        self.unknown_flags(lineno, text, a)

    def unknown_flags(self, lineno: int, text: str, a: dict[str, Any]) -> None:
        """A ``notes`` row per allocation flag a newer XLA prints (kept raw in ``flags``)."""
        for at, raw in a["unknown_flags"]:
            self.ctx.note(lineno, text, _column(text, at), *unknown_flag_note(raw))

    def add_allocation(self, lineno: int, rank: int, a: dict[str, Any], cumulative: int | None,
                       percent: int | None, remaining: int | None, rounded: bool) -> None:
        self.ctx.add("memory_report", {
            "memory_space": None, "color": a["color"], "table": rank,
            "allocation": a["allocation"], "cumulative_bytes": cumulative, "percent": percent,
            "size": a["size"], "size_is_rounded": rounded, "offset": None, "used_by_n_values": None,
            "shapes": None,
            "row_kind": "allocation", "remaining_bytes": remaining, "flags": a["flags"],
            "line": lineno,
        })

    # ------------------------------------------------------------------ with their values
    def values_line(self, lineno: int, text: str) -> None:
        if text.startswith("allocation "):
            self.table_over()  # the next allocation's table follows
            self.allocation, self.sub = None, "outside"
            a = allocation_line(text, 0, human_size=True)
            self.allocation = (a["allocation"], a["color"])
            self.unknown_flags(lineno, text, a)
            return
        index, color = self.allocation if self.allocation else (None, None)
        tables_before = self.tables
        self.table_line(lineno, text, None, color, index, "'allocation N: size …:', ")
        if self.tables != tables_before and self.allocation is None:
            raise _Bad(0, "an offset table before any 'allocation N: size …:' line")

    # ------------------------------------------------------------------ protobuf text (§2.8.3)
    def proto_line(self, lineno: int, text: str) -> None:
        """Tokenise; when a top-level message closes, read it (errors drop that message)."""
        try:
            tokens = _proto_tokens(lineno, text)
        except _Bad:
            # The message being read (if any: a bad line between messages is only reported)
            # cannot be trusted any more.
            if self.proto_depth > 0 or self.proto_tokens:
                self.proto_broken = True
            raise
        for tok in tokens:
            if self.proto_depth == 0:
                # Outside a message only "NAME [:] {" may come.
                expected = ["ident", ":", "{"][len(self.proto_tokens)]
                if tok.kind != expected and not (expected == ":" and tok.kind == "{"):
                    self.proto_tokens = []
                    raise _Bad(tok.pos, "expected 'memory_space_allocation_entries {'")
            self.proto_tokens.append(tok)
            if tok.kind == "{":
                self.proto_depth += 1
            elif tok.kind == "}":
                if self.proto_depth == 0:
                    raise _Bad(tok.pos, "'}' without a matching '{'")
                self.proto_depth -= 1
                if self.proto_depth == 0:
                    message, self.proto_tokens = self.proto_tokens, []
                    broken, self.proto_broken = self.proto_broken, False
                    if not broken:
                        self.proto_message(message)

    def proto_message(self, tokens: list[_ProtoToken]) -> None:
        try:
            reader = _ProtoReader(tokens)
            name_tok = reader.next()
            if name_tok.value != "memory_space_allocation_entries":
                raise _ProtoBad(name_tok, "expected 'memory_space_allocation_entries {'")
            fields = reader.message(_SPACE_FIELDS)
            reader.done()
        except _ProtoBad as bad:
            tok = bad.token
            self.ctx.error(tok.line, _column(tok.text, tok.pos), bad.message, tok.text)
            return
        color = _single(fields, "memory_space_color", 0)
        total_line = fields["total_bytes"][-1][1] if "total_bytes" in fields else name_tok.line
        self.total("total_bytes", color,
                   _single(fields, "total_bytes", 0), total_line)
        for rank, (entry, entry_line) in enumerate(fields.get("allocation_entries", [])):
            positions = [value for value, _ in entry.get("defining_positions", [])]
            self.ctx.add("memory_report", {
                "memory_space": None, "color": color, "table": rank,
                "allocation": _single(entry, "index", 0),
                "cumulative_bytes": _single(entry, "cumulative_size", 0), "percent": None,
                "size": _single(entry, "size", 0), "size_is_rounded": False, "offset": 0,
                "used_by_n_values": len(positions), "shapes": "; ".join(positions),
                "row_kind": "allocation", "remaining_bytes": None, "flags": None,
                "line": entry_line,
            })


@dataclass
class _ProtoToken:
    kind: str  # "ident", "number", "string", or the punctuation itself ("{", "}", ":")
    value: Any
    line: int
    text: str  # the whole line, for error reports
    pos: int


class _ProtoBad(Exception):
    def __init__(self, token: _ProtoToken, message: str) -> None:
        super().__init__(message)
        self.token = token
        self.message = message


_PROTO_TOKEN_RE = re.compile(
    r"\s*(?:(?P<comment>#.*)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?)"
    r"|(?P<string>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|(?P<punct>[{}:]))"
)


def _proto_tokens(lineno: int, text: str) -> list[_ProtoToken]:
    out: list[_ProtoToken] = []
    pos = 0
    while pos < len(text):
        if text[pos:].isspace():
            break
        m = _PROTO_TOKEN_RE.match(text, pos)
        if m is None:
            while text[pos] in " \t":
                pos += 1
            raise _Bad(pos, "expected a protobuf-text token (name, number, string, '{', '}', ':')")
        kind = m.lastgroup or ""  # one alternative always matched
        start = m.start(kind)
        if kind == "comment":
            break
        raw = m.group(kind)
        if kind == "punct":
            out.append(_ProtoToken(raw, raw, lineno, text, start))
        elif kind == "string":
            out.append(_ProtoToken("string", _c_unescape(raw[1:-1]), lineno, text, start))
        else:
            out.append(_ProtoToken(kind, raw, lineno, text, start))
        pos = m.end()
    return out


_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11,
                   "\\": 92, "'": 39, '"': 34, "?": 63}


def _c_unescape(s: str) -> str:
    """Protobuf text strings are C-escaped bytes (octal for non-ASCII)."""
    out = bytearray()
    i = 0
    while i < len(s):
        ch = s[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = s[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8) & 0xFF)
            i = j
        elif nxt == "x":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(s[i + 2:j] or "0", 16))
            i = j
        else:
            out += nxt.encode("utf-8")
            i += 2
    return out.decode("utf-8", "replace")


# field name → ("int" | "float" | "string" | nested field table)
_ENTRY_FIELDS: dict[str, Any] = {
    "index": "int", "size": "int", "cumulative_size": "int",
    "cumulative_percentage": "float", "defining_positions": "string",
}
_SPACE_FIELDS: dict[str, Any] = {
    "total_bytes": "int", "memory_space_color": "int32", "allocation_entries": _ENTRY_FIELDS,
}


class _ProtoReader:
    """Recursive descent over the tokens of one top-level message."""

    def __init__(self, tokens: list[_ProtoToken]) -> None:
        self.tokens = tokens
        self.i = 0

    def next(self) -> _ProtoToken:
        tok = self.tokens[self.i]  # the caller only gets whole, balanced messages
        self.i += 1
        return tok

    def peek(self) -> _ProtoToken:
        return self.tokens[self.i]

    def done(self) -> None:
        if self.i != len(self.tokens):
            raise _ProtoBad(self.tokens[self.i], "unexpected text after the message")

    def message(self, table: dict[str, Any]) -> dict[str, list[tuple[Any, int]]]:
        """``[:] { field… }`` → field name → [(value, line), …] in printed order."""
        tok = self.next()
        if tok.kind == ":":
            tok = self.next()
        if tok.kind != "{":
            raise _ProtoBad(tok, "expected '{'")
        fields: dict[str, list[tuple[Any, int]]] = {}
        while True:
            tok = self.next()
            if tok.kind == "}":
                return fields
            if tok.kind != "ident":
                raise _ProtoBad(tok, "expected a field name or '}'")
            kind = table.get(tok.value)
            if kind is None:
                raise _ProtoBad(tok, f"unknown field {tok.value!r} (expected one of "
                                     f"{', '.join(table)})")
            if isinstance(kind, dict):
                value: Any = self.message(kind)
            else:
                value = self.scalar(kind)
            fields.setdefault(tok.value, []).append((value, tok.line))

    def scalar(self, kind: str) -> Any:
        colon = self.next()
        if colon.kind != ":":
            raise _ProtoBad(colon, "expected ':' after the field name")
        tok = self.next()
        if kind == "string":
            if tok.kind != "string":
                raise _ProtoBad(tok, "expected a quoted string")
            return tok.value
        if tok.kind != "number":
            raise _ProtoBad(tok, f"expected a number ({kind})")
        if kind in ("int", "int32"):
            if not re.fullmatch(r"[-+]?[0-9]+", tok.value):
                raise _ProtoBad(tok, "expected an integer")
            limit = I32_MAX if kind == "int32" else I64_MAX
            v = _to_int(tok.value.lstrip("+-"), limit + 1)
            if v is None or (v > limit and not tok.value.startswith("-")):
                raise _ProtoBad(tok, f"integer out of range ({kind})")
            return -v if tok.value.startswith("-") else v
        return float(tok.value.rstrip("fF"))


def _single(fields: dict[str, list[tuple[Any, int]]], name: str, default: Any) -> Any:
    """A non-repeated field: proto text keeps the last value; omitted means the default."""
    values = fields.get(name)
    return values[-1][0] if values else default


# --------------------------------------------------------------------------- entry point


def parse(lines: list[str | None], ctx: Any) -> None:
    """Parse one memory-usage report; rows go to ``memory_report`` and ``totals``."""
    _Parser(ctx).run(lines)
