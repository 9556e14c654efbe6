#!/usr/bin/env python3
"""MB/s of an HLO proto (``*.hlo.pb``) against the text of the same module (issue 38).

Usage: python benches/protos.py [DIR_OR_FILE.hlo.pb ...] [--repeat N]
Each ``.hlo.pb`` is read with ``hlodump.read_arrow(path, threads=1, tables=[instructions…])``
next to its text twin (same name, ``.txt``); best of N, page cache warm. Without arguments the
largest proto under tests/data/proto and /work/dumps/proto is used. With ``--make N`` a module of
N unrolled layers is compiled first (needs jax) into benches/out/protos/.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES = ["modules", "computations", "instructions"]


def make(n: int) -> str:
    import jax
    import jax.numpy as jnp

    def f(x, w):
        for k in range(n):
            x = jnp.tanh(x @ w + k) * 0.5 + jnp.sin(x)
        return x.sum()

    out = os.path.join(HERE, "out", "protos", f"unrolled_{n}")
    os.makedirs(out, exist_ok=True)
    jax.jit(jax.grad(f)).lower(jnp.ones((64, 64)), jnp.ones((64, 64))).compile(
        compiler_options={"xla_dump_to": out, "xla_dump_hlo_as_proto": True})
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--make", type=int)
    a = ap.parse_args()
    import hlodump

    paths = list(a.paths)
    if a.make:
        paths.append(make(a.make))
    protos: list[str] = []
    for p in paths or [os.path.join(HERE, "..", "tests", "data", "proto"), "/work/dumps/proto"]:
        protos += [p] if p.endswith(".hlo.pb") else glob.glob(os.path.join(p, "**", "*.hlo.pb"), recursive=True)
    protos = [p for p in protos if os.path.exists(p[:-len(".hlo.pb")] + ".txt")]
    if not protos:
        print("no .hlo.pb with a text twin found", file=sys.stderr)
        return 1
    if not paths:
        protos = [max(protos, key=os.path.getsize)]
    print("| proto | proto MB | proto MB/s | text MB | text MB/s | rows | rows equal |")
    print("|---|---|---|---|---|---|---|")
    for pb in sorted(protos, key=os.path.getsize, reverse=True)[:5]:
        txt = pb[:-len(".hlo.pb")] + ".txt"
        for p in (pb, txt):
            open(p, "rb").read()
        rp = hlodump.read_arrow(pb, threads=1, tables=TABLES)
        rt = hlodump.read_arrow(txt, threads=1, tables=TABLES)
        tp = best(lambda: hlodump.read_arrow(pb, threads=1, tables=TABLES), a.repeat)
        tt = best(lambda: hlodump.read_arrow(txt, threads=1, tables=TABLES), a.repeat)
        sp, st = os.path.getsize(pb), os.path.getsize(txt)
        n = rp.instructions.num_rows
        print(f"| {os.path.basename(pb)} | {sp / 1e6:.2f} | {sp / 1e6 / tp:.0f} | {st / 1e6:.2f} | "
              f"{st / 1e6 / tt:.0f} | {n} | {n == rt.instructions.num_rows} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
