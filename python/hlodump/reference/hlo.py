"""Reference parser for HLO module text (docs/FORMATS.md §3, §4, §6).

Entry points:

* ``parse_module(lines, ctx, data=None)`` — one HLO module file into the ``modules``,
  ``computations``, ``instructions``, ``stack_frames`` and ``custom_calls`` tables.
* ``parse_instruction(text)`` — one instruction line into a dict (also used for the
  ``from instruction:`` text of buffer-assignment files). ``parse_module`` uses it for every
  instruction line: there is exactly one instruction parser.
* ``split_attributes(text)`` — the generic attribute rule of §3.8.1.
* ``decode_body(backend_config)`` / ``custom_call_info(...)`` — custom-call body analysis.

The code is deliberately plain: a small bracket/string/comment-aware scanner (``_scan``) is the
only piece of cleverness, and it jumps with regular expressions so that multi-MB lines (base64
kernel bodies, huge literals) stay fast.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

__all__ = [
    "parse_module",
    "parse_instruction",
    "split_attributes",
    "parse_metadata",
    "c_unescape",
    "decode_body",
    "custom_call_info",
]

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


def _match_close(text: str, i: int) -> int:
    """``text[i]`` is an opening bracket: index just past its matching close.

    Depth counts ()[]{} together (§3.8.1); strings and /*…*/ comments are skipped.
    Raises ScanError if the text ends first.
    """
    depth = 0
    n = len(text)
    while i < n:
        m = _SPECIAL_RE.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c in _OPEN:
            depth += 1
            i += 1
        elif c in _CLOSE:
            depth -= 1
            i += 1
            if depth == 0:
                return i
        elif c == '"':
            i = _skip_string(text, i)
        elif text.startswith("/*", i):
            i = _skip_comment(text, i)
        else:
            i += 1
    raise ScanError("unbalanced brackets")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` characters lying at depth 0, outside strings and comments."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    pat = re.compile(r'[()\[\]{}"/' + re.escape(sep) + "]")
    while i < n:
        m = pat.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == sep and depth == 0:
            parts.append(text[start:i])
            i += 1
            start = i
        elif c in _OPEN:
            depth += 1
            i += 1
        elif c in _CLOSE:
            depth -= 1
            i += 1
        elif c == '"':
            i = _skip_string(text, i)
        elif text.startswith("/*", i):
            i = _skip_comment(text, i)
        else:
            i += 1
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


# ----------------------------------------------------------------------------- attributes


def split_attributes(text: str) -> list[tuple[str, str]]:
    """Split an attribute list ``k1=v1, k2=v2, …`` per FORMATS.md §3.8.1.

    A value ends right before a ", " at depth 0 (()[]{} counted together, strings and /*…*/
    comments skipped) that is followed by ``KEY=``, or at the end of the text. So the generic
    ``calls=%a, %b`` form keeps ``%a, %b`` as one value. Returns (key, raw value) pairs in
    printed order. Raises ScanError for unbalanced text or an item without ``KEY=``.
    """
    return [(k, text[a:b]) for k, a, b in _attribute_spans(text)]


def _attribute_spans(text: str) -> list[tuple[str, int, int]]:
    """``split_attributes`` as (key, value start, value end) in ``text``."""
    out: list[tuple[str, int, int]] = []
    n = len(text)
    if n == 0:
        return out
    pos = 0
    while True:
        m = _KEY_EQ_RE.match(text, pos)
        if m is None:
            raise ScanError(f"expected KEY= at {pos}")
        key = text[pos:m.end() - 1]
        vstart = m.end()
        if vstart >= n or text[vstart] in " \t,":
            raise ScanError("irregular text")  # empty value / blank after '=': general grammar
        i = vstart
        depth = 0
        end = n
        while i < n:
            sm = _ATTR_SPECIAL_RE.search(text, i)
            if sm is None:
                break
            i = sm.start()
            c = text[i]
            if c in _OPEN:
                depth += 1
                i += 1
            elif c in _CLOSE:
                depth -= 1
                i += 1
            elif c == '"':
                i = _skip_string(text, i)
            elif c == "/":
                if text.startswith("//", i):
                    raise ScanError("irregular text")
                i = _skip_comment(text, i) if text.startswith("/*", i) else i + 1
            else:  # ','
                if depth == 0:
                    if i > 0 and text[i - 1] in " \t":
                        raise ScanError("irregular text")
                    if text.startswith(", ", i) and _KEY_EQ_RE.match(text, i + 2):
                        end = i
                        break
                    if _KEY_EQ_RE.match(text, _skip_blanks(text, i + 1)):
                        raise ScanError("irregular text")
                i += 1
        if depth != 0:
            raise ScanError("unbalanced brackets in attribute value")
        out.append((key, vstart, end))
        if end >= n:
            return out
        pos = end + 2


_ATTR_SPECIAL_RE = re.compile(r'[()\[\]{}"/,]')


def _skip_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _attr_dict(pairs: list[tuple[str, str]]) -> dict[str, str]:
    d: dict[str, str] = {}
    for k, v in pairs:
        d.setdefault(k, v)
    return d


_MD_ITEM_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.\-]*)=")


def parse_metadata(value: str) -> dict[str, str]:
    """``{op_name="…" source_line=3 …}`` → {key: raw value} (space-separated items, §3.9)."""
    return {k: raw for k, (_, raw) in _metadata_spans(value).items()}


def _metadata_spans(value: str) -> dict[str, tuple[int, str]]:
    """``parse_metadata`` with the offset of each raw value in ``value``."""
    out: dict[str, tuple[int, str]] = {}
    v = value.strip()
    base = len(value) - len(value.lstrip())
    if v.startswith("{") and v.endswith("}"):
        v = v[1:-1]
        base += 1
    pos = 0
    n = len(v)
    while pos < n:
        m = _MD_ITEM_RE.match(v, pos)
        if m is None:
            if v[pos:].strip() == "":
                break
            raise ScanError("bad metadata item")
        key = m.group(1)
        i = m.end()
        if i < n and v[i] == '"':
            j = _skip_string(v, i)
        elif i < n and v[i] in _OPEN:
            j = _match_close(v, i)
        else:
            j = i
            while j < n and v[j] != " ":
                j += 1
        out.setdefault(key, (base + i, v[i:j]))
        pos = j
    return out


I64_MAX = 2**63 - 1
_ASCII_INT_RE = re.compile(r"-?[0-9]+")


class _OutOfRange(Exception):
    pass


def _i64(text: str, signed: bool = True) -> int | None:
    """An HLO number by ASCII byte rules: ``-?[0-9]+`` (``[0-9]+`` unless ``signed``), leading
    zeros allowed. None when ``text`` is not such a number; raises _OutOfRange when it is one
    that does not fit int64 (never converts long digit strings whole: Python's int() refuses
    > 4300 digits)."""
    if _ASCII_INT_RE.fullmatch(text) is None or (not signed and text.startswith("-")):
        return None
    neg = text.startswith("-")
    d = text[1:] if neg else text
    d = d.lstrip("0") or "0"
    if len(d) > 19:
        raise _OutOfRange
    v = -int(d) if neg else int(d)
    if not -I64_MAX - 1 <= v <= I64_MAX:
        raise _OutOfRange
    return v


def _name_list(value: str) -> list[str]:
    """``%a`` / ``{%a, %b}`` / ``%a, %b`` → ["a", "b"]."""
    v = _strip_comments(value).strip()
    if v.startswith("{") and v.endswith("}"):
        v = v[1:-1]
    names = []
    for part in v.split(","):
        p = part.strip()
        if p.startswith("%"):
            p = p[1:]
        if p:
            names.append(p)
    return names


# ----------------------------------------------------------------------------- instructions


_SHAPE_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,:*<=?#+~")


def _scan_shape(text: str, i: int) -> int:
    """End index of the shape starting at ``text[i]``: up to the first space at depth 0.
    "irregular text" for a character that cannot be part of a shape (NUL, quote, tab, ``//``,
    non-ASCII …): the general grammar then reports it."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in _SHAPE_PLAIN:
            i += 1
            continue
        if c == " ":
            if depth == 0:
                return i
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == "/" and text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        else:
            raise ScanError("irregular text")
        i += 1
    raise ScanError("shape not followed by an opcode")


