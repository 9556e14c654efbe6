"""The data of the report page's memory viewer and graph view, for every module at once.

* ``spans_per_module``: per module, the largest ``SPANS`` buffers (``analysis.buffer_spans``,
  all memory spaces) as rows of bars, and per memory space what the page folds (how many buffers,
  how many bytes, the largest folded one) and its peak in use (step and bytes, from
  ``memory_timeline``: the same figure the timeline chart marks).
* ``graphs_per_module``: per module, its HLO graph in compact arrays (names, opcodes, output
  bytes, FLOPs, bytes accessed, computations, operand edges) for the page's script to walk: N
  hops of operands and users of any instruction, a fusion's members on demand. A module of more
  than ``GRAPH_NODES`` instructions keeps those within ``GRAPH_HOPS`` hops of its largest
  buffers' producers (the page says so).

Both are computed by one query each over all modules; the loop over modules only packs JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import pyarrow as pa

from .. import analysis as A
from ..analysis.engine import Engine

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["spans_per_module", "graphs_per_module", "SPANS", "SPAN_FIELDS", "GRAPH_NODES"]

#: Buffers per module the memory viewer draws (the largest; the rest folded, per space).
SPANS = 400
#: The fields of a span row in the page, in order.
SPAN_FIELDS = ("color", "buffer", "address", "size", "first_step", "last_step", "category", "shape", "instruction",
               "opcode", "op_name", "source", "operands", "users", "logical_bytes", "shares_slice")
#: Instructions per module the graph view holds in full.
GRAPH_NODES = 6000
#: Around the largest buffers of a bigger module: this many hops kept.
GRAPH_HOPS = 4
#: Producers of the largest buffers a bigger module's graph is kept around.
GRAPH_SEEDS = 40


def _plain(t: pa.Table) -> pa.Table:
    cols = [t.column(f.name).cast(pa.large_string()) if str(f.type) == "string_view" else t.column(f.name)
            for f in t.schema]
    return pa.table(cols, names=t.column_names)


def spans_per_module(d: "Dump", eng: Engine, sel: Optional[list[str]], tl: pa.Table,
                     n: int = SPANS) -> dict[str, dict[str, Any]]:
    """Per module key: ``{"fields": SPAN_FIELDS, "rows": [...], "spaces": [...]}`` (see the
    module docstring); modules without spans are left out."""
    t = A.buffer_spans(d, sel)
    if t.num_rows == 0:
        return {}
    t = _plain(t)
    cols = ", ".join(f'"{c}"' for c in SPAN_FIELDS)
    ranked = eng.query(f"""
        select module, {cols}, memory_space,
               row_number() over (partition by module order by size desc, first_step, value_id) as rn
        from t""", t=t)
    drawn = eng.query(f"select module, {cols} from ranked where rn <= {int(n)} order by module, rn", ranked=ranked)
    k = int(n)
    spaces = eng.query(f"""
        select module, color, any_value(memory_space) as memory_space, count(*) as buffers,
               count(*) filter (where rn > {k}) as folded, coalesce(sum(size) filter (where rn > {k}), 0)::bigint as folded_bytes,
               max(size) filter (where rn > {k}) as folded_max, max(address + size)::bigint as extent
        from ranked group by all order by module, color""", ranked=ranked)
    peaks: dict[tuple[str, int], tuple[int, int]] = {}
    if tl.num_rows:
        pk = eng.query("""
            with s as (select module, color, step, sum(bytes)::bigint as b from tl group by all)
            select module, color, arg_min(step, -b * 1e0 + step * 1e-9) as step, max(b) as b from s group by all""",
                       tl=_plain(tl.select(["module", "color", "step", "bytes"])))
        for m, c, s, b in zip(*(col.to_pylist() for col in pk.columns)):
            peaks[(m, int(c))] = (int(s), int(b))
    out: dict[str, dict[str, Any]] = {}
    values = [c.to_pylist() for c in drawn.columns]
    for row in zip(*values):
        m = row[0]
        out.setdefault(m, {"fields": list(SPAN_FIELDS), "rows": [], "spaces": []})["rows"].append(list(row[1:]))
    for r in spaces.to_pylist():
        o = out.setdefault(r["module"], {"fields": list(SPAN_FIELDS), "rows": [], "spaces": []})
        st, b = peaks.get((r["module"], int(r["color"])), (None, None))
        o["spaces"].append({"color": int(r["color"]), "memory_space": r["memory_space"], "buffers": int(r["buffers"]),
                            "folded": int(r["folded"]), "folded_bytes": int(r["folded_bytes"]),
                            "folded_max": r["folded_max"], "extent": int(r["extent"] or 0),
                            "peak_step": st, "peak_bytes": b})
    for o in out.values():  # the main memory first
        o["spaces"].sort(key=lambda s: (s["color"] != 0, s["color"]))
    return out


def graphs_per_module(d: "Dump", eng: Engine, sel: Optional[list[str]], costs: Optional[pa.Table],
                      spans: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per module key with HLO text: its graph in compact arrays (see the module docstring)."""
    from ..analysis.modules import scope_of

    sc = scope_of(d, sel)
    nodes = sc.arrow("""
        select m.module, i.name::varchar as name, i.opcode::varchar as opcode, c.name::varchar as computation,
               c.is_entry, i.called_computations::varchar[] as called, i.op_name::varchar as op_name,
               case when i.source_file is not null then i.source_file::varchar ||
                    coalesce(':' || i.source_line::varchar, '') end as source, i.shape::varchar as shape
        from instructions i join @modmap m using (file_id)
        left join computations c on c.file_id = i.file_id and c.computation_id = i.computation_id
        where m.is_hlo
        order by m.module, i.file_id, i.computation_id, i.instruction_id""")
    if nodes.num_rows == 0:
        return {}
    info = sc.get("info1").select(["module", "instruction", "shape_bytes"])
    alloc = sc.arrow("select module, instruction, sum(size)::bigint as allocated from @buffers group by all")
    ct = costs if costs is not None and costs.num_rows else pa.table({
        "module": pa.array([], pa.string()), "instruction": pa.array([], pa.string()),
        "flops": pa.array([], pa.float64()), "bytes_accessed": pa.array([], pa.float64())})
    ct = _plain(ct.select(["module", "instruction", "flops", "bytes_accessed"]))
    full = eng.query("""
        select n.*, i.shape_bytes as bytes, a.allocated, c.flops, c.bytes_accessed
        from nodes n
        left join info i on i.module = n.module and i.instruction = n.name
        left join alloc a on a.module = n.module and a.instruction = n.name
        left join (select module, instruction, sum(flops) as flops, sum(bytes_accessed) as bytes_accessed
                   from ct group by all) c on c.module = n.module and c.instruction = n.name
        order by n.module""", nodes=_plain(nodes), info=_plain(info), alloc=_plain(alloc), ct=ct)
    edges = sc.arrow("select module, src, dst from @hlo_edges order by module")
    mods = full.column("module").to_pylist()
    cols = {c: full.column(c).to_pylist() for c in full.column_names}
    e_mod = edges.column("module").to_pylist()
    e_src = edges.column("src").to_pylist()
    e_dst = edges.column("dst").to_pylist()
    e_at: dict[str, list[int]] = {}
    for j, m in enumerate(e_mod):
        e_at.setdefault(m, []).append(j)
    starts: dict[str, list[int]] = {}
    for j, m in enumerate(mods):
        starts.setdefault(m, []).append(j)
    out: dict[str, dict[str, Any]] = {}
    for m, idx in starts.items():
        names = [cols["name"][j] for j in idx]
        pos = {nm: k for k, nm in enumerate(names)}
        found = [(pos.get(e_src[j]), pos.get(e_dst[j])) for j in e_at.get(m, [])]
        pairs: list[tuple[int, int]] = [(a, b) for a, b in found if a is not None and b is not None]
        keep = np.arange(len(idx))
        note = None
        if len(idx) > GRAPH_NODES:
            keep = _around(len(idx), pairs, [pos[r[SPAN_FIELDS.index("instruction")]]
                                             for r in (spans.get(m) or {}).get("rows", [])[:GRAPH_SEEDS]
                                             if r[SPAN_FIELDS.index("instruction")] in pos])
            note = (f"the graph holds {len(keep):,} of the module's {len(idx):,} instructions: those within "
                    f"{GRAPH_HOPS} hops of its {GRAPH_SEEDS} largest buffers' producers")
        remap = np.full(len(idx), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        sel_idx = [idx[k] for k in keep.tolist()]
        comps: dict[str, int] = {}
        c_of = [comps.setdefault(cols["computation"][j] or "", len(comps)) for j in sel_idx]
        flat: list[int] = []
        for a, b in pairs:
            if remap[a] >= 0 and remap[b] >= 0:
                flat += [int(remap[a]), int(remap[b])]
        entry = next((cols["computation"][j] for j in sel_idx if cols["is_entry"][j]), None)
        out[m] = {
            "name": [cols["name"][j] for j in sel_idx], "op": [cols["opcode"][j] for j in sel_idx],
            "shape": [cols["shape"][j] for j in sel_idx],
            "bytes": [cols["bytes"][j] for j in sel_idx], "alloc": [cols["allocated"][j] for j in sel_idx],
            "flops": [_finite(cols["flops"][j]) for j in sel_idx],
            "acc": [_finite(cols["bytes_accessed"][j]) for j in sel_idx],
            "comp": c_of, "comps": list(comps), "entry": entry,
            "calls": [[comps[c] for c in (cols["called"][j] or []) if c in comps] for j in sel_idx],
            "op_name": [(cols["op_name"][j] or "")[:200] or None for j in sel_idx],
            "source": [cols["source"][j] for j in sel_idx],
            "edges": flat, "note": note, "instructions": len(idx),
        }
    return out


def _finite(v: Any) -> Any:
    return v if isinstance(v, (int, float)) and np.isfinite(v) else None


def _around(n: int, pairs: list[tuple[int, int]], seeds: list[int], hops: int = GRAPH_HOPS) -> np.ndarray:
    """Nodes within ``hops`` hops (either way) of ``seeds``."""
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs:
        adj[a].append(b)
        adj[b].append(a)
    seen = set(seeds)
    frontier = list(seen)
    for _ in range(hops):
        nxt = []
        for v in frontier:
            for w in adj[v]:
                if w not in seen:
                    seen.add(w)
                    nxt.append(w)
        frontier = nxt
    return np.array(sorted(seen), dtype=np.int64)
