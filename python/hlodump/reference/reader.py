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
from .._typing import OnError, Source, renamed_parameter
from ..io.paths import MAX_FILES, expand_with_dumps
from . import files as file_names
from .formats import FORMATS, format_by_name, format_of, formats_for_tables
from .lines import check_line_count, split_lines

__all__ = ["read_arrow", "FileContext", "Sink", "split_lines", "HLO_TABLES",
           "BUFFER_ASSIGNMENT_TABLES", "parsed_kinds"]

HLO_TABLES = format_by_name("hlo_module").tables
BUFFER_ASSIGNMENT_TABLES = format_by_name("buffer_assignment").tables


def parsed_kinds(tables: Sequence[str] | None) -> set[str]:
    """The content kinds that a read with ``tables=`` parses: those whose format can produce a
    requested table (every parsed kind when ``tables`` is None or names ``errors``)."""
    names = formats_for_tables(tables)
    return {c for f in FORMATS if f.name in names for c in f.contents}


class _Stop(Exception):
    """Internal: abandon the current file after a collected error the parser cannot pass."""


@dataclass
class Sink:
    """Rows of every table for one read, plus the error policy."""

    on_error: str = "raise"
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {n: [] for n in SCHEMAS})
    #: ``strict=True``: what a newer XLA prints is an error, not a ``notes`` row.
    strict: bool = False
    #: (file, kind, token) of every ``notes`` row so far: one note per file and token.
    notes_seen: set[tuple[int, str, str]] = field(default_factory=set)

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.rows[table].append(row)


@dataclass
class FileContext:
    """What a format parser needs to know about the file it parses."""

    file_id: int
    path: str
    sink: Sink
    #: The file's name gives its module number (``files.module_id``): XLA wrote it, so what XLA
    #: always prints must be there (an HLO module's ENTRY computation). Rust: ``FileCtx::xla_named``.
    xla_named: bool = False

    def add(self, table: str, row: dict[str, Any]) -> None:
        row["file_id"] = self.file_id
        self.sink.add(table, row)

    def error(self, line: int, column: int, message: str, text: "str | bytes" = "") -> None:
        """Report a problem at ``line``/``column`` (1-based). Raises in strict mode."""
        text, message = error_text(text), error_text(message)
        if self.sink.on_error == "raise":
            raise ParseError(self.path, line, column, message, text)
        # int32 columns: every line fits (`check_line_count`); a column past the end of a line
        # of 2**31 - 1 bytes (the longest read) is shown as 2**31 - 1 (Rust: driver.rs)
        self.sink.add(
            "errors",
            {"file_id": self.file_id, "line": min(line, I32_MAX), "column": min(column, I32_MAX),
             "message": message, "text": text},
        )


    def has_errors(self) -> bool:
        """Whether this file has an ``errors`` row yet (its rows come last: files are read one
        after the other)."""
        errors = self.sink.rows["errors"]
        return bool(errors) and errors[-1]["file_id"] == self.file_id

    def note(self, line: int, line_text: str, column: int, kind: str, token: str, text: str,
             message: str) -> None:
        """Something this version does not know in a line whose structure it does (a newer
        XLA): one ``notes`` row per file, kind and token, or an error in strict mode (Rust:
        ``FileCtx::note``)."""
        if self.sink.strict:
            self.error(line, column, f"{message} (strict: unknown text is an error)", line_text)
            return
        key = (self.file_id, kind, token)
        if key in self.sink.notes_seen:
            return
        self.sink.notes_seen.add(key)
        self.sink.add("notes", {"file_id": self.file_id, "line": min(line, I32_MAX),
                                "column": min(column, I32_MAX), "kind": kind,
                                "token": error_text(token), "text": error_text(text),
                                "message": message})


I32_MAX = 2**31 - 1
#: The most bytes of a line (or message) an error keeps (Rust: error.rs `MAX_ERROR_TEXT`).
MAX_ERROR_TEXT = 1 << 16


