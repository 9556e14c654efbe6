"""The four stack-frame tables of an HLO module text (FORMATS.md §3.4: ``FileNames``,
``FunctionNames``, ``FileLocations``, ``StackFrames``) and the source columns they give an
instruction (mirrors ``src/hlo/stack_frames.rs``)."""

from __future__ import annotations

import re
from typing import Any

from .scan import c_unescape

_TABLE_NAMES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_STRING_ROW_RE = re.compile(r'([0-9]+) ("(?:[^"\\]|\\.)*")$')
_FILE_LOCATION_RE = re.compile(
    r"([0-9]+) \{file_name_id=([0-9]+) function_name_id=([0-9]+) line=(-?[0-9]+)"
    r" end_line=(-?[0-9]+) column=(-?[0-9]+) end_column=(-?[0-9]+)\}$")
_STACK_FRAME_RE = re.compile(r"([0-9]+) \{file_location_id=([0-9]+) parent_frame_id=([0-9]+)\}$")


class StackFrameTables:
    """The stack-frame part of the module parser (``module._ModuleParser`` holds the state:
    ``table``, ``file_names``, ``function_names``, ``file_locations``, ``frames``)."""

    def table_row(self, s: str, lineno: int) -> None:
        t = self.table
        if t in ("FileNames", "FunctionNames"):
            m = _STRING_ROW_RE.match(s)
            if m:
                g = self.numbers(m, range(1, 2), s, lineno)
                if g is None:
                    return
                target = self.file_names if t == "FileNames" else self.function_names
                target[g[0]] = c_unescape(m.group(2)[1:-1])
                return
        elif t == "FileLocations":
            m = _FILE_LOCATION_RE.match(s)
            if m:
                # line, end_line, column, end_column: int32 columns
                g = self.numbers(m, range(1, 8), s, lineno, int32=range(4, 8))
                if g is None:
                    return
                self.file_locations[g[0]] = tuple(g[1:])  # type: ignore[assignment]
                return
        elif t == "StackFrames":
            m = _STACK_FRAME_RE.match(s)
            if m:
                g = self.numbers(m, range(1, 4), s, lineno)
                if g is None:
                    return
                frame, loc, parent = g
                self.frames[frame] = loc
                fl = self.file_locations.get(loc)
                self.ctx.add("stack_frames", {
                    "frame_id": frame,
                    "parent_frame_id": None if parent == 1 else parent - 1,
                    "file_location_id": loc,
                    "file_name": self.file_names.get(fl[0]) if fl else None,
                    "function_name": self.function_names.get(fl[1]) if fl else None,
                    "source_line": fl[2] if fl else None,
                    "end_line": fl[3] if fl else None,
                    "column": fl[4] if fl else None,
                    "end_column": fl[5] if fl else None,
                    "line": lineno,
                })
                return
        self.error(lineno, 1, f"bad stack-frame table row ({t or 'no table'})", s)

    def resolve_source(self, row: dict[str, Any]) -> None:
        """Fill source_file/source_line/source_function from the stack-frame tables."""
        sf = row["stack_frame_id"]
        if sf is None or sf not in self.frames:
            return
        fl = self.file_locations.get(self.frames[sf])
        if fl is None:
            return
        row["source_file"] = self.file_names.get(fl[0])
        row["source_function"] = self.function_names.get(fl[1])
        row["source_line"] = fl[2]
