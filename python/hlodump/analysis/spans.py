"""Buffer spans: every buffer as a bar over program order, at its address in its memory space
(the data of the report's memory viewer and of ``hlodump plot --buffers``).

One row per value of buffer assignment that has a live range, for every selected module in one
query: where it sits (memory space, allocation, ``slice_offset`` in the allocation and an
``address`` in the space: the space's allocations laid end to end in allocation order, then the
slice's offset), how big it is, when it is live (``first_step`` … ``last_step``, inclusive, as
``live_ranges`` says), and who made and uses it (the defining instruction, its opcode, shape,
op_name and source line, the instruction's operands from the HLO text, the users buffer assignment
lists for the value, else the HLO text's users of the instruction).

How it adds up (what the tests check): per memory space and step, the union of the byte ranges
``[address, address + size)`` of the spans live at that step is ``memory_timeline``'s live bytes
of that space at that step (values that share a slice overlap exactly; ``shares_slice`` marks
them); the spans live at the peak in use are ``peak_buffers``' rows.

Column names avoid ``offset`` and ``end`` (which DuckDB makes you quote).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pyarrow as pa

from .._typing import checked_analysis
from .buffers import norm_index
from .engine import Scope, derived
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["buffer_spans", "SPAN_COLUMNS"]

#: The columns of ``buffer_spans``, in order.
SPAN_COLUMNS: tuple[str, ...] = (
    "module", "module_name", "color", "memory_space", "rank", "value_id", "buffer", "instruction",
    "shape_index", "allocation", "category", "slice_offset", "address", "size", "logical_bytes",
    "shares_slice", "first_step", "last_step", "steps", "shape", "opcode", "op_name", "source",
    "operands", "users")


@derived("value_users")
def _value_users(sc: Scope) -> pa.Table:
    """Per module and value (instruction, shape index): the instructions buffer assignment lists
    as its uses (``values.uses``), distinct, in name order."""
    if not sc.eng.has("values") or "uses" not in sc.eng.d["values"].column_names:
        return pa.table({"module": pa.array([], pa.string()), "instruction": pa.array([], pa.string()),
                         "shape_index": pa.array([], pa.string()),
                         "users": pa.array([], pa.list_(pa.string()))})
    return sc.arrow(f"""
        with u as (select file_id, instruction::varchar as instruction,
                          {norm_index('shape_index::varchar')} as shape_index, unnest(uses) as u
                   from "values")
        select m.module, u.instruction, u.shape_index,
               list(distinct u.u.instruction::varchar order by u.u.instruction::varchar) as users
        from u join @modmap m using (file_id) group by all""")


@derived("hlo_edges")
def _hlo_edges(sc: Scope) -> pa.Table:
    """Per module: every operand edge of the after-optimizations HLO text (``src`` an operand
    of ``dst``), with the computation ``dst`` is in."""
    return sc.arrow("""
        with i as (select m.module, i.file_id, i.computation_id, i.name::varchar as dst,
                          unnest(i.operands)::varchar as src
                   from instructions i join @modmap m using (file_id) where m.is_hlo)
        select module, file_id, computation_id, src, dst from i""")


@derived("hlo_users")
def _hlo_users(sc: Scope) -> pa.Table:
    """Per module and instruction: its operands and its users in the HLO text."""
    return sc.arrow("""
        with ops as (select module, dst as instruction, list(distinct src order by src) as operands
                     from @hlo_edges group by all),
             us as (select module, src as instruction, list(distinct dst order by dst) as users
                    from @hlo_edges group by all)
        select coalesce(ops.module, us.module) as module, coalesce(ops.instruction, us.instruction) as instruction,
               ops.operands, us.users
        from ops full join us on ops.module = us.module and ops.instruction = us.instruction""")


@derived("spans")
def _spans(sc: Scope) -> pa.Table:
    return sc.arrow("""
        with base as (select module, allocation, color,
                             coalesce(sum(size) over (partition by module, color order by allocation
                                                      rows between unbounded preceding and 1 preceding), 0) as base
                      from @alloc),
             b as (select * from @buffers where start is not null and "end" is not null),
             sl as (select *, count(*) over (partition by module, allocation, "offset", size) > 1 as shares_slice
                    from b)
        select b.module, b.module_name, coalesce(b.color, 0)::int as color,
               coalesce(n.memory_space, 'color ' || coalesce(b.color, 0)::varchar) as memory_space,
               (row_number() over (partition by b.module, coalesce(b.color, 0)
                                   order by b.size desc, b.start, b.value_id) - 1)::int as rank,
               b.value_id, b.instruction || b.shape_index as buffer, b.instruction, b.shape_index,
               b.allocation, coalesce(b.category, 'unknown') as category,
               coalesce(b."offset", 0)::bigint as slice_offset,
               (coalesce(base.base, 0) + coalesce(b."offset", 0))::bigint as address,
               coalesce(b.size, 0)::bigint as size, b.logical_bytes, b.shares_slice,
               b.start::int as first_step, b."end"::int as last_step, (b."end" - b.start + 1)::int as steps,
               b.shape, b.opcode, b.op_name, b.source,
               h.operands, coalesce(vu.users, h.users) as users
        from sl b
        left join base on base.module = b.module and base.allocation = b.allocation
        left join @spaces n on n.module = b.module and n.color = coalesce(b.color, 0)
        left join @value_users vu on vu.module = b.module and vu.instruction = b.instruction
                                 and vu.shape_index = b.shape_index
        left join @hlo_users h on h.module = b.module and h.instruction = b.instruction""")


@checked_analysis
def buffer_spans(dump: "Dump", module: ModuleSel = None, top: Optional[int] = None) -> pa.Table:
    """Every buffer with a live range as a bar over program order (the memory viewer's data),
    for every module at once, sorted by module, memory space and address.

    Columns: module, module_name, color, memory_space (its name, as ``summary`` gives it), rank
    (0 = the largest buffer of its module and space), value_id, buffer (``name{index}``),
    instruction (the value's producer), shape_index, allocation, category, slice_offset (in the
    allocation), address (in the space: allocations end to end in allocation order, plus the
    slice offset), size (allocated bytes of its slice), logical_bytes (its shape's size),
    shares_slice (another value sits in the same slice: count the slice once), first_step,
    last_step (inclusive live range), steps, shape, opcode, op_name, source (file:line),
    operands (of the producer, from the HLO text), users (the value's uses as buffer assignment
    lists them, else the producer's users in the HLO text). ``top``: only the ``top`` largest of
    each module and memory space. Values without a live range (thread-local ones, a dump
    without its live-range file) have no span."""
    sc = scope_of(dump, module)
    where = "" if top is None else f"where rank < {int(top)}"
    return sc.arrow(f"select * from @spans {where} order by module, color, address, first_step, value_id")
