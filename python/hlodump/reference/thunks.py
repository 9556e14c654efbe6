"""Reference parser for GPU thunk sequences (``*.thunk_sequence.txt``, FORMATS.md §2.11).

XLA's ``ThunkSequence::ToString`` writes per thunk ``INDENT KIND PADDING "\\t" ANNOTATION …``
(two spaces of indent per nesting level, KIND such as ``kKernel`` padded to the longest kind of
its sequence); control-flow thunks print their nested sequences one level deeper, each under a
label line (``condition:``, ``body:``, ``branch 0:``). One ``thunks`` row per non-empty line
that is not a label: ``kind`` set for thunk lines, null for other text (kept in
``annotation``, never rejected). ``section`` is the label above, ``parent_thunk_id`` the
nearest thunk above at a smaller indentation.

A child printed on its parent's line (``000: kSequential\t  001: kCopy …``: newer
``SequentialThunk::ToString`` appends the children's text, which opens with the child's
indentation, right after the parent's tab) is its own row one level deeper; the parent's
annotation is what came before it (nothing). Per thunk row: ``instruction`` (the profile
annotation where printed: the text before ``, kernel = …``, or the whole text when it is one
name), ``kernel_name`` and the launch dimensions as printed (``blocks: {X, Y, Z},
threads/block: {X, Y, Z}, shared memory [B]: N``, or ``[block: {…}, thread: {…}]``), and
``printed_id``, the ``NNN: `` id of the line (jax >= 0.8): the key of the module's
``thunk_metadata`` (``analysis.thunk_instructions`` joins them).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse"]

# [NNN: ]KIND then a tab after optional padding, or spaces and text, or the end of the line.
_THUNK_RE = re.compile(r"(?:([0-9]{1,18}): )?(k[A-Z][A-Za-z0-9]*)(?: *\t| +(?=[^ \t])|$)")


def _label(body: str) -> str | None:
    if not body.endswith(":"):
        return None
    label = body[:-1]
    if not label or len(label.encode()) > 64 or "\t" in label or ":" in label:
        return None
    return label


_NAME_RE = re.compile(r"[A-Za-z_%][A-Za-z0-9_.%-]*")
_WS = " \t\n\x0c\r"  # ASCII whitespace


def _number(text: str | None) -> int | None:
    """The decimal at the start of ``text`` (None: no digits, or past int64)."""
    if text is None:
        return None
    m = re.match(r"[0-9]*", text)
    digits = m.group(0) if m else ""
    return int(digits) if digits and int(digits) < 2**63 else None


def _dims(text: str | None) -> list[int | None]:
    """``{X, Y, Z}`` or a lone ``X`` (Y and Z then not printed)."""
    if text is None:
        return [None, None, None]
    if not text.startswith(("{", "[")):
        return [_number(text), None, None]
    inner = re.split(r"[}\]]", text[1:], maxsplit=1)[0]
    out: list[int | None] = [None, None, None]
    for i, part in enumerate(inner.split(",")[:3]):
        part = part.strip(_WS)
        out[i] = _number(part) if re.fullmatch(r"[0-9]*", part) else None
    return out


def _after(text: str, *keys: str) -> str | None:
    """The text after the first of ``keys`` found (in that order of preference)."""
    for k in keys:
        i = text.find(k)
        if i >= 0:
            return text[i + len(k):]
    return None


def _after_links(text: str) -> str | None:
    """The text after the ``[source | next=002 (1)]`` links jax 0.12 prints before a thunk's own text."""
    if not text.startswith("[") or "]" not in text:
        return None
    links, rest = text[1:].split("]", 1)
    if not any(k in links for k in ("prev=", "next=", "source", "sink")):
        return None
    return rest.strip(_WS)


def _launch_linked(text: str) -> dict[str, Any]:
    """jax 0.12's ``NAME grid: [X, Y, Z] threads: [X, Y, Z]  shared_memory: N bytes`` (the
    kernel's name; no profile annotation is printed, other thunks echo their kind)."""
    i = text.find(" grid: ")
    kernel = text[:i] if i >= 0 and _NAME_RE.fullmatch(text[:i]) else None
    blocks = _dims(_after(text, "grid: "))
    threads = _dims(_after(text, "threads: "))
    return {
        "instruction": None,
        "kernel_name": kernel,
        "blocks_x": blocks[0], "blocks_y": blocks[1], "blocks_z": blocks[2],
        "threads_x": threads[0], "threads_y": threads[1], "threads_z": threads[2],
        "shared_memory_bytes": _number(_after(text, "shared_memory: ")),
    }


