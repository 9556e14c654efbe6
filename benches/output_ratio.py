#!/usr/bin/env python3
"""Arrow bytes / input bytes, per table (and per column with ``--columns``).

    python benches/output_ratio.py FILE_OR_DIR [...] [--columns] [--json OUT]

Reads the input with ``hlodump.read_arrow(..., mmap=True)`` (``--mmap auto``: the default) and sums every buffer of every
column of ``d.views`` (the tables as read: string_view views, dictionary-encoded columns),
children and dictionaries included, de-duplicated by address, EXCEPT the buffers that are
windows of the mapped input (the data buffers of string_view columns, also inside lists and
structs, that lie in a file-backed mapping of an input: /proc/self/maps). What remains is what
the read allocated: views, keys, offsets, validity, numbers, dictionaries, owned side buffers,
and, reported apart (not in the ratio), inputs that were read into memory rather than mapped
(arenas of small files: text data buffers outside the mappings that several columns share, or of
1 MB and more).

The ratio is that sum over the bytes of the input files; the last line is the whole read.
Linux only (/proc/self/maps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import pyarrow as pa

from procstatus import mapped_ranges, union_len  # (benches run as scripts: their folder is on the path)

MB = 1_000_000




def buffers(arr: pa.Array):
    """(buffer, is_text_data) for every buffer of ``arr``, children and dictionary included."""
    t = arr.type
    if pa.types.is_dictionary(t):
        yield from buffers(arr.indices)
        yield from buffers(arr.dictionary)
    elif pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        for i, b in enumerate(arr.buffers()):
            yield b, i >= 2
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        for b in arr.buffers()[:2]:
            yield b, False
        yield from buffers(arr.values)
    elif pa.types.is_struct(t):
        yield arr.buffers()[0], False
        for i in range(t.num_fields):
            yield from buffers(arr.field(i))
    else:
        for b in arr.buffers():
            yield b, False




def measure(d, inputs: list[str], per_column: bool) -> dict:
    """{table: {"rows", "bytes", "arena", "columns": {col: bytes}}} for the tables of ``d``."""
    ranges = mapped_ranges(inputs)
    mapped = lambda a: any(lo <= a < hi for lo, hi in ranges)  # noqa: E731
    # Text data buffers that are not in a mapping: an input read into memory (an arena of small
    # files, or a file read rather than mapped) is referenced by several columns or is big; a
    # column's own side buffer (unescaped text) is referenced by that column alone.
    users: dict[int, set] = {}
    for name in d.keys():
        for field, col in zip(d[name].schema, d[name].columns):
            for chunk in col.chunks:
                for b, is_data in buffers(chunk):
                    if b is not None and is_data:
                        users.setdefault(b.address, set()).add((name, field.name))
    seen: set[int] = set()
    out = {}
    for name in d.keys():
        t = d[name]
        own: list[tuple[int, int]] = []
        arena: list[tuple[int, int]] = []
        cols = {}
        for field, col in zip(t.schema, t.columns):
            col_spans = []
            for chunk in col.chunks:
                for b, is_data in buffers(chunk):
                    if b is None or b.size == 0 or b.address in seen:
                        continue
                    seen.add(b.address)
                    if is_data and mapped(b.address):
                        continue  # a window of the mapped input: not ours
                    if is_data and (b.size >= (1 << 20) or len(users[b.address]) > 1):
                        arena.append((b.address, b.size))  # an input read into memory
                        continue
                    col_spans.append((b.address, b.size))
            own += col_spans
            if per_column:
                cols[field.name] = union_len(col_spans)
        out[name] = {"rows": t.num_rows, "bytes": union_len(own), "arena": union_len(arena), "columns": cols}
    return out


def input_files(paths: list[str]) -> list[str]:
    files = []
    for p in paths:
        if os.path.isdir(p):
            for dp, _, fn in os.walk(p):
                files += [os.path.join(dp, f) for f in sorted(fn)]
        else:
            files.append(p)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--columns", action="store_true", help="bytes of every column too")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mmap", choices=["auto", "yes"], default="yes",
                    help="yes: map every file (default); auto: read_arrow's default (small files in arenas)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    import hlodump

    files = input_files(args.paths)
    size = sum(os.path.getsize(f) for f in files)
    t0 = time.perf_counter()
    d = hlodump.read_arrow(args.paths if len(args.paths) > 1 else args.paths[0], mmap=True if args.mmap == "yes" else None,
                           threads=args.threads, progress=False)
    dt = time.perf_counter() - t0
    res = measure(d.views, files, args.columns)
    print(f"input: {', '.join(args.paths)}: {size / MB:.1f} MB in {len(files)} file(s); "
          f"read in {dt:.2f} s ({args.threads} thread(s)); hlodump {getattr(hlodump, '__file__', '?')}")
    print(f"{'table':16} {'rows':>10} {'Arrow MB':>10} {'ratio':>7}  {'arena MB':>8}")
    total = arena = 0
    for name, r in res.items():
        if not r["rows"] and not r["bytes"]:
            continue
        total += r["bytes"]
        arena += r["arena"]
        print(f"{name:16} {r['rows']:10d} {r['bytes'] / MB:10.2f} {r['bytes'] / size:7.3f}  {r['arena'] / MB:8.2f}")
        if args.columns:
            for c, b in sorted(r["columns"].items(), key=lambda kv: -kv[1]):
                if b:
                    print(f"    {c:26} {b / MB:10.2f} {b / size:7.3f}")
    print(f"{'(all tables)':16} {'':10} {total / MB:10.2f} {total / size:7.3f}  {arena / MB:8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"paths": args.paths, "input_bytes": size, "seconds": dt, "tables": res,
                       "arrow_bytes": total, "arena_bytes": arena}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
