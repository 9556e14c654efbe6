"""Allocations and buffers (values) of every module, joined to their live ranges and to the
instruction that defines them; padding; jax's ``memory_analysis`` figures.

Derived tables (see ``engine``):

* ``@asg`` — ``assignments`` with the module key and ``logical_bytes`` of the value's shape
  (computed once per distinct shape);
* ``@alloc`` — ``allocations`` with the module key and a ``category``;
* ``@info`` — per module and instruction name: opcode, shape, op_name, source, fusion kind,
  custom-call target; from the after-optimizations HLO text where the dump has it for the module,
  else from the core's parse of each value's ``from instruction:`` text (``values.defining_*``);
* ``@buffers`` — one row per value, everything above joined (``buffers()``).
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from .engine import Scope, derived
from .modules import ModuleSel, scope_of
from .shapes import shape_bytes
from .spaces import HOST_MEMORY_SPACE, MAIN_COLOR  # also registers @platform, @spaces, @heap_peaks

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["CATEGORIES", "CATEGORY_SQL", "allocations", "buffers", "padding", "memory_analysis",
           "MEMORY_ANALYSIS_FIELDS", "HOST_MEMORY_SPACE"]

CATEGORIES: tuple[str, ...] = ("parameter", "output", "constant", "thread_local", "temporary")

# One category per allocation, from its flags, first match wins (so category sums equal the total).
CATEGORY_SQL = """
    case when a.parameter is not null then 'parameter'
         when a.is_maybe_live_out or a.is_output then 'output'
         when a.is_constant then 'constant'
         when a.is_thread_local then 'thread_local'
         else 'temporary' end
