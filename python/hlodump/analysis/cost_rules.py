"""XLA's ``HloCostAnalysis`` rules (``xla/service/hlo_cost_analysis.cc``) over the HLO frame
(``hlo_frame``): FLOPs, transcendentals, bytes accessed per operand and output, optimal seconds
of every instruction of every selected module at once. Each formula is in docs/FORMATS.md
"Cost analysis".

How it runs (``run``)
---------------------
* Per-instruction properties of the opcodes whose rule is a formula of shapes (``Preprocess``'s
  output + operand bytes, elementwise, slices, gathers, tuples, collectives, custom calls …) are
  numpy columns over all nodes (``_vector_props``).
* Only the rules that need a called computation's sum or a walk of a fused computation (fusion,
  while, call, conditional, async-start, reduce, map, scatter …) and a few that read attributes
  (dot, convolution, fft, transpose, triangular-solve, cholesky, infeed, outfeed) run as the
  Python handlers below (``_HANDLERS``), one call per such instruction, on ``Node`` views.
* The roll-up goes level by level over the call graph of all modules at once: level 0 are the
  computations that call none, each level's handlers find their callees' sums ready.
* A computation's sum is XLA's float32 sum in its visiting order. Where every partial sum is
  exact in float32 (all values multiples of a power of two 2^g and the sum of magnitudes at most
  2^(24+g)), order does not matter and the sum is one vectorised reduction; only other
  (computation, property) pairs are summed in XLA's visiting order (``Frame.visit_order``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Optional

import numpy as np

from .hlo_frame import CompView, Frame, Node, attr
from .hlo_shapes import Shape

FLOPS = "flops"
TRANS = "transcendentals"
BYTES = "bytes accessed"
SECONDS = "optimal_seconds"
UTIL = "utilization"

#: Counts ``run`` calls, roll-up levels and computations summed in visiting order (the float32
#: fallback): a test checks that they do not grow with the number of modules.
RUNS = [0]
LEVELS = [0]
#: False: every instruction through the Python handlers (the first analysis' rules, one call
#: each) — the reference the columns are tested against (tests/test_cost_engine.py)
COLUMNS = True
ORDERED = [0]


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
_NOTES = {
    "while": "XLA counts the body and condition once, not per iteration",
    "custom-call": "custom call: XLA counts it as unknown (flops, bytes -1)",
    "conditional": "XLA takes the most expensive branch, per property",
}
# rules that run per instruction in Python (they need a called computation's sum, a walk of a
# fused computation, or attributes); every other opcode is a column expression (_vector_props)
_PY_OPS = frozenset({
    "transpose", "dot", "convolution", "fft", "reduce", "reduce-window", "select-and-scatter", "map", "scatter",
    "while", "conditional", "call", "async-start", "triangular-solve", "cholesky", "infeed", "outfeed", "fusion",
})
# vectorised rules and the operands each reads (fewer: the Python handler raises, as XLA's would fail)
_MIN_OPERANDS = {"slice": 1, "dynamic-slice": 1, "dynamic-update-slice": 2, "gather": 2, "sort": 1}


# --------------------------------------------------------------------------------- the result

@dataclass
class CostResult:
    """Every selected module's properties: ``totals`` (file -> entry computation's properties),
    per published node the fixed figures and operand bytes, ``problems`` (row -> why XLA's rule did
    not apply), ``overflowed`` (file -> instructions left out)."""

    totals: dict[int, dict[str, float]]
    published: np.ndarray  # bool per node: XLA's visit reaches its computation and it has figures
    flops: np.ndarray
    trans: np.ndarray
    bytes: np.ndarray
    out: np.ndarray
    opb: np.ndarray  # per operand slot (op_ptr): bytes of that operand
    problems: dict[int, str] = field(default_factory=dict)
    overflowed: dict[int, int] = field(default_factory=dict)
    in_reached: Optional[np.ndarray] = None  # bool per node: its computation is reached


class _Keys:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        for k in (FLOPS, TRANS, BYTES, SECONDS, OUT):
            self.id(k)

    def id(self, k: str) -> int:
        i = self.ids.get(k)
        if i is None:
            i = self.ids[k] = len(self.names)
            self.names.append(k)
        return i


K_FLOPS, K_TRANS, K_BYTES, K_SECONDS, K_OUT = range(5)


class _Ctx:
    """What the Python handlers see of the analysis: a file's computations by name, the sums
    of the computations already summed, and which computations they asked for."""

    def __init__(self, run: "_Run", fid: int) -> None:
        self.run = run
        self.fid = fid
        self.tuple_leaves = run.leaves_of(fid)
        self.tuple_pointer_bytes = 4 if fid in run.fr.xla_2026 else 8
        self.current = -1

    @property
    def comps(self) -> "_CompsByName":
        return _CompsByName(self.run.fr, self.fid)

    def computation(self, name: str) -> dict[str, float]:
        c = self.run.fr.comp_index.get((self.fid, name))
        if c is None:
            return {}
        self.run.asked.append((self.current, c))
        s = self.run.sums.get(c)
        return dict(s) if s is not None else {}

    fusion_parameter_read_bytes = None  # set below (the first analysis' method, on Node views)


class _CompsByName:
    def __init__(self, fr: Frame, fid: int) -> None:
        self.fr, self.fid = fr, fid

    def get(self, name: str) -> Optional[CompView]:
        return self.fr.comp_by_name(self.fid, name)


def _granularity(v: np.ndarray) -> np.ndarray:
    """log2 of the largest power of two dividing each float32 value (a large number for 0)."""
    b = v.astype(np.float32).view(np.int32).astype(np.int64)
    e = (b >> 23) & 0xFF
    mant = b & 0x7FFFFF
    mant = np.where(e > 0, mant | 0x800000, mant)
    exp = np.where(e > 0, e - 150, -149)
    low = mant & -mant
    tz = np.zeros(len(v), np.int64)
    nz = low > 0
    tz[nz] = np.log2(low[nz]).astype(np.int64)
    return np.where(nz, exp + tz, 1 << 20)


class _Sums:
    """The computations' sums as arrays (per computation a range of (key, value), keys sorted),
    with a dict of one computation made when a Python rule asks for it."""

    def __init__(self, nc: int, keys: _Keys) -> None:
        self.keys = keys
        self.start = np.zeros(nc, np.int64)
        self.end = np.zeros(nc, np.int64)
        self.done = np.zeros(nc, bool)
        self._k: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self.size = 0
        self._cat: Optional[tuple[np.ndarray, np.ndarray]] = None
        self._dicts: dict[int, dict[str, float]] = {}

    def add(self, comps: np.ndarray, seg_comp: np.ndarray, seg_key: np.ndarray, seg_val: np.ndarray) -> None:
        self.done[comps] = True
        if len(seg_comp):
            u, first, cnt = np.unique(seg_comp, return_index=True, return_counts=True)
            self.start[u] = self.size + first
            self.end[u] = self.size + first + cnt
            self._k.append(seg_key)
            self._v.append(seg_val)
            self.size += len(seg_comp)
            self._cat = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cat is None:
            self._cat = ((np.concatenate(self._k), np.concatenate(self._v)) if self._k
                         else (np.zeros(0, np.int64), np.zeros(0)))
        return self._cat

    def get(self, c: int, default: Any = None) -> Optional[dict[str, float]]:
        if c is None or not self.done[c]:
            return default
        d = self._dicts.get(c)
        if d is None:
            k, v = self.arrays()
            a, b = int(self.start[c]), int(self.end[c])
            names = self.keys.names
            d = self._dicts[c] = {names[x]: y for x, y in zip(k[a:b].tolist(), v[a:b].tolist())}
        return d


class _Run:
    def __init__(self, fr: Frame, tuple_results: Optional[str]) -> None:
        self.fr = fr
        self.tuple_results = tuple_results
        self.keys = _Keys()
        self.sums = _Sums(len(fr.c_name), self.keys)
        self.fus: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # vectorised fusions' entries
        self.asked: list[tuple[int, int]] = []
        self.ctx: dict[int, _Ctx] = {}
        self.py_props: dict[int, Optional[dict[str, float]]] = {}
        self.problems: dict[int, str] = {}  # node -> why
        self.orders: dict[int, dict[int, int]] = {}

    def leaves_of(self, fid: int) -> bool:
        if self.tuple_results is None:
            return self.fr.tuple_leaves.get(fid, True)
        return self.tuple_results == "leaves"

    def ctx_of(self, fid: int) -> _Ctx:
        c = self.ctx.get(fid)
        if c is None:
            c = self.ctx[fid] = _Ctx(self, fid)
        return c

    def position(self, c: int) -> dict[int, int]:
        p = self.orders.get(c)
        if p is None:
            ORDERED[0] += 1
            p = self.orders[c] = {n: k for k, n in enumerate(self.fr.visit_order(c))}
        return p


def run(fr: Frame, tuple_results: Optional[str] = None) -> CostResult:
    """XLA's cost analysis of every module of the frame (see the module docstring)."""
    if tuple_results not in (None, "leaves", "index_table"):
        raise ValueError(f"tuple_results must be 'leaves', 'index_table' or None, not {tuple_results!r}")
    RUNS[0] += 1
    R = _Run(fr, tuple_results)
    t, n = fr.t, fr.n
    nc = len(fr.c_name)
    S = fr.shapes.facts()
    # computations XLA's recursive visit sums: the entries and everything they call
    cl_owner = np.repeat(np.arange(n), np.diff(fr.cl_ptr))
    e_from = fr.comp[cl_owner].astype(np.int64) if len(cl_owner) else np.zeros(0, np.int64)
    e_to = fr.cl_comp
    ok = e_to >= 0
    e_from, e_to = e_from[ok], e_to[ok]
    summed = np.zeros(nc, bool)
    summed[list(fr.entry_of_file.values())] = True
    frontier = summed.copy()
    while frontier.any():
        nxt = np.zeros(nc, bool)
        nxt[e_to[frontier[e_from]]] = True
        nxt &= ~summed
        summed |= nxt
        frontier = nxt
    # levels: a computation after every computation it calls (cycles: capped)
    level = np.zeros(nc, np.int64)
    sel = summed[e_from] & summed[e_to] & (e_from != e_to)
    ef, et = e_from[sel], e_to[sel]
    for _ in range(nc + 1):
        new = level.copy()
        np.maximum.at(new, ef, level[et] + 1)
        if (new == level).all():
            break
        level = new
    # nodes: usable (own and operand shapes computable), Python-handled or vectorised
    sh = fr.shape
    un = S.unusable[sh]
    op_owner = np.repeat(np.arange(t), np.diff(fr.op_ptr))
    bad_op = np.zeros(t, bool)
    if len(fr.op_src):
        np.logical_or.at(bad_op, op_owner, un[fr.op_src])
    unusable = un | bad_op
    in_summed = summed[fr.comp] if t else np.zeros(0, bool)
    opname = np.array(fr.opnames, dtype=object)
    py_code = np.array([o in _PY_OPS for o in fr.opnames], bool)
    nops = np.diff(fr.op_ptr)
    is_py = py_code[fr.op] if t else np.zeros(0, bool)
    for o, k in _MIN_OPERANDS.items():
        if o in fr.opnames:
            is_py |= (fr.op == fr.opnames.index(o)) & (nops < k)
    if not COLUMNS:
        is_py[:] = True
    is_py &= ~unusable
    vec = in_summed & ~unusable & ~is_py
    entries = _vector_props(R, vec, S, opname)
    # unusable nodes: no figure, a problem (noted where the visit is published)
    for i in np.nonzero(in_summed & unusable)[0].tolist():
        node = fr.node(i)
        why = next((w for w in (s.unusable for s in [node.shape] + [o.shape for o in node.operands]) if w), None)
        R.problems[i] = f"{why}: no figure computed, left out of the totals"
    # level by level: the Python rules of the level, then the level's computations summed
    e_node, e_key, e_val = entries
    e_comp = fr.comp[e_node].astype(np.int64)
    e_level = level[e_comp]
    order = np.argsort(e_level, kind="stable")
    e_node, e_key, e_val, e_comp, e_level = e_node[order], e_key[order], e_val[order], e_comp[order], e_level[order]
    py_nodes = np.nonzero(in_summed & is_py)[0]
    py_level = level[fr.comp[py_nodes]] if len(py_nodes) else np.zeros(0, np.int64)
    levels = np.unique(level[summed]) if summed.any() else np.zeros(0, np.int64)
    for L in levels.tolist():
        lo, hi = np.searchsorted(e_level, [L, L + 1])
        nodes = py_nodes[py_level == L]
        fn, fk, fv, nodes = _vector_fusions(R, nodes, S)
        pn, pk, pv = _python_props(R, nodes)
        _sum_level(R, np.concatenate([e_node[lo:hi], fn, pn]), np.concatenate([e_key[lo:hi], fk, pk]),
                   np.concatenate([e_val[lo:hi], fv, pv]), np.nonzero(summed & (level == L))[0])
    # published: computations reached by the handlers' requests from the entries
    reached = np.zeros(nc, bool)
    reached[list(fr.entry_of_file.values())] = True
    if R.asked:
        a = np.array([x for x in R.asked if x[0] >= 0], np.int64).reshape(-1, 2)
        frontier = reached.copy()
        while frontier.any() and len(a):
            nxt = np.zeros(nc, bool)
            nxt[a[frontier[a[:, 0]], 1]] = True
            nxt &= ~reached
            reached |= nxt
            frontier = nxt
    node_reached = reached[fr.comp] if t else np.zeros(0, bool)
    res = _published(R, vec, node_reached, unusable, entries)
    res.overflowed = {}
    cnt = np.bincount(fr.file[in_summed & unusable], minlength=0) if t else np.zeros(0)
    for f in np.nonzero(cnt)[0].tolist():
        res.overflowed[int(f)] = int(cnt[f])
    res.problems = {i: w for i, w in R.problems.items() if i < n and node_reached[i]}
    res.totals = {int(f): dict(R.sums.get(c) or {}) for f, c in fr.entry_of_file.items()}
    for f in fr.files.tolist():
        res.totals.setdefault(int(f), {})
    return res


