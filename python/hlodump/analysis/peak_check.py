"""XLA's ``Live ranges at T (peak)`` list against the dump's live ranges and the slice timeline,
for every module with a peak list at once. Every difference is stated with the values involved.

The queries do the work over all live ranges (which values are live at T, XLA's own sizing rule
swept over the schedule); Python only words the differences, which are few per module.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Optional

import pyarrow as pa

from .buffers import norm_index
from .engine import Scope, derived

__all__ = ["peak_checks"]


@derived("pc_listed")
def _pc_listed(sc: Scope) -> pa.Table:
    """The printed peak list of modules with a timeline, in printed order, and each module's T
    (the stated peak time, else the list's first time)."""
    return sc.arrow(f"""
        with pk as (select m.module, p.instruction::varchar as instruction,
                           {norm_index('p.shape_index')} as si, coalesce(p.shape_index::varchar, '') as raw_si,
                           p.bytes, p.buffer::varchar as buffer, p.time, p.line
                    from peak p join @modmap m using (file_id)
                    where m.module in (select module from @tl_n)),
             stated as (select m.module, any_value(t.value) as v from totals t join @modmap m using (file_id)
                         where t.section = 'live_range' and t.key = 'peak_time' and t.color is null group by all),
             tt as (select module, coalesce(any_value(stated.v), min_by(time, line))::bigint as t
                    from pk left join stated using (module) group by module)
        select pk.*, tt.t from pk join tt using (module) order by module, line""")


@derived("pc_ranges")
def _pc_ranges(sc: Scope) -> pa.Table:
    """Per module with a check: every (instruction, shape index) with a live range, its first
    start and last end, and the size XLA's rule gives it (the printed size; else the value's
    or the instruction's ByteSizeOf, whichever the printed sizes follow)."""
    return sc.arrow(f"""
        with mods as (select distinct module, t from @pc_listed),
             rng as (select m.module, l.instruction::varchar as instruction, {norm_index('l.shape_index')} as si,
                            min(l.start)::bigint as s0, max(l."end")::bigint as e0
                     from live_ranges l join @modmap m using (file_id)
                     where m.module in (select module from mods) group by all),
             lb as (select module, instruction, si, arg_max(bytes, line) as bytes from @pc_listed group by all),
             vs as (select module, instruction, shape_index as si, arg_max(logical_bytes, value_id) as size
                    from @buffers where module in (select module from mods) group by all),
             isz as (select module, instruction, shape_bytes as size from @info1),
             votes as (select lb.module,
                              count(*) filter (where lb.si <> '{{}}' and lb.bytes = vs.size
                                               and lb.bytes is distinct from isz.size) as per_value,
                              count(*) filter (where lb.si <> '{{}}' and lb.bytes = isz.size
                                               and lb.bytes is distinct from vs.size) as per_instr
                       from lb left join vs using (module, instruction, si) left join isz using (module, instruction)
                       group by lb.module)
        select r.module, r.instruction, r.si, r.s0, r.e0, coalesce(v.per_value > v.per_instr, false) as by_value,
               coalesce(lb.bytes, case when coalesce(v.per_value > v.per_instr, false) then vs.size else isz.size end)
                   as size
        from rng r left join lb using (module, instruction, si) left join vs using (module, instruction, si)
        left join isz using (module, instruction) left join votes v using (module)""")


@derived("pc_sweep")
def _pc_sweep(sc: Scope) -> pa.Table:
    """XLA's measure swept over steps 0 … n+1: ByteSizeOf per live value, a value that ended at
    the step before still counted (``xla``; its end event sorts after the starts at a step), and
    the plain sum (``plain``). Per module: the first step with the most ``xla`` bytes (null when
    a size is unknown), and both sums at T and at the timeline's maximum."""
    return sc.arrow("""
        with r as (select r.*, n.n, greatest(r.s0, 0) as s from @pc_ranges r join @tl_n n using (module)),
             ev as (select module, s as step, size as dx, size as dp from r where size is not null
                    union all select module, least(e0 + 1, n + 1) + 1, -size, 0 from r where size is not null
                    union all select module, least(e0, n + 1) + 1, 0, -size from r where size is not null
                    union all select module, 0, 0, 0 from @tl_n),
             agg as (select module, step, sum(dx::hugeint) as dx, sum(dp::hugeint) as dp from ev group by all),
             run as (select a.module, a.step, sum(dx) over w as xla, sum(dp) over w as plain
                     from agg a window w as (partition by module order by step rows unbounded preceding)),
             cut as (select run.* from run join @tl_n n using (module) where run.step <= n.n + 1),
             best as (select module, min(step) filter (where xla = mx) as xla_t
                      from (select *, max(xla) over (partition by module) as mx from cut) group by module),
             known as (select module, bool_and(size is not null) as known from @pc_ranges group by module),
             tt as (select distinct module, t from @pc_listed),
             at_t as (select tt.module, c.xla as xla_at_t, c.plain as plain_at_t
                      from tt asof left join cut c on c.module = tt.module and tt.t >= c.step),
             bt as (select tt.module, tt.t, case when tt.t <= n.n then coalesce(o.bytes, 0) else 0 end as bytes_t
                    from tt join @tl_n n using (module)
                    asof left join @tl_total o on o.module = tt.module and tt.t >= o.step),
             smax as (select bt.module, case when bt.bytes_t = mx.bytes then bt.t else mx.step end as s_max,
                             bt.bytes_t, mx.bytes as max_bytes
                      from bt join @tl_max mx using (module)),
             at_s as (select s.module, c.plain as plain_at_smax
                      from smax s asof left join cut c on c.module = s.module and s.s_max >= c.step)
        select tt.module, tt.t, case when k.known then b.xla_t end as xla_t,
               a.xla_at_t::bigint as xla_at_t, a.plain_at_t::bigint as plain_at_t,
               s.s_max, s.bytes_t::bigint as bytes_t, s.max_bytes::bigint as max_bytes,
               x.plain_at_smax::bigint as plain_at_smax
        from tt left join best b using (module) left join known k using (module) left join at_t a using (module)
        left join smax s using (module) left join at_s x using (module)""")


def _group(t: pa.Table) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in t.to_pylist():
        out[r["module"]].append(r)
    return out


def _fmt_slice(alloc: Any, off: Any, size: Any) -> str:
    return (f"allocation {alloc} [{off}, {int(off) + int(size)})" if off is not None and size is not None
            else f"allocation {alloc}")


def _name(k: tuple[str, str]) -> str:
    return k[0] + (k[1] if k[1] != "{}" else "")


def peak_checks(sc: Scope) -> dict[str, dict[str, Any]]:
    """Per module key with a peak list and a timeline: the check (see ``summary``)."""
    listed_by = _group(sc.get("pc_listed"))
    if not listed_by:
        return {}
    live_at_t = _group(sc.arrow("""
        select r.module, r.instruction, r.si, r.s0, r.e0 from @pc_ranges r
        join (select distinct module, t from @pc_listed) tt using (module)
        where r.s0 <= tt.t and tt.t <= r.e0 order by r.module, r.instruction, r.si"""))
    ranges_listed = _group(sc.arrow("""
        select r.module, r.instruction, r.si, r.s0, r.e0 from @pc_ranges r
        semi join @pc_listed l using (module, instruction, si)"""))
    # the values named by the list or live at T: their slice (the last value of a name, as printed)
    slices = _group(sc.arrow("""
        with keys as (select module, instruction, si from @pc_listed
                      union select r.module, r.instruction, r.si from @pc_ranges r
                      join (select distinct module, t from @pc_listed) tt using (module)
                      where r.s0 <= tt.t and tt.t <= r.e0)
        select b.module, b.instruction, b.shape_index as si,
               arg_max(b.allocation, b.value_id) as allocation, arg_max(b."offset", b.value_id) as "offset",
               arg_max(b.size, b.value_id) as size, bool_or(b.allocation is not null) as any_alloc
        from @buffers b semi join keys k on k.module = b.module and k.instruction = b.instruction
                                          and k.si = b.shape_index
        group by all"""))
    by_value_of = dict(sc.rows("select distinct module, by_value from @pc_ranges"))
    sweep = {r["module"]: r for r in sc.get("pc_sweep").to_pylist()}
    out = {}
    for key, listed in listed_by.items():
        rng = {(r["instruction"], r["si"]): (r["s0"], r["e0"]) for r in ranges_listed.get(key, [])}
        live = live_at_t.get(key, [])
        rng.update({(r["instruction"], r["si"]): (r["s0"], r["e0"]) for r in live})
        sl = {(r["instruction"], r["si"]): r for r in slices.get(key, [])}
        out[key] = _check(listed, live, rng, sl, bool(by_value_of.get(key)), sweep[key])
    return out


def _check(listed: list[dict[str, Any]], live: list[dict[str, Any]], ranges: dict[tuple[str, str], tuple[int, int]],
           slices: dict[tuple[str, str], dict[str, Any]], sizes_by_value: bool,
           sw: dict[str, Any]) -> dict[str, Any]:
    t = int(sw["t"])
    rset = {(r["instruction"], r["si"]) for r in live}
    # Older XLA prints each value of the list by its instruction's name only (no shape index):
    # then the list and the live values are compared as counts per instruction.
    by_name = all(not r["raw_si"] for r in listed) and any(k[1] != "{}" for k in rset)
    lset = {(r["instruction"], r["si"]) for r in listed}
    lcount: Counter = Counter()
    rcount: Counter = Counter()
    if by_name:
        lcount = Counter(r["instruction"] for r in listed)
        rcount = Counter(k[0] for k in rset)
        diff_l = [(i, "{}") for i in sorted(lcount) if lcount[i] > rcount.get(i, 0)]
        diff_r = [(i, "{}") for i in sorted(rcount) if rcount[i] > lcount.get(i, 0)]
    else:
        diff_l = sorted(lset - rset)
        diff_r = sorted(rset - lset)
    only_listed = []
    for k in diff_l:
        if by_name:
            why = (f"listed {lcount[k[0]]} times, but {rcount.get(k[0], 0)} of its values have a BufferLiveRange "
                   f"covering step {t}")
        else:
            rg = ranges.get(k)
            why = (f"its BufferLiveRange is {rg[0]}-{rg[1]}, which does not cover step {t}" if rg
                   else "the dump has no BufferLiveRange for it")
        only_listed.append({"buffer": _name(k), "reason": why})
    only_live = []
    for k in diff_r:
        if by_name:
            why = f"{rcount[k[0]]} of its values are live at step {t} but XLA lists it {lcount.get(k[0], 0)} times"
        else:
            rg = ranges[k]
            why = f"live {rg[0]}-{rg[1]} but not printed in XLA's list"
        only_live.append({"buffer": _name(k), "reason": why})
    explanations = [f"{x['buffer']}: {x['reason']}" for x in only_listed + only_live]

    # values listed at T that share one slice: XLA counts each, the timeline counts the slice once
    if by_name:  # each listed line is one value of that instruction: take the live values
        lbytes = {r["instruction"]: int(r["bytes"]) for r in listed}
        lvalues = [(k, lbytes[k[0]], _name(k)) for k in sorted(rset) if k[0] in lbytes]
    else:
        lvalues = [((r["instruction"], r["si"]), int(r["bytes"]), r["buffer"]) for r in listed]
    shared: dict[tuple[Any, Any, Any], list[str]] = {}
    resized = []
    for k, nbytes, bname in lvalues:
        b = slices.get(k)
        if b is None or b["allocation"] is None:
            continue
        shared.setdefault((b["allocation"], b["offset"], b["size"]), []).append(bname)
        if b["size"] is not None and nbytes != int(b["size"]):
            resized.append(f"{bname} listed with {nbytes:,} bytes (ByteSizeOf its "
                           f"{'shape' if sizes_by_value else 'instruction' + chr(39) + 's shape'}), "
                           f"its slice holds {int(b['size']):,}")
    dup = [(s, names) for s, names in shared.items() if len(names) > 1]
    dup_bytes = sum(int(s[2]) * (len(names) - 1) for s, names in dup)

    def names_of(names: list[str]) -> str:
        c = Counter(names)
        return ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in c.items())

    if dup:
        desc = "; ".join(f"{names_of(names)} share {_fmt_slice(*s)}" for s, names in dup[:8])
        more = f" … ({len(dup) - 8} more slices)" if len(dup) > 8 else ""
        explanations.append(f"at step {t} XLA lists {len(listed)} values, {sum(len(v) for _, v in dup)} of which share "
                            f"{len(dup)} allocation slices ({dup_bytes:,} bytes counted more than once): {desc}{more}")
    if resized:
        explanations.append(f"{len(resized)} listed sizes differ from the value's slice: " + "; ".join(resized[:8])
                            + (f" … ({len(resized) - 8} more)" if len(resized) > 8 else ""))
    s_max, bytes_t, max_bytes = int(sw["s_max"]), int(sw["bytes_t"]), int(sw["max_bytes"])
    xla_t: Optional[int] = None if sw["xla_t"] is None else int(sw["xla_t"])
    if s_max != t:
        msg = (f"the most live bytes by allocation slice are at step {s_max} ({max_bytes:,} bytes), not at XLA's "
               f"step {t} ({bytes_t:,} bytes)")
        what = "its value's shape" if sizes_by_value else "its instruction's whole shape"
        if xla_t is not None:
            msg += (f"; XLA's sizes (ByteSizeOf {what}, every value counted even when values share a slice) sum to "
                    f"{int(sw['plain_at_t'] or 0):,} at step {t} and {int(sw['plain_at_smax'] or 0):,} at step {s_max}")
        if xla_t is not None and xla_t == t:
            msg += (f"; XLA's step is reproduced by its rule: the most of those sums, counting a value that ended "
                    f"at the step before as still live ({int(sw['xla_at_t'] or 0):,} at step {t})")
        explanations.append(msg)
    return {
        "step": t,
        "listed": len(listed),
        "listed_by_name_only": by_name,
        "listed_bytes": sum(int(r["bytes"]) for r in listed),
        "live_at_step": len(rset),
        "same_set": not only_listed and not only_live,
        "only_listed": only_listed,
        "only_live": only_live,
        "slice_bytes_at_step": bytes_t,
        "max_step": s_max,
        "max_bytes": max_bytes if s_max != t else bytes_t,
        "xla_rule_step": xla_t,
        "xla_rule_reproduced": (xla_t == t) if xla_t is not None else None,
        "xla_sizes": "value" if sizes_by_value else "instruction",
        "explanations": explanations,
    }
