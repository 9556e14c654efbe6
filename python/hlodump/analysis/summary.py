"""``summary``: one JSON-ready dict per module, built from a handful of queries over all modules
(totals, allocations by memory space and category, the peak list, the timeline's maxima, the
peak check, padding), then put together per module from those small tables."""

from __future__ import annotations

from .._typing import checked_analysis

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Optional

from .buffers import CATEGORIES, memory_analysis_by_module, memory_analysis_notes
from .engine import Scope
from .modules import Module, ModuleSel, scope_of
from .peak_check import peak_checks

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["summary", "peak_check", "peaks", "peak_bytes", "peak_story", "framework"]

# Module names by framework (issue 51): jax names a compile after its transformation and function
# (``jit_f``, ``pjit_f``, ``pmap_f``, ``xmap_f``, ``xla_computation_f``, ``shard_map_f``);
# TensorFlow after the tf.function (``a_inference_f_123__.45``, ``__inference_f_12``) or the
# auto-clustered graph (``cluster_7``, ``cluster_7__XlaCompiledKernel_true…``); PyTorch/XLA names
# every graph it syncs ``SyncTensorsGraph.N`` (``IrToHlo.N`` for a dumped IR).
_FRAMEWORK_PREFIXES = (
    ("jax", ("jit_", "pjit_", "pmap_", "xmap_", "xla_computation_", "shard_map_", "jit(", "pjit(")),
    ("tensorflow", ("a_inference_", "__inference_", "cluster_")),
    ("pytorch/xla", ("SyncTensorsGraph", "IrToHlo")),
)


def framework(module_name: Optional[str]) -> Optional[str]:
    """Which framework compiled a module, by the name it gave it: ``"jax"``, ``"tensorflow"``,
    ``"pytorch/xla"``, or None (a name none of them gives: a test input, an unnamed module).

    >>> framework("jit_train_step"), framework("a_inference_step_1234__.77"), framework("SyncTensorsGraph.52")
    ('jax', 'tensorflow', 'pytorch/xla')
    """
    if not module_name:
        return None
    for fw, prefixes in _FRAMEWORK_PREFIXES:
        if module_name.startswith(prefixes):
            return fw
    return None

# the totals a summary reads: (section, key) -> column of the pivot
_TOTALS = {
    ("buffer_assignment", "total_bytes_used"): "stated_total",
    ("live_range", "peak_time"): "peak_time",
    ("peak_breakdown", "total"): "stack_trace_total",
    ("memory_report", "total_bytes_used"): "report_total",
    ("live_range", "not_available"): "not_available",
    ("live_range", "peak_unbounded"): "peak_unbounded",
}


def _by_module(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["module"]].append(r)
    return out


def _totals(sc: Scope) -> dict[str, dict[str, Any]]:
    cols = ", ".join(
        f"any_value(t.value) filter (where t.section = '{s}' and t.key = '{k}' and t.color is null) as {c}, "
        f"bool_or(t.section = '{s}' and t.key = '{k}' and t.color is null) as has_{c}"
        for (s, k), c in _TOTALS.items())
    return {r["module"]: r for r in sc.arrow(
        f"select m.module, {cols} from totals t join @modmap m using (file_id) group by m.module").to_pylist()}


def _counts(sc: Scope) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for t in ("live_ranges", "peak", "memory_report", "instructions"):
        for mod, c in sc.rows(f'select m.module, count(*) from "{t}" x join @modmap m using (file_id) group by all'):
            out[mod][t] = c
    return out


def _spaces(sc: Scope) -> dict[str, list[dict[str, Any]]]:
    """Allocated bytes per module and memory space, by category."""
    cats = ", ".join(f"coalesce(sum(size::hugeint) filter (where category = '{c}'), 0)::bigint as \"{c}\""
                     for c in CATEGORIES)
    rows = sc.arrow(f"""
        select module, color, sum(size::hugeint)::bigint as allocated_bytes, count(*)::bigint as allocations, {cats}
        from @alloc group by module, color order by module, color""").to_pylist()
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["module"]].append({"color": r["color"], "allocated_bytes": r["allocated_bytes"],
                                 "allocations": r["allocations"], "by_category": {c: r[c] for c in CATEGORIES}})
    return out


