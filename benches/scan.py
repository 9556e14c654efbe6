#!/usr/bin/env python3
"""Streaming and projection, measured (issue 14): memory of ``hlodump.scan`` against input size,
and projected against full ``read_arrow``.

    python benches/make_inputs.py --scale full --only hlo_1g hlo_4g   # once
    python benches/scan.py [--inputs benches/out] [--threads 2]

Each measurement runs in a fresh Python subprocess. Memory: RssAnon (anonymous resident
memory: what the read itself allocates; the mapped input's pages are file-backed and not in
it) sampled every 5 ms by a thread during the read, peak minus the RssAnon just before the read
(interpreter, pyarrow, hlodump, polars imported). For ``read_arrow`` the tables are alive at the
end, so the peak includes them. Times are wall times of one run (page cache warm: the input is
read once with ``cat`` first).

Rows compared: scan row count == read_arrow row count for the same file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MB = 1_000_000


from procstatus import rss_anon  # noqa: E402 (benches run as scripts)


def child(mode: str, path: str, threads: int) -> dict:
    import hlodump

    base = rss_anon()
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_anon())
            time.sleep(0.005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.perf_counter()
    cols = ["name", "opcode"]
    if mode == "scan2":
        rows = sum(b.num_rows for b in hlodump.scan(path, "instructions", columns=cols, threads=threads))
    elif mode == "read2":
        rows = hlodump.read_arrow(path, tables=["instructions"], columns={"instructions": cols}, threads=threads).instructions.num_rows
    elif mode == "readall":
        rows = hlodump.read_arrow(path, tables=["instructions"], threads=threads).instructions.num_rows
    else:
        raise SystemExit(f"unknown mode {mode}")
    dt = time.perf_counter() - t0
    peak[0] = max(peak[0], rss_anon())
    stop.set()
    th.join()
    return {"mode": mode, "rows": rows, "seconds": dt, "peak_anon_mb": (peak[0] - base) / MB}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", default=str(HERE / "out"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=["hlo_1g", "hlo_4g"])
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], int(a.child[2]))))
        return 0
    results = []
    for name in a.only:
        path = Path(a.inputs) / f"{name}.txt"
        if not path.exists():
            print(f"{path}: missing (python benches/make_inputs.py --scale full --only {name})", file=sys.stderr)
            continue
        size = path.stat().st_size
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
        for mode in ["scan2", "read2", "readall"]:
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path), str(a.threads)],
                capture_output=True, text=True,
            )
            if out.returncode != 0:
                print(f"{name} {mode}: failed: {out.stderr.strip()[-500:]}", file=sys.stderr)
                continue
            r = json.loads(out.stdout)
            r.update(input=name, input_mb=size / MB, mb_per_s=size / MB / r["seconds"])
            results.append(r)
            print(
                f"{name:8s} {size / MB:8.0f} MB  {mode:8s} {r['rows']:>11,} rows  {r['seconds']:7.2f} s  "
                f"{r['mb_per_s']:7.0f} MB/s  peak anon {r['peak_anon_mb']:8.1f} MB",
                flush=True,
            )
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "scan_results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
