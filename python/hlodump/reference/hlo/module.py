"""The file structure of an HLO module text: header, computations, instruction lines,
stack-frame tables (mirrors ``src/hlo/module/``)."""

from __future__ import annotations

import re
from typing import Any

from .scan import (
    NAME,
    ScanError,
    _match_close,
    _structure,
)
from .attributes import I32_MAX, I64_MAX, _OutOfRange, _attr_dict, _i64, _skip_blanks, split_attributes
from .instruction import _needs_continuation, _operand_positions, parse_instruction
from .attributes import _name_list
from .rules import ShapeError, check_shape, known_opcode
from .scan import CALLED_KEYS
from .custom_call import custom_call_info
from .stack_frames import _TABLE_NAMES, StackFrameTables
from .general import _GenError, _g_skip_trivia, _general_comp_header, _general_instruction


# ----------------------------------------------------------------------------- module

_HEADER_RE = re.compile(r"HloModule (\S+?)(?:, (.*))?$", re.S)
# `HloModule m // …` (XLA's lexer skips the comment)
_HEADER_COMMENT_RE = re.compile(r"HloModule (\S+)(.*)$", re.S)
# The name ends at a blank or, as XLA's lexer allows, right at the signature's '(' (XLA's
# own test inputs write `%add(a: f32[]) -> f32[] {`).
_COMP_START_RE = re.compile(r"(ENTRY )?%?(" + NAME + r")(?: |(?=\())")
# FileCheck's `--split-input-file` marker: it ends the module before it (FORMATS.md §3.2.1).
_SPLIT_MARKER_RE = re.compile(r"// -----[ \t]*$")
_COMP_CLOSE_RE = re.compile(r'\}(?:, execution_thread="([^"]*)")?(.*)$', re.S)


def _next_on_line(s: str) -> int | None:
    """``s`` is ``}``, blanks or comments, then more text that is not ``,``: where that starts
    (a computation closed and the next statement on the same line). Mirrors module/mod.rs."""
    try:
        p = _g_skip_trivia(s, 1, in_line=True)
    except _GenError:
        return None
    return p if p < len(s) and s[p] != "," else None


def _trivia_only(t: str) -> bool:
    """Blanks and comments only (what may follow a computation's '}')."""
    try:
        return _g_skip_trivia(t, 0, in_line=True) == len(t)
    except _GenError:
        return False


def _blanks(s: str) -> int:
    i = 0
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def _strip_line_comment(s: str) -> str:
    p = s.find("//")
    return s if p < 0 else s[:p].rstrip(" \t")


class _Line:
    """A line, or the rest of one: number, byte offset of its text, text, position of the text
    in the whole-file string (None: the line's start, computed when needed)."""

    __slots__ = ("no", "offset", "text", "fpos")

    def __init__(self, no: int, offset: int, text: str, fpos: int | None = None) -> None:
        self.no, self.offset, self.text, self.fpos = no, offset, text, fpos


def _entry_after_comments(text: str) -> str | None:
    """``ENTRY`` followed by blanks and at least one ``/* … */`` comment: the text after them."""
    if not text.startswith("ENTRY"):
        return None
    i, comments = 5, 0
    while True:
        i = _skip_blanks(text, i)
        if not text.startswith("/*", i):
            break
        j = text.find("*/", i + 2)
        if j < 0:
            return None
        i, comments = j + 2, comments + 1
    return text[i:] if comments else None


def _parse_comp_header(text: str) -> dict[str, Any] | None:
    """``[ENTRY ]%name (sig) -> result {`` or short form ``[ENTRY ]name {``."""
    rest = _entry_after_comments(text)
    if rest is not None:
        # ``ENTRY /* … */ name …`` (XLA's parser tests): the header after the comments
        h = _parse_comp_header(rest)
        if h is None or h["is_entry"]:
            return None
        h["is_entry"] = True
        return h
    m = _COMP_START_RE.match(text)
    if m is None:
        return None
    rest = text[m.end():]
    sig = ""
    result = ""
    if rest == "{":
        pass
    elif rest.startswith("("):
        try:
            close = _match_close(rest, 0)
        except ScanError:
            return None
        sig = rest[:close]
        tail = rest[close:]
        if not (tail.startswith(" -> ") and tail.endswith(" {")):
            return None
        result = tail[4:-2]
    else:
        return None
    return {"name": m.group(2), "is_entry": m.group(1) is not None, "signature": sig,
            "result_shape": result}


