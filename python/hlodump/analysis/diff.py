"""``diff``: what changed from one compile to another, module pair by module pair.

The per-module figures of both sides come from one ``summary`` (and one table of allocations,
buffers and instructions) per dump, computed once for all modules; the modules are paired
set-wise (``explain.pair_keys``), and matching then works on those rows grouped by module.
Why the peak changed, with values matched by source rather than by name: ``explain``.
"""

from __future__ import annotations

from .._typing import checked_analysis

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from .buffers import CATEGORIES, allocations
from .engine import engine
from .modules import Module, ModuleSel, module_list, select
from .shapes import strip_layout
from .summary import peaks, summary

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["diff", "pair_modules", "norm_op_name"]

_Module = Module


def _rows_by_module(d: "Dump", what: str) -> dict[str, list[dict[str, Any]]]:
    """All modules' allocations / buffers / instruction info as rows grouped by module key,
    computed once per dump."""
    eng = engine(d)
    key = ("diff_rows", what)
    hit = eng.results.get(key)
    if hit is None:
        sc = eng.scope(module_list(d))
        if what == "allocations":
            t = allocations(d)
        elif what == "buffers":
            t = sc.get("buffers")
        else:
            t = sc.get("info")
        hit = defaultdict(list)
        for r in t.to_pylist():
            hit[r["module"]].append(r)
        eng.results[key] = hit
    return hit


def _summary_of(d: "Dump", m: Module) -> dict[str, Any]:
    eng = engine(d)
    hit = eng.results.get("diff_summary")
    if hit is None:
        hit = eng.results["diff_summary"] = {s["module"]: s for s in summary(d, top=0, cost=False)}
    return hit[m.key]


def pair_modules(a: "Dump", b: "Dump") -> list[tuple[Optional[_Module], Optional[_Module]]]:
    """Modules of ``a`` matched to modules of ``b``, set-wise on the engine
    (``explain.pair_keys``): by key within the dump, then by name and structure (entry parameter
    and output shapes) in module-id order, then by name, then by structure alone (a module jax
    renamed), then by the name without punctuation and case; one module on each side is a pair
    whatever its name. A's modules in order (with their partner or None), then b's unpaired."""
    from .explain import pair_keys

    ma, mb = module_list(a), module_list(b)
    by_b = {m.key: m for m in mb}
    partner = {ka: by_b[kb] for ka, kb, _ in pair_keys(a, b, ma, mb)}
    used = {m.key for m in partner.values()}
    pairs: list[tuple[Optional[_Module], Optional[_Module]]] = [(x, partner.get(x.key)) for x in ma]
    pairs.extend((None, y) for y in mb if y.key not in used)
    return pairs


