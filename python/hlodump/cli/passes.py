"""``hlodump record`` and ``hlodump passes``: dump a program's compiles, and read a compile pass by pass.

    hlodump record [-o DIR] [--passes] [--top N] [--json] -- CMD [ARG…]
    hlodump passes PATH… [--module M] [--instruction NAME | --diff PASS] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from typing import Any, Optional

from .common import EXIT_SIGNAL_BASE, UsageError, add_common, nothing_why, read

__all__ = ["register", "merge_xla_flags", "parse_xla_flags", "quote_xla_flag"]

_DUMP_FLAGS = ("--xla_dump_to", "--xla_dump_hlo_pass_re")


def _print(text: str = "") -> None:
    sys.stdout.write(text + "\n")


# XLA's reading of XLA_FLAGS (xla/parse_flags_from_env.cc, ``SetArgvFromEnv`` and
# ``ParseArgvFromString``): a value whose first non-blank character is not '-' names a file whose
# text holds the flags; flags are separated by blanks (space, tab, CR, LF); a flag is '-'
# followed by letters, digits, '-' and '_', and when '=' and a quote (' or ") follow, the value
# runs to the matching quote (in double quotes a backslash takes the next character literally),
# otherwise the flag runs to the next blank; reading stops at the first word not starting with '-'.
_XLA_WS = " \t\r\n"


def parse_xla_flags(text: str) -> tuple[list[str], str]:
    """(the argv XLA makes of ``text``, the text XLA ignores: from the first word that is not a
    flag on). Each argv element is ``--name=value`` with quotes removed."""
    out: list[str] = []
    n, b = len(text), 0
    while b < n and text[b] in _XLA_WS:
        b += 1
    while b < n and text[b] == "-":
        e = b
        while e < n and text[e].isascii() and (text[e] in "-_" or text[e].isalnum()):
            e += 1
        if e < n and text[e] == "=" and e + 1 < n and text[e + 1] in "'\"":
            e += 1
            head = text[b:e]
            quote = text[e]
            e += 1
            value = []
            while e < n and text[e] != quote:
                c = text[e]
                if quote == '"' and c == "\\" and e + 1 < n:
                    e += 1
                    c = text[e]
                value.append(c)
                e += 1
            if e < n:
                e += 1
            out.append(head + "".join(value))
        else:
            while e < n and text[e] not in _XLA_WS:
                e += 1
            out.append(text[b:e])
        while e < n and text[e] in _XLA_WS:
            e += 1
        b = e
    return out, text[b:]


def quote_xla_flag(arg: str) -> str:
    """``arg`` (``--name=value``) written so that ``parse_xla_flags`` gives it back: a value with
    a blank or starting with a quote is double-quoted, backslashes and double quotes escaped."""
    name, eq, value = arg.partition("=")
    if not eq or not (any(c in _XLA_WS for c in value) or value[:1] in ("'", '"')):
        if not any(c in _XLA_WS for c in arg):
            return arg
    if not eq or not all(c.isascii() and (c in "-_" or c.isalnum()) for c in name):
        raise ValueError(f"XLA cannot be given {arg!r}: a flag name with a blank")
    return name + '="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _flag_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def merge_xla_flags(existing: Optional[str], dump_to: str, passes: bool) -> str:
    """``XLA_FLAGS`` for the recorded program: the user's flags (read by XLA's own rules: quoted
    values, or the flags file the value names) kept, except the ones we set (``--xla_dump_to``,
    and ``--xla_dump_hlo_pass_re`` with ``passes``), then ours; values quoted as XLA reads them."""
    text = existing or ""
    stripped = text.lstrip(_XLA_WS)
    if stripped and not stripped.startswith("-"):  # XLA reads the flags from this file
        try:
            with open(text, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError as e:
            raise UsageError(f"record: XLA_FLAGS names a flags file XLA would read, {text!r}, "
                             f"which cannot be read: {e.strerror or e}") from None
    args, ignored = parse_xla_flags(text)
    if ignored.strip():
        print(f"hlodump: record: XLA ignores XLA_FLAGS from {ignored.strip()[:60]!r} on (not a --flag); "
              "left out", file=sys.stderr)
    ours = [f"--xla_dump_to={dump_to}"] + (["--xla_dump_hlo_pass_re=.*"] if passes else [])
    replaced = {"--xla_dump_to"} | ({"--xla_dump_hlo_pass_re"} if passes else set())
    kept = [a for a in args if _flag_name(a) not in replaced]
    return " ".join(quote_xla_flag(a) for a in kept + ours)


# --------------------------------------------------------------------------------- record

def _cmd_record(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("record: no command to run (hlodump record [-o DIR] -- python train.py …)")
    if args.output:
        out = os.path.abspath(args.output)
        os.makedirs(out, exist_ok=True)
    else:
        out = tempfile.mkdtemp(prefix="hlodump-record-")
    env = dict(os.environ, XLA_FLAGS=merge_xla_flags(os.environ.get("XLA_FLAGS"), out, args.passes))
    try:
        status = subprocess.call(cmd, env=env)
    except FileNotFoundError:
        raise UsageError(f"record: no such command: {cmd[0]}") from None
    except PermissionError:
        raise UsageError(f"record: cannot run {cmd[0]}: permission denied") from None
    if status < 0:  # killed by a signal (subprocess gives -N): say which, exit 128+N as a shell does
        import signal

        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        print(f"hlodump: record: {shlex.join(cmd)} was killed by {name}", file=sys.stderr)
        status = EXIT_SIGNAL_BASE - status
    elif status != 0:
        print(f"hlodump: record: {shlex.join(cmd)} exited with status {status}", file=sys.stderr)
    rows = _recorded_modules(out, args)
    if args.json:
        json.dump({"dump": out, "status": status, "modules": rows}, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _render_record(rows, out, args.top)
    return status


def _recorded_modules(out: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Per module of the dump: jax's memory_analysis figures and totals, largest first."""
    from .. import analysis as A

    if not any(os.scandir(out)):
        return []
    d = read(out, args)
    if not A._module_list(d):
        return []
    rows = []
    for m in A.summary(d, top=0):
        ma = m.get("memory_analysis") or {}
        pk = A.peaks(m)  # each figure under its one name (hlodump.units, docs/peaks.md)
        rows.append({"module": m["module"], "total_bytes": m["total_bytes"], "allocations": m["allocations"],
                     "peak_in_use": pk["peak_in_use"], "xla_listed_peak": pk["xla_listed_peak"],
                     **{k: ma.get(k) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                               "alias_size_in_bytes", "temp_size_in_bytes", "peak_memory_in_bytes")}})
    rows.sort(key=lambda r: (-(r["total_bytes"] or 0), r["module"]))
    return rows


