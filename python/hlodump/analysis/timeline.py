"""Live bytes over program order, counted by allocation slice, for every module at once.

A byte of an allocation is live at a step when some value assigned to a slice covering it
(``assignments``: allocation, offset, size) is live then (``live_ranges``, inclusive). Values
that share a slice (aliases: a while loop's state, a bitcast, a tuple element and the value it
forwards) count once; partly overlapping slices count their union. So at every step the live
bytes of an allocation are at most its size, and per memory space at most what it allocates.

How it is computed (all modules in a few queries, no loop over modules or values):

1. *Segments.* The slice bounds of an allocation cut its address range into elementary
   segments; a slice covers the run of segments between its bounds (``@tl_cover``).
2. *Islands.* A segment is live whenever a value of a covering slice is: the values' live
   ranges merged per segment (gaps and islands: a new island starts where a range begins after
   the running end + 1).
3. *Events.* Each island adds the segment's width at its start and removes it after its end
   (``@tl_events``, per module, memory space, category and step); the logical bytes of a segment
   are its width × the largest logical/allocated ratio of its covering slices (a slice's logical
   bytes: the largest logical size of the values in it, never more than the slice).
4. *Running sums.* Live bytes are the running sum of the events. They change only at event
   steps, so maxima and the value at a given step are read off the sparse running sums
   (``@tl_sparse``, ``@tl_total``); ``memory_timeline`` expands them to every step.

A module has a timeline when at least one of its values has a live range; its steps are
0 … n with n the largest of ``HloLiveRange (max N)``, the schedule length and the last live
range end.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING

import pyarrow as pa

from .engine import Scope, derived
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["memory_timeline"]


@derived("sched")
def _sched(sc: Scope) -> pa.Table:
    """The instruction scheduled at each step of each module (``schedule``)."""
    return sc.arrow("""
        select m.module, s.position, any_value(s.instruction)::varchar as instruction
        from schedule s join @modmap m using (file_id) group by all""")


@derived("tl_rows")
def _tl_rows(sc: Scope) -> pa.Table:
    """Values with a live range, with their slice and the slice's share of logical bytes."""
    return sc.arrow("""
        select module, allocation, coalesce("offset", 0)::bigint as off, coalesce(size, 0)::bigint as sz,
               coalesce(color, 0)::int as color, coalesce(category, 'unknown') as category,
               case when logical_bytes is null then coalesce(size, 0)
                    else least(logical_bytes, coalesce(size, 0)) end::bigint as lg,
               start::bigint as s, "end"::bigint as e
        from @buffers where start is not null and "end" is not null""")


@derived("tl_n")
def _tl_n(sc: Scope) -> pa.Table:
    """The last step of every module with a timeline."""
    return sc.arrow("""
        with mx as (select m.module, max(t.value) as v from totals t join @modmap m using (file_id)
                    where t.section = 'live_range' and t.key = 'max' group by all),
             np as (select m.module, max(s.position) + 1 as v from schedule s join @modmap m using (file_id)
                    group by all),
             last as (select module, max(e) as v from @tl_rows group by module)
        select last.module, greatest(coalesce(mx.v, 0), coalesce(np.v, 0), last.v, 0)::bigint as n
        from last left join mx using (module) left join np using (module)""")


@derived("tl_cover")
def _tl_cover(sc: Scope) -> pa.Table:
    """(module, allocation, segment k) → each covering slice, with the segment's bounds."""
    return sc.arrow("""
        with sl as (select module, allocation, off, sz, any_value(color) as color,
                           any_value(category) as category, max(lg) as lg
                    from @tl_rows group by module, allocation, off, sz),
             b as (select distinct module, allocation, x from (
                       select module, allocation, off as x from sl
                       union all select module, allocation, off + sz as x from sl)),
             seg as (select module, allocation, x as lo,
                            lead(x) over (partition by module, allocation order by x) as hi,
                            row_number() over (partition by module, allocation order by x) as k
                     from b),
             sk as (select sl.*, s0.k as k0, s1.k as k1
                    from sl join seg s0 on s0.module = sl.module and s0.allocation is not distinct from sl.allocation
                                          and s0.lo = sl.off
                            join seg s1 on s1.module = sl.module and s1.allocation is not distinct from sl.allocation
                                          and s1.lo = sl.off + sl.sz),
             c as (select module, allocation, off, sz, color, category, lg, unnest(range(k0, k1)) as k from sk)
        select c.module, c.allocation, c.k, seg.lo, seg.hi, c.off, c.sz, c.color, c.category, c.lg
        from c join seg on seg.module = c.module and seg.allocation is not distinct from c.allocation
                         and seg.k = c.k""")


