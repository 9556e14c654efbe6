"""``hlodump cost | comms``: FLOPs, bytes and communication on the command line.

    hlodump cost PATH… [--device H100 | --peak-flops F --bandwidth B] [--top N] [--sort time|flops|bytes]
                       [--by op_name|source|opcode|computation] [--by-module]
                       [--module M] [--json] [--format text|csv] [-o FILE]
    hlodump comms PATH… [--top N] [--sort bytes|per-device] [--by-module] [--module M] [--json]
                        [--format text|csv] [-o FILE]

Both rank across every module by default (the most expensive instruction, source line,
collective of the whole dump first); ``--by-module`` shows each module on its own. The roofline
(a time per instruction) needs a device: ``--device``, explicit peaks, or a device the dump
names (the GPU's compute capability in the backend name, ``sm_9.0_gpu``; a TPU generation);
otherwise there is no time column and one note says why.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import json
import sys
from typing import IO, Any, Callable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from .. import analysis as A
from .. import cli_safety
from .. import units as U
from ..analysis import comms as K
from ..analysis import cost as C
from ..analysis import devices as V
from ..analysis import roofline_model as R
from ..analysis.engine import engine
from ..analysis.hlo_frame import with_hlo_text
from ..outputs.atomic import replaced
from .common import UsageError, add_common, nothing_why, read, select_module

__all__ = ["register"]


def _modules(d: Any, args: argparse.Namespace) -> list[Any]:
    every = A._module_list(d)
    with_text = with_hlo_text(d)  # after-optimizations text, or a lone HLO file
    mods = [m for m in every if m.key in with_text]
    if not mods:
        head, tail = _no_text_why(d)
        raise UsageError(f"nothing to analyse: {head} in " + " ".join(map(str, args.paths)) + nothing_why(d) + tail)
    return select_module(mods, getattr(args, "module", None))


def _no_text_why(d: Any) -> tuple[str, str]:
    """What the HLO read lacks, in summary's words (issue 51): HLO text of another stage only
    (before optimizations, per-pass files) is not the optimized module the figures are of."""
    f = d["files"]
    stages = {st for k, st in zip(f.column("kind").to_pylist(), f.column("stage").to_pylist())
              if k == "hlo_module" and st not in (None, "after_optimizations")}
    if stages:
        which = " and ".join(sorted(s.replace("_", " ") for s in stages))
        return ("no after-optimizations HLO text", f"; the HLO read is {which} only: XLA's figures are those of "
                "the optimized module (its *after_optimizations.txt)")
    return "no HLO module text", ""


def _device(args: argparse.Namespace, mods: list[Any]) -> tuple[Optional[V.Device], str]:
    """The roofline's device and how it was chosen: ``--device`` / explicit peaks, else the one
    the modules' backend names name; (None, why not) when neither."""
    if args.device is not None or args.peak_flops is not None or args.bandwidth is not None:
        try:
            dev = V.device(args.device, peak_flops=args.peak_flops, memory_bandwidth=args.bandwidth)
        except ValueError as e:
            raise UsageError(str(e)) from None
        return dev, "--device" if args.device is not None else "peaks given"
    name, how = V.named_by(b for m in mods for b in m.backends)
    if name is None:
        return None, how
    return V.device(name), f"named by the dump: {how}"


def _no_roofline(how: str) -> str:
    return (f"no roofline time: {how}; give --device NAME ({', '.join(V.DEVICES)}) or --peak-flops F "
            "--bandwidth B for one")


def _out(args: argparse.Namespace, text: bool = False) -> IO[str]:
    """The output: ``-o FILE`` or stdout. Text for a person (``text``) and anything bound for a
    terminal has its control characters escaped: names, op_name and source paths come from the
    dump, and an escape sequence in them must not reach the screen."""
    out: IO[str] = sys.stdout
    if getattr(args, "output", None):
        # -o FILE: written atomically (hlodump.outputs.atomic), renamed over FILE only when the
        # command succeeded (``_writes_output``); one file however often the command asks
        stack = args._outputs
        out = getattr(args, "_output_file", None) or stack.enter_context(replaced(args.output, newline=""))
        args._output_file = out
    if text or cli_safety.is_terminal(out):
        out = cli_safety.EscapingStream(out)  # type: ignore[assignment]
    return out


