"""Reference reader: find the files, decode lines, dispatch each file to its format parser.

The format parsers (``buffer_assignment``, ``hlo``) receive a ``FileContext`` and the file's lines
and add rows with ``ctx.add(table, row)``; problems go through ``ctx.error(...)``, which raises
``ParseError`` (on_error="raise") or records an ``errors`` row and returns (on_error="collect").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..dump import Dump
from ..exceptions import ParseError
from ..schema import SCHEMAS, schema
from ..paths import expand_with_dumps
from . import files as file_names

__all__ = ["read_arrow", "FileContext", "Sink", "split_lines", "HLO_TABLES",
           "BUFFER_ASSIGNMENT_TABLES", "parsed_kinds"]

# Content kinds that a format parser reads.
PARSED_KINDS = {
    "hlo_module",
    "buffer_assignment",
    "buffer_assignment_values",
    "live_range",
    "memory_usage_report",
}


# The tables each format can produce (besides ``files`` and ``errors``).
HLO_TABLES = ("modules", "computations", "instructions", "stack_frames", "custom_calls")
BUFFER_ASSIGNMENT_TABLES = ("allocations", "assignments", "values", "schedule", "live_ranges", "peak",
                            "peak_breakdown", "memory_report", "totals")


def parsed_kinds(tables: Sequence[str] | None) -> set[str]:
    """The content kinds that a read with ``tables=`` parses: those whose format can produce a
    requested table (every parsed kind when ``tables`` is None or names ``errors``)."""
    if tables is None or "errors" in tables:
        return set(PARSED_KINDS)
    out = set()
    if any(t in HLO_TABLES for t in tables):
        out.add("hlo_module")
    if any(t in BUFFER_ASSIGNMENT_TABLES for t in tables):
        out |= PARSED_KINDS - {"hlo_module"}
    return out


class _Stop(Exception):
    """Internal: abandon the current file after a collected error the parser cannot pass."""


@dataclass
class Sink:
    """Rows of every table for one read, plus the error policy."""

    on_error: str = "raise"
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {n: [] for n in SCHEMAS})

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.rows[table].append(row)


@dataclass
class FileContext:
    """What a format parser needs to know about the file it parses."""

    file_id: int
    path: str
    sink: Sink

    def add(self, table: str, row: dict[str, Any]) -> None:
        row["file_id"] = self.file_id
        self.sink.add(table, row)

    def error(self, line: int, column: int, message: str, text: str = "") -> None:
        """Report a problem at ``line``/``column`` (1-based). Raises in strict mode."""
        if self.sink.on_error == "raise":
            raise ParseError(self.path, line, column, message, text)
        self.sink.add(
            "errors",
            {"file_id": self.file_id, "line": line, "column": column, "message": message, "text": text},
        )


def split_lines(data: bytes, ctx: FileContext) -> list[str | None]:
    """Split ``data`` into lines: LF separated, one trailing CR removed, decoded as UTF-8.

    A line that is not valid UTF-8 is reported at its first bad byte and becomes ``None``
    (parsers skip ``None`` lines). A final line without a newline counts; an empty last piece
    after the final newline does not.
    """
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    out: list[str | None] = []
    for i, raw in enumerate(parts, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            ctx.error(i, e.start + 1, "invalid UTF-8", raw.decode("utf-8", "replace"))
            out.append(None)
    return out


def read_arrow(
    path: Any,
    tables: Sequence[str] | None = None,
    on_error: str = "raise",
    string_view: bool = True,
) -> Dump:
    """Parse a file, a directory (recursively), a glob or a list of paths into a ``Dump``.

    ``tables``: as ``hlodump.read_arrow``: only files whose format can produce a requested table
    are parsed (HLO text: modules, computations, instructions, stack_frames, custom_calls; the
    buffer-assignment family: allocations … totals); ``files`` and ``errors`` always come back,
    ``errors`` covering only the files that were parsed, ``files.parsed`` false for the others
    (naming ``errors`` parses every format).
    """
    if on_error not in ("raise", "collect"):
        raise ValueError("on_error must be 'raise' or 'collect'")
    if tables is not None:
        unknown = set(tables) - set(SCHEMAS)
        if unknown:
            raise ValueError(f"unknown tables: {sorted(unknown)}")
    sink = Sink(on_error)
    parse = parsed_kinds(tables)
    inputs, dumps = expand_with_dumps(path)
    for file_id, ((full, shown, explicit), dump) in enumerate(zip(inputs, dumps)):
        _read_one(file_id, full, shown, explicit, sink, parse)
        sink.rows["files"][-1]["dump"] = dump
    out = {}
    for name in SCHEMAS:
        if tables is not None and name not in tables and name not in ("files", "errors"):
            continue
        out[name] = pa.Table.from_pylist(sink.rows[name], schema=schema(name, string_view))
    return Dump._complete(out, list(tables) if tables is not None else None, string_view)


def _read_one(file_id: int, full: str, shown: str, explicit: bool, sink: Sink, parse: set[str]) -> None:
    ctx = FileContext(file_id, shown, sink)
    row = file_names.classify_path(shown)
    row.update(file_id=file_id, path=shown, size_bytes=0, parsed=False, error=None, content_kind=None)
    try:
        # Never open what is not a regular file: opening a FIFO blocks forever.
        if not stat.S_ISREG(os.stat(full).st_mode):
            raise OSError("not a regular file")
        with open(full, "rb") as f:
            data = f.read()
    except OSError as e:
        if explicit:
            raise
        row["error"] = f"{_error_class(e)}: {e.strerror or e}"
        sink.add("files", row)
        return
    row["size_bytes"] = len(data)
    content = file_names.sniff(data)
    row["content_kind"] = content
    if row["kind"] == "other" and content in PARSED_KINDS | {"debug_options"}:
        row["kind"] = content
    sink.add("files", row)
    if content not in parse:  # not a format we parse, or none of its tables was requested
        return
    row["parsed"] = True
    lines = split_lines(data, ctx)
    try:
        if content == "hlo_module":
            from . import hlo

            hlo.parse_module(lines, ctx, data)
        else:
            from . import buffer_assignment

            buffer_assignment.parse(lines, ctx)
    except _Stop:
        pass


def _error_class(e: OSError) -> str:
    if isinstance(e, FileNotFoundError):
        return "FileNotFoundError"
    if isinstance(e, PermissionError):
        return "PermissionError"
    return "OSError"


def iter_nonempty(lines: Iterable[str | None]) -> Iterable[tuple[int, str]]:
    """(1-based line number, text) for every decodable line."""
    for i, s in enumerate(lines, start=1):
        if s is not None:
            yield i, s
