"""The values inside the text an HLO proto prints as (part of ``hlo_proto_render``): primitive
types by number, shapes with their layouts (``shape_str``), literals with XLA's float forms
(``literal_str``), C-escaped strings (``_cescape``). Apart from the module printer as
``src/hlo_proto/render/values.rs`` is apart from ``render/mod.rs``, and because the
buffer-assignment rows (``hlo_proto``) print shapes too."""

from __future__ import annotations

import math
import struct

# xla_data.proto PrimitiveType → the name XLA prints
PRIMITIVE = {
    1: "pred", 30: "s1", 26: "s2", 21: "s4", 2: "s8", 3: "s16", 4: "s32", 5: "s64",
    31: "u1", 27: "u2", 22: "u4", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 16: "bf16", 12: "f64", 19: "f8e5m2", 28: "f8e4m3", 20: "f8e4m3fn",
    23: "f8e4m3b11fnuz", 29: "f8e3m4", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 32: "f4e2m1fn",
    33: "f8e8m0fnu", 15: "c64", 18: "c128", 13: "tuple", 14: "opaque", 17: "token", 34: "buffer",
}
TUPLE, OPAQUE, TOKEN = 13, 14, 17
MIN_I64 = -(1 << 63)


# ---- shapes --------------------------------------------------------------------------------


def _layout(lay: dict, rank: int) -> str:
    parts = []
    tiles = lay.get("tiles", [])
    if tiles:
        parts.append("T" + "".join("(" + ",".join("*" if d == MIN_I64 else str(d) for d in t.get("dimensions", [])) + ")"
                                   for t in tiles))
    tpa = lay.get("tail_padding_alignment_in_elements", 1) or 1
    if tpa != 1:
        parts.append(f"L({tpa})")
    if lay.get("index_primitive_type"):
        parts.append(f"#({PRIMITIVE.get(lay['index_primitive_type'], '?')})")
    if lay.get("pointer_primitive_type"):
        parts.append(f"*({PRIMITIVE.get(lay['pointer_primitive_type'], '?')})")
    if lay.get("element_size_in_bits"):
        parts.append(f"E({lay['element_size_in_bits']})")
    if lay.get("memory_space"):
        parts.append(f"S({lay['memory_space']})")
    if lay.get("split_configs"):
        parts.append("SC" + "".join(
            f"({sc.get('dimension', 0)}:" + ",".join(map(str, sc.get("split_indices", []))) + ")"
            for sc in lay["split_configs"]))
    if lay.get("dynamic_shape_metadata_prefix_bytes"):
        parts.append(f"M({lay['dynamic_shape_metadata_prefix_bytes']})")
    m2m = ",".join(map(str, lay.get("minor_to_major", [])))
    if rank == 0 and not parts:
        return ""
    return "{" + m2m + (":" + "".join(parts) if parts else "") + "}"


def _index_comment(k: int) -> str:
    """XLA marks every fifth element of a long list (tuple shapes, operands): ``/*index=5*/``."""
    return f"/*index={k}*/" if k and k % 5 == 0 else ""


def shape_str(s: dict, layout: bool = True) -> str:
    """``ShapeUtil::HumanStringWithLayout`` (``HumanString`` with ``layout=False``)."""
    et = s.get("element_type", 0)
    if et == TUPLE:
        return "(" + ", ".join(_index_comment(k) + shape_str(t, layout)
                               for k, t in enumerate(s.get("tuple_shapes", []))) + ")"
    name = PRIMITIVE.get(et, "invalid")
    if et in (OPAQUE, TOKEN):
        return name + "[]"
    dims = s.get("dimensions", [])
    dyn = s.get("is_dynamic_dimension", [])
    text = name + "[" + ",".join(("<=" if k < len(dyn) and dyn[k] else "") + str(d) for k, d in enumerate(dims)) + "]"
    if layout and "layout" in s:
        text += _layout(s["layout"], len(dims))
    return text


# ---- literals (constants) -------------------------------------------------------------------


def _fp(v: float, digits: int, maxdigits: int, width: int) -> str:
    """``RoundTripFpToString``: %.{digits}g, or %.{maxdigits}g when that does not round-trip."""
    if math.isnan(v):
        return "-nan" if math.copysign(1, v) < 0 else "nan"
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    # XLA prints with denormals flushed to zero (its threads run with FTZ/DAZ set)
    if abs(v) < (1.1754943508222875e-38 if width == 32 else 2.2250738585072014e-308):
        v = math.copysign(0.0, v)
    s = "%.*g" % (digits, v)
    if width == 32:
        back = struct.unpack("<f", struct.pack("<f", float(s)))[0]
        if back != v:
            s = "%.*g" % (maxdigits, v)
    elif float(s) != v:
        s = "%.*g" % (maxdigits, v)
    return s


