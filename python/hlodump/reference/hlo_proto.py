"""HLO protos (``--xla_dump_hlo_as_proto``: ``*.hlo.pb``, an ``HloProto`` or ``HloModuleProto``) as
the text XLA prints for the same module (the reference of ``src/hlo_proto/``).

The proto is decoded (``protowire``), printed the way XLA's ``HloModule::ToString`` prints a dump
(shapes with layouts, ``%`` names, operands by name, attributes, metadata, the stack-frame index),
and that text is read by the HLO text parser: so a proto gives the rows its text twin gives, by
construction, and the rules of what a column holds live in one place. What the proto does not
carry is not printed (docs/protos.md lists it): the module's config attributes of the header
(``allow_spmd_sharding_propagation_*``, …), and a ``backend_config`` is printed as stored (XLA's
text may order its JSON keys differently).

The after-optimizations ``HloProto`` also carries the buffer assignment: ``allocation_rows``,
``assignment_rows`` and ``heap_trace_rows`` give its rows, ``memory_analysis`` jax's figures.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from .protowire import ProtoError, decode_listing, unknown_note, varint_at

__all__ = ["decode_hlo", "render_module", "is_hlo_proto", "parse", "heap_trace_rows", "heap_peaks",
           "allocation_rows", "assignment_rows", "memory_analysis", "ProtoError"]

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


def is_hlo_proto(data: bytes) -> bool:
    """Content rule: an ``HloProto`` (field 1: an ``HloModuleProto`` whose field 1 is its name)
    or an ``HloModuleProto`` (field 1: a name, then field 2 or 3 or 6…): checked on the first
    bytes only."""
    return _module_at(data, 0) is not None


_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _name_field(b: bytes, i: int) -> int | None:
    """``0a <len> name`` at i (a module name XLA would print): the end of it, or None."""
    if i >= len(b) or b[i] != 0x0A:
        return None
    r = varint_at(b, i + 1)
    if r is None:
        return None
    n, j = r
    if n == 0 or n > 4096 or j + n > len(b):
        return None
    name = b[j:j + n]
    if not all(c in _NAME_CHARS for c in name):
        return None
    return j + n


def _module_at(b: bytes, i: int) -> str | None:
    """'proto' for an HloProto, 'module' for an HloModuleProto, at b[i:] (whole file)."""
    # HloModuleProto: name, then entry_computation_name (0x12) or computations (0x1a)
    end = _name_field(b, i)
    if end is not None and end < len(b) and b[end] in (0x12, 0x1A):
        return "module"
    if i < len(b) and b[i] == 0x0A:
        r = varint_at(b, i + 1)
        if r is not None:
            n, j = r
            # the module's length may run past the end of a file cut short: still a proto (read,
            # it is an error at the byte where it stops), not an unknown file
            if n > 0:
                end = _name_field(b, j)
                if end is not None and end < j + n and b[end] in (0x12, 0x1A):
                    return "proto"
    return None


def decode_hlo(data: bytes) -> tuple[dict, dict | None, int]:
    """(HloModuleProto, BufferAssignmentProto or None, unknown fields skipped)."""
    m, ba, listing = decode_hlo_listing(data)
    return m, ba, sum(listing.values())


def decode_hlo_listing(data: bytes) -> tuple[dict, dict | None, dict]:
    """``decode_hlo`` with the skipped fields listed (``protowire.decode_listing``)."""
    kind = _module_at(data, 0)
    if kind == "module":
        m, listing = decode_listing(data, "HloModuleProto")
        return m, None, listing
    p, listing = decode_listing(data, "HloProto")
    return p.get("hlo_module", {}), p.get("buffer_assignment"), listing


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


# ---- attributes ------------------------------------------------------------------------------


def _ints(v: list[int]) -> str:
    return "{" + ",".join(map(str, v)) + "}"


def _cescape(s: str) -> str:
    out = []
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c == '"':
            out.append('\\"')
        elif c == "'":
            out.append("\\'")
        elif c == "\\":
            out.append("\\\\")
        elif ch < 0x20 or ch >= 0x7F:
            out.append("\\%03o" % ch)
        else:
            out.append(c)
    return "".join(out)


def metadata_str(m: dict) -> str:
    """``OpMetadataToString``."""
    parts = []
    if m.get("op_type"):
        parts.append(f'op_type="{_cescape(m["op_type"])}"')
    if m.get("op_name"):
        parts.append(f'op_name="{_cescape(m["op_name"])}"')
    if m.get("source_file"):
        parts.append(f'source_file="{_cescape(m["source_file"])}"')
    for k in ("source_line", "source_end_line", "source_column", "source_end_column"):
        if m.get(k):
            parts.append(f"{k}={m[k]}")
    if m.get("deduplicated_name"):
        parts.append(f'deduplicated_name="{_cescape(m["deduplicated_name"])}"')
    if m.get("scheduling_name"):
        parts.append(f'scheduling_name="{_cescape(m["scheduling_name"])}"')
    if m.get("stack_frame_id"):
        parts.append(f"stack_frame_id={m['stack_frame_id']}")
    return " ".join(parts)


def _window(w: dict) -> str:
    dims = w.get("dimensions", [])
    out = ["size=" + "x".join(str(d.get("size", 0)) for d in dims)]
    if any(d.get("stride", 1) != 1 for d in dims):
        out.append("stride=" + "x".join(str(d.get("stride", 1)) for d in dims))
    if any(d.get("padding_low", 0) or d.get("padding_high", 0) for d in dims):
        out.append("pad=" + "x".join(f"{d.get('padding_low', 0)}_{d.get('padding_high', 0)}" for d in dims))
    if any(d.get("base_dilation", 1) != 1 for d in dims):
        out.append("lhs_dilate=" + "x".join(str(d.get("base_dilation", 1)) for d in dims))
    if any(d.get("window_dilation", 1) != 1 for d in dims):
        out.append("rhs_dilate=" + "x".join(str(d.get("window_dilation", 1)) for d in dims))
    if any(d.get("window_reversal", False) for d in dims):
        out.append("rhs_reversal=" + "x".join("1" if d.get("window_reversal") else "0" for d in dims))
    return " ".join(out)


def _dim_labels(c: dict) -> str:
    def labels(batch: int, feature: int, spatial: list[int], b: str, f: str) -> str:
        rank = 2 + len(spatial)
        out = ["?"] * rank
        if 0 <= batch < rank:
            out[batch] = b
        if 0 <= feature < rank:
            out[feature] = f
        for k, d in enumerate(spatial):
            if 0 <= d < rank:
                out[d] = str(k)
        return "".join(out)
    lhs = labels(c.get("input_batch_dimension", 0), c.get("input_feature_dimension", 0),
                 c.get("input_spatial_dimensions", []), "b", "f")
    rhs = labels(c.get("kernel_input_feature_dimension", 0), c.get("kernel_output_feature_dimension", 0),
                 c.get("kernel_spatial_dimensions", []), "i", "o")
    out = labels(c.get("output_batch_dimension", 0), c.get("output_feature_dimension", 0),
                 c.get("output_spatial_dimensions", []), "b", "f")
    return f"{lhs}_{rhs}->{out}"


_ACCURACY = {1: "highest"}
_FFT_TYPES = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}
_SCHEDULES = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}
_API_VERSIONS = {2: "API_VERSION_STATUS_RETURNING", 3: "API_VERSION_STATUS_RETURNING_UNIFIED",
                 4: "API_VERSION_TYPED_FFI"}


def _aliasing(ins: dict, out: list[str]) -> None:
    """``output_to_operand_aliasing={{0}: (0, {})}``."""
    al = ins.get("output_operand_aliasing", [])
    if al:
        out.append("output_to_operand_aliasing={" + ", ".join(
            _ints(a.get("output_shape_index", [])).replace(",", ",") + f": ({a.get('operand_index', 0)}, "
            + _ints(a.get("operand_shape_index", [])) + ")" for a in al) + "}")


_RNG_ALGORITHMS = {0: "rng_default", 1: "rng_three_fry", 2: "rng_philox"}
_PRECISION = {0: "default", 1: "high", 2: "highest", 3: "packed_nibble"}
_DEFAULT_CMP = {1: "UNSIGNED"}


def _default_comparison(et: int) -> str:
    name = PRIMITIVE.get(et, "")
    if name.startswith(("f", "bf", "c")):
        return "FLOAT"
    if name.startswith("s"):
        return "SIGNED"
    return "UNSIGNED"


def _extra_attributes(ins: dict, comps: dict[int, dict], operands: list[dict]) -> list[str]:
    """The opcode's own attributes (``PrintExtraAttributesImpl``), then the called computations."""
    op = ins.get("opcode", "")
    out: list[str] = []
    dims = ins.get("dimensions", [])
    if op in ("broadcast", "transpose", "reduce", "reverse", "concatenate", "sort", "map",
              "reduce-precision") and op != "reduce-precision":
        out.append("dimensions=" + _ints(dims))
    if op == "sort" and ins.get("is_stable"):
        out.append("is_stable=true")
    if op == "iota":
        out.append(f"iota_dimension={dims[0] if dims else 0}")
    if op == "get-tuple-element":
        out.append(f"index={ins.get('tuple_index', 0)}")
    if op == "slice":
        sl = ins.get("slice_dimensions", [])
        strided = any(s.get("stride", 1) != 1 for s in sl)
        out.append("slice={" + ", ".join(
            f"[{s.get('start', 0)}:{s.get('limit', 0)}" + (f":{s.get('stride', 1)}" if strided else "") + "]"
            for s in sl) + "}")
    if op == "pad":
        pc = ins.get("padding_config", {}).get("dimensions", [])
        out.append("padding=" + "x".join(
            f"{d.get('edge_padding_low', 0)}_{d.get('edge_padding_high', 0)}"
            + (f"_{d.get('interior_padding', 0)}" if d.get("interior_padding", 0) else "") for d in pc))
    if op == "dynamic-slice":
        out.append("dynamic_slice_sizes=" + _ints(ins.get("dynamic_slice_sizes", [])))
    if op == "compare":
        out.append(f"direction={ins.get('comparison_direction', '')}")
        ct = ins.get("comparison_type", "")
        et = operands[0].get("shape", {}).get("element_type", 0) if operands else 0
        # Comparison::ToString: the order is printed when it is not the element type's default
        # (XLA since jax 0.11 writes the order (field 102) and prints `order=TOTAL`; before, the
        # type TOTALORDER was printed `type=TOTALORDER`)
        order = ins.get("comparison_order", "")
        if _default_comparison(et) == "FLOAT":
            if order == "TOTAL":
                out.append("order=TOTAL")
            elif not order and ct == "TOTALORDER":
                out.append("type=TOTALORDER")
    if op == "dot":
        d = ins.get("dot_dimension_numbers", {})
        for key, label in (("lhs_batch_dimensions", "lhs_batch_dims"), ("lhs_contracting_dimensions", "lhs_contracting_dims"),
                           ("rhs_batch_dimensions", "rhs_batch_dims"), ("rhs_contracting_dimensions", "rhs_contracting_dims")):
            if d.get(key):
                out.append(f"{label}=" + _ints(d[key]))
    if op == "convolution":
        if "window" in ins:
            out.append("window={" + _window(ins["window"]) + "}")
        out.append("dim_labels=" + _dim_labels(ins.get("convolution_dimension_numbers", {})))
        if ins.get("feature_group_count", 1) not in (0, 1):
            out.append(f"feature_group_count={ins['feature_group_count']}")
        if ins.get("batch_group_count", 1) not in (0, 1):
            out.append(f"batch_group_count={ins['batch_group_count']}")
    if op in ("dot", "convolution"):
        prec = ins.get("precision_config", {}).get("operand_precision", [])
        if any(p != 0 for p in prec):
            out.append("operand_precision={" + ",".join(_PRECISION.get(p, str(p)) for p in prec) + "}")
    if op in ("reduce-window", "select-and-scatter"):
        out.append("window={" + _window(ins.get("window", {})) + "}")
    if op == "gather":
        g = ins.get("gather_dimension_numbers", {})
        out.append("offset_dims=" + _ints(g.get("offset_dims", [])))
        out.append("collapsed_slice_dims=" + _ints(g.get("collapsed_slice_dims", [])))
        out.append("start_index_map=" + _ints(g.get("start_index_map", [])))
        if g.get("operand_batching_dims"):
            out.append("operand_batching_dims=" + _ints(g["operand_batching_dims"]))
        if g.get("start_indices_batching_dims"):
            out.append("start_indices_batching_dims=" + _ints(g["start_indices_batching_dims"]))
        out.append(f"index_vector_dim={g.get('index_vector_dim', 0)}")
        out.append("slice_sizes=" + _ints(ins.get("gather_slice_sizes", [])))
        if ins.get("indices_are_sorted"):
            out.append("indices_are_sorted=true")
        if ins.get("unique_indices"):
            out.append("unique_indices=true")
    if op == "scatter":
        s = ins.get("scatter_dimension_numbers", {})
        out.append("update_window_dims=" + _ints(s.get("update_window_dims", [])))
        out.append("inserted_window_dims=" + _ints(s.get("inserted_window_dims", [])))
        out.append("scatter_dims_to_operand_dims=" + _ints(s.get("scatter_dims_to_operand_dims", [])))
        if s.get("input_batching_dims"):
            out.append("input_batching_dims=" + _ints(s["input_batching_dims"]))
        if s.get("scatter_indices_batching_dims"):
            out.append("scatter_indices_batching_dims=" + _ints(s["scatter_indices_batching_dims"]))
        out.append(f"index_vector_dim={s.get('index_vector_dim', 0)}")
        if ins.get("indices_are_sorted"):
            out.append("indices_are_sorted=true")
        if ins.get("unique_indices"):
            out.append("unique_indices=true")
    if op == "topk":
        out.append(f"k={ins.get('k', 0)}")
        out.append("largest=" + ("true" if ins.get("largest") else "false"))
        if ins.get("is_stable"):
            out.append("is_stable=true")
    if op == "rng-bit-generator":
        out.append("algorithm=" + _RNG_ALGORITHMS.get(ins.get("rng_algorithm", 0), str(ins.get("rng_algorithm", 0))))
    if op == "reduce-precision":
        out.append(f"exponent_bits={ins.get('exponent_bits', 0)}")
        out.append(f"mantissa_bits={ins.get('mantissa_bits', 0)}")
    if op == "fft":
        out.append("fft_type=" + _FFT_TYPES.get(ins.get("fft_type", 0), str(ins.get("fft_type", 0))))
        out.append("fft_length=" + _ints(ins.get("fft_length", [])))
    if op == "fusion":
        out.append(f"kind={ins.get('fusion_kind', '')}")
        _aliasing(ins, out)
    if op == "custom-call":
        out.append(f'custom_call_target="{_cescape(ins.get("custom_call_target", ""))}"')
        if ins.get("constrain_layout"):
            out.append("operand_layout_constraints={" + ", ".join(
                shape_str(x) for x in ins.get("operand_shapes_with_layout", [])) + "}")
        if ins.get("custom_call_has_side_effect"):
            out.append("custom_call_has_side_effect=true")
        _aliasing(ins, out)
        sched = ins.get("custom_call_schedule", 0)
        if sched:
            out.append("schedule=" + _SCHEDULES.get(sched, str(sched)))
        api = ins.get("custom_call_api_version", 0)
        if api not in (0, 1):
            out.append("api_version=" + _API_VERSIONS.get(api, str(api)))
    # called computations (HloInstruction::PrintExtraAttributes, kNameOnly)
    called = [comps.get(c, {}).get("name", f"computation.{c}") for c in ins.get("called_computation_ids", [])]
    if called:
        if op == "while" and len(called) == 2:
            # HloWhileInstruction calls {body, condition}
            out.append(f"condition=%{called[1]}")
            out.append(f"body=%{called[0]}")
        elif op == "select-and-scatter":
            out.append(f"select=%{called[0]}")
            if len(called) > 1:
                out.append(f"scatter=%{called[1]}")
        elif op == "conditional":
            pred_type = operands[0].get("shape", {}).get("element_type", 0) if operands else 0
            if pred_type == 1 and len(called) == 2:
                out.append(f"true_computation=%{called[0]}")
                out.append(f"false_computation=%{called[1]}")
            else:
                out.append("branch_computations={" + ", ".join("%" + c for c in called) + "}")
        elif op in ("call", "map", "reduce-window", "reduce", "all-reduce", "all-reduce-start", "scatter",
                    "sort", "topk", "reduce-scatter"):
            out.append(f"to_apply=%{called[0]}")
        elif op == "custom-call":
            out.append("called_computations={" + ", ".join("%" + c for c in called) + "}")
        else:
            out.append(f"calls=%{called[0]}" if len(called) == 1 else
                       "calls={" + ", ".join("%" + c for c in called) + "}")
    mode = ins.get("result_accuracy", {}).get("mode", 0)
    if mode:
        out.append("result_accuracy={mode=" + _ACCURACY.get(mode, str(mode)) + "}")
    return out


