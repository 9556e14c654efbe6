"""Roofline over XLA's per-instruction cost: arithmetic intensity, compute- or memory-bound, time.

For each instruction of a module's entry computation (the rows whose cost makes up the module's
``cost_analysis``; a fusion, while, call or conditional row carries its computations' cost):

* ``intensity`` = (flops + transcendentals) / bytes_accessed (FLOP per byte);
* ``peak_flops`` = the device's peak for the instruction's data type on its unit (matrix unit for
  dots and convolutions, also fused; ``peak_used`` names the figure, see ``Device.peak``);
* ``ridge_intensity`` = peak_flops / memory_bandwidth; ``bound`` = ``compute`` if intensity ≥
  ridge, else ``memory``;
* ``compute_seconds`` = (flops + transcendentals) / peak_flops, ``memory_seconds`` =
  bytes_accessed / memory_bandwidth, ``seconds`` = the larger (the roofline time, a lower bound:
  no launch overheads, no overlap between instructions).

Instructions XLA counts as unknown (custom calls: −1) get no figures; ``note`` says why.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING, Optional, Union

import pyarrow as pa
import pyarrow.compute as pc

from .cost import costs
from .modules import ModuleSel
from .devices import Device, device as _device

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["roofline", "cost_breakdown", "ROOFLINE_COLUMNS"]

ROOFLINE_COLUMNS = (
    "module", "module_name", "computation", "instruction", "opcode", "op_name", "source_file", "source_line",
    "dtype", "is_matrix", "flops", "transcendentals", "bytes_accessed", "intensity", "peak_flops", "peak_used",
    "memory_bandwidth", "ridge_intensity", "bound", "compute_seconds", "memory_seconds", "seconds", "note",
    "device")


@checked_analysis
def roofline(d: "Dump", device: Union[str, Device, None] = "H100", module: ModuleSel = None, *,
             peak_flops: Optional[float] = None, memory_bandwidth: Optional[float] = None,
             costs_table: Optional[pa.Table] = None) -> pa.Table:
    """One row per entry-computation instruction of every module (``ROOFLINE_COLUMNS``) on
    ``device`` (a preset name — ``hlodump.analysis.devices.DEVICES`` — a ``Device``, or None with
    ``peak_flops`` FLOP/s and ``memory_bandwidth`` bytes/s, which also override a preset)."""
    dev = _device(device, peak_flops=peak_flops, memory_bandwidth=memory_bandwidth)
    t = costs_table if costs_table is not None else costs(d, module)
    t = t.filter(pc.field("in_total"))
    n = t.num_rows
    # the device's peak per distinct (data type, matrix unit) pair, taken back to the rows
    import numpy as np

    dt_enc = pc.dictionary_encode(t.column("dtype").combine_chunks() if t.num_rows else pa.array([], pa.string()))
    dt_codes = np.asarray(dt_enc.indices.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    dt_values = dt_enc.dictionary.to_pylist()
    mats = np.asarray(t.column("is_matrix").combine_chunks().fill_null(False).to_numpy(zero_copy_only=False), bool) \
        if t.num_rows else np.zeros(0, bool)
    pair = (dt_codes + 1) * 2 + mats
    uniq, inv = np.unique(pair, return_inverse=True)
    got = [dev.peak(dt_values[u // 2 - 1] if u // 2 > 0 else None, bool(u % 2)) for u in uniq.tolist()]
    peak_col = pa.array([g[0] for g in got], pa.float64()).take(pa.array(inv.reshape(-1), pa.int64())) if n else \
        pa.array([], pa.float64())
    used_col = pa.array([g[1] for g in got], pa.string()).take(pa.array(inv.reshape(-1), pa.int64())) if n else \
        pa.array([], pa.string())
    peak = peak_col
    bw = pa.array([dev.memory_bandwidth] * n, pa.float64())
    flops = t.column("flops")
    work = pc.add(flops, t.column("transcendentals"))
    byts = t.column("bytes_accessed")
    unknown = pc.or_(pc.less(flops, 0), pc.less(byts, 0))
    null = pa.nulls(n, pa.float64())
    work = pc.if_else(unknown, null, work)
    byts_ok = pc.if_else(unknown, null, byts)
    intensity = pc.if_else(pc.greater(byts_ok, 0), pc.divide(work, byts_ok), null)
    ridge = pc.divide(peak, bw)
    compute_s = pc.divide(work, peak)
    memory_s = pc.divide(byts_ok, bw)
    seconds = pc.max_element_wise(compute_s, memory_s)
    active = pc.or_(pc.greater(work, 0), pc.greater(byts_ok, 0))
    bound = pc.if_else(pc.and_(active, pc.greater_equal(pc.divide(work, pc.max_element_wise(byts_ok, 1e-300)), ridge)),
                       pa.scalar("compute"), pa.scalar("memory"))
    bound = pc.if_else(active, bound, pa.nulls(n, pa.string()))
    note = pc.if_else(unknown, pa.scalar("XLA counts this instruction as unknown (-1): no roofline"),
                      t.column("note"))
    cols = {
        "module": t.column("module"), "module_name": t.column("module_name"), "computation": t.column("computation"),
        "instruction": t.column("instruction"), "opcode": t.column("opcode"), "op_name": t.column("op_name"),
        "source_file": t.column("source_file"), "source_line": t.column("source_line"), "dtype": t.column("dtype"),
        "is_matrix": t.column("is_matrix"), "flops": flops, "transcendentals": t.column("transcendentals"),
        "bytes_accessed": byts, "intensity": intensity, "peak_flops": peak,
        "peak_used": used_col, "memory_bandwidth": bw, "ridge_intensity": ridge,
        "bound": bound, "compute_seconds": compute_s, "memory_seconds": memory_s, "seconds": seconds,
        "note": note, "device": pa.array([dev.name] * n, pa.string()),
    }
    return pa.table(cols)


_BY = {
    "op_name": "coalesce(op_name, '(no op_name)')",
    "source": "coalesce(source_file || ':' || CAST(source_line AS VARCHAR), source_file, '(no source)')",
    "opcode": "opcode",
    "computation": "computation",
}


@checked_analysis
def cost_breakdown(d: "Dump", by: str = "op_name", device: Union[str, Device, None] = None, module: ModuleSel = None,
                   *, peak_flops: Optional[float] = None, memory_bandwidth: Optional[float] = None) -> pa.Table:
    """FLOPs, bytes and (with a device) roofline seconds summed per ``by`` (``op_name``,
    ``source`` = file:line, ``opcode``, ``computation``) and module, over the rows that make up
    the module totals; most expensive first (by seconds with a device, else by flops). Unknown
    (−1) figures are left out of the sums and counted in ``unknown``."""
    from .engine import arrow, engine

    if by not in _BY:
        raise ValueError(f"by must be one of {', '.join(_BY)}, not {by!r}")
    if device is not None or peak_flops is not None:
        t = roofline(d, device, module, peak_flops=peak_flops, memory_bandwidth=memory_bandwidth)
    else:
        t = costs(d, module).filter(pc.field("in_total"))
        t = t.append_column("seconds", pa.nulls(t.num_rows, pa.float64()))
    eng = engine(d)
    name = f"breakdown_{id(t):x}"
    order = "seconds DESC NULLS LAST, flops DESC" if device is not None or peak_flops is not None else "flops DESC, bytes_accessed DESC"
    with eng.lock:
        eng.con.register(name, t)
        try:
            out = arrow(eng.con.sql(f"""
        SELECT module, any_value(module_name) AS module_name, {_BY[by]} AS key, count(*) AS instructions,
               sum(CASE WHEN flops >= 0 AND bytes_accessed >= 0 THEN flops END) AS flops,
               sum(CASE WHEN flops >= 0 AND bytes_accessed >= 0 THEN transcendentals END) AS transcendentals,
               sum(CASE WHEN flops >= 0 AND bytes_accessed >= 0 THEN bytes_accessed END) AS bytes_accessed,
               sum(seconds) AS seconds,
               count(*) FILTER (WHERE flops < 0 OR bytes_accessed < 0) AS unknown
        FROM {name} GROUP BY module, key ORDER BY module, {order}"""))
        finally:
            eng.con.unregister(name)
    return out.rename_columns([by if c == "key" else c for c in out.column_names])
