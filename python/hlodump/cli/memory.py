"""``hlodump summary | plot | diff``: memory analysis on the command line.

    hlodump summary PATH… [--top N] [--json] [--module M]
    hlodump plot PATH… -o out.png|out.html [--module M]
    hlodump diff A B [--json] [--module M] [--limit N] [--pairs N] [--no-cost] [--no-changes | --all-changes]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from ..analysis.modules import short_module_key
from .. import analysis as A
from .. import cli_safety
from .. import units as U
from .common import UsageError, add_common, nothing_why, read, select_module

__all__ = ["register"]


def _print(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _console() -> Any:
    try:
        from rich.console import Console

        return Console(width=max(160, int(os.environ.get("COLUMNS", "0") or 0)), highlight=False)
    except ImportError:  # pragma: no cover
        return None


def _modules(d: Any, args: argparse.Namespace) -> list[Any]:
    mods = A._module_list(d)
    if not mods:
        raise UsageError("nothing to analyse: no module with HLO text, buffer assignment, live ranges or a "
                         f"memory-usage report in {' '.join(map(str, args.paths)) if hasattr(args, 'paths') else ''}"
                         + nothing_why(d))
    return select_module(mods, getattr(args, "module", None))


def _only_oom_reports(d: Any) -> bool:
    """The input holds out-of-memory reports (pasted logs) and no module to analyse."""
    return not A._module_list(d) and "oom_reports" in d and bool(d["oom_reports"].num_rows or d["oom_buffers"].num_rows)


def _plot_oom(d: Any, args: argparse.Namespace, base: str, ext: str) -> int:
    """``hlodump plot`` of a log: one picture per out-of-memory report (HTML: one page of all)."""
    from ..outputs import oom_plot

    if ext != ".png":
        _print(oom_plot.oom_html(d, args.output, top=max(args.top, 20)))
        return 0
    reports = A.oom_summary(d, top=max(args.top, 10))
    for r in reports:
        out = args.output if len(reports) == 1 else f"{base}.report{r['report_id']}{ext}"
        _print(oom_plot.plot_oom_png(r, out))
    return 0


def _analysing(n: int) -> Any:
    """A status line on stderr while the analysis runs (only on a terminal)."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(f"hlodump: analysing {n:,} module{'s' if n != 1 else ''}…")


# --sort keys of the overview: a module's figure for each (larger first; names A→Z)
_SORTS = {
    "peak": lambda s: A.peak_bytes(s) or 0,
    "total": lambda s: s["total_bytes"] or 0,
    "temp": lambda s: (s["memory_analysis"] or {}).get("temp_size_in_bytes", 0),
    "argument": lambda s: (s["memory_analysis"] or {}).get("argument_size_in_bytes", 0),
    "output": lambda s: (s["memory_analysis"] or {}).get("output_size_in_bytes", 0),
    "name": None,
}