def _report_spaces(sc: Scope) -> dict[str, list[dict[str, Any]]]:
    """Per module and memory space: the total a memory-usage report states (``Total bytes: N``),
    for modules whose dump has the report but no buffer assignment."""
    rows = sc.arrow("""
        with rep as (select m.module, t.color, max(t.value) as total from totals t join @modmap m using (file_id)
                     where t.section = 'memory_report' and t.key = 'total_bytes' and t.color is not null group by all),
             n as (select m.module, r.color, count(*) as n from memory_report r join @modmap m using (file_id)
                   where r.row_kind = 'allocation' group by all)
        select rep.module, rep.color, rep.total::bigint as total, n.n
        from rep left join n using (module, color)
        where rep.module not in (select module from @alloc) order by rep.module, rep.color""").to_pylist()
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        # the report gives no categories: by_category is null per category (not zero)
        out[r["module"]].append({"color": r["color"], "allocated_bytes": r["total"],
                                 "allocations": r["n"], "by_category": {c: None for c in CATEGORIES},
                                 "from": "memory_report"})
    return out


def _peaks(sc: Scope) -> dict[str, dict[str, Any]]:
    """Per module with a peak list: its step, bytes, bytes by category and by memory space (in
    the order they first appear in the list), the instruction at that step."""
    head = {r["module"]: r for r in sc.arrow("""
        with sched as (select * from @sched),
             p as (select module, min_by(time, rank) as t, sum(listed_bytes)::bigint as bytes
                   from @peak_buffers group by module)
        select p.module, p.t, p.bytes, sched.instruction
        from p left join sched on sched.module = p.module and sched.position = p.t""").to_pylist()}
    # the listed bytes (as printed) by category and space: they sum to the headline (issue 51:
    # the value bytes of a tuple listed by name are not the figure the list adds up)
    by_cat = _by_module(sc.arrow("""
        select module, category, sum(listed_bytes)::bigint as bytes from @peak_buffers
        group by module, category order by module, min(rank)""").to_pylist())
    by_color = _by_module(sc.arrow("""
        select module, color, sum(listed_bytes)::bigint as bytes from @peak_buffers
        group by module, color order by module, min(rank)""").to_pylist())
    for k, h in head.items():
        h["by_category"] = {r["category"]: r["bytes"] for r in by_cat.get(k, [])}
        h["by_color"] = {str(r["color"]): r["bytes"] for r in by_color.get(k, [])}
    return head


def _timelines(sc: Scope) -> dict[str, dict[str, Any]]:
    """Per module with a timeline: steps, the first step with the most live bytes, and per
    memory space its most live bytes against what it allocates."""
    sched_sql = "sched as (select * from @sched)"
    heads = {r["module"]: r for r in sc.arrow(f"""
        with {sched_sql}
        , main as (select module, step, sum(logical_bytes::hugeint) as logical_bytes from @tl_sparse
                   where color = 0 group by all)
        select x.module, n.n, x.step, x.bytes,
               coalesce(mt.logical_bytes, t.logical_bytes)::bigint as logical_bytes, sched.instruction
        from @tl_max x join @tl_n n using (module)
        join @tl_total t on t.module = x.module and t.step = x.step
        left join main mt on mt.module = x.module and mt.step = x.step
        left join sched on sched.module = x.module and sched.position = x.step""").to_pylist()}
    spaces = _by_module(sc.arrow(f"""
        with {sched_sql},
             cap as (select module, coalesce(color, 0) as color, sum(size::hugeint)::bigint as cap
                     from @alloc where not is_thread_local group by all),
             byc as (select module, color, step, sum(bytes::hugeint) as b, sum(logical_bytes::hugeint) as l
                     from @tl_sparse group by all),
             best as (select module, color, min(step) filter (where b = mb) as step, any_value(mb) as live
                      from (select *, max(b) over (partition by module, color) as mb from byc) group by all),
             colors as (select module, color from cap where module in (select module from @tl_n)
                        union select module, color from best)
        select c.module, c.color, coalesce(cap.cap, 0) as cap, best.step, best.live::bigint as live,
               byc.l::bigint as logical, sched.instruction
        from colors c left join cap using (module, color) left join best using (module, color)
        left join byc on byc.module = c.module and byc.color = c.color and byc.step = best.step
        left join sched on sched.module = c.module and sched.position = best.step
        order by c.module, c.color""").to_pylist())
    names = {(r["module"], r["color"]): r["memory_space"] for r in sc.get("spaces").to_pylist()}
    out = {}
    for key, h in heads.items():
        rows = []
        for r in spaces.get(key, []):
            r["memory_space"] = names.get((key, r["color"]), f"color {r['color']}")
            cap = int(r["cap"])
            if r["step"] is None:
                rows.append({"color": r["color"], "memory_space": r["memory_space"], "allocated_bytes": cap,
                             "max_live_bytes": 0, "step": None,
                             "instruction": None, "free_bytes": cap, "fragmentation": 1.0 if cap else None,
                             "logical_bytes": 0, "padding_bytes": 0})
                continue
            live, lg = int(r["live"]), int(r["logical"] or 0)
            rows.append({"color": r["color"], "memory_space": r["memory_space"], "allocated_bytes": cap,
                         "max_live_bytes": live, "step": int(r["step"]),
                         "instruction": r["instruction"], "free_bytes": cap - live if cap else None,
                         "fragmentation": round((cap - live) / cap, 6) if cap else None,
                         "logical_bytes": lg, "padding_bytes": live - lg})
        out[key] = {"steps": int(h["n"]) + 1, "max_allocated_bytes": int(h["bytes"]),
                    "memory_space": names.get((key, 0), "main"),
                    "max_allocated_step": int(h["step"]), "max_allocated_instruction": h["instruction"],
                    "max_logical_bytes": int(h["logical_bytes"]), "memory_spaces": rows}
    return out


