"""The neighbourhood of an instruction in the HLO graph (the data of the report's graph view):
``neighbourhood(d, instruction, hops)``.

From the after-optimizations HLO text of every selected module naming ``instruction`` (one
recursive query over all modules, grouped by module): the instruction, its operands up to
``hops`` hops upstream and its users up to ``hops`` hops downstream (edges inside a computation,
``operands`` of the ``instructions`` table), the computations each of them calls (a fusion's
members with ``members=True``), each node with its output bytes (the logical bytes of its shape;
``allocated_bytes``: its values' slices in buffer assignment) and its FLOPs and bytes accessed
(``costs``, where the build has them).

Two tables: ``nodes`` (module, instruction, layer: 0 the instruction, −k an operand k hops
upstream, +k a user k hops downstream, ``member_of`` for a fusion's members, computation,
opcode, shape, bytes, allocated_bytes, flops, bytes_accessed, called (computation names),
op_name, source) and ``edges`` (module, src, dst, kind: ``operand`` — src is an operand of dst —
or ``calls``: dst is a member of the computation src calls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from .._typing import checked_analysis, check_int
from .modules import ModuleSel, scope_of
from .spans import _hlo_edges  # noqa: F401 - registers @hlo_edges

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["neighbourhood", "instruction_costs"]


def instruction_costs(d: "Dump", module: ModuleSel = None) -> pa.Table:
    """module, instruction, flops, bytes_accessed of every instruction ``costs`` gives (empty
    when the cost analysis cannot run on this dump)."""
    empty = pa.table({"module": pa.array([], pa.string()), "instruction": pa.array([], pa.string()),
                      "flops": pa.array([], pa.float64()), "bytes_accessed": pa.array([], pa.float64())})
    try:
        from .cost import costs

        t = costs(d, module)
    except Exception:  # noqa: BLE001 - no costs: the graph has bytes alone
        return empty
    if t.num_rows == 0:
        return empty
    out = t.select(["module", "instruction", "flops", "bytes_accessed"])
    return pa.table({"module": out.column("module").cast(pa.string()),
                     "instruction": out.column("instruction").cast(pa.string()),
                     "flops": out.column("flops").cast(pa.float64()),
                     "bytes_accessed": out.column("bytes_accessed").cast(pa.float64())})


@checked_analysis
def neighbourhood(dump: "Dump", instruction: str, hops: int = 2, module: ModuleSel = None,
                  members: bool = False) -> dict[str, pa.Table]:
    """``{"nodes": …, "edges": …}``: ``instruction``'s operands ``hops`` hops upstream and its
    users ``hops`` hops downstream in every selected module whose HLO text has it (see the module
    docstring for the columns). ``members``: also the instructions of the computations the nodes
    call (a fusion's members), ``member_of`` naming the caller."""
    if not isinstance(instruction, str) or not instruction:
        raise TypeError(f"hlodump.analysis.neighbourhood: instruction must be a non-empty str, not {instruction!r}")
    check_int("hlodump.analysis.neighbourhood", "hops", hops, 0)
    sc = scope_of(dump, module)
    costs = instruction_costs(dump, module)
    name = instruction.lstrip("%")
    lit = "'" + name.replace("'", "''") + "'"
    q = f"""
        with recursive
          ins as (select m.module, i.file_id, i.computation_id, i.name::varchar as instruction,
                         i.opcode::varchar as opcode, i.shape::varchar as shape,
                         i.called_computations, i.op_name::varchar as op_name,
                         case when i.source_file is not null then i.source_file::varchar ||
                              coalesce(':' || i.source_line::varchar, '') end as source
                  from instructions i join @modmap m using (file_id) where m.is_hlo),
          comps as (select c.file_id, c.computation_id, c.name::varchar as computation from computations c),
          up(module, instruction, hop) as (
              select module, instruction, 0 from ins where instruction = {lit}
              union
              select e.module, e.src, up.hop + 1 from up join @hlo_edges e
                     on e.module = up.module and e.dst = up.instruction where up.hop < {int(hops)}),
          down(module, instruction, hop) as (
              select module, instruction, 0 from ins where instruction = {lit}
              union
              select e.module, e.dst, down.hop + 1 from down join @hlo_edges e
                     on e.module = down.module and e.src = down.instruction where down.hop < {int(hops)}),
          near as (select module, instruction, min(layer) filter (where layer <= 0) as l_up,
                          min(layer) filter (where layer > 0) as l_down
                   from (select module, instruction, -min(hop) as layer from up group by all
                         union all select module, instruction, min(hop) from down group by all)
                   group by all),
          picked as (select module, instruction,
                            case when l_up = 0 then 0
                                 when l_up is not null and (l_down is null or -l_up <= l_down) then l_up
                                 else l_down end::int as layer, null::varchar as member_of
                     from near),
          called as (select p.module, i.instruction as caller, unnest(i.called_computations)::varchar as computation,
                            i.file_id
                     from picked p join ins i on i.module = p.module and i.instruction = p.instruction),
          mem as (select c.module, i.instruction, null::int as layer, c.caller as member_of
                  from called c join comps k on k.file_id = c.file_id and k.computation = c.computation
                  join ins i on i.module = c.module and i.file_id = k.file_id
                            and i.computation_id = k.computation_id
                  where {'true' if members else 'false'}),
          allnodes as (select * from picked union all select * from mem),
          alloc as (select module, instruction, sum(size)::bigint as allocated_bytes from @buffers group by all)
        select n.module, n.instruction, n.layer, n.member_of, k.computation, i.opcode, i.shape,
               s.shape_bytes as bytes, a.allocated_bytes,
               i.called_computations::varchar[] as called, i.op_name, i.source
        from allnodes n
        join ins i on i.module = n.module and i.instruction = n.instruction
        left join comps k on k.file_id = i.file_id and k.computation_id = i.computation_id
        left join @info1 s on s.module = n.module and s.instruction = n.instruction
        left join alloc a on a.module = n.module and a.instruction = n.instruction"""
    base = sc.arrow(q)
    nodes = sc.eng.query("""
        select n.module, n.instruction, n.layer::int as layer, n.member_of, n.computation, n.opcode, n.shape, n.bytes,
               n.allocated_bytes, c.flops, c.bytes_accessed, n.called, n.op_name, n.source
        from base n left join (select module, instruction, sum(flops) as flops,
                                      sum(bytes_accessed) as bytes_accessed from costs group by all) c
             on c.module = n.module and c.instruction = n.instruction
        order by n.module, n.member_of nulls first, n.layer, n.instruction""", base=base, costs=costs)
    edges_all = sc.get("hlo_edges").select(["module", "src", "dst"])
    edges = sc.eng.query("""
        select e.module, e.src, e.dst, 'operand' as kind
        from e join nodes a on a.module = e.module and a.instruction = e.src
               join nodes b on b.module = e.module and b.instruction = e.dst
        where (a.member_of is null) = (b.member_of is null)
        union all
        select module, member_of as src, instruction as dst, 'calls' as kind from nodes where member_of is not null
        order by 1, 2, 3""", e=edges_all, nodes=nodes)
    return {"nodes": nodes, "edges": edges}
