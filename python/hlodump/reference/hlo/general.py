"""The general grammar: blanks, comments and line breaks between tokens, for instructions the
line grammar does not take (mirrors ``src/hlo/general.rs``)."""

from __future__ import annotations

import re
from typing import Any

from .scan import ScanError, _KEY_EQ_RE, _NAME_RE, _OPCODE_RE
from .instruction import _SHAPE_PLAIN, _finish


# ----------------------------------------------------------------------------- general grammar
#
# What XLA's lexer/parser accept (hlo_lexer.cc LexToken, hlo_parser.cc ParseInstruction /
# ParseInstructionRhs / ParseAttributes) for instructions the one-line fast path leaves alone:
# blanks (space, tab, CR, LF) and comments between any tokens, so an instruction may continue
# over lines; a missing result shape (shape ""); errors with a position and what was expected.
# Mirrors src/hlo/general.rs line for line. ``f`` is the whole file decoded with
# "surrogateescape", so that one character stands for one byte where it matters (positions of
# errors) and a line that is not UTF-8 keeps its length.


class _GenError(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos = pos
        self.msg = msg


_BLANKS = " \t\r\n"
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = _ALNUM | frozenset("_.-")
_GSTR_RE = re.compile('["\\\\\x00\n]')


def _g_skip_trivia(f: str, i: int, in_line: bool = False) -> int:
    n = len(f)
    while i < n:
        c = f[i]
        if c == "\n" and in_line:
            break
        if c in _BLANKS:
            i += 1
        elif f.startswith("//", i):
            j = f.find("\n", i)
            i = n if j < 0 else j
        elif f.startswith("/*", i):
            j = f.find("*/", i + 2)
            if j < 0:
                raise _GenError(i, "unterminated comment: '/*' without '*/'")
            i = j + 2
        else:
            break
    return i


def _g_what(f: str, i: int) -> str:
    if i >= len(f):
        return "end of file"
    c = f[i]
    if c == "\0":
        return "a NUL byte"
    if c == "\n":
        return "end of line"
    if " " <= c <= "~":
        return f"'{c}'"
    return "byte 0x%02x" % c.encode("utf-8", "surrogateescape")[0]


def _g_expected(f: str, i: int, what: str) -> _GenError:
    return _GenError(i, f"expected {what}, found {_g_what(f, i)}")


def _g_group_end(f: str, i: int, shape: bool) -> int:
    stack: list[tuple[str, int]] = []
    k = i
    n = len(f)
    while True:
        if k >= n:
            open_, at = stack[-1]
            raise _GenError(at, f"'{open_}' is not closed before the end of the file")
        c = f[k]
        if c in "([{":
            stack.append((c, k))
            k += 1
        elif c in ")]}":
            open_, _ = stack.pop()
            want = ")]}"["([{".index(open_)]
            if c != want:
                raise _g_expected(f, k, f"'{want}'")
            k += 1
            if not stack:
                return k
        elif c == "/" and f[k + 1:k + 2] in ("*", "/"):
            k = _g_skip_trivia(f, k)
        elif c == '"' and not shape:
            k = _g_string_end(f, k)
        elif c == "\0":
            raise _GenError(k, "unexpected NUL byte")
        elif shape and not (c in _SHAPE_PLAIN or c in _BLANKS):
            raise _GenError(k, f"unexpected {_g_what(f, k)} in a shape")
        else:
            k += 1


def _g_string_end(f: str, i: int) -> int:
    """Past the closing quote of the string at ``f[i]``; a line break before it (escaped or
    not) is an unterminated string at its opening quote (Rust: ``general.rs`` ``string_end``)."""
    k = i + 1
    n = len(f)
    while True:
        m = _GSTR_RE.search(f, k)
        if m is None:
            raise _GenError(i, _UNTERMINATED)
        at = m.start()
        c = f[at]
        if c == '"':
            return at + 1
        if c == "\0":
            raise _GenError(at, "unexpected NUL byte")
        if c == "\n" or at + 1 >= n or f[at + 1] == "\n":
            raise _GenError(i, _UNTERMINATED)
        k = at + 2


_UNTERMINATED = "unterminated string: no closing '\"' on its line"


def _g_alnum_end(f: str, i: int) -> int:
    while i < len(f) and f[i] in _ALNUM:
        i += 1
    return i


def _g_shape_end(f: str, i: int) -> int:
    if f[i] == "(":
        return _g_group_end(f, i, True)
    e = _g_alnum_end(f, i)
    if f[i:e] == "b" and f[e:e + 1] == "(":
        return _g_group_end(f, e, True)
    p = _g_skip_trivia(f, e)
    if f[p:p + 1] != "[":
        raise _g_expected(f, p, "'[' after the element type")
    j = _g_group_end(f, p, True)
    q = _g_skip_trivia(f, j)
    if f[q:q + 1] == "{":
        return _g_group_end(f, q, True)
    return j


def _g_starts_shape(f: str, i: int) -> bool:
    c = f[i:i + 1]
    if c == "(":
        return True
    if c == "" or c not in _LOWER:
        return False
    e = _g_alnum_end(f, i)
    if f[i:e] == "b" and f[e:e + 1] == "(":
        return True
    p = _g_skip_trivia(f, e)
    return f[p:p + 1] == "["


def _general_comp_header(f: str, start: int) -> dict[str, Any] | None:
    """A computation header with other blanks, comments or line breaks than the printer's (XLA's
    lexer takes them; its test inputs write them): ``[ENTRY] [%]NAME [ "(" … ")" "->" SHAPE ]
    "{"`` from ``start``. None when the text is not one. Mirrors general.rs ``comp_header_at``."""
    try:
        i = _g_skip_trivia(f, start)
        is_entry = False
        if f.startswith("ENTRY", i) and not (f[i + 5:i + 6] != "" and f[i + 5] in _NAME_CHARS):
            j = _g_skip_trivia(f, i + 5)
            k = j + 1 if f[j:j + 1] == "%" else j
            if j > i + 5 and _NAME_RE.match(f, k):
                is_entry, i = True, j
        a = i + 1 if f[i:i + 1] == "%" else i
        m = _NAME_RE.match(f, a)
        if m is None:
            return None
        b = m.end()
        p = _g_skip_trivia(f, b)
        if f[p:p + 1] == "{":
            return {"name": f[a:b], "is_entry": is_entry, "signature": "", "result_shape": "", "end": p + 1}
        if f[p:p + 1] != "(":
            return None
        close = _g_group_end(f, p, False)
        q = _g_skip_trivia(f, close)
        if not f.startswith("->", q):
            return None
        r = _g_skip_trivia(f, q + 2)
        e = _g_result_shape_end(f, r)
        if e is None:
            return None
        body = _g_skip_trivia(f, e)
        if f[body:body + 1] != "{":
            return None
        return {"name": f[a:b], "is_entry": is_entry, "signature": f[p:close], "result_shape": f[r:e],
                "end": body + 1}
    except _GenError:
        return None


def _g_result_shape_end(f: str, i: int) -> int | None:
    """A tuple, or ``TYPE[ … ]`` and a layout ``{ … }`` when the body's ``{`` follows it."""
    c = f[i:i + 1]
    if c == "(":
        return _g_group_end(f, i, True)
    if c == "" or c not in _ALNUM:
        return None
    w = _g_alnum_end(f, i)
    p = _g_skip_trivia(f, w)
    if f[p:p + 1] != "[":
        return None
    dims = _g_group_end(f, p, True)
    q = _g_skip_trivia(f, dims)
    if f[q:q + 1] == "{":
        try:
            layout = _g_group_end(f, q, True)
            if f[_g_skip_trivia(f, layout):][:1] == "{":
                return layout
        except _GenError:
            pass
    return dims


def _general_instruction(f: str, start: int) -> tuple[dict[str, Any], int]:
    """One instruction starting at ``start`` (blanks or comments may come first): (row, position
    just past its last token). Raises _GenError."""
    p = _g_skip_trivia(f, start)
    is_root = False
    if f.startswith("ROOT", p) and not (f[p + 4:p + 5] != "" and f[p + 4] in _NAME_CHARS):
        q = _g_skip_trivia(f, p + 4)
        if f[q:q + 1] != "=":
            is_root = True
            p = q
    percent = f[p:p + 1] == "%"
    na = p + (1 if percent else 0)
    m = _NAME_RE.match(f, na)
    if m is None:
        raise _g_expected(f, na, "an instruction name")
    nb = m.end()
    if not percent and f[nb:nb + 1] == "=":
        raise _g_expected(f, nb, "a blank between the instruction name and '='")
    p = _g_skip_trivia(f, nb)
    if f[p:p + 1] != "=":
        raise _g_expected(f, p, "'=' after the instruction name")
    p = _g_skip_trivia(f, p + 1)
    if _g_starts_shape(f, p):
        e = _g_shape_end(f, p)
        shape = (p, e)
        p = _g_skip_trivia(f, e)
    else:
        shape = (p, p)
    om = _OPCODE_RE.match(f, p)
    if om is None:
        raise _g_expected(f, p, "a shape or an opcode" if shape[0] == shape[1] else "an opcode after the shape")
    opcode = (p, om.end())
    p = _g_skip_trivia(f, om.end())
    if f[p:p + 1] != "(":
        raise _g_expected(f, p, "'(' after the opcode")
    close = _g_group_end(f, p, False)
    operands = (p + 1, close - 1)
    spans: list[tuple[str, int, int]] = []
    end = close
    err = None
    try:
        end = _g_attributes(f, close, spans)
    except _GenError as e:
        err = e
    attributes = (spans[0][3], spans[-1][2]) if spans else (end, end)
    if err is not None:
        raise err
    try:
        row = _finish(f, is_root, f[na:nb], f[shape[0]:shape[1]], f[opcode[0]:opcode[1]],
                      f[operands[0]:operands[1]], f[attributes[0]:attributes[1]],
                      [(k, a, b) for k, a, b, _ in spans], (na, shape[0], opcode[0], operands[0]),
                      [ks for _, _, _, ks in spans])
    except ScanError as e:
        raise _GenError(attributes[0], f"bad attribute value: {e}") from None
    if row is None:
        raise _GenError(start, "cannot parse instruction")
    return row, end


def _g_attributes(f: str, end: int, out: list) -> int:
    q = _g_skip_trivia(f, end)
    while f[q:q + 1] == ",":
        k = _g_skip_trivia(f, q + 1)
        m = _KEY_EQ_RE.match(f, k)
        if m is None:
            raise _g_expected(f, k, "an attribute name (KEY=) after ','")
        eq = m.end() - 1
        v = _g_skip_trivia(f, eq + 1)
        vend, nxt = _g_value_end(f, v)
        if vend == v:
            raise _g_expected(f, v, f"a value after '{f[k:eq]}='")
        out.append((f[k:eq], v, vend, k))
        end = vend
        if nxt is None:
            return end
        q = nxt
    return end


def _g_value_end(f: str, v: int) -> tuple[int, int | None]:
    last = v
    k = v
    n = len(f)
    while True:
        if k >= n:
            return last, None
        c = f[k]
        if c in " \t\r":
            k += 1
        elif c == "/" and f[k + 1:k + 2] in ("*", "/"):
            k = _g_skip_trivia(f, k, in_line=True)
        elif c == "\n":
            q = _g_skip_trivia(f, k)
            if f[q:q + 1] != ",":
                return last, None
            k = q
        elif c == ",":
            q = _g_skip_trivia(f, k + 1)
            if _KEY_EQ_RE.match(f, q):
                return last, k
            if q >= n or f[q] in ")]},":
                raise _g_expected(f, q, "an attribute name (KEY=) after ','")
            k += 1
            last = k
        elif c in "([{":
            k = _g_group_end(f, k, False)
            last = k
        elif c in ")]}":
            return last, None
        elif c == '"':
            k = _g_string_end(f, k)
            last = k
        elif c == "\0":
            raise _GenError(k, "unexpected NUL byte")
        else:
            k += 1
            last = k