_OPERAND_TAIL_RE = re.compile(r"%?(" + NAME + r")(?:#[0-9]+)?$")


def _operand_names(operand_text: str) -> list[str]:
    """Operand names of an operand region (not for parameter/constant).

    Items are split at depth-0 commas; ``/*index=N*/`` comments dropped; an old-style shape
    prefix (``f32[] %x``, ``(f32[], s32[]) %t``) dropped by taking the text after the last space;
    a leading '%' and a compact tuple index ``#N`` removed; ``...(+N)`` elision markers skipped.
    """
    text = _strip_comments(operand_text).strip()
    if not text:
        return []
    names = []
    for item in _split_top(text):
        item = item.strip()
        if not item or item.startswith("...("):
            continue
        last = item.rsplit(" ", 1)[-1]
        m = _OPERAND_TAIL_RE.match(last)
        names.append(m.group(1) if m else last)
    return names


def parse_instruction(text: str) -> dict[str, Any] | None:
    """Parse one instruction (``[  ][ROOT ]%name = SHAPE opcode(OPERANDS)[, ATTRS]``).

    Returns None when ``text`` is not an instruction (including unbalanced brackets or
    attributes that do not follow the generic rule). The result has the keys of the
    ``instructions`` table that one line determines (no ids, line or offset) plus
    ``attribute_map`` (dict key → raw value, first occurrence) and ``metadata`` (dict).
    source_file/source_line come from metadata only; ``source_function`` is None
    (``parse_module`` resolves stack frames).
    """
    m = _INSTR_START_RE.match(text)
    if m is None:
        return None
    try:
        return _parse_instruction_rest(text, m)
    except ScanError:
        return None