# The protos XLA names by what they hold: (name ending, the content it must have, what that
# content starts with) (Rust: read.rs, NAMED_PROTOS).
_HLO_PROTO_START = "an HloProto or HloModuleProto: 0a <len> [0a <len>] NAME [12 <len> NAME] 1a <len> 0a <len> NAME"
_REPORT_PROTO_START = "a memory-usage report: 0a <len> 08 <varint> (10|1a)"
NAMED_PROTOS = ((".hlo.pb", "hlo_proto", _HLO_PROTO_START), (".hlo.pb.gz", "hlo_proto", _HLO_PROTO_START),
                ("-memory-usage-report.pb", "memory_usage_report_proto", _REPORT_PROTO_START),
                ("-memory-usage-report.pb.gz", "memory_usage_report_proto", _REPORT_PROTO_START))


def not_the_proto_named(shown: str, content: str, data: bytes) -> "str | None":
    """A proto whose name says what it holds and whose first bytes are not that (empty, damaged,
    another protobuf): the error's message (never a file of kind 'other' in silence)."""
    for ending, kind, expected in NAMED_PROTOS:
        if shown.endswith(ending):
            if content == kind:
                return None
            first = " ".join(f"{b:02x}" for b in data[:16]) or "none (an empty file)"
            return (f"not a {kind} file, though its name ends with {ending}: expected {expected}; "
                    f"the first bytes are {first}")
    return None


def error_text(text: "str | bytes") -> str:
    """At most ``MAX_ERROR_TEXT`` bytes of ``text``, then "… (N bytes)" (the whole length).
    Bytes (a line that is not UTF-8) are cut first, then decoded with U+FFFD, as Rust does."""
    if isinstance(text, bytes):
        if len(text) <= MAX_ERROR_TEXT:
            return text.decode("utf-8", "replace")
        return text[:MAX_ERROR_TEXT].decode("utf-8", "replace") + f"… ({len(text)} bytes)"
    if len(text) * 4 <= MAX_ERROR_TEXT:  # cheap: no encoding for short texts
        return text
    b = text.encode("utf-8", "surrogateescape")
    if len(b) <= MAX_ERROR_TEXT:
        return text
    return b[:MAX_ERROR_TEXT].decode("utf-8", "replace") + f"… ({len(b)} bytes)"


@renamed_parameter("path", "source")
def read_arrow(
    source: Source,
    tables: Sequence[str] | None = None,
    on_error: OnError = "raise",
    string_view: bool | None = None,
    follow_links: bool = False,
    max_files: int = MAX_FILES,
    strict: bool = False,
) -> Dump:
    """Parse a file, a directory (recursively), a glob or a list of paths into a ``Dump``.

    ``tables``: as ``hlodump.read_arrow``: only files whose format can produce a requested table
    are parsed (HLO text: modules, computations, instructions, stack_frames, custom_calls; the
    buffer-assignment family: allocations … totals); ``files``, ``errors`` and ``notes`` always
    come back,
    ``errors`` covering only the files that were parsed, ``files.parsed`` false for the others
    (naming ``errors`` parses every format).
    """
    if on_error not in ("raise", "collect"):
        raise ValueError("on_error must be 'raise' or 'collect'")
    if tables is not None:
        unknown = set(tables) - set(SCHEMAS)
        if unknown:
            raise ValueError(f"unknown tables: {sorted(unknown)}")
    sink = Sink(on_error, strict=strict)
    parse = parsed_kinds(tables)
    from ..io.plan import Plan, _mark_duplicates, _mark_numbers_too_large, open_archives

    plan = Plan(max_files=max_files)
    for inp, dump in zip(*expand_with_dumps(source, follow_links, max_files)):
        plan.add(inp, dump)
    open_archives(plan)  # a tar of a dump directory: one input per member, its bytes in memory
    _mark_numbers_too_large(plan)
    _mark_duplicates(plan, None, on_error)  # as hlodump.io.plan.Plan.load does
    for file_id, i in enumerate(plan.inputs):
        dump, data = i.dump, i.origin
        _read_one(file_id, i.path, i.shown, i.explicit, sink, parse, i.error, data if isinstance(data, bytes) else None)
        sink.rows["files"][-1]["dump"] = dump
    out = {}
    for name in SCHEMAS:
        if tables is not None and name not in tables and name not in ("files", "errors", "notes"):
            continue
        out[name] = pa.Table.from_pylist(sink.rows[name], schema=schema(name, string_view is not False))
    return Dump._complete(out, list(tables) if tables is not None else None, string_view)


