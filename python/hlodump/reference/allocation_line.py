"""XLA's allocation line (``BufferAllocation::ToShortString``, FORMATS.md §2.2), printed alike in
the buffer-assignment file and the memory-usage report: one grammar for both formats, in neither
(mirrors ``src/allocation_line.rs``)."""

from __future__ import annotations

from typing import Any

from .lex import I32_MAX, _Bad, _Cursor

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
        # the flags' text without the ", " that parts it from the size
        "page": None, "flags": text[flags_start:flags_end].removeprefix(", "), "unknown_flags": [],
    }
    seen: set[str] = set()
    while not cur.at_end():
        cur.expect(", ", "between allocation flags")
        at = cur.pos
        flag = allocation_flag(cur, row)
        if flag is None:  # unknown: it ran to the next ", " or the final ':' already
            continue
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


def allocation_flag(cur: _Cursor, row: dict[str, Any]) -> str | None:
    """One flag (§2.2); fills ``row`` and returns the flag's keyword (None: a flag this grammar
    does not know, appended to ``row["unknown_flags"]`` as (position, raw text))."""
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
    if cur.accept("page "):
        row["page"] = cur.uint("the page number", I32_MAX)
        return "page"
    for keyword, column in (
        ("constant", "is_constant"),
        ("thread-local", "is_thread_local"),
        ("maybe-live-out", "is_maybe_live_out"),
        ("preallocated-temp", "is_preallocated_temp"),
    ):
        if cur.accept(keyword):
            row[column] = True
            return keyword
    return _unknown_flag(cur, row)


def _unknown_flag(cur: _Cursor, row: dict[str, Any]) -> None:
    """A flag a newer XLA prints: a lower-case word, then anything up to the next ", " outside
    ``|…|``, brackets and braces, or to the final ':'. Anything else is an error."""
    start = cur.pos
    if not ("a" <= cur.text[start:start + 1] <= "z") or start >= cur.stop:
        raise _Bad(cur.pos, "expected an allocation flag (color N, parameter N, shape |…| at "
                            "ShapeIndex {…}, output shape is |…|, constant, thread-local, "
                            "maybe-live-out, preallocated-temp, page N, or another lower-case "
                            "word)")
    depth, in_bars, i, end = 0, False, start, None
    while i < cur.stop:
        c = cur.text[i]
        if c == "|":
            in_bars = not in_bars
        elif in_bars:
            pass
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
            if depth < 0:
                break
        elif c == "," and depth == 0 and cur.text.startswith(" ", i + 1) and i + 1 < cur.stop:
            end = i
            break
        i += 1
    else:
        end = cur.stop if depth == 0 and not in_bars else None
    if end is None:
        raise _Bad(cur.pos, "unbalanced '|', bracket or brace in an allocation flag")
    row["unknown_flags"].append((start, cur.text[start:end]))
    cur.pos = end
    return None


def unknown_flag_note(raw: str) -> tuple[str, str, str, str]:
    """(kind, token, text, message) of the note of an unknown allocation flag (both formats)."""
    return ("unknown_flag", raw.split(" ", 1)[0], raw,
            f"unknown allocation flag '{raw}' (newer XLA?); kept raw in flags")
