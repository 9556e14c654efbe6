"""Shape sizes: ``logical_bytes`` of a shape text (what XLA's ``ShapeUtil::ByteSizeOf`` gives),
computed once per distinct shape of a column, and ``format_bytes`` as XLA prints sizes."""

from __future__ import annotations

import re
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

from .hlo_shapes import parse_shape, split_tuple

__all__ = ["logical_bytes", "format_bytes", "strip_layout", "shape_bytes"]

# --------------------------------------------------------------------------------- shape sizes

_ARRAY_RE = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\]")
_E_RE = re.compile(r"E\((\d+)\)")


def logical_bytes(shape: Optional[str]) -> Optional[int]:
    """``ShapeUtil::ByteSizeOf(shape, pointer_size=8)`` from the shape text (None if unreadable,
    or if the size overflows int64: XLA refuses such a shape, and no int64 column holds it).
    One definition: ``hlo_shapes.Shape.unpadded_bytes`` (the cost rules use ``Shape.bytes``, the
    same but for a tiled layout's padding), parsed once per distinct text.

    Arrays: element count × element size (dynamic dims ``<=N`` at their bound; sub-byte types
    one byte per element unless the layout has ``E(bits)``, then packed). Tuples: 8 bytes per
    top-level element (the index table). ``token[]``: 0; ``opaque[]``: 8 (the pointer size).

    >>> logical_bytes("f32[8,2048,2048]{1,2,0:T(8,128)}"), logical_bytes("f32[]{:T(128)}")
    (134217728, 4)
    >>> logical_bytes("(f32[8]{0}, u32[]{:S(2)})")
    16
    """
    if shape is None:
        return None
    s = parse_shape(shape)
    if s.is_tuple:
        return s.unpadded_bytes
    if s.problem is not None:  # a tuple nested too deep to read: its index table all the same
        t = shape.strip()
        t = t[2:-1] if t.startswith("b(") and t.endswith(")") else t
        return 8 * len(split_tuple(t[1:t.rfind(")")])) if t.startswith("(") else None
    if not s.ok:
        return None
    n, size = s.elements, s.unpadded_bytes
    return size if n <= INT64_MAX and size <= INT64_MAX else None


INT64_MAX = (1 << 63) - 1


def format_bytes(n: Optional[float]) -> str:
    """Human-readable bytes as XLA prints them (``12B``, ``51.1KiB``, ``220.17MiB``): the one
    byte formatter of every command and page (``hlodump.units.format_bytes``)."""
    from ..units import format_bytes as _fb

    return _fb(n)


def shape_bytes(column: Any, memo: Optional[dict[str, Optional[int]]] = None) -> pa.ChunkedArray:
    """``logical_bytes`` of every row of a shape column (string, string_view or dictionary),
    computed once per distinct shape: a dictionary chunk maps its dictionary, a plain chunk its
    unique values, and the sizes are taken back to the rows (nulls stay null)."""
    memo = {} if memo is None else memo

    def sizes(texts: list[Optional[str]]) -> pa.Array:
        out = []
        for s in texts:
            if s is None:
                out.append(None)
                continue
            v = memo.get(s, memo)
            if v is memo:
                v = memo[s] = logical_bytes(s)
            out.append(v)
        return pa.array(out, pa.int64())

    col = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
    chunks = []
    for ch in col.chunks:
        if pa.types.is_dictionary(ch.type):
            chunks.append(sizes(ch.dictionary.to_pylist()).take(ch.indices))
        else:
            if ch.type == pa.string_view():
                ch = ch.cast(pa.large_string())
            uniq = pc.unique(ch)
            chunks.append(sizes(uniq.to_pylist()).take(pc.index_in(ch, uniq)))
    return pa.chunked_array(chunks, pa.int64())


_LAYOUT_RE = re.compile(r"\{[^{}]*\}")


def strip_layout(shape: Optional[str]) -> str:
    """A shape without its layouts and ``/*index=N*/`` comments (``f32[8]{0}`` -> ``f32[8]``)."""
    if not shape:
        return ""
    prev = None
    s = shape
    while prev != s:  # nested braces (P(...) physical shapes) peel from the inside
        prev = s
        s = _LAYOUT_RE.sub("", s)
    return re.sub(r"/\*index=\d+\*/", "", s)