def _parse_instruction_rest(text: str, m: re.Match) -> dict[str, Any] | None:
    is_root = m.group(1) is not None
    name = m.group(2)
    i = m.end()
    j = _scan_shape(text, i)
    shape = text[i:j]
    if not shape:
        return None
    om = _OPCODE_RE.match(text, j + 1)
    if om is None or om.end() >= len(text) or text[om.end()] != "(":
        return None
    opcode = om.group(0)
    open_paren = om.end()
    close = _match_close(text, open_paren)
    if text[close - 1] != ")":
        raise ScanError("irregular text")  # `(…]`: the general grammar reports it
    operand_text = text[open_paren + 1:close - 1]
    rest = text[close:]
    if rest == "":
        attributes = ""
    elif rest.startswith(", "):
        attributes = rest[2:]
    else:
        return None
    spans = [(k, a + close + 2, b + close + 2) for k, a, b in _attribute_spans(attributes)]
    return _finish(text, is_root, name, shape, opcode, operand_text, attributes, spans)


def _finish(text: str, is_root: bool, name: str, shape: str, opcode: str, operand_text: str,
            attributes: str, spans: list[tuple[str, int, int]]) -> dict[str, Any] | None:
    """The row of an instruction from its pieces; ``spans``: (key, value start, value end) in
    ``text`` (the one-line fast path and the general grammar both end here)."""
    pairs = [(k, text[a:b]) for k, a, b in spans]
    attrs = _attr_dict(pairs)

    operands = [] if opcode in ("parameter", "constant") else _operand_names(operand_text)
    called: list[str] = []
    for k, v in pairs:
        if k in CALLED_KEYS:
            called.extend(_name_list(v))

    md: dict[str, str] = {}
    md_ints: dict[str, int | None] = {}
    number_error = None
    if "metadata" in attrs:
        md_at = next(a for k, a, _ in spans if k == "metadata")
        md_spans = _metadata_spans(attrs["metadata"])
        md = {k: raw for k, (_, raw) in md_spans.items()}
        # Metadata numbers: ASCII ``-?[0-9]+``, anything else null; an integer that does not
        # fit int64 is an error at its first character (the first one in printed order).
        for key in ("source_line", "stack_frame_id"):
            if key in md_spans:
                at, raw = md_spans[key]
                try:
                    md_ints[key] = _i64(raw)
                except _OutOfRange:
                    md_ints[key] = None
                    at += md_at
                    number_error = at if number_error is None else min(number_error, at)

    def md_str(key: str) -> str | None:
        v = md.get(key)
        if v is None:
            return None
        u = _unquote(v)
        return u if u is not None else v

    target = attrs.get("custom_call_target")
    if target is not None:
        u = _unquote(target)
        target = u if u is not None else target
    backend_config = attrs.get("backend_config")
    if backend_config is not None:
        u = _unquote(backend_config)
        backend_config = u if u is not None else backend_config

    return {
        "name": name,
        "is_root": is_root,
        "opcode": opcode,
        "shape": shape,
        "operands": operands,
        "operand_text": operand_text,
        "called_computations": called,
        "attributes": attributes,
        "op_name": md_str("op_name"),
        "op_type": md_str("op_type"),
        "source_file": md_str("source_file"),
        "source_line": md_ints.get("source_line"),
        "source_function": None,
        "stack_frame_id": md_ints.get("stack_frame_id"),
        "custom_call_target": target,
        "backend_config": backend_config,
        "fusion_kind": attrs.get("kind"),
        "sharding": attrs.get("sharding"),
        "attribute_map": attrs,
        "metadata": md,
        "number_error": number_error,
    }


