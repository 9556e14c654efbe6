"""FLOPs and bytes of every instruction, following XLA's ``HloCostAnalysis``.

``costs(d)`` is one row per instruction of every after-optimizations HLO module in the dump;
``cost_analysis(d)`` gives each module's totals under the key names of jax's
``Compiled.cost_analysis()`` (``flops``, ``transcendentals``, ``bytes accessed``,
``bytes accessed0{}``, ``bytes accessedout{}``, ``utilization0{}`` …), computed as XLA computes
them on CPU and GPU (``xla/service/hlo_cost_analysis.cc``; the PJRT CPU and GPU clients run that
base class with ``ShapeUtil::ByteSizeOf(shape, 8)`` as the shape size):

* every instruction starts from XLA's ``Preprocess``: ``bytes accessed`` = output bytes + the
  bytes of every operand; then its opcode's handler overrides what it knows better (see
  ``_HANDLERS`` and docs/FORMATS.md "Cost analysis" for each formula);
* a computation's properties are the sum over its instructions in XLA's visiting order
  (post-order DFS from the root, unreachable roots first), **in float32** as XLA sums them, so
  totals above 2^24 round as jax's do;
* ``while`` is its body + condition counted **once** (XLA does not multiply by the trip count);
  ``conditional`` the maximum over its branches; ``call``/``async-start`` their computation;
  ``fusion`` its fused computation's FLOPs with bytes only at the boundary
  (``FusionParameterReadBytes``); ``custom-call`` is unknown: XLA sets flops, bytes and
  optimal seconds to −1 and sums them (jax reports those −1s: the ``note`` column says so).

TPU dumps: TPU compilers run their own cost analysis (tiled shape sizes), so the figures here
are the CPU/GPU convention for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .hlo_shapes import Shape, parse_shape

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["costs", "cost_analysis", "format_cost", "COST_COLUMNS"]

ModuleSel = Union[None, str, int, Sequence[Union[str, int]]]

FLOPS = "flops"
TRANS = "transcendentals"
BYTES = "bytes accessed"
SECONDS = "optimal_seconds"
UTIL = "utilization"


def _ix(index: tuple[int, ...]) -> str:
    return "{" + ",".join(str(i) for i in index) + "}"


@lru_cache(maxsize=4096)
def operand_bytes_key(i: int, index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOperandBytesAccessedKey``: ``bytes accessed0{}``, ``bytes accessed1{0}``."""
    return f"{BYTES}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def operand_util_key(i: int, index: tuple[int, ...] = ()) -> str:
    return f"{UTIL}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def output_bytes_key(index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOutputBytesAccessedKey``: ``bytes accessedout{}``, ``bytes accessedout{1}``."""
    return f"{BYTES}out{_ix(index)}"


OUT = output_bytes_key()


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


# --------------------------------------------------------------------------------- the graph

@dataclass(eq=False)
class _Ins:
    row: int  # index into the loaded columns
    name: str
    opcode: str
    shape: Shape
    operand_names: list[str]
    called: list[str]
    attrs: str
    fusion_kind: Optional[str]
    custom_call_target: Optional[str]
    comp: "_Comp"
    param_number: Optional[int] = None
    operands: list["_Ins"] = field(default_factory=list)
    users: list["_Ins"] = field(default_factory=list)


@dataclass(eq=False)
class _Comp:
    name: str
    is_entry: bool
    instrs: list[_Ins] = field(default_factory=list)
    root: Optional[_Ins] = None
    by_name: dict[str, _Ins] = field(default_factory=dict)


_ATTR_CACHE: dict[tuple[str, str], Optional[str]] = {}


def _attr(ins: _Ins, name: str) -> Optional[str]:
    """The raw value of ``name=`` in the attribute text (braces balanced), or None."""
    m = re.search(r"(?:^|[\s,])" + re.escape(name) + r"=", ins.attrs)
    if m is None:
        return None
    i = m.end()
    s = ins.attrs
    if i < len(s) and s[i] == "{":
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return s[i + 1:j]
        return s[i + 1:]
    j, depth = i, 0
    while j < len(s) and (depth > 0 or s[j] not in ", "):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
        j += 1
    return s[i:j]


def _ints(text: Optional[str]) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text or "")]


@dataclass
class _WinDim:
    size: int = 1
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    base_dil: int = 1
    win_dil: int = 1


