"""Per-instruction memory and cost as Model Explorer node data (``hlodump export --model-explorer``).

Model Explorer (google-ai-edge/model-explorer) overlays "node data" on a graph: a JSON file per
metric, in the format its ``node_data_builder.py`` defines — ``ModelNodeData``: an object whose
keys are graph ids and whose values are ``GraphNodeData`` objects; a ``GraphNodeData`` has
``results`` (node key → ``{"value": number}``, optionally ``bgColor``/``textColor``) and optionally
``thresholds`` or ``gradient`` (``{"stop": 0…1, "bgColor": …}``, stops 0 and 1 given).

What we write, one file per metric (``METRICS``), every module of the dump in each: the graph id
is the HLO module's name (its key where two modules of the dump share a name), the node keys are
instruction names (as the HLO text names them).
Values are numbers, never null: an instruction without the figure is left out.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Optional

import pyarrow as pa

from .. import analysis as A

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["node_data", "write_node_data", "METRICS"]

#: Metric → what it is (the file ``<metric>.json`` holds it).
METRICS = {
    "memory_bytes": "allocated bytes of the values the instruction defines (buffer assignment)",
    "output_bytes": "logical bytes of the instruction's result shape",
    "flops": "FLOPs (hlodump.analysis.costs)",
    "bytes_accessed": "bytes accessed (hlodump.analysis.costs)",
}
#: White to deep orange: Model Explorer interpolates between the stops by value.
GRADIENT = [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 0.5, "bgColor": "#ffcc80"}, {"stop": 1, "bgColor": "#e65100"}]


def node_data(d: "Dump", module: Any = None) -> dict[str, dict[str, Any]]:
    """Metric → ``ModelNodeData`` (graph id → ``GraphNodeData``), for every selected module with
    HLO text or buffer assignment; one query per metric over all modules."""
    from ..analysis.graph import instruction_costs
    from ..analysis.modules import scope_of

    sc = scope_of(d, module)
    # the graph id: the module's name, or its key where two selected modules share a name
    counts: dict[str, int] = {}
    for m in sc.mods:
        counts[m.name] = counts.get(m.name, 0) + 1
    names = pa.table({"module": pa.array([m.key for m in sc.mods], pa.string()),
                      "graph": pa.array([m.name if counts[m.name] == 1 else m.key for m in sc.mods], pa.string())})
    mem = sc.arrow("""select module, instruction, sum(size)::bigint as v
                      from @buffers where instruction is not null group by all""")
    out_b = sc.arrow("""select module, instruction, any_value(shape_bytes)::bigint as v
                        from @info1 where shape_bytes is not null group by all""")
    costs = instruction_costs(d, module)
    per = {}
    for metric, t, col in (("memory_bytes", mem, "v"), ("output_bytes", out_b, "v"),
                           ("flops", costs, "flops"), ("bytes_accessed", costs, "bytes_accessed")):
        per[metric] = sc.eng.query(f"""
            select n.graph, t.instruction, sum(t.{col}) as v from t join names n using (module)
            where t.{col} is not null and isfinite(t.{col}::double) group by all""", t=_plain(t), names=names)
    out: dict[str, dict[str, Any]] = {}
    for metric, t in per.items():
        graphs: dict[str, Any] = {}
        for g, ins, v in zip(*(t.column(c).to_pylist() for c in ("graph", "instruction", "v"))):
            if v is None or ins is None:
                continue
            graphs.setdefault(g, {"results": {}, "gradient": GRADIENT})["results"][ins] = {"value": _num(v)}
        out[metric] = graphs
    return out


def _plain(t: pa.Table) -> pa.Table:
    cols = [t.column(f.name).cast(pa.large_string()) if str(f.type) == "string_view" else t.column(f.name)
            for f in t.schema]
    return pa.table(cols, names=t.column_names)


def _num(v: Any) -> Any:
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def write_node_data(d: "Dump", out_dir: "str | os.PathLike[str]", module: Any = None) -> list[str]:
    """Write ``<metric>.json`` for each of ``METRICS`` into ``out_dir`` (made if missing);
    returns the paths written (metrics no instruction has are not written)."""
    from .atomic import write_replaced

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for metric, data in node_data(d, module).items():
        if not data:
            continue
        p = os.path.join(os.fspath(out_dir), f"{metric}.json")
        write_replaced(p, json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False) + "\n")
        paths.append(p)
    return paths