@checked_analysis
def diff(a: "Dump", b: "Dump", module: ModuleSel = None) -> pa.Table:
    """What changed from compile ``a`` to compile ``b``, one row per change.

    Modules are paired as ``explain`` pairs them (``pair_modules``: by key, then by name and
    structure, by name, by structure, by similar name; a single module on each side is a pair
    whatever its name). ``explain`` says why the peak changed. Columns:
    module (b's key, else a's), module_a, module_b, what (``module``, ``total``, ``peak`` —
    key ``peak_in_use`` or ``xla_listed_peak``, the figures of ``summary.peaks`` —,
    ``category``, ``memory_space``, ``allocation``, ``buffer``, ``instruction``, ``fusion_kind``,
    ``custom_call``), change (``added``, ``removed``, ``resized``, ``changed``), key, a, b
    (numbers as int64, null when absent), delta (b − a), detail (text).

    Rows: per module pair the summary rows first (module, total, peak, category,
    memory_space), then the others by bytes changed (``|delta|``) descending.

    Buffers (values) are matched by (op_name with ``jit(…)/`` prefixes dropped — or the
    instruction name —, shape without layout) counting duplicates; what is left is matched by
    the defining instruction's opcode and shape and its position among values of that shape
    (op_names drift between releases); allocations by (category, parameter number, size-rank);
    instructions as counts of (opcode, shape without layout).
    """
    rows: list[dict[str, Any]] = []

    def add(mod: str, ka: Optional[str], kb: Optional[str], what: str, change: str, key: str,
            va: Optional[int], vb: Optional[int], detail: str = "") -> None:
        rows.append({"module": mod, "module_a": ka, "module_b": kb, "what": what, "change": change,
                     "key": key, "a": va, "b": vb,
                     "delta": (vb or 0) - (va or 0) if (va is not None or vb is not None) else None,
                     "detail": detail})

    pairs = pair_modules(a, b)
    if module is not None:
        sel_a = {m.key for m in select(module_list(a), module)} if module_list(a) else set()
        try:
            sel_b = {m.key for m in select(module_list(b), module)}
        except KeyError:
            sel_b = set()
        pairs = [(x, y) for x, y in pairs if (x and x.key in sel_a) or (y and y.key in sel_b)]
    for x, y in pairs:
        mod = (y or x).key  # type: ignore[union-attr]
        ka, kb = (x.key if x else None), (y.key if y else None)
        if x is None or y is None:
            add(mod, ka, kb, "module", "added" if x is None else "removed", mod, None, None)
            continue
        sa, sb = _summary_of(a, x), _summary_of(b, y)
        for key, va, vb in (("total_bytes", sa["total_bytes"], sb["total_bytes"]),):
            if va != vb:
                add(mod, ka, kb, "total", "changed", key, va, vb)
        pa_, pb_ = sa["peak"] or {}, sb["peak"] or {}
        # the peaks under their names (summary.peaks): the peak in use (by slice), then XLA's listed peak
        ua, ub = peaks(sa), peaks(sb)
        if ua["peak_in_use"] != ub["peak_in_use"] or ua["peak_in_use_step"] != ub["peak_in_use_step"]:
            ta, tb = sa.get("timeline") or {}, sb.get("timeline") or {}
            add(mod, ka, kb, "peak", "changed", "peak_in_use", ua["peak_in_use"], ub["peak_in_use"],
                f"peak in use: step {ua['peak_in_use_step']} ({ta.get('max_allocated_instruction')}) -> step "
                f"{ub['peak_in_use_step']} ({tb.get('max_allocated_instruction')})")
        if pa_.get("bytes") != pb_.get("bytes") or pa_.get("step") != pb_.get("step"):
            add(mod, ka, kb, "peak", "changed", "xla_listed_peak", pa_.get("bytes"), pb_.get("bytes"),
                f"XLA's listed peak: step {pa_.get('step')} ({pa_.get('instruction')}) -> step {pb_.get('step')} "
                f"({pb_.get('instruction')})")
        for c in CATEGORIES:
            va, vb = sa["by_category"][c], sb["by_category"][c]
            if va != vb:
                add(mod, ka, kb, "category", "changed", c, va, vb, "allocated bytes")
        spa = {sp["color"]: sp["allocated_bytes"] for sp in sa["memory_spaces"]}
        spb = {sp["color"]: sp["allocated_bytes"] for sp in sb["memory_spaces"]}
        for c in sorted(set(spa) | set(spb)):
            if spa.get(c) != spb.get(c):
                add(mod, ka, kb, "memory_space", "changed", f"color {c}", spa.get(c), spb.get(c), "allocated bytes")
        for c in CATEGORIES:
            qa, qb = (pa_.get("by_category") or {}).get(c), (pb_.get("by_category") or {}).get(c)
            if (qa or 0) != (qb or 0):
                add(mod, ka, kb, "category", "changed", f"peak:{c}", qa, qb, "logical bytes at XLA's listed peak")
        _diff_allocations(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_buffers(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
        _diff_instructions(a, b, x, y, lambda *r: add(mod, ka, kb, *r))
    schema = pa.schema([("module", pa.string()), ("module_a", pa.string()), ("module_b", pa.string()),
                        ("what", pa.string()), ("change", pa.string()), ("key", pa.string()),
                        ("a", pa.int64()), ("b", pa.int64()), ("delta", pa.int64()), ("detail", pa.string())])
    first = {"module": 0, "peak": 1, "total": 2, "category": 3, "memory_space": 4}
    order = {m: i for i, m in enumerate(dict.fromkeys(r["module"] for r in rows))}
    rows.sort(key=lambda r: (order[r["module"]], first.get(r["what"], 9),
                             -abs(r["delta"] or 0) if r["what"] not in first else 0))
    return pa.Table.from_pylist(rows, schema=schema)


def _multiset_diff(ka: list[tuple[Any, ...]], kb: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any]]:
    from collections import Counter

    ca, cb = Counter(ka), Counter(kb)
    return list((ca - cb).elements()), list((cb - ca).elements())


_JIT_PREFIX_RE = re.compile(r"(?:^|/)(?:p?jit|xla_computation|jvp|transpose|vmap|remat\d*|checkpoint)\([^()/]*\)(?=/|$)")


def norm_op_name(op: Optional[str]) -> Optional[str]:
    """op_name without the ``jit(main)/``, ``pjit(f)/`` … wrappers that drift between releases."""
    if not op:
        return op
    prev = None
    s = op
    while prev != s:
        prev = s
        s = _JIT_PREFIX_RE.sub("", s).lstrip("/")
    return s or op


def _diff_buffers(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    ba, bb = _rows_by_module(a, "buffers")[x.key], _rows_by_module(b, "buffers")[y.key]

    def label(r: dict[str, Any]) -> str:
        return norm_op_name(r["op_name"]) or r["instruction"]

    from collections import Counter

    # 1. by (label, logical shape), counting duplicates
    ka = Counter((label(r), strip_layout(r["shape"])) for r in ba)
    kb = Counter((label(r), strip_layout(r["shape"])) for r in bb)
    common = ka & kb
    left_a, left_b = [], []
    used_a: Counter = Counter()
    used_b: Counter = Counter()
    for r in sorted(ba, key=lambda r: r["value_id"]):
        k = (label(r), strip_layout(r["shape"]))
        if used_a[k] < common[k]:
            used_a[k] += 1
        else:
            left_a.append(r)
    for r in sorted(bb, key=lambda r: r["value_id"]):
        k = (label(r), strip_layout(r["shape"]))
        if used_b[k] < common[k]:
            used_b[k] += 1
        else:
            left_b.append(r)
    # 2. op_names drift: by the defining instruction's opcode and shape, in order of definition
    def pos_key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["opcode"], strip_layout(r["shape"]))

    ga: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    gb: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in left_a:
        ga.setdefault(pos_key(r), []).append(r)
    for r in left_b:
        gb.setdefault(pos_key(r), []).append(r)
    rem, new = [], []
    for k in set(ga) | set(gb):
        xa, xb = ga.get(k, []), gb.get(k, [])
        n = min(len(xa), len(xb))
        for ra, rb in zip(xa[:n], xb[:n]):
            if ra["size"] != rb["size"]:
                add("buffer", "resized", label(rb), ra["size"], rb["size"],
                    f"{strip_layout(ra['shape'])}; matched by {ra['opcode']} shape and position ({label(ra)})")
        rem.extend(xa[n:])
        new.extend(xb[n:])
    # 3. what is left and shares a label is "resized"
    new_left = list(new)
    for r in rem:
        same = next((n for n in new_left if label(n) == label(r)), None)
        if same is not None:
            new_left.remove(same)
            add("buffer", "resized", label(r), r["size"], same["size"],
                f"{strip_layout(r['shape'])} -> {strip_layout(same['shape'])}")
        else:
            add("buffer", "removed", label(r), r["size"], None, strip_layout(r["shape"]))
    for r in new_left:
        add("buffer", "added", label(r), None, r["size"], strip_layout(r["shape"]))


def _diff_allocations(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    aa = _rows_by_module(a, "allocations")[x.key]
    ab = _rows_by_module(b, "allocations")[y.key]

    def keys(rows: list[dict[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        rank: dict[tuple[str, Any], int] = {}
        for r in sorted(rows, key=lambda r: (-r["size"], r["allocation"])):
            if r["parameter"] is not None:
                k = f"parameter {r['parameter']} {r['parameter_shape_index'] or ''}".strip()
            else:
                g = (r["category"], r["color"])
                rank[g] = rank.get(g, 0) + 1
                k = f"{r['category']}#{rank[g]} color {r['color']}"
            out[k] = r["size"]
        return out

    ka, kb = keys(aa), keys(ab)
    for k in ka:
        if k not in kb:
            add("allocation", "removed", k, ka[k], None)
        elif ka[k] != kb[k]:
            add("allocation", "resized", k, ka[k], kb[k])
    for k in kb:
        if k not in ka:
            add("allocation", "added", k, None, kb[k])
    if len(aa) != len(ab):
        add("allocation", "changed", "count", len(aa), len(ab))


def _diff_instructions(a: "Dump", b: "Dump", x: _Module, y: _Module, add: Any) -> None:
    ia, ib = _rows_by_module(a, "info")[x.key], _rows_by_module(b, "info")[y.key]
    src_a = {r["source_of_info"] for r in ia}
    src_b = {r["source_of_info"] for r in ib}
    note = "" if src_a == src_b == {"hlo"} else "from buffer-assignment values (instructions that define a value)"
    from collections import Counter

    ca_ = Counter((r["opcode"], strip_layout(r["shape"])) for r in ia)
    cb_ = Counter((r["opcode"], strip_layout(r["shape"])) for r in ib)
    for k in sorted(set(ca_) | set(cb_), key=lambda k: (str(k[0]), str(k[1]))):
        va, vb = ca_.get(k, 0), cb_.get(k, 0)
        if va != vb:
            change = "added" if va == 0 else "removed" if vb == 0 else "changed"
            add("instruction", change, f"{k[0]} {k[1]}".strip(), va, vb, "instruction count" + (f"; {note}" if note else ""))

    def count(rows: list[dict[str, Any]], col: str, where: str) -> dict[str, int]:
        c: dict[str, int] = {}
        for r in rows:
            if r["opcode"] == where:
                k = r[col] or "(none)"
                c[k] = c.get(k, 0) + 1
        return c

    fa, fb = count(ia, "fusion_kind", "fusion"), count(ib, "fusion_kind", "fusion")
    for k in sorted(set(fa) | set(fb)):
        if fa.get(k, 0) != fb.get(k, 0):
            add("fusion_kind", "changed", k, fa.get(k, 0), fb.get(k, 0), note)
    ca, cb = count(ia, "custom_call_target", "custom-call"), count(ib, "custom_call_target", "custom-call")
    for k in sorted(set(ca) | set(cb)):
        va, vb = ca.get(k, 0), cb.get(k, 0)
        if va == vb:
            continue
        change = "added" if va == 0 else "removed" if vb == 0 else "changed"
        add("custom_call", change, k, va, vb, note)