def _window(ins: _Ins) -> list[_WinDim]:
    """``window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x2 rhs_dilate=1x1}``."""
    text = _attr(ins, "window")
    if not text:
        return []
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    sizes = [int(x) for x in fields.get("size", "").split("x") if x]
    dims = [_WinDim(size=s) for s in sizes]

    def each(key: str, setter: Callable[[_WinDim, str], None]) -> None:
        if key in fields:
            for wd, part in zip(dims, fields[key].split("x")):
                setter(wd, part)

    each("stride", lambda w, v: setattr(w, "stride", int(v)))
    each("lhs_dilate", lambda w, v: setattr(w, "base_dil", int(v)))
    each("rhs_dilate", lambda w, v: setattr(w, "win_dil", int(v)))

    def pad(w: _WinDim, v: str) -> None:
        lo, hi = v.split("_")
        w.pad_lo, w.pad_hi = int(lo), int(hi)

    each("pad", pad)
    return dims


# --------------------------------------------------------------------------------- the analysis

_TRANSCENDENTAL = frozenset({
    "exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt", "tanh", "sine", "cosine",
    "exponential-minus-one", "log-plus-one", "atan2", "tan", "erf",
})
_ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "count-leading-zeros", "compare", "complex", "convert",
    "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
    "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
    "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor",
    "stochastic-convert", "bitcast-convert",
})
# Opcodes XLA accounts as "no computation, no memory traffic".
_FREE = frozenset({"domain", "after-all", "add-dependency"})
# Opcodes whose handler keeps Preprocess's figures (output + operands) and adds nothing.
_DEFAULT = frozenset({
    "iota", "reverse", "concatenate", "copy", "pad", "reshape", "dynamic-reshape", "broadcast",
    "all-gather", "all-gather-start", "all-gather-done", "all-reduce-done", "reduce-scatter",
    "all-to-all", "ragged-all-to-all", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "partition-id", "replica-id",
    "async-update", "async-done", "copy-start", "copy-done", "send", "send-done", "recv",
    "recv-done", "rng-get-and-update-state", "optimization-barrier", "get-dimension-size",
    "set-dimension-size", "batch-norm-training", "batch-norm-inference", "batch-norm-grad",
})
_NOTES = {
    "while": "XLA counts the body and condition once, not per iteration",
    "custom-call": "custom call: XLA counts it as unknown (flops, bytes -1)",
    "conditional": "XLA takes the most expensive branch, per property",
}


class _Analysis:
    """One HLO module: XLA's visitor, with per-instruction properties kept (``props``)."""

    def __init__(self, comps: dict[str, _Comp], tuple_leaves: bool = True) -> None:
        self.comps = comps
        self.tuple_leaves = tuple_leaves
        self.props: dict[int, dict[str, float]] = {}  # row -> properties (first visit wins)
        self.memo: dict[str, dict[str, float]] = {}
        self.active: set[str] = set()  # computations being visited (a malformed cycle stops here)
        self.problems: dict[int, str] = {}  # row -> why its figures are XLA's defaults

    # ---- the visiting order of HloComputation::Accept
    @staticmethod
    def order(comp: _Comp) -> list[_Ins]:
        out: list[_Ins] = []
        seen: set[int] = set()
        starts = [i for i in comp.instrs if not i.users and i is not comp.root]
        if comp.root is not None:
            starts.append(comp.root)
        for start in starts:
            if id(start) in seen:
                continue
            stack: list[tuple[_Ins, bool]] = [(start, False)]
            while stack:
                node, expanded = stack.pop()
                if id(node) in seen:
                    continue
                if expanded:
                    seen.add(id(node))
                    out.append(node)
                    continue
                stack.append((node, True))
                for op in reversed(node.operands):
                    if id(op) not in seen:
                        stack.append((op, False))
        return out

    def computation(self, name: str) -> dict[str, float]:
        """``ProcessSubcomputation``: the float32 sum of a computation's instructions."""
        hit = self.memo.get(name)
        if hit is not None:
            return dict(hit)
        comp = self.comps.get(name)
        total: dict[str, float] = {}
        if comp is None or name in self.active:
            return total
        self.active.add(name)
        for ins in self.order(comp):
            p = self.instruction(ins)
            for k, v in p.items():
                total[k] = _add(total.get(k, 0.0), v)
        self.active.discard(name)
        self.memo[name] = total
        return dict(total)

    def instruction(self, ins: _Ins) -> dict[str, float]:
        p = self._preprocess(ins, self.tuple_leaves)
        handler = _HANDLERS.get(ins.opcode)
        if handler is None:
            if ins.opcode in _ELEMENTWISE:
                handler = _elementwise
            elif ins.opcode in _FREE:
                handler = _free
            else:
                handler = _keep
        try:
            compute_time = handler(self, ins, p)
        except (IndexError, ValueError, KeyError, AttributeError, TypeError, ZeroDivisionError) as e:
            # malformed or unexpected text (an operand we cannot see, odd attributes): keep
            # XLA's default figures for this instruction and say so
            self.problems[ins.row] = f"could not apply XLA's rule for {ins.opcode}: {type(e).__name__}: {e}"
            compute_time = None
        if compute_time is not False:
            p[SECONDS] = 0.0  # no per-second rates: every property / infinity
        if ins.row not in self.props:
            self.props[ins.row] = p
        return p

    @staticmethod
    def _preprocess(ins: _Ins, tuple_leaves: bool) -> dict[str, float]:
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

    def fusion_parameter_read_bytes(self, hlo: _Ins) -> int:
        """``FusionParameterReadBytes``: what a fused parameter costs to read, from its users.

        A slice reads its output's bytes, a dynamic-slice too (of its operand 0), a
        dynamic-update-slice never reads its operand 0 (aliased to the output), broadcast and
        reshape read the whole parameter each time; any other users share one read. A nested
        fusion whose parameter feeds its root directly ("simple") is charged by the slices of the
        nested fusion's users; otherwise by the nested parameter's own read bytes, once."""
        state = {"trivial": False}
        size = 0
        for user in hlo.users:
            op = user.opcode
            if op == "fusion":
                sub = self.comps.get(user.called[0]) if user.called else None
                params = _parameters(sub) if sub else {}
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
                            size += self.fusion_parameter_read_bytes(params[idx])
            elif op in ("slice", "dynamic-slice", "dynamic-update-slice"):
                size += _sliced_read(hlo, user, state)
            elif op in ("broadcast", "reshape"):
                size += hlo.shape.bytes
            elif not state["trivial"]:
                state["trivial"] = True
                size += hlo.shape.bytes
        return size


