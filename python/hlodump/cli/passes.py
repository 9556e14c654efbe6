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
    from ..capture import _changed, _listing

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
    # what DIR held before (an earlier run's dump): never reported as this run's modules
    # (the stale-file rule of hlodump.capture: by name, inode, size and times)
    before = _listing(out) if args.output else {}
    run = _Run(cmd, env, out)
    status = run.wait()
    if status < 0:  # killed by a signal (subprocess gives -N): say which, exit 128+N as a shell does
        print(f"hlodump: record: {shlex.join(cmd)} was killed by {_signal_name(-status)}", file=sys.stderr)
        status = EXIT_SIGNAL_BASE - status
    elif status != 0:
        print(f"hlodump: record: {shlex.join(cmd)} exited with status {status}", file=sys.stderr)
    if run.stopped_by is not None:  # SIGTERM / SIGINT to hlodump: forwarded, the program waited for
        name = _signal_name(run.stopped_by)
        how = "passed on to" if run.forwarded else "also sent by the terminal to"
        print(f"hlodump: record: stopped by {name} ({how} {shlex.join(cmd)[:80]}, which ended); "
              f"dump kept in {out}", file=sys.stderr)
        if run.stopped_by == 2:
            raise KeyboardInterrupt
        return EXIT_SIGNAL_BASE + run.stopped_by
    written = set(_changed(before, _listing(out)))
    stale = sum(1 for p in before if p not in written)
    if stale:
        print(f"hlodump: record: note: {stale:,} file{'s' if stale != 1 else ''} of an earlier run in {out} left out "
              "(only the files this run wrote are read)", file=sys.stderr)
    collisions = run.collisions()
    if collisions:
        shown = ", ".join(os.path.relpath(p, out) for p in collisions[:3]) + (", …" if len(collisions) > 3 else "")
        print(f"hlodump: record: warning: {len(collisions):,} dump file{'s were' if len(collisions) != 1 else ' was'} "
              f"written more than once during the run ({shown}): more than one process (the program and a child "
              "it started?) dumped into the same folder, and each later file replaced the earlier one, so those "
              "modules are only the last process's. Give each process its own --xla_dump_to to keep them all.",
              file=sys.stderr)
    elif run.watch_note:
        print(f"hlodump: record: note: {run.watch_note}", file=sys.stderr)
    rows = _recorded_modules(out, args, written)
    if args.json:
        json.dump({"dump": out, "status": status, "modules": rows,
                   "written_twice": [os.path.relpath(p, out) for p in collisions],
                   "earlier_files_left_out": stale}, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _render_record(rows, out, args.top)
    return status


def _signal_name(n: int) -> str:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


#: Signals to ``hlodump record`` that are passed on to the recorded program.
_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
_SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel sent (a terminal's Ctrl-C to the group)


class _Run:
    """The recorded program, run to its end: SIGINT, SIGTERM and SIGHUP to ``hlodump record``
    are passed on to it (a terminal's Ctrl-C reaches the program by itself, as it is in our
    process group: not sent twice) and the program is waited for, never left running; every
    file written into the dump folder is counted (inotify, Linux), so a file written twice — two
    processes dumping the same ``module_NNNN`` names — is known."""

    def __init__(self, cmd: list[str], env: dict[str, str], out: str) -> None:
        import signal

        self.cmd, self.out = cmd, out
        self.stopped_by: Optional[int] = None
        self.forwarded = False
        self._watch = _Watch(out)
        self._sigs = {getattr(signal, n) for n in _FORWARDED}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, self._sigs)  # taken by sigtimedwait below
        self._old_mask = old
        try:
            self.proc = subprocess.Popen(cmd, env=env, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, old))
        except FileNotFoundError:
            self._restore()
            raise UsageError(f"record: no such command: {cmd[0]}") from None
        except PermissionError:
            self._restore()
            raise UsageError(f"record: cannot run {cmd[0]}: permission denied") from None
        except BaseException:
            self._restore()
            raise

    def _restore(self) -> None:
        import signal

        signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        self._watch.close()

    def wait(self) -> int:
        import signal

        try:
            while True:
                info = signal.sigtimedwait(self._sigs, 0.1)
                self._watch.read()
                if info is not None:
                    if self.stopped_by is None or info.si_signo != signal.SIGINT:
                        self.stopped_by = info.si_signo
                    if info.si_code != _SI_KERNEL:  # kill(): the program did not get it; pass it on
                        try:
                            self.proc.send_signal(info.si_signo)
                            self.forwarded = True
                        except ProcessLookupError:
                            pass
                status = self.proc.poll()
                if status is not None:
                    self._watch.read()
                    return status
        finally:
            # a signal that came after the program ended: the run is over, nothing to pass on
            while signal.sigtimedwait(self._sigs, 0) is not None:
                pass
            self._restore()

    @property
    def watch_note(self) -> Optional[str]:
        return self._watch.note

    def collisions(self) -> list[str]:
        # XLA itself writes a module's `.debug_options` at every dump stage of one compile (the
        # same text each time, jax 0.10.2): a second write of it is no second process
        return sorted(p for p, n in self._watch.writes.items()
                      if n > 1 and os.path.isfile(p) and not p.endswith(REWRITTEN_BY_XLA))


