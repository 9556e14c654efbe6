"""``hlodump cost | comms``: FLOPs, bytes and communication on the command line.

    hlodump cost PATH… [--device H100 | --peak-flops F --bandwidth B] [--top N] [--by op_name|source|opcode]
                       [--module M] [--json] [--format text|csv] [-o FILE]
    hlodump comms PATH… [--module M] [--json] [--format text|csv] [-o FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import IO, Any, Optional

import pyarrow as pa

from .. import analysis as A
from .. import cli_safety
from ..analysis import comms as K
from ..analysis import cost as C
from ..analysis.hlo_frame import hlo_files as _hlo_files
from ..analysis import devices as V
from ..analysis import roofline_model as R
from .common import UsageError, add_common, failed_files_note, read, select_module

__all__ = ["register"]


def _modules(d: Any, args: argparse.Namespace) -> list[Any]:
    every = A._module_list(d)
    with_text = _hlo_files(d, every)  # after-optimizations text, or a lone HLO file
    mods = [m for m in every if m.key in with_text]
    if not mods:
        raise UsageError("nothing to analyse: no HLO module text in " + " ".join(map(str, args.paths))
                         + failed_files_note(d))
    return select_module(mods, getattr(args, "module", None))


def _device(args: argparse.Namespace) -> V.Device:
    if args.device is None and args.peak_flops is None and args.bandwidth is None:
        return V.device("H100")
    try:
        return V.device(args.device, peak_flops=args.peak_flops, memory_bandwidth=args.bandwidth)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _out(args: argparse.Namespace, text: bool = False) -> IO[str]:
    """The output: ``-o FILE`` or stdout. Text for a person (``text``) and anything bound for a
    terminal has its control characters escaped: names, op_name and source paths come from the
    dump, and an escape sequence in them must not reach the screen."""
    out: IO[str] = (open(args.output, "w", encoding="utf-8", newline="") if getattr(args, "output", None)
                    else sys.stdout)
    if text or cli_safety.is_terminal(out):
        out = cli_safety.EscapingStream(out)  # type: ignore[assignment]
    return out


def _csv(t: pa.Table, out: IO[str]) -> None:
    w = csv.writer(out)
    w.writerow(t.column_names)
    for row in t.to_pylist():
        w.writerow([json.dumps(v) if isinstance(v, (list, dict)) else ("" if v is None else v) for v in row.values()])


def _num(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if v < 0:
        return "unknown"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.2f}{unit}"
    return f"{v:g}"


def _secs(v: Optional[float]) -> str:
    if v is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if v >= scale:
            return f"{v / scale:.2f}{unit}"
    return f"{v / 1e-9:.1f}ns"


def _cmd_cost(args: argparse.Namespace) -> int:
    d = read(args.paths, args, tables=["instructions", "computations", "modules"])
    mods = _modules(d, args)
    keys = [m.key for m in mods]
    dev = _device(args)
    table = C.costs(d, keys)
    roof = R.roofline(d, dev, costs_table=table)
    if args.format == "csv":
        out = _out(args)
        _csv(roof, out)
        return 0
    totals = C.cost_analysis(d, keys)
    by = R.cost_breakdown(d, args.by, dev, keys)
    if args.json:
        out = _out(args)
        json.dump({"device": {"name": dev.name, "memory_bandwidth": dev.memory_bandwidth, "source": dev.source},
                   "modules": [dict(t, seconds=_sum(roof, t["module"])) for t in totals],
                   "top_instructions": _top(roof, args.top, args.sort),
                   f"by_{args.by}": by.to_pylist()}, out, indent=1, default=str)
        out.write("\n")
        return 0
    out = _out(args, text=True)
    for t in totals:
        ca = t["cost_analysis"]
        if ca is None:
            out.write(f"{t['module']}: no after-optimizations HLO text\n")
            continue
        out.write(f"{t['module']}: {C.format_cost(ca)}; roofline on {dev.name}: "
                  f"{_secs(_sum(roof, t['module']))}\n")
        if t.get("note"):
            out.write(f"  note: {t['note']}\n")
        rows = [r for r in _top(roof, args.top, args.sort) if r["module"] == t["module"]]
        if rows:
            what = {"time": f"roofline time ({dev.name})", "flops": "flops", "bytes": "bytes accessed"}[args.sort]
            out.write(f"  top instructions by {what}:\n")
            for r in rows:
                src = f"{r['source_file']}:{r['source_line']}" if r["source_file"] else ""
                out.write(f"    {_secs(r['seconds']):>9}  {r['bound'] or '-':<7} {_num(r['flops']):>9} FLOP "
                          f"{_num(r['bytes_accessed']):>9}B  {r['opcode']:<14} {r['instruction']}  {r['op_name'] or ''}"
                          f"  {src}\n")
        sub = [r for r in by.to_pylist() if r["module"] == t["module"]][: args.top]
        if sub:
            out.write(f"  by {args.by}:\n")
            for r in sub:
                out.write(f"    {_secs(r['seconds']):>9}  {_num(r['flops']):>9} FLOP {_num(r['bytes_accessed']):>9}B  "
                          f"{r[args.by]}\n")
    return 0


def _sum(roof: pa.Table, module: str) -> Optional[float]:
    vals = [s for m, s in zip(roof.column("module").to_pylist(), roof.column("seconds").to_pylist())
            if m == module and s is not None]
    return sum(vals) if vals else None


_SORT = {"time": "seconds", "flops": "flops", "bytes": "bytes_accessed"}


def _top(roof: pa.Table, n: int, sort: str = "time") -> list[dict[str, Any]]:
    col = _SORT[sort]
    rows = [r for r in roof.to_pylist() if r[col] and r[col] > 0]
    rows.sort(key=lambda r: (r["module"], -(r[col] or 0.0)))
    out: list[dict[str, Any]] = []
    count: dict[str, int] = {}
    for r in rows:
        if count.get(r["module"], 0) < n:
            count[r["module"]] = count.get(r["module"], 0) + 1
            out.append(r)
    return out


def _cmd_comms(args: argparse.Namespace) -> int:
    d = read(args.paths, args, tables=["instructions", "computations", "modules"])
    mods = _modules(d, args)
    t = K.collectives(d, [m.key for m in mods])
    if args.format == "csv":
        _csv(t, _out(args))
        return 0
    if args.json:
        out = _out(args)
        json.dump({"collectives": t.to_pylist(), "by_kind": _by_kind(t)}, out, indent=1, default=str)
        out.write("\n")
        return 0
    out = _out(args, text=True)
    if t.num_rows == 0:
        out.write("no collectives\n")
        return 0
    for g in _by_kind(t):
        over = f"groups of {g['group_size']}" if g["group_size"] is not None else "groups of unknown size"
        out.write(f"{g['module']}: {g['kind']} x{g['count']} over {over}: "
                  f"{_bytes(g['bytes'])} sent as S, {_bytes(g['bytes_per_device'])} per device\n")
    out.write("\n")
    for r in t.to_pylist():
        a = (f" async {r['start_instruction'] or '(no start)'} -> {r['done_instruction'] or '(no done)'} "
             f"({r['steps_between'] if r['steps_between'] is not None else '?'} steps, "
             f"overlaps {len(r['overlapped_instructions'] or [])} compute)") if r["is_async"] else ""
        src = f" {r['source_file']}:{r['source_line']}" if r["source_file"] else ""
        groups = r["source_target_pairs"] if r["kind"] == "collective-permute" else r["replica_groups"]
        n = r["group_size"] if r["group_size"] is not None else "?"
        note = f"  [note: {r['note']}]" if r.get("note") else ""
        out.write(f"{r['module']} {r['kind']:<19} {r['instruction']}: S={_bytes(r['bytes'])} n={n} "
                  f"per device {_bytes(r['bytes_per_device'])} [{r['formula']}] groups={_short(groups, r)}{a}{src}"
                  f"{note}\n")
    return 0


def _bytes(v: Optional[float]) -> str:
    """``1.20kB``; ``unknown`` for a figure that could not be computed (never ``-B``)."""
    return "unknown" if v is None else f"{_num(v)}B"


def _short(groups: Any, r: Optional[dict[str, Any]] = None) -> str:
    if groups is None and r is not None and r.get("group_size") is not None and r.get("num_groups") is not None:
        return f"{r['num_groups']}x{r['group_size']} (not listed)"
    s = json.dumps(groups, separators=(",", ":"))
    return s if len(s) <= 60 else s[:57] + "..."


def _by_kind(t: pa.Table) -> list[dict[str, Any]]:
    import duckdb

    con = duckdb.connect()
    con.register("t", t)
    rows = con.sql("""SELECT module, kind, group_size, count(*) AS count, CAST(sum(bytes) AS BIGINT) AS bytes,
                             sum(bytes_per_device) AS bytes_per_device
                      FROM t GROUP BY ALL ORDER BY module, bytes_per_device DESC NULLS LAST""").to_arrow_table().to_pylist()
    con.close()
    return rows


def register(sub: Any) -> None:
    sp = sub.add_parser("cost", help="FLOPs and bytes per instruction (XLA's cost analysis), roofline time",
                        description="XLA's HloCostAnalysis per instruction and module (jax's cost_analysis() "
                                    "figures), with a roofline on a device preset or given numbers.")
    add_common(sp)
    sp.add_argument("--device", help="preset: " + ", ".join(V.DEVICES) + " (default H100)")
    sp.add_argument("--peak-flops", type=float, help="peak FLOP/s for every type (overrides the preset)")
    sp.add_argument("--bandwidth", type=float, help="memory bandwidth in bytes/s (overrides the preset)")
    sp.add_argument("--top", type=int, default=10, help="instructions and groups shown per module (default 10)")
    sp.add_argument("--sort", choices=["time", "flops", "bytes"], default="time",
                    help="top instructions by roofline time (default), flops or bytes accessed")
    sp.add_argument("--by", choices=["op_name", "source", "opcode", "computation"], default="source",
                    help="the breakdown (default: source line)")
    sp.add_argument("--format", choices=["text", "csv"], default="text", help="csv: the roofline table, one row per "
                                                                               "instruction")
    sp.add_argument("-o", "--output", help="write to FILE")
    sp.set_defaults(func=_cmd_cost)
    sp = sub.add_parser("comms", help="every collective: kind, groups, bytes, overlap",
                        description="Collectives of each module: kind, replica groups, bytes (S as NCCL's tests "
                                    "define it), bytes per device on a ring, async overlap.")
    add_common(sp)
    sp.add_argument("--format", choices=["text", "csv"], default="text", help="csv: one row per collective")
    sp.add_argument("-o", "--output", help="write to FILE")
    sp.set_defaults(func=_cmd_comms)
