"""Reference parser for the buffer-assignment family (FORMATS.md §2).

One section-driven state machine reads every file of the family:

* the combined file (``BufferAssignment:`` … ``Total bytes used`` … ``Used values:`` …
  ``HloLiveRange``), old and new XLA;
* each split file of newer XLA (``-buffer-assignment.txt``, ``-buffer-assignment-values.txt``,
  ``-live-range.txt``).

The memory-usage report is a format of its own (``memory_report.py``); it uses this module's
allocation-line grammar (``allocation_flag``), which XLA prints with the same function.

A column-0 section header switches sections wherever it appears, so the sections may come in one
file or spread over several. Every line either produces a row, is a known structure-only line
(section and sub-section headers, the report's column header and dashed rule, empty lines), or is
reported with ``ctx.error`` at the 1-based byte column where it stops matching the grammar.

Deviations of real files from FORMATS.md that this parser accepts (found in tests/data):

* jax 0.4.26: ``from instruction:`` has no newline before the next value header, which is glued
  to the end of the line (``… parameter(0)<39 Arg_2.3 @0>``); split off here.
* jax 0.4.26: the peak list prints ``NAME: N bytes`` (no index, no cumulative, not sorted).
* jax 0.4.26: one empty line (not two) before ``HloLiveRange``; empty lines are not counted.

Only truly empty lines count as blank; a line of spaces is an error like any other unknown line.

Written for clarity, not speed: a small cursor walks each line left to right, so every failure
knows its column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["parse", "human_bytes", "parse_value_ref"]

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")  # FORMATS.md §0 NAME
INDEX_RE = re.compile(r"\{[0-9,]*\}")  # SHAPE_INDEX, e.g. {} {1} {0,2}
UINT_RE = re.compile(r"[0-9]+")
# A byte count whose digits may be grouped in threes with single spaces ("97 587 208"), §2.7.
GROUPED_RE = re.compile(r"[0-9]{1,3}(?: [0-9]{3})+|[0-9]+")
HUMAN_RE = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(B|KiB|MiB|GiB|TiB|PiB|EiB)")
_UNIT_POWER = {"B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6}
# Every number goes into an int64 or int32 column: a larger one is an error at its first digit
# ("… is out of range"), never a crash. Digit strings are never converted whole when they are
# long (Python refuses int() of > 4300 digits).
I64_MAX = 2**63 - 1
I32_MAX = 2**31 - 1


def _to_int(digits: str, limit: int) -> int | None:
    """int(digits) (ASCII digits, may be long) if it is at most ``limit``, else None."""
    d = digits.lstrip("0")
    if len(d) > 19:
        return None
    v = int(d or "0")
    return v if v <= limit else None

# Fixed lines (structure only, no rows).
_UNBOUNDED_PEAK = "  Peak memory could not be determined due to unbounded dynamic shape."


# --------------------------------------------------------------------------- public helpers


def human_bytes(text: str) -> int:
    """Bytes of a human-readable size such as ``4.00MiB``, ``51.1KiB``, ``576B``, ``-2.0KiB``.

    ``round_half_up(decimal * 1024**k)`` computed exactly on the digits (no floats). A negative
    size is rounded on its magnitude (the text is a sign followed by a magnitude).
    Raises ``ValueError`` for anything else.
    """
    m = HUMAN_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a human-readable byte count: {text!r}")
    sign, whole, frac, unit = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    whole, frac = whole.lstrip("0") or "0", frac.rstrip("0")
    if len(whole) > 19:
        raise ValueError(f"human-readable byte count too large: {text[:40]!r}")
    if len(frac) > 1000:  # exact without converting a huge digit string to int
        import decimal

        with decimal.localcontext() as c:
            c.prec = len(whole) + len(frac) + 40
            v = (decimal.Decimal(f"{whole}.{frac}") * 1024 ** _UNIT_POWER[unit]).quantize(
                decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
        return -int(v) if sign else int(v)
    scaled = int(whole + frac) * 1024 ** _UNIT_POWER[unit]  # the decimal times 10**len(frac)
    denominator = 10 ** len(frac)
    quotient: int
    remainder: int
    quotient, remainder = divmod(scaled, denominator)
    if 2 * remainder >= denominator:
        quotient += 1
    return -quotient if sign else quotient


def parse_value_ref(text: str) -> dict[str, Any] | None:
    """Read a whole ``<ID NAME[IDX][ (phi)][ @C]>``; None if ``text`` is not exactly one.

    Returns ``value_id``, ``instruction``, ``shape_index`` ("" if not printed), ``is_phi`` and
    ``color`` (0 if not printed).
    """
    cur = _Cursor(text)
    try:
        ref = _value_ref(cur)
        cur.end("the value reference")
    except _Bad:
        return None
    return ref


# --------------------------------------------------------------------------- line cursor


class _Bad(Exception):
    """A line does not match the grammar at character position ``pos`` (0-based)."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