def _writes_output(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command whose ``-o FILE`` (``_out``) is committed only if it returns."""
    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        with contextlib.ExitStack() as stack:
            args._outputs = stack
            return fn(args)
    return run


def _csv(t: pa.Table, out: IO[str]) -> None:
    w = csv.writer(out)
    w.writerow(t.column_names)
    for row in t.to_pylist():
        w.writerow([json.dumps(v) if isinstance(v, (list, dict)) else ("" if v is None else v) for v in row.values()])


def _num(v: Optional[float], unit: str = "") -> str:
    """A count in SI (``hlodump.units``): ``1.20 kFLOP``; ``unknown`` for XLA's −1."""
    if v is not None and v < 0:
        return "unknown"
    return U.format_si(v, unit)


def _secs(v: Optional[float]) -> str:
    """A time with its unit (``hlodump.units``): ``12.30 ms``, ``102.6 ns``."""
    return U.format_seconds(v)


_SORT = {"time": "seconds", "flops": "flops", "bytes": "bytes_accessed"}


def _plain(t: pa.Table) -> pa.Table:
    """string_view columns as string (for DuckDB's Arrow scan)."""
    return pa.table([c.cast(pa.large_string()) if str(c.type) == "string_view" else c for c in t.columns],
                    names=t.column_names)


@_writes_output
def _cmd_cost(args: argparse.Namespace) -> int:
    d = read(args.paths, args, tables=["instructions", "computations", "modules"])
    mods = _modules(d, args)
    keys = [m.key for m in mods]
    dev, how = _device(args, mods)
    sort = args.sort or ("time" if dev is not None else "flops")
    if sort == "time" and dev is None:
        raise UsageError(f"--sort time needs a roofline: {_no_roofline(how)}")
    table = C.costs(d, keys)
    if dev is not None:
        roof = R.roofline(d, dev, costs_table=table)
    else:  # the rows that make up the totals, without the roofline's columns
        roof = table.filter(pc.field("in_total"))
        roof = roof.append_column("seconds", pa.nulls(roof.num_rows, pa.float64()))
        roof = roof.append_column("bound", pa.nulls(roof.num_rows, pa.string()))
    if args.format == "csv":
        out = _out(args)
        _csv(roof.drop_columns(["seconds", "bound"]) if dev is None else roof, out)
        return 0
    eng = engine(d)
    timed = ["seconds", "bound"] if dev is not None else []  # no time column without a device
    r = _plain(roof.select(["module", "instruction", "opcode", "flops", "transcendentals", "bytes_accessed", *timed,
                            "op_name", "source_file", "source_line"]))
    col = _SORT[sort]
    seconds: dict[str, float] = {}
    if dev is not None:  # roofline seconds per module: one sum over every module
        per = eng.query("select module, sum(seconds) as s from r where seconds is not null group by module", r=r)
        seconds = dict(zip(per.column("module").to_pylist(), per.column("s").to_pylist()))
    totals = C.cost_analysis(d, keys)
    if dev is not None:
        for t in totals:
            t["seconds"] = seconds.get(t["module"])
    totals.sort(key=lambda t: (-(_module_figure(t, col) or 0.0), t["module"]))
    top = args.top
    part = "partition by module" if args.by_module else ""
    top_rows = eng.query(f"""
        select * exclude (rn) from (
            select *, row_number() over ({part} order by "{col}" desc nulls last, module, instruction) as rn
            from r where "{col}" > 0)
        where rn <= {int(top)} order by {"module, " if args.by_module else ""}rn""", r=r).to_pylist()
    by = R.cost_breakdown(d, args.by, dev, keys)
    if not args.by_module:  # the same key summed over the modules
        by = eng.query(f"""
            select "{args.by}", count(distinct module) as modules, sum(instructions) as instructions,
                   sum(flops) as flops, sum(transcendentals) as transcendentals,
                   sum(bytes_accessed) as bytes_accessed{", sum(seconds) as seconds" if dev is not None else ""},
                   sum(unknown) as unknown
            from b group by all
            order by {"seconds desc nulls last, " if dev is not None else ""}"{"flops" if col == "seconds" else col}" desc nulls last,
                     "{args.by}" """, b=_plain(by))
    if dev is None and "seconds" in by.column_names:
        by = by.drop_columns(["seconds"])
    by_rows = by.to_pylist()
    device = None if dev is None else {"name": dev.name, "memory_bandwidth": dev.memory_bandwidth,
                                       "source": dev.source, "chosen": how}
    if args.json:
        out = _out(args)
        json.dump({"device": device, "device_note": None if dev is not None else _no_roofline(how),
                   "sort": sort, "by_module": bool(args.by_module),
                   "modules": totals, "top_instructions": top_rows,
                   f"by_{args.by}": by_rows[: top] if not args.by_module else by_rows}, out, indent=1, default=str)
        out.write("\n")
        return 0
    out = _out(args, text=True)
    if dev is not None:
        out.write(f"roofline on {dev.name} ({how})\n")
    else:
        out.write(f"note: {_no_roofline(how)}\n")
    what = {"time": f"roofline time ({dev.name})" if dev is not None else "", "flops": "flops",
            "bytes": "bytes accessed"}[sort]
    if args.by_module:
        _cost_by_module(out, totals, top_rows, by_rows, args, dev, what)
        return 0
    shown = totals[:top]
    if len(totals) > 1:
        out.write(f"{len(totals):,} modules by {what}:\n")
    for t in shown:
        _module_line(out, t, dev)
    if len(totals) > len(shown):
        out.write(f"… and {len(totals) - len(shown):,} more modules: --top N, --by-module\n")
    if top_rows:
        across = f" across {len(totals):,} modules" if len(totals) > 1 else ""
        out.write(f"top {len(top_rows)} instructions by {what}{across}:\n")
        for r in top_rows:
            _instruction_line(out, r, dev, module=len(totals) > 1)
    if by_rows:
        out.write(f"by {args.by}{' across modules' if len(totals) > 1 else ''}:\n")
        for r in by_rows[:top]:
            _by_line(out, r, args.by, dev)
    return 0


def _module_figure(t: dict[str, Any], col: str) -> Optional[float]:
    if col == "seconds":
        return t.get("seconds")
    ca = t.get("cost_analysis") or {}
    return ca.get("flops" if col == "flops" else "bytes accessed")


def _module_line(out: IO[str], t: dict[str, Any], dev: Optional[V.Device]) -> None:
    ca = t["cost_analysis"]
    if ca is None:
        out.write(f"{t['module']}: no after-optimizations HLO text\n")
        return
    roof = f"; roofline on {dev.name}: {_secs(t.get('seconds'))}" if dev is not None else ""
    out.write(f"{t['module']}: {C.format_cost(ca)}{roof}\n")
    if t.get("note"):
        out.write(f"  note: {t['note']}\n")


def _instruction_line(out: IO[str], r: dict[str, Any], dev: Optional[V.Device], module: bool) -> None:
    src = f"{r['source_file']}:{r['source_line']}" if r["source_file"] else ""
    time = f"{_secs(r['seconds']):>9}  {r['bound'] or '-':<7} " if dev is not None else ""
    out.write(f"    {time}{_num(r['flops'], 'FLOP'):>11} {_bytes(r['bytes_accessed']):>9}  {r['opcode']:<14} "
              f"{r['instruction']}  {r['op_name'] or ''}  {src}" + (f"  [{r['module']}]" if module else "") + "\n")


def _by_line(out: IO[str], r: dict[str, Any], by: str, dev: Optional[V.Device]) -> None:
    time = f"{_secs(r['seconds']):>9}  " if dev is not None else ""
    out.write(f"    {time}{_num(r['flops'], 'FLOP'):>11} {_bytes(r['bytes_accessed']):>9}  {r[by]}\n")


def _cost_by_module(out: IO[str], totals: list[dict[str, Any]], top_rows: list[dict[str, Any]],
                    by_rows: list[dict[str, Any]], args: argparse.Namespace, dev: Optional[V.Device],
                    what: str) -> None:
    """``--by-module``: each module, its top instructions and breakdown (rows grouped once)."""
    tops: dict[str, list[dict[str, Any]]] = {}
    for r in top_rows:
        tops.setdefault(r["module"], []).append(r)
    bys: dict[str, list[dict[str, Any]]] = {}
    for r in by_rows:
        bys.setdefault(r["module"], []).append(r)
    for t in totals:
        _module_line(out, t, dev)
        if t["cost_analysis"] is None:
            continue
        rows = tops.get(t["module"], [])
        if rows:
            out.write(f"  top instructions by {what}:\n")
            for r in rows:
                _instruction_line(out, r, dev, module=False)
        sub = bys.get(t["module"], [])[: args.top]
        if sub:
            out.write(f"  by {args.by}:\n")
            for r in sub:
                _by_line(out, r, args.by, dev)


_COMMS_SORT = {"bytes": "bytes", "per-device": "bytes_per_device"}


@_writes_output
def _cmd_comms(args: argparse.Namespace) -> int:
    d = read(args.paths, args, tables=["instructions", "computations", "modules"])
    mods = _modules(d, args)
    t = K.collectives(d, [m.key for m in mods])
    eng = engine(d)
    col = _COMMS_SORT[args.sort]
    if t.num_rows:  # ranked: the most bytes first, across modules (by module with --by-module)
        t = eng.query(f"""select * from t order by {"module, " if args.by_module else ""}"{col}" desc nulls last,
                                                   module, instruction""", t=_plain(t))
    kinds = _by_kind(t, eng, col, args.by_module)
    if args.format == "csv":
        _csv(t, _out(args))
        return 0
    rows = t.to_pylist()
    if args.json:
        out = _out(args)
        top = args.top if args.top is not None else len(rows)
        json.dump({"sort": args.sort, "by_module": bool(args.by_module), "n_collectives": len(rows),
                   "collectives": rows if args.by_module else rows[:top], "by_kind": kinds}, out, indent=1,
                  default=str)
        out.write("\n")
        return 0
    out = _out(args, text=True)
    if not rows:
        out.write("no collectives\n")
        return 0
    n_mods = len({r["module"] for r in rows})
    across = f" across {n_mods:,} modules" if n_mods > 1 and not args.by_module else ""
    out.write(f"by kind{across}:\n" if not args.by_module else "")
    for g in kinds:
        if g.get("pairs") is not None:  # a permute sends along its pairs: no group reduces or gathers
            n_dev = f" among {g['group_size']} devices" if g["group_size"] is not None else ""
            over = f"{g['pairs']} source→target pair{'s' if g['pairs'] != 1 else ''}{n_dev}"
        else:
            over = f"groups of {g['group_size']}" if g["group_size"] is not None else "groups of unknown size"
        where = f"{g['module']}: " if args.by_module else "  "
        inn = f" in {g['modules']:,} modules" if not args.by_module and g["modules"] > 1 else ""
        out.write(f"{where}{g['kind']} x{g['count']} over {over}: "
                  f"{_bytes(g['bytes'])} sent as S, {_bytes(g['bytes_per_device'])} per device{inn}\n")
    out.write("\n")
    top = args.top if args.top is not None else 20
    shown = rows if args.by_module else rows[:top]
    if not args.by_module:
        what = {"bytes": "bytes (S)", "per-device": "bytes per device"}[args.sort]
        out.write(f"top {len(shown)} collectives by {what}{across}:\n")
    for r in shown:
        if not r["is_async"]:
            a = ""
        elif r["start_instruction"] is None or r["done_instruction"] is None:
            # no pair, so no steps between and no overlap: say what is wrong instead of -1 / 0
            a = (f" async {r['start_instruction'] or '(no start)'} -> {r['done_instruction'] or '(no done)'} "
                 "(not a pair: no steps between, no overlap counted)")
        else:
            a = (f" async {r['start_instruction']} -> {r['done_instruction']} "
                 f"({r['steps_between'] if r['steps_between'] is not None else '?'} steps, "
                 f"overlaps {len(r['overlapped_instructions'] or [])} compute)")
        src = f" {r['source_file']}:{r['source_line']}" if r["source_file"] else ""
        groups = r["source_target_pairs"] if r["kind"] == "collective-permute" else r["replica_groups"]
        n = r["group_size"] if r["group_size"] is not None else "?"
        note = f"  [note: {r['note']}]" if r.get("note") else ""
        out.write(f"{r['module']} {r['kind']:<19} {r['instruction']}: S={_bytes(r['bytes'])} n={n} "
                  f"per device {_bytes(r['bytes_per_device'])} [{r['formula']}] groups={_short(groups, r)}{a}{src}"
                  f"{note}\n")
    if len(rows) > len(shown):
        out.write(f"… and {len(rows) - len(shown):,} more: --top N, --by-module, --json\n")
    return 0


def _bytes(v: Optional[float]) -> str:
    """``1.2KiB`` (IEC, as every command prints bytes: ``hlodump.units``); ``unknown`` for a
    figure that could not be computed (never ``-B``)."""
    return "unknown" if v is None or v < 0 else U.format_bytes(v)


def _short(groups: Any, r: Optional[dict[str, Any]] = None) -> str:
    if groups is None and r is not None and r.get("group_size") is not None and r.get("num_groups") is not None:
        return f"{r['num_groups']}x{r['group_size']} (not listed)"
    s = json.dumps(groups, separators=(",", ":"))
    return s if len(s) <= 60 else s[:57] + "..."


def _by_kind(t: pa.Table, eng: Any, col: str, by_module: bool) -> list[dict[str, Any]]:
    """Collectives summed per kind and group size: across modules (``modules``: in how many),
    or per module; the most bytes first. One query on the dump's engine."""
    if t.num_rows == 0:
        return []
    mod = "module, " if by_module else ""
    return eng.query(f"""
        select {mod}kind, group_size, pairs, count(*) as count, count(distinct module) as modules,
               cast(sum(bytes) as bigint) as bytes, sum(bytes_per_device) as bytes_per_device
        from (select *, case when kind like 'collective-permute%' then len(source_target_pairs) end as pairs from t)
        group by all order by {mod}"{col}" desc nulls last, kind""",
                     t=_plain(t.select(["module", "kind", "group_size", "source_target_pairs", "bytes",
                                        "bytes_per_device"]))).to_pylist()


def register(sub: Any) -> None:
    sp = sub.add_parser("cost", help="FLOPs and bytes per instruction (XLA's cost analysis), roofline time",
                        description="XLA's HloCostAnalysis per instruction and module (jax's cost_analysis() "
                                    "figures), ranked across every module (--by-module: each module on its own), "
                                    "with a roofline time on a device: --device, explicit peaks, or the device the "
                                    "dump names (GPU compute capability in the backend name, a TPU generation).")
    add_common(sp)
    sp.add_argument("--device", help="preset: " + ", ".join(V.DEVICES) + " (default: the device the dump names; "
                                     "none: no roofline time)")
    sp.add_argument("--peak-flops", type=float, help="peak FLOP/s for every type (overrides the preset)")
    sp.add_argument("--bandwidth", type=float, help="memory bandwidth in bytes/s (overrides the preset)")
    sp.add_argument("--top", type=int, default=10, help="modules, instructions and groups shown (default 10; "
                                                        "per module with --by-module)")
    sp.add_argument("--sort", choices=["time", "flops", "bytes"], default=None,
                    help="rank by roofline time (the default with a device), flops (the default without) or bytes "
                         "accessed")
    sp.add_argument("--by", choices=["op_name", "source", "opcode", "computation"], default="source",
                    help="the breakdown (default: source line)")
    sp.add_argument("--by-module", action="store_true", help="each module on its own (default: ranked across modules)")
    sp.add_argument("--format", choices=["text", "csv"], default="text", help="csv: the roofline table, one row per "
                                                                               "instruction")
    sp.add_argument("-o", "--output", help="write to FILE")
    sp.set_defaults(func=_cmd_cost)
    sp = sub.add_parser("comms", help="every collective: kind, groups, bytes, overlap; ranked across modules",
                        description="Collectives: kind, replica groups, bytes (S as NCCL's tests define it), bytes "
                                    "per device on a ring, async overlap; ranked across every module, the most "
                                    "bytes first (--by-module: each module on its own).")
    add_common(sp)
    sp.add_argument("--top", type=int, default=None, help="collectives listed (default 20; --json: all)")
    sp.add_argument("--sort", choices=sorted(_COMMS_SORT), default="bytes",
                    help="rank by bytes S (default) or bytes per device")
    sp.add_argument("--by-module", action="store_true", help="each module on its own (default: ranked across modules)")
    sp.add_argument("--format", choices=["text", "csv"], default="text", help="csv: one row per collective")
    sp.add_argument("-o", "--output", help="write to FILE")
    sp.set_defaults(func=_cmd_comms)
