"""The ``hlodump`` command line.

    hlodump tables PATH                 row counts of every table
    hlodump query PATH "SQL"            SQL (DuckDB) over all tables (no file access unless
                                        --allow-file-access; see ``hlodump.cli_safety``)
    hlodump convert PATH OUT            one Parquet file per table (zstd)
    hlodump summary|plot|diff …         memory analysis (see ``hlodump.memory_cli``)
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .dump import Dump

from . import __version__, cli_safety

__all__ = ["main"]


def _read(path: str, args: argparse.Namespace) -> "Dump":
    from . import read_arrow

    return read_arrow(path, on_error="collect" if getattr(args, "keep_going", False) else "raise",
                      threads=getattr(args, "threads", None))


def _cmd_tables(args: argparse.Namespace) -> int:
    d = _read(args.path, args)
    width = max(len(n) for n in d)
    for name, t in d.items():
        print(f"{name:<{width}}  {t.num_rows:>10,}")
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    d = _read(args.path, args)
    con = d.to_duckdb(cli_safety.connect(getattr(args, "allow_file_access", False)))  # see cli_safety
    try:
        rel = con.sql(args.sql)
    except duckdb.Error as e:  # bad SQL: a message, not a traceback
        print(f"hlodump: SQL error: {cli_safety.escape_controls(str(e))}", file=sys.stderr)
        return 1
    if rel is None:  # a statement without a result
        return 0
    fmt = args.format
    if fmt == "parquet":
        if not args.output:
            print("hlodump: --format parquet needs -o FILE", file=sys.stderr)
            return 2
        import pyarrow.parquet as pq

        pq.write_table(rel.to_arrow_table(), args.output, compression="zstd")
        return 0
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    if cli_safety.is_terminal(out):
        out = cli_safety.EscapingStream(out)  # type: ignore[assignment]
    try:
        if fmt == "csv":
            import csv

            import json

            def cell(v: object) -> object:  # lists / structs as JSON, not Python reprs
                return json.dumps(v, default=str) if isinstance(v, (list, dict, tuple)) else v

            w = csv.writer(out)
            w.writerow(rel.columns)
            w.writerows([cell(v) for v in r] for r in rel.fetchall())
        elif fmt == "json":
            import json

            cols = rel.columns
            json.dump([dict(zip(cols, r)) for r in rel.fetchall()], out, default=str, indent=1)
            out.write("\n")
        else:
            _print_table(rel.columns, rel.fetchall(), out)
    finally:
        if args.output:
            out.close()
    return 0


def _print_table(columns: Sequence[str], rows: list[Any], out: IO[str]) -> None:
    """A plain aligned text table (rich is optional)."""
    esc = cli_safety.escape_controls
    cells = [[("" if v is None else esc(str(v), keep_newlines=False)) for v in r] for r in rows]
    widths = [max([len(c)] + [min(len(r[i]), 80) for r in cells]) for i, c in enumerate(columns)]
    line = "  ".join(f"{c:<{w}}" for c, w in zip(columns, widths))
    out.write(line.rstrip() + "\n" + "  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  ".join(f"{(v if len(v) <= 80 else v[:79] + '…'):<{w}}" for v, w in zip(r, widths)).rstrip() + "\n")
    out.write(f"({len(cells)} rows)\n")


def _cmd_convert(args: argparse.Namespace) -> int:
    d = _read(args.path, args)
    for p in d.write_parquet(args.out):
        print(p)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlodump", description="XLA compiler dumps as Arrow tables.")
    p.add_argument("--version", action="version", version=f"hlodump {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("path", help="a dump file or directory")
        sp.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
        sp.add_argument("--keep-going", action="store_true", help="report malformed lines instead of stopping")

    sp = sub.add_parser("tables", help="row counts of every table")
    common(sp)
    sp.set_defaults(func=_cmd_tables)

    sp = sub.add_parser("query", help="run SQL (DuckDB) over all tables")
    common(sp)
    sp.add_argument("sql", help='e.g. "select kind, count(*) from files group by kind"')
    sp.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    sp.add_argument("-o", "--output", help="write to this file instead of stdout")
    cli_safety.add_query_arguments(sp)
    sp.set_defaults(func=_cmd_query)

    sp = sub.add_parser("convert", help="write one Parquet file per table (zstd)")
    common(sp)
    sp.add_argument("out", help="output directory")
    sp.set_defaults(func=_cmd_convert)

    try:  # memory analysis commands live in their own module
        from . import memory_cli
    except ImportError:  # pragma: no cover - optional during development
        memory_cli = None  # type: ignore[assignment]
    if memory_cli is not None:
        memory_cli.register(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from .exceptions import HlodumpError, ParseError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `hlodump query … | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    except (ParseError, OSError, HlodumpError, ValueError) as e:
        print(f"hlodump: {cli_safety.escape_controls(str(e))}", file=sys.stderr)
        return 1
    except MemoryError as e:
        print(f"hlodump: out of memory: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hlodump: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