def _half(raw: bytes, bf16: bool) -> list[float]:
    out = []
    for k in range(0, len(raw) - 1, 2):
        h = raw[k] | raw[k + 1] << 8
        if bf16:
            out.append(struct.unpack("<f", struct.pack("<I", h << 16))[0])
        else:
            out.append(struct.unpack("<e", raw[k:k + 2])[0])
    return out


def _literal_values(lit: dict, et: int) -> list[str] | None:
    if et == 1:
        return ["true" if v else "false" for v in lit.get("preds", [])]
    if et == 11:
        return [_fp(v, 6, 9, 32) for v in lit.get("f32s", [])]
    if et == 12:
        return [_fp(v, 15, 17, 64) for v in lit.get("f64s", [])]
    if et in (10, 16):
        vals = _half(lit.get("bf16s" if et == 16 else "f16s", b""), et == 16)
        return [_fp(v, 3 if et == 10 else 2, 5 if et == 10 else 4, 32) for v in vals]
    if et == 4:
        return [str(v) for v in lit.get("s32s", [])]
    if et == 5:
        return [str(v) for v in lit.get("s64s", [])]
    if et == 8:
        return [str(v) for v in lit.get("u32s", [])]
    if et == 9:
        return [str(v) for v in lit.get("u64s", [])]
    if et == 2:
        return [str(v - 256 if v > 127 else v) for v in lit.get("s8s", b"")]
    if et == 6:
        return [str(v) for v in lit.get("u8s", b"")]
    if et in (15, 18):
        vals = lit.get("c64s" if et == 15 else "c128s", [])
        fmt = (lambda v: _fp(v, 6, 9, 32)) if et == 15 else (lambda v: _fp(v, 15, 17, 64))
        return [f"({fmt(vals[k])}, {fmt(vals[k + 1])})" for k in range(0, len(vals) - 1, 2)]
    if et in (3, 7):
        raw = lit.get("s16s" if et == 3 else "u16s", b"")
        return [str(v) for v in struct.unpack(f"<{len(raw) // 2}{'h' if et == 3 else 'H'}", raw[:len(raw) // 2 * 2])]
    return None


def literal_str(lit: dict, shape: dict) -> str:
    """The operand text of a constant: ``Literal::ToStringWithoutShape`` (the values only)."""
    et = shape.get("element_type", 0)
    if et == TUPLE:
        parts = lit.get("tuple_literals", [])
        return "(" + ", ".join(literal_str(p, s) for p, s in zip(parts, shape.get("tuple_shapes", []))) + ")"
    dims = shape.get("dimensions", [])
    n = 1
    for d in dims:
        n *= d
    # the dump's print options print an array of more than 10 elements as {...}
    if n > 10:
        return "{...}"
    vals = _literal_values(lit, et)
    if vals is None or len(vals) != n:
        return "{...}"
    if not dims:
        return vals[0]
    if len(dims) == 1:
        return "{" + ", ".join(vals) + "}"
    # ToStringWithoutShape for rank ≥ 2: nested braces with spaces, "{ {1, 2}, {3, 4} }"
    def rec(k: int, start: int) -> tuple[str, int]:
        if k == len(dims) - 1:
            return "{" + ", ".join(vals[start:start + dims[k]]) + "}", start + dims[k]
        parts = []
        for _ in range(dims[k]):
            s, start = rec(k + 1, start)
            parts.append(s)
        return "{ " + ", ".join(parts) + " }", start
    return rec(0, 0)[0]


# ---- strings -------------------------------------------------------------------------------


#: absl::CEscape's named escapes, by byte.
_C_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
              ord("\\"): "\\\\"}


def _cescape(s: str) -> str:
    """absl::CEscape of the UTF-8 bytes of ``s``, as XLA prints strings: the named escapes,
    other control bytes and every non-ASCII byte in octal."""
    out = []
    for ch in s.encode("utf-8"):
        e = _C_ESCAPES.get(ch)
        out.append(e if e is not None else "\\%03o" % ch if ch < 0x20 or ch >= 0x7F else chr(ch))
    return "".join(out)
