"""The format registry of the reference parser (the Rust core's is ``src/formats.rs``; a test
checks that the two agree).

One entry per format: its name, the content kinds (``files.sniff``) it reads, the tables it
can fill, and its parser ``parse(lines, ctx, data)``. Adding a format: write its module, add
one ``Format`` line below, add its tables to ``hlodump.schema``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Format", "FORMATS", "format_of", "formats_for_tables"]


@dataclass(frozen=True)
class Format:
    name: str
    contents: tuple[str, ...]
    tables: tuple[str, ...]
    parse: Callable[[list[str | None], Any, bytes], None]
    # A format found inside logs (OOM reports): a lone CR is a terminal's redraw, not an error;
    # the lines keep it and the parser splits there (formats XLA writes itself reject it).
    log: bool = False


def _hlo(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import hlo

    hlo.parse_module(lines, ctx, data)


def _buffer_assignment(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import buffer_assignment

    buffer_assignment.parse(lines, ctx)


def _memory_report(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import memory_report

    memory_report.parse(lines, ctx)


def _thunks(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import thunks

    thunks.parse(lines, ctx)


def _oom(lines: list[str | None], ctx: Any, data: bytes) -> None:
    from . import oom

    oom.parse(lines, ctx)


FORMATS: tuple[Format, ...] = (
    Format("hlo_module", ("hlo_module",),
           ("modules", "computations", "instructions", "stack_frames", "custom_calls"), _hlo),
    Format("buffer_assignment", ("buffer_assignment", "buffer_assignment_values", "live_range"),
           ("allocations", "assignments", "values", "schedule", "live_ranges", "peak",
            "peak_breakdown", "totals"), _buffer_assignment),
    Format("memory_report", ("memory_usage_report",), ("memory_report", "totals"), _memory_report),
    Format("thunk_sequence", ("thunk_sequence",), ("thunks",), _thunks),
    Format("oom_report", ("oom_report",), ("oom_reports", "oom_buffers"), _oom, log=True),
)


def format_of(content: str) -> Format | None:
    """The format that reads files of this content kind, if any."""
    for f in FORMATS:
        if content in f.contents:
            return f
    return None


def formats_for_tables(tables: Sequence[str] | None) -> set[str]:
    """Names of the formats a read with ``tables=`` parses: those that can produce a requested
    table (all when ``tables`` is None or names ``errors``; none for ``files`` alone)."""
    if tables is None or "errors" in tables:
        return {f.name for f in FORMATS}
    return {f.name for f in FORMATS if any(t in f.tables for t in tables)}


def format_by_name(name: str) -> Format:
    for f in FORMATS:
        if f.name == name:
            return f
    raise KeyError(name)
