"""``advice`` (issue 51, "what to do about it"): where the dump shows a cause of the peak that a
change to the program removes, the change and the bytes it frees, cheapest change first.

Each kind is one query over every selected module (grouped by module; no loop over modules):

* ``donate`` — an entry parameter that is not aliased to an output (not donated) while an output
  of the same shape is not aliased either: donating it (``jax.jit(f, donate_argnums=…)``) lets
  XLA write that output into the parameter's buffer, so the output's buffer is not allocated.
  Parameters and outputs are paired by shape (dims and element type), in parameter and value
  order, each once. Bytes: the output value's slice — what jax's
  ``memory_analysis().peak_memory_in_bytes`` (arguments + outputs − aliased) loses on CPU, and
  what the alias adds to ``alias_size_in_bytes``.
* ``layout_copy`` — a ``copy`` that XLA's layout assignment inserted: same dims, another
  layout than its operand (``f32[256,512]{0,1}`` → ``{1,0}``), at top level or inside the
  fusion that holds it (``wrapped_copy``, ``copy_sine_fusion``), live at the peak in use (a
  copy that is not frees nothing there). Bytes: the buffer of the top-level instruction (the
  copy or its fusion).
* ``collective`` — a collective's result (all-gather, all-reduce, reduce-scatter, all-to-all,
  collective-permute, their async done) defined before the peak in use and used after it: live
  across the peak while no instruction at the peak reads it. Bytes: its slice.
* ``remat`` — a temporary defined before the peak and used after it (held across the peak, as
  a forward activation kept for the backward pass is): ``jax.checkpoint`` / remat of the code
  that makes it recomputes it after the peak instead. The largest three per module, each
  allocation slice once. Bytes: its slice.

Advice under ``MIN_BYTES`` (1 KiB) is left out. Bytes are what the change frees at the peak in use (``live_at_peak``); for ``donate`` what it
frees of the module's memory (the output buffer, live to the end). Cheapest first: a donation is
one argument, a layout copy a change of a transpose or layout, a collective's placement a
schedule change, a checkpoint recomputation; within a kind the most bytes first.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING

import pyarrow as pa

from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["advice", "ADVICE_KINDS", "ADVICE_SCHEMA", "MIN_BYTES"]

#: The kinds of advice, cheapest change first (the order of the table).
ADVICE_KINDS = ("donate", "layout_copy", "collective", "remat")

#: Columns of :func:`advice`.
ADVICE_SCHEMA = pa.schema([
    ("module", pa.string()), ("module_name", pa.string()), ("rank", pa.int32()), ("kind", pa.string()),
    ("bytes", pa.int64()), ("live_at_peak", pa.bool_()), ("peak_step", pa.int64()),
    ("instruction", pa.string()), ("parameter", pa.int64()), ("shape", pa.string()),
    ("start", pa.int64()), ("end", pa.int64()), ("op_name", pa.string()), ("source", pa.string()),
    ("text", pa.string()),
])

_COLLECTIVES = ("'all-gather', 'all-reduce', 'reduce-scatter', 'all-to-all', 'collective-permute', "
                "'all-gather-done', 'all-reduce-done', 'collective-permute-done', 'async-done', "
                "'ragged-all-to-all', 'collective-broadcast'")
_DIMS = "regexp_replace({c}, '\\{{[^{{}}]*\\}}$', '')"  # f32[256,512]{1,0} -> f32[256,512]
_LAYOUT = "regexp_extract({c}, '(\\{{[^{{}}]*\\}})$', 1)"
_REMAT_TOP = 3
#: Advice that frees less is not given (a scalar's donation, a tiny value's remat).
MIN_BYTES = 1024


def _fmt(col: str) -> str:
    """SQL: bytes in IEC units as ``units.format_bytes`` prints them (KiB one decimal, then two)."""
    return f"""(case when {col} < 1024 then {col}::varchar || 'B'
                 when {col} < 1024 * 1024 then printf('%.1fKiB', {col} / 1024.0)
                 when {col} < 1024 * 1024 * 1024 then printf('%.2fMiB', {col} / 1048576.0)
                 else printf('%.2fGiB', {col} / 1073741824.0) end)"""


@checked_analysis
def advice(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """What to change in the program, with the bytes it frees, per module, cheapest first (see
    the module docstring for each kind and how it is found).

    Columns (``ADVICE_SCHEMA``): ``module``, ``module_name``, ``rank`` (0 = the first to try in
    its module), ``kind`` (``ADVICE_KINDS``), ``bytes``, ``live_at_peak`` (the buffer is live at
    the peak in use), ``peak_step`` (that step), ``instruction`` (the parameter, copy, collective
    or value), ``parameter`` (``donate``: the entry parameter number), ``shape``, ``start`` /
    ``end`` (its live range in schedule steps), ``op_name``, ``source`` (``file:line``),
    ``text`` (one line: "donate parameter 0 (w, f32[256,1024]): −1.00MiB …"). Modules without
    a buffer assignment give no rows; without live ranges only ``donate`` (there is no peak).
    ``layout_copy``, ``collective`` and ``remat`` rows are live at the peak (``live_at_peak``
    true); a ``donate`` row frees its output's buffer whether or not it is live there.
    """
    sc = scope_of(dump, module)
    if not sc.mods or not sc.eng.has("allocations") or not sc.eng.has("assignments"):
        return ADVICE_SCHEMA.empty_table()
    has_lr = sc.eng.has("live_ranges")
    has_hlo = sc.eng.has("instructions") and sc.eng.has("computations")
    pk = "select module, step from @tl_max" if has_lr else \
        "select null::varchar as module, null::bigint as step where false"
    parts = [_donate_sql()]
    if has_hlo:
        parts.append(_layout_sql())
    if has_lr:
        parts += [_collective_sql(), _remat_sql()]
    kinds = ", ".join(f"'{k}'" for k in ADVICE_KINDS)
    t = sc.arrow(f"""
        with pk as ({pk}),
             b as (select * from @buffers),
             a as ({" union all ".join(parts)})
        select a.module, m.module_name,
               (row_number() over (partition by a.module order by list_position([{kinds}], a.kind),
                                   a.bytes desc, a.instruction) - 1)::int as rank,
               a.kind, a.bytes::bigint as bytes, a.live_at_peak, a.peak_step::bigint as peak_step,
               a.instruction, a.parameter::bigint as parameter, a.shape, a.start::bigint as start,
               a."end"::bigint as "end", a.op_name, a.source, a.text
        from a join (select distinct module, module_name from b) m using (module)
        where a.bytes >= {MIN_BYTES}
        order by a.module, rank""")
    return t.cast(ADVICE_SCHEMA)


def _donate_sql() -> str:
    dims = _DIMS.format(c="shape")
    return f"""
        select * from (
        with params as (
                 -- entry parameters not aliased to an output: their values (a tuple parameter's
                 -- arrays each), in parameter order
                 select b.module, b.instruction, b.shape, b.op_name, b.source, b.start, b."end", al.parameter,
                        {dims} as dims, b.size
                 from b join @alloc al on al.module = b.module and al.allocation = b.allocation
                 where al.parameter is not null and not coalesce(al.is_output, false)
                   and not coalesce(al.is_maybe_live_out, false) and b.shape not like '(%'
                   and b.category = 'parameter'),
             outs as (
                 select b.module, b.instruction, b.shape, b.size, b.value_id, b.start, b."end", b.allocation,
                        b."offset", {dims} as dims
                 from b where b.category = 'output' and b.shape not like '(%' and b.size > 0),
             p as (select *, row_number() over (partition by module, dims order by parameter, instruction) as rn
                   from (select distinct * from params)),
             o as (select *, row_number() over (partition by module, dims order by value_id) as rn
                   from (select module, dims, any_value(instruction order by value_id) as instruction,
                                any_value(shape order by value_id) as shape, max(size) as size,
                                min(value_id) as value_id, min(start) as start, max("end") as "end"
                         from outs group by module, dims, allocation, "offset"))
        select p.module, 'donate' as kind, o.size as bytes,
               (pk.step is not null and o.start <= pk.step and pk.step <= o."end") as live_at_peak, pk.step as peak_step,
               p.instruction, p.parameter, p.shape, p.start, p."end", p.op_name, p.source,
               'donate ' || coalesce('argument ' || nullif(p.op_name, '') || ' (parameter ' || p.parameter::varchar
                                     || ', ' || p.dims || ')', 'parameter ' || p.parameter::varchar || ' (' || p.dims || ')')
               || ': −' || {_fmt('o.size')} || ' — the output ' || o.instruction
               || ' has its shape; donated, the argument''s buffer holds it (jax.jit(f, donate_argnums=…))' as text
        from p join o on o.module = p.module and o.dims = p.dims and o.rn = p.rn
        left join pk on pk.module = p.module)"""


def _layout_sql() -> str:
    dims_i, dims_o = _DIMS.format(c="i.shape"), _DIMS.format(c="o.shape")
    lay_i, lay_o = _LAYOUT.format(c="i.shape"), _LAYOUT.format(c="o.shape")
    return f"""
        select * from (
        with ins as (select m.module, i.file_id, i.computation_id, i.name, i.opcode::varchar as opcode,
                            i.shape::varchar as shape, i.operands, i.called_computations
                     from instructions i join @modmap m using (file_id) where m.is_hlo),
             comps as (select c.file_id, c.computation_id, c.name, c.is_entry
                       from computations c where c.file_id in (select file_id from @modmap where is_hlo)),
             -- copies that change the layout, not the dims (XLA's layout assignment inserts them)
             cp as (select i.module, i.file_id, i.computation_id, i.name, o.shape as from_shape, i.shape as to_shape
                    from ins i join ins o on o.file_id = i.file_id and o.computation_id = i.computation_id
                                         and o.name = i.operands[1]
                    where i.opcode = 'copy' and i.shape not like '(%' and {dims_i} = {dims_o}
                      and {lay_i} <> {lay_o}),
             -- the top-level instruction holding it: itself, or the fusion calling its computation
             owner as (select cp.*, coalesce(f.name, cp.name) as top
                       from cp join comps c on c.file_id = cp.file_id and c.computation_id = cp.computation_id
                       left join ins f on f.file_id = cp.file_id and f.opcode = 'fusion'
                                      and list_contains(f.called_computations, c.name))
        select ow.module, 'layout_copy' as kind, bb.size as bytes,
               (pk.step is not null and bb.start <= pk.step and pk.step <= bb."end") as live_at_peak,
               pk.step as peak_step, ow.top as instruction, null::bigint as parameter, bb.shape,
               bb.start, bb."end", bb.op_name, bb.source,
               'layout copy ' || ow.top || case when ow.top <> ow.name then ' (its ' || ow.name || ')' else '' end
               || ': ' || ow.from_shape || ' rewritten as ' || ow.to_shape || ', −' || {_fmt('bb.size')}
               || ' at the peak' || coalesce(' (' || bb.op_name || ')', '')
               || ' — produce the value in the layout its users read (a transpose folded into its consumer, '
               || 'another contraction order)' as text
        from owner ow
        join (select module, instruction, any_value(size order by value_id) as size, any_value(shape order by value_id) as shape,
                     min(start) as start, max("end") as "end", any_value(op_name) as op_name,
                     any_value(source) as source
              from b where shape_index = '{{}}' group by all) bb on bb.module = ow.module and bb.instruction = ow.top
        join pk on pk.module = ow.module
        -- only a copy live at the peak in use: removing another frees nothing there
        where bb.start <= pk.step and pk.step <= bb."end")"""


def _across_sql(kind: str, where: str, text: str, top: str = "") -> str:
    """Values live across the peak in use (defined before it, used after it), main memory,
    each allocation slice once, that ``where`` picks."""
    return f"""
        select * from (
        with x as (select b.*, pk.step as peak_step,
                          row_number() over (partition by b.module, b.allocation, b."offset", b.size
                                             order by b.value_id) as k
                   from b join pk using (module)
                   where coalesce(b.color, 0) = 0 and b.start < pk.step and pk.step < b."end" and b.size > 0
                     and ({where})),
             y as (select *, row_number() over (partition by module order by size desc, instruction) as n
                   from x where k = 1)
        select module, '{kind}' as kind, size as bytes, true as live_at_peak, peak_step,
               instruction || case when shape_index <> '{{}}' then shape_index else '' end as instruction,
               null::bigint as parameter, shape, start, "end", op_name, source, {text} as text
        from y {top})"""


def _collective_sql() -> str:
    return _across_sql("collective", f"b.opcode in ({_COLLECTIVES})", f"""
        instruction || ' (' || opcode || ', ' || shape || ') is live across the peak (made at step ' || start::varchar
        || ', the peak at ' || peak_step::varchar || ', next read by step ' || "end"::varchar || '): −' || {_fmt('size')}
        || ' — start it closer to its use (or gather/reduce in smaller pieces)'""")


def _remat_sql() -> str:
    return _across_sql("remat", f"b.category = 'temporary' and coalesce(b.opcode, '') not in ({_COLLECTIVES})", f"""
        'rematerialize ' || instruction || ' (' || shape || coalesce(', ' || op_name, '') || coalesce(', ' || source, '')
        || '): kept from step ' || start::varchar || ' across the peak at ' || peak_step::varchar || ' to step '
        || "end"::varchar || ', −' || {_fmt('size')} || ' — jax.checkpoint / remat the code that makes it'""",
                        top=f"where n <= {_REMAT_TOP}")