def _vector_props(R: _Run, vec: np.ndarray, S: Any, opname: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node, key, value) of every vectorised node: ``Preprocess`` then its opcode's rule."""
    fr = R.fr
    t = fr.t
    nodes = np.nonzero(vec)[0]
    sh = fr.shape[nodes]
    opc = fr.op[nodes]  # opcode codes (compared as integers, not strings)
    code_of = {o: i for i, o in enumerate(fr.opnames)}

    def codes(names: Any) -> list[int]:
        return [code_of[x] for x in names if x in code_of]
    leaves = np.array([R.leaves_of(int(f)) for f in fr.files.tolist()], bool)
    # indexed by file id: a chosen file may have no instruction (t == 0) yet be in fr.files
    top = max(int(fr.file.max()) if t else 0, int(fr.files.max()) if len(fr.files) else 0)
    file_leaves = np.ones(top + 1, bool)
    if len(fr.files):
        file_leaves[fr.files] = leaves
    own_bytes = S.bytes[sh]
    size = np.where(S.is_tuple[sh] & file_leaves[fr.file[nodes]], S.leaf_bytes[sh], own_bytes)
    # operand slots of these nodes
    counts = np.diff(fr.op_ptr)[nodes]
    slot = _ranges(fr.op_ptr[nodes], counts)
    s_owner = np.repeat(np.arange(len(nodes)), counts)
    s_k = np.arange(len(slot)) - np.repeat(np.cumsum(counts) - counts, counts)
    s_bytes = S.bytes[fr.shape[fr.op_src[slot]]] if len(slot) else np.zeros(0, np.int64)
    f32a = lambda x: np.asarray(x, np.float64).astype(np.float32).astype(np.float64)  # noqa: E731
    out = f32a(size)
    opb = f32a(s_bytes)
    opu = np.ones(len(slot))
    # BYTES: f32(size) + each operand, summed in float32 in order
    byts = _seq_f32(out, opb, s_owner, len(nodes))
    flops = np.zeros(len(nodes))
    trans = np.zeros(len(nodes))
    has_flops = np.zeros(len(nodes), bool)
    has_trans = np.zeros(len(nodes), bool)
    seconds = np.zeros(len(nodes))
    has_seconds = np.ones(len(nodes), bool)
    has_out = np.ones(len(nodes), bool)
    extra: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (node pos, key id, value)

    def m(*names: str) -> np.ndarray:
        return np.isin(opc, codes(names))

    elems = S.elements[sh]

    def op_shape(k: int, where: np.ndarray) -> np.ndarray:
        """shape index of operand k of the nodes at ``where`` (they have it)."""
        return fr.shape[fr.op_src[fr.op_ptr[nodes[where]] + k]]

    # elementwise
    ew = np.isin(opc, codes(_ELEMENTWISE))
    tr = ew & np.isin(opc, codes(_TRANSCENDENTAL))
    trans[tr], has_trans[tr] = f32a(elems[tr]), True
    fl = ew & ~tr
    flops[fl], has_flops[fl] = f32a(elems[fl]), True
    # free, parameter, constant, get-tuple-element, bitcast: no traffic
    zero_all = m(*_FREE)
    zero_nops = m("parameter", "constant")
    gte_like = m("get-tuple-element", "bitcast")
    z = zero_all | zero_nops | gte_like
    byts[z] = 0.0
    out[z] = 0.0
    opb[zero_all[s_owner]] = 0.0
    opb[(gte_like[s_owner]) & (s_k == 0)] = 0.0
    gte_noop = gte_like & (counts == 0)  # XLA sets operand 0's key even without one
    if gte_noop.any():
        w = np.nonzero(gte_noop)[0]
        extra.append((w, np.full(len(w), R.keys.id(operand_bytes_key(0))), np.zeros(len(w))))
    # tuple: its index table, 8 bytes an element (4 in XLA 2026)
    tp = m("tuple")
    if tp.any():
        w = np.nonzero(tp)[0]
        ptr = np.where(np.isin(fr.file[nodes[w]], list(fr.xla_2026)), 4, 8)
        sz = np.where(S.is_tuple[sh[w]], ptr * S.nparts[sh[w]], own_bytes[w])
        byts[w] = out[w] = f32a(sz)
        opb[tp[s_owner]] = 0.0
    # slice, dynamic-slice, gather: read what they output
    for name in ("slice", "dynamic-slice", "gather"):
        w = np.nonzero(m(name))[0]
        if not len(w):
            continue
        o = own_bytes[w]
        idx = np.zeros(len(w), np.int64)
        if name != "slice":
            has1 = counts[w] > 1
            idx[has1] = S.bytes[op_shape(1, w[has1])]
        byts[w] = f32a(o * 2 + idx)
        out[w] = f32a(o)
        first = (s_k == 0) & np.isin(s_owner, w)
        opb[first] = f32a(own_bytes[s_owner[first]])
        opu[first] = _ratio_v(elems[s_owner[first]], S.elements[fr.shape[fr.op_src[slot[first]]]])
        if name != "slice":
            second = (s_k == 1) & np.isin(s_owner, w)
            opb[second] = f32a(S.bytes[fr.shape[fr.op_src[slot[second]]]])
            lone = w[counts[w] < 2]
            if len(lone):
                extra.append((lone, np.full(len(lone), R.keys.id(operand_bytes_key(1))), np.zeros(len(lone))))
    # dynamic-update-slice: reads and writes the update
    w = np.nonzero(m("dynamic-update-slice"))[0]
    if len(w):
        upd_sh = op_shape(1, w)
        upd = S.bytes[upd_sh]
        idx = np.zeros(len(w), np.int64)
        has2 = counts[w] > 2
        idx[has2] = S.bytes[op_shape(2, w[has2])]
        byts[w] = f32a(upd * 2 + idx)
        out[w] = f32a(upd)
        mine = np.isin(s_owner, w)
        pos_in_w = np.searchsorted(w, s_owner)
        opb[mine & (s_k == 0)] = 0.0
        sel1 = mine & (s_k == 1)
        opb[sel1] = f32a(upd[pos_in_w[sel1]])
        sel2 = mine & (s_k == 2)
        opb[sel2] = f32a(idx[pos_in_w[sel2]])
        first = mine & (s_k == 0)
        on = elems[s_owner[first]]
        opu[first] = _ratio_v(on - S.elements[upd_sh[pos_in_w[first]]], on)
        lone = w[counts[w] < 3]
        if len(lone):
            extra.append((lone, np.full(len(lone), R.keys.id(operand_bytes_key(2))), np.zeros(len(lone))))
    # sort: n log n
    w = np.nonzero(m("sort"))[0]
    if len(w):
        nn = S.elements[op_shape(0, w)]
        lg = np.array([(int(x) - 1).bit_length() if x > 0 else 0 for x in nn.tolist()], np.float64)
        flops[w], has_flops[w] = f32a(nn.astype(np.float64) * lg), True
    # all-reduce: one flop per element of each array result
    w = np.nonzero(m("all-reduce", "all-reduce-start"))[0]
    if len(w):
        o = S.arr_bytes[sh[w]]
        opsum = np.zeros(len(nodes), np.int64)
        np.add.at(opsum, s_owner, s_bytes)
        flops[w], has_flops[w] = f32a(S.arr_elems[sh[w]]), True
        out[w] = f32a(o)
        byts[w] = f32a(o + opsum[w])
    # rng, rng-bit-generator
    w = np.nonzero(m("rng"))[0]
    trans[w], has_trans[w] = f32a(elems[w]), True
    w = np.nonzero(m("rng-bit-generator"))[0]
    trans[w], has_trans[w] = f32a(S.elements_recursive[sh[w]]), True
    # custom-call: unknown (-1), no bottleneck time
    cc = m("custom-call")
    seconds[cc] = -1.0
    byts[cc] = out[cc] = -1.0
    opb[cc[s_owner]] = -1.0
    flops[cc], has_flops[cc] = -1.0, True
    # the long form
    ids = np.arange(len(nodes))
    parts_n = [ids, ids, ids[has_out], ids[has_seconds], ids[has_flops], ids[has_trans]]
    parts_k = [np.full(len(ids), K_BYTES), np.full(0, K_BYTES), np.full(int(has_out.sum()), K_OUT),
               np.full(int(has_seconds.sum()), K_SECONDS), np.full(int(has_flops.sum()), K_FLOPS),
               np.full(int(has_trans.sum()), K_TRANS)]
    parts_v = [byts, np.zeros(0), out[has_out], seconds[has_seconds], flops[has_flops], trans[has_trans]]
    parts_n[1] = np.zeros(0, np.int64)
    if len(slot):
        maxk = int(s_k.max()) + 1
        kb = np.array([R.keys.id(operand_bytes_key(i)) for i in range(maxk)], np.int64)
        ku = np.array([R.keys.id(operand_util_key(i)) for i in range(maxk)], np.int64)
        parts_n += [s_owner, s_owner]
        parts_k += [kb[s_k], ku[s_k]]
        parts_v += [opb, opu]
    for w, k, v in extra:
        parts_n.append(w)
        parts_k.append(k)
        parts_v.append(v)
    pos = np.concatenate(parts_n).astype(np.int64)
    R.vec = (nodes, byts, out, flops, trans, opb, slot)  # type: ignore[attr-defined]
    return nodes[pos], np.concatenate(parts_k).astype(np.int64), np.concatenate(parts_v).astype(np.float64)