"""

# A shape index as the live-range and peak lists print it: '{}' for the whole value.
_NORM_INDEX = "case when {c} is null or {c} = '' then '{{}}' else {c} end"


def norm_index(col: str) -> str:
    return _NORM_INDEX.format(c=col)


@derived("asg")
def _asg(sc: Scope) -> pa.Table:
    t = sc.arrow("""
        select m.module, m.module_name, s.file_id, s.allocation, s.value_id, s.instruction,
               s.shape_index, s.is_phi, s.color, s.offset, s.size, s.shape
        from assignments s join @modmap m using (file_id)""")
    return t.append_column("logical_bytes", shape_bytes(t.column("shape"), sc.eng.shape_bytes))


@derived("alloc")
def _alloc(sc: Scope) -> pa.Table:
    return sc.arrow(f"""
        select m.module, m.module_name, a.*, {CATEGORY_SQL} as category
        from allocations a join @modmap m using (file_id)""")


def _values_info_sql(sc: Scope) -> str:
    """Per module without HLO text and instruction: what the core parsed of the defining text."""
    cols = sc.eng.d["values"].column_names if sc.eng.has("values") else []
    pick = {
        "opcode": "defining_opcode", "shape": "defining_shape", "op_name": "defining_op_name",
        "source_file": "defining_source_file", "source_line": "defining_source_line",
        "fusion_kind": "defining_fusion_kind", "custom_call_target": "defining_custom_call_target",
    }
    types = {"source_line": "bigint"}
    fields = ", ".join(
        f"{k} := {v if v in cols else 'null::' + types.get(k, 'varchar')}" for k, v in pick.items())
    names = ", ".join(f"r.{k} as {k}" for k in pick)
    return f"""
        select module, instruction, {names}, 'values' as source_of_info
        from (select m.module, v.instruction, min_by(struct_pack({fields}), v.value_id) as r
              from "values" v join @modmap m using (file_id)
              where m.module not in (select distinct module from @modmap where is_hlo
                                     and file_id in (select file_id from instructions))
              group by m.module, v.instruction)"""


@derived("info")
def _info(sc: Scope) -> pa.Table:
    hlo = sc.arrow("""
        select m.module, i.name as instruction, i.opcode::varchar as opcode, i.shape::varchar as shape,
               i.op_name::varchar as op_name, i.source_file::varchar as source_file, i.source_line,
               i.fusion_kind::varchar as fusion_kind, i.custom_call_target::varchar as custom_call_target,
               'hlo' as source_of_info
        from instructions i join @modmap m using (file_id) where m.is_hlo""")
    vals = sc.arrow(_values_info_sql(sc))
    vals = vals.select(hlo.column_names).cast(hlo.schema)
    return pa.concat_tables([hlo, vals])


@derived("info1")
def _info1(sc: Scope) -> pa.Table:
    """``@info`` with one row per (module, instruction) and the logical bytes of its shape."""
    t = sc.arrow("""
        select module, instruction, any_value(opcode) as opcode, any_value(shape) as shape,
               any_value(op_name) as op_name, any_value(source_file) as source_file,
               any_value(source_line) as source_line
        from @info group by all""")
    return t.append_column("shape_bytes", shape_bytes(t.column("shape"), sc.eng.shape_bytes))


@derived("buffers")
def _buffers(sc: Scope) -> pa.Table:
    return sc.arrow(f"""
        with lr as (
            select m.module, l.instruction, {norm_index('l.shape_index')} as shape_index,
                   min(l.start) as start, max(l."end") as "end"
            from live_ranges l join @modmap m using (file_id) group by all)
        select s.file_id, s.module, s.module_name, s.value_id, s.instruction,
               {norm_index('s.shape_index')} as shape_index,
               s.is_phi, s.allocation, al.color, al.category, al.size as allocation_size,
               s.offset, s.size, s.logical_bytes, s.shape::varchar as shape,
               lr.start, lr."end",
               i.opcode, i.op_name, i.source_file, i.source_line,
               case when i.source_file is not null then
                    i.source_file || coalesce(':' || i.source_line::varchar, '') end as source
        from @asg s
        left join @alloc al on al.module = s.module and al.allocation = s.allocation
        left join lr on lr.module = s.module and lr.instruction = s.instruction
             and lr.shape_index = {norm_index('s.shape_index')}
        left join @info1 i on i.module = s.module and i.instruction = s.instruction
    """)


@checked_analysis
def allocations(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """The ``allocations`` table with ``module``/``module_name``, ``category`` and, per
    allocation, how many values it holds and their summed allocated / logical bytes."""
    sc = scope_of(dump, module)
    return sc.arrow("""
        select a.file_id, a.module, a.module_name, a.allocation, a.size, a.color, a.category,
               a.is_thread_local, a.is_constant, a.is_maybe_live_out, a.is_preallocated_temp,
               a.is_output, a.parameter, a.parameter_shape::varchar as parameter_shape,
               a.parameter_shape_index::varchar as parameter_shape_index,
               a.output_shape::varchar as output_shape, a.flags::varchar as flags,
               coalesce(v.n_values, 0)::bigint as n_values,
               coalesce(v.value_bytes, 0)::bigint as value_bytes,
               coalesce(v.logical_bytes, 0)::bigint as logical_bytes,
               a.line
        from @alloc a
        left join (select module, allocation, count(*) as n_values, sum(size) as value_bytes,
                          sum(logical_bytes) as logical_bytes
                   from @asg group by all) v
               on v.module = a.module and v.allocation = a.allocation
        order by a.module, a.allocation
    """)


@checked_analysis
def buffers(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Every value of buffer assignment, one row each, with everything known about it:
    module, value_id, instruction, shape_index, allocation, color, category, offset, allocated
    ``size``, ``logical_bytes``, shape, live range ``start``/``end`` (null if the dump has no live
    range for it), defining opcode, op_name, source_file, source_line, ``source`` (file:line)."""
    return scope_of(dump, module).arrow("select * from @buffers order by module, value_id")


