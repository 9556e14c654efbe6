"""HLO shape text parsed once per distinct string: element type, dimensions, layout, tuples.

Shapes are dictionary-encoded in ``instructions.shape`` (few distinct strings per dump), so the
cost and collective analyses parse each distinct text once (``parse_shape`` is cached) and look
the result up per row.

Sizes follow the shape-size function XLA's CPU and GPU compilers give ``HloCostAnalysis``:
``ShapeUtil::ByteSizeOf(shape, pointer_size=8)`` — element count × element size for arrays
(sub-byte types packed when the layout says ``E(bits)``, else a byte each), 8 bytes per element
of a tuple (its index table), 8 for ``opaque[]``, 0 for ``token[]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterator, Optional


__all__ = ["Shape", "parse_shape"]

#: Bits of one element of each XLA element type (``primitive_util::BitWidth``).
ELEMENT_BITS: dict[str, int] = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8,
    "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e8m0fnu": 8, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "tf32": 32,
    "token": 0, "opaque": 0,
}

def split_tuple(inner: str) -> list[str]:
    """The element texts of a tuple shape's inside (depth-0 commas; ``/*index=5*/`` comments
    skipped)."""
    out, depth, start = [], 0, 0
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch == "/" and inner.startswith("/*", i):  # /*index=5*/ comments
            j = inner.find("*/", i)
            i = len(inner) if j < 0 else j + 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(inner[start:i])
            start = i + 1
        i += 1
    tail = inner[start:]
    if tail.strip() or out:
        out.append(tail)
    return [s for s in out if s.strip()]




_ARRAY = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\]")
_M2M = re.compile(r"\{([0-9,]*)")
_E = re.compile(r"E\((\d+)\)")
_SPACE = re.compile(r"[:)]S\((\d+)\)")  # the memory space of a layout: {1,0:T(8,128)S(1)}, {:S(2)}
_TILE = re.compile(r"T\(([0-9*,]+)\)")  # the first tile of a tiled layout: T(8,128)(2,1) -> 8,128
_COMMENT = re.compile(r"/\*.*?\*/")  # /*index=5*/ in long tuples
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Shape:
    """One parsed shape. ``dims`` and ``minor_to_major`` are for arrays; ``parts`` for tuples."""

    text: str
    etype: str = ""
    dims: tuple[int, ...] = ()
    minor_to_major: Optional[tuple[int, ...]] = None
    element_bits: Optional[int] = None  # E(bits) of the layout
    tile: Optional[tuple[int, ...]] = None  # the layout's first tile, T(8,128): TPU layouts
    parts: Optional[tuple["Shape", ...]] = None  # a tuple's elements
    ok: bool = True
    problem: Optional[str] = None  # why no figure of it is computable (then ``ok`` is false)

    @property
    def is_tuple(self) -> bool:
        return self.parts is not None

    @property
    def is_array(self) -> bool:
        return self.parts is None and self.etype not in ("token", "opaque", "")

    @cached_property
    def elements(self) -> int:
        """``ShapeUtil::ElementsIn`` (arrays; 0 for tuples, 1 for a scalar)."""
        if self.parts is not None:
            return 0
        n = 1
        for d in self.dims:
            n *= d
        return n

    @cached_property
    def elements_recursive(self) -> int:
        """``ShapeUtil::ElementsInRecursive``: the elements of every array leaf."""
        if self.parts is not None:
            return sum(s.elements_recursive for s in self.parts)
        return self.elements if self.is_array else 0

    @cached_property
    def bytes(self) -> int:
        """What XLA's cost analysis sizes the shape as: ``ShapeUtil::ByteSizeOf(shape, 8)`` on
        CPU/GPU; on a tiled (TPU) layout ``ShapeUtil::ArraySize``, the tiles' padding included."""
        return self._size(tiled=True)

    @cached_property
    def unpadded_bytes(self) -> int:
        """``ShapeUtil::ByteSizeOf(shape, 8)`` whatever the layout: the logical size (what a
        buffer holds of data; jax's ``peak_unpadded_heap_bytes`` counts so)."""
        return self._size(tiled=False)

    def _size(self, tiled: bool) -> int:
        if self.parts is not None:
            if tiled and self.tpu_layout:  # libtpu sizes a tuple's index table as 512 bytes
                return max(512, -(-8 * len(self.parts) // 512) * 512)
            return 8 * len(self.parts)
        if tiled and self.tile is None and self.memory_space == 4 and self.is_array:
            return 0  # S(4) (an async collective's semaphores): not memory traffic to libtpu
        if tiled and self.tile is None and self.memory_space == 2 and self.is_array:
            # an untiled array in SMEM (S(2): the u32[] sync flag of a copy-start, a
            # send, an async collective) is a 4 KiB block to libtpu's cost analysis (measured:
            # 4,092 bytes more per copy-start than its 4 bytes, libtpu 0.0.50)
            return max(4096, self._size(tiled=False))
        if self.etype == "opaque":
            return 8
        if self.etype == "token" or not self.ok:
            return 0
        bits = ELEMENT_BITS.get(self.etype)
        if bits is None:
            m = re.search(r"(\d+)", self.etype)
            bits = int(m.group(1)) if m else 8
        n = self.tiled_elements if tiled and self.tile is not None else self.elements
        if self.element_bits is not None:
            return (n * self.element_bits + 7) // 8
        return n * max(1, bits // 8)

    @cached_property
    def memory_space(self) -> int:
        """The layout's memory space (``S(n)``; 0 without one)."""
        m = _SPACE.search(self.text) if self.parts is None and "S(" in self.text else None
        return int(m.group(1)) if m else 0

    @cached_property
    def tpu_layout(self) -> bool:
        """Whether the shape carries a TPU layout (a tile or a memory space on some leaf)."""
        if self.parts is not None:
            return any(p.tpu_layout for p in self.parts)
        return self.tile is not None or self.memory_space != 0

    @cached_property
    def tiled_elements(self) -> int:
        """``ShapeUtil::ArraySize``'s element count of a tiled layout: the most minor dimensions
        rounded up to the first tile (``T(8,128)``; later tiles, ``(2,1)``, subdivide it and add no
        padding), so ``f32[3,100]{1,0:T(8,128)}`` holds 8 x 128 elements and a scalar ``s32[]``
        with ``T(128)`` 128. TPU compilers size every buffer so, their cost analysis too."""
        tile = self.tile or ()
        m2m = self.minor_to_major if self.minor_to_major is not None else tuple(range(len(self.dims) - 1, -1, -1))
        n = 1
        for k, t in enumerate(reversed(tile)):  # the tile's last entry pads the most minor dimension
            size = self.dims[m2m[k]] if k < len(m2m) else 1
            n *= -(-size // t) * t if t > 0 else size
        for k in range(len(tile), len(m2m)):
            n *= self.dims[m2m[k]]
        return n

    @cached_property
    def overflows(self) -> bool:
        """Whether the element count or byte size of the shape (or of a tuple element) is past
        int64: XLA's ``ShapeUtil::ValidateShape`` refuses such a shape, so no figure of it is
        computable."""
        if self.parts is not None:
            return any(s.overflows for s in self.parts)
        return self.elements > _INT64_MAX or self.bytes > _INT64_MAX

    @cached_property
    def unusable(self) -> Optional[str]:
        """Why no cost figure of an instruction with this shape is computable, or None."""
        if self.problem:
            return self.problem
        if self.overflows:
            return f"size overflows int64 ({self.text.strip()[:80]})"
        return None

    @property
    def element_bytes(self) -> int:
        """``ShapeUtil::ByteSizeOfPrimitiveType`` of the element type."""
        bits = ELEMENT_BITS.get(self.etype, 8)
        return max(1, bits // 8) if bits else 0

    def subshapes(self, index: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], "Shape"]]:
        """``ShapeUtil::ForEachSubshape`` order: pre-order, the shape itself first."""
        yield index, self
        if self.parts is not None:
            for i, s in enumerate(self.parts):
                yield from s.subshapes(index + (i,))

    def leaves(self) -> Iterator[tuple[tuple[int, ...], "Shape"]]:
        """``ShapeUtil::GetLeafShapes``: every non-tuple subshape with its index."""
        for ix, s in self.subshapes():
            if s.parts is None:
                yield ix, s

    def at(self, i: int) -> "Shape":
        assert self.parts is not None
        return self.parts[i]

    @property
    def arrays(self) -> list["Shape"]:
        """The array leaves (a tuple's elements, recursively; an array itself)."""
        return [s for _, s in self.leaves() if s.is_array]


#: Tuples nested deeper than this are not read (``ok=False``): the walks over a shape recurse
#: once per level, and no compiler writes such a shape.
MAX_TUPLE_DEPTH = 100


def _tuple_depth(s: str) -> int:
    depth = top = 0
    for c in s:
        if c == "(":
            depth += 1
            top = max(top, depth)
        elif c == ")":
            depth -= 1
    return top


@lru_cache(maxsize=65536)
def parse_shape(text: Optional[str]) -> Shape:
    """The shape in ``text`` (``f32[8,128]{1,0}``, ``(s32[], f32[8]{0})``, ``token[]`` …).

    Unreadable text gives a ``Shape`` with ``ok=False`` (size 0) rather than an error: a cost
    is then missing, the analysis goes on."""
    if text is None:
        return Shape("", ok=False)
    s = _COMMENT.sub("", text).strip() if "/*" in text else text.strip()
    if s.startswith("b(") and s.endswith(")"):  # buffer-donor wrapper of old printers
        s = s[2:-1]
    if s.startswith("("):
        if s.startswith("((") and _tuple_depth(s) > MAX_TUPLE_DEPTH:
            return Shape(text, ok=False, problem=f"tuple shape nested more than {MAX_TUPLE_DEPTH} deep: not read")
        end = s.rfind(")")
        return Shape(text, parts=tuple(parse_shape(p.strip()) for p in split_tuple(s[1:end])))
    m = _ARRAY.match(s)
    if m is None:
        return Shape(text, ok=False)
    dims: list[int] = []
    for d in m.group(2).split(","):
        d = d.strip()
        if not d:
            continue
        if d.startswith("<="):
            d = d[2:]
        if not d.isdigit():
            return Shape(text, etype=m.group(1), ok=False)
        dims.append(int(d))
    rest = s[m.end():]
    m2m = None
    ebits = None
    tile = None
    if rest.startswith("{"):
        mm = _M2M.match(rest)
        if mm is not None:
            m2m = tuple(int(x) for x in mm.group(1).split(",") if x)
        layout = rest.split("P(")[0]
        e = _E.search(layout)
        if e is not None:
            ebits = int(e.group(1))
        t = _TILE.search(layout)
        if t is not None:  # "*" (a combined dimension) pads nothing
            tile = tuple(int(x) if x.isdigit() else 0 for x in t.group(1).split(","))
    elif dims == [] or len(dims) == 1:
        m2m = tuple(range(len(dims) - 1, -1, -1))
    return Shape(text, etype=m.group(1), dims=tuple(dims), minor_to_major=m2m, element_bits=ebits, tile=tile)