#: Dump files XLA rewrites within one compile of one process (not a collision of two).
REWRITTEN_BY_XLA = (".debug_options",)


class _Watch:
    """Counts the writes (closes after writing) of every file under a folder, sub-folders made
    meanwhile included, with inotify (Linux; elsewhere ``note`` says the check was not made)."""

    IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_ISDIR, IN_Q_OVERFLOW = 0x8, 0x80, 0x100, 0x40000000, 0x4000

    def __init__(self, root: str) -> None:
        self.writes: dict[str, int] = {}
        self.note: Optional[str] = None
        self._dirs: dict[int, str] = {}
        self.fd = -1
        try:
            import ctypes

            self._libc = ctypes.CDLL(None, use_errno=True)
            self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            self.fd = -1
        if self.fd < 0:
            self.note = "files written twice (two processes dumping into one folder) could not be checked here"
            return
        for d, _subdirs, _files in os.walk(root):
            self._add(d)

    def _add(self, d: str) -> None:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(d),
                                          self.IN_CLOSE_WRITE | self.IN_MOVED_TO | self.IN_CREATE)
        if wd >= 0:
            self._dirs[wd] = d

    def read(self) -> None:
        import struct

        if self.fd < 0:
            return
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                return
            i = 0
            while i + 16 <= len(buf):
                wd, mask, _cookie, n = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16:i + 16 + n].split(b"\0", 1)[0]
                i += 16 + n
                if mask & self.IN_Q_OVERFLOW:
                    self.note = "too many files were written at once to check them all for files written twice"
                    continue
                d = self._dirs.get(wd)
                if d is None or not name:
                    continue
                p = os.path.join(d, os.fsdecode(name))
                if mask & self.IN_ISDIR:
                    if mask & self.IN_CREATE:
                        self._add(p)
                    continue
                if mask & (self.IN_CLOSE_WRITE | self.IN_MOVED_TO):
                    self.writes[p] = self.writes.get(p, 0) + 1

    def close(self) -> None:
        if self.fd >= 0:
            self.read()
            os.close(self.fd)
            self.fd = -1


def _recorded_modules(out: str, args: argparse.Namespace, written: set[str]) -> list[dict[str, Any]]:
    """Per module of the dump (the files of ``written`` only): jax's memory_analysis figures and
    totals, largest first."""
    from .. import analysis as A

    if not written:
        return []
    d = read(out, args, only={os.path.abspath(p) for p in written})
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
    from ..analysis.passes import NoSuchInstruction, NoSuchPass, history, pass_changes, pass_diff
    from ..analysis.passes import passes as pass_table

    if args.instruction and args.diff is not None:
        raise UsageError("passes: --instruction and --diff are two different questions: ask one")
    if args.context < 0:
        raise UsageError(f"passes: --context must be 0 or more, not {args.context}")
    d = read(args.paths, args, tables=["instructions", "computations"] if args.diff is not None else ["instructions"])
    diff_text = None
    try:
        if args.instruction:
            t = history(d, args.module, args.instruction)
        elif args.diff is not None:
            t = pass_changes(d, args.module, args.diff)
            if not args.json:
                diff_text = pass_diff(d, args.module, args.diff, context=args.context)
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
        _print(escape_controls(diff_text) if diff_text else f"pass {args.diff} changed no instruction")
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
                                                   "index, a pass name or PIPELINE/PASS): the file against the "
                                                   "previous dumped pass, each change among its neighbours")
    sp.add_argument("-U", "--context", type=int, default=3, metavar="N",
                    help="--diff: unchanged lines shown around each change (default 3, as diff -u)")
    sp.set_defaults(func=_cmd_passes)
