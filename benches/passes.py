#!/usr/bin/env python3
"""Pass history at scale: ``hlodump.analysis.passes`` over N per-pass files.

    python benches/passes.py [--files 10000] [--source DIR] [--repeat 3] [--keep DIR]

Builds a dump of N per-pass HLO files by copying the per-pass files of one module (``--source``:
a ``--xla_dump_hlo_pass_re=.*`` dump; default: the committed sample of the newest jax under
tests/data/passes) under as many module numbers as needed, then times, each ``--repeat`` times
(best shown): reading the instructions (``read_arrow(dir, tables=["instructions"])``),
``passes(d)`` (every module, one query), ``history(d, module, name)`` of one instruction and
``pass_changes`` of one pass. Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))

import hlodump  # noqa: E402
from hlodump import analysis as A  # noqa: E402
from hlodump.analysis.passes import pass_changes  # noqa: E402

PASS_FILE = re.compile(r"^module_(\d+)\.(.+?)\.(\d{4}\..*\.txt)$")


def default_source() -> str:
    root = os.path.join(HERE, os.pardir, "tests", "data", "passes")
    versions = sorted((d for d in os.listdir(root) if d.startswith("jax-")),
                      key=lambda v: tuple(int(x) for x in v[4:].split(".")))
    return os.path.join(root, versions[-1])


def build(source: str, n: int, out: str) -> tuple[int, int]:
    """Copies of the source's per-pass files under module numbers 1, 2, …: (files, bytes)."""
    files = sorted(f for f in os.listdir(source) if PASS_FILE.match(f))
    if not files:
        raise SystemExit(f"no per-pass files in {source}")
    texts = [(PASS_FILE.match(f), open(os.path.join(source, f), "rb").read()) for f in files]
    made = size = 0
    module = 0
    while made < n:
        module += 1
        for m, text in texts:
            if made == n:
                break
            with open(os.path.join(out, f"module_{module:04d}.{m.group(2)}.{m.group(3)}"), "wb") as fh:
                fh.write(text)
            made += 1
            size += len(text)
    return made, size


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--source", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", default=None, help="build the dump here and keep it")
    a = ap.parse_args()
    out = a.keep or tempfile.mkdtemp(prefix="hlodump-bench-passes-")
    os.makedirs(out, exist_ok=True)
    try:
        n, size = build(a.source or default_source(), a.files, out)
        t_read, d = best(lambda: hlodump.read_arrow(out, tables=["instructions"]), a.repeat)
        rows = d.views["instructions"].num_rows
        print(json.dumps({"step": "read_arrow(tables=['instructions'])", "files": n, "bytes": size,
                          "instructions": rows, "seconds": round(t_read, 3)}), flush=True)
        t_passes, t = best(lambda: A.passes(d), a.repeat)
        print(json.dumps({"step": "passes(d)", "files": n, "rows": t.num_rows, "instructions": rows,
                          "seconds": round(t_passes, 3)}), flush=True)
        r = next(r for r in t.to_pylist() if r["changed"] or r["added"] and r["pass_index"])
        changes = pass_changes(d, r["module"], r["pass_index"])
        name = changes.column("instruction")[0].as_py()
        t_hist, h = best(lambda: A.history(d, r["module"], name), a.repeat)
        print(json.dumps({"step": "history(d, module, name)", "rows": h.num_rows, "seconds": round(t_hist, 3)}), flush=True)
        t_one, c = best(lambda: pass_changes(d, r["module"], r["pass_index"]), a.repeat)
        print(json.dumps({"step": "pass_changes(d, module, pass)", "rows": c.num_rows, "seconds": round(t_one, 3)}),
              flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
