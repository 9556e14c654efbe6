"""What is live at *XLA's listed peak*: XLA's ``Live ranges at T (peak)`` list joined to buffer
assignment and the source, for every module at once; ``breakdown`` groups it.

XLA picks the moment T with whole-instruction shape sizes (a tuple-shaped fusion counts 8 bytes
per element there, not the elements' sizes), so T need not be the moment with the most live
bytes (the *peak in use*, each slice once); ``memory_timeline`` shows every step and ``summary``
reports both under those names (``summary.peaks``, ``docs/peaks.md``). When a module has live
ranges but no peak list, the list is made from the timeline at its maximum (logical bytes,
sorted by bytes then name like XLA).
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING, Optional, Union

import pyarrow as pa

from .buffers import norm_index
from .spaces import MAIN_COLOR
from .engine import Scope, derived
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["peak_buffers", "listed_peak_buffers", "breakdown"]


@derived("tl_max")
def _tl_max(sc: Scope) -> pa.Table:
    """Per module with a timeline: the first step with the most live bytes in the device's main
    memory (color 0: HBM on TPU and GPU, RAM on CPU) — the *peak in use*. Other memory spaces
    (on-chip VMEM/SMEM, pinned host) are separate memories: adding them would give a figure
    no memory holds. A module whose timeline has no color-0 buffer takes all its spaces."""
    return sc.arrow(f"""
        with main as (select distinct module from @tl_sparse where color = {MAIN_COLOR}),
             t as (select module, step, sum(bytes::hugeint) as bytes from @tl_sparse
                   where color = {MAIN_COLOR} or module not in (select module from main) group by all)
        select module, min(step) filter (where bytes = mb) as step, any_value(mb)::bigint as bytes
        from (select module, step, bytes, max(bytes) over (partition by module) as mb from t)
        group by module""")


@derived("peak_list")
def _peak_list(sc: Scope) -> pa.Table:
    """The peak list of every module: as the dump prints it, else from the timeline's maximum.
    ``by_name``: the row names its instruction only (XLA before 0.6 printed ``name: N bytes``,
    N the ByteSizeOf of the instruction's whole shape: 8 bytes per element of a tuple)."""
    return sc.arrow(f"""
        with listed as (
            select p.file_id, m.module, m.module_name, p.time, p.buffer::varchar as buffer,
                   p.instruction::varchar as instruction, {norm_index('p.shape_index')} as shape_index,
                   p.bytes, p.cumulative_bytes, p.line::bigint as ord,
                   coalesce(p.shape_index::varchar, '') = '' and p.cumulative_is_printed is not true as by_name
            from peak p join @modmap m using (file_id)),
        has as (select distinct module from listed),
        computed as (
            select b.file_id, b.module, b.module_name, t.step::int as time,
                   b.instruction || b.shape_index as buffer, b.instruction, b.shape_index,
                   b.logical_bytes as bytes,
                   sum(b.logical_bytes) over (partition by b.module order by b.logical_bytes desc, b.instruction,
                                              b.shape_index rows unbounded preceding)::bigint as cumulative_bytes,
                   row_number() over (partition by b.module order by b.logical_bytes desc, b.instruction,
                                      b.shape_index) as ord,
                   false as by_name
            from @buffers b join @tl_max t using (module)
            where b.module not in (select module from has) and b.start <= t.step and t.step <= b."end")
        select * from listed union all select * from computed""")


@derived("peak_buffers")
def _peak_buffers(sc: Scope) -> pa.Table:
    # A row listed by name is one value of its instruction: the k-th row of an instruction is
    # its k-th value (by value id: XLA's dataflow order) live at the peak step, so a tuple's
    # elements get their own shape index, size and category (the printed size is the whole
    # tuple's ByteSizeOf and stays in listed_bytes).
    return sc.arrow("""
        with p as (select *, row_number() over (partition by module, instruction order by ord) as k_name
                   from @peak_list),
        sched as (select * from @sched),
        bb as (select *, row_number() over (partition by module, instruction, shape_index order by value_id) as k
               from @buffers),
        named as (select distinct module, time from p where by_name),
        live as (select bb.*, row_number() over (partition by bb.module, bb.instruction order by bb.value_id) as k_live
                 from bb join named n on n.module = bb.module
                 where bb.k = 1 and bb.start <= n.time and n.time <= bb."end"),
        matched as (
            select p.*, coalesce(l.shape_index, p.shape_index) as si,
                   case when l.shape_index is not null then p.instruction || l.shape_index else p.buffer end
                       as shown,
                   coalesce(l.logical_bytes, p.bytes)::bigint as value_bytes
            from p left join live l on p.by_name and l.module = p.module and l.instruction = p.instruction
                                   and l.k_live = p.k_name),
        ranked as (
            select *, (row_number() over (partition by module order by value_bytes desc, ord) - 1)::int as rank
            from matched)
        select p.file_id, p.module, p.module_name, p.rank, p.time, sched.instruction as instruction_at_peak,
               p.shown as buffer, p.instruction, p.si as shape_index, p.value_bytes as bytes,
               case when p.by_name then sum(p.value_bytes) over (partition by p.module order by p.rank
                                                                rows unbounded preceding)::bigint
                    else p.cumulative_bytes end as cumulative_bytes,
               p.bytes as listed_bytes, p.by_name as listed_by_name,
               bb.value_id, bb.allocation, bb.color, coalesce(bb.category, 'unknown') as category,
               bb.size as allocated_bytes, bb.allocation_size, bb."offset", bb.shape,
               bb.opcode, bb.op_name, bb.source_file, bb.source_line, bb.source
        from ranked p
        left join bb on bb.module = p.module and bb.instruction = p.instruction
                    and bb.shape_index = p.si and bb.k = 1
        left join sched on sched.module = p.module and sched.position = p.time
    """)


@checked_analysis
def listed_peak_buffers(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """The buffers live at XLA's listed peak, as the dump lists them (``Live ranges at T (peak)``), by
    bytes descending then printed order (= printed order in newer XLA), joined to buffer assignment and the source.

    Columns: file_id, module, module_name, rank (0 = first printed), time (the peak step),
    instruction_at_peak (scheduled at that step), buffer (``name{index}``; as printed where the
    list prints the index), instruction, shape_index, bytes
    (the value's logical bytes, as printed by XLA 0.6 and later), cumulative_bytes, listed_bytes
    (as printed), listed_by_name (the list names instructions only: XLA before 0.6), value_id, allocation, color, category,
    allocated_bytes (the value's slice), allocation_size, offset, shape, opcode, op_name,
    source_file, source_line, source ("file:line").

    When the dump has live ranges but no peak list, the list is computed from the timeline at
    its maximum (logical bytes, sorted by bytes then name like XLA). No live ranges: no rows.
    """
    return scope_of(dump, module).arrow("select * from @peak_buffers order by module, rank")


def _space_filter(sc: Scope, memory_space: Union[None, int, str]) -> str:
    """SQL condition on ``color`` for a ``memory_space`` argument (see ``peak_buffers``)."""
    if memory_space is None:
        return f"color = {MAIN_COLOR}"
    if isinstance(memory_space, str) and memory_space.lower() == "all":
        return "true"
    if isinstance(memory_space, int) and not isinstance(memory_space, bool):
        return f"color = {int(memory_space)}"
    if isinstance(memory_space, str):
        want = memory_space.lower()
        rows = sc.get("spaces").to_pylist()
        colors = sorted({r["color"] for r in rows if want in (str(r["memory_space"]).lower(),
                                                               str(r["report_name"] or "").lower())})
        if not colors:
            names = sorted({str(r["memory_space"]) for r in rows})
            raise ValueError(f"memory_space={memory_space!r}: no such memory space in this dump "
                             f"(it has: {', '.join(names) or 'none'}; or a color number, or 'all')")
        return f"color in ({', '.join(str(c) for c in colors)})"
    raise TypeError(f"memory_space must be None, a color (int), a name (str) or 'all', not {memory_space!r}")


@checked_analysis
def peak_buffers(dump: "Dump", module: ModuleSel = None, step: Optional[int] = None,
                 memory_space: Union[None, int, str] = None) -> pa.Table:
    """The buffers live at the *peak in use* of a memory space (or at ``step``), for every
    module at once, largest first.

    ``memory_space``: None (the device's main memory, color 0: HBM on TPU and GPU), a color
    number, a name as the dump's memory-usage report or the summary calls it (``"vmem"``,
    ``"HBM"``, ``"host (pinned)"``) or ``"all"``. ``step``: a schedule step (the same for every
    module); None: each module's step with the most live bytes in that memory space (the first
    such step), which is what ``summary`` reports as the peak in use.

    One row per value live at the step (inclusive live ranges), in a slice of that space:
    module, module_name, step, instruction_at_step, memory_space, color, rank (0 = largest),
    buffer (``name{index}``), instruction, shape_index, bytes (the value's slice: what it
    occupies), logical_bytes (its shape's size), shares_slice (another live value is in the same
    slice: count the slice once), cumulative_bytes (running sum, each slice once), allocation,
    offset, category, shape, opcode, op_name, source_file, source_line, source. XLA's own
    ``Live ranges at T (peak)`` list: ``listed_peak_buffers``."""
    sc = scope_of(dump, module)
    if step is None and memory_space is None:
        return sc.arrow("select * from @in_use_buffers order by module, rank")
    where = _space_filter(sc, memory_space)
    at = (f"select distinct module, {int(step)}::bigint as step from @buffers" if step is not None else f"""
        select module, min(step) filter (where b = mb) as step
        from (select module, step, b, max(b) over (partition by module) as mb
              from (select module, step, sum(bytes::hugeint) as b from @tl_sparse where {where} group by all))
        group by module""")
    return sc.arrow(_live_sql(where, at))


# A module's main memory: color 0, or all of its spaces when it has no color-0 buffer (as @tl_max).
_MAIN = f"(color = {MAIN_COLOR} or module not in (select distinct module from @tl_sparse where color = {MAIN_COLOR}))"


@derived("in_use_buffers")
def _in_use_buffers(sc: Scope) -> pa.Table:
    """``peak_buffers`` of every module's main memory at its peak in use (``@tl_max``)."""
    return sc.arrow(_live_sql(_MAIN, "select module, step from @tl_max"))


def _live_sql(where: str, at: str) -> str:
    """The values live at each module's step of ``at`` (module, step) in the colors ``where``
    selects, largest first, each slice once in the running sum (``peak_buffers``' columns)."""
    return f"""
        with at_step as ({at}),
             sched as (select * from @sched),
             names as (select module, color, memory_space from @spaces),
             live as (select b.*, a.step from @buffers b join at_step a using (module)
                      where {where} and b.start <= a.step and a.step <= b."end"),
             ranked as (select *, count(*) over (partition by module, allocation, "offset", size) > 1 as shares_slice,
                               row_number() over (partition by module, allocation, "offset", size
                                                  order by value_id) = 1 as first_in_slice
                        from live),
             ordered as (select *, (row_number() over (partition by module order by size desc, instruction,
                                                       shape_index) - 1)::int as rank
                         from ranked)
        select o.module, o.module_name, o.step::int as step, sched.instruction as instruction_at_step,
               coalesce(n.memory_space, 'color ' || o.color::varchar) as memory_space, o.color, o.rank,
               o.instruction || o.shape_index as buffer, o.instruction, o.shape_index,
               o.size as bytes, o.logical_bytes, o.shares_slice,
               sum(case when o.first_in_slice then o.size else 0 end)
                   over (partition by o.module order by o.rank rows unbounded preceding)::bigint as cumulative_bytes,
               o.allocation, o."offset", o.category, o.shape, o.opcode, o.op_name,
               o.source_file, o.source_line, o.source
        from ordered o
        left join sched on sched.module = o.module and sched.position = o.step
        left join names n on n.module = o.module and n.color = o.color
        order by o.module, o.rank"""


_BREAKDOWN_KEYS = {"op_name": "op_name", "source": "source", "opcode": "opcode", "category": "category",
                   "instruction": "instruction"}


@checked_analysis
def breakdown(dump: "Dump", by: str = "op_name", module: ModuleSel = None) -> pa.Table:
    """XLA's listed peak grouped by ``op_name``, ``source`` (file:line), ``opcode``, ``category``
    or ``instruction``: module, key, bytes (logical, at XLA's listed peak), allocated_bytes,
    buffers (count), share (of the module's listed peak), sorted by bytes descending. Buffers without the attribute are
    grouped under key null."""
    if by not in _BREAKDOWN_KEYS:
        raise ValueError(f"by must be one of {sorted(_BREAKDOWN_KEYS)}")
    col = _BREAKDOWN_KEYS[by]
    return scope_of(dump, module).arrow(f"""
        select module, module_name, {col} as key, sum(bytes)::bigint as bytes,
               sum(allocated_bytes)::bigint as allocated_bytes, count(*)::bigint as buffers,
               sum(bytes) / sum(sum(bytes)) over (partition by module) as share
        from @peak_buffers group by module, module_name, {col} order by module, bytes desc, key nulls last
    """)
