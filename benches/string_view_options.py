#!/usr/bin/env python3
"""What each way of handing text columns to pyarrow costs: memory and time.

pyarrow (26) has no filter/take/sort/is_in/starts_with/utf8_length kernels for ``string_view``,
so a table of zero-copy views cannot be filtered or sorted by pyarrow itself. The options are:

  views      ``read_arrow(p, string_view=True)``: text stays in the mapped file (16-byte views);
             pyarrow kernels fail on text columns.
  copy       ``read_arrow(p, string_view=False)``: every text column cast to ``large_string`` at
             read time (option a): the text bytes are copied, the views are dropped.
  lazy-one   the default (option b): views inside; ``d.instructions`` casts that one table on
             first access (cached); ``to_polars``/``to_duckdb``/``write_parquet`` use the views.
  lazy-all   the default, every table accessed once (the worst case of option b: views + copies).

and, per consumer, what handing the tables over costs starting from views or from copies
(``to_polars()``, ``pl.from_arrow(d.instructions)`` (or ``assignments``), ``to_duckdb()`` + a
query that touches every text byte of ``instructions``, ``write_parquet``).

Every measurement runs in a fresh subprocess (page cache warm). Memory is RssAnon (anonymous
resident memory: the mapped input is file-backed and not counted) and pyarrow's own allocator
(``pa.total_allocated_bytes()``), before and after the step.

Inputs: ``hlo_200m.txt`` (HLO text) and ``ba_combined_200m.txt`` (buffer assignment), made
here with ``make_inputs.py``'s generators (the jax-0.10.2 transformer module / the jax-0.4.26
buffer assignment, repeated with renamed identifiers), plus ``tests/data/corpus``.

Usage: python benches/string_view_options.py [--out DIR] [--repeat N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MB = 1_000_000


from procstatus import status  # noqa: E402 (benches run as scripts)


def text_bytes(tables) -> int:
    """Bytes of string data in large_string columns (the size of the copy)."""
    import pyarrow as pa

    total = 0

    def arr(a) -> None:
        nonlocal total
        t = a.type
        if pa.types.is_large_string(t) or pa.types.is_string(t):
            import pyarrow.compute as pc

            total += pc.sum(pc.binary_length(a)).as_py() or 0
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            arr(a.flatten())
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                arr(a.field(i))

    for t in tables:
        for col in t.columns:
            for c in col.chunks:
                arr(c)
    return total


def child(spec: dict) -> dict:
    import pyarrow as pa

    import hlodump
    from hlodump.schema import schema

    path, mode = spec["path"], spec["mode"]
    res: dict = {}
    s0, p0 = status(), pa.total_allocated_bytes()
    t0 = time.perf_counter()
    if mode == "copy":
        d = hlodump.read_arrow(path, string_view=False, on_error="collect", progress=False)
    elif mode == "views":
        d = hlodump.read_arrow(path, string_view=True, on_error="collect", progress=False)
    else:  # the default: views inside, large_string on first access
        d = hlodump.read_arrow(path, on_error="collect", progress=False)
    res["read_s"] = time.perf_counter() - t0
    s1, p1 = status(), pa.total_allocated_bytes()
    res["read_anon"] = s1["RssAnon"] - s0["RssAnon"]
    res["read_pyarrow"] = p1 - p0
    res["nbytes"] = sum(t.nbytes for t in d.views.tables())  # Arrow's count (views: + whole files per column)
    if mode in ("lazy-one", "lazy-all"):
        names = ["instructions" if d.views["instructions"].num_rows else "assignments"] if mode == "lazy-one" else list(d)
        t0 = time.perf_counter()
        copies = [d[n] for n in names]  # the first access casts (and keeps) the table
        res["cast_s"] = time.perf_counter() - t0
        res["cast_tables"] = names
        res["text_bytes"] = text_bytes(copies)
        t0 = time.perf_counter()
        for n in names:
            d[n]
        res["second_access_s"] = time.perf_counter() - t0
    elif mode == "copy":
        res["text_bytes"] = text_bytes(d.tables())
    s2, p2 = status(), pa.total_allocated_bytes()
    res["after_anon"] = s2["RssAnon"] - s0["RssAnon"]
    res["after_pyarrow"] = p2 - p0
    consumer = spec.get("consumer")
    if consumer:
        t0 = time.perf_counter()
        if consumer == "polars":
            out = d.to_polars()
            big = max(out, key=lambda k: out[k].height)
            res["check"] = int(out[big].height)
        elif consumer == "pl.from_arrow(d.<big table>)":
            import polars as pl

            big = "instructions" if d.views["instructions"].num_rows else "assignments"
            res["check"] = pl.from_arrow(d[big]).height
        elif consumer == "duckdb":
            con = d.to_duckdb()
            res["check"] = con.sql("select count(*), sum(length(name)), sum(length(attributes)) from instructions").fetchall()[0][1:]
            res["check2"] = con.sql("select sum(length(shape)) from assignments").fetchall()[0][0]
        elif consumer == "parquet":
            import tempfile

            with tempfile.TemporaryDirectory(dir=spec.get("tmp")) as tmp:
                d.write_parquet(tmp)
        res["consumer_s"] = time.perf_counter() - t0
        s3, p3 = status(), pa.total_allocated_bytes()
        res["consumer_anon"] = s3["RssAnon"] - s2["RssAnon"]
        res["consumer_pyarrow"] = p3 - p2
    res["VmHWM"] = status()["VmHWM"]
    return res


def run(spec: dict, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if best is None or res["read_s"] < best["read_s"]:
            best = res
    return best


def make(out: Path) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    import make_inputs as m

    out.mkdir(parents=True, exist_ok=True)
    inputs = {
        "hlo_200m": out / "hlo_200m.txt",
        "ba_combined_200m": out / "ba_combined_200m.txt",
    }
    if not inputs["hlo_200m"].exists():
        m.make_hlo(inputs["hlo_200m"], 200 * MB)
    if not inputs["ba_combined_200m"].exists():
        src = m.T04.parent / (m.T04.name + ".cpu_after_optimizations-buffer-assignment.txt")
        m.make_ba(inputs["ba_combined_200m"], 200 * MB, src)
    inputs["corpus"] = ROOT / "tests" / "data" / "corpus"
    return inputs


def mb(v) -> str:
    return "–" if v is None else f"{v / MB:.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--child")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    inputs = make(Path(a.out))
    results = []
    print("| input | MB | mode | read s | read RssAnon MB | cast s | text copied MB | RssAnon after MB | pyarrow alloc MB | VmHWM MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, p in inputs.items():
        if a.only and name not in a.only:
            continue
        size = sum(f.stat().st_size for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
        for mode in ("views", "copy", "lazy-one", "lazy-all"):
            r = run({"path": str(p), "mode": mode}, a.repeat)
            results.append({"input": name, "mode": mode, **r})
            print(f"| {name} | {size / MB:.0f} | {mode} | {r['read_s']:.2f} | {mb(r['read_anon'])} | "
                  f"{r.get('cast_s', 0):.2f} | {mb(r.get('text_bytes'))} | {mb(r['after_anon'])} | "
                  f"{mb(r['after_pyarrow'])} | {mb(r['VmHWM'])} |", flush=True)
    print()
    print("| input | from | consumer | s | RssAnon + MB | pyarrow alloc + MB |")
    print("|---|---|---|---|---|---|")
    for name, p in inputs.items():
        if a.only and name not in a.only:
            continue
        for mode in ("lazy", "copy"):
            for consumer in ("polars", "pl.from_arrow(d.<big table>)", "duckdb", "parquet"):
                r = run({"path": str(p), "mode": mode, "consumer": consumer}, a.repeat)
                results.append({"input": name, "mode": mode, "consumer": consumer, **r})
                print(f"| {name} | {mode} | {consumer} | {r['consumer_s']:.2f} | {mb(r['consumer_anon'])} | "
                      f"{mb(r['consumer_pyarrow'])} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
