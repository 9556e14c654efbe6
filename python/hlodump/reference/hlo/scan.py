"""Bracket-, string- and comment-aware scanning of HLO text, and its string unescaping
(mirrors ``src/hlo/scan.rs``)."""

from __future__ import annotations

import re
from collections.abc import Iterator


NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_NAME_RE = re.compile(NAME)
_KEY_EQ_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*=")
_OPCODE_RE = re.compile(r"[a-z][a-z0-9\-]*")
_INSTR_START_RE = re.compile(r"\s*(ROOT )?%?(" + NAME + r") = ")

# Keys whose values name called computations (schema: instructions.called_computations).
CALLED_KEYS = (
    "calls", "to_apply", "body", "condition", "branch_computations", "true_computation",
    "false_computation", "select", "scatter", "called_computations",
)

_OPEN = "([{"
_CLOSE = ")]}"
# Characters the scanner must look at: brackets, string quotes, comment starts.
_SPECIAL_RE = re.compile(r'[()\[\]{}"/]')
# The rest of a double-quoted string after its opening quote (backslash escapes skipped).
_STRING_REST_RE = re.compile(r'(?:[^"\\]|\\.)*"', re.S)


class ScanError(ValueError):
    """The text ended inside a bracket, string or comment."""


def _skip_string(text: str, i: int) -> int:
    """``text[i]`` is an opening '"': index just past the closing quote."""
    m = _STRING_REST_RE.match(text, i + 1)
    if m is None:
        raise ScanError("unterminated string")
    return m.end()


def _skip_comment(text: str, i: int) -> int:
    """``text[i:i+2]`` is '/*': index just past '*/'."""
    j = text.find("*/", i + 2)
    if j < 0:
        raise ScanError("unterminated comment")
    return j + 2


def _structure(text: str, i: int, pat: "re.Pattern[str]" = _SPECIAL_RE) -> Iterator[tuple[int, str, int]]:
    """The structural characters of ``text`` from ``i`` that ``pat`` finds, as (position,
    character, bracket depth after it): brackets ``()[]{}`` counted together (§3.8.1), strings
    and ``/*…*/`` comments skipped whole (ScanError if one does not end); any other character
    ``pat`` matches (a separator, a '/' that opens no comment) is yielded as it is. The one
    walk behind ``_match_close``, ``_split_top``, the attribute cut and the balance check."""
    depth = 0
    n = len(text)
    while i < n:
        m = pat.search(text, i)
        if m is None:
            return
        i = m.start()
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == '"':
            i = _skip_string(text, i)
            continue
        elif text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        yield i, c, depth
        i += 1


def _match_close(text: str, i: int) -> int:
    """``text[i]`` is an opening bracket: index just past its matching close.

    Depth counts ()[]{} together (§3.8.1); strings and /*…*/ comments are skipped.
    Raises ScanError if the text ends first.
    """
    for j, c, depth in _structure(text, i):
        if depth == 0 and c in _CLOSE:
            return j + 1
    raise ScanError("unbalanced brackets")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` characters lying at depth 0, outside strings and comments."""
    parts: list[str] = []
    start = 0
    for i, c, depth in _structure(text, 0, re.compile(r'[()\[\]{}"/' + re.escape(sep) + "]")):
        if c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)


def _strip_comments(s: str) -> str:
    return _COMMENT_RE.sub("", s) if "/*" in s else s


# ----------------------------------------------------------------------------- strings

_SIMPLE_ESCAPES = {
    "n": 0x0A, "r": 0x0D, "t": 0x09, "\\": 0x5C, '"': 0x22, "'": 0x27, "?": 0x3F,
    "a": 0x07, "b": 0x08, "f": 0x0C, "v": 0x0B,
}
_ESCAPE_RE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.S)


def c_unescape(s: str) -> str:
    """C-unescape the inside of a quoted HLO string (FORMATS.md §3.1.4).

    Octal (``\\303\\251``) and ``\\xHH`` escapes give bytes; the result is decoded as UTF-8
    (undecodable bytes become U+FFFD). Unknown single-character escapes keep the character.
    """
    if "\\" not in s:
        return s
    out = bytearray()
    pos = 0
    for m in _ESCAPE_RE.finditer(s):
        out += s[pos:m.start()].encode("utf-8")
        octal, hexa, ch = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        else:
            out += ch.encode("utf-8")
        pos = m.end()
    out += s[pos:].encode("utf-8")
    return out.decode("utf-8", "replace")


def _unquote(value: str) -> str | None:
    """A quoted value ``"…"`` unescaped; None if ``value`` is not exactly one quoted string."""
    if len(value) >= 2 and value[0] == '"':
        try:
            end = _skip_string(value, 0)
        except ScanError:
            return None
        if end == len(value):
            return c_unescape(value[1:-1])
    return None
