"""Reference parser for the buffer-assignment family (FORMATS.md §2).

One section-driven state machine reads every file of the family:

* the combined file (``BufferAssignment:`` … ``Total bytes used`` … ``Used values:`` …
  ``HloLiveRange``), old and new XLA;
* each split file of newer XLA (``-buffer-assignment.txt``, ``-buffer-assignment-values.txt``,
  ``-live-range.txt``).

The memory-usage report is a format of its own (``memory_report.py``); it uses this module's
allocation-line grammar (``allocation_line.py``), which XLA prints with the same function.

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

from .allocation_line import allocation_line, unknown_flag_note
from .lex import I32_MAX, I64_MAX, _Bad, _column, _Cursor, _to_int
from .lex import human_bytes  # noqa: F401 (public here: __all__)

__all__ = ["parse", "human_bytes", "parse_value_ref"]

# Fixed lines (structure only, no rows).
_UNBOUNDED_PEAK = "  Peak memory could not be determined due to unbounded dynamic shape."


#: The header of a block XLA 2026 prints after an allocation's values.
_REUSED = " reused by buffers of a different color:"


def parse_value_ref(text: str) -> dict[str, Any] | None:
    """Read a whole ``<ID NAME[IDX][ (phi)][ @C]>``; None if ``text`` is not exactly one.

    Returns ``value_id``, ``instruction``, ``shape_index`` ("{}" if not printed: the whole value), ``is_phi`` and
    ``color`` (0 if not printed).
    """
    cur = _Cursor(text)
    try:
        ref = _value_ref(cur)
        cur.end("the value reference")
    except _Bad:
        return None
    return ref


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
        "shape_index": shape_index or "{}",  # not printed for array-shaped instructions: the whole value
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
        self.reused = False  # after the allocation's " reused by buffers of a different color:"
        self.block: _Block | None = None
        # live range
        self.live_sub: str | None = None  # "schedule" | "buffers" | "peak" | "after_peak" | "tree"
        self.peak_time = 0
        self.peak_running = 0
        self.tree_row = 0  # rows are numbered per file
        self.tree_stack: list[int] = []  # tree_stack[d] = row of the latest line at depth d
        # the InstructionSequence counted against its header's max (§2.10): [max, line, text, count, listed]
        self.sequence: list[Any] | None = None
        # whole-file checks (FORMATS.md §2.10), reported at the end of a file without errors:
        # allocation -> (first line, largest size); allocations listed again (line, allocation,
        # first line); values past the end of their allocation's size here (line, value,
        # allocation, offset, size: checked again against the largest size at the end);
        # `HloLiveRange (max N)` headers with N > 0 (line, N), and whether any schedule line came
        self.allocations: dict[int, list[int]] = {}
        self.again: list[tuple[int, int, int]] = []
        self.past: list[tuple[int, int, int, int, int]] = []
        self.live_max: list[tuple[int, int]] = []
        self.scheduled = False
        # whether the file's first section header is `BufferAssignment:` (None: none yet)
        self.opened_by_allocations: bool | None = None
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
        if not self.ctx.has_errors():  # a file with errors is known to be incomplete: no second report
            for line, col, message in whole_file_problems(self.allocations, self.again, self.past, self.live_max,
                                                          self.scheduled, self.opened_by_allocations is True):
                self.ctx.error(line, col, message)

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
            self.allocation, self.allocation_broken, self.reused = None, False, False
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
        if self.opened_by_allocations is None:
            self.opened_by_allocations = text == "BufferAssignment:"
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
        elif text.startswith("  value: "):
            self.reused_value_line(text)
        elif text.startswith(_REUSED):
            self.reused_by_other_color(lineno, text)
        else:
            raise _Bad(0, "expected 'allocation N: size S…:' or ' value: <…> (size=…,offset=…): "
                          "SHAPE' in the BufferAssignment section")

    def reused_by_other_color(self, lineno: int, text: str) -> None:
        """`` reused by buffers of a different color:`` (XLA 2026) after an allocation's value
        lines: its ``  value: <…> (color=N)`` lines are not read into a table yet; one note per
        file says so (Rust: allocation.rs)."""
        if self.allocation is None and not self.allocation_broken:
            raise _Bad(0, "' reused by buffers of a different color:' outside an allocation (expected "
                          "'allocation N: …' first)")
        if self.reused:
            raise _Bad(0, "' reused by buffers of a different color:' twice in one allocation")
        self.reused = True  # open even when the header is damaged: its lines are checked, not errors too
        if len(text) > len(_REUSED):
            raise _Bad(len(_REUSED), "expected the end of the line after ' reused by buffers of a different color:'")
        self.ctx.note(lineno, text, 2, "unknown_section", _REUSED[1:-1], text.strip(),
                      "allocation block 'reused by buffers of a different color:' (XLA 2026): "
                      "its value lines are not read into a table")

    def reused_value_line(self, text: str) -> None:
        """``  value: <…> (color=N)`` (two spaces): a line of the block above and only there
        (issue 50: anywhere else it was dropped without a word), checked against its grammar."""
        if not self.reused:
            raise _Bad(0, "'  value: …' (two spaces) outside a ' reused by buffers of a different color:' "
                          "block (a value line has one space)")
        cur = _Cursor(text)
        cur.expect("  value: ")
        _value_ref(cur)
        cur.expect(" (color=")
        cur.uint("the color", I32_MAX)
        cur.expect(")")
        cur.end("the value line")

    def allocation_line(self, lineno: int, text: str) -> None:
        # Until this line is read, the value lines that follow are checked but not kept.
        self.allocation = None
        self.allocation_broken = True
        self.reused = False
        row = allocation_line(text, 0, human_size=False)
        row["line"] = lineno
        unknown = row.pop("unknown_flags")
        self.ctx.add("allocations", row)
        seen = self.allocations.get(row["allocation"])
        if seen is None:
            self.allocations[row["allocation"]] = [lineno, row["size"]]
        else:
            self.again.append((lineno, row["allocation"], seen[0]))
            seen[1] = max(seen[1], row["size"])
        for at, raw in unknown:
            self.ctx.note(lineno, text, _column(text, at), *unknown_flag_note(raw))
        self.allocation = row["allocation"]
        self.allocation_broken = False

    def value_line(self, lineno: int, text: str) -> None:
        if self.allocation is None and not self.allocation_broken:
            raise _Bad(0, "value line outside an allocation (expected 'allocation N: …' first)")
        if self.reused:
            raise _Bad(0, "value line after the allocation's ' reused by buffers of a different color:' block")
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
        if offset + size > self.allocations[self.allocation][1]:
            self.past.append((lineno, ref["value_id"], self.allocation, offset, size))
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
        if maximum > 0:
            self.live_max.append((lineno, maximum))
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
        self.scheduled = True
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


# --------------------------------------------------------------------------- small grammars


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
    return {"instruction": name, "shape_index": index or "{}"}


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
    return {"instruction": name, "operand": operand, "shape_index": index or "{}"}


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


def whole_file_problems(allocations: dict[int, list[int]], again: list[tuple[int, int, int]],
                        past: list[tuple[int, int, int, int, int]], live_max: list[tuple[int, int]],
                        scheduled: bool, opened_by_allocations: bool = False) -> list[tuple[int, int, str]]:
    """What no single line shows (FORMATS.md §2.10), as (line, column, message) in the order
    they are reported: allocations listed twice (two buffer assignments concatenated into one
    file: every figure would count twice), values past the end of their allocation (offset +
    size > the largest size the file gives it), and `HloLiveRange (max N)` headers with N > 0
    in a file with no `InstructionSequence` line at all (cut right after its header), and a file
    opened by `BufferAssignment:` without a single allocation (cut right after it). Rust:
    `buffer_assignment::checks`, also across the chunks of a file read in parts."""
    out = [(line, 1, f"allocation {a} again (first at line {first}): two buffer assignments in one file?")
           for line, a, first in again]
    for line, value, a, offset, size in past:
        largest = allocations[a][1]
        if offset + size > largest:
            out.append((line, 1, f"value {value} lies past the end of allocation {a} (offset {offset} + size "
                                  f"{size} > {largest} bytes)"))
    if not scheduled:
        out += [(line, 1, f"HloLiveRange (max {n}) but no InstructionSequence follows: the file is cut "
                          "short after its header") for line, n in live_max]
    if opened_by_allocations and not allocations:
        out.append((1, 1, "BufferAssignment without a single allocation (the file is cut short?)"))
    return out


def parse(lines: list[str | None], ctx: Any) -> None:
    """Parse one buffer-assignment-family file into rows (see module docstring)."""
    _Parser(ctx).run(lines)