def _line_offsets(lines: list[str | None], data: bytes | None) -> list[int]:
    """Byte offset of the start of each line.

    Exact when the raw file bytes are given. Otherwise computed as the sum of (UTF-8 length + 1)
    of the previous lines, which is exact for LF files that are valid UTF-8 (a CRLF line adds
    one more byte that the decoded lines no longer show; an undecodable line counts as 0 + 1).
    """
    if data is not None:
        offs = [0]
        pos = 0
        while len(offs) < len(lines):
            j = data.find(b"\n", pos)
            if j < 0:
                break
            pos = j + 1
            offs.append(pos)
        if len(offs) == len(lines):
            return offs
    offs = []
    pos = 0
    for s in lines:
        offs.append(pos)
        pos += (len(s.encode("utf-8")) if s is not None else 0) + 1
    return offs


def _headerless_name(h: dict[str, Any]) -> str:
    """A module without header, named as XLA names it: ``module_`` + its ENTRY computation (else
    its last)."""
    return "module_" + (h["entry"] or h["last"] or "")


def parse_module(lines: list[str | None], ctx: Any, data: bytes | None = None, judged: bool = True) -> None:
    """Parse the lines of one HLO module file into table rows (see module docstring).

    ``judged``: check the whole file too (``_ModuleParser.module_problem``) — not for the text
    an HLO proto prints, which nobody could have cut short."""
    p = _ModuleParser(lines, ctx, data)
    p.run()
    # a file with errors is known to be incomplete: no second report of the same cut
    if judged and not ctx.has_errors():
        for line, message in p.problems:
            ctx.error(line, 1, message)


