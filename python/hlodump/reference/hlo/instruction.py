"""One instruction: module lines and ``from instruction:`` texts (mirrors
``src/hlo/instruction.rs``). There is exactly one instruction parser."""

from __future__ import annotations

import re
from typing import Any

from .scan import (
    CALLED_KEYS,
    NAME,
    ScanError,
    _CLOSE,
    _INSTR_START_RE,
    _OPCODE_RE,
    _OPEN,
    _match_close,
    _skip_comment,
    _split_top,
    _strip_comments,
    _unquote,
)
from .attributes import (I32_MAX, KNOWN_ATTRIBUTES, _OutOfRange, _attr_dict, _attribute_spans, _i64,
                         _metadata_spans, _name_list)


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


#: ``%x``, ``%x#2``, ``%x#0#1`` (compact tuple operands, XLA 2026: element 2 of ``x``; at most
#: 9 digits an index, so every one fits int32).
_OPERAND_TAIL_RE = re.compile(r"%?(" + NAME + r")((?:#[0-9]{1,9})*)$")


def _operand_names(operand_text: str) -> list[str]:
    """The names of ``_operands``."""
    return [name for name, _ in _operands(operand_text)]


def _operands(operand_text: str) -> list[tuple[str, list[int]]]:
    """Operand names of an operand region (not for parameter/constant).

    Items are split at depth-0 commas; ``/*index=N*/`` comments dropped; an old-style shape
    prefix (``f32[] %x``, ``(f32[], s32[]) %t``) dropped by taking the text after the last space;
    a leading '%' and a compact tuple path ``#N…`` removed (returned as the operand's tuple
    path, ``[]`` for a whole value); ``...(+N)`` elision markers skipped.
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
        if m is None:
            names.append((last, []))
        else:
            names.append((m.group(1), [int(k) for k in m.group(2).split("#")[1:]]))
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
    return _finish(text, is_root, name, shape, opcode, operand_text, attributes, spans,
                   (m.start(2), i, j + 1, open_paren + 1))


def _finish(text: str, is_root: bool, name: str, shape: str, opcode: str, operand_text: str,
            attributes: str, spans: list[tuple[str, int, int]],
            starts: tuple[int, int, int, int] = (0, 0, 0, 0),
            key_at: list[int] | None = None) -> dict[str, Any] | None:
    """The row of an instruction from its pieces; ``spans``: (key, value start, value end) in
    ``text`` (the one-line fast path and the general grammar both end here); ``starts``: where the
    name, shape, opcode and operand list start in ``text`` (for the module parser's checks,
    ``rules.py``)."""
    pairs = [(k, text[a:b]) for k, a, b in spans]
    attrs = _attr_dict(pairs)

    plain = opcode not in ("parameter", "constant")
    pairs_ = _operands(operand_text) if plain else []
    operands = [name for name, _ in pairs_]
    called: list[str] = []
    for k, v in pairs:
        if k in CALLED_KEYS:
            called.extend(_name_list(v))

    md: dict[str, str] = {}
    md_ints: dict[str, int | None] = {}
    number_error = None
    unknown_md: list[tuple[str, int, int]] = []
    if "metadata" in attrs:
        md_at = next(a for k, a, _ in spans if k == "metadata")
        md_spans = _metadata_spans(attrs["metadata"], unknown_md)
        unknown_md = [(k, md_at + a, md_at + b) for k, a, b in unknown_md]
        md = {k: raw for k, (_, raw) in md_spans.items()}
        # Metadata numbers: ASCII ``-?[0-9]+``, anything else null; an integer that does not
        # fit int32 (their columns' type) is an error at its first character (the first one in
        # printed order).
        for key in ("source_line", "stack_frame_id"):
            if key in md_spans:
                at, raw = md_spans[key]
                try:
                    md_ints[key] = _i64(raw, limit=I32_MAX)
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
        "operand_index": [path for _, path in pairs_],
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
        # keys no XLA we know prints: (key, key start, value end) in ``text``
        "unknown_attributes": [(k, a - len(k) - 1, b) for k, a, b in spans
                               if k not in KNOWN_ATTRIBUTES],
        "metadata": md,
        "number_error": number_error,
        # for the module parser's checks (``rules.py``): where the pieces start, the attribute
        # spans, an empty operand, metadata keys XLA's parser does not allow (key, key start,
        # value end)
        "_at": starts,
        "_spans": spans,
        "_key_at": key_at if key_at is not None else [a - len(k) - 1 for k, a, _ in spans],
        "_empty_operand": plain and _has_empty_operand(operand_text),
        "_unknown_metadata": unknown_md,
    }


def _has_empty_operand(operand_text: str) -> bool:
    """An item of the operand list is empty (``a, , b``, ``a, )``): XLA's parser skips it."""
    text = _strip_comments(operand_text).strip()
    return bool(text) and any(not item.strip() for item in _split_top(text))


def _operand_positions(operand_text: str) -> list[int] | None:
    """Where each operand's name starts in ``operand_text`` (the items of ``_operands``); None
    when comments are in it (the names are read with them removed)."""
    if "/*" in operand_text:
        return None
    s = operand_text.strip()
    off = len(operand_text) - len(operand_text.lstrip())
    out = []
    if not s:
        return out
    pos = off
    for item in _split_top(s):
        lead = len(item) - len(item.lstrip())
        it = item.strip()
        if it and not it.startswith("...("):
            last_at = it.rfind(" ") + 1
            last = it[last_at:]
            m = _OPERAND_TAIL_RE.match(last)
            out.append(pos + lead + last_at + (m.start(1) if m is not None else 0))
        pos += len(item) + 1
    return out


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