def _sorted(s: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    if key == "name":
        return sorted(s, key=lambda m: m["module"])
    f = _SORTS[key]
    return sorted(s, key=lambda m: (-f(m), m["module"]))


#: Modules the overview lists unless ``--top N`` or ``--all`` says otherwise.
OVERVIEW_ROWS = 25
#: Modules detailed below the overview unless ``--top N`` or ``--all`` says otherwise.
DETAIL_MODULES = 3


def _failed_compile_dirs(paths: list[Any]) -> list[str]:
    """The dump folders of failed compiles next to their error texts: ``X.error.txt`` → ``X/``
    (how gen_accel.py and a dump of a failed TPU compile lay them out)."""
    out = []
    for p in map(str, paths):
        if p.endswith(".error.txt") and os.path.isdir(p[:-len(".error.txt")]):
            out.append(p[:-len(".error.txt")])
    return out


def _named_modules(d: Any) -> set[str]:
    """Module names the out-of-memory reports name (the TPU compiler's 'HLO module: NAME')."""
    if "oom_reports" not in d or not d["oom_reports"].num_rows:
        return set()
    t = d["oom_reports"].to_pylist()
    return {str(r["value"]) for r in t if r["section"] == "error" and r["key"] == "module"}


def _cmd_summary(args: argparse.Namespace) -> int:
    d = read(args.paths, args)
    if _only_oom_reports(d):
        extra = [x for x in _failed_compile_dirs(args.paths) if x not in map(str, args.paths)]
        if not extra or not _named_modules(d):
            return _oom_summary(d, args)
        # the failed compile wrote its dump next to the error text: its buffers, by source line
        try:
            d2 = read(list(args.paths) + extra, args)
        except Exception as e:  # noqa: BLE001 — the paste alone is still answered
            sys.stderr.write(f"hlodump: note: the failed compile's dump {' '.join(extra)} was not read ({e}); "
                             "--keep-going reads what it can\n")
            return _oom_summary(d, args)
        args.paths, d = list(args.paths) + extra, d2
        if not args.json:
            _print(f"(also reading the failed compile's dump: {' '.join(extra)})")
    named = _named_modules(d)
    if named and not args.json:
        _oom_summary(d, args)  # the error first, then the module it names
    if named and args.module is None:
        keys = [m.key for m in A._module_list(d) if m.name in named]
        if keys:
            args.module = keys[0] if len(keys) == 1 else None
    mods = _modules(d, args)
    with _analysing(len(mods)):
        # every module: module=None (the scope of the whole dump), never a list of every key
        s = A.summary(d, None if len(mods) == len(A._module_list(d)) else [m.key for m in mods], top=args.buffers)
    s = _sorted(s, args.sort)
    _attach_devices(d, s)
    if named and args.json:  # each module with the out-of-memory reports that name it
        from ..analysis.oom import oom_summary

        reps = oom_summary(d, top=args.buffers)
        names = {m.key: m.name for m in A._module_list(d)}
        for m in s:
            m["oom_reports"] = [r for r in reps if r["error"].get("module") == names.get(m["module"])]
    several = len(s) > 1 and args.module is None
    n_detail = len(s) if (args.all or not several) else (args.top if args.top is not None else DETAIL_MODULES)
    detail = s[:n_detail]
    if args.step is not None or args.memory_space is not None or getattr(args, "live", False):
        return _live_at(d, detail, args)
    if args.json:
        _json_lines(s if args.top is None or args.all else detail)
        return 0
    if not s:
        _print("no modules with buffer assignment or live ranges found")
        return 1
    con = _console()
    if several:
        n_rows = len(s) if args.all else (args.top if args.top is not None else OVERVIEW_ROWS)
        _render_overview(s, con, args.sort, len(detail), n_rows)
    # names, op_name and source paths come from the dump: no terminal escape reaches the screen
    # (escaped as shown: the modules detailed, not every module of the dump)
    for m in cli_safety.escape_data(detail):
        _render_summary(m, con)
    return 0


def _live_at(d: Any, detail: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """``summary --step N`` / ``--memory-space NAME``: what is live at step N (default: the peak
    in use) of a memory space (default: the main memory), per module detailed, largest first."""
    space: Any = args.memory_space
    if isinstance(space, str) and space.isdigit():
        space = int(space)
    keys = [m["module"] for m in detail]
    try:
        t = A.peak_buffers(d, keys, step=args.step, memory_space=space)
    except ValueError as e:
        raise UsageError(str(e)) from None
    fb = A.format_bytes
    rows = t.to_pylist()
    # each buffer's users (buffer assignment's uses, else the HLO text's): buffer_spans, one query
    spans = A.buffer_spans(d, keys)
    users = {(m, c, b): u for m, c, b, u in zip(*(spans.column(x).to_pylist() for x in ("module", "color", "buffer", "users")))}
    for r in rows:
        r["users"] = users.get((r["module"], r["color"], r["buffer"])) or []
    by_mod: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_mod.setdefault(r["module"], []).append(r)
    if args.json:
        _json_lines([{"module": k, "step": v[0]["step"], "live_bytes": v[-1]["cumulative_bytes"],
                      "buffers": v[: args.buffers]} for k, v in by_mod.items()])
        return 0
    from rich.table import Table

    con = _console()
    for key in keys:
        live = by_mod.get(key)
        if not live:
            _print(f"{key}: nothing live" + (f" at step {args.step}" if args.step is not None else "")
                   + " (no live ranges, or the step is past the module's end)")
            continue
        live = cli_safety.escape_data(live)
        head = live[0]
        spaces = sorted({r["memory_space"] for r in live})
        _print(f"{key}: {live[-1]['cumulative_bytes']:,} bytes ({fb(live[-1]['cumulative_bytes'])}) live at step "
               f"{head['step']} ({head['instruction_at_step']}) in {', '.join(spaces)}, each slice once; "
               f"{len(live)} values")
        t = Table(title=f"the {min(len(live), args.buffers)} largest", title_justify="left")
        for col in ("#", "buffer", "bytes", "space", "shape", "category", "producer", "users", "op_name", "source"):
            t.add_column(col, justify="right" if col in ("#", "bytes") else "left", overflow="fold")
        for r in live[: args.buffers]:
            us = r.get("users") or []
            t.add_row(str(r["rank"]), r["buffer"] or "", fb(r["bytes"]), r["memory_space"], r["shape"] or "",
                      r["category"] or "", f"{r['instruction']} ({r['opcode']})" if r.get("opcode") else (r["instruction"] or ""),
                      _short(", ".join(us[:4]) + (f" +{len(us) - 4}" if len(us) > 4 else "")),
                      _short(r["op_name"]), _short(r["source"], keep_tail=True))
        con.print(t)
    return 0


def _attach_devices(d: Any, s: list[dict[str, Any]]) -> None:
    """Each module's device and its capacity (``analysis.capacity.devices``), as ``device``
    (None where the dump does not name it): added next to the summary's figures, not in them."""
    from ..analysis.capacity import device_capacity

    by_module = {r["module"]: r for r in device_capacity(d).to_pylist()}
    for m in s:
        m["device"] = by_module.get(m["module"])


def _hbm_peak(m: dict[str, Any]) -> Optional[int]:
    """The peak to hold against the device's memory: memory space 0's most live bytes (HBM on
    TPU, device memory on GPU; the others are on-chip or host) where the timeline has it, else
    the module's peak in use."""
    for sp in (m.get("timeline") or {}).get("memory_spaces") or []:
        if sp.get("color") == 0 and sp.get("max_live_bytes") is not None:
            return int(sp["max_live_bytes"])
    return A.peak_bytes(m)


def _json_lines(rows: list[Any]) -> None:
    """A JSON array with one element per line: each element encoded by json's C encoder (an
    indented dump of 100,000 modules goes through the pure-Python one: minutes)."""
    out = sys.stdout
    out.write("[")
    for i, r in enumerate(rows):
        out.write(("\n" if i == 0 else ",\n") + json.dumps(r, default=str, ensure_ascii=False))
    out.write("\n]\n")


def _oom_summary(d: Any, args: argparse.Namespace) -> int:
    """``summary`` of out-of-memory reports (a pasted log): what failed, the memory in use by
    kind, the largest buffers with their source."""
    from ..analysis.oom import oom_summary

    reps = oom_summary(d, top=args.buffers)
    if args.json:
        json.dump(reps, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    fb = A.format_bytes
    reps = cli_safety.escape_data(reps)
    con = _console()
    for r in reps:
        head = (f"{r['path']}: out-of-memory report {r['report_id']} ({r['backend'] or 'backend unknown'}"
                + (f", {r['memory_space']}" if r["memory_space"] else "") + f", line {r['line']})"
                + (f", printed {r['times_printed']} times" if r["times_printed"] > 1 else ""))
        lines = [head]
        f = r["failed"]
        if "requested" in f:
            lines.append(f"failed: an allocation of {f['requested']['bytes']:,} bytes ({fb(f['requested']['bytes'])})")
        if "used" in f or "capacity" in f:
            used, cap = (f.get("used") or {}).get("bytes"), (f.get("capacity") or {}).get("bytes")
            exc = (f.get("exceeded") or {}).get("bytes")
            lines.append(f"failed: {fb(used)} used of {fb(cap)} capacity" + (f", exceeded by {fb(exc)}" if exc else ""))
        if "required for" in f and "required" in f:  # the TPU compiler's compile-time message
            need, have = f["required"]["bytes"], (f.get("available") or {}).get("bytes")
            space = r["memory_space"] or "memory"
            lines.append(f"failed: {f['required for']['text']} need {need:,} bytes ({fb(need)})"
                         + (f"; {space} has {have:,} bytes ({fb(have)}) available, short by {fb(need - have)}"
                            if have is not None else ""))
        if "requested" in f and "capacity" in f and not ("used" in f):  # E1001: one scoped allocation
            lines[-1] += f" in {r['memory_space'] or 'memory'} of {f['capacity']['bytes']:,} bytes ({fb(f['capacity']['bytes'])})"
        err = r.get("error") or {}
        if err:
            lines.append("error: " + " ".join(err[k] for k in ("code", "name") if k in err)
                         + "".join(f", {k} {v}" for k, v in err.items() if k not in ("code", "name")))
        skip = ("requested", "used", "capacity", "exceeded", "required for")
        other = {k: v for k, v in f.items() if k not in skip and not ("required for" in f and k in ("required", "available"))}
        if other:  # the TPU runtime's one-line messages: free / reserved / required / available
            text = ", ".join(f"{k} {fb(v['bytes']) if v['bytes'] is not None else v['text']}" for k, v in other.items())
            if "requested" in f:
                lines[-1] += f"; {text}"
            else:
                lines.append(f"failed: {text}")
        if not f:
            lines.append("failed: not in the paste" + (" (see missing below)" if r.get("missing") else ""))
        for section, kv in r["figures"].items():
            lines.append(f"{section.replace('_', ' ')}: " + ", ".join(
                f"{k} {fb(v['bytes']) if v['bytes'] is not None else v['text']}" for k, v in kv.items()))
        for m in r.get("missing") or []:
            lines.append(f"missing (line {m['line']}): {m['text']}")
        if con is None:  # pragma: no cover
            for ln in lines:
                _print(ln)
            continue
        con.print("\n".join(lines), markup=False)
        if r["buffers"]:
            from rich.table import Table

            t = Table(title=f"largest buffers ({len(r['buffers'])} of {r['n_buffers']})", title_justify="left")
            for col in ("#", "size", "shape", "op_name", "source", "kind"):
                t.add_column(col, justify="right" if col in ("#", "size") else "left", overflow="fold")
            for b in r["buffers"]:
                t.add_row(str(b["rank"]), fb(b["size_bytes"]) if b["size_bytes"] is not None else (b["size"] or ""),
                          b["shape"] or "", _short(b["op_name"]), _short(b["source"], keep_tail=True),
                          b.get("kind") or b["xla_label"] or b["allocation_type"] or "")
            con.print(t)
        con.print("")
    return 0


def _render_overview(s: list[dict[str, Any]], con: Any, sort: str, n_detail: int, n_rows: int) -> None:
    """One line per module for the first ``n_rows`` modules (sorted, ``--sort``; ``--top N``,
    ``--all``), then how many more, then the details of the first few."""
    fb = A.format_bytes
    title = (f"{len(s):,} modules, by {sort}" + (" (sorted by the peak in use: the most bytes live at once, "
                                                   "each allocation slice counted once; a module without a timeline by "
                                                   "XLA's listed peak, else by its allocation)"
                                                   if sort == "peak" else ""))
    above = cli_safety.escape_data([short_module_key(m["module"]) for m in s
                                    if A.peaks(m)["xla_listed_peak_above_allocated"]])
    head = s[:max(n_rows, 0)]
    names = cli_safety.escape_data([short_module_key(m["module"]) for m in head])  # only what is shown
    rows = []
    for name, m in zip(names, head):
        ma = m["memory_analysis"] or {}
        p = A.peaks(m)
        rows.append([name, fb(p["peak_in_use"]), fb(p["xla_listed_peak"]), fb(m["total_bytes"]),
                     fb(ma.get("argument_size_in_bytes")), fb(ma.get("output_size_in_bytes")),
                     fb(ma.get("temp_size_in_bytes")), str(len(m["notes"]))])
    cols = ("module", U.PEAK_IN_USE, U.XLA_LISTED_PEAK, "allocated", "argument", "output", "temp", "notes")
    more = len(s) - len(rows)
    if con is None or len(rows) > _RICH_ROWS:  # a long table: plain columns (rich lays out each cell: minutes)
        _print(title)
        for line in _plain_table(cols, rows):
            _print(line)
    else:
        from rich.table import Table

        t = Table(title=title, title_justify="left")
        for c in cols:
            t.add_column(c, justify="left" if c == "module" else "right", overflow="fold")
        for r in rows:
            t.add_row(*r)
        con.print(t)
    if above:
        _print(f"{U.XLA_LISTED_PEAK} is more than the module allocates in {len(above)} module"
               f"{'s' if len(above) != 1 else ''} ({', '.join(above[:5])}{' …' if len(above) > 5 else ''}): "
               f"{U.XLA_PEAK_ABOVE_ALLOCATED}")
    if more > 0:
        _print(f"… and {more:,} more: --all")
    if n_detail < len(s):
        _print(f"details of the first {n_detail} below (--top N, --all, or --module M for one)\n")


#: Above this many rows the overview is printed as plain columns, not a rich table.
_RICH_ROWS = 200


def _plain_table(cols: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    """``rows`` as lines of aligned columns (the first left-aligned, the rest right-aligned)."""
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def line(cells: Any) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(cols)] + [line(r) for r in rows]


def _per_space(m: dict[str, Any]) -> str:
    """`` across memory spaces: HBM 192.22MiB, VMEM 112.00MiB, …`` where a module has several
    (each space is its own memory: the total is no figure of one)."""
    spaces = [sp for sp in (m.get("timeline") or {}).get("memory_spaces") or [] if sp.get("allocated_bytes")]
    if len(spaces) < 2:
        return ""
    fb = A.format_bytes
    return " across memory spaces: " + ", ".join(f"{sp.get('memory_space') or 'color ' + str(sp['color'])} "
                                                 f"{fb(sp['allocated_bytes'])}" for sp in spaces)


def _render_summary(m: dict[str, Any], con: Any) -> None:
    fb = A.format_bytes
    if m["total_bytes"] is not None and not m["allocations"]:
        head = f"{m['module']}: total {m['total_bytes']:,} bytes ({fb(m['total_bytes'])}) as the dump states it"
    elif m["total_bytes"] is not None:
        head = (f"{m['module']}: total allocated {m['total_bytes']:,} bytes ({fb(m['total_bytes'])}) in "
                f"{m['allocations']} allocations" + _per_space(m))
    else:
        head = f"{m['module']}: no allocation totals in this input"
    pk = m["peak"]
    lines = [head]
    if m.get("device"):
        from ..analysis.capacity import capacity_line

        lines.append(capacity_line(_hbm_peak(m), m["device"], fb))
    if m.get("dump"):
        lines.append(f"dump: {m['dump']}")
    ma = m.get("memory_analysis")
    if ma:
        lines.append("memory_analysis: " + ", ".join(f"{k} {v:,}" for k, v in ma.items()
                                                     if v or not k.startswith("host_")))
    lines.extend(A.peak_story(m))
    if m.get("advice"):  # what to do about it, cheapest first (analysis.advice)
        more = m.get("n_advice", 0) - len(m["advice"])
        lines.append("what to do, cheapest first" + (f" ({more} more: hlodump.analysis.advice)" if more > 0 else "") + ":")
        lines.extend(f"  {i}. {a['text']}" for i, a in enumerate(m["advice"], 1))
    from ..analysis.cost import format_cost

    # format_cost(None) says why there is no figure (no after-optimizations HLO text)
    why_none = m.get("cost_note")
    lines.append("cost (XLA's HloCostAnalysis rules, as jax's cost_analysis()): "
                 + (f"none ({why_none})" if m.get("cost_analysis") is None and why_none else
                    format_cost(m.get("cost_analysis"))))
    tl = m["timeline"]
    if tl:
        lines.append(f"timeline: {tl['steps']} steps")
        for sp in tl["memory_spaces"]:
            if sp["allocated_bytes"]:
                name = sp.get("memory_space") or f"color {sp['color']}"
                label = name if name == f"color {sp['color']}" else f"{name} (color {sp['color']})"
                lines.append(f"  memory space {label}: {sp['max_live_bytes']:,} of {sp['allocated_bytes']:,} allocated "
                             f"bytes live at step {sp['step']}; free inside allocations {fb(sp['free_bytes'])} "
                             f"(fragmentation {100 * (sp['fragmentation'] or 0):.1f}%); padding {fb(sp['padding_bytes'])} "
                             f"({fb(sp['logical_bytes'])} logical)")
    pad = m["padding"]
    if pad["allocated_bytes"]:
        lines.append(f"padding, summed per value ({pad['values']:,} values; a slice shared by several values counts "
                     f"for each): {fb(pad['allocated_bytes'])} allocated for {fb(pad['logical_bytes'])} logical "
                     f"({fb(pad['padding_bytes'])} overhead); the values occupy {fb(pad['occupied_bytes'])} of "
                     f"the allocations, each byte once")
    for n in m["notes"]:
        lines.append(f"note: {n}")
    if con is None:  # pragma: no cover
        for ln in lines:
            _print(ln)
    else:
        from rich.table import Table

        con.print("\n".join(lines), markup=False)
        t = Table(title="memory spaces (allocated bytes by category)", title_justify="left")
        t.add_column("color", justify="right")
        t.add_column("total", justify="right")
        for c in A.CATEGORIES:
            t.add_column(c, justify="right")
        if pk:
            t.add_column(f"at {U.XLA_LISTED_PEAK}", justify="right")
        names = {sp["color"]: sp.get("memory_space") for sp in (m.get("timeline") or {}).get("memory_spaces") or []}
        for sp in m["memory_spaces"]:
            name = names.get(sp["color"])
            label = str(sp["color"]) if not name or name.startswith("color ") else f"{sp['color']} {name}"
            row = [label, fb(sp["allocated_bytes"])] + [fb(sp["by_category"][c]) for c in A.CATEGORIES]
            if pk:
                row.append(fb(pk["by_color"].get(str(sp["color"]), 0)))
            t.add_row(*row)
        if m["memory_spaces"]:  # (HLO text alone has none: the note says what is missing)
            con.print(t)
        if pk:
            # the list's bytes as printed, by category: they add up to the headline (issue 51)
            t = Table(title=f"{U.XLA_LISTED_PEAK} by category (bytes as listed, summing to the figure above)",
                      title_justify="left")
            t.add_column("total", justify="right")
            for c in pk["by_category"]:
                t.add_column(c, justify="right")
            t.add_row(fb(pk["bytes"]), *[fb(v) for v in pk["by_category"].values()])
            con.print(t)
        if m["top_buffers"]:
            tl = m.get("timeline") or {}
            at_use = m["top_buffers"][0].get("at") == "peak in use"
            where = (f"{U.PEAK_IN_USE} ({tl.get('memory_space') or 'main'}, step {tl.get('max_allocated_step')})"
                     if at_use else f"{U.XLA_LISTED_PEAK} (step {pk['step'] if pk else '?'})")
            t = Table(title=f"top {len(m['top_buffers'])} buffers at {where}",
                      title_justify="left")
            for col in ("#", "buffer", "bytes", "shape", "category", "alloc", "op_name", "source"):
                t.add_column(col, justify="right" if col in ("#", "bytes", "alloc") else "left", overflow="fold")
            for r in m["top_buffers"]:
                src = r["source"] or ""
                t.add_row(str(r["rank"]), r["buffer"] or "", f"{r['bytes']:,}", r["shape"] or "", r["category"] or "",
                          "" if r["allocation"] is None else str(r["allocation"]),
                          _short(r["op_name"]), _short(src, keep_tail=True))
            con.print(t)
        con.print("")


def _short(s: Optional[str], n: int = 60, keep_tail: bool = False) -> str:
    if not s:
        return ""
    if len(s) <= n:
        return s
    return "…" + s[-(n - 1):] if keep_tail else s[: n - 1] + "…"


def _cmd_plot(args: argparse.Namespace) -> int:
    from ..outputs import plot

    base, ext = os.path.splitext(args.output)
    ext = ext.lower()
    if ext not in (".png", ".html", ".htm"):
        raise UsageError("-o must end in .png or .html")
    if ext != ".png":
        try:
            import plotly  # noqa: F401
        except ImportError:
            raise UsageError("hlodump plot: HTML output needs plotly (its JavaScript is inlined into the page): "
                             "pip install 'hlodump[plot]' (or write a PNG: -o out.png)") from None
    d = read(args.paths, args)
    if _only_oom_reports(d):
        return _plot_oom(d, args, base, ext)
    sel = _modules(d, args)
    info = {m["module"]: m for m in A.modules(d).to_pylist()}
    keys = [m.key for m in sel if info[m.key]["n_live_ranges"] or info[m.key]["n_allocations"]]
    if not keys:
        notes = "; ".join(n for s in A.summary(d, [m.key for m in sel], top=0) for n in s["notes"][:1])
        raise UsageError(f"nothing to plot: {notes or 'no live ranges or allocations'}")
    for k in keys:
        out = args.output if len(keys) == 1 else f"{base}.{k}{ext}"
        if ext == ".png" and args.buffers is not None:
            plot.plot_buffers_png(d, k, out, top=args.buffers)
        elif ext == ".png":
            plot.plot_png(d, k, out, top=args.top)
        else:
            plot.plot_html(d, k, out, top=args.top)
        _print(out)
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    a, b = read(args.a, args), read(args.b, args)
    for d, p in ((a, args.a), (b, args.b)):
        if not A._module_list(d):
            raise UsageError(f"{p}: nothing to compare: no module with HLO text or buffer assignment" + nothing_why(d))
    if args.module is not None:
        hits = [A.match_modules(A._module_list(d), args.module) for d in (a, b)]
        if not hits[0] and not hits[1]:
            raise UsageError(str(A.NoSuchModule(args.module, [m.key for m in A._module_list(a)]
                                                + [m.key for m in A._module_list(b)])))
    with _analysing(len(A._module_list(a)) + len(A._module_list(b))):
        ex = A.explain(a, b, args.module, cost=not args.no_cost, top=args.limit,
                       cost_pairs=None if args.json else args.pairs)
        t = A.diff(a, b, args.module) if not args.no_changes else None
    rows = t.to_pylist() if t is not None else []
    _attach_pair_devices(a, b, ex)
    if args.json:
        json.dump(dict(ex, changes=rows), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    _print_explain(ex, args)
    if args.no_changes:
        return 0
    con = _console()
    fb = A.format_bytes
    if not rows:
        if not ex["pairs"] and not ex["only_a"] and not ex["only_b"]:
            _print("no differences")
        return 0
    from rich.table import Table

    def change(va: Any, vb: Any) -> str:
        d = (vb or 0) - (va or 0)
        return f"{fb(va)} -> {fb(vb)} ({'+' if d >= 0 else '-'}{fb(abs(d))})"

    per_module: dict[str, list[dict[str, Any]]] = {}  # grouped once (not a scan of every row per module)
    for r in rows:
        per_module.setdefault(r["module"], []).append(r)
    for mod, mr in per_module.items():
        first = mr[0]
        parts = []
        for r in mr:
            if r["what"] == "module":
                parts.append(f"module {r['change']}")
            elif r["what"] == "peak":  # each peak under its name (summary.peaks)
                name = U.PEAK_IN_USE if r["key"] == "peak_in_use" else U.XLA_LISTED_PEAK
                parts.append(f"{name} {change(r['a'], r['b'])}")
            elif r["what"] == "total":
                parts.append(f"total {change(r['a'], r['b'])}")
        cats = [f"{r['key']} {change(r['a'], r['b'])}" for r in mr if r["what"] == "category" and ":" not in r["key"]]
        spaces = [f"{r['key']} {change(r['a'], r['b'])}" for r in mr if r["what"] == "memory_space"]
        line = f"{first['module_a']} -> {first['module_b']}: " + (", ".join(parts) or "same peak and total")
        if cats:
            line += "; by category: " + ", ".join(cats)
        if spaces:
            line += "; by memory space: " + ", ".join(spaces)
        con.print(line, markup=False, soft_wrap=True)
        for r in mr:
            if r["what"] == "peak" and r["detail"]:
                con.print(f"  {r['detail']}", markup=False)
        # buffers and instruction counts matched by name are mostly renames across releases:
        # the explanation above matched them by source; their tables on request
        tables = ("buffer", "allocation", "instruction", "fusion_kind", "custom_call", "category") if args.all_changes \
            else ("allocation", "fusion_kind", "custom_call", "category")
        for what in tables:
            sub = [r for r in mr if r["what"] == what]
            if not sub:
                continue
            t2 = Table(title=f"{what} changes ({len(sub)}, largest first)", title_justify="left")
            for col in ("change", "key", "a", "b", "delta", "detail"):
                t2.add_column(col, overflow="fold", justify="right" if col in ("a", "b", "delta") else "left")
            limit = args.limit if what in ("buffer", "instruction") else len(sub)
            for r in sub[:limit]:
                num = (lambda v: "" if v is None else f"{v:,}")
                t2.add_row(r["change"], _short(r["key"], 70, keep_tail=True), num(r["a"]), num(r["b"]), num(r["delta"]),
                           _short(r["detail"], 60))
            if len(sub) > limit:
                t2.add_row("…", f"{len(sub) - limit} more (--limit, --json)", "", "", "", "")
            con.print(t2)
    return 0


def _attach_pair_devices(a: Any, b: Any, ex: dict[str, Any]) -> None:
    """Each module pair's peaks against its device's memory, where the dumps name the device
    (``device_a`` / ``device_b``: the capacity line, or None)."""
    from ..analysis.capacity import capacity_line

    caps = [{r["module"]: r for r in A.device_capacity(d).to_pylist()} for d in (a, b)]
    for p in ex["pairs"]:
        for side, cap in zip("ab", caps):
            dev = cap.get(p[f"module_{side}"])
            p[f"device_{side}"] = capacity_line(p[f"peak_{side}"], dev, A.format_bytes) if dev else None


def _print_explain(ex: dict[str, Any], args: argparse.Namespace) -> None:
    """The explanation of ``analysis.explain`` as text: per module pair (largest peak change
    first) the peak delta and its causes; then the modules of one side only."""
    fb = A.format_bytes

    def signed(v: Optional[int]) -> str:
        return "?" if v is None else f"{'+' if v >= 0 else '-'}{fb(abs(v))}"

    pairs = ex["pairs"]
    name = U.PEAK_IN_USE if ex["peak"] in ("peak_in_use", "live_by_slice") else ex["peak"].replace("_", " ")
    for p in pairs[:max(args.pairs, 0)]:
        head = f"{p['module_a']} -> {p['module_b']}: {name}"
        if p["peak_delta"] is None:
            _print(f"{head} unknown: {p['note']}")
            continue
        _print(f"{head} {fb(p['peak_a'])} -> {fb(p['peak_b'])} ({signed(p['peak_delta'])}; "
               f"{p['peak_delta']:+,} bytes)" + (f" [paired by {p['matched_by']}]" if p["matched_by"] in ("fingerprint", "similar name", "single module") else ""))
        for side in "ab":
            if p.get(f"device_{side}"):
                _print(f"  {side}: {p[f'device_{side}']}")
        kinds = [f"{k} {signed(v)}" for k, v in sorted(p["by_kind"].items(), key=lambda kv: -abs(kv[1])) if v]
        if kinds:
            _print("  by cause: " + ", ".join(kinds))
        shown = [c for c in p["causes"] if c["kind"] != "options" or c["bytes"] or
                 any(o["explicit"] and o["key"] == c["op_name"] for o in p["options"])]
        defaults = [o["key"] for o in p["options"] if not o["explicit"]]
        for c in shown[:args.limit]:
            where = f"{os.path.basename(c['source_file'] or '')}:{c['source_line']}" if c["source_file"] else ""
            _print(f"  {c['kind']:<11} {signed(c['bytes']):>11}  {_short(where, 30)}  "
                   f"{_short(c['op_name'] or '', 50, keep_tail=True)}  {_short(c['detail'] or '', 110)}")
        if len(shown) > args.limit:
            _print(f"  … {len(shown) - args.limit} more causes (--limit, --json)")
        if defaults:
            names = ", ".join(k.rsplit(".", 1)[-1] for k in defaults[:5])
            _print(f"  options: {len(defaults)} differ in the whole configuration only (a release's defaults?): "
                   f"{names}{' …' if len(defaults) > 5 else ''} (--json)")
        _print(f"  matched values renamed: {p['n_renamed']}; only in b: {p['n_added']}; only in a: {p['n_removed']}")
        for c in (p.get("cost") or [])[:5]:
            where = f"{os.path.basename(c['source_file'] or '')}:{c['source_line']}" if c["source_file"] else "(no source)"
            _print(f"  cost {where}: flops {c['flops_a']:,.0f} -> {c['flops_b']:,.0f}, bytes accessed "
                   f"{c['bytes_a']:,.0f} -> {c['bytes_b']:,.0f}")
        for c in (p.get("collectives") or [])[:5]:
            _print(f"  collective {c['kind']} {c['change']}: {c['count_a']} -> {c['count_b']}, "
                   f"{fb(c['bytes_a'])} -> {fb(c['bytes_b'])} ({c['op_name'] or ''})")
    if len(pairs) > args.pairs:
        _print(f"… {len(pairs) - args.pairs} more module pairs (--pairs N, --json)")
    if ex["only_a"]:
        _print(f"only in a ({len(ex['only_a'])}): " + ", ".join(ex["only_a"][:20]) + (" …" if len(ex["only_a"]) > 20 else ""))
    if ex["only_b"]:
        _print(f"only in b ({len(ex['only_b'])}): " + ", ".join(ex["only_b"][:20]) + (" …" if len(ex["only_b"]) > 20 else ""))
    if pairs:
        _print("")


def register(sub: Any) -> None:
    """Add ``summary``, ``plot`` and ``diff`` to the ``hlodump`` sub-command parser."""
    sp = sub.add_parser("summary", help="memory summary: one line per module, then jax's memory_analysis figures, "
                                        "the peak, timeline and top buffers of the largest modules")
    add_common(sp)
    sp.add_argument("--top", type=int, default=None, metavar="N",
                    help=f"the overview lists the first N modules (default {OVERVIEW_ROWS}) and details the first N "
                         f"(default {DETAIL_MODULES}); with --json: all modules unless given")
    sp.add_argument("--all", action="store_true", help="every module in the overview and in detail")
    sp.add_argument("--sort", choices=sorted(_SORTS), default="peak",
                    help="order of the modules (default: peak, largest first)")
    sp.add_argument("--buffers", type=int, default=10, metavar="N", help="buffers at the peak to show (default 10)")
    sp.add_argument("--step", "--at", dest="step", type=int, default=None, metavar="N",
                    help="what is live at schedule step N (of --memory-space), largest first, instead of the summary")
    sp.add_argument("--live", action="store_true",
                    help="what is live at the peak in use (of --memory-space), largest first, with each buffer's "
                         "producer and users, instead of the summary")
    sp.add_argument("--memory-space", default=None, metavar="NAME",
                    help="the memory space of --step or of the peak in use: a name the dump gives (HBM, vmem, "
                         "host (pinned) …), a color number, or 'all' (default: the main memory, color 0)")
    sp.set_defaults(func=_cmd_summary)

    sp = sub.add_parser("plot", help="memory in use vs program order (PNG, or the interactive page of hlodump report)")
    add_common(sp, json=False)
    sp.add_argument("-o", "--output", required=True, help="out.png or out.html (one per module: suffixed)")
    sp.add_argument("--top", type=int, default=5, help="peak buffers to label (default 5)")
    sp.add_argument("--buffers", type=int, nargs="?", const=400, default=None, metavar="N",
                    help="the memory viewer: every buffer as a bar from its definition to its last use, at its "
                         "address, per memory space (the N largest, default 400; the rest folded). A PNG draws "
                         "it alone; the HTML page always has it, under the timeline")
    sp.set_defaults(func=_cmd_plot)

    sp = sub.add_parser("diff", help="what changed in memory between two compiles")
    sp.add_argument("a", help="the old dump (file or directory)")
    sp.add_argument("b", help="the new dump (file or directory)")
    add_common(sp, paths=None)
    sp.add_argument("--limit", type=int, default=30, help="rows per buffer/instruction table, causes, renames "
                                                          "(default 30)")
    sp.add_argument("--pairs", type=int, default=10, metavar="N",
                    help="module pairs explained in the text, largest peak change first (default 10; --json: all)")
    sp.add_argument("--no-cost", action="store_true", help="leave out the FLOPs/bytes and collectives per source line (the text computes "
                                                            "them for the pairs it shows, --json for all)")
    sp.add_argument("--no-changes", action="store_true",
                    help="the explanation only (no tables of changed allocations, fusion kinds, custom calls)")
    sp.add_argument("--all-changes", action="store_true",
                    help="also the tables of buffers and instruction counts matched by name (--json has them always)")
    sp.set_defaults(func=_cmd_diff)
