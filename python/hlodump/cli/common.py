"""What every ``hlodump`` command shares: paths, ``--keep-going``, ``--errors-ok``,
``--threads``, ``--module``, ``--json``; reading with a one-line error report; user mistakes
as a message and exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..io.failures import failures, listed, notes, symlinks_hint
from ..io.failures import nothing_why  # noqa: F401 (the commands take it from here)

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["UsageError", "FilesFailedError", "add_common", "read", "finish", "select_module", "storage_options",
           "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE", "EXIT_ENVIRONMENT", "EXIT_STATUSES"]


#: Exit statuses, one per kind of problem (``hlodump --help`` and docs/bad-input.md show them).
EXIT_OK = 0
#: The input holds problems: malformed lines, files that could not be read as a whole (a
#: corrupt or cut-off compressed file, a decompression bomb, a FIFO in a directory …), the same
#: file twice with different content; with ``--keep-going``: problems were reported.
EXIT_INPUT = 1
#: What was asked cannot be done as asked: a bad option, an unknown module, bad SQL, an output
#: that exists (without ``--overwrite``), an input path that does not exist or is no file or
#: directory (``/dev/null``, a FIFO or device named), a URL hlodump does not read.
EXIT_USAGE = 2
#: The environment failed: out of memory, an object store that cannot be reached or refuses the
#: credentials, an output that cannot be written.
EXIT_ENVIRONMENT = 3
#: ``hlodump record``: the program was killed by signal N: 128 + N (Ctrl-C of hlodump: 130).
EXIT_SIGNAL_BASE = 128

EXIT_STATUSES = f"""exit status:
  {EXIT_OK}    success
  {EXIT_INPUT}    the input holds problems: malformed lines, a file that cannot be read as a whole
       (corrupt or cut-off compressed file, decompression bomb, FIFO in a directory …), the same
       file twice with different content; with --keep-going: problems were reported
  {EXIT_USAGE}    usage: a bad option, unknown module, bad SQL, an output that exists, an input path
       that does not exist or is no file or directory (/dev/null, a FIFO), a URL not read
  {EXIT_ENVIRONMENT}    environment: out of memory, object store unreachable or refusing, output not writable
  128+N  hlodump record: the program was killed by signal N (130: interrupted by Ctrl-C)
  record otherwise exits with the program's own status. See docs/bad-input.md."""


class UsageError(Exception):
    """A mistake in what the user asked for: printed as ``hlodump: <message>``, exit status 2."""


class FilesFailedError(Exception):
    """Files found in a directory (or archive, or listing) could not be read as a whole and
    ``--keep-going`` was not given: exit status 1, every file named with why."""


def add_common(sp: argparse.ArgumentParser, paths: str = "+", module: bool = True, json: bool = True) -> None:
    """The options every command takes. ``paths``: argparse ``nargs`` of the PATH argument
    (``None``: the command declares its own paths)."""
    if paths is not None:
        sp.add_argument("paths", nargs=paths, metavar="PATH",
                        help="a dump file of any kind, a dump directory (recursive), a glob; several allowed")
    sp.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    sp.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE", dest="storage_option",
                    help="an option of the object store of URL paths (s3://, gs://, az://, memory:// …), e.g. "
                         "aws_endpoint=http://127.0.0.1:9000; several allowed (default: the usual environment "
                         "variables, AWS_ENDPOINT_URL …)")
    sp.add_argument("--keep-going", action="store_true",
                    help="report malformed lines and unreadable files instead of stopping (one line on stderr at "
                         "the end; exit status 1 unless --errors-ok)")
    sp.add_argument("--errors-ok", action="store_true", help="with --keep-going: exit 0 even if there were errors")
    sp.add_argument("--strict", action="store_true",
                    help="what this version does not know (a newer XLA's flag, attribute or section: one "
                         "'note' line each kind otherwise) is an error")
    sp.add_argument("--follow-links", action="store_true",
                    help="follow symlinks that lead out of a directory read (default: such a link is a file not "
                         "read, an error)")
    add_decompression(sp)
    if module:
        sp.add_argument("--module", help="one module: its key, name, id (0 / 0002) or a unique substring")
    if json:
        sp.add_argument("--json", action="store_true", help="machine-readable output")


def add_decompression(sp: argparse.ArgumentParser) -> None:
    """``--max-decompressed-ratio`` and ``--max-decompressed``: the bound of decompression."""
    from ..io.plan import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO

    sp.add_argument("--max-decompressed-ratio", type=float, default=MAX_DECOMPRESSED_RATIO, metavar="R",
                    help=f"a compressed file (.gz .bz2 .xz .zst, compressed tar) may expand to R times its size "
                         f"(never less than 8 MiB; default {MAX_DECOMPRESSED_RATIO:g})")
    sp.add_argument("--max-decompressed", default=None, metavar="SIZE",
                    help=f"… and to SIZE bytes at most (K, M, G suffixes; default {MAX_DECOMPRESSED_BYTES >> 30}G)")


