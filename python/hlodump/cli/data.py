"""``hlodump tables | query | convert``: the tables on the command line."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any, Sequence

from .common import UsageError, add_common, read, storage_options

from .. import cli_safety

__all__ = ["register"]


def _cmd_tables(args: argparse.Namespace) -> int:
    d = read(args.paths, args)
    if getattr(args, "json", False):
        import json

        json.dump({name: t.num_rows for name, t in d.items()}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    width = max(len(n) for n in d)
    for name, t in d.items():
        print(f"{name:<{width}}  {t.num_rows:>10,}")
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    try:
        con = cli_safety.connect(getattr(args, "allow_file_access", False), getattr(args, "memory_limit", None))
    except ValueError as e:
        raise UsageError(str(e)) from None
    d = read(args.paths, args)
    con = d.to_duckdb(con)  # see cli_safety
    from ..analysis.engine import interruptible

    try:
        return interruptible(con, lambda: _run_query(con, args))  # Ctrl-C interrupts the query itself
    except duckdb.Error as e:  # bad SQL, or an error raised while fetching: a message, not a traceback
        from ..exceptions import engine_error

        plain = engine_error(e)  # out of memory (exit 3), Ctrl-C (130): not the SQL's fault
        if plain is not None:
            raise plain from None
        print(f"hlodump: SQL error: {cli_safety.escape_controls(str(e))}", file=sys.stderr)
        return 2


def _run_query(con: Any, args: argparse.Namespace) -> int:
    import duckdb

    try:
        rel = con.sql(args.sql)
    except duckdb.ParserException as first:
        # ``offset`` and ``end`` are column names DuckDB reads as keywords (issue 51): where the
        # SQL as given does not parse, try it with them quoted as columns, and say so
        fixed = cli_safety.quote_column_words(args.sql)
        if fixed == args.sql:
            raise
        try:
            rel = con.sql(fixed)
        except duckdb.Error:
            raise first from None  # the SQL's own error, not the rewrite's
        words = sorted({w for w in cli_safety.COLUMN_WORDS if f'"{w}"' in fixed and f'"{w}"' not in args.sql})
        print(f"hlodump: note: {' and '.join(words)} read as column name{'s' if len(words) > 1 else ''} "
              f"({', '.join(chr(34) + w + chr(34) for w in words)}): DuckDB's SQL needs {'them' if len(words) > 1 else 'it'} quoted", file=sys.stderr)
    if rel is None:  # a statement without a result
        return 0
    fmt = args.format
    if fmt == "parquet":
        if not args.output:
            print("hlodump: --format parquet needs -o FILE", file=sys.stderr)
            return 2
        import pyarrow.parquet as pq

        table = rel.to_arrow_table()  # the SQL runs (and may fail) before the file is touched
        with _replaced(args.output, binary=True) as f:
            pq.write_table(table, f, compression="zstd")
        return 0
    if args.output:
        with _replaced(args.output) as out:
            _write_result(rel, fmt, out)
    else:
        out = sys.stdout
        if cli_safety.is_terminal(out):
            out = cli_safety.EscapingStream(out)  # type: ignore[assignment]
        _write_result(rel, fmt, out)
    return 0


def _write_result(rel: Any, fmt: str, out: IO[str]) -> None:
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


def _replaced(path: str, binary: bool = False) -> Any:
    """``hlodump.outputs.atomic.replaced``: ``path`` replaced only if the query succeeded (an
    SQL error raised while fetching leaves it as it was and no temporary file)."""
    from ..outputs.atomic import replaced

    return replaced(path, binary=binary, newline="")


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
    if getattr(args, "engine", "local") == "ray":
        from ..ray import convert

        written = convert(_paths(args.paths), args.out, storage_options=storage_options(args),
                          on_error="collect" if args.keep_going else "raise", address=args.ray_address)
        for p in written:
            print(p)
        return 0
    d = read(args.paths, args)
    for p in d.write_parquet(args.out, storage_options=storage_options(args), overwrite=args.overwrite):
        print(p)
    return 0


def _paths(paths: Sequence[str]) -> Any:
    return paths[0] if len(paths) == 1 else list(paths)


def register(sub: Any) -> None:
    """Add ``tables``, ``query`` and ``convert`` to the ``hlodump`` sub-command parser."""
    sp = sub.add_parser("tables", help="row counts of every table")
    add_common(sp, module=False)
    sp.set_defaults(func=_cmd_tables)

    sp = sub.add_parser("query", help="run SQL (DuckDB) over all tables")
    add_common(sp, module=False, json=False)
    sp.add_argument("sql", help='e.g. "select kind, count(*) from files group by kind"')
    sp.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    sp.add_argument("-o", "--output", help="write to this file instead of stdout")
    cli_safety.add_query_arguments(sp)
    sp.set_defaults(func=_cmd_query)

    sp = sub.add_parser("convert", help="write one Parquet file per table (zstd)")
    add_common(sp, module=False, json=False)
    sp.add_argument("out", help="output directory (a local path or an object-store URL)")
    sp.add_argument("--overwrite", action="store_true",
                    help="replace table files OUT already holds (without it, convert refuses and writes nothing)")
    sp.add_argument("--engine", choices=["local", "ray"], default="local",
                    help="local (default): one Parquet file per table; ray: read on a Ray cluster, Parquet "
                         "partitioned by table and dump (OUT/<table>/dump=<dump>/part-N.parquet)")
    sp.add_argument("--ray-address", default=None,
                    help="with --engine ray: the cluster to use (default: RAY_ADDRESS, or a local Ray)")
    sp.set_defaults(func=_cmd_convert)