def _padding(sc: Scope) -> dict[str, dict[str, int]]:
    """Allocated vs logical bytes per module, summed per value (a slice that several values share
    counts once per value: that is the padding of each value), and ``occupied_bytes``: the bytes
    of allocations that hold any value, each byte once (the union of the slices)."""
    return {r["module"]: r for r in sc.arrow("""
        with per_value as (
                 select module, coalesce(sum(size::hugeint), 0)::bigint as allocated_bytes,
                        coalesce(sum(logical_bytes::hugeint), 0)::bigint as logical_bytes, count(*)::bigint as "values"
                 from @buffers group by module),
             sl as (select distinct module, allocation, "offset" as lo, "offset" + size as hi
                    from @buffers where allocation is not null and size > 0),
             run as (select *, max(hi) over (partition by module, allocation order by lo, hi
                                             rows between unbounded preceding and 1 preceding) as prev_hi
                     from sl),
             isl as (select *, sum(case when prev_hi is null or lo > prev_hi then 1 else 0 end)
                                   over (partition by module, allocation order by lo, hi rows unbounded preceding) as g
                     from run),
             occ as (select module, sum(w)::bigint as occupied_bytes
                     from (select module, max(hi) - min(lo) as w from isl group by module, allocation, g)
                     group by module)
        select p.*, coalesce(o.occupied_bytes, 0) as occupied_bytes
        from per_value p left join occ o using (module)""").to_pylist()}


def _top(sc: Scope, top: int) -> dict[str, list[dict[str, Any]]]:
    if top <= 0:
        return {}
    # at the peak in use of the main memory (what the headline says); a module without live
    # ranges but with XLA's list (no timeline) keeps the listed buffers
    return _by_module(sc.arrow(f"""
        with used as (select module, rank, buffer, bytes, bytes as allocated_bytes, shape, category, allocation,
                             color, opcode, op_name, source, 'peak in use' as at
                      from @in_use_buffers where rank < {int(top)})
        select * from used
        union all
        select module, rank, buffer, bytes, allocated_bytes, shape, category, allocation, color, opcode,
               op_name, source, 'listed peak' as at
        from @peak_buffers where rank < {int(top)} and module not in (select module from @in_use_buffers)
        order by module, rank""").to_pylist())


def _what_it_has(has: dict[str, int]) -> list[str]:
    """Notes on what a module's files can and cannot show."""
    notes = []
    if not has.get("allocations"):
        if has.get("live_ranges") or has.get("peak"):
            notes.append("live-range file only: XLA's peak list and live ranges are shown; allocation totals, "
                         "memory_analysis and the by-slice timeline need the module's *-buffer-assignment.txt")
        elif has.get("memory_report"):
            notes.append("memory-usage report only: its totals per memory space are shown; the peak and timeline "
                         "need the module's *-buffer-assignment.txt and live-range files")
        elif has.get("instructions"):
            notes.append(f"HLO text only ({has['instructions']:,} instructions): no memory figures; they need the "
                         "module's *-buffer-assignment.txt (and live-range file) from the same dump")
        else:
            notes.append("no buffer assignment (allocations) in the dump for this module")
    return notes