def _column(text: str, pos: int) -> int:
    """1-based *byte* column of character position ``pos`` (the contract counts bytes)."""
    return len(text[:pos].encode("utf-8")) + 1


class _Cursor:
    """Reads one line left to right; each failed expectation raises ``_Bad`` where it failed."""

    def __init__(self, text: str, pos: int = 0, stop: int | None = None) -> None:
        self.text = text
        self.pos = pos
        self.stop = len(text) if stop is None else stop  # exclusive end of what we may read

    def at_end(self) -> bool:
        return self.pos >= self.stop

    def accept(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos, self.stop):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str = "") -> None:
        if not self.accept(literal):
            raise _Bad(self.pos, f"expected {literal!r}" + (f" {what}" if what else ""))

    def _match(self, pattern: re.Pattern[str], what: str) -> str:
        m = pattern.match(self.text, self.pos, self.stop)
        if m is None:
            raise _Bad(self.pos, f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def uint(self, what: str, limit: int = I64_MAX) -> int:
        start = self.pos
        v = _to_int(self._match(UINT_RE, f"{what} (digits)"), limit)
        if v is None:
            raise _Bad(start, f"{what} is out of range (at most {limit})")
        return v

    def grouped(self, what: str) -> int:
        """A byte count, digits possibly grouped with single spaces."""
        start = self.pos
        v = _to_int(self._match(GROUPED_RE, f"{what} (digits)").replace(" ", ""), I64_MAX)
        if v is None:
            raise _Bad(start, f"{what} is out of range (at most {I64_MAX})")
        return v

    def name(self, what: str = "an instruction name") -> str:
        return self._match(NAME_RE, what)

    def index(self) -> str | None:
        """An optional shape index ``{…}``; a ``{`` that does not start one is an error."""
        if self.pos < self.stop and self.text[self.pos] == "{":
            return self._match(INDEX_RE, "a shape index such as {} or {0,2}")
        return None

    def human(self, what: str) -> int:
        start = self.pos
        m = HUMAN_RE.match(self.text, self.pos, self.stop)
        if m is None:
            raise _Bad(start, f"expected {what} (a size such as 576B, 51.1KiB, 4.00MiB)")
        self.pos = m.end()
        try:
            v = human_bytes(m.group(0))
        except ValueError:
            v = I64_MAX + 1
        if abs(v) > I64_MAX:
            raise _Bad(start, f"{what} is out of range (at most {I64_MAX} bytes)")
        return v

    def bytes_and_human(self, what: str) -> int:
        """``N (H)`` to the end: a byte count and its rounded human-readable form (XLA's
        totals, e.g. ``Total bytes used: 3225152 (3.08MiB)``). Returns N."""
        total = self.uint("the total in bytes")
        self.expect(" (")
        self.human("the rounded total")
        self.expect(")")
        self.end(what)
        return total

    def spaces(self) -> None:
        while self.pos < self.stop and self.text[self.pos] == " ":
            self.pos += 1

    def rest(self) -> str:
        out = self.text[self.pos:self.stop]
        self.pos = self.stop
        return out

    def end(self, what: str) -> None:
        if not self.at_end():
            raise _Bad(self.pos, f"unexpected text after {what}")


def _value_ref(cur: _Cursor) -> dict[str, Any]:
    """``<ID NAME[IDX][ (phi)][ @C]>`` (§2.3): the index is glued to the name."""
    cur.expect("<", "(start of a value reference <ID NAME …>)")
    value_id = cur.uint("a value id")
    cur.expect(" ", "after the value id")
    instruction = cur.name()
    shape_index = cur.index()
    is_phi = cur.accept(" (phi)")
    color = cur.uint("a color", I32_MAX) if cur.accept(" @") else 0
    cur.expect(">", "(end of the value reference)")
    return {
        "value_id": value_id,
        "instruction": instruction,
        "shape_index": shape_index or "",
        "is_phi": is_phi,
        "color": color,
    }


# --------------------------------------------------------------------------- parser state


@dataclass
class _Block:
    """A value block of ``Used values:`` being read (§2.5)."""

    header_line: int
    ref: dict[str, Any] | None  # None: the header was unreadable (rows are not emitted)
    # expecting: "positions_header" → "positions" → "uses" | "no_more_uses" | "not_initialized"
    expecting: str = "positions_header"
    positions: list[dict[str, Any]] = field(default_factory=list)
    uses: list[dict[str, Any]] = field(default_factory=list)
    uses_initialized: bool = True


class _Parser:
    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        # None | "allocations" | "values" | "live_range"
        self.section: str | None = None
        self.allocation: int | None = None  # index of the allocation whose values we read
        self.allocation_broken = False  # the current allocation line was unreadable
        self.block: _Block | None = None
        # live range
        self.live_sub: str | None = None  # "schedule" | "buffers" | "peak" | "after_peak" | "tree"
        self.peak_time = 0
        self.peak_running = 0
        self.tree_row = 0  # rows are numbered per file
        self.tree_stack: list[int] = []  # tree_stack[d] = row of the latest line at depth d
        # the InstructionSequence counted against its header's max (§2.10): [max, line, text, count, listed]
        self.sequence: list[Any] | None = None
        # defining instructions repeat (once per tuple leaf): parse each text once
        self.instruction_cache: dict[str, dict[str, Any]] = {}
        self.parse_instruction = _instruction_parser()
        self.handlers = {
            "allocations": self.allocations_line,
            "values": self.values_line,
            "live_range": self.live_range_line,
        }

    # ------------------------------------------------------------------ driver
    def run(self, lines: list[str | None]) -> None:
        last = 0
        for lineno, text in enumerate(lines, start=1):
            if text is None:  # undecodable, already reported by the reader
                continue
            last = lineno
            try:
                self.line(lineno, text)
            except _Bad as bad:
                self.ctx.error(lineno, _column(text, bad.pos), bad.message, text)
        self.finish(last)

    def line(self, lineno: int, text: str) -> None:
        if text == "":
            self.blank(lineno)
            return
        # Section headers start at column 0 with a letter (cheap test: most lines are indented).
        if text[0] not in " <" and self.section_header(lineno, text):
            return
        handler = self.handlers.get(self.section or "")
        if handler is None:
            raise _Bad(0, "expected a section header (BufferAssignment:, Total bytes used: …, "
                          "Used values:, HloLiveRange …) or an empty line")
        handler(lineno, text)

    def blank(self, lineno: int) -> None:
        """Empty lines end the allocation, value and live-range sections and report tables."""
        self.close_block(lineno, "an empty line")
        self.end_sequence()
        self.section = None

    def finish(self, last_line: int) -> None:
        self.close_block(last_line, "the end of the file")
        self.end_sequence()

    def end_sequence(self) -> None:
        """The InstructionSequence is over: an error at its header unless it listed max entries."""
        seq, self.sequence = self.sequence, None
        if seq is None or not seq[4] or seq[3] == seq[0]:  # seq[4]: the list was there
            return
        self.ctx.error(seq[1], 1, f"the InstructionSequence lists {seq[3]} instruction(s) but its header says "
                                  f"max {seq[0]}: the file is cut short or edited", seq[2])

    def section_header(self, lineno: int, text: str) -> bool:
        """Column-0 lines that open a section, in whatever file they appear."""
        if text == "BufferAssignment:":
            self.enter("allocations", lineno, text)
            self.allocation, self.allocation_broken = None, False
        elif text.startswith("Total bytes used: "):
            self.enter(None, lineno, text)
            self.total_line(lineno, text)
        elif text == "Used values:":
            self.enter("values", lineno, text)
        elif text.startswith("HloLiveRange"):
            self.enter(None, lineno, text)
            self.live_range_header(lineno, text)
        else:
            return False
        return True

    def enter(self, section: str | None, lineno: int, text: str) -> None:
        self.close_block(lineno, "a new section", text)
        self.end_sequence()
        self.section = section

    # ------------------------------------------------------------------ allocations (§2.2, §2.3)
    def allocations_line(self, lineno: int, text: str) -> None:
        if text.startswith("allocation "):
            self.allocation_line(lineno, text)
        elif text.startswith(" value: "):
            self.value_line(lineno, text)
        else:
            raise _Bad(0, "expected 'allocation N: size S…:' or ' value: <…> (size=…,offset=…): "
                          "SHAPE' in the BufferAssignment section")

    def allocation_line(self, lineno: int, text: str) -> None:
        # Until this line is read, the value lines that follow are checked but not kept.
        self.allocation = None
        self.allocation_broken = True
        row = allocation_line(text, 0, human_size=False)
        row["line"] = lineno
        self.ctx.add("allocations", row)
        self.allocation = row["allocation"]
        self.allocation_broken = False

    @staticmethod
    def allocation_flag(cur: _Cursor, row: dict[str, Any]) -> str:
        """One flag (§2.2); fills ``row`` and returns the flag's keyword."""
        if cur.accept("color "):
            row["color"] = cur.uint("the color", I32_MAX)
            return "color"
        if cur.accept("parameter "):
            row["parameter"] = cur.uint("the parameter number")
            cur.expect(", shape |")
            row["parameter_shape"] = _bar_text(cur)
            cur.expect(" at ShapeIndex ")
            start = cur.pos
            index = cur.index()
            if index is None:
                raise _Bad(start, "expected a shape index such as {} or {0,2}")
            row["parameter_shape_index"] = index
            return "parameter"
        if cur.accept("output shape is |"):
            row["output_shape"] = _bar_text(cur)
            row["is_output"] = True
            return "output"
        for keyword, column in (
            ("constant", "is_constant"),
            ("thread-local", "is_thread_local"),
            ("maybe-live-out", "is_maybe_live_out"),
            ("preallocated-temp", "is_preallocated_temp"),
        ):
            if cur.accept(keyword):
                row[column] = True
                return keyword
        raise _Bad(cur.pos, "expected an allocation flag (color N, parameter N, shape |…| at "
                            "ShapeIndex {…}, output shape is |…|, constant, thread-local, "
                            "maybe-live-out, preallocated-temp)")

    def value_line(self, lineno: int, text: str) -> None:
        if self.allocation is None and not self.allocation_broken:
            raise _Bad(0, "value line outside an allocation (expected 'allocation N: …' first)")
        cur = _Cursor(text)
        cur.expect(" value: ")
        ref = _value_ref(cur)
        cur.expect(" (size=")
        size = cur.uint("the value's size")
        cur.expect(",offset=")
        offset = cur.uint("the value's offset")
        cur.expect("): ")
        if cur.at_end():
            raise _Bad(cur.pos, "expected the value's shape")
        if self.allocation is None:
            return  # under an unreadable allocation line (already reported)
        self.ctx.add("assignments", {
            "allocation": self.allocation, "value_id": ref["value_id"],
            "instruction": ref["instruction"], "shape_index": ref["shape_index"],
            "is_phi": ref["is_phi"], "color": ref["color"], "offset": offset, "size": size,
            "shape": cur.rest(), "line": lineno,
        })

    # ------------------------------------------------------------------ total line (§2.4)
    def total_line(self, lineno: int, text: str) -> None:
        cur = _Cursor(text)
        cur.expect("Total bytes used: ")
        total = cur.bytes_and_human("the total line")
        self.total("buffer_assignment", "total_bytes_used", None, total, lineno)

    def total(self, section: str, key: str, color: int | None, value: int, lineno: int) -> None:
        self.ctx.add("totals", {"section": section, "key": key, "color": color, "value": value,
                                "line": lineno})

    # ------------------------------------------------------------------ used values (§2.5)
    def values_line(self, lineno: int, text: str) -> None:
        if text.startswith("<"):
            self.close_block(lineno, "the next value header", text)
            self.open_block(lineno, text, 0)
            return
        block = self.block
        if block is None:
            raise _Bad(0, "expected a value header '<ID NAME …>' in the Used values section")
        expecting = block.expecting
        if expecting == "positions_header":
            if text != " positions:":
                raise _Bad(0, "expected ' positions:' after the value header")
            block.expecting = "positions"
        elif text.startswith(" from instruction:"):
            if expecting == "positions":
                raise _Bad(0, "expected ' uses:' or ' uses are not initialized yet.' before "
                              "' from instruction:'")
            self.defining_line(lineno, text)
        elif expecting == "positions":
            if text == " uses:":
                block.expecting = "uses"
            elif text == " uses are not initialized yet.":
                block.uses_initialized = False
                block.expecting = "not_initialized"
            else:
                block.positions.append(_position(text))
        elif expecting == "uses":
            if text == "  (none)":
                block.expecting = "no_more_uses"
            else:
                block.uses.append(_use(text))
        else:  # "no_more_uses" / "not_initialized": only ' from instruction:' may follow
            raise _Bad(0, "expected ' from instruction: …' to end the value block")

    def open_block(self, lineno: int, text: str, start: int) -> None:
        cur = _Cursor(text, start)
        try:
            ref = _value_ref(cur)
            cur.end("the value header")
        except _Bad:
            # Keep reading the block's lines (they are checked) but emit no row for it.
            self.block = _Block(lineno, None)
            raise
        self.block = _Block(lineno, ref)

    def defining_line(self, lineno: int, text: str) -> None:
        """`` from instruction:[ ]TEXT`` — in jax 0.4.26 with the next header glued to its end."""
        block = self.block
        assert block is not None
        start = len(" from instruction:")
        if text.startswith(" ", start):
            start += 1
        end = len(text)
        glued = text.rfind("<", start)
        # The instruction text itself ends with ')', '}', '"', a digit or a word, never with a
        # whole "<ID NAME …>", so a value reference at the very end is the next block's header.
        if glued >= 0 and parse_value_ref(text[glued:]) is not None:
            end = glued
        instruction_text = text[start:end]
        if block.ref is not None:
            self.ctx.add("values", {
                **block.ref,
                "positions": block.positions, "uses": block.uses,
                "uses_initialized": block.uses_initialized,
                "defining_instruction": instruction_text,
                **self.describe_instruction(instruction_text),
                "line": block.header_line,
            })
        self.block = None
        if end < len(text):
            self.open_block(lineno, text, end)

    def describe_instruction(self, text: str) -> dict[str, Any]:
        """The ``defining_*`` columns parsed from a value's instruction text (all None if it
        cannot be read). source_file/source_line from metadata only: a value's text has no
        module-level stack-frame tables to resolve ``stack_frame_id`` in."""
        if text not in self.instruction_cache:
            parsed = None
            if self.parse_instruction is not None:
                try:
                    parsed = self.parse_instruction(text)
                except ValueError:  # ParseError is a ValueError: unreadable text → nulls
                    parsed = None
            self.instruction_cache[text] = {
                f"defining_{key}": None if parsed is None else parsed.get(key)
                for key in _DEFINING_KEYS}
        return self.instruction_cache[text]

    def close_block(self, lineno: int, reason: str, text: str = "") -> None:
        """A value block cut short (no ``from instruction:``) is an error; its row is dropped."""
        block = self.block
        if block is None:
            return
        self.block = None
        if block.ref is None:
            return  # its header was already reported
        ref = block.ref
        name = f"<{ref['value_id']} {ref['instruction']}{ref['shape_index']}…>"
        self.ctx.error(
            lineno, 1,
            f"value block {name} (line {block.header_line}) ended by {reason} before its "
            f"' from instruction:' line", text)

    # ------------------------------------------------------------------ HloLiveRange (§2.6)
    def live_range_header(self, lineno: int, text: str) -> None:
        if text.startswith("HloLiveRange not available"):
            self.total("live_range", "not_available", None, 0, lineno)
            return
        # Enter the section even if the header is unreadable: its lines are still checked.
        self.section = "live_range"
        self.live_sub = None
        cur = _Cursor(text)
        cur.expect("HloLiveRange (max ", "or 'HloLiveRange not available …'")
        maximum = cur.uint("the schedule length")
        cur.expect("):")
        cur.end("the HloLiveRange header")
        self.total("live_range", "max", None, maximum, lineno)
        self.sequence = [maximum, lineno, text, 0, False]

    def live_range_line(self, lineno: int, text: str) -> None:
        if (text == "  BufferLiveRange:" or text.startswith("  Live ranges at ") or text == _UNBOUNDED_PEAK
                or text.startswith("  Stack trace breakdown for peak usage: ")):
            self.end_sequence()  # another list: the InstructionSequence is over
        if text == "  InstructionSequence:":
            if self.sequence is not None:
                self.sequence[4] = True
            self.live_sub = "schedule"
        elif text == "  BufferLiveRange:":
            self.live_sub = "buffers"
        elif text.startswith("  Live ranges at "):
            cur = _Cursor(text, len("  Live ranges at "))
            self.peak_time = cur.uint("the peak time", I32_MAX)
            cur.expect(" (peak):")
            cur.end("the peak header")
            self.total("live_range", "peak_time", None, self.peak_time, lineno)
            self.peak_running = 0
            self.live_sub = "peak"
        elif text == _UNBOUNDED_PEAK:
            self.total("live_range", "peak_unbounded", None, 0, lineno)
            self.live_sub = "after_peak"
        elif text.startswith("  Stack trace breakdown for peak usage: "):
            cur = _Cursor(text, len("  Stack trace breakdown for peak usage: "))
            total = cur.grouped("the peak total")
            cur.expect(" bytes")
            cur.end("the stack-trace header")
            self.total("peak_breakdown", "total", None, total, lineno)
            self.tree_stack = []
            self.live_sub = "tree"
        elif text.startswith("    ") and self.live_sub in ("schedule", "buffers", "peak", "tree"):
            {"schedule": self.schedule_line, "buffers": self.buffer_line,
             "peak": self.peak_line, "tree": self.tree_line}[self.live_sub](lineno, text)
        else:
            raise _Bad(0, "expected a live-range line: '  InstructionSequence:', "
                          "'  BufferLiveRange:', '  Live ranges at T (peak):', "
                          "'  Stack trace breakdown …' or a 4-space-indented entry under one")

    def schedule_line(self, lineno: int, text: str) -> None:
        cur = _Cursor(text, 4)
        position = cur.uint("the schedule position", I32_MAX)
        cur.expect(":")
        name = cur.name()
        cur.end("the scheduled instruction")
        self.ctx.add("schedule", {"position": position, "instruction": name, "line": lineno})
        if self.sequence is not None:
            self.sequence[3] += 1

    def buffer_line(self, lineno: int, text: str) -> None:
        cur = _Cursor(text, 4)
        name = cur.name()
        start = cur.pos
        index = cur.index()  # always printed here, {} for arrays
        if index is None:
            raise _Bad(start, "expected the buffer's shape index, e.g. {} (always printed here)")
        cur.expect(":")
        begin = cur.uint("the start time", I32_MAX)
        cur.expect("-")
        end = cur.uint("the end time", I32_MAX)
        cur.end("the live range")
        self.ctx.add("live_ranges", {"buffer": text[4:start] + index, "instruction": name,
                                     "shape_index": index, "start": begin, "end": end,
                                     "line": lineno})

    def peak_line(self, lineno: int, text: str) -> None:
        """``NAME{IDX}: B bytes (cumulative: C bytes)``, or old ``NAME: B bytes`` (jax 0.4.26)."""
        cur = _Cursor(text, 4)
        name = cur.name()
        index = cur.index()
        buffer = text[4:cur.pos]
        cur.expect(": ")
        size_at = cur.pos
        size = cur.uint("the byte count")
        cur.expect(" bytes")
        self.peak_running += size
        cumulative, printed = self.peak_running, False
        if cur.at_end() and cumulative > I64_MAX:
            raise _Bad(size_at, f"the running byte total is out of range (at most {I64_MAX})")
        if not cur.at_end():
            cur.expect(" (cumulative: ", "or the end of the line")
            cumulative, printed = cur.uint("the cumulative byte count"), True
            cur.expect(" bytes)")
            cur.end("the peak entry")
        self.ctx.add("peak", {"time": self.peak_time, "buffer": buffer, "instruction": name,
                              "shape_index": index or "", "bytes": size,
                              "cumulative_bytes": cumulative, "cumulative_is_printed": printed,
                              "line": lineno})

    def tree_line(self, lineno: int, text: str) -> None:
        """One line of the stack-trace tree (§2.7): geometry gives the depth."""
        m = _TREE_TAIL_RE.search(text)
        if m is None:
            tail = text.rfind(" (")
            raise _Bad(tail + 1 if tail >= 0 else len(text),
                       "expected a tree line ending in '(P%, total: N bytes, current: N bytes, "
                       "remaining: N bytes)'")
        head = text[:m.start()]
        depth, label_start = _tree_depth(head)
        label = head[label_start:]
        if not label:
            raise _Bad(label_start, "expected a label before ' (P%, total: …)'")
        if depth > len(self.tree_stack):
            raise _Bad(label_start, f"tree depth {depth} under no line of depth {depth - 1}")
        total_bytes = _grouped(m, "total")
        current_bytes = _grouped(m, "current")
        remaining_bytes = _grouped(m, "remaining")
        parent = self.tree_stack[depth - 1] if depth > 0 else None
        del self.tree_stack[depth:]
        self.tree_stack.append(self.tree_row)
        self.ctx.add("peak_breakdown", {
            "row": self.tree_row, "parent_row": parent, "depth": depth, "label": label,
            "percent": float(m.group("pct")), "total_bytes": total_bytes,
            "current_bytes": current_bytes, "remaining_bytes": remaining_bytes, "line": lineno,
        })
        self.tree_row += 1

    # ------------------------------------------------------------------ memory report (§2.8.1)
# --------------------------------------------------------------------------- small grammars


def allocation_line(text: str, start: int, human_size: bool) -> dict[str, Any]:
    """``allocation N: size S[, FLAG…]:`` from ``start`` (§2.2; ``BufferAllocation::
    ToShortString``), the one grammar for the buffer-assignment file (size in bytes) and the
    memory-usage report (``human_size``). Returns an ``allocations`` row without ``line``."""
    if not text.endswith(":"):
        raise _Bad(len(text), "expected ':' at the end of the allocation line")
    flags_end = len(text) - 1
    cur = _Cursor(text, start, flags_end)
    cur.expect("allocation ")
    index = cur.uint("the allocation index")
    cur.expect(": size ")
    size = cur.human("the size") if human_size else cur.uint("the size in bytes")
    flags_start = cur.pos
    row: dict[str, Any] = {
        "allocation": index, "size": size, "color": 0,
        "is_thread_local": False, "is_constant": False, "is_maybe_live_out": False,
        "is_preallocated_temp": False, "is_output": False, "parameter": None,
        "parameter_shape": None, "parameter_shape_index": None, "output_shape": None,
        "flags": text[flags_start:flags_end],
    }
    seen: set[str] = set()
    while not cur.at_end():
        cur.expect(", ", "between allocation flags")
        at = cur.pos
        flag = _Parser.allocation_flag(cur, row)
        if flag in seen:
            raise _Bad(at, f"flag {flag!r} printed twice")
        seen.add(flag)
        # A flag ends at the next ", " or at the final ':' ("constant-x" is not "constant").
        if not cur.at_end() and not text.startswith(", ", cur.pos):
            raise _Bad(cur.pos, "expected ', ' or the final ':' after an allocation flag")
    return row


def _bar_text(cur: _Cursor) -> str:
    """The shape between ``|…|`` (never contains '|', may contain ', ' and comments)."""
    close = cur.text.find("|", cur.pos, cur.stop)
    if close < 0:
        raise _Bad(cur.pos, "expected the closing '|' of the shape")
    shape = cur.text[cur.pos:close]
    cur.pos = close + 1
    return shape


def _position(text: str) -> dict[str, Any]:
    """``  NAME[ IDX]`` — the index (space-separated here) only for tuple-shaped instructions."""
    cur = _Cursor(text)
    cur.expect("  ", "(a position, or ' uses:')")
    name = cur.name()
    index = None
    if cur.accept(" "):
        start = cur.pos
        index = cur.index()
        if index is None:
            raise _Bad(start, "expected a shape index after the space")
    cur.end("the position")
    return {"instruction": name, "shape_index": index or ""}


def _use(text: str) -> dict[str, Any]:
    """``  NAME, operand N[ IDX]``."""
    cur = _Cursor(text)
    cur.expect("  ", "(a use, '  (none)' or ' from instruction:')")
    name = cur.name()
    cur.expect(", operand ")
    operand = cur.uint("the operand number", I32_MAX)
    index = None
    if cur.accept(" "):
        start = cur.pos
        index = cur.index()
        if index is None:
            raise _Bad(start, "expected a shape index after the space")
    cur.end("the use")
    return {"instruction": name, "operand": operand, "shape_index": index or ""}


_G = r"[0-9]{1,3}(?: [0-9]{3})+|[0-9]+"  # GROUPED_RE's pattern
_TREE_TAIL_RE = re.compile(
    rf" \((?P<pct>[0-9]+\.[0-9])%, total: (?P<total>{_G}) bytes, current: (?P<current>{_G})"
    rf" bytes, remaining: (?P<remaining>{_G}) bytes\)$"
)


def _grouped(m: re.Match[str], group: str) -> int:
    v = _to_int(m.group(group).replace(" ", ""), I64_MAX)
    if v is None:
        raise _Bad(m.start(group), f"the {group} byte count is out of range (at most {I64_MAX})")
    return v


def _tree_depth(head: str) -> tuple[int, int]:
    """(depth, label start) from the prefix geometry of §2.7 (counted in characters).

    Depth 0: four spaces then the label. Depth d ≥ 1: two spaces, four spaces, d-1 groups of
    four spaces or '│' + three spaces, then '├── ' or '└── '.
    """
    found = [k for k in (head.find("├── "), head.find("└── ")) if k >= 0]
    if not found:
        if head.startswith("    ") and head[4:5] not in ("", " ", "│"):
            return 0, 4
        raise _Bad(0, "expected four spaces and a label (depth 0) or a '├── '/'└── ' connector")
    k = min(found)
    if k < 6 or not head.startswith("      "):
        raise _Bad(0, "expected six spaces before the first level's connector")
    if (k - 2) % 4:
        raise _Bad(k, "connector not at a 4-character column (2 + 4·depth)")
    for g in range(6, k, 4):
        if head[g:g + 4] not in ("    ", "│   "):
            raise _Bad(g, "expected four spaces or '│   ' in the tree prefix")
    return (k - 2) // 4, k + 4


# ---- protobuf text --------------------------------------------------------------------------

# The keys of hlo.parse_instruction that give the values table's defining_* columns.
_DEFINING_KEYS = ("opcode", "op_name", "shape", "source_file", "source_line", "fusion_kind",
                  "custom_call_target")


def _instruction_parser() -> Any:
    """``hlo.parse_instruction`` if the HLO reference parser is there, else None."""
    try:
        from .hlo import parse_instruction
    except ImportError:
        return None
    return parse_instruction


def parse(lines: list[str | None], ctx: Any) -> None:
    """Parse one buffer-assignment-family file into rows (see module docstring)."""
    _Parser(ctx).run(lines)