def _launch(annotation: str) -> dict[str, Any]:
    text = annotation.strip(_WS)
    linked = _after_links(text)
    if linked is not None:
        return _launch_linked(linked)
    head = text.split(",", 1)[0]
    kernel = _after(text, "kernel = ", "kernel=")
    if kernel is not None:
        kernel = re.match(r"[^,\t\n\x0c\r ]*", kernel).group(0) or None  # type: ignore[union-attr]
    blocks = _dims(_after(text, "blocks: ", "[block: "))
    threads = _dims(_after(text, "threads/block: ", "thread: "))
    return {
        "instruction": head if _NAME_RE.fullmatch(head) else None,
        "kernel_name": kernel,
        "blocks_x": blocks[0], "blocks_y": blocks[1], "blocks_z": blocks[2],
        "threads_x": threads[0], "threads_y": threads[1], "threads_z": threads[2],
        "shared_memory_bytes": _number(_after(text, "shared memory [B]: ")),
    }


_NO_LAUNCH = {k: None for k in _launch("")}


def parse(lines: list[str | None], ctx: Any) -> None:
    # Open levels: [indent, parent thunk of rows at this level, label, last thunk at this level]
    stack: list[list[Any]] = []
    last_thunk_at: list[int] = []  # [line, indentation] of the last thunk row
    next_id = 0
    for lineno, line in enumerate(lines, start=1):
        # One pass per thunk on the line: its own, then a child printed after its tab.
        text = line
        while text is not None:
            text, next_id = _one_thunk(text, lineno, stack, last_thunk_at, next_id, ctx)


def _one_thunk(text: str, lineno: int, stack: list[list[Any]], last_thunk_at: list[int], next_id: int,
               ctx: Any) -> tuple[str | None, int]:
    """Add the row of the thunk (or text) at the start of ``text``; return a child printed on the
    same line (with its indentation), or None, and the next thunk id."""
    indent = len(text) - len(text.lstrip(" "))
    body = text[indent:]
    if not body:
        return None, next_id
    # WhileThunk writes its indentation before the newline: its `condition:` starts a line at
    # column 0 whatever the loop's depth. Such a label right below a thunk line counts as one
    # level deeper than that thunk.
    if indent == 0 and last_thunk_at and last_thunk_at[0] + 1 == lineno and _label(body) is not None:
        indent = last_thunk_at[1] + 2
    while stack and stack[-1][0] > indent:
        stack.pop()
    if not stack or stack[-1][0] < indent:
        if stack:
            above, section = (stack[-1][3] if stack[-1][3] is not None else stack[-1][1]), stack[-1][2]
        else:
            above, section = None, None
        stack.append([indent, above, section, None])
    label = _label(body)
    if label is not None:
        top = stack[-1]
        above = top[3] if top[3] is not None else top[1]
        stack.append([indent + 1, above, label, None])
        return None, next_id
    m = _THUNK_RE.match(body)
    kind, annotation = (m.group(2), body[m.end():]) if m else (None, body)
    child = None
    if kind is not None:
        spaces = len(annotation) - len(annotation.lstrip(" "))
        if spaces and _THUNK_RE.match(annotation[spaces:]):
            child, annotation = annotation, ""
    level = stack[-1]
    # the id XLA printed (`NNN: `, jax >= 0.8): the key of the thunk's `thunk_metadata` row
    printed = int(m.group(1)) if m and m.group(1) else None
    ctx.add("thunks", {
        "thunk_id": next_id, "printed_id": printed, "parent_thunk_id": level[1], "depth": indent // 2,
        "kind": kind, "section": level[2], "line": lineno,
        # a kernel thunk without a profile annotation prints `, kernel = …`: its separator left out
        "annotation": annotation.removeprefix(", ") if kind is not None else annotation,
        **(_launch(annotation) if kind is not None else _NO_LAUNCH),
    })
    if kind is not None:
        level[3] = next_id
        last_thunk_at[:] = [lineno, indent]
    return child, next_id + 1
