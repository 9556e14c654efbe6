"""XLA's cost rules as numpy columns over every node of the frame at once: ``Preprocess``
(output + operand bytes) and the rules that are formulas of shapes (``_vector_props``), and the
common fusions with ``FusionParameterReadBytes`` over the fused parameters' users
(``_vector_fusions``); with the float32 sums they need (``_seq_f32``, ``_exact_groups``). Apart
from the per-instruction Python handlers (``cost_handlers``), which are their reference
(tests/test_cost_engine.py runs both); the driver (``cost_rules.run``) says which node goes where."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .cost_keys import (_ELEMENTWISE, _FREE, _TRANSCENDENTAL, K_BYTES, K_FLOPS, K_OUT, K_SECONDS, K_TRANS,
                        operand_bytes_key, operand_util_key, output_bytes_key)
from .cost_state import _Run


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
        # a TPU tuple's table is its Shape.bytes (512), a CPU/GPU one a pointer an element
        sz = np.where(S.is_tuple[sh[w]] & ~S.tpu[sh[w]], ptr * S.nparts[sh[w]], own_bytes[w])
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
    if "fusion" not in fr.opnames or not len(nodes):
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
    # (and a TPU async collective fusion, whose root is a custom call: the Python rule too)
    custom_bad = kc[F] & (has_gs[np.maximum(C, 0)] | ((rootop == code.get("custom-call", -9)) & (root >= 0)))
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