def parse_size(text: str) -> int:
    """``4G``, ``512M``, ``100k``, ``1000`` → bytes (powers of 1024), or a ``UsageError``."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--max-decompressed takes a size such as 4G, 512M or 1000000, not {text!r}")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def _bounds(args: argparse.Namespace) -> dict[str, Any]:
    from ..io.plan import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO

    ratio = getattr(args, "max_decompressed_ratio", MAX_DECOMPRESSED_RATIO)
    if not ratio > 0:
        raise UsageError(f"--max-decompressed-ratio must be positive, not {ratio:g}")
    size = getattr(args, "max_decompressed", None)
    return {"max_decompressed_ratio": ratio,
            "max_decompressed_bytes": MAX_DECOMPRESSED_BYTES if size is None else parse_size(size)}


def _arg_paths(paths: Any) -> Any:
    if isinstance(paths, (list, tuple)):
        return paths[0] if len(paths) == 1 else list(paths)
    return paths


def read(paths: Any, args: argparse.Namespace, tables: Optional[Sequence[str]] = None,
         only: Optional[set[str]] = None) -> "Dump":
    """Read ``paths`` as the options say; remember the dump for the error report. Without
    ``--keep-going`` a file that could not be read as a whole is an error (``FilesFailedError``,
    exit status 1) like a malformed line: never dropped in silence."""
    threads = getattr(args, "threads", None)
    if threads is not None:
        from ..reader import MAX_THREADS

        if not 1 <= threads <= MAX_THREADS:
            raise UsageError(f"--threads must be between 1 and {MAX_THREADS}, not {threads}")
    from ..io.stores import is_url

    p = _arg_paths(paths)
    for one in (p if isinstance(p, list) else [p]):
        s = os.fspath(one)
        if not os.path.lexists(s) and not any(c in s for c in "*?[") and not is_url(s):
            raise InputPathError(f"{s}: No such file or directory")
    # string_view=True: the commands hand the tables to DuckDB, Parquet and the analysis, which
    # take the zero-copy views; no large_string copy is ever made.
    keep_going = getattr(args, "keep_going", False)
    bounds = _bounds(args)
    try:
        d = (_read_arrow(p, args, tables, threads, keep_going, bounds) if only is None
             else _read_only(p, args, tables, threads, keep_going, bounds, only))
    except OSError as e:
        from ..exceptions import InputFileError
        from ..io.stores import StoreError

        if isinstance(e, (InputFileError, StoreError)):
            raise
        # a named input missing, no file or directory (/dev/null, a FIFO), or not readable
        raise InputPathError(_os_message(e)) from None
    from ..cli_safety import escape_controls

    skipped = notes(d)
    for path, why in skipped[:5]:
        print(f"hlodump: note: {escape_controls(path, keep_newlines=False)}: {escape_controls(why, keep_newlines=False)}",
              file=sys.stderr)
    if len(skipped) > 5:
        print(f"hlodump: note: … {len(skipped) - 5:,} more files read once though reached twice", file=sys.stderr)
    for line in note_lines(d):
        print(line, file=sys.stderr)
    if not keep_going:
        bad = failures(d)
        if bad:  # never silent: strict mode stops at the first problem, a whole file included
            raise FilesFailedError(f"{len(bad):,} file{'s' if len(bad) != 1 else ''} could not be read:\n"
                                   + listed(bad) + symlinks_hint(bad))
    seen = getattr(args, "_dumps_read", None)
    if seen is None:
        seen = args._dumps_read = []
    seen.append(d)
    return d


def _read_arrow(p: Any, args: argparse.Namespace, tables: Optional[Sequence[str]], threads: Optional[int],
                keep_going: bool, bounds: dict[str, Any]) -> "Dump":
    from ..reader import read_arrow

    while True:
        try:
            return read_arrow(p, tables=tables, on_error="collect" if keep_going else "raise",
                              threads=threads, string_view=True, storage_options=storage_options(args),
                              follow_links=getattr(args, "follow_links", False),
                              strict=getattr(args, "strict", False), **bounds)
        except FileNotFoundError as e:
            # a glob that matches nothing: an error, or with --keep-going a warning (the rest is read)
            items = p if isinstance(p, list) else [p]
            if not (keep_going and e.filename in items and any(c in str(e.filename) for c in "*?[")):
                raise
            print(f"hlodump: warning: {e.filename}: no file matches this glob; skipped", file=sys.stderr)
            rest = [x for x in items if x != e.filename]
            if not rest:
                raise UsageError(f"{e.filename}: no file matches this glob; nothing to read") from None
            p = rest[0] if len(rest) == 1 else rest


def _read_only(p: Any, args: argparse.Namespace, tables: Optional[Sequence[str]], threads: Optional[int],
               keep_going: bool, bounds: dict[str, Any], only: set[str]) -> "Dump":
    """``p`` walked as ``read_arrow`` walks it, but only the files whose absolute path is in
    ``only`` read (``record``: the files this run wrote, not an earlier run's)."""
    from ..io.plan import Bound, plan_inputs
    from ..reader import read_plan

    plan = plan_inputs(p, follow_links=getattr(args, "follow_links", False))
    plan.inputs = [i for i in plan.inputs if os.path.abspath(i.path) in only]
    plan.bound = Bound(bounds["max_decompressed_ratio"], bounds["max_decompressed_bytes"])
    return read_plan(plan, list(tables) if tables is not None else None,
                     on_error="collect" if keep_going else "raise", string_view=True,
                     threads=threads or 0, strict=getattr(args, "strict", False))


def _os_message(e: OSError) -> str:
    """An ``OSError`` as ``<file>: <why>`` (no ``[Errno N]`` prefix)."""
    why = e.strerror or str(e)
    return f"{e.filename}: {why}" if e.filename is not None else why


class InputPathError(UsageError):
    """An input path that cannot be used: missing, no file or directory, not readable (exit 2)."""


def storage_options(args: argparse.Namespace) -> Optional[dict[str, str]]:
    """``--storage-option KEY=VALUE`` (repeated) as ``read_arrow(storage_options=...)``."""
    opts: dict[str, str] = {}
    for kv in getattr(args, "storage_option", None) or []:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            from ..io.stores import redact

            raise UsageError(f"--storage-option takes KEY=VALUE, not {redact(kv)!r}")
        opts[k.strip()] = v
    return opts or None


def note_lines(d: "Dump") -> list[str]:
    """One line per kind of ``notes`` row (what a newer XLA prints that this version does not
    know): how many, in how many files, the first one with its place."""
    notes = d["notes"]
    if notes.num_rows == 0:
        return []
    from ..cli_safety import escape_controls

    paths = dict(zip(d["files"].column("file_id").to_pylist(), d["files"].column("path").to_pylist()))
    first: dict[str, dict[str, Any]] = {}
    count: dict[str, int] = {}
    files: dict[str, set[int]] = {}
    for r in notes.select(["file_id", "line", "column", "kind", "token", "message"]).to_pylist():
        first.setdefault(r["kind"], r)
        count[r["kind"]] = count.get(r["kind"], 0) + 1
        files.setdefault(r["kind"], set()).add(r["file_id"])
    out = []
    for kind, r in first.items():
        n, nf = count[kind], len(files[kind])
        where = f"{paths.get(r['file_id'])}:{r['line']}:{r['column']}"
        out.append(escape_controls(
            f"hlodump: note: {kind.replace('_', ' ')}: {n:,} distinct in {nf:,} file{'s' if nf != 1 else ''}, "
            f"first {where}: {r['message']} (--strict to make it an error)"))
    return out


def error_report(args: argparse.Namespace) -> Optional[str]:
    """With ``--keep-going``: one line — how many errors in how many files, the first few."""
    dumps = getattr(args, "_dumps_read", None) or []
    n_err, files, first = 0, set(), []
    for d in dumps:
        paths = dict(zip(d["files"].column("file_id").to_pylist(), d["files"].column("path").to_pylist()))
        from ..io.plan import is_note

        for fid, err in zip(d["files"].column("file_id").to_pylist(), d["files"].column("error").to_pylist()):
            if err is not None and not is_note(err):
                n_err += 1
                files.add((id(d), fid))
                if len(first) < 3:
                    first.append(f"{paths.get(fid)}: {err}")
        e = d["errors"]
        if e.num_rows:
            for r in e.select(["file_id", "line", "column", "message"]).to_pylist():
                n_err += 1
                files.add((id(d), r["file_id"]))
                if len(first) < 3:
                    first.append(f"{paths.get(r['file_id'])}:{r['line']}:{r['column']}: {r['message']}")
    if not n_err:
        return None
    more = "; …" if n_err > len(first) else ""
    return (f"hlodump: {n_err:,} error{'s' if n_err != 1 else ''} in {len(files):,} file{'s' if len(files) != 1 else ''}: "
            + "; ".join(first) + more)


def finish(args: argparse.Namespace, status: int) -> int:
    """Print the ``--keep-going`` report; make the status non-zero if there were errors."""
    if not getattr(args, "keep_going", False):
        return status
    line = error_report(args)
    if line is None:
        return status
    ok = getattr(args, "errors_ok", False)
    print(line + ("" if ok else " (exit status 1; --errors-ok to exit 0)"), file=sys.stderr)
    return status if ok or status else 1


def select_module(mods: list[Any], wanted: Optional[str]) -> list[Any]:
    """``--module``: exactly one module, or a UsageError that lists the choices."""
    from .. import analysis as A

    if wanted is None:
        return mods
    try:
        return A._select(mods, wanted, unique=True)
    except A.NoSuchModule as e:
        raise UsageError(str(e)) from None