# ---- the module ------------------------------------------------------------------------------


class TooLong(Exception):
    """The printed module would exceed ``text_budget`` of its proto's size."""

    def __init__(self, budget: int):
        super().__init__(budget)
        self.budget = budget


def text_budget(n: int) -> int:
    """The most text a proto of ``n`` bytes may print (XLA's text is about as long as its proto;
    a proto can ask for far more: one long name used by a million operands)."""
    return n * 16 + (1 << 20)


def _blen(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _join_within(parts, sep: str, budget: int) -> str:
    out: list[str] = []
    n = 0
    for k, p in enumerate(parts):
        n += (_blen(sep) if k else 0) + _blen(p)
        out.append(p)
        if n > budget:
            raise TooLong(budget)
    return sep.join(out)


def render_module(m: dict, budget: int | None = None) -> str:
    """The module as XLA's text dump prints it (``TooLong`` past ``budget`` bytes)."""
    if budget is None:
        budget = 1 << 62
    comps = {c.get("id", 0): c for c in m.get("computations", [])}
    schedule = {s.get("key", 0): s.get("value", {}).get("instruction_ids", [])
                for s in m.get("schedule", {}).get("sequences", [])}
    out: list[str] = []
    header = f"HloModule {m.get('name', '')}"
    if schedule:
        header += ", is_scheduled=true"
    aliases = m.get("input_output_alias", {}).get("entries", [])
    if aliases:
        kinds = {1: "may-alias", 2: "must-alias"}
        header += ", input_output_alias={ " + ", ".join(
            "{" + ",".join(map(str, a.get("output_shape_index", []))) + "}: ("
            + f"{a.get('parameter_number', 0)}, " + "{" + ",".join(map(str, a.get("parameter_shape_index", []))) + "}"
            + f", {kinds.get(a.get('kind', 0), 'may-alias')})" for a in aliases) + " }"
    hps = m.get("host_program_shape")
    if hps:
        header += (", entry_computation_layout={(" + ", ".join(_index_comment(k) + shape_str(p) for k, p in enumerate(hps.get("parameters", [])))
                   + ")->" + shape_str(hps.get("result", {})) + "}")
    out.append(header)
    out.append("")
    sfi = m.get("stack_frame_index")
    if sfi and (sfi.get("file_names") or sfi.get("stack_frames")):
        out.append("FileNames")
        for k, f in enumerate(sfi.get("file_names", []), 1):
            out.append(f'{k} "{_cescape(f)}"')
        out.append("")
        out.append("FunctionNames")
        for k, f in enumerate(sfi.get("function_names", []), 1):
            out.append(f'{k} "{_cescape(f)}"')
        out.append("")
        out.append("FileLocations")
        for k, loc in enumerate(sfi.get("file_locations", []), 1):
            out.append(f"{k} {{file_name_id={loc.get('file_name_id', 0)} function_name_id={loc.get('function_name_id', 0)} "
                       f"line={loc.get('line', 0)} end_line={loc.get('end_line', 0)} column={loc.get('column', 0)} "
                       f"end_column={loc.get('end_column', 0)}}}")
        out.append("")
        out.append("StackFrames")
        for k, fr in enumerate(sfi.get("stack_frames", []), 1):
            # XLA prints the parent's 1-based id plus one (its printer adds 1 to an id that is
            # 1-based already); printed as XLA prints it
            out.append(f"{k} {{file_location_id={fr.get('file_location_id', 0)} parent_frame_id={fr.get('parent_frame_id', 0) + 1}}}")
        out.append("")
        out.append("")
    entry_id = m.get("entry_computation_id")
    new_style = _prints_tuple_refs(m)
    used = sum(_blen(x) + 1 for x in out)
    if used > budget:
        raise TooLong(budget)
    longest = max((_blen(c.get("name", "")) + 3 for c in comps.values()), default=0)
    for c in _post_order(m):
        is_entry = c.get("id") == entry_id
        text = _computation(c, comps, schedule.get(c.get("id", 0)), is_entry, budget - used, longest, new_style)
        used += _blen(text) + 2
        if used > budget:
            raise TooLong(budget)
        out.append(text)
        out.append("")
    return "\n".join(out) + "\n"


def _prints_tuple_refs(m: dict) -> bool:
    """Whether the XLA that wrote ``m`` prints non-root get-tuple-elements as ``%tuple#index`` in
    their users (jax 0.11 and later) or as lines of their own (before). The proto does not say
    which XLA wrote it; the one field seen to tell them apart is the comparison order (field 102,
    written on every compare since jax 0.11): a module with a compare that has it is new; any
    other module is taken as old (every release before 0.11 prints so; a module of jax ≥ 0.11
    without any compare is printed the old way: its get-tuple-elements come as rows)."""
    for c in m.get("computations", []):
        for i in c.get("instructions", []):
            if i.get("opcode") == "compare" and i.get("comparison_order"):
                return True
    return False


def _post_order(m: dict) -> list[dict]:
    """``HloModule::MakeComputationPostOrder``: for each computation nobody calls (module order),
    its embedded computations depth first, each instruction's callees in order, then itself. XLA
    walks a computation's instructions in their order in memory, which the proto does not keep:
    it writes them in post order; a fusion computation is built from its root up, so its walk is
    taken in reverse (what XLA's dumps show)."""
    comps = m.get("computations", [])
    by_id = {c.get("id", 0): c for c in comps}
    called = {cc for c in comps for i in c.get("instructions", []) for cc in i.get("called_computation_ids", [])}
    added: set[int] = set()
    order: list[dict] = []

    schedule = {e.get("key", 0): e.get("value", {}).get("instruction_ids", [])
                for e in m.get("schedule", {}).get("sequences", [])}

    def walk(c: dict) -> list[int]:
        ins = c.get("instructions", [])
        seq = schedule.get(c.get("id", 0))
        if seq:
            by = {i.get("id"): i for i in ins}
            ins = [by[i] for i in seq if i in by]
        elif c.get("is_fusion_computation"):
            ins = ins[::-1]
        return [cc for i in ins for cc in i.get("called_computation_ids", [])]

    def embedded(root: dict) -> list[int]:
        # MakeEmbeddedComputationsList, with an explicit stack (no recursion on the input)
        visited: set[int] = set()
        post: list[int] = []
        for r in walk(root):
            # a computation already in the order has its callees there too: nothing to add
            if r not in by_id or r in added or r in visited:
                continue
            visited.add(r)
            stack = [[r, walk(by_id[r]), 0]]
            while stack:
                top = stack[-1]
                if top[2] < len(top[1]):
                    cc = top[1][top[2]]
                    top[2] += 1
                    if cc in by_id and cc not in added and cc not in visited:
                        visited.add(cc)
                        stack.append([cc, walk(by_id[cc]), 0])
                else:
                    post.append(top[0])
                    stack.pop()
        return post

    for c in comps:
        cid = c.get("id", 0)
        if cid in called:
            continue
        for e in embedded(c):
            if e not in added:
                added.add(e)
                order.append(by_id[e])
        if cid not in added:
            added.add(cid)
            order.append(c)
    return order


def _computation(c: dict, comps: dict[int, dict], sequence: list[int] | None, is_entry: bool, budget: int,
                 longest: int = 0, new_style: bool = True) -> str:
    instrs = c.get("instructions", [])
    by_id = {i.get("id", 0): i for i in instrs}
    root = c.get("root_id")
    ps = c.get("program_shape", {})
    params = sorted((i for i in instrs if i.get("opcode") == "parameter"), key=lambda i: i.get("parameter_number", 0))
    sig = "(" + _join_within((f"{p.get('name', '')}: {shape_str(p.get('shape', {}), layout=False)}" for p in params), ", ", budget) + ")"
    result = ps.get("result") or by_id.get(root, {}).get("shape", {})
    head = ("ENTRY " if is_entry else "") + f"%{c.get('name', '')} {sig} -> {shape_str(result, layout=False)}"
    if c.get("execution_thread") and c.get("execution_thread") != "main":
        head += f", execution_thread=\"{c['execution_thread']}\""
    lines = [head + " {"]
    order = [by_id[i] for i in sequence if i in by_id] if sequence else instrs
    # get-tuple-element instructions other than the root are printed as `%operand#index` where used
    elided = {i.get("id"): i for i in instrs if new_style and i.get("opcode") == "get-tuple-element"
              and i.get("id") != root}

    def ref(oid: int) -> str:
        # a chain of elided get-tuple-elements, bounded (a damaged proto may loop)
        suffix = ""
        i = oid
        for _ in range(len(instrs) + 1):
            ins = by_id.get(i)
            if ins is None:
                return f"%<unknown {i}>{suffix}"
            if i not in elided:
                return "%" + ins.get("name", "") + suffix
            suffix = f"#{ins.get('tuple_index', 0)}" + suffix
            ops = ins.get("operand_ids", [])
            i = ops[0] if ops else 0
        return f"%<cycle {oid}>"

    used = _blen(lines[0])
    for ins in order:
        if ins.get("id") in elided:
            continue
        line = "  " + instruction_str(ins, by_id, comps, ref, ins.get("id") == root, max(budget - used, 0), longest)
        used += _blen(line) + 1
        if used > budget:
            raise TooLong(budget)
        lines.append(line)
    lines.append("}")
    return "\n".join(lines)


def instruction_str(ins: dict, by_id: dict, comps: dict, ref, is_root: bool, budget: int = 1 << 62,
                    longest: int = 0) -> str:
    op = ins.get("opcode", "")
    shape = ins.get("shape", {})
    operand_ids = ins.get("operand_ids", [])
    if op == "constant":
        args = literal_str(ins.get("literal", {}), shape)
    elif op == "parameter":
        args = str(ins.get("parameter_number", 0))
    else:
        args = _join_within((_index_comment(k) + ref(o) for k, o in enumerate(operand_ids)), ", ", budget)
    text = ("ROOT " if is_root else "") + f"%{ins.get('name', '')} = {shape_str(shape)} {op}({args})"
    # longest: the longest computation name of the module + 3 (what one called computation can
    # print), computed once
    if len(ins.get("called_computation_ids", [])) * longest > budget:
        raise TooLong(budget)
    attrs = _extra_attributes(ins, comps, [by_id.get(o, {}) for o in operand_ids])
    ctrl = ins.get("control_predecessor_ids", [])
    if ctrl:
        attrs.append("control-predecessors={" + _join_within(("%" + by_id.get(c, {}).get("name", "") for c in ctrl), ", ", budget) + "}")
    fa = ins.get("frontend_attributes", {}).get("map", [])
    if fa:
        attrs.append("frontend_attributes={" + ",".join(f'{e.get("key", "")}="{_cescape(e.get("value", ""))}"' for e in sorted(fa, key=lambda e: e.get("key", ""))) + "}")
    md = metadata_str(ins.get("metadata", {}))
    if md:
        attrs.append("metadata={" + md + "}")
    bc = ins.get("backend_config", b"")
    if bc:
        attrs.append("backend_config=" + bc.decode("utf-8", "replace"))
    if attrs:
        text += ", " + ", ".join(attrs)
    return text


# ---- buffer assignment -----------------------------------------------------------------------

HEAP_KINDS = {0: "alloc", 1: "free", 2: "share_with"}


def _names(m: dict) -> dict[int, str]:
    return {i.get("id", 0): i.get("name", "") for c in m.get("computations", []) for i in c.get("instructions", [])}


def heap_trace_rows(ba: dict) -> list[dict[str, Any]]:
    """The ``heap_trace`` rows: one per heap-simulator event, in trace order (``step`` counts
    across the traces, one trace per simulated allocation or the whole module)."""
    sizes = {b.get("id", 0): b.get("size", 0) for b in ba.get("logical_buffers", [])}
    rows = []
    step = 0
    for t in ba.get("heap_simulator_traces", []):
        for e in t.get("events", []):
            bid, kind = e.get("buffer_id", 0), e.get("kind", 0)
            share = e.get("share_with_canonical_id", 0)
            rows.append({"step": step, "kind": HEAP_KINDS.get(kind, str(kind)), "buffer_id": bid,
                         "size": sizes.get(bid, 0), "instruction": e.get("instruction_name", ""),
                         "computation": e.get("computation_name", ""),
                         "share_with": None if share == 0 and kind != 2 else share})
            step += 1
    return rows


def heap_peaks(ba: dict) -> list[int]:
    """The most bytes live at once in each heap-simulator trace (a shared buffer takes no room of
    its own)."""
    sizes = {b.get("id", 0): b.get("size", 0) for b in ba.get("logical_buffers", [])}
    peaks = []
    for t in ba.get("heap_simulator_traces", []):
        live = peak = 0
        owned: dict[int, int] = {}
        for e in t.get("events", []):
            kind, bid = e.get("kind", 0), e.get("buffer_id", 0)
            if kind == 0:
                owned[bid] = sizes.get(bid, 0)
                live += owned[bid]
                peak = max(peak, live)
            elif kind == 1:
                live -= owned.pop(bid, 0)
        peaks.append(peak)
    return peaks


def subshape(s: dict, index: list[int]) -> dict | None:
    for k in index:
        parts = s.get("tuple_shapes", [])
        if not 0 <= k < len(parts):
            return None
        s = parts[k]
    return s


def _index_text(v: list[int]) -> str:
    return "{" + ",".join(map(str, v)) + "}"


def _clamp_i32(v: int) -> int:
    """An int64 field into an int32 column (a damaged proto's color may not fit): clamped."""
    return max(-(1 << 31), min((1 << 31) - 1, v))


def allocation_rows(ba: dict, m: dict) -> list[dict[str, Any]]:
    """``allocations`` rows from the ``BufferAllocationProto``s (the flags as the text dump names
    them; a temporary is what is none of parameter, constant, thread-local or live out; the
    output's shape, the flags' text and the line are not in the proto)."""
    params = m.get("host_program_shape", {}).get("parameters", [])
    rows = []
    for a in ba.get("buffer_allocations", []):
        param = a.get("is_entry_computation_parameter", False)
        index = a.get("parameter_shape_index", [])
        n = a.get("parameter_number", 0)
        shape = subshape(params[n], index) if param and 0 <= n < len(params) else None
        rows.append({
            "allocation": a.get("index", 0), "size": a.get("size", 0), "color": _clamp_i32(a.get("color", 0)),
            "is_thread_local": a.get("is_thread_local", False), "is_constant": a.get("is_constant", False),
            "is_maybe_live_out": a.get("maybe_live_out", False),
            "is_preallocated_temp": not (param or a.get("is_constant") or a.get("is_thread_local")
                                         or a.get("maybe_live_out")),
            "is_output": a.get("maybe_live_out", False),
            "parameter": n if param else None,
            "parameter_shape": shape_str(shape, layout=False) if shape is not None else None,
            "parameter_shape_index": _index_text(index) if param else None,
            "output_shape": None, "page": None, "flags": "", "line": 0,
        })
    return rows


def assignment_rows(ba: dict, m: dict) -> list[dict[str, Any]]:
    """``assignments`` rows: the logical buffers (XLA's value ids) in each allocation, with their
    offset, size, defining instruction and shape."""
    instrs = {i.get("id", 0): i for c in m.get("computations", []) for i in c.get("instructions", [])}
    buffers = {b.get("id", 0): b for b in ba.get("logical_buffers", [])}
    rows = []
    for a in ba.get("buffer_allocations", []):
        for x in a.get("assigned", []):
            b = buffers.get(x.get("logical_buffer_id", 0))
            at = b.get("defined_at") if b is not None else None
            index = at.get("shape_index", []) if at is not None else []
            ins = instrs.get(at.get("instruction_id", 0)) if at is not None else None
            if ins is not None:
                name, shape = ins.get("name", ""), ins.get("shape")
            else:
                name, shape = (at.get("instruction_name", "") if at is not None else ""), None
            sub = subshape(shape, index) if shape is not None else None
            rows.append({"allocation": a.get("index", 0), "value_id": x.get("logical_buffer_id", 0),
                         "instruction": name, "shape_index": _index_text(index), "is_phi": False,
                         "color": _clamp_i32(b.get("color", 0)) if b is not None else 0,
                         "offset": x.get("offset", 0), "size": x.get("size", 0),
                         "shape": shape_str(sub) if sub is not None else "", "line": 0})
    return rows


def memory_analysis(ba: dict) -> dict[str, int]:
    """jax's ``compiled.memory_analysis()`` figures from the allocations alone."""
    al = ba.get("buffer_allocations", [])
    def total(pred) -> int:
        return sum(a.get("size", 0) for a in al if pred(a))
    param = lambda a: a.get("is_entry_computation_parameter", False)  # noqa: E731
    out = lambda a: a.get("maybe_live_out", False)  # noqa: E731
    return {
        "argument_size_in_bytes": total(param),
        "output_size_in_bytes": total(out),
        "alias_size_in_bytes": total(lambda a: param(a) and out(a)),
        "temp_size_in_bytes": total(lambda a: not (param(a) or out(a) or a.get("is_constant") or a.get("is_thread_local"))),
    }


def parse(data: bytes, ctx: Any) -> None:
    """One ``.hlo.pb`` file into rows: the module's tables through its printed text (line and
    offset are those of that text), the buffer assignment's where the proto has one. A damaged
    proto is one error at line 1, the column its byte offset + 1."""
    from .hlo import parse_module

    try:
        m, ba, listing = decode_hlo_listing(data)
    except ProtoError as e:
        ctx.error(1, e.offset + 1, f"not a valid HLO proto: {e}", "")
        return
    try:
        text = render_module(m, text_budget(len(data)))
    except TooLong as e:
        ctx.error(1, 1, f"not read: its module would print as more than {e.budget} bytes of text ({len(data)} bytes of proto)", "")
        return
    from .lines import split_lines

    raw = text.encode("utf-8", "surrogatepass")
    # the printed text is read as a text file is (its lines checked as the core's driver does)
    parse_module(split_lines(raw, ctx), ctx, raw, judged=False)
    if ba is not None:
        allocations, assignments = allocation_rows(ba, m), assignment_rows(ba, m)
        for table, rows in (("allocations", allocations), ("assignments", assignments),
                            ("heap_trace", heap_trace_rows(ba))):
            for r in rows:
                ctx.add(table, r)
        if not ctx.has_errors():  # a file with errors is known to be incomplete
            for line, col, message in _allocation_problems(allocations, assignments):
                ctx.error(line, col, message)
    unknown_note(listing, ctx)


def _allocation_problems(allocations: list[dict], assignments: list[dict]) -> list[tuple[int, int, str]]:
    """The buffer assignment's whole-file checks, as for its text (an allocation listed twice,
    a value past the end of its allocation): ``buffer_assignment.whole_file_problems``."""
    from .buffer_assignment import whole_file_problems

    seen: dict[int, list[int]] = {}  # allocation -> [line first listed, largest size]
    again = []
    for r in allocations:
        first = seen.get(r["allocation"])
        if first is None:
            seen[r["allocation"]] = [r["line"], r["size"]]
        else:
            again.append((r["line"], r["allocation"], first[0]))
            first[1] = max(first[1], r["size"])
    past = [(r["line"], r["value_id"], r["allocation"], r["offset"], r["size"]) for r in assignments
            if r["allocation"] in seen and r["offset"] + r["size"] > seen[r["allocation"]][1]]
    return whole_file_problems(seen, again, past, [], True)
