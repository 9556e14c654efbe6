"""Reference parser for GPU thunk sequences (``*.thunk_sequence.txt``, FORMATS.md §2.11).

XLA's ``ThunkSequence::ToString`` writes per thunk ``INDENT KIND PADDING "\\t" ANNOTATION …``
(two spaces of indent per nesting level, KIND such as ``kKernel`` padded to the longest kind of
its sequence); control-flow thunks print their nested sequences one level deeper, each under a
label line (``condition:``, ``body:``, ``branch 0:``). One ``thunks`` row per non-empty line
that is not a label: ``kind`` set for thunk lines, null for other text (kept in
``annotation``, never rejected). ``section`` is the label above, ``parent_thunk_id`` the
nearest thunk above at a smaller indentation.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse"]

# [NNN: ]KIND then a tab after optional padding, or spaces and text, or the end of the line.
_THUNK_RE = re.compile(r"(?:[0-9]{1,18}: )?(k[A-Z][A-Za-z0-9]*)(?: *\t| +(?=[^ \t])|$)")


def _label(body: str) -> str | None:
    if not body.endswith(":"):
        return None
    label = body[:-1]
    if not label or len(label.encode()) > 64 or "\t" in label or ":" in label:
        return None
    return label


def parse(lines: list[str | None], ctx: Any) -> None:
    # Open levels: [indent, parent thunk of rows at this level, label, last thunk at this level]
    stack: list[list[Any]] = []
    next_id = 0
    for lineno, text in enumerate(lines, start=1):
        if text is None:
            continue
        indent = len(text) - len(text.lstrip(" "))
        body = text[indent:]
        if not body:
            continue
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
            continue
        m = _THUNK_RE.match(body)
        kind, annotation = (m.group(1), body[m.end():]) if m else (None, body)
        level = stack[-1]
        ctx.add("thunks", {
            "thunk_id": next_id, "parent_thunk_id": level[1], "depth": indent // 2,
            "kind": kind, "section": level[2], "annotation": annotation, "line": lineno,
        })
        if kind is not None:
            level[3] = next_id
        next_id += 1