def _render_record(rows: list[dict[str, Any]], out: str, top: int) -> None:
    from .. import analysis as A

    fb = A.format_bytes
    if not rows:
        _print(f"no module compiled (nothing with buffer assignment or HLO text in {out})")
    else:
        _print(f"{len(rows)} module{'s' if len(rows) != 1 else ''} compiled, largest first:")
        from ..units import JAX_PEAK, PEAK_IN_USE

        # the peak in use as summary/report/plot name it; jax's figure under jax's name
        head = ("module", "allocated", PEAK_IN_USE, "arguments", "outputs", "aliased", "temporaries", JAX_PEAK)
        shown = rows[:top] if top > 0 else rows
        table = [head] + [(r["module"], fb(r["total_bytes"]), fb(r["peak_in_use"]), fb(r["argument_size_in_bytes"]),
                           fb(r["output_size_in_bytes"]), fb(r["alias_size_in_bytes"]), fb(r["temp_size_in_bytes"]),
                           fb(r["peak_memory_in_bytes"])) for r in shown]
        _print_columns(table)
        if len(shown) < len(rows):
            _print(f"… {len(rows) - len(shown)} more (--top 0 lists all, --json)")
    _print(f"dump kept in {out}")


def _print_columns(table: list[tuple[Any, ...]], text_columns: int = 1) -> None:
    """Plain aligned columns, the first ``text_columns`` left, the figures right (pipes and
    terminals alike)."""
    from ..cli_safety import escape_controls

    cells = [[escape_controls(str(c)) for c in row] for row in table]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    for r in cells:
        _print("  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip())


# --------------------------------------------------------------------------------- passes

def _cmd_passes(args: argparse.Namespace) -> int:
    from .. import analysis as A
    # the module, not the function that ``hlodump.analysis.passes`` names
    from ..analysis.passes import NoSuchInstruction, NoSuchPass, history, pass_changes, unified_diff
    from ..analysis.passes import passes as pass_table

    if args.instruction and args.diff is not None:
        raise UsageError("passes: --instruction and --diff are two different questions: ask one")
    d = read(args.paths, args, tables=["instructions"])
    try:
        if args.instruction:
            t = history(d, args.module, args.instruction)
        elif args.diff is not None:
            t = pass_changes(d, args.module, args.diff)
        else:
            t = pass_table(d, args.module)
    except (A.NoSuchModule, NoSuchInstruction, NoSuchPass) as e:
        if isinstance(e, A.NoSuchModule) and e.wanted is None and not e.choices:
            raise UsageError(f"passes: no per-pass HLO files in {' '.join(args.paths)} (dump with "
                             "--xla_dump_hlo_pass_re=.*: hlodump record --passes, hlodump.capture(..., passes=True))"
                             + nothing_why(d)) from None
        if isinstance(e, A.NoSuchModule) and e.wanted is None:
            raise UsageError(f"passes: several modules have per-pass files, choose one with --module: "
                             f"{', '.join(e.choices[:40])}") from None
        raise UsageError(f"passes: {e}") from None
    if args.json:
        json.dump(t.to_pylist(), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return 0
    if args.instruction:
        _render_history(t)
    elif args.diff is not None:
        from ..cli_safety import escape_controls

        _render_diff_head(d, args, t)
        _print(escape_controls(unified_diff(t)) if t.num_rows else f"pass {args.diff} changed no instruction")
    else:
        if t.num_rows == 0:
            raise UsageError(f"passes: no per-pass HLO files in {' '.join(args.paths)} (dump with "
                             "--xla_dump_hlo_pass_re=.*: hlodump record --passes, hlodump.capture(..., passes=True))"
                             + nothing_why(d))
        _render_passes(t)
    return 0


def _render_diff_head(d: Any, args: argparse.Namespace, changes: Any) -> None:
    """``--diff``: which dumped pass the diff is against, and the passes not dumped in between
    (from the changes' rows; from the pass table when the pass changed nothing)."""
    from ..analysis.passes import between_passes, passes as pass_table
    from ..cli_safety import escape_controls

    if changes.num_rows:
        firsts = {r["file_id"]: r for r in changes.to_pylist()}.values()
        rows = [{**r, "prev_pass_index": r["before_pass_index"], "prev_pass_name": r["before_pass_name"]}
                for r in firsts]
    else:
        rows = pass_table(d, args.module).to_pylist()
    sel = str(args.diff).strip()
    for r in rows:
        # the files pass_changes chooses
        if sel.isdigit():
            hit = r["pass_index"] == int(sel)
        elif "/" in sel:
            hit = sel == f"{r['pipeline']}/{r['pass_name']}"
        else:
            hit = sel in (r["pass_name"], r["substep"])
        if not hit:
            continue
        if r["prev_pass_index"] is None:
            against = "the module's first file dumped: everything in it is added"
        else:
            against = f"against pass {r['prev_pass_index']} ({r['prev_pass_name']}), the previous pass dumped"
        gap = between_passes({**r, "before_pass_index": r["prev_pass_index"], "before_pass_name": r["prev_pass_name"]})
        _print(escape_controls(f"pass {r['pass_index']} ({r['pass_name']}) {against}"
                               + (f"; {gap}: their changes are in this diff too" if gap else "")))


def _render_passes(t: Any) -> None:
    from ..analysis.passes import gaps

    per_module: dict[str, list[dict[str, Any]]] = {}  # grouped once (not a scan of every row per module)
    for r in t.to_pylist():
        per_module.setdefault(r["module"], []).append(r)
    gaps_of: dict[str, list[dict[str, Any]]] = {}
    for g in gaps(t):
        gaps_of.setdefault(g["module"], []).append(g)
    for module, mine in per_module.items():
        mine_gaps = gaps_of.get(module, [])
        _print(f"{module}: {len(mine)} per-pass files"
               + (f", {sum(g['count'] for g in mine_gaps)} passes not dumped" if mine_gaps else ""))
        table = [("pipeline", "pass", "#", "instructions", "added", "removed", "changed")]
        for r in mine:
            name = r["pass_name"] or ""
            if r["substep"] and r["substep"] != name:
                name = f"{name} ({r['substep']})"
            table.append((r["pipeline"] or "-", name, str(r["pass_index"]), str(r["instructions"]), str(r["added"]),
                          str(r["removed"]), str(r["changed"])))
        _print_columns(table, text_columns=2)
        for g in mine_gaps:
            span = f"pass {g['first']}" if g["first"] == g["last"] else f"passes {g['first']}–{g['last']}"
            where = (f"between {g['after_pass_index']} ({g['after_pass_name']}) and "
                     if g["after_pass_index"] is not None else "before ")
            _print(f"not dumped: {span}, {where}{g['before_pass_index']} ({g['before_pass_name']}): the counts "
                   f"of {g['before_pass_index']} are against {g['after_pass_index'] if g['after_pass_index'] is not None else 'nothing'}")
        _print("")


def _render_history(t: Any) -> None:
    from ..cli_safety import escape_controls

    from ..analysis.passes import between_passes

    for r in t.to_pylist():
        gap = between_passes(r)
        if gap:  # not "removed at pass 54" when 28–53 were never dumped
            _print(escape_controls(f"{r['change']} {gap}"))
        else:
            _print(escape_controls(f"{r['pass_index']:04d} {r['pipeline'] or '-'}/{r['pass_name']}: {r['change']}"))
        if r["before"] is not None:
            _print(escape_controls(f"  - {r['before']}"))
        if r["after"] is not None:
            _print(escape_controls(f"  + {r['after']}"))


def register(sub: Any) -> None:
    """Add ``record`` and ``passes`` to the ``hlodump`` sub-command parser."""
    sp = sub.add_parser("record", help="run a program with XLA dumping its compiles, then summarise them",
                        description="Run CMD with --xla_dump_to (merged into the XLA_FLAGS it has), then print the "
                                    "memory summary of every module it compiled, largest first. Exit status: CMD's "
                                    "(128+N when it was killed by signal N).")
    sp.add_argument("-o", "--output", help="the dump directory (kept; default: a new temporary directory, printed)")
    sp.add_argument("--passes", action="store_true",
                    help="also dump the module after every pass that changed it (--xla_dump_hlo_pass_re=.*), "
                         "for hlodump passes")
    sp.add_argument("--top", type=int, default=20, help="modules to list (default 20; 0: all)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--threads", type=int, default=None, help="worker threads for reading the dump")
    sp.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program and its arguments")
    sp.set_defaults(func=_cmd_record)

    sp = sub.add_parser("passes", help="a compile pass by pass: what each HLO pass added, removed, changed",
                        description="Reads the per-pass HLO files of --xla_dump_hlo_pass_re=.* dumps.")
    add_common(sp)
    sp.add_argument("--instruction", metavar="NAME", help="the story of one instruction: every pass that added, "
                                                           "changed or removed it, with its text before and after")
    sp.add_argument("--diff", metavar="PASS", help="a unified diff of the instructions one pass changed (PASS: a pass "
                                                   "index, a pass name or PIPELINE/PASS)")
    sp.set_defaults(func=_cmd_passes)