def _read_one(file_id: int, full: str, shown: str, explicit: bool, sink: Sink, parse: set[str],
              preset: str | None = None, member: bytes | None = None) -> None:
    row = file_names.classify_path(shown)
    ctx = FileContext(file_id, shown, sink, xla_named=row["module_id"] is not None)
    row.update(file_id=file_id, path=shown, size_bytes=0, parsed=False, error=None, content_kind=None)
    if preset is not None:  # the walk decided: not read (see paths.expand)
        row["error"] = preset
        sink.add("files", row)
        return
    try:
        if member is not None:  # a tar member, already read (and decompressed): plan.archive_members
            data = member
        else:
            # Never open what is not a regular file: opening a FIFO blocks forever.
            if not stat.S_ISREG(os.stat(full).st_mode):
                raise OSError("not a regular file")
            data = read_regular(full, nofollow=not explicit)
            from ..io.plan import compression_of, decompressed

            if compression_of(shown) is not None:  # as hlodump.io.plan.Plan.load does
                data = bytes(decompressed(full, shown))
    except OSError as e:
        if explicit:
            raise
        row["error"] = f"{_error_class(e)}: {e.strerror or e}"
        sink.add("files", row)
        return
    row["size_bytes"] = len(data)
    content = file_names.sniff(data)
    row["content_kind"] = content
    fmt = format_of(content)
    if row["kind"] == "other" and (fmt is not None or content == "debug_options"):
        row["kind"] = content
    sink.add("files", row)
    named = file_names.classify_path(shown)
    wrong = not_the_proto_named(shown, content, data)
    if wrong is not None:
        ctx.error(1, 1, wrong)
        return
    if len(data) == 0 and named["kind"] != "other":
        # XLA writes no empty dump file: one whose name says it is a dump was cut short
        ctx.error(1, 1, f"empty file (0 bytes), though its name says {named['kind']}: XLA writes no empty dump "
                        "files (cut short, or still being written?)")
        return
    if fmt is None and content == "unknown" and (explicit or named["kind"] != "other") \
            and not file_names.is_side_output(shown, named):
        _not_a_dump(data, explicit, file_names.classify_path(shown)["kind"], ctx)
        return
    if content not in parse:  # not a format we parse, or none of its tables was requested
        return
    assert fmt is not None
    row["parsed"] = True
    data = data[file_names.text_start(data):]  # XLA never writes a byte-order mark
    check_line_count(data, shown)  # line numbers are int32 columns
    lines = None if fmt.binary else split_lines(data, ctx, lone_cr=fmt.log)
    try:
        fmt.parse(lines, ctx, data)
    except _Stop:
        pass


def read_regular(path: str, nofollow: bool) -> bytes:
    """The bytes of ``path``, opened so that nothing swapped in since it was checked can block
    or mislead: ``O_NONBLOCK`` (a FIFO does not wait for a writer), ``O_NOFOLLOW`` for entries
    found by walking, and ``fstat`` after opening (anything but a regular file is an error)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _not_a_dump(data: bytes, explicit: bool, name_kind: str, ctx: FileContext) -> None:
    """A file the user named, or whose name says it is a dump, that is none of our formats."""
    start = file_names.text_start(data)
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    first = data[start:min(end, start + 200)]
    try:
        text = first.decode("utf-8")
        bad = b"\0" in first
    except UnicodeDecodeError:
        text, bad = first.decode("utf-8", "replace"), True
    if bad:
        looks = "binary or non-UTF-8 data"
    elif "\r" in text:
        looks = "text with CR-only line ends"
    else:
        looks = _rust_debug_str(text)
    why = "named explicitly" if explicit else f"its name says {name_kind}"
    known = ", ".join(f.name for f in FORMATS)
    ctx.error(1, 1, f"not an XLA dump file ({why}): the first line is {looks}; known formats: {known}",
              first.decode("utf-8", "replace"))


def _rust_debug_str(s: str) -> str:
    """``format!("{:?}", s)`` of Rust, for the same message from both parsers."""
    out = ['"']
    for ch in s:
        e = _RUST_ESCAPES.get(ch)
        out.append(e if e is not None else "\\u{%x}" % ord(ch) if ord(ch) < 0x20 or ord(ch) == 0x7f else ch)
    out.append('"')
    return "".join(out)


#: Rust's `Debug` escapes of a `str` (other control characters: `\u{…}`; non-ASCII is kept).
_RUST_ESCAPES = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


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
