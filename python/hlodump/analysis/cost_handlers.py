"""XLA's cost rules one instruction at a time, as Python handlers on ``Node`` views
(``_HANDLERS``; ``_one`` runs one): the rules that need a called computation's sum or a walk of a
fused computation (fusion, while, call, conditional, async-start, reduce, map, scatter …), the ones
that read attributes (dot, convolution, fft, transpose, triangular-solve, cholesky, infeed,
outfeed), ``FusionParameterReadBytes`` as XLA walks it, and every other opcode too: they are the
reference of the column rules (``cost_vector``). Apart from the driver (``cost_rules``), which
chooses the instructions they run on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .cost_keys import (_ELEMENTWISE, _FREE, _TRANSCENDENTAL, BYTES, FLOPS, OUT, SECONDS, TRANS, UTIL,
                        operand_bytes_key, operand_util_key, output_bytes_key)
from . import cost_custom as custom
from .cost_state import _Ctx, _Run
from .hlo_frame import Node, attr
from .hlo_shapes import Shape


def f32(x: float) -> float:
    """``x`` rounded to float32: XLA keeps every property as a C++ ``float``."""
    return float(np.float32(x))


def _add(a: float, b: float) -> float:
    return float(np.float32(a) + np.float32(b))


def _mul(a: float, b: float) -> float:
    return float(np.float32(a) * np.float32(b))


def _copyable(key: str) -> bool:
    """``KeyToCopyFromSubcomputation``: bytes and utilizations stay with the subcomputation."""
    return not key.startswith(BYTES) and not key.startswith(UTIL)


def _ints(text: Optional[str]) -> list[int]:
    import re

    return [int(x) for x in re.findall(r"-?\d+", text or "")]


def _attr(ins: Node, name: str) -> Optional[str]:
    return attr(ins.attrs, name)


@dataclass
class _WinDim:
    size: int = 1
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    base_dil: int = 1
    win_dil: int = 1


def _window(ins: Node) -> list[_WinDim]:
    """``window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x2 rhs_dilate=1x1}``."""
    text = _attr(ins, "window")
    if not text:
        return []
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    dims = [_WinDim(size=int(x)) for x in fields.get("size", "").split("x") if x]
    for key, setter in (("stride", "stride"), ("lhs_dilate", "base_dil"), ("rhs_dilate", "win_dil")):
        if key in fields:
            for wd, part in zip(dims, fields[key].split("x")):
                setattr(wd, setter, int(part))
    if "pad" in fields:
        for wd, part in zip(dims, fields["pad"].split("x")):
            lo, hi = part.split("_")
            wd.pad_lo, wd.pad_hi = int(lo), int(hi)
    return dims


def _tuple_index(ins: Node) -> int:
    v = _attr(ins, "index")
    return int(v) if v and v.lstrip("-").isdigit() else -1


def _called(ins: Node, name: str) -> str:
    v = _attr(ins, name)
    if v:
        return v.strip().lstrip("%")
    return ins.called[0] if ins.called else ""


def _branches(ins: Node) -> list[str]:
    v = _attr(ins, "branch_computations")
    if v:
        return [x.strip().lstrip("%") for x in v.split(",") if x.strip()]
    t, f = _attr(ins, "true_computation"), _attr(ins, "false_computation")
    if t and f:
        return [t.strip().lstrip("%"), f.strip().lstrip("%")]
    return list(ins.called)


#: handler calls (all, and the ones a signature saved): the bench reads them
HANDLER_CALLS = {"run": 0, "copied": 0}


def _one(R: _Run, i: int) -> tuple[dict[str, float], Optional[str]]:
    """One instruction's Python rule: (its properties, why XLA's rule did not apply or None)."""
    HANDLER_CALLS["run"] += 1
    fr = R.fr
    why = None
    ins = fr.node(i)
    a = R.ctx_of(int(fr.file[i]))
    a.current = int(fr.comp[i])
    p = _preprocess(ins, a.tuple_leaves)
    handler = _HANDLERS.get(ins.opcode)
    if handler is None:
        handler = _elementwise if ins.opcode in _ELEMENTWISE else _free if ins.opcode in _FREE else _keep
    try:
        compute_time = handler(a, ins, p)
    except (IndexError, ValueError, KeyError, AttributeError, TypeError, ZeroDivisionError) as e:
        # malformed or unexpected text (an operand we cannot see, odd attributes): keep
        # XLA's default figures for this instruction and say so
        why = f"could not apply XLA's rule for {ins.opcode}: {type(e).__name__}: {e}"
        compute_time = None
    if compute_time is not False:
        p[SECONDS] = 0.0
    return p, why


def _preprocess(ins: Node, tuple_leaves: bool) -> dict[str, float]:
    # Default bytes: the output + every operand. A tuple-shaped result counts its array
    # leaves in XLA since jax 0.8 (its index table of 8 bytes per element before); a
    # tuple-shaped operand counts its index table in both (checked against jax 0.5.3 … 0.10.2).
    size = (sum(s.bytes for _, s in ins.shape.leaves() if s.is_array)
            if ins.shape.is_tuple and tuple_leaves else ins.shape.bytes)
    b = f32(size)
    p: dict[str, float] = {OUT: f32(size)}
    for i, op in enumerate(ins.operands):
        s = op.shape.bytes
        b = _add(b, s)
        p[operand_bytes_key(i)] = f32(s)
        p[operand_util_key(i)] = 1.0
    p[BYTES] = b
    return p


def fusion_parameter_read_bytes(a: _Ctx, hlo: Node) -> int:
    """``FusionParameterReadBytes``: what a fused parameter costs to read, from its users.

    A slice reads its output's bytes, a dynamic-slice too (of its operand 0), a
    dynamic-update-slice never reads its operand 0 (aliased to the output), broadcast and
    reshape read the whole parameter each time; any other users share one read. A nested
    fusion whose parameter feeds its root directly ("simple") is charged by the slices of the
    nested fusion's users; otherwise by the nested parameter's own read bytes, once."""
    size = 0
    work = [hlo]  # nested fusions' parameters still to charge (a stack, not recursion)
    budget = 1 << 22  # a malformed cycle of fusions ends here
    while work and budget > 0:
        hlo = work.pop()
        state = {"trivial": False}
        for user in hlo.users:
            budget -= 1
            op = user.opcode
            if op == "fusion":
                sub = a.comps.get(user.called[0]) if user.called else None
                params = sub.parameters() if sub else {}
                root = sub.root if sub else None
                for idx, o in enumerate(user.operands):
                    if o is not hlo or idx not in params:
                        continue
                    nested = {"trivial": False}
                    simple = root is not None and bool(root.operands) and root.operands[0] is params[idx]
                    for fu in user.users:
                        if simple and fu.opcode in ("slice", "dynamic-slice", "dynamic-update-slice"):
                            size += _sliced_read(user, fu, nested)
                        elif not nested["trivial"]:
                            nested["trivial"] = True
                            work.append(params[idx])
            elif op in ("slice", "dynamic-slice", "dynamic-update-slice"):
                size += _sliced_read(hlo, user, state)
            elif op in ("broadcast", "reshape"):
                size += hlo.shape.bytes
            elif not state["trivial"]:
                state["trivial"] = True
                size += hlo.shape.bytes
    return size



def _sliced_read(hlo: Node, user: Node, state: dict[str, bool]) -> int:
    """The bytes a slice, dynamic-slice or dynamic-update-slice ``user`` reads of ``hlo``."""
    if user.opcode == "slice":
        return user.shape.bytes
    first = bool(user.operands) and user.operands[0] is hlo
    if user.opcode == "dynamic-slice" and first:
        return user.shape.bytes
    if user.opcode == "dynamic-update-slice" and first:
        return 0  # operand 0 is aliased to the output
    if not state["trivial"]:
        state["trivial"] = True
        return hlo.shape.bytes
    return 0


# ---- the Python handlers: (analysis, instruction, properties) -> False when XLA skips the
# bottleneck time. Also the reference of the vectorised rules (``_vector_props``) for their opcodes.

def _keep(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    return None


def _elementwise(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    n = f32(ins.shape.elements)
    p[TRANS if ins.opcode in _TRANSCENDENTAL else FLOPS] = n


def _zero_io(p: dict[str, float], ins: Node, operands: bool = True) -> None:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    if operands:
        for i in range(len(ins.operands)):
            p[operand_bytes_key(i)] = 0.0


def _free(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    _zero_io(p, ins)
    p[SECONDS] = 0.0
    return False


def _parameter(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    _zero_io(p, ins, operands=False)
    p[SECONDS] = 0.0
    return False


def _aliases_operand(p: dict[str, float]) -> None:
    """The result is (a piece of) operand 0, not a copy: no bytes moved, no time."""
    p[BYTES] = 0.0
    p[OUT] = 0.0
    p[operand_bytes_key(0)] = 0.0
    p[SECONDS] = 0.0


def _gte(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    _aliases_operand(p)
    return False


def _bitcast(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    _aliases_operand(p)


def _tuple(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    # the tuple's index table: 8 bytes an element, 4 in XLA 2026 (jax >= 0.11; seen against
    # jax 0.11.2 / 0.12.0.1's cost_analysis())
    # (TPU: 512 bytes, Shape.bytes)
    parts = ins.shape.parts
    size = a.tuple_pointer_bytes * len(parts) if parts is not None and not ins.shape.tpu_layout else ins.shape.bytes
    p[BYTES] = f32(size)
    p[OUT] = f32(size)
    for i in range(len(ins.operands)):
        p[operand_bytes_key(i)] = 0.0


def _ratio(num: int, den: int) -> float:
    return f32(num / den) if den else (math.inf if num else math.nan)


def _slice(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    p[BYTES] = f32(out * 2)
    p[OUT] = f32(out)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)


def _dynamic_slice(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    idx = ins.operands[1].shape.bytes if len(ins.operands) > 1 else 0
    p[BYTES] = f32(out * 2 + idx)
    p[OUT] = f32(out)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_bytes_key(1)] = f32(idx)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)


def _dynamic_update_slice(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    upd = ins.operands[1].shape.bytes
    idx = ins.operands[2].shape.bytes if len(ins.operands) > 2 else 0
    p[BYTES] = f32(upd * 2 + idx)
    p[OUT] = f32(upd)
    p[operand_bytes_key(0)] = 0.0
    p[operand_bytes_key(1)] = f32(upd)
    p[operand_bytes_key(2)] = f32(idx)
    out_n = ins.shape.elements
    p[operand_util_key(0)] = _ratio(out_n - ins.operands[1].shape.elements, out_n)


def _transpose(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    src, dst = ins.operands[0].shape, ins.shape
    perm = _ints(_attr(ins, "dimensions"))
    if (src.minor_to_major is not None and dst.minor_to_major is not None and src.etype == dst.etype
            and len(perm) == len(dst.minor_to_major)
            and all(perm[j] == i for j, i in zip(dst.minor_to_major, src.minor_to_major))):
        return _bitcast(a, ins, p)  # TransposeIsBitcast: XLA counts it as a bitcast


def dot_flops(lhs: Shape, out: Shape, lhs_contracting: list[int]) -> int:
    """``GetDotFlops``: 2 × output elements × product of the lhs contracting dimensions."""
    width = 1
    for d in lhs_contracting:
        width *= lhs.dims[d] if d < len(lhs.dims) else 1
    return 2 * out.elements * width


def _dot(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[FLOPS] = f32(dot_flops(ins.operands[0].shape, ins.shape, _ints(_attr(ins, "lhs_contracting_dims"))))


def conv_flops(ins: Node, result: Optional[Shape] = None) -> int:
    """``GetConvolutionFlops``: valid (output, kernel) positions per spatial dimension × features
    × batch, over feature/batch group counts, × 2. ``result``: the convolution's result when it is
    not the instruction's shape (a cuDNN call's first tuple part)."""
    lhs, rhs, out = ins.operands[0].shape, ins.operands[1].shape, result or ins.shape
    labels = _attr(ins, "dim_labels") or ""
    try:
        in_l, rest = labels.split("_", 1)
        k_l, o_l = rest.split("->", 1)
    except ValueError:
        return 0
    window = _window(ins)
    nsp = len(window)
    fgc = int(_attr(ins, "feature_group_count") or 1)
    bgc = int(_attr(ins, "batch_group_count") or 1)
    in_feature = lhs.dims[in_l.index("f")]
    out_feature = out.dims[o_l.index("f")]
    batch = lhs.dims[in_l.index("b")]
    if nsp == 0:
        window = [_WinDim()]
        kl, ol, il = [1], [1], [1]
    else:
        kl = [rhs.dims[k_l.index(str(s))] for s in range(nsp)]
        ol = [out.dims[o_l.index(str(s))] for s in range(nsp)]
        il = [lhs.dims[in_l.index(str(s))] for s in range(nsp)]
    counts = []
    for s, w in enumerate(window):
        if (il[s] == ol[s] and kl[s] == ol[s] and il[s] == w.base_dil and w.win_dil == 1
                and max(1, il[s] - 1) == w.stride and w.pad_lo == 0 and w.pad_hi == 0):
            counts.append(il[s])
            continue
        if (il[s] == 1 and kl[s] == ol[s] and w.win_dil == 1 and w.base_dil == 1 and w.stride == 1
                and w.pad_hi == ol[s] - 1 and w.pad_lo == ol[s] - 1):
            counts.append(ol[s])
            continue
        counts.append(_valid_positions(il[s], kl[s], ol[s], w))
    prod = 1
    for c in counts:
        prod *= c
    return 2 * (in_feature // fgc) * out_feature * (batch // bgc) * prod


def _valid_positions(il: int, kl: int, ol: int, w: _WinDim) -> int:
    """Output × kernel index pairs that read an input element (not padding, not a dilation hole),
    vectorised over output positions."""
    o = np.arange(ol, dtype=np.int64)
    n = 0
    for k in range(kl):
        und = o * w.stride - w.pad_lo + k * w.win_dil
        if w.base_dil > 1:
            # C++ integer division truncates towards zero
            q = np.where(und >= 0, und // w.base_dil, -((-und) // w.base_dil))
            ok = und == q * w.base_dil
        else:
            q, ok = und, np.ones_like(und, dtype=bool)
        n += int(np.count_nonzero(ok & (q >= 0) & (q < il)))
    return n


def _conv(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[FLOPS] = f32(conv_flops(ins))


def _fft(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    src = ins.operands[0].shape
    real = src.at(0) if src.is_tuple else src
    log_factors = 1
    for n in _ints(_attr(ins, "fft_length")):
        log_factors *= max(0, int(n).bit_length() - 1)  # Log2Floor
    p[FLOPS] = f32(2 * 4 * log_factors * real.elements)


def _scaled(p: dict[str, float], sub: dict[str, float], count: int, add: bool = False) -> None:
    for k, v in sub.items():
        if _copyable(k):
            v2 = _mul(v, count)
            p[k] = _add(p.get(k, 0.0), v2) if add else v2


def _first_array(s: Shape) -> Shape:
    return s if not s.is_tuple else s.at(0)


def _reduce(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    sub = a.computation(_called(ins, "to_apply"))
    count = ins.operands[0].shape.elements - _first_array(ins.shape).elements
    _scaled(p, sub, count)


def _reduce_window(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    sub = a.computation(_called(ins, "to_apply"))
    window = _window(ins)
    wcount = 1
    for w in window:
        wcount *= w.size
    out_n = _first_array(ins.shape).elements
    count = (wcount - 1) * out_n
    reducing = [w for w in window if w.size != 1]
    padded = [w for w in window if w.pad_lo != 0 or w.pad_hi != 0]
    if len(reducing) == 1 and len(padded) == 1 and not ins.shape.is_tuple:
        for dim, w in enumerate(window):
            if (w.size != 1 and w.pad_lo != 0 and w.pad_hi != 0 and w.pad_lo == w.pad_hi
                    and w.size == 2 * w.pad_lo + 1):
                if w.pad_lo == ins.shape.dims[dim] - 1:  # a reduce then a broadcast (cumsum-like)
                    span = ins.shape.dims[dim]
                    count = out_n // span + (span - 1)
                break
    _scaled(p, sub, count)


def _select_and_scatter(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    sel = a.computation(_called(ins, "select"))
    sca = a.computation(_called(ins, "scatter"))
    n = ins.operands[1].shape.elements
    wcount = 1
    for w in _window(ins):
        wcount *= w.size
    _scaled(p, sel, n * (wcount - 1), add=True)
    _scaled(p, sca, n, add=True)


def _map(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    _scaled(p, a.computation(_called(ins, "to_apply")), ins.shape.elements)


def _tiled_windows(operand: Shape, window: list[int], window_elements: int, count_elements: int) -> Optional[int]:
    """The bytes of the windows a gather reads or a scatter writes in a tiled (TPU) operand:
    each window padded to the operand's tile. The TPU compiler's cost analysis counts so: a
    gathered row of a ``f32[N,256]{1,0:T(8,128)}`` table costs a whole 8-row tile (measured:
    8 x the output on libtpu 0.0.50, f32 and bf16, 100- and 256-wide rows). None for an
    untiled operand (CPU, GPU): then the window is what moves."""
    if operand.tile is None or not operand.is_array or len(window) != len(operand.dims) or window_elements <= 0:
        return None
    one = Shape(operand.text, etype=operand.etype, dims=tuple(window), minor_to_major=operand.minor_to_major,
                element_bits=operand.element_bits, tile=operand.tile)
    return (count_elements // window_elements) * one.bytes


def _gather(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    idx = ins.operands[1].shape.bytes
    sizes = _ints(_attr(ins, "slice_sizes"))
    n = 1
    for x in sizes:
        n *= x
    read = _tiled_windows(ins.operands[0].shape, sizes, n, ins.shape.elements)
    if read is not None:  # TPU: the gathered windows padded to the table's tile
        p[BYTES] = f32(out + read + idx)
        p[operand_bytes_key(0)] = f32(read)
        p[operand_bytes_key(1)] = f32(idx)
        p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)
        p[OUT] = f32(out)
        return
    p[BYTES] = f32(out * 2 + idx)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_bytes_key(1)] = f32(idx)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)
    p[OUT] = f32(out)


def _scatter(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    n = (len(ins.operands) - 1) // 2
    total = window_total = 0
    inserted = set(_ints(_attr(ins, "inserted_window_dims")))
    for i in range(n):
        upd_shape = ins.operands[n + 1 + i].shape
        upd = upd_shape.bytes
        # the window of operand i each update writes: 1 on an inserted dimension, else the
        # next update window dimension's size
        wdims = [upd_shape.dims[k] for k in _ints(_attr(ins, "update_window_dims")) if k < len(upd_shape.dims)]
        op_shape = ins.operands[i].shape
        window, it = [], iter(wdims)
        for d in range(len(op_shape.dims)):
            window.append(1 if d in inserted else next(it, 1))
        wn = 1
        for x in window:
            wn *= x
        tiled = _tiled_windows(op_shape, window, wn, upd_shape.elements)
        moved = upd if tiled is None else tiled  # TPU: read and written by whole tiles
        p[operand_bytes_key(i)] = f32(moved)
        p[operand_bytes_key(n + 1 + i)] = f32(upd)
        total += upd
        window_total += moved
    idx = ins.operands[n].shape.bytes
    p[operand_bytes_key(n)] = f32(idx)
    p[BYTES] = f32(total + 2 * window_total + idx)
    p[OUT] = f32(window_total)
    _scaled(p, a.computation(_called(ins, "to_apply")), ins.operands[n + 1].shape.elements)


def _sort(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    n = ins.operands[0].shape.elements
    log2ceil = (n - 1).bit_length() if n > 0 else 0
    p[FLOPS] = f32(n * log2ceil)


def _while(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    body = a.computation(_called(ins, "body"))
    cond = a.computation(_called(ins, "condition"))
    p.clear()
    for src in (body, cond):
        for k, v in src.items():
            p[k] = _add(p.get(k, 0.0), v)
    return False


def _conditional(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    branches = _branches(ins)
    p.clear()
    for j, b in enumerate(branches):
        props = a.computation(b)
        for k, v in props.items():
            p[k] = v if (j == 0 or k not in p) else max(p[k], v)
    return False


def _call(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    sub = a.computation(_called(ins, "to_apply"))
    p.clear()
    p.update(sub)
    return False


def _async_start(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    sub = a.computation(ins.called[0]) if ins.called else {}
    p.clear()
    p.update(sub)


def _custom_call(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    cfg = ins.backend_config
    if custom.known(ins.custom_call_target, cfg, a.tpu):
        return _KNOWN_CUSTOM[custom.rule_of(ins.custom_call_target)](ins, p, cfg)
    # XLA's base rule: unknown, −1 in every figure it sets
    p[SECONDS] = -1.0
    p[BYTES] = -1.0
    p[OUT] = -1.0
    for i in range(len(ins.operands)):
        p[operand_bytes_key(i)] = -1.0
    p[FLOPS] = -1.0
    return False


def _pallas_kernel(ins: Node, p: dict[str, float], cfg: Optional[str]) -> Any:
    # the kernel's CostEstimate replaces flops, transcendentals and bytes; operand and output
    # bytes stay Preprocess's (the TPU compiler's per-operand figures are the operands' sizes)
    est = custom.pallas_estimate(cfg) or {}
    for k, v in custom.estimate_props(est).items():
        p[k] = f32(v)
    return False


def _cublas_gemm(ins: Node, p: dict[str, float], cfg: Optional[str]) -> Any:
    # cuBLASLt may return (result, workspace): GetDotFlops reads the result
    out = ins.shape.at(0) if ins.shape.is_tuple else ins.shape
    p[FLOPS] = f32(dot_flops(ins.operands[0].shape, out, custom.gemm_dims(cfg) or []))
    return False


def _cudnn_conv(ins: Node, p: dict[str, float], cfg: Optional[str]) -> Any:
    # (result, scratch): flops of the result, and only its bytes as output (XLA does not
    # reward a convolution for the scratch memory it asks for)
    result = ins.shape.at(0) if ins.shape.is_tuple else ins.shape
    p[FLOPS] = f32(conv_flops(ins, result))
    if ins.shape.is_tuple:
        size = f32(result.bytes)
        p[BYTES] = _add(_add(p[BYTES], -p.get(OUT, 0.0)), size)
        p[OUT] = size
    return False


def _free_call(ins: Node, p: dict[str, float], cfg: Optional[str]) -> Any:
    # AllocateBuffer on TPU: the TPU compiler's analysis gives it no figure at all
    p.clear()
    p[BYTES] = 0.0
    p[OUT] = 0.0
    return False


_KNOWN_CUSTOM: dict[str, Callable[[Node, dict[str, float], Optional[str]], Any]] = {
    "pallas": _pallas_kernel, "gemm": _cublas_gemm, "conv": _cudnn_conv, "free": _free_call,
}


def _all_reduce(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    flops = 0.0
    out = 0
    for _, s in ins.shape.subshapes():
        if s.is_array:
            flops += s.elements
            out += s.bytes
    total = out + sum(o.shape.bytes for o in ins.operands)
    p[FLOPS] = f32(flops)
    p[OUT] = f32(out)
    p[BYTES] = f32(total)


def _rng(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[TRANS] = f32(ins.shape.elements)


def _rng_bit_generator(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[TRANS] = f32(ins.shape.elements_recursive)


def _triangular_solve(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    a_s, b_s = ins.operands[0].shape, ins.operands[1].shape
    b = f32(out)
    p[OUT] = f32(out)
    b = _add(b, f32(a_s.bytes / 2.0))
    b = _add(b, b_s.bytes)
    p[operand_bytes_key(0)] = f32(b_s.bytes)  # XLA sets operand 0 twice (the second wins)
    p[BYTES] = b
    p[FLOPS] = f32(2 * (a_s.dims[-1] if a_s.dims else 1) * b_s.elements)


def _cholesky(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    a_s = ins.operands[0].shape
    half = f32(a_s.bytes / 2.0)
    p[OUT] = half
    p[operand_bytes_key(0)] = half
    p[BYTES] = _add(half, half)
    p[FLOPS] = f32(((a_s.dims[-1] if a_s.dims else 1) * a_s.elements) // 3)


def _infeed(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    size = 0
    for ix, s in ins.shape.leaves():
        size += s.bytes
        p[output_bytes_key(ix)] = f32(s.bytes)
    p[OUT] = f32(size)
    p[BYTES] = f32(size)


def _outfeed(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    total = 0.0
    for i, op in enumerate(ins.operands):
        size = 0
        for ix, s in op.shape.leaves():
            size += s.bytes
            p[operand_bytes_key(i, ix)] = f32(s.bytes)
        p[operand_bytes_key(i)] = f32(size)
        total = _add(total, size)
    p[BYTES] = total


#: The custom calls at the root of libtpu's async collective fusions (an all-gather or
#: reduce-scatter overlapped with the matmul of the fusion between them).
ASYNC_COLLECTIVE = ("AsyncCollectiveStart", "AsyncCollectiveDone")

#: What libtpu's cost analysis charges a sync flag (a u32[] in SMEM) of an async collective.
_SYNC_FLAG_BYTES = 4096


def _async_collective(ins: Node, target: str, p: dict[str, float]) -> Any:
    """A TPU async collective fusion as libtpu's cost analysis counts it (measured on libtpu
    0.0.50 by compiling one program with and without ``xla_tpu_enable_async_collective_fusion``,
    at three sizes): the start reads what it sends (its operands) and sets a sync flag; the done
    sets a flag. The collective's buffers, passed through as the tuple between them, are charged
    where the fusion that uses them reads them."""
    p.clear()
    total = 0.0
    if target == "AsyncCollectiveStart":
        for i, op in enumerate(ins.operands):
            p[operand_bytes_key(i)] = f32(op.shape.bytes)
            total = _add(total, p[operand_bytes_key(i)])
    p[OUT] = f32(_SYNC_FLAG_BYTES)
    p[BYTES] = _add(total, _SYNC_FLAG_BYTES)


def _fusion(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    comp = a.comps.get(ins.called[0]) if ins.called else None
    if comp is None or comp.root is None:
        return None
    root = comp.root
    if ins.fusion_kind == "kCustom":  # IsCustomFusion: a gather/scatter inside decides
        found = sorted([(r, "gather") for r in comp.rows_of("gather")] + [(r, "scatter") for r in comp.rows_of("scatter")])
        if found:
            h = comp.f.node(found[0][0])
            return _gather(a, h, p) if found[0][1] == "gather" else _scatter(a, h, p)
        if root.opcode == "custom-call" and root.custom_call_target in ASYNC_COLLECTIVE:
            return _async_collective(ins, root.custom_call_target, p)
    p.clear()
    p.update(a.computation(comp.name))
    p[BYTES] = 0.0
    for ix, sub in ins.shape.subshapes():
        if not sub.is_array:
            continue
        size = sub.bytes
        if not ix and root.opcode == "dynamic-update-slice":
            size = root.operands[1].shape.bytes
        elif (len(ix) == 1 and root.opcode == "tuple" and ix[0] < len(root.operands)
              and root.operands[ix[0]].opcode == "dynamic-update-slice"):
            size = root.operands[ix[0]].operands[1].shape.bytes
        p[BYTES] = _add(p[BYTES], size)
        p[output_bytes_key(ix)] = f32(size)
    if ins.shape.is_tuple:
        p.pop(OUT, None)

        def propagate(s: Shape, ix: tuple[int, ...]) -> float:
            k = output_bytes_key(ix)
            if k in p:
                return p[k]
            total = 0.0
            for i, t in enumerate(s.parts or ()):
                total = _add(total, propagate(t, ix + (i,)))
            p[k] = total
            return total

        propagate(ins.shape, ())
    for r in comp.rows_of("constant"):  # large constants are read from memory
        h = comp.f.node(r)
        if h.shape.elements > 1:
            p[BYTES] = _add(p[BYTES], h.shape.bytes)
    params = comp.parameters()
    for i in range(len(params)):
        param = params.get(i)
        if param is None:
            continue
        if not param.shape.is_tuple:
            size = fusion_parameter_read_bytes(a, param)
        else:
            size = 0
            for ix, _leaf in param.shape.leaves():
                g = param
                for index in ix:
                    for u in g.users:
                        if u.opcode == "get-tuple-element" and _tuple_index(u) == index:
                            g = u
                            break
                s = fusion_parameter_read_bytes(a, g)
                size += s
                p[operand_bytes_key(i, ix)] = f32(s)
        p[BYTES] = _add(p[BYTES], size)
        p[operand_bytes_key(i)] = f32(size)
        p[operand_util_key(i)] = 1.0  # FusionCalculateUtilizations: 1 for every fused instruction
    return None


_HANDLERS: dict[str, Callable[[_Ctx, Node, dict[str, float]], Any]] = {
    "parameter": _parameter, "constant": _parameter, "get-tuple-element": _gte,
    "tuple": _tuple, "bitcast": _bitcast, "slice": _slice, "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice, "transpose": _transpose, "dot": _dot,
    "convolution": _conv, "fft": _fft, "reduce": _reduce, "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter, "map": _map, "gather": _gather, "scatter": _scatter,
    "sort": _sort, "while": _while, "conditional": _conditional, "call": _call,
    "async-start": _async_start, "custom-call": _custom_call, "all-reduce": _all_reduce,
    "all-reduce-start": _all_reduce, "rng": _rng, "rng-bit-generator": _rng_bit_generator,
    "triangular-solve": _triangular_solve, "cholesky": _cholesky, "infeed": _infeed,
    "outfeed": _outfeed, "fusion": _fusion,
}