def _ratio_v(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (num / np.where(den == 0, 1, den)).astype(np.float32).astype(np.float64)
    return np.where(den != 0, r, np.where(num != 0, math.inf, math.nan))


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    base = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return base + np.arange(total)


def _seq_f32(first: np.ndarray, vals: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per owner, ``first`` then its ``vals`` (in order) summed in float32 one after another."""
    out = first.copy()
    if not len(vals):
        return out
    allv = np.concatenate([first, vals])
    allo = np.concatenate([np.arange(n), owner])
    exact = _exact_groups(allv, allo, n)
    tot = np.zeros(n)
    np.add.at(tot, allo, allv)
    out = np.where(exact, tot, out)
    for i in np.nonzero(~exact)[0].tolist():
        seq = np.concatenate([[first[i]], vals[owner == i]]).astype(np.float32)
        out[i] = float(np.add.accumulate(seq)[-1])
    return out


def _exact_groups(v: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """Per group, whether a float32 sum of its values is exact in any order: every value a
    multiple of 2^m (m the group's smallest) and the magnitudes summing to at most 2^(24+m), so
    every partial sum is a float32. Integers summing to at most 2^24 (most groups) are decided
    without looking at the bits."""
    fin = np.isfinite(v)
    vv = np.where(fin, v, 0.0)
    av = np.abs(vv)
    sabs = np.bincount(g, weights=av, minlength=n)
    notint = np.bincount(g, weights=(vv != np.floor(vv)) | ~fin, minlength=n) > 0
    exact = ~notint & (sabs <= float(1 << 24))
    rest = ~exact[g]
    if rest.any():
        gi, vi = g[rest], vv[rest]
        bad = np.bincount(gi, weights=~fin[rest], minlength=n) > 0
        ming = np.full(n, 1 << 20, np.int64)
        np.minimum.at(ming, gi, _granularity(vi))
        lim = np.ldexp(1.0, np.clip(24 + ming, -1000, 1000).astype(np.int64))
        exact |= ~bad & (sabs <= lim * (1 - 1e-12)) & (np.bincount(gi, minlength=n) > 0)
    return exact


def _sum_level(R: _Run, node: np.ndarray, key: np.ndarray, val: np.ndarray, comps: np.ndarray) -> None:
    LEVELS[0] += 1
    fr = R.fr
    if not len(node):
        R.sums.add(comps, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        return
    comp = fr.comp[node].astype(np.int64)
    o = np.lexsort((key, comp))
    node, key, val, comp = node[o], key[o], val[o], comp[o]
    seg_start = np.ones(len(node), bool)
    seg_start[1:] = (comp[1:] != comp[:-1]) | (key[1:] != key[:-1])
    seg = np.cumsum(seg_start) - 1
    ns = int(seg[-1]) + 1
    exact = _exact_groups(val, seg, ns)
    tot = np.zeros(ns)
    np.add.at(tot, seg, val)
    starts = np.nonzero(seg_start)[0]
    ends = np.append(starts[1:], len(node))
    for s in np.nonzero(~exact)[0].tolist():
        a, b = int(starts[s]), int(ends[s])
        pos = R.position(int(comp[a]))
        seq = sorted(range(a, b), key=lambda j: pos.get(int(node[j]), 1 << 40))
        tot[s] = float(np.add.accumulate(val[seq].astype(np.float32))[-1])
    R.sums.add(comps, comp[starts], key[starts], tot)


#: counts of fusions costed by columns and by the Python handler (the bench and tests read it)
FUSIONS = {"vector": 0, "python": 0}


def _vector_fusions(R: _Run, nodes: np.ndarray, S: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """XLA's fusion rule as columns for the common fusions: an array result whose root is not a
    dynamic-update-slice, not a custom fusion, fused parameters that are arrays numbered 0…k−1
    and read by no nested fusion. Then (``FusionParameterReadBytes``) a parameter costs the
    bytes of each slice (and dynamic-slice of it) that reads it, its own bytes for each
    broadcast or reshape of it, and its own bytes once for any other users (a
    dynamic-update-slice into it reads nothing); the fusion's ``bytes accessed`` is its output,
    then each large constant inside, then each parameter, summed in float32 in that order. The
    fused computation's other properties are copied. Returns the (node, key, value) of these
    fusions and the nodes left for the Python handlers."""
    fr = R.fr
    empty = np.zeros(0, np.int64)
    if "fusion" not in fr.opnames or not len(nodes) or not COLUMNS:
        return empty, empty, np.zeros(0), nodes
    opn = fr.opnames
    code = {o: i for i, o in enumerate(opn)}
    F = nodes[fr.op[nodes] == code["fusion"]]
    if not len(F):
        return empty, empty, np.zeros(0), nodes
    kc = getattr(fr, "_kcustom", None)
    if kc is None:
        import pyarrow.compute as pc

        col = fr.rows.column("fusion_kind").cast("string")
        kc = fr._kcustom = np.asarray(pc.fill_null(pc.equal(col, "kCustom"), False).to_numpy(zero_copy_only=False), bool)  # type: ignore[attr-defined]
    has_call = fr.cl_ptr[F + 1] > fr.cl_ptr[F]
    C = np.where(has_call, fr.cl_comp[np.minimum(fr.cl_ptr[F], max(len(fr.cl_comp) - 1, 0))] if len(fr.cl_comp) else -1, -1)
    root = np.where(C >= 0, fr.c_root[np.maximum(C, 0)], -1)
    sh = fr.shape[F]
    dus = code.get("dynamic-update-slice", -9)
    rootop = fr.op[np.maximum(root, 0)]
    # a dynamic-update-slice root is charged its update (it needs one)
    rs = np.maximum(root, 0)
    dus_root = (rootop == dus) & (root >= 0)
    dus_root_ok = dus_root & (fr.op_ptr[rs + 1] - fr.op_ptr[rs] >= 2)
    arr_ok = S.is_array[sh] & ~S.is_tuple[sh] & (~dus_root | dus_root_ok)
    tup_ok = S.flat[sh]
    # a tuple root's dynamic-update-slice element is charged its update: it needs one
    rt = np.nonzero(tup_ok & (root >= 0) & (rootop == code.get("tuple", -9)))[0]
    if len(rt):
        r = root[rt]
        rn = fr.op_ptr[r + 1] - fr.op_ptr[r]
        lc = np.minimum(S.nparts[sh[rt]], rn)
        el = fr.op_src[_ranges(fr.op_ptr[r], lc)]
        short = (fr.op[el] == dus) & (fr.op_ptr[el + 1] - fr.op_ptr[el] < 2)
        badr = np.zeros(len(rt), bool)
        np.logical_or.at(badr, np.repeat(np.arange(len(rt)), lc), short)
        tup_ok[rt[badr]] = False
    # a custom fusion is costed by a gather or scatter inside it (the Python rule); without one,
    # as any fusion
    n_all = len(fr.c_name)
    gs = np.isin(fr.op[:fr.n], [code.get("gather", -9), code.get("scatter", -9)])
    has_gs = np.bincount(fr.comp[:fr.n][gs], minlength=n_all) > 0
    custom_bad = kc[F] & has_gs[np.maximum(C, 0)]
    ok = (C >= 0) & (root >= 0) & ~custom_bad & (arr_ok | tup_ok)
    # per candidate computation: its parameters
    cand = np.unique(C[ok])
    nc = len(fr.c_name)
    is_cand = np.zeros(nc, bool)
    is_cand[cand] = True
    n = fr.n
    prm = code.get("parameter", -9)
    prows = np.nonzero((fr.op[:n] == prm) & is_cand[fr.comp[:n]])[0]
    pc_ = fr.comp[prows].astype(np.int64)
    pnum = fr.param[prows]
    psh = fr.shape[prows]
    bad = np.zeros(nc, bool)
    np.logical_or.at(bad, pc_, (pnum < 0) | S.is_tuple[psh] | S.unusable[psh])
    cnt = np.bincount(pc_, minlength=nc)
    mx = np.full(nc, -1, np.int64)
    np.maximum.at(mx, pc_, pnum)
    bad |= mx + 1 != cnt
    # parameter users: the read rules
    ucount = fr.us_ptr[prows + 1] - fr.us_ptr[prows]
    ue = _ranges(fr.us_ptr[prows], ucount)
    u = fr.us_dst[ue]
    up = np.repeat(np.arange(len(prows)), ucount)
    uop = fr.op[u]
    np.logical_or.at(bad, pc_[up], uop == code["fusion"])
    first = fr.op_src[fr.op_ptr[u]] == prows[up]
    pbytes = fr.shapes.bytes[psh]
    ubytes = fr.shapes.bytes[fr.shape[u]]
    is_slice = uop == code.get("slice", -9)
    is_ds = uop == code.get("dynamic-slice", -9)
    is_dus = uop == dus
    is_br = np.isin(uop, [code.get("broadcast", -9), code.get("reshape", -9)])
    add = np.where(is_slice | (is_ds & first), ubytes, 0) + np.where(is_br, pbytes[up], 0)
    other = ~(is_slice | is_br | ((is_ds | is_dus) & first))
    size = np.zeros(len(prows), np.int64)
    np.add.at(size, up, add)
    triv = np.zeros(len(prows), bool)
    np.logical_or.at(triv, up, other)
    size += np.where(triv, pbytes, 0)
    ok &= ~bad[np.maximum(C, 0)]
    FV, CV = F[ok], C[ok]
    rest = np.setdiff1d(nodes, FV, assume_unique=True)
    FUSIONS["vector"] += len(FV)
    FUSIONS["python"] += len(F) - len(FV)
    if not len(FV):
        return empty, empty, np.zeros(0), rest
    # bytes accessed: output, large constants, parameters in number order (float32, in order)
    crow = np.nonzero((fr.op[:n] == code.get("constant", -9)) & is_cand[fr.comp[:n]])[0]
    crow = crow[S.elements[fr.shape[crow]] > 1]
    vals_owner: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    # each fusion reads its computation's constants and parameters: expand per fusion
    order_c = np.argsort(fr.comp[crow], kind="stable")
    crow = crow[order_c]
    c_of_c = fr.comp[crow].astype(np.int64)
    o_p = np.lexsort((pnum, pc_))
    p_sorted_c, p_sorted_size = pc_[o_p], size[o_p]
    f32a = lambda x: np.asarray(x, np.float64).astype(np.float32).astype(np.float64)  # noqa: E731
    cs = np.searchsorted(c_of_c, CV, "left"), np.searchsorted(c_of_c, CV, "right")
    ps = np.searchsorted(p_sorted_c, CV, "left"), np.searchsorted(p_sorted_c, CV, "right")
    cc = cs[1] - cs[0]
    pcnt = ps[1] - ps[0]
    vals_owner = [np.repeat(np.arange(len(FV)), cc), np.repeat(np.arange(len(FV)), pcnt)]
    ci = _ranges(cs[0], cc)
    pi = _ranges(ps[0], pcnt)
    # a tuple result: each array element's bytes (a dynamic-update-slice element of a tuple
    # root: its update's), first in bytes accessed
    shv = fr.shape[FV]
    is_t = S.is_tuple[shv]
    lcount = np.where(is_t, S.nparts[shv], 0)
    lown = np.repeat(np.arange(len(FV)), lcount)
    li = np.arange(int(lcount.sum())) - np.repeat(np.cumsum(lcount) - lcount, lcount)
    lsize = S.part_bytes[S.part_ptr[shv[lown]] + li] if len(li) else np.zeros(0, np.int64)
    if len(li):
        r = fr.c_root[CV[lown]]
        has = (fr.op[r] == code.get("tuple", -9)) & (li < fr.op_ptr[r + 1] - fr.op_ptr[r])
        el = np.where(has, fr.op_src[np.minimum(fr.op_ptr[r] + li, len(fr.op_src) - 1)], -1)
        isd = has & (fr.op[np.maximum(el, 0)] == dus)
        upd = fr.op_src[fr.op_ptr[el[isd]] + 1]
        lsize[isd] = S.bytes[fr.shape[upd]]
    vals = [f32a(lsize), f32a(S.bytes[fr.shape[crow[ci]]]), f32a(p_sorted_size[pi])]
    vals_owner = [lown] + vals_owner
    phase = np.concatenate([np.full(len(li), -1.0), np.zeros(len(ci)), np.ones(len(pi))])
    owner = np.concatenate(vals_owner)
    v = np.concatenate(vals)
    o = np.lexsort((np.arange(len(owner)), phase, owner))
    out_size = S.bytes[shv].copy()
    rv = fr.c_root[CV]
    dr = ~is_t & (fr.op[rv] == dus)
    if dr.any():
        out_size[dr] = S.bytes[fr.shape[fr.op_src[fr.op_ptr[rv[dr]] + 1]]]
    outb = np.where(is_t, 0.0, f32a(out_size))
    total = _seq_f32(outb, v[o], owner[o], len(FV))
    outb = np.where(is_t, _seq_f32(np.zeros(len(FV)), f32a(lsize), lown, len(FV)), outb)
    # the properties: the fused computation's, with the boundary figures (bytes accessed,
    # output, each parameter's bytes and utilization 1, optimal seconds 0) in their place
    kid = R.keys.id
    kmax = int(pcnt.max()) if len(pcnt) else 0
    kb = np.array([kid(operand_bytes_key(i)) for i in range(kmax)], np.int64)
    ku = np.array([kid(operand_util_key(i)) for i in range(kmax)], np.int64)
    names = R.keys.names
    kind = np.zeros(len(names), np.int64)  # 1: operand bytes, 2: utilization, 3: replaced
    kidx = np.full(len(names), -1, np.int64)
    kind[kb], kidx[kb] = 1, np.arange(kmax)
    kind[ku], kidx[ku] = 2, np.arange(kmax)
    kind[[K_BYTES, K_OUT, K_SECONDS]] = 3
    lmax = int(lcount.max()) if len(lcount) else 0
    kl = np.array([kid(output_bytes_key((i,))) for i in range(lmax)], np.int64)
    if lmax:
        names = R.keys.names
        kind = np.concatenate([kind, np.zeros(len(names) - len(kind), np.int64)])
        kidx = np.concatenate([kidx, np.full(len(names) - len(kidx), -1, np.int64)])
        kind[kl], kidx[kl] = 4, np.arange(lmax)
    sk, sv = R.sums.arrays()
    done = R.sums.done[CV]
    cnt = np.where(done, R.sums.end[CV] - R.sums.start[CV], 0)
    si = _ranges(R.sums.start[CV], cnt)
    sown = np.repeat(np.arange(len(FV)), cnt)
    skk = sk[si] if len(si) else np.zeros(0, np.int64)
    keep = ~((kind[skk] == 3) | ((kind[skk] > 0) & (kind[skk] < 3) & (kidx[skk] < pcnt[sown]) & (kidx[skk] >= 0))
             | ((kind[skk] == 4) & (kidx[skk] < lcount[sown])))
    sown, skk, svv = sown[keep], skk[keep], (sv[si][keep] if len(si) else np.zeros(0))
    pown = np.repeat(np.arange(len(FV)), pcnt)
    pk_i = np.arange(len(pi)) - np.repeat(np.cumsum(pcnt) - pcnt, pcnt)
    nF = len(FV)
    own = np.concatenate([sown, np.arange(nF), np.arange(nF), np.arange(nF), pown, pown, lown])
    key = np.concatenate([skk, np.full(nF, K_BYTES), np.full(nF, K_OUT), np.full(nF, K_SECONDS),
                          kb[pk_i] if len(pi) else np.zeros(0, np.int64), ku[pk_i] if len(pi) else np.zeros(0, np.int64),
                          kl[li] if len(li) else np.zeros(0, np.int64)])
    val = np.concatenate([svv, total, outb, np.zeros(nF), f32a(p_sorted_size[pi]), np.ones(len(pi)), f32a(lsize)])
    comp_of = fr.comp[FV].astype(np.int64)
    R.asked.extend(zip(comp_of.tolist(), CV.tolist()))
    fn = FV[own]
    R.fus.append((fn, key, val))
    return fn, key.astype(np.int64), val.astype(np.float64), rest


# rules that read nothing but the instruction's shapes and attributes: run once per distinct
# (opcode, shape, operand shapes, attribute text, conventions), their figures copied to the rest
_PURE = frozenset({"transpose", "dot", "convolution", "fft", "triangular-solve", "cholesky", "infeed", "outfeed"})
_PURE_MAX_OPERANDS = 6
#: handler calls (all, and the ones a signature saved): the bench reads them
HANDLER_CALLS = {"run": 0, "copied": 0}


def _python_props(R: _Run, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Python rules of ``nodes`` (their callees summed): their (node, key, value)."""
    fr = R.fr
    pn: list[int] = []
    pk: list[int] = []
    pv: list[float] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pure_code = np.array([o in _PURE for o in fr.opnames], bool)
    nops = fr.op_ptr[nodes + 1] - fr.op_ptr[nodes]
    pure = pure_code[fr.op[nodes]] & (nops <= _PURE_MAX_OPERANDS) & (nodes < fr.n)
    if pure.sum() > 1 and COLUMNS:
        P = nodes[pure]
        nodes = nodes[~pure]
        import pyarrow as pa
        import pyarrow.compute as pc

        acodes = np.asarray(pc.dictionary_encode(fr.attrs_col.take(pa.array(P))).indices.to_numpy(zero_copy_only=False),
                            np.int64)
        conv = np.array([(R.leaves_of(int(f)) * 2 + (int(f) in fr.xla_2026)) for f in fr.files.tolist()], np.int64)
        fconv = np.zeros(int(fr.file.max()) + 1, np.int64)
        fconv[fr.files] = conv
        cols = [fr.op[P].astype(np.int64), fr.shape[P].astype(np.int64), acodes, fconv[fr.file[P]], nops[pure]]
        for k in range(_PURE_MAX_OPERANDS):
            has = cols[4] > k
            sh = np.full(len(P), -1, np.int64)
            sh[has] = fr.shape[fr.op_src[fr.op_ptr[P[has]] + k]]
            cols.append(sh)
        sig = np.stack(cols, axis=1)
        _, first, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        HANDLER_CALLS["copied"] += len(P) - len(first)
        by_group = P[np.argsort(inv, kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(inv, minlength=len(first)))])
        for g, rep in enumerate(first.tolist()):
            i = int(P[rep])
            p, why = _one(R, i)
            members = by_group[bounds[g]:bounds[g + 1]]
            for m in members.tolist():
                R.py_props[m] = p
                if why is not None:
                    R.problems[m] = why
            ks = np.array([R.keys.id(k) for k in p], np.int64)
            vs = np.array(list(p.values()), np.float64)
            parts.append((np.repeat(members, len(ks)), np.tile(ks, len(members)), np.tile(vs, len(members))))
    for i in nodes.tolist():
        p, why = _one(R, i)
        if why is not None:
            R.problems[i] = why
        R.py_props[i] = p
        for k, v in p.items():
            pn.append(i)
            pk.append(R.keys.id(k))
            pv.append(v)
    parts.append((np.array(pn, np.int64), np.array(pk, np.int64), np.array(pv, np.float64)))
    return (np.concatenate([x[0] for x in parts]), np.concatenate([x[1] for x in parts]),
            np.concatenate([x[2] for x in parts]))


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


def _published(R: _Run, vec: np.ndarray, node_reached: np.ndarray, unusable: np.ndarray, entries: Any) -> CostResult:
    fr = R.fr
    t = fr.t
    nan = np.full(t, np.nan)
    flops, trans, byts, out = nan.copy(), nan.copy(), nan.copy(), nan.copy()
    opb = np.full(len(fr.op_src), np.nan)
    published = np.zeros(t, bool)
    nodes, vb, vo, vf, vt, vopb, slot = R.vec  # type: ignore[attr-defined]
    flops[nodes], trans[nodes], byts[nodes], out[nodes] = 0.0, 0.0, vb, vo
    e_node, e_key, e_val = entries
    for k, arr in ((K_FLOPS, flops), (K_TRANS, trans)):
        s = e_key == k
        arr[e_node[s]] = e_val[s]
    opb[slot] = vopb
    published[nodes] = True
    if R.fus:
        fn = np.concatenate([x[0] for x in R.fus])
        fk = np.concatenate([x[1] for x in R.fus])
        fv = np.concatenate([x[2] for x in R.fus])
        u = np.unique(fn)
        flops[u], trans[u], byts[u], out[u] = 0.0, 0.0, 0.0, 0.0
        published[u] = True
        opb[_ranges(fr.op_ptr[u], fr.op_ptr[u + 1] - fr.op_ptr[u])] = 0.0
        for k, arr in ((K_FLOPS, flops), (K_TRANS, trans), (K_BYTES, byts), (K_OUT, out)):
            sel = fk == k
            arr[fn[sel]] = fv[sel]
        names = R.keys.names
        is_ob = np.array([nm.startswith(BYTES) and nm[len(BYTES):len(BYTES) + 1].isdigit() and nm.endswith("{}")
                          for nm in names], bool)
        idx = np.array([int(nm[len(BYTES):-2]) if ob else -1 for nm, ob in zip(names, is_ob)], np.int64)
        sel = is_ob[fk]
        slot_i = idx[fk[sel]]
        nops = (fr.op_ptr[fn[sel] + 1] - fr.op_ptr[fn[sel]])
        ok = slot_i < nops
        opb[fr.op_ptr[fn[sel][ok]] + slot_i[ok]] = fv[sel][ok]
    for i, p in R.py_props.items():
        if p is None:
            continue
        published[i] = True
        flops[i] = p.get(FLOPS, 0.0)
        trans[i] = p.get(TRANS, 0.0)
        byts[i] = p.get(BYTES, 0.0)
        out[i] = p.get(OUT, 0.0)
        a, b = int(fr.op_ptr[i]), int(fr.op_ptr[i + 1])
        for k in range(b - a):
            opb[a + k] = p.get(operand_bytes_key(k), 0.0)
    published &= node_reached
    return CostResult(totals={}, published=published, flops=flops, trans=trans, bytes=byts, out=out, opb=opb,
                      in_reached=node_reached)


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


def fusion_parameter_read_bytes(self: _Ctx, hlo: Node) -> int:
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
                sub = self.comps.get(user.called[0]) if user.called else None
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


_Ctx.fusion_parameter_read_bytes = fusion_parameter_read_bytes  # type: ignore[assignment]


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


def _gte(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    p[operand_bytes_key(0)] = 0.0
    p[SECONDS] = 0.0
    return False


def _bitcast(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    p[BYTES] = 0.0
    p[OUT] = 0.0
    p[operand_bytes_key(0)] = 0.0
    p[SECONDS] = 0.0


def _tuple(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    # the tuple's index table: 8 bytes an element, 4 in XLA 2026 (jax >= 0.11; seen against
    # jax 0.11.2 / 0.12.0.1's cost_analysis())
    size = a.tuple_pointer_bytes * len(ins.shape.parts) if ins.shape.parts is not None else ins.shape.bytes
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


def conv_flops(ins: Node) -> int:
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


def _gather(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
    out = ins.shape.bytes
    idx = ins.operands[1].shape.bytes
    p[BYTES] = f32(out * 2 + idx)
    p[operand_bytes_key(0)] = f32(out)
    p[operand_bytes_key(1)] = f32(idx)
    p[operand_util_key(0)] = _ratio(ins.shape.elements, ins.operands[0].shape.elements)
    p[OUT] = f32(out)


def _scatter(a: _Ctx, ins: Node, p: dict[str, float]) -> Any:
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
    p[SECONDS] = -1.0
    p[BYTES] = -1.0
    p[OUT] = -1.0
    for i in range(len(ins.operands)):
        p[operand_bytes_key(i)] = -1.0
    p[FLOPS] = -1.0
    return False


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