def _needs_continuation(text: str) -> bool:
    """True for a ``constant(`` instruction whose parentheses do not balance on ``text``.

    Counted from the opcode's ``(``: only parentheses (a literal contains no strings), and the
    region is closed as soon as the count returns to zero (what follows may be attributes).
    """
    m = _INSTR_START_RE.match(text)
    if m is None:
        return False
    try:
        j = _scan_shape(text, m.end())
    except ScanError:
        return False
    om = _OPCODE_RE.match(text, j + 1)
    if om is None or om.group(0) != "constant" or not text.startswith("(", om.end()):
        return False
    depth = 0
    for m in _PAREN_RE.finditer(text, om.end()):
        depth += 1 if m.group(0) == "(" else -1
        if depth == 0:
            return False
    return True


_PAREN_RE = re.compile(r"[()]")


# ----------------------------------------------------------------------------- custom calls

_B64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")
MLIR_MAGIC = b"ML\xefR"


def _find_key(obj: Any, key: str) -> str | None:
    """Depth-first (printed order) search for the first string value under ``key``."""
    if isinstance(obj, dict):
        v = obj.get(key)
        if isinstance(v, str):
            return v
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


def _b64decode(s: str) -> bytes | None:
    """Strict standard base64 (length multiple of 4, '=' padding only at the end)."""
    if len(s) % 4 or _B64_RE.fullmatch(s) is None:
        return None
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_body(backend_config: str | None) -> bytes | None:
    """The decoded custom-call body: base64 of the JSON ``"body"`` string when the config is a
    JSON object that has one (searched depth-first, e.g. ``custom_call_config.body``), else of
    the whole config. None when that text is not base64."""
    return _b64decode(_body_text(backend_config)[0])


def _body_text(backend_config: str | None) -> tuple[str, Any]:
    """(body text, parsed JSON object or None)."""
    if not backend_config:
        return "", None
    obj = None
    if backend_config.lstrip().startswith("{"):
        try:
            obj = json.loads(backend_config)
        except ValueError:
            obj = None
    if isinstance(obj, dict):
        body = _find_key(obj, "body")
        if body is not None:
            return body, obj
        return backend_config, obj
    return backend_config, None


