"""XLA's ``HloCostAnalysis`` rules (``xla/service/hlo_cost_analysis.cc``) over the HLO frame
(``hlo_frame``): FLOPs, transcendentals, bytes accessed per operand and output, optimal seconds
of every instruction of every selected module at once. Each formula is in docs/FORMATS.md
"Cost analysis". This file is the driver and the public face (``run``, ``CostResult``); the
rules live below it: ``cost_vector`` (columns), ``cost_handlers`` (per instruction), on
``cost_keys`` (property names and keys) and ``cost_state`` (what one run holds).

How it runs (``run``)
---------------------
* Per-instruction properties of the opcodes whose rule is a formula of shapes (``Preprocess``'s
  output + operand bytes, elementwise, slices, gathers, tuples, collectives, custom calls …) are
  numpy columns over all nodes (``cost_vector._vector_props``).
* Only the rules that need a called computation's sum or a walk of a fused computation (fusion,
  while, call, conditional, async-start, reduce, map, scatter …) and a few that read attributes
  (dot, convolution, fft, transpose, triangular-solve, cholesky, infeed, outfeed) run as the
  Python handlers (``cost_handlers._HANDLERS``), one call per such instruction, on ``Node``
  views; the common fusions are columns too (``cost_vector._vector_fusions``).
* The roll-up goes level by level over the call graph of all modules at once: level 0 are the
  computations that call none, each level's handlers find their callees' sums ready.
* A computation's sum is XLA's float32 sum in its visiting order. Where every partial sum is
  exact in float32 (all values multiples of a power of two 2^g and the sum of magnitudes at most
  2^(24+g)), order does not matter and the sum is one vectorised reduction; only other
  (computation, property) pairs are summed in XLA's visiting order (``Frame.visit_order``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .cost_handlers import HANDLER_CALLS, _one
from .cost_keys import (BYTES, FLOPS, K_BYTES, K_FLOPS, K_OUT, K_TRANS, OUT, SECONDS, TRANS, UTIL,
                        operand_bytes_key)
from .cost_state import ORDERED, _Run
from .cost_vector import _exact_groups, _ranges, _vector_fusions, _vector_props
from .cost_vector import _seq_f32 as _seq_f32  # tests/test_cost_engine.py reads it here
from .hlo_frame import Frame

#: what cost.py and the tests take from here (the property names come from ``cost_keys``,
#: ``ORDERED`` from ``cost_state``)
__all__ = ["BYTES", "COLUMNS", "FLOPS", "LEVELS", "ORDERED", "RUNS", "SECONDS", "TRANS", "UTIL",
           "CostResult", "run"]

#: Counts ``run`` calls and roll-up levels (and ``ORDERED``: computations summed in visiting
#: order, the float32 fallback): a test checks that they do not grow with the number of modules.
RUNS = [0]
LEVELS = [0]
#: False: every instruction through the Python handlers (the first analysis' rules, one call
#: each) — the reference the columns are tested against (tests/test_cost_engine.py)
COLUMNS = True
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
    # an opcode XLA does not know (a newer XLA's; the parser noted it): no rule says its cost,
    # so it gets no figure and is left out of the totals, said (never a silent 0)
    from .._core import known_opcode
    unknown_op = np.array([not known_opcode(o) for o in fr.opnames], bool)
    bad_opcode = unknown_op[fr.op] if t else np.zeros(0, bool)
    unusable = un | bad_op | bad_opcode
    in_summed = summed[fr.comp] if t else np.zeros(0, bool)
    opname = np.array(fr.opnames, dtype=object)
    py_code = np.array([o in _PY_OPS for o in fr.opnames], bool)
    nops = np.diff(fr.op_ptr)
    is_py = py_code[fr.op] if t else np.zeros(0, bool)
    for o, k in _MIN_OPERANDS.items():
        if o in fr.opnames:
            is_py |= (fr.op == fr.opnames.index(o)) & (nops < k)
    is_py |= _known_custom_calls(fr)  # the custom calls with a cost of their own (cost_custom)
    if not COLUMNS:
        is_py[:] = True
    is_py &= ~unusable
    vec = in_summed & ~unusable & ~is_py
    entries = _vector_props(R, vec, S, opname)
    # unusable nodes: no figure, a problem (noted where the visit is published)
    for i in np.nonzero(in_summed & unusable)[0].tolist():
        node = fr.node(i)
        why = next((w for w in (s.unusable for s in [node.shape] + [o.shape for o in node.operands]) if w), None)
        if bad_opcode[i]:
            why = f"unknown opcode '{fr.opnames[fr.op[i]]}' (newer XLA?): its cost is unknown"
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
        if COLUMNS:
            fn, fk, fv, nodes = _vector_fusions(R, nodes, S)
        else:  # every fusion through the Python handler
            fn, fk, fv = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
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


def _known_custom_calls(fr: Frame) -> np.ndarray:
    """Per node: a custom call whose target and backend_config give its cost (a Pallas kernel's
    estimate, a cuBLAS gemm, a cuDNN convolution, AllocateBuffer on TPU); the others keep the
    vectorised rule of XLA's base class (unknown, −1)."""
    from .cost_custom import known

    out = np.zeros(fr.t, bool)
    code = fr.opcode_code("custom-call")
    rows = np.nonzero(fr.op[:fr.n] == code)[0] if code >= 0 else np.zeros(0, np.int64)
    if not len(rows):
        return out
    import pyarrow as pa

    take = pa.array(rows)
    targets = fr.rows.column("custom_call_target").take(take).to_pylist()
    cfgs = fr.rows.column("custom_backend_config").take(take).to_pylist()
    for i, tg, cfg in zip(rows.tolist(), targets, cfgs):
        out[i] = known(tg, cfg, int(fr.file[i]) in fr.tpu_files)
    return out


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


# rules that read nothing but the instruction's shapes and attributes: run once per distinct
# (opcode, shape, operand shapes, attribute text, conventions), their figures copied to the rest
_PURE = frozenset({"transpose", "dot", "convolution", "fft", "triangular-solve", "cholesky", "infeed", "outfeed"})
_PURE_MAX_OPERANDS = 6


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