@checked_analysis
def summary(dump: "Dump", module: ModuleSel = None, top: int = 10, cost: bool = True) -> list[dict[str, Any]]:
    """A plain-data (JSON-ready) summary per module: totals by memory space and category, jax's
    ``memory_analysis`` figures, the peaks (``peak``: XLA's listed peak, with its step and
    bytes by category; ``timeline``: the peak in use, by slice; compared in ``peak_check``; the
    three peaks side by side under their names in ``peaks``: ``peak_in_use``,
    ``xla_listed_peak``, ``jax_peak_memory_in_bytes``),
    fragmentation and padding at the peak per memory space, the top buffers at the peak with
    their source, notes on what the dump lacks, and ``cost_analysis`` (jax's
    ``Compiled.cost_analysis()`` figures from the HLO text, ``analysis.cost``; None without it).
    ``cost=False`` leaves ``cost_analysis`` out (None): the memory figures alone cost about a
    read of the dump, XLA's cost rules as much again (they visit every instruction).
    ``advice``: the first ``ADVICE_IN_SUMMARY`` rows of :func:`hlodump.analysis.advice` for the
    module (what to change, cheapest first, with the bytes it frees), ``n_advice`` how many it
    has; ``framework``: ``jax``, ``tensorflow``, ``pytorch/xla`` or None, by the module's name."""
    sc = scope_of(dump, module)
    key = ("summary", int(top), bool(cost))
    hit = sc.cache.get(key)
    if hit is None:
        hit = _summary(sc, top)
        for s in hit:
            s["cost_analysis"] = None
            s["cost_note"] = None
        if hit and cost:
            from .cost import cost_analysis

            costs = {r["module"]: r for r in cost_analysis(dump, sc.keys)}
            for s in hit:
                c = costs.get(s["module"]) or {}
                s["cost_analysis"] = c.get("cost_analysis")
                if c.get("note"):
                    s["notes"].append(c["note"])
                    if s["cost_analysis"] is None:
                        s["cost_note"] = c["note"]  # why there is no figure (the text says it)
        _attach_advice(dump, sc, hit)
        sc.cache[key] = hit
    return [dict(s) for s in hit]


#: Advice lines a summary carries per module (``advice(d)`` has them all).
ADVICE_IN_SUMMARY = 5


def _attach_advice(dump: "Dump", sc: Scope, hit: list[dict[str, Any]]) -> None:
    """Each module's first ``ADVICE_IN_SUMMARY`` rows of ``advice`` (cheapest first), as
    ``advice`` (a list of dicts), and ``n_advice``: one query for all modules."""
    from .advice import advice

    rows = _by_module(advice(dump, sc.keys).to_pylist()) if hit else {}
    for s in hit:
        mine = rows.get(s["module"], [])
        s["advice"] = [{k: v for k, v in r.items() if k not in ("module", "module_name")}
                       for r in mine[:ADVICE_IN_SUMMARY]]
        s["n_advice"] = len(mine)


def _summary(sc: Scope, top: int) -> list[dict[str, Any]]:
    if not sc.mods:
        return []
    totals, counts, spaces, report = _totals(sc), _counts(sc), _spaces(sc), _report_spaces(sc)
    mas = memory_analysis_by_module(sc)
    pks, timelines, checks = _peaks(sc), _timelines(sc), peak_checks(sc)
    pads, tops = _padding(sc), _top(sc, top)
    out = [_one(m, totals.get(m.key, {}), counts.get(m.key, {}), spaces.get(m.key) or report.get(m.key, []),
                mas.get(m.key),
                pks.get(m.key), timelines.get(m.key), checks.get(m.key), pads.get(m.key), tops.get(m.key, []))
           for m in sc.mods]
    plat = {r["module"]: r["platform"] for r in sc.get("platform").to_pylist()} if sc.eng.has("allocations") else {}
    why = memory_analysis_notes(sc) if sc.eng.has("allocations") else {}
    for s in out:
        s["platform"] = plat.get(s["module"], "unknown")
        if s["memory_analysis"] is not None:
            s["notes"].extend(f"jax's {w}" for w in why.get(s["module"], []))
        s["peaks"] = peaks(s)
    return out