def custom_call_info(backend_config: str | None) -> dict[str, Any]:
    """body_length, decoded_length, format, kernel_name for the ``custom_calls`` table."""
    body, obj = _body_text(backend_config)
    has_body = isinstance(obj, dict) and _find_key(obj, "body") is not None
    decoded = _b64decode(body) if body else None
    if not backend_config:
        fmt = "empty"
        decoded_length = None
    else:
        decoded_length = len(decoded) if decoded is not None else None
        if decoded is not None and decoded.startswith(MLIR_MAGIC):
            fmt = "mlir_bytecode"
        elif isinstance(obj, dict) and not has_body:
            fmt = "json"
        else:
            fmt = "text"
    kernel = None
    if isinstance(obj, dict):
        kernel = _find_key(obj, "kernel_name")
        if kernel is None:
            kernel = _find_key(obj, "name")
    return {
        "body_length": len(body.encode("utf-8")),
        "decoded_length": decoded_length,
        "format": fmt,
        "kernel_name": kernel,
    }


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
    (a computation closed and the next statement on the same line). Mirrors module.rs."""
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
_TABLE_NAMES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_STRING_ROW_RE = re.compile(r'([0-9]+) ("(?:[^"\\]|\\.)*")$')
_FILE_LOCATION_RE = re.compile(
    r"([0-9]+) \{file_name_id=([0-9]+) function_name_id=([0-9]+) line=(-?[0-9]+)"
    r" end_line=(-?[0-9]+) column=(-?[0-9]+) end_column=(-?[0-9]+)\}$")
_STACK_FRAME_RE = re.compile(r"([0-9]+) \{file_location_id=([0-9]+) parent_frame_id=([0-9]+)\}$")


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


def parse_module(lines: list[str | None], ctx: Any, data: bytes | None = None) -> None:
    """Parse the lines of one HLO module file into table rows (see module docstring)."""
    _ModuleParser(lines, ctx, data).run()


class _ModuleParser:
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

    def error(self, lineno: int, column: int, message: str, text: str) -> None:
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
                rest = self.leading_trivia(ln)
                if rest is None:
                    continue
                if rest.offset != ln.offset:
                    self.pending = rest
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
                rest = self.leading_trivia(ln)
                if rest is None:
                    continue
                if rest.offset != ln.offset:
                    self.pending = rest
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
        self.write_headerless_row()

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
        self.module_index += 1
        self.have_header = True
        self.headerless = {"line": lineno, "entry": None, "last": None}

    def end_module(self) -> None:
        """A `// -----` line or the next `HloModule` header ends the module."""
        self.write_headerless_row()
        self.have_header = False
        self.table = None
        self.file_names, self.function_names, self.file_locations, self.frames = {}, {}, {}, {}

    def write_headerless_row(self) -> None:
        """XLA names a module without header `module_` + its ENTRY computation (else the last)."""
        h = self.headerless
        if h is None:
            return
        self.headerless = None
        self.ctx.add("modules", {
            "name": "module_" + (h["entry"] or h["last"] or ""),
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
        self.ctx.add("modules", {
            "name": name,
            "is_scheduled": attrs.get("is_scheduled") == "true",
            "entry_computation_layout": layout,
            "attributes": attrs_text,
            "line": lineno,
            "module_index": self.module_index,
        })
        return i

    def numbers(self, m: re.Match, groups: range, s: str, lineno: int) -> list[int] | None:
        """The int64 values of ``groups`` of a matched table row; None (and an error at the first
        character of the first one out of range) if one does not fit."""
        out = []
        for g in groups:
            try:
                v = _i64(m.group(g))
            except _OutOfRange:
                col = len(s[:m.start(g)].encode("utf-8")) + 1
                self.error(lineno, col, f"stack-frame table number is out of range (at most {I64_MAX})", s)
                return None
            assert v is not None
            out.append(v)
        return out

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
                g = self.numbers(m, range(1, 8), s, lineno)
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

    # ------------------------------------------------------------------ computations

    def open_computation(self, hdr: dict[str, Any], lineno: int) -> None:
        self.table = None
        self.computation_id += 1
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

    def emit(self, row: dict[str, Any], text: str, base: int, ln: _Line) -> None:
        lineno = ln.no
        at = row.pop("number_error")
        if at is not None:
            # a metadata number out of range: an error at its line and column, no row
            nl = text.rfind("\n", base, at)
            no = lineno + text.count("\n", base, at)
            if nl < 0:
                nl = base - 1
                line_text = ln.text
                col = len(text[base:at].encode("utf-8")) + 1
            else:
                end = text.find("\n", at)
                line_text = text[nl + 1:end if end >= 0 else len(text)]
                if line_text.endswith("\r"):
                    line_text = line_text[:-1]
                col = len(text[nl + 1:at].encode("utf-8")) + 1
            self.error(no, col, f"metadata number is out of range (at most {I64_MAX})", line_text)
            return
        if row["is_root"]:
            if self.comp_has_root:
                self.error(lineno, 3, "second ROOT in computation", ln.text)
            self.comp_has_root = True
        self.resolve_source(row)
        row.pop("attribute_map")
        row.pop("metadata")
        assert self.comp_row is not None
        row["computation_id"] = self.comp_row["computation_id"]
        row["instruction_id"] = self.instruction_id
        row["line"] = lineno
        row["offset"] = ln.offset
        self.instruction_id += 1
        self.ctx.add("instructions", row)
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


def _balanced(text: str) -> bool:
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        m = _SPECIAL_RE.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c in _OPEN:
            depth += 1
            i += 1
        elif c in _CLOSE:
            depth -= 1
            i += 1
        elif c == '"':
            try:
                i = _skip_string(text, i)
            except ScanError:
                return False
        elif text.startswith("/*", i):
            try:
                i = _skip_comment(text, i)
            except ScanError:
                return False
        else:
            i += 1
    return depth <= 0


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
_GSTR_RE = re.compile('["\\\\\x00]')


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
    k = i + 1
    n = len(f)
    while True:
        m = _GSTR_RE.search(f, k)
        if m is None:
            raise _GenError(i, "unterminated string")
        at = m.start()
        c = f[at]
        if c == '"':
            return at + 1
        if c == "\0":
            raise _GenError(at, "unexpected NUL byte")
        if at + 1 >= n:
            raise _GenError(i, "unterminated string")
        k = at + 2


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
                      [(k, a, b) for k, a, b, _ in spans])
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