@checked_analysis
def padding(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Allocated vs logical bytes of every value: module, value_id, instruction, shape_index,
    allocation, color, category, shape, allocated_bytes (the value's slice in its allocation),
    logical_bytes (from the shape), padding_bytes (allocated − logical), ratio (allocated /
    logical). On TPU, tiling ``T(8,128)`` makes an ``f32[]`` take 512 bytes. Sorted by padding
    descending."""
    sc = scope_of(dump, module)
    return sc.arrow("""
        select module, module_name, value_id, instruction, shape_index, allocation, color, category, shape,
               size as allocated_bytes, logical_bytes, (size - logical_bytes)::bigint as padding_bytes,
               case when logical_bytes > 0 then size / logical_bytes end as ratio, op_name, source
        from @buffers order by module, padding_bytes desc, value_id
    """)


# --------------------------------------------------------------------------------- jax's figures

MEMORY_ANALYSIS_FIELDS: tuple[str, ...] = (
    "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
    "host_argument_size_in_bytes", "host_output_size_in_bytes", "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
)


@derived("memory_analysis")
def _memory_analysis_table(sc: Scope) -> pa.Table:
    """``CompiledMemoryStats`` figures per module, as XLA computes them
    (``CompiledMemoryStats::PopulateBufferStatsFromAllocations``): every allocation counts by
    its flags — an entry parameter to ``argument``, and also to ``alias`` when it is live out
    (a donated parameter whose buffer the output reuses); ``maybe-live-out`` to ``output``; a
    preallocated temporary (neither parameter, nor live out, nor thread-local, nor constant)
    to ``temp``. Allocations in the host memory space (color 5) count as ``host_*``. Also the
    constants (for the CPU backend's ``peak_memory_in_bytes``). Sums are exact (hugeint)."""
    def s(cond: str, host: bool) -> str:
        h = f"color {'=' if host else '<>'} {HOST_MEMORY_SPACE}"
        return f"coalesce(sum(size::hugeint) filter (where {h} and ({cond})), 0)"

    arg, out = "parameter is not null", "is_maybe_live_out"
    alias = "parameter is not null and is_maybe_live_out"
    temp = "parameter is null and not is_maybe_live_out and not is_thread_local and not is_constant"
    const = "is_constant and not is_thread_local and parameter is null and not is_maybe_live_out"
    fields = []
    for pre, host in (("", False), ("host_", True)):
        fields += [f"{s(arg, host)} as {pre}argument_size_in_bytes", f"{s(out, host)} as {pre}output_size_in_bytes",
                   f"{s(alias, host)} as {pre}alias_size_in_bytes", f"{s(temp, host)} as {pre}temp_size_in_bytes"]
    return sc.arrow(f"""
        select module, count(*) as n_allocations, {', '.join(fields)},
               coalesce(sum(size::hugeint) filter (where {const}), 0) as constant_bytes
        from @alloc group by module""")


# The figures jax 0.12 adds (``CompiledMemoryStats``), from XLA's buffer-assignment proto:
# ``total_allocation_bytes`` / ``indefinite_allocations`` sum color-0 allocations,
# ``peak_memory_in_bytes`` is the indefinite bytes plus the largest heap-simulator trace peak
# (``spaces`` says how that is reproduced from text). What counts differs by backend, as
# measured on tests/data/accel: on GPU thread-local allocations count nowhere; libtpu counts
# them in both totals (its indefinite bytes are every color-0 allocation but the preallocated
# temporaries) but not in the peak.
NEW_FIELDS: tuple[str, ...] = ("total_allocation_bytes", "indefinite_allocations", "peak_memory_in_bytes",
                               "peak_unpadded_heap_bytes")

#: Why a figure of jax's is not given for a platform (shown beside jax's own where it is known).
NOT_IN_DUMP = {
    ("tpu", "temp_size_in_bytes"): "libtpu's temp_size_in_bytes is its HLO-temporary block with the block's "
                                   "fragmentation, which the dump does not show (it differs from the "
                                   "temporaries the buffer assignment lists)",
}


@derived("jax_totals")
def _jax_totals(sc: Scope) -> pa.Table:
    """Per module: the color-0 sums behind jax 0.12's new figures, both ways of counting."""
    indefinite = "parameter is not null or is_maybe_live_out or is_constant"
    return sc.arrow(f"""
        select a.module, p.platform,
               sum(size::hugeint) filter (where color = {MAIN_COLOR})::bigint as main_all,
               sum(size::hugeint) filter (where color = {MAIN_COLOR} and not is_thread_local)::bigint as main_shared,
               sum(size::hugeint) filter (where color = {MAIN_COLOR} and not is_preallocated_temp)::bigint
                   as main_not_temp,
               sum(size::hugeint) filter (where color = {MAIN_COLOR} and not is_thread_local
                                          and ({indefinite}))::bigint as main_indefinite,
               (select max(heap_peak) from @heap_peaks h where h.module = a.module) as heap_peak,
               a.module in (select module from @buffers where start is not null) as has_live_ranges,
               (select arg_max(heap_peak - heap_peak_logical, heap_peak) from @heap_peaks h
                where h.module = a.module) as heap_padding,
               sum(pad.padding) filter (where color = {MAIN_COLOR} and not is_thread_local
                                        and ({indefinite}))::bigint as main_indefinite_padding
        from @alloc a join @platform p using (module)
        left join (select module, allocation,
                          greatest(any_value(allocation_size) - max(logical_bytes), 0) as padding
                   from @buffers group by all) pad using (module, allocation)
        group by a.module, p.platform""")


def _jax_new_fields(r: dict[str, Any]) -> dict[str, Optional[int]]:
    """jax 0.12's four buffer-assignment figures of one module (``@jax_totals`` row)."""
    plat = r["platform"]
    indefinite = int(r["main_indefinite"] or 0)
    peak = indefinite + int(r["heap_peak"] or 0)
    if not r["has_live_ranges"]:
        # no live ranges (a proto-only dump, a buffer assignment without its live-range file):
        # no heap to replay, so no peak rather than the indefinite bytes alone
        return {k: v for k, v in _jax_new_fields({**r, "has_live_ranges": True}).items()
                if not k.startswith("peak_")}
    if plat == "tpu":
        # unpadded: the same buffers at their shapes' sizes (the tiling padding left out)
        padding = int(r["main_indefinite_padding"] or 0) + int(r["heap_padding"] or 0)
        return {"total_allocation_bytes": int(r["main_all"] or 0),
                "indefinite_allocations": int(r["main_not_temp"] or 0),
                "peak_memory_in_bytes": peak, "peak_unpadded_heap_bytes": peak - padding}
    if plat == "gpu":
        return {"total_allocation_bytes": int(r["main_shared"] or 0), "indefinite_allocations": indefinite,
                "peak_memory_in_bytes": peak, "peak_unpadded_heap_bytes": peak}
    return {}


def memory_analysis_by_module(sc: Scope) -> dict[str, Optional[dict[str, int]]]:
    """Per module key of the scope: jax's figures (None without allocations)."""
    t = sc.get("memory_analysis").to_pylist()
    extra = {r["module"]: r for r in sc.get("jax_totals").to_pylist()}
    cpu = {m.key: m.is_cpu for m in sc.mods}
    out: dict[str, Optional[dict[str, int]]] = {}
    for r in t:
        ma: dict[str, Any] = {k: int(r[k]) for k in MEMORY_ANALYSIS_FIELDS}
        if cpu.get(r["module"]):
            # CPU (jax >= 0.8 reports it): arguments + outputs − aliased + constants; the
            # preallocated temporary is not part of it there.
            ma["peak_memory_in_bytes"] = (ma["argument_size_in_bytes"] + ma["output_size_in_bytes"]
                                          - ma["alias_size_in_bytes"] + int(r["constant_bytes"]))
        elif r["module"] in extra:
            ma.update(_jax_new_fields(extra[r["module"]]))
            plat = extra[r["module"]]["platform"]
            for (p, field), why in NOT_IN_DUMP.items():
                if p == plat:
                    ma.pop(field, None)
        out[r["module"]] = ma
    return out


def memory_analysis_notes(sc: Scope) -> dict[str, list[str]]:
    """Per module: why a figure of jax's is missing from ``memory_analysis`` (the platform's
    figure counts memory the dump does not show)."""
    plat = {r["module"]: r["platform"] for r in sc.get("platform").to_pylist()}
    return {m: [f"{field}: {why}" for (p, field), why in NOT_IN_DUMP.items() if p == pl]
            for m, pl in plat.items()}


@checked_analysis
def memory_analysis(dump: "Dump", module: ModuleSel = None) -> list[dict[str, Any]]:
    """Per module, jax's ``Compiled.memory_analysis()`` figures with jax's field names
    (``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes``,
    ``temp_size_in_bytes`` and their ``host_*`` twins), derived from the buffer assignment
    alone; ``None`` for a module whose dump has no allocations. On the CPU backend also
    ``peak_memory_in_bytes``. ``generated_code_size_in_bytes`` is not in the dump and is not
    reported."""
    sc = scope_of(dump, module)
    ma = memory_analysis_by_module(sc)
    return [{"module": m.key, "module_name": m.name, "module_id": m.module_id, "dump": m.dump,
             "memory_analysis": ma.get(m.key)} for m in sc.mods]
