#!/usr/bin/env python3
"""``hlodump convert --engine ray`` of many dump directories vs the local convert, side by side.

    python benches/ray_convert.py [--dumps 200] [--cpus 2]

Makes ``--dumps`` dump directories under /tmp/hlodump-bench-ray/dumps (copies of the corpus
dumps of tests/data, cycled: jax 0.10.2 and 0.4.26 control_flow, misc, spmd, transformer), then
runs, each as the command a user types (a child process, page cache warm):

* ``local``      — ``hlodump convert DUMPS OUT``: one read, one Parquet file per table;
* ``ray (cold)`` — ``hlodump convert DUMPS OUT --engine ray``: starts a local Ray on ``--cpus``
                   CPUs, one task per dump, Parquet partitioned by table and dump;
* ``ray (warm)`` — the same joining a running cluster (``--ray-address``), what a user with a
                   cluster sees.

and prints wall times, MB/s and the ratio to local, and checks that both wrote the same rows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
WORK = Path("/tmp/hlodump-bench-ray")


def make_dumps(n: int) -> tuple[Path, int]:
    srcs = sorted(p for v in CORPUS.iterdir() if v.is_dir() for p in v.iterdir() if p.is_dir())
    out = WORK / "dumps"
    marker = out / f".made-{n}"
    if not marker.exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for i in range(n):
            src = srcs[i % len(srcs)]
            shutil.copytree(src, out / f"run_{i:03d}_{src.parent.name}_{src.name}")
        marker.touch()
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    subprocess.run(f"find {out} -type f -exec cat {{}} + > /dev/null", shell=True, check=True)  # page cache warm
    return out, size


def run(args: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"hlodump {' '.join(args)} failed:\n{r.stderr}")
    return dt


def rows(out: Path, partitioned: bool) -> dict[str, int]:
    import pyarrow.parquet as pq

    got: dict[str, int] = {}
    if not partitioned:
        for f in out.glob("*.parquet"):
            got[f.stem] = pq.read_metadata(f).num_rows
        return got
    for t in out.iterdir():
        got[t.name] = sum(pq.read_metadata(f).num_rows for f in t.rglob("*.parquet"))
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dumps", type=int, default=200)
    ap.add_argument("--cpus", type=int, default=2)
    a = ap.parse_args()

    dumps, size = make_dumps(a.dumps)
    nfiles = sum(1 for f in dumps.rglob("*") if f.is_file())
    print(f"{a.dumps} dump directories, {nfiles:,} files, {size / 1e6:,.1f} MB, {a.cpus} CPUs for Ray")
    res = {}
    for name in ("local", "ray_cold", "ray_warm"):
        shutil.rmtree(WORK / name, ignore_errors=True)
    res["local"] = run(["convert", str(dumps), str(WORK / "local")])
    res["ray (cold)"] = run(["convert", str(dumps), str(WORK / "ray_cold"), "--engine", "ray"])
    import ray

    ray.init(num_cpus=a.cpus, include_dashboard=False, log_to_driver=False)
    try:
        address = ray.get_runtime_context().gcs_address
        run(["convert", str(CORPUS / "jax-0.10.2" / "misc"), str(WORK / "ray_warmup"), "--engine", "ray",
             "--ray-address", address])  # workers started, hlodump imported in them
        res["ray (warm)"] = run(["convert", str(dumps), str(WORK / "ray_warm"), "--engine", "ray",
                                 "--ray-address", address])
    finally:
        ray.shutdown()
    want = rows(WORK / "local", False)
    for d in ("ray_cold", "ray_warm"):
        got = rows(WORK / d, True)
        assert got == want, (d, got, want)
    print(f"{'engine':<12} {'seconds':>8} {'MB/s':>7} {'vs local':>9}")
    for k, v in res.items():
        print(f"{k:<12} {v:>8.2f} {size / 1e6 / v:>7.1f} {v / res['local']:>8.2f}x")
    print(f"rows written: {sum(want.values()):,} in {len(want)} tables (same for every engine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