def _one(m: Module, tot: dict[str, Any], counts: dict[str, int], spaces: list[dict[str, Any]],
         ma: Optional[dict[str, int]], pk: Optional[dict[str, Any]], tl: Optional[dict[str, Any]],
         check: Optional[dict[str, Any]], pad: Optional[dict[str, Any]], top_rows: list[dict[str, Any]]) -> dict[str, Any]:
    from_report = any(sp.get("from") == "memory_report" for sp in spaces)
    n_alloc = 0 if from_report else sum(sp["allocations"] for sp in spaces)
    total_alloc = sum(sp["allocated_bytes"] for sp in spaces)
    notes = _what_it_has(dict(counts, allocations=n_alloc))
    stated_total = tot.get("stated_total")
    if n_alloc and stated_total is not None and stated_total != total_alloc:
        notes.append(f"sum of allocation sizes {total_alloc} != 'Total bytes used' {stated_total}")
    peak: dict[str, Any] = {}
    if pk:
        peak = {"step": pk["t"], "instruction": pk["instruction"], "bytes": pk["bytes"],
                "stated": tot.get("peak_time") is not None,
                "by_category": pk["by_category"], "by_color": pk["by_color"],
                "stack_trace_total": tot.get("stack_trace_total")}
    if check is not None:
        notes.extend(check["explanations"])
    if tot.get("has_not_available"):
        notes.append("HloLiveRange not available in this dump: no timeline, no peak list")
    elif tl is None and n_alloc:
        notes.append("no live ranges in the dump: totals and allocations only (no timeline, no peak)")
    if tot.get("has_peak_unbounded"):
        notes.append("XLA could not determine the peak (unbounded dynamic shape)")
    pad = pad or {"allocated_bytes": 0, "logical_bytes": 0, "values": 0, "occupied_bytes": 0}
    return {
        "module": m.key, "module_name": m.name, "module_id": m.module_id, "dump": m.dump,
        "framework": framework(m.name),
        "total_bytes": total_alloc if n_alloc else (stated_total if stated_total is not None
                                                    else tot.get("report_total") if tot.get("report_total") is not None
                                                    else total_alloc if from_report else None),
        "total_bytes_stated": stated_total,
        "allocations": n_alloc,
        "by_category": {c: None if from_report else sum(sp["by_category"][c] for sp in spaces) for c in CATEGORIES},
        "memory_analysis": ma,
        "memory_spaces": spaces,
        "peak": peak or None,
        "timeline": tl or None,
        "peak_check": check,
        "top_buffers": [{k: v for k, v in r.items() if k != "module"} for r in top_rows],
        "padding": {"allocated_bytes": int(pad["allocated_bytes"]), "logical_bytes": int(pad["logical_bytes"]),
                    "padding_bytes": int(pad["allocated_bytes"]) - int(pad["logical_bytes"]),
                    "values": int(pad["values"]), "counted": "per value",
                    "occupied_bytes": int(pad.get("occupied_bytes") or 0)},
        "notes": notes,
    } | {"peaks": None}


@checked_analysis
def peak_check(dump: "Dump", module: ModuleSel = None) -> list[dict[str, Any]]:
    """Per module with a ``Live ranges at T (peak)`` list: that list compared with the values
    live at T by the dump's live ranges, and XLA's peak with the slice timeline's peak; where
    they differ, ``explanations`` say why with the values involved (see ``summary``)."""
    return [{"module": s["module"], **(s["peak_check"] or {})} for s in summary(dump, module, top=0, cost=False)]


# --------------------------------------------------------------------------------- the peaks