class _ModuleParser(StackFrameTables):
    def __init__(self, lines: list[str | None], ctx: Any, data: bytes | None) -> None:
        self.lines = lines
        self.ctx = ctx
        self.offsets = _line_offsets(lines, data)
        self.file_names: dict[int, str] = {}
        self.function_names: dict[int, str] = {}
        self.file_locations: dict[int, tuple[int, int, int, int, int, int]] = {}
        self.frames: dict[int, int] = {}  # frame id -> file_location_id
        self.computation_id = -1
        self.instruction_id = 0
        self.comp_row: dict[str, Any] | None = None
        # XLA's rules (rules.py): the open computation's instruction names (to their line), the
        # open module's computations read so far
        self.defined: dict[str, int] = {}
        self.computations: dict[str, int] = {}
        # errors reported when the open computation / module began, and whether a line that is
        # not valid was skipped since: after an error a name may be missing (its line not
        # read), so uses of names are not judged (Rust: the same fields in module/mod.rs)
        self.n_errors = 0
        self.comp_errors = 0
        self.module_errors = 0
        self.damaged = False
        self.module_damaged = False
        self.comp_line = 0
        self.comp_has_root = False
        self.have_header = False  # a module is open (its header read, or its first computation)
        self.module_index = -1  # 0-based order of the open (or last) module in the file
        # a module without `HloModule` header (XLA's parser takes it): its row, written at its end
        self.headerless: dict[str, Any] | None = None
        self.table: str | None = None
        self.data = data
        self.f: str | None = None
        self.fstarts: list[int] = []
        self.pending: _Line | None = None
        self.i = 0
        # The whole-file checks (FORMATS.md §2.10): the open module's (line, name) and its
        # computations (all, ENTRY); (line, message) of the modules that ended with a problem.
        self.module_open: tuple[int, str] | None = None
        self.module_computations = 0
        self.module_entries = 0
        self.problems: list[tuple[int, str]] = []

    def error(self, lineno: int, column: int, message: str, text: str) -> None:
        self.n_errors += 1
        self.ctx.error(lineno, column, message, text)

    def run(self) -> None:
        lines = self.lines
        n = len(lines)
        self.i = 0
        while True:
            if self.pending is not None:
                ln = self.pending
                self.pending = None
            else:
                if self.i >= n:
                    break
                s0 = lines[self.i]
                self.i += 1
                if s0 is None:
                    # (its error is reported: names may be missing after it)
                    self.damaged = self.module_damaged = True
                    continue
                ln = _Line(self.i, self.offsets[self.i - 1], s0)
            s = ln.text
            lineno = ln.no
            if self.comp_row is not None:
                if s.startswith("  "):
                    self.instruction(ln)
                    continue
                if s.startswith("}"):
                    self.close_computation(ln)
                    continue
                if s == "":
                    continue  # empty lines carry nothing (XLA never prints one inside)
                if self.trivia_first(ln):
                    continue
                b = _blanks(s)
                if s[b:b + 1] == "}":
                    self.close_computation(self.trim_start(ln, b))
                    continue
                if not self.starts_module_item(s):
                    self.general(ln)  # an instruction at column 0, or after one space or a tab
                    continue
                # A column-0 line inside a computation: missing '}' — report, then re-dispatch.
                self.error(lineno, 1, "computation not closed before this line", s)
                self.finish_computation(closed=False)
            if s == "":
                continue
            if s.startswith("HloModule "):
                self.i = self.header(s, lineno, self.i)
                continue
            if _SPLIT_MARKER_RE.match(s):
                self.end_module()
                continue
            if s[0] in " \t/":
                if self.trivia_first(ln):
                    continue
                b = _blanks(s)
                if b > 0:  # blanks before a module-level line are insignificant
                    self.pending = self.trim_start(ln, b)
                    continue
            if not self.have_header:
                if _parse_comp_header(s) or _parse_comp_header(_strip_line_comment(s)):
                    self.begin_headerless(lineno)
                elif self.general_header(ln):
                    continue
                else:
                    self.error(lineno, 1, "expected 'HloModule' header", s)
                    continue
            if s in _TABLE_NAMES:
                self.table = s
                continue
            if "0" <= s[:1] <= "9":  # ASCII digits only (str.isdigit takes any Unicode digit)
                self.table_row(s, lineno)
                continue
            hdr = _parse_comp_header(s) or _parse_comp_header(_strip_line_comment(s))
            if hdr is not None:
                self.open_computation(hdr, lineno)
                continue
            if self.general_header(ln):
                continue
            self.error(lineno, 1, "unrecognised line", s)
        if self.comp_row is not None:
            self.error(n, 1, "file ends inside a computation", "")
            self.finish_computation(closed=False)
        self.end_module()

    def general_header(self, ln: _Line) -> bool:
        """A computation header the one-line form does not take: True when one starts at ``ln``
        (its computation is then open, the rest of its last line pending)."""
        h = _general_comp_header(self.whole(), self.fpos(ln))
        if h is None:
            return False
        if not self.have_header:
            self.begin_headerless(ln.no)
        self.open_computation(h, ln.no)
        self.pending = self.resume(ln, h["end"])
        return True

    def begin_headerless(self, lineno: int) -> None:
        self.begin_module_checks(lineno, "")
        self.computations = {}
        self.module_errors = self.n_errors
        self.module_damaged = False
        self.module_index += 1
        self.have_header = True
        self.headerless = {"line": lineno, "entry": None, "last": None}

    def end_module(self) -> None:
        """A `// -----` line or the next `HloModule` header (or the end of the file) ends the
        module."""
        if self.module_open is not None:
            line, name = self.module_open
            if self.headerless is not None:
                name = _headerless_name(self.headerless)
            problem = self.module_problem(name)
            if problem is not None:
                self.problems.append((line, problem))
            self.module_open = None
        self.write_headerless_row()
        self.have_header = False
        self.computations = {}
        self.table = None
        self.file_names, self.function_names, self.file_locations, self.frames = {}, {}, {}, {}

    def begin_module_checks(self, lineno: int, name: str) -> None:
        self.module_open = (lineno, name)
        self.module_computations = self.module_entries = 0

    def module_problem(self, name: str) -> str | None:
        """What a module cut short lacks: any computation; in a file XLA named, its ENTRY
        computation (XLA prints it last; its parser takes a module without one, its last
        computation being the entry, as hand-written inputs have it). Rust: ``module/checks.rs``."""
        if self.module_computations == 0:
            return f"module {name} has no computation (the file is cut short?)"
        if self.module_entries == 0 and self.ctx.xla_named:
            return f"module {name} has no ENTRY computation (XLA prints it last: the file is cut short?)"
        return None

    def write_headerless_row(self) -> None:
        """XLA names a module without header `module_` + its ENTRY computation (else the last)."""
        h = self.headerless
        if h is None:
            return
        self.headerless = None
        self.ctx.add("modules", {
            "name": _headerless_name(h),
            "is_scheduled": False,
            "entry_computation_layout": None,
            "attributes": "",
            "line": h["line"],
            "module_index": self.module_index,
        })

    @staticmethod
    def starts_module_item(s: str) -> bool:
        return (s.startswith("HloModule ") or "0" <= s[:1] <= "9" or s in _TABLE_NAMES
                or _parse_comp_header(s) is not None
                or _parse_comp_header(_strip_line_comment(s)) is not None)

    # ------------------------------------------------------------------ general grammar

    def whole(self) -> str:
        """The whole file as one string ("surrogateescape": one character per undecodable
        byte), and the position of every line in it."""
        if self.f is None:
            if self.data is not None:
                self.f = bytes(self.data).decode("utf-8", "surrogateescape")
            else:
                self.f = "\n".join(s if s is not None else "" for s in self.lines)
            starts = [0]
            f = self.f
            p = f.find("\n")
            while p >= 0 and len(starts) < len(self.lines):
                starts.append(p + 1)
                p = f.find("\n", p + 1)
            self.fstarts = starts
        return self.f

    def fpos(self, ln: _Line) -> int:
        if ln.fpos is None:
            self.whole()
            ln.fpos = self.fstarts[ln.no - 1]
        return ln.fpos

    def line_end(self, no: int) -> int:
        """Position in the whole string just past line ``no``'s text (its final CR excluded)."""
        f = self.whole()
        e = self.fstarts[no] - 1 if no < len(self.fstarts) else len(f)
        if no < len(self.fstarts) and e > 0 and f[e - 1] == "\r":
            e -= 1
        elif no >= len(self.fstarts) and f.endswith("\n"):
            e -= 1
            if e > 0 and f[e - 1] == "\r":
                e -= 1
        return e

    def at(self, no: int, pos: int) -> _Line:
        """The rest of line ``no`` from position ``pos`` of the whole string."""
        f = self.whole()
        start = self.fstarts[no - 1]
        off = self.offsets[no - 1] + len(f[start:pos].encode("utf-8", "surrogateescape"))
        return _Line(no, off, f[pos:self.line_end(no)], pos)

    def trim_start(self, ln: _Line, b: int) -> _Line:
        return _Line(ln.no, ln.offset + len(ln.text[:b].encode("utf-8", "surrogateescape")), ln.text[b:],
                     None if ln.fpos is None and b == 0 else self.fpos(ln) + b)

    def error_pos(self, pos: int, msg: str) -> None:
        import bisect

        f = self.whole()
        k = bisect.bisect_right(self.fstarts, pos) - 1
        start = self.fstarts[k]
        col = len(f[start:pos].encode("utf-8", "surrogateescape")) + 1
        text = self.lines[k] if k < len(self.lines) and self.lines[k] is not None else ""
        self.error(k + 1, col, msg, text)

    def trivia_first(self, ln: _Line) -> bool:
        """Comments or blanks open the line: True when they took all of it, or left a rest
        to read as the next line (``pending``)."""
        rest = self.leading_trivia(ln)
        if rest is None:
            return True
        if rest.offset != ln.offset:
            self.pending = rest
            return True
        return False

    def leading_trivia(self, ln: _Line) -> _Line | None:
        s = ln.text
        i = _blanks(s)
        if i < len(s) and s[i] != "/":
            return ln
        f = self.whole()
        try:
            pos = _g_skip_trivia(f, self.fpos(ln) + i, in_line=True)
        except _GenError as e:
            self.error_pos(e.pos, e.msg)
            self.i = len(self.lines)
            return None
        return self.resume(ln, pos)

    def resume(self, ln: _Line, pos: int) -> _Line | None:
        no = ln.no
        while pos > self.line_end(no):
            if self.i >= len(self.lines):
                return None
            self.i += 1
            no = self.i
        end = self.line_end(no)
        pos = max(pos, self.fstarts[no - 1] if no != ln.no else self.fpos(ln))
        if pos >= end:
            return None
        return self.at(no, pos)

    def general(self, ln: _Line) -> None:
        f = self.whole()
        start = self.fpos(ln)
        try:
            row, end = _general_instruction(f, start)
        except _GenError as e:
            self.error_pos(e.pos, e.msg)
            no = ln.no
            while e.pos > self.line_end(no) and self.i < len(self.lines):
                self.i += 1
                no = self.i
            return
        no = ln.no
        bad = False
        while end > self.line_end(no) and self.i < len(self.lines):
            self.i += 1
            no = self.i
            bad |= self.lines[no - 1] is None
        if bad:
            self.error(ln.no, 1, "instruction runs into a line that is not valid (see its error)", ln.text)
        else:
            self.emit(row, f, start, ln)
        if end < self.line_end(no):
            self.pending = self.at(no, end)

    # ------------------------------------------------------------------ header and tables

    def join_until_balanced(self, s: str, i: int) -> tuple[str, int] | None:
        """Join ``s`` with following lines ("\\n") until its brackets balance; None at EOF."""
        text = s
        while True:
            if _balanced(text):
                return text, i
            if i >= len(self.lines):
                return None
            nxt = self.lines[i]
            i += 1
            text = text + "\n" + (nxt if nxt is not None else "")

    def header(self, s: str, lineno: int, i: int) -> int:
        if self.have_header:
            self.end_module()  # the next module of a file holding several
        joined = self.join_until_balanced(s, i)
        if joined is None:
            self.error(lineno, len(s.encode()) + 1, "module header: unbalanced brackets", s)
            return i
        text, i = joined
        m = _HEADER_RE.match(text)
        if m is not None:
            name, attrs_text = m.group(1), m.group(2) or ""
        else:
            mc = _HEADER_COMMENT_RE.match(text)
            if mc is None or not _trivia_only(mc.group(2)):
                self.error(lineno, 1, "bad module header", s)
                return i
            name, attrs_text = mc.group(1), ""
        try:
            attrs = _attr_dict(split_attributes(attrs_text))
        except ScanError as e:
            self.error(lineno, 1, f"module header attributes: {e}", s)
            return i
        layout = attrs.get("entry_computation_layout")
        if layout is not None and layout.startswith("{") and layout.endswith("}"):
            layout = layout[1:-1]
        self.have_header = True
        self.module_index += 1
        self.begin_module_checks(lineno, name)
        self.computations = {}
        self.module_errors = self.n_errors
        self.module_damaged = False
        self.ctx.add("modules", {
            "name": name,
            "is_scheduled": attrs.get("is_scheduled") == "true",
            "entry_computation_layout": layout,
            "attributes": attrs_text,
            "line": lineno,
            "module_index": self.module_index,
        })
        return i

    def numbers(self, m: re.Match, groups: range, s: str, lineno: int, int32: range = range(0)) -> list[int] | None:
        """The values of ``groups`` of a matched table row (int64; the groups in ``int32``:
        int32); None (and an error at the first character of the first one out of range) if
        one does not fit."""
        out = []
        for g in groups:
            limit = I32_MAX if g in int32 else I64_MAX
            try:
                v = _i64(m.group(g), limit=limit)
            except _OutOfRange:
                col = len(s[:m.start(g)].encode("utf-8")) + 1
                self.error(lineno, col, f"stack-frame table number is out of range (at most {limit})", s)
                return None
            assert v is not None
            out.append(v)
        return out

    # ------------------------------------------------------------------ computations

    def open_computation(self, hdr: dict[str, Any], lineno: int) -> None:
        self.table = None
        self.computation_id += 1
        self.defined = {}
        self.comp_errors = self.n_errors
        self.damaged = False
        self.comp_row = {
            "computation_id": self.computation_id,
            "name": hdr["name"],
            "is_entry": hdr["is_entry"],
            "signature": hdr["signature"],
            "result_shape": hdr["result_shape"],
            "execution_thread": None,
            "line": lineno,
            "module_index": max(self.module_index, 0),
        }
        self.comp_line = lineno
        self.comp_has_root = False

    def close_computation(self, ln: _Line) -> None:
        s, lineno = ln.text, ln.no
        m = _COMP_CLOSE_RE.match(s)
        if m is not None and not (m.group(2) == "" or _trivia_only(m.group(2))):
            m = None
        if m is None:
            nxt = _next_on_line(s)
            if nxt is not None:
                # `} ENTRY main {`: XLA's lexer reads on; what follows is dispatched on its own
                self.finish_computation(closed=True)
                self.pending = self.trim_start(ln, nxt)
                return
            self.error(lineno, 1, "bad computation end", s)
            return
        assert self.comp_row is not None
        self.comp_row["execution_thread"] = m.group(1)
        self.finish_computation(closed=True)

    def finish_computation(self, closed: bool) -> None:
        assert self.comp_row is not None
        # defined for the computations after it (XLA adds a computation once it is read)
        self.computations[self.comp_row["name"]] = self.comp_row["line"]
        self.module_computations += 1
        self.module_entries += bool(self.comp_row["is_entry"])
        if self.headerless is not None:
            self.headerless["last"] = self.comp_row["name"]
            if self.comp_row["is_entry"]:
                self.headerless["entry"] = self.comp_row["name"]
        self.ctx.add("computations", self.comp_row)
        self.comp_row = None

    # ------------------------------------------------------------------ instructions

    def instruction(self, ln: _Line) -> None:
        s, lineno = ln.text, ln.no
        text = s
        if "constant(" in s and _needs_continuation(s):
            joined = self.join_constant(s, self.i)
            if joined is None:
                self.error(lineno, 1, "constant literal not closed before end of file", s)
                self.i = len(self.lines)
                return
            text, self.i = joined
            row = parse_instruction(text)
            if row is None:
                self.error(lineno, 1, "cannot parse instruction", s)
                return
            self.emit(row, text, 0, ln)
            return
        row = parse_instruction(text)
        # trailing blanks or a ',' continue into the general grammar (a next line may start
        # with ',': XLA reads line breaks as blanks)
        # (a line ending in ',' continues on the next: `custom_call_target="x",` then
        # `backend_config={…}` on a line of its own, as XLA's test inputs write)
        if row is not None and not s.endswith((" ", "\t", ",")) and not self.next_starts_with_comma(ln):
            self.emit(row, text, 0, ln)
            return
        rest = self.leading_trivia(ln)
        if rest is None:
            return
        if rest.offset != ln.offset:
            self.pending = rest
            return
        b = _blanks(rest.text)
        if rest.text[b:b + 1] == "}":
            self.close_computation(self.trim_start(rest, b))
            return
        self.general(rest)

    def next_starts_with_comma(self, ln: _Line) -> bool:
        """The next token after the line (blanks, line breaks, comments skipped) is a ',' on a
        later line."""
        k = self.i  # index of the next line
        # fast answers without building the whole-file string: the next line decides
        while k < len(self.lines):
            t = self.lines[k]
            if t is None:
                break
            u = t.lstrip(" \t")
            if u == "":
                k += 1
                continue
            if u.startswith("/"):
                break
            return u.startswith(",")
        else:
            return False
        f = self.whole()
        e = self.line_end(ln.no) if ln.fpos is None else ln.fpos + len(ln.text)
        try:
            q = _g_skip_trivia(f, e)
        except _GenError:
            return False
        return f[q:q + 1] == "," and "\n" in f[e:q]

    def unknown_attribute(self, key: str, raw: str, text: str, base: int, at: int, ln: _Line) -> None:
        """A ``notes`` row for an attribute key no XLA we know prints, at its line and column
        (``text`` may span lines from ``base``; Rust: ``unknown_attributes``)."""
        nl = text.rfind("\n", base, at)
        if nl < 0:
            no, line_text = ln.no, ln.text
            col = len(text[base:at].encode("utf-8")) + 1
        else:
            no = ln.no + text.count("\n", base, at)
            end = text.find("\n", at)
            line_text = text[nl + 1:end if end >= 0 else len(text)]
            if line_text.endswith("\r"):
                line_text = line_text[:-1]
            col = len(text[nl + 1:at].encode("utf-8")) + 1
        self.ctx.note(no, line_text, col, "unknown_attribute", key, raw,
                      f"unknown attribute '{key}' (newer XLA?); kept raw in attributes")

    def place(self, text: str, base: int, at: int, ln: _Line) -> tuple[int, int, str]:
        """Line number, column and line text of position ``at`` of ``text`` (which may span
        lines from ``base``, the start of line ``ln``). Rust: ``emit.rs`` ``place``."""
        nl = text.rfind("\n", base, at)
        if nl < 0:
            return ln.no, len(text[base:at].encode("utf-8", "surrogateescape")) + 1, ln.text
        no = ln.no + text.count("\n", base, at)
        end = text.find("\n", at)
        line_text = text[nl + 1:end if end >= 0 else len(text)]
        if line_text.endswith("\r"):
            line_text = line_text[:-1]
        return no, len(text[nl + 1:at].encode("utf-8", "surrogateescape")) + 1, line_text

    def error_in(self, text: str, base: int, at: int, ln: _Line, msg: str) -> None:
        no, col, line_text = self.place(text, base, at, ln)
        self.error(no, col, msg, line_text)

    def note_in(self, text: str, base: int, at: int, ln: _Line, kind: str, token: str, raw: str, msg: str) -> None:
        no, col, line_text = self.place(text, base, at, ln)
        self.ctx.note(no, line_text, col, kind, token, raw, msg)

    def rules(self, row: dict[str, Any], text: str, base: int, ln: _Line) -> tuple[int, int] | None | bool:
        """XLA's rules no single field shows (``rules.py``; Rust: ``emit.rs`` ``rules``), in
        the same order: False when one was broken (its error reported: no row), else the first
        unknown element type of the shape (or None). The name is defined from here on in its
        computation, unless it was already."""
        name_at, shape_at, _, operands_at = row["_at"]
        name = row["name"]
        if name in self.defined:
            self.error_in(text, base, name_at, ln,
                          f"instruction '{name}' is already defined in this computation (line {self.defined[name]}): "
                          "XLA's parser refuses a second")
            return False
        self.damaged |= self.n_errors > self.comp_errors
        self.module_damaged |= self.damaged or self.n_errors > self.module_errors
        dangling = None if self.damaged else next(
            (k for k, o in enumerate(row["operands"]) if o not in self.defined), None)
        self.defined[name] = ln.no
        at = row["number_error"]
        if at is not None:
            # a metadata number out of range: an error at its line and column, no row
            self.error_in(text, base, at, ln, f"metadata number is out of range (at most {I32_MAX})")
            return False
        keys = [k for k, _, _ in row["_spans"]]
        rep = next((k for k in range(1, len(keys)) if keys[k] in keys[:k]), None)
        if rep is not None:
            self.error_in(text, base, row["_key_at"][rep], ln,
                          f"attribute '{keys[rep]}' is given twice: XLA's parser refuses a repeated attribute")
            return False
        unknown_type = None
        if row["shape"]:
            try:
                unknown_type = check_shape(row["shape"])
            except ShapeError as e:
                self.error_in(text, base, shape_at + e.pos, ln, e.msg)
                return False
        if dangling is not None:
            op = row["operands"][dangling]
            pos = _operand_positions(row["operand_text"])
            at = operands_at if pos is None else operands_at + pos[dangling]
            self.error_in(text, base, at, ln, f"operand '{op}' is not defined before this instruction in its "
                                               "computation (XLA's parser needs it earlier)")
            return False
        for c in ([] if self.module_damaged else row["called_computations"]):
            if c in self.computations:
                continue
            at = next((a for k, a, b in row["_spans"] if k in CALLED_KEYS and c in _name_list(text[a:b])), operands_at)
            self.error_in(text, base, at, ln, f"computation '{c}' is not defined before this instruction (XLA's "
                                               "parser needs it earlier in the module)")
            return False
        return unknown_type

    def rule_notes(self, row: dict[str, Any], text: str, base: int, ln: _Line, unknown_type: tuple[int, int] | None,
                   opcode_at: int) -> None:
        """Rust: ``emit.rs`` ``rule_notes``."""
        _, shape_at, _, operands_at = row["_at"]
        if unknown_type is not None:
            a, b = unknown_type
            t = row["shape"][a:b]
            self.note_in(text, base, shape_at + a, ln, "unknown_element_type", t, row["shape"],
                         f"unknown element type '{t}' (newer XLA?); the row is kept, its shape as written")
        if not known_opcode(row["opcode"]):
            op = row["opcode"]
            self.note_in(text, base, opcode_at, ln, "unknown_opcode", op, op,
                         f"unknown opcode '{op}' (newer XLA?); the row is kept, and the cost analysis counts it as "
                         "unknown")
        if row["_empty_operand"]:
            self.note_in(text, base, operands_at, ln, "empty_operand", "", row["operand_text"],
                         "an empty operand (', ,' or a ',' before ')'): skipped, as XLA's parser does")
        for key, ks, ve in row["_unknown_metadata"]:
            self.note_in(text, base, ks, ln, "unknown_metadata_key", key, text[ks:ve],
                         f"unknown metadata key '{key}' (newer XLA?); kept raw in attributes")

    def emit(self, row: dict[str, Any], text: str, base: int, ln: _Line) -> None:
        lineno = ln.no
        unknown_type = self.rules(row, text, base, ln)
        if unknown_type is False:
            return
        row.pop("number_error")
        checks = {k: row.pop(k) for k in ("_at", "_spans", "_key_at", "_empty_operand", "_unknown_metadata")}
        if row["is_root"]:
            if self.comp_has_root:
                self.error(lineno, 3, "second ROOT in computation", ln.text)
            self.comp_has_root = True
        self.resolve_source(row)
        row.pop("attribute_map")
        row.pop("metadata")
        unknown = row.pop("unknown_attributes")
        assert self.comp_row is not None
        row["computation_id"] = self.comp_row["computation_id"]
        row["instruction_id"] = self.instruction_id
        row["line"] = lineno
        row["offset"] = ln.offset
        self.instruction_id += 1
        self.ctx.add("instructions", row)
        for key, ks, ve in unknown:
            self.unknown_attribute(key, text[ks:ve], text, base, ks, ln)
        if (unknown_type is not None or checks["_empty_operand"] or checks["_unknown_metadata"]
                or not known_opcode(row["opcode"])):
            row.update(checks)
            self.rule_notes(row, text, base, ln, unknown_type, checks["_at"][2])
        if row["opcode"] == "custom-call":
            info = custom_call_info(row["backend_config"])
            info.update(instruction_id=row["instruction_id"], name=row["name"],
                        target=row["custom_call_target"] or "")
            self.ctx.add("custom_calls", info)

    def join_constant(self, s: str, i: int) -> tuple[str, int] | None:
        text = s
        while _needs_continuation(text):
            if i >= len(self.lines):
                return None
            nxt = self.lines[i]
            i += 1
            text = text + "\n" + (nxt if nxt is not None else "")
        return text, i



def _balanced(text: str) -> bool:
    """No bracket left open (a line that needs no continuation line), strings and comments
    closed."""
    depth = 0
    try:
        for _, _, depth in _structure(text, 0):
            pass
    except ScanError:
        return False
    return depth <= 0