def _sliced_read(hlo: _Ins, user: _Ins, state: dict[str, bool]) -> int:
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


def _parameters(comp: _Comp) -> dict[int, _Ins]:
    """A computation's parameters by number (``parameter(N)``: N is the operand text)."""
    out = {}
    for ins in comp.instrs:
        if ins.opcode == "parameter" and ins.param_number is not None:
            out[ins.param_number] = ins
    return out


# ---- handlers: (analysis, instruction, properties) -> False when XLA skips the bottleneck time

def _keep(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    return None


def _elementwise(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    n = f32(ins.shape.elements)
    p[TRANS if ins.opcode in _TRANSCENDENTAL else FLOPS] = n


def _zero_io(p: dict[str, float], ins: _Ins, operands: bool = True) -> None:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    if operands:
        for i in range(len(ins.operands)):
            p[operand_bytes_key(i)] = 0.0


def _free(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    _zero_io(p, ins)
    p[SECONDS] = 0.0
    return False


def _parameter(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    _zero_io(p, ins, operands=False)
    p[SECONDS] = 0.0
    return False


def _gte(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    p[operand_bytes_key(0)] = 0.0
    p[SECONDS] = 0.0
    return False


def _bitcast(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    p[operand_bytes_key(0)] = 0.0
    p[SECONDS] = 0.0


def _tuple(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[BYTES] = f32(ins.shape.bytes)
    p[OUT] = f32(ins.shape.bytes)
    for i in range(len(ins.operands)):
        p[operand_bytes_key(i)] = 0.0


def _ratio(num: int, den: int) -> float:
    return f32(num / den) if den else (math.inf if num else math.nan)


def _slice(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    p[BYTES] = f32(out * 2)
    p[OUT] = f32(out)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)


def _dynamic_slice(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    idx = ins.operands[1].shape.bytes if len(ins.operands) > 1 else 0
    p[BYTES] = f32(out * 2 + idx)
    p[OUT] = f32(out)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_bytes_key(1)] = f32(idx)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)


def _dynamic_update_slice(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    upd = ins.operands[1].shape.bytes
    idx = ins.operands[2].shape.bytes if len(ins.operands) > 2 else 0
    p[BYTES] = f32(upd * 2 + idx)
    p[OUT] = f32(upd)
    p[operand_bytes_key(0)] = 0.0
    p[operand_bytes_key(1)] = f32(upd)
    p[operand_bytes_key(2)] = f32(idx)
    out_n = ins.shape.elements
    p[operand_util_key(0)] = _ratio(out_n - ins.operands[1].shape.elements, out_n)


def _transpose(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
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


def _dot(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[FLOPS] = f32(dot_flops(ins.operands[0].shape, ins.shape, _ints(_attr(ins, "lhs_contracting_dims"))))


def conv_flops(ins: _Ins) -> int:
    """``GetConvolutionFlops``: valid (output, kernel) positions per spatial dimension × features
    × batch, over feature/batch group counts, × 2."""
    lhs, rhs, out = ins.operands[0].shape, ins.operands[1].shape, ins.shape
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


def _conv(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[FLOPS] = f32(conv_flops(ins))


def _fft(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
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


def _reduce(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    sub = a.computation(_called(ins, "to_apply"))
    count = ins.operands[0].shape.elements - _first_array(ins.shape).elements
    _scaled(p, sub, count)


def _reduce_window(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
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


def _select_and_scatter(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    sel = a.computation(_called(ins, "select"))
    sca = a.computation(_called(ins, "scatter"))
    n = ins.operands[1].shape.elements
    wcount = 1
    for w in _window(ins):
        wcount *= w.size
    _scaled(p, sel, n * (wcount - 1), add=True)
    _scaled(p, sca, n, add=True)


def _map(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    _scaled(p, a.computation(_called(ins, "to_apply")), ins.shape.elements)


def _gather(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    idx = ins.operands[1].shape.bytes
    p[BYTES] = f32(out * 2 + idx)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_bytes_key(1)] = f32(idx)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)
    p[OUT] = f32(out)


def _scatter(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    n = (len(ins.operands) - 1) // 2
    total = 0
    for i in range(n):
        upd = ins.operands[n + 1 + i].shape.bytes
        p[operand_bytes_key(i)] = f32(upd)
        p[operand_bytes_key(n + 1 + i)] = f32(upd)
        total += upd
    idx = ins.operands[n].shape.bytes
    p[operand_bytes_key(n)] = f32(idx)
    p[BYTES] = f32(total * 3 + idx)
    p[OUT] = f32(total)
    _scaled(p, a.computation(_called(ins, "to_apply")), ins.operands[n + 1].shape.elements)


def _sort(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    n = ins.operands[0].shape.elements
    log2ceil = (n - 1).bit_length() if n > 0 else 0
    p[FLOPS] = f32(n * log2ceil)


def _while(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    body = a.computation(_called(ins, "body"))
    cond = a.computation(_called(ins, "condition"))
    p.clear()
    for src in (body, cond):
        for k, v in src.items():
            p[k] = _add(p.get(k, 0.0), v)
    return False


def _conditional(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    branches = _branches(ins)
    p.clear()
    for j, b in enumerate(branches):
        props = a.computation(b)
        for k, v in props.items():
            p[k] = v if (j == 0 or k not in p) else max(p[k], v)
    return False


def _call(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    sub = a.computation(_called(ins, "to_apply"))
    p.clear()
    p.update(sub)
    return False


def _async_start(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    sub = a.computation(ins.called[0]) if ins.called else {}
    p.clear()
    p.update(sub)


def _custom_call(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[SECONDS] = -1.0
    p[BYTES] = -1.0
    p[OUT] = -1.0
    for i in range(len(ins.operands)):
        p[operand_bytes_key(i)] = -1.0
    p[FLOPS] = -1.0
    return False


def _all_reduce(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
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


def _rng(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[TRANS] = f32(ins.shape.elements)


def _rng_bit_generator(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    p[TRANS] = f32(ins.shape.elements_recursive)


def _triangular_solve(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    a_s, b_s = ins.operands[0].shape, ins.operands[1].shape
    b = f32(out)
    p[OUT] = f32(out)
    b = _add(b, f32(a_s.bytes / 2.0))
    b = _add(b, b_s.bytes)
    p[operand_bytes_key(0)] = f32(b_s.bytes)  # XLA sets operand 0 twice (the second wins)
    p[BYTES] = b
    p[FLOPS] = f32(2 * (a_s.dims[-1] if a_s.dims else 1) * b_s.elements)


def _cholesky(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    a_s = ins.operands[0].shape
    half = f32(a_s.bytes / 2.0)
    p[OUT] = half
    p[operand_bytes_key(0)] = half
    p[BYTES] = _add(half, half)
    p[FLOPS] = f32(((a_s.dims[-1] if a_s.dims else 1) * a_s.elements) // 3)


def _infeed(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    size = 0
    for ix, s in ins.shape.leaves():
        size += s.bytes
        p[output_bytes_key(ix)] = f32(s.bytes)
    p[OUT] = f32(size)
    p[BYTES] = f32(size)


def _outfeed(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    total = 0.0
    for i, op in enumerate(ins.operands):
        size = 0
        for ix, s in op.shape.leaves():
            size += s.bytes
            p[operand_bytes_key(i, ix)] = f32(s.bytes)
        p[operand_bytes_key(i)] = f32(size)
        total = _add(total, size)
    p[BYTES] = total


def _fusion(a: _Analysis, ins: _Ins, p: dict[str, float]) -> Any:
    comp = a.comps.get(ins.called[0]) if ins.called else None
    if comp is None or comp.root is None:
        return None
    root = comp.root
    if ins.fusion_kind == "kCustom":  # IsCustomFusion: a gather/scatter inside decides
        for h in comp.instrs:
            if h.opcode == "gather":
                return _gather(a, h, p)
            if h.opcode == "scatter":
                return _scatter(a, h, p)
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
    for h in comp.instrs:  # large constants are read from memory
        if h.opcode == "constant" and h.shape.elements > 1:
            p[BYTES] = _add(p[BYTES], h.shape.bytes)
    params = _parameters(comp)
    for i in range(len(params)):
        param = params.get(i)
        if param is None:
            continue
        if not param.shape.is_tuple:
            size = a.fusion_parameter_read_bytes(param)
        else:
            size = 0
            for ix, _leaf in param.shape.leaves():
                g = param
                for index in ix:
                    for u in g.users:
                        if u.opcode == "get-tuple-element" and _tuple_index(u) == index:
                            g = u
                            break
                s = a.fusion_parameter_read_bytes(g)
                size += s
                p[operand_bytes_key(i, ix)] = f32(s)
        p[BYTES] = _add(p[BYTES], size)
        p[operand_bytes_key(i)] = f32(size)
        p[operand_util_key(i)] = 1.0  # FusionCalculateUtilizations: 1 for every fused instruction
    return None


def _tuple_index(ins: _Ins) -> int:
    v = _attr(ins, "index")
    return int(v) if v and v.lstrip("-").isdigit() else -1


def _called(ins: _Ins, attr: str) -> str:
    v = _attr(ins, attr)
    if v:
        return v.strip().lstrip("%")
    return ins.called[0] if ins.called else ""


def _branches(ins: _Ins) -> list[str]:
    v = _attr(ins, "branch_computations")
    if v:
        return [x.strip().lstrip("%") for x in v.split(",") if x.strip()]
    t, f = _attr(ins, "true_computation"), _attr(ins, "false_computation")
    if t and f:
        return [t.strip().lstrip("%"), f.strip().lstrip("%")]
    return list(ins.called)


_HANDLERS: dict[str, Callable[[_Analysis, _Ins, dict[str, float]], Any]] = {
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


# --------------------------------------------------------------------------------- loading

_COLUMNS = ["file_id", "computation_id", "name", "opcode", "shape", "operands", "operand_text",
            "called_computations", "attributes", "fusion_kind", "custom_call_target", "op_name",
            "source_file", "source_line", "is_root", "stack_frame_id"]


@dataclass
class _Loaded:
    """The instructions of the selected modules' HLO files as Python lists (one pass over the
    ``instructions`` table for all modules), and the modules' graphs."""

    cols: dict[str, list[Any]]
    graphs: dict[int, dict[str, _Comp]]  # file_id -> computation name -> computation
    entry: dict[int, str]  # file_id -> entry computation name
    module_of: dict[int, Any]  # file_id -> module
    tuple_leaves: dict[int, bool] = field(default_factory=dict)  # file_id -> XLA's convention
    problems: dict[int, str] = field(default_factory=dict)  # row -> why XLA's rule did not apply


def _hlo_files(d: "Dump", mods: list[Any]) -> dict[Any, int]:
    """Each module's HLO text to analyse: its after-optimizations text (the last printed, if
    several), else an HLO module file named alone (no stage in its name: a copied file)."""
    from . import _views

    ft = _views(d)["files"]
    cols = ft.select(["file_id", "kind", "stage"]).to_pydict()
    plain = {f for f, k, st in zip(cols["file_id"], cols["kind"], cols["stage"]) if k == "hlo_module" and st is None}
    out = {}
    for m in mods:
        ids = list(m.hlo_file_ids) or [f for f in m.file_ids if f in plain]
        if ids:
            out[m.key] = max(ids)
    return out


def _load(d: "Dump", mods: list[Any]) -> _Loaded:
    from . import _views

    v = _views(d)
    chosen = _hlo_files(d, mods)
    module_of = {chosen[m.key]: m for m in mods if m.key in chosen}
    empty = _Loaded({c: [] for c in _COLUMNS + ["trip_count"]}, {}, {}, module_of)
    if not module_of or "instructions" not in v or "computations" not in v:
        return empty
    import duckdb

    con = duckdb.connect()
    con.register("instructions", v["instructions"])
    con.register("computations", v["computations"])
    con.register("wanted", pa.table({"file_id": pa.array(sorted(module_of), pa.int32())}))
    have = set(v["instructions"].column_names)
    sel = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in _COLUMNS)
    # a while loop's backend_config holds its known trip count; other configs (custom-call
    # bodies: megabytes) are not needed
    trip = ("TRY_CAST(regexp_extract(backend_config, '\"known_trip_count\":\\{\"n\":\"(\\d+)\"', 1) AS BIGINT)"
            if "backend_config" in have else "NULL")
    it = con.sql(f"SELECT {sel}, CASE WHEN opcode = 'while' THEN {trip} END AS trip_count "
                 "FROM instructions SEMI JOIN wanted USING (file_id) "
                 "ORDER BY file_id, computation_id, instruction_id").to_arrow_table()
    cols = {c: it.column(c).to_pylist() for c in _COLUMNS + ["trip_count"]}
    comp_rows = con.sql("SELECT file_id, computation_id, name, is_entry FROM computations "
                        "SEMI JOIN wanted USING (file_id)").to_arrow_table().to_pylist()
    con.close()
    graphs: dict[int, dict[str, _Comp]] = {}
    by_id: dict[tuple[int, int], _Comp] = {}
    entry: dict[int, str] = {}
    for r in comp_rows:
        c = _Comp(r["name"], bool(r["is_entry"]))
        graphs.setdefault(r["file_id"], {})[c.name] = c
        by_id[(r["file_id"], r["computation_id"])] = c
        if c.is_entry:
            entry[r["file_id"]] = c.name
    for row in range(len(cols["name"])):
        comp = by_id.get((cols["file_id"][row], cols["computation_id"][row]))
        if comp is None:
            continue
        opcode = cols["opcode"][row] or ""
        pnum = None
        if opcode == "parameter":
            t = (cols["operand_text"][row] or "").strip()
            pnum = int(t) if t.isdigit() else None
        ins = _Ins(row, cols["name"][row], opcode, parse_shape(cols["shape"][row]), cols["operands"][row] or [],
                   cols["called_computations"][row] or [], cols["attributes"][row] or "",
                   cols["fusion_kind"][row], cols["custom_call_target"][row], comp, pnum)
        comp.instrs.append(ins)
        comp.by_name[ins.name] = ins
        if cols["is_root"][row]:
            comp.root = ins
    for comps in graphs.values():
        for comp in comps.values():
            if comp.root is None and comp.instrs:
                comp.root = comp.instrs[-1]
            for ins in comp.instrs:
                for name in ins.operand_names:
                    op = comp.by_name.get(name)
                    if op is None:  # an operand we cannot see: a zero-sized stand-in
                        op = _Ins(-1, name, "", parse_shape(None), [], [], "", None, None, comp)
                    ins.operands.append(op)
                    if op.row >= 0 and (not op.users or op.users[-1] is not ins) and ins not in op.users:
                        op.users.append(ins)
    return _Loaded(cols, graphs, entry, module_of, _conventions(cols))


def _conventions(cols: dict[str, list[Any]]) -> dict[int, bool]:
    """Per HLO file, whether XLA counted a tuple result by its leaves (jax >= 0.8). The printer
    of those releases writes stack-frame tables (``stack_frame_id=`` in metadata) where older
    ones wrote ``source_file=``; a module with neither gets the newest convention."""
    new: dict[int, bool] = {}
    for fid, frame, src in zip(cols["file_id"], cols["stack_frame_id"], cols["source_file"]):
        if frame is not None:
            new[fid] = True
        elif src is not None and fid not in new:
            new[fid] = False
    return new


TupleResults = Optional[str]  # "leaves", "index_table" or None (told by the printer)


def _run(loaded: _Loaded, tuple_results: TupleResults = None) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """(per row properties, per file module totals) of every loaded module."""
    if tuple_results not in (None, "leaves", "index_table"):
        raise ValueError(f"tuple_results must be 'leaves', 'index_table' or None, not {tuple_results!r}")
    per_row: dict[int, dict[str, float]] = {}
    totals: dict[int, dict[str, float]] = {}
    for fid, comps in loaded.graphs.items():
        leaves = loaded.tuple_leaves.get(fid, True) if tuple_results is None else tuple_results == "leaves"
        a = _Analysis(comps, leaves)
        name = loaded.entry.get(fid)
        totals[fid] = a.computation(name) if name else {}
        per_row.update(a.props)
        loaded.problems.update(a.problems)
    return per_row, totals


def _safe_select(d: "Dump", module: ModuleSel) -> list[Any]:
    from . import _module_list, _select

    return _select(_module_list(d), module)


def _jax_dict(props: dict[str, float]) -> dict[str, float]:
    """The properties as jax's ``Compiled.cost_analysis()`` shows them: XLA's
    ``Properties::ForEach`` passes only non-zero values, and no per-instruction ``utilization``."""
    out = {}
    for k in (FLOPS, TRANS, BYTES, SECONDS):
        if props.get(k):
            out[k] = props[k]
    for k in sorted(props, key=_key_order):
        if k in out or k in (FLOPS, TRANS, BYTES, SECONDS, UTIL) or not props[k]:
            continue
        out[k] = props[k]
    return out


def _key_order(k: str) -> tuple[int, str]:
    return (0 if k.startswith(UTIL) else 1 if not k.startswith(BYTES + "out") else 2, k)


def cost_analysis(d: "Dump", module: ModuleSel = None, tuple_results: TupleResults = None) -> list[dict[str, Any]]:
    """Per module of ``d`` with after-optimizations HLO text: ``{"module", "module_name",
    "cost_analysis"}``, the last a dict with the keys and values of jax's
    ``Compiled.cost_analysis()`` for that compile (``flops``, ``transcendentals``,
    ``bytes accessed``, ``bytes accessed{i}{}``, ``bytes accessedout{}``, ``utilization{i}{}``,
    ``optimal_seconds`` when a custom call makes it −1; zero values left out as XLA does).
    Modules without HLO text are listed with ``cost_analysis`` None; a TPU module also gets a
    ``note`` (TPU compilers run their own analysis).

    ``tuple_results``: how XLA counted the output bytes of a tuple-shaped instruction — its array
    leaves (``"leaves"``, jax >= 0.8) or its index table (``"index_table"``, older); None tells
    the release from the module's printer (stack-frame tables came with the same releases)."""
    mods = _safe_select(d, module)
    loaded = _load(d, mods)
    _, totals = _run(loaded, tuple_results)
    out = []
    fid_of = {m.key: f for f, m in loaded.module_of.items()}
    for m in mods:
        fid = fid_of.get(m.key)
        props = totals.get(fid) if fid is not None else None
        row = {"module": m.key, "module_name": m.name,
               "cost_analysis": _jax_dict(props) if props is not None else None}
        if any("tpu" in b for b in getattr(m, "backends", ())):
            row["note"] = ("TPU compilers run their own cost analysis (tiled sizes): these are the CPU/GPU "
                           "rules applied to this text, not what jax reports on TPU")
        out.append(row)
    return out


def format_cost(ca: Optional[dict[str, float]]) -> str:
    """One line for a module's ``cost_analysis`` (the ``summary`` text):
    ``flops 8.31k, transcendentals 128, bytes accessed 4.13k`` (−1 of a custom call as
    "unknown" parts)."""
    if ca is None:
        return "no after-optimizations HLO text"

    def num(v: float) -> str:
        for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(v) >= scale:
                return f"{v / scale:.2f}{unit}"
        return f"{v:g}"

    parts = [f"{k} {num(ca.get(k, 0.0))}" for k in (FLOPS, TRANS, BYTES)]
    if ca.get(SECONDS, 0.0) < 0:
        parts.append(f"{int(-ca[SECONDS])} custom call(s) XLA counts as -1 (unknown) in each figure")
    return ", ".join(parts)


COST_COLUMNS = ("module", "module_name", "computation", "instruction", "opcode", "in_total", "flops",
                "transcendentals", "bytes_accessed", "operand_bytes", "output_bytes", "note", "trip_count", "op_name",
                "source_file", "source_line", "shape", "dtype", "is_matrix", "fusion_kind", "custom_call_target",
                "file_id")


def costs(d: "Dump", module: ModuleSel = None, tuple_results: TupleResults = None) -> pa.Table:
    """One row per instruction of every after-optimizations HLO module: XLA's ``HloCostAnalysis``
    properties of that instruction (``flops``, ``transcendentals``, ``bytes_accessed``, the bytes
    of each operand ``operand_bytes`` and of the output ``output_bytes``), where it is
    (``module``, ``computation``, ``instruction``, ``op_name``, ``source_file``/``source_line``)
    and ``in_total``: whether the row is one of the entry computation's, whose figures add up to
    the module's ``cost_analysis`` (a ``while``, ``call``, ``conditional`` or ``fusion`` row holds
    its computations' cost; their instructions have rows of their own with ``in_total`` false).
    ``note`` says where XLA's convention surprises (while counted once, custom calls unknown).
    Instructions XLA never visits (computations no instruction calls) have null figures."""
    mods = _safe_select(d, module)
    loaded = _load(d, mods)
    per_row, _ = _run(loaded, tuple_results)
    return _cost_table(loaded, per_row)


def _cost_table(loaded: _Loaded, per_row: dict[int, dict[str, float]]) -> pa.Table:
    cols = loaded.cols
    n = len(cols["name"])
    comp_name: list[Optional[str]] = [None] * n
    in_total = [False] * n
    for fid, comps in loaded.graphs.items():
        entry = loaded.entry.get(fid)
        for c in comps.values():
            for ins in c.instrs:
                comp_name[ins.row] = c.name
                in_total[ins.row] = c.name == entry
    mod_key = [loaded.module_of[f].key if f in loaded.module_of else None for f in cols["file_id"]]
    mod_name = [loaded.module_of[f].name if f in loaded.module_of else None for f in cols["file_id"]]
    dtype: list[Optional[str]] = [None] * n
    matrix = [False] * n
    for comps in loaded.graphs.values():
        for c in comps.values():
            for ins in c.instrs:
                dtype[ins.row], matrix[ins.row] = _compute_type(ins, comps)
    flops: list[Optional[float]] = []
    trans: list[Optional[float]] = []
    byts: list[Optional[float]] = []
    outb: list[Optional[float]] = []
    opb: list[Optional[list[float]]] = []
    notes: list[Optional[str]] = []
    for row in range(n):
        p = per_row.get(row)
        if p is None:
            flops.append(None); trans.append(None); byts.append(None); outb.append(None); opb.append(None)
        else:
            flops.append(p.get(FLOPS, 0.0)); trans.append(p.get(TRANS, 0.0)); byts.append(p.get(BYTES, 0.0))
            outb.append(p.get(OUT, 0.0))
            opb.append([p.get(operand_bytes_key(i), 0.0) for i in range(len(cols["operands"][row] or []))])
        note = loaded.problems.get(row) or _NOTES.get(cols["opcode"][row] or "")
        if cols["trip_count"][row] is not None and note == _NOTES["while"]:
            note += f" (its known trip count is {cols['trip_count'][row]})"
        notes.append(note)
    return pa.table({
        "module": pa.array(mod_key, pa.string()),
        "module_name": pa.array(mod_name, pa.string()),
        "computation": pa.array(comp_name, pa.string()),
        "instruction": pa.array(cols["name"], pa.string()),
        "opcode": pa.array(cols["opcode"], pa.string()),
        "in_total": pa.array(in_total, pa.bool_()),
        "flops": pa.array(flops, pa.float64()),
        "transcendentals": pa.array(trans, pa.float64()),
        "bytes_accessed": pa.array(byts, pa.float64()),
        "operand_bytes": pa.array(opb, pa.list_(pa.float64())),
        "output_bytes": pa.array(outb, pa.float64()),
        "note": pa.array(notes, pa.string()),
        "trip_count": pa.array(cols["trip_count"], pa.int64()),
        "op_name": pa.array(cols["op_name"], pa.string()),
        "source_file": pa.array(cols["source_file"], pa.string()),
        "source_line": pa.array(cols["source_line"], pa.int64()),
        "shape": pa.array(cols["shape"], pa.string()),
        "dtype": pa.array(dtype, pa.string()),
        "is_matrix": pa.array(matrix, pa.bool_()),
        "fusion_kind": pa.array(cols["fusion_kind"], pa.string()),
        "custom_call_target": pa.array(cols["custom_call_target"], pa.string()),
        "file_id": pa.array(cols["file_id"], pa.int32()),
    })


_MATRIX = frozenset({"dot", "convolution"})


def _compute_type(ins: _Ins, comps: dict[str, _Comp], depth: int = 0) -> tuple[Optional[str], bool]:
    """(data type, runs on the matrix unit) of an instruction for the roofline: a dot or
    convolution (also inside a fusion or an async/call wrapper) by its lhs operand's type, any
    other instruction by its first array result's type."""
    if ins.opcode in _MATRIX and ins.operands:
        return ins.operands[0].shape.arrays[0].etype if ins.operands[0].shape.arrays else None, True
    if ins.opcode in ("fusion", "call", "async-start") and ins.called and depth < 4:
        sub = comps.get(ins.called[0])
        if sub is not None:
            for h in sub.instrs:
                if h.opcode in _MATRIX or h.opcode == "fusion":
                    dt, mx = _compute_type(h, comps, depth + 1)
                    if mx:
                        return dt, True
    arrays = ins.shape.arrays
    return (arrays[0].etype if arrays else None), False