def peaks(s: dict[str, Any]) -> dict[str, Any]:
    """The three peak figures of one module's summary, side by side, each under the one name
    every command and page uses for it (``docs/peaks.md``; None where the dump cannot
    give one):

    * ``peak_in_use`` (*peak in use*) — the most bytes live at one step, each allocation slice
      counted once (``timeline.max_allocated_bytes``), at ``peak_in_use_step``: what the
      module's buffers really occupy at their fullest. Never more than ``total_bytes``.
    * ``xla_listed_peak`` (*XLA's listed peak*) — the sum of XLA's ``Live ranges at T (peak)``
      list (``summary["peak"]["bytes"]``), at ``xla_listed_peak_step``: XLA's own measure,
      ByteSizeOf of each live value (in older XLA: of its instruction's whole shape), values
      that share one slice each counted, at the step XLA's rule picks. It can be more than the
      module allocates: ``xla_listed_peak_above_allocated`` is then true and
      ``units.XLA_PEAK_ABOVE_ALLOCATED`` says why.
    * ``jax_peak_memory_in_bytes`` (*jax's peak_memory_in_bytes*) — what jax's
      ``memory_analysis().peak_memory_in_bytes`` reports (CPU only): arguments + outputs −
      aliased + constants; temporaries are not part of it.

    Documented aliases (earlier names, same figures): ``live_by_slice`` / ``live_by_slice_step``
    = ``peak_in_use`` / ``peak_in_use_step``; ``xla_listed`` / ``xla_listed_step`` =
    ``xla_listed_peak`` / ``xla_listed_peak_step``.
    """
    tl, pk, ma = s.get("timeline") or {}, s.get("peak") or {}, s.get("memory_analysis") or {}
    in_use, in_use_step = tl.get("max_allocated_bytes"), tl.get("max_allocated_step")
    listed, listed_step = pk.get("bytes"), pk.get("step")
    total = s.get("total_bytes")
    return {"peak_in_use": in_use, "peak_in_use_step": in_use_step,
            "xla_listed_peak": listed, "xla_listed_peak_step": listed_step,
            "jax_peak_memory_in_bytes": ma.get("peak_memory_in_bytes"), "total_bytes": total,
            # the figure's name for this module's framework (TensorFlow, PyTorch/XLA: XLA's word)
            "jax_peak_memory_in_bytes_name": _peak_name(s),
            "xla_listed_peak_above_allocated": bool(listed is not None and total is not None and listed > total),
            # aliases (the names before issue 40)
            "live_by_slice": in_use, "live_by_slice_step": in_use_step,
            "xla_listed": listed, "xla_listed_step": listed_step}


def _peak_name(s: dict[str, Any]) -> str:
    from ..units import jax_peak_name

    return jax_peak_name(s.get("framework", framework(s.get("module_name"))))


def peak_bytes(s: dict[str, Any]) -> Optional[int]:
    """One module's figure for ranking (``--sort peak``): its peak in use, else XLA's listed
    peak, else the total allocated."""
    p = peaks(s)
    for k in ("peak_in_use", "xla_listed_peak", "total_bytes"):
        if p[k] is not None:
            return int(p[k])
    return None


def peak_story(s: dict[str, Any]) -> list[str]:
    """The peaks of one module in words, for the text summary (see ``peaks``)."""
    from ..units import PEAK_IN_USE, XLA_LISTED_PEAK, XLA_PEAK_ABOVE_ALLOCATED, jax_peak_name
    from .shapes import format_bytes as fb

    p = peaks(s)
    tl, pk = s.get("timeline") or {}, s.get("peak") or {}
    out = []
    if p["peak_in_use"] is not None:
        # the space named where it is not the only memory (TPU, GPU, several spaces)
        several = len(tl.get("memory_spaces") or []) > 1 or s.get("platform") in ("tpu", "gpu")
        space = f" ({tl.get('memory_space') or 'main'})" if several else ""
        out.append(f"{PEAK_IN_USE}{space}: {p['peak_in_use']:,} bytes ({fb(p['peak_in_use'])}) at step "
                   f"{p['peak_in_use_step']} ({tl.get('max_allocated_instruction')}) — the most bytes live at "
                   f"once, each allocation slice counted once (what the buffers occupy)")
    if p["xla_listed_peak"] is not None:
        st = pk.get("stack_trace_total")
        out.append(f"{XLA_LISTED_PEAK}: {p['xla_listed_peak']:,} bytes ({fb(p['xla_listed_peak'])}) at step "
                   f"{p['xla_listed_peak_step']} ({pk.get('instruction')}) — the sum of XLA's 'Live ranges at T "
                   f"(peak)' list: each live value's shape size, values sharing a slice counted again, padding "
                   f"not counted" + (f"; stack-trace total {st:,}" if st is not None else "")
                   + (f". It is more than the {fb(p['total_bytes'])} the module allocates: {XLA_PEAK_ABOVE_ALLOCATED}"
                      if p["xla_listed_peak_above_allocated"] else ""))
    if p["jax_peak_memory_in_bytes"] is not None:
        how = ("arguments + outputs − aliased + constants; temporaries not included on CPU"
               if s.get("platform") not in ("tpu", "gpu") else
               "the HBM held for the whole run (parameters, outputs, constants) plus the largest heap of "
               "temporaries in any one memory space, as XLA's heap simulator counts it")
        fw = s.get("framework", framework(s.get("module_name")))
        name = jax_peak_name(fw) + (" (memory_analysis())" if fw not in ("tensorflow", "pytorch/xla") else "")
        out.append(f"{name}: "
                   f"{p['jax_peak_memory_in_bytes']:,} bytes ({fb(p['jax_peak_memory_in_bytes'])}) — {how}")
    return out