@derived("tl_events")
def _tl_events(sc: Scope) -> pa.Table:
    """Per module, memory space, category and step: bytes (and logical bytes) that become live
    (positive) or stop being live (negative) there."""
    return sc.arrow("""
        with segs as (select module, allocation, k, any_value(color) as color, any_value(category) as category,
                             any_value(hi - lo) as width,
                             max(case when sz > 0 then lg::double / sz else 0 end) as ratio
                      from @tl_cover group by module, allocation, k),
             iv as (select c.module, c.allocation, c.k, r.s, r.e
                    from @tl_cover c join @tl_rows r
                      on r.module = c.module and r.allocation is not distinct from c.allocation
                         and r.off = c.off and r.sz = c.sz),
             ivo as (select *, max(e) over (partition by module, allocation, k order by s, e
                                            rows between unbounded preceding and 1 preceding) as prev_e
                     from iv),
             isl as (select *, sum(case when prev_e is null or s > prev_e + 1 then 1 else 0 end)
                                   over (partition by module, allocation, k order by s, e
                                         rows unbounded preceding) as g
                     from ivo),
             merged as (select module, allocation, k, min(s) as s, max(e) as e from isl
                        group by module, allocation, k, g),
             clipped as (select m.module, s.color, s.category, s.width, s.width * s.ratio as lw,
                                greatest(m.s, 0) as s, least(m.e, n.n) as e
                         from merged m join segs s using (module, allocation, k) join @tl_n n using (module)),
             ev as (select module, color, category, s as step, width as db, lw as dl from clipped where s <= e
                    union all
                    select module, color, category, e + 1 as step, -width as db, -lw as dl from clipped where s <= e)
        select module, color, category, step, sum(db)::hugeint as db, sum(dl) as dl
        from ev group by all""")


@derived("tl_groups")
def _tl_groups(sc: Scope) -> pa.Table:
    """(module, memory space, category) of every covered segment: the series of the timeline."""
    return sc.arrow("select distinct module, color, category from @tl_cover")


@derived("tl_sparse")
def _tl_sparse(sc: Scope) -> pa.Table:
    """Live bytes per series at every step of its module where some series changes (and step 0):
    between two such steps nothing changes."""
    return sc.arrow("""
        with steps as (select module, step from @tl_events join @tl_n using (module) where step <= n
                       union select module, 0 from @tl_n),
             grid as (select g.module, g.color, g.category, s.step
                      from @tl_groups g join steps s using (module)),
             run as (select grid.module, grid.color, grid.category, grid.step,
                            sum(coalesce(ev.db, 0)) over w as b, sum(coalesce(ev.dl, 0)) over w as l
                     from grid left join @tl_events ev
                       on ev.module = grid.module and ev.color = grid.color and ev.category = grid.category
                          and ev.step = grid.step
                     window w as (partition by grid.module, grid.color, grid.category order by grid.step
                                  rows unbounded preceding))
        select module, color, category, step, b::bigint as bytes,
               least(round_even(l, 0)::hugeint, b)::bigint as logical_bytes
        from run""")


@derived("tl_total")
def _tl_total(sc: Scope) -> pa.Table:
    """Live bytes of each module (all series) at each of its event steps."""
    return sc.arrow("""
        select module, step, sum(bytes::hugeint) as bytes, sum(logical_bytes::hugeint) as logical_bytes
        from @tl_sparse group by module, step""")


@checked_analysis
def memory_timeline(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Live bytes at every schedule step (0 … max), per module, memory space (color) and
    category, from ``live_ranges`` × allocation slices (``assignments``) × allocation flags.

    Columns: module, module_name, step, instruction (scheduled at that step; null at ``max``),
    color, category, bytes (live bytes counted by allocation slice: values sharing a slice at
    a step count once, so per color this never exceeds what the module allocates in that
    color), logical_bytes (the unpadded size of those slices' contents: the largest logical
    shape size of the values in each slice). Live ranges are inclusive. Modules without live
    ranges give no rows. Values of thread-local allocations (in called computations) have no
    live range in the dump and so never appear.
    """
    sc = scope_of(dump, module)
    return sc.arrow("""
        with names as (select distinct module, module_name from @modmap),
             sched as (select * from @sched),
             grid as (select g.module, g.color, g.category, unnest(range(0, n.n + 1)) as step
                      from @tl_groups g join @tl_n n using (module))
        select grid.module, names.module_name, grid.step::int as step, sched.instruction,
               grid.color::int as color, grid.category, sp.bytes, sp.logical_bytes
        from grid
        asof join @tl_sparse sp on sp.module = grid.module and sp.color = grid.color
                                and sp.category = grid.category and grid.step >= sp.step
        join names on names.module = grid.module
        left join sched on sched.module = grid.module and sched.position = grid.step
        order by grid.module, grid.color, grid.step, grid.category""")
