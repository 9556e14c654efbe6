"""The format registry of the reference parser (the Rust core's is ``src/formats/mod.rs``; a test
checks that the two agree).

One entry per format: its name, the content kinds it reads and how they are recognised
(``sniff``: ``files.sniff`` tries these rules), the tables it can fill, and its parser
``parse(lines, ctx, data)``. Adding a format: write its module, add one ``Format`` line below,
add its tables to ``hlodump.schema``. ``tests/test_files.py`` holds this registry equal to the
core's (``_core._formats()``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Format", "FORMATS", "UNPARSED", "Sniff", "format_of", "formats_for_tables"]


@dataclass(frozen=True)
class Sniff:
    """How content of a kind is recognised (FORMATS.md §1.5), by the first deciding line of a
    file (``files.sniff`` finds it) or by text anywhere in it."""

    # A first line starting with one of these is of that kind.
    prefixes: tuple[tuple[bytes, str], ...] = ()
    # (first-line prefix, exact second line, kind): the second line decides; tried first.
    second_line: tuple[tuple[bytes, bytes, str], ...] = ()
    # (test, kind): a first line the test accepts is of that kind (after every prefix).
    line: tuple[Callable[[bytes], bool], str] | None = None
    # (test, kind): a first line and the one after it (or None) that the test accepts are of
    # that kind; tried when no prefix or line test knows the first line, before the markers.
    fallback: tuple[Callable[[bytes, bytes | None], bool], str] | None = None
    # Text that makes a file whose first line is none of ours this format (a log).
    markers: tuple[bytes, ...] = ()
    # (test of the file's first bytes, kind): a binary format, tried before any line rule.
    binary: tuple[Callable[[bytes], bool], str] | None = None


@dataclass(frozen=True)
class Format:
    name: str
    contents: tuple[str, ...]
    tables: tuple[str, ...]
    parse: Callable[[list[str | None], Any, bytes], None]
    # A format found inside logs (OOM reports): a lone CR is a terminal's redraw, not an error;
    # the lines keep it and the parser splits there (formats XLA writes itself reject it).
    log: bool = False
    # A binary format: its parser gets the bytes (``parse(None, ctx, data)``), no lines.
    binary: bool = False
    sniff: Sniff = field(default_factory=Sniff)


_THUNK_LINE = re.compile(rb" *(?:[0-9]{1,18}: )?k[A-Z][A-Za-z0-9]*(?: *\t| +[^ \t]|$)")
_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _is_thunk_line(line: bytes) -> bool:
    return _THUNK_LINE.match(line) is not None


_COMP_HEADER_RE = re.compile(rb"(?:ENTRY )?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*(?:\{|\(.*->.*\{)[ \t\r\n\f]*$")
_INSTRUCTION_START_RE = re.compile(rb"[ \t]*(?:ROOT )?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*=")


def _is_hlo_module_start(first: bytes, second: bytes | None) -> bool:
    """HLO text that does not start with ``HloModule ``: ``HloModule`` after blanks (XLA's lexer
    skips them), or a module without header, as XLA's parser takes it (its test inputs are
    written so): a computation header followed by an instruction line."""
    if first.lstrip(b" \t").startswith(b"HloModule "):
        return True
    return (second is not None and _COMP_HEADER_RE.match(first) is not None
            and _INSTRUCTION_START_RE.match(second) is not None)


def _is_debug_options_line(line: bytes) -> bool:
    """``xla_<letters, digits, _>: …``: a line of a ``*.debug_options`` file."""
    if not line.startswith(b"xla_"):
        return False
    k = 4
    while k < len(line) and line[k] in _KEY_CHARS:
        k += 1
    return line[k:k + 2] == b": "


def _hlo(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import hlo

    hlo.parse_module(lines, ctx, data)


def _is_hlo_proto(data: bytes) -> bool:
    from .hlo_proto import is_hlo_proto

    return is_hlo_proto(data)


def _hlo_proto(lines: list[str | None] | None, ctx: Any, data: bytes) -> None:
    from . import hlo_proto

    hlo_proto.parse(data, ctx)


def _is_memory_report_proto(data: bytes) -> bool:
    from .memory_report_proto import is_memory_report_proto

    return is_memory_report_proto(data)


def _memory_report_proto(lines: list[str | None] | None, ctx: Any, data: bytes) -> None:
    from . import memory_report_proto

    memory_report_proto.parse(data, ctx)


def _buffer_assignment(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import buffer_assignment

    buffer_assignment.parse(lines, ctx)


def _memory_report(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import memory_report

    memory_report.parse(lines, ctx)


def _thunks(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import thunks

    thunks.parse(lines, ctx)


def _options(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import options

    options.parse(lines, ctx)


# the first lines of a ``compile_options.textproto`` (Rust: options::COMPILE_OPTIONS_STARTS)
_COMPILE_OPTIONS_STARTS = ("executable_build_options {", "argument_layouts {", "parameter_is_tupled_arguments: ")


def _is_proto_text_start(first: bytes, second: bytes | None) -> bool:
    from .options import is_proto_text_start

    return is_proto_text_start(first, second)


def _oom(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import oom

    oom.parse(lines, ctx)


FORMATS: tuple[Format, ...] = (
    Format("hlo_module", ("hlo_module",),
           ("modules", "computations", "instructions", "stack_frames", "custom_calls"), _hlo,
           sniff=Sniff(prefixes=((b"HloModule ", "hlo_module"),),
                       fallback=(_is_hlo_module_start, "hlo_module"))),
    Format("hlo_proto", ("hlo_proto",),
           ("modules", "computations", "instructions", "stack_frames", "custom_calls", "allocations",
            "assignments", "heap_trace"), _hlo_proto, binary=True,
           sniff=Sniff(binary=(_is_hlo_proto, "hlo_proto"))),
    Format("buffer_assignment", ("buffer_assignment", "buffer_assignment_values", "live_range"),
           ("allocations", "assignments", "values", "schedule", "live_ranges", "peak",
            "peak_breakdown", "totals"), _buffer_assignment,
           sniff=Sniff(prefixes=((b"BufferAssignment:", "buffer_assignment"),
                                 (b"Total bytes used: ", "buffer_assignment_values"),
                                 (b"HloLiveRange (max ", "live_range"),
                                 (b"HloLiveRange not available", "live_range")))),
    # the memory-usage report of jax 0.4.35–0.9 starts as the values file does
    Format("memory_report", ("memory_usage_report",), ("memory_report", "totals"), _memory_report,
           sniff=Sniff(prefixes=((b"Memory Space: ", "memory_usage_report"),
                                 (b"memory_space_allocation_entries", "memory_usage_report")),
                       second_line=((b"Total bytes used: ", b"Allocations sorted by size:",
                                     "memory_usage_report"),))),
    Format("memory_report_proto", ("memory_usage_report_proto",), ("memory_report", "totals"),
           _memory_report_proto, binary=True,
           sniff=Sniff(binary=(_is_memory_report_proto, "memory_usage_report_proto"))),
    Format("thunk_sequence", ("thunk_sequence",), ("thunks",), _thunks,
           sniff=Sniff(prefixes=((b"No thunks.", "thunk_sequence"),),
                       line=(_is_thunk_line, "thunk_sequence"))),
    # Markers of XLA's out-of-memory reports (FORMATS.md §2.9), anywhere in a log; the third
    # finds TPU reports pasted without their first line.
    Format("oom_report", ("oom_report",), ("oom_reports", "oom_buffers"), _oom, log=True,
           sniff=Sniff(markers=(b"BufferAssignment OOM Debugging.",
                                b"Ran out of memory in memory space ",
                                b"Largest program allocations in ",
                                # a paste of a report's tail (Rust: oom::MARKERS)
                                b"BufferAssignment stats:", b"Peak buffers:", b"Entry Parameter Subshape: ",
                                b"XLA Label: ", b"Allocation type: ", b"Unpadded size: ",
                                # the TPU runtime's and compiler's one-line messages
                                b"Attempting to allocate ", b"Attempting to reserve ",
                                b"unlikely to have enough memory. Requires ",
                                # the TPU compiler's one-line compile-time messages (E1000, E1001)
                                b"Ran out of memory on ", b"Allocation (size="))),
    # any other protobuf text after every format's prefixes and lines (a thunk line
    # ``001: kKernel …`` is also a numbered field)
    Format("options", ("debug_options", "compile_options", "proto_text", "flagfile"), ("options", "thunk_metadata"), _options,
           sniff=Sniff(prefixes=tuple((p.encode(), "compile_options") for p in _COMPILE_OPTIONS_STARTS)
                       + ((b"--xla_", "flagfile"),),
                       line=(_is_debug_options_line, "debug_options"),
                       fallback=(_is_proto_text_start, "proto_text"))),
)

# Content kinds the files table names but no format parses (tried after every format's rules).
UNPARSED = Sniff(prefixes=((b"*** Begin ", "stdout_capture"),))


def sniff_rules() -> tuple[Sniff, ...]:
    """Every content rule: the formats' in registry order, then ``UNPARSED``."""
    return tuple(f.sniff for f in FORMATS) + (UNPARSED,)


def format_of(content: str) -> Format | None:
    """The format that reads files of this content kind, if any."""
    for f in FORMATS:
        if content in f.contents:
            return f
    return None


def formats_for_tables(tables: Sequence[str] | None) -> set[str]:
    """Names of the formats a read with ``tables=`` parses: those that can produce a requested
    table (all when ``tables`` is None or names ``errors``; none for ``files`` alone)."""
    if tables is None or "errors" in tables or "notes" in tables:
        return {f.name for f in FORMATS}
    return {f.name for f in FORMATS if any(t in f.tables for t in tables)}


def format_by_name(name: str) -> Format:
    for f in FORMATS:
        if f.name == name:
            return f
    raise KeyError(name)
