#!/usr/bin/env python3
"""Reading a dump directory from an S3-compatible server vs from disk, side by side.

    python benches/cloud.py [--repeat 5] [--big]

Starts moto's S3 server on 127.0.0.1 (a free port; the same server the tests use), uploads each
input directory into a bucket, then times ``hlodump.read_arrow`` of

* ``disk``   — the local directory (page cache warm: it was read just before),
* ``s3``     — ``s3://bench/<name>`` (one listing, every object fetched concurrently by obstore,
               then parsed; the tables point into the fetched buffers),
* ``memory`` — ``memory://bench/<name>`` (fsspec's in-process memory filesystem),
* ``buffers``— ``{name: bytes}`` already in memory (the parse alone, for reference),

best of ``--repeat`` runs each, in this process (threads = all cores), and prints the ratio to
disk. Inputs: the jax 0.10.2 transformer and control_flow dumps of tests/data, and with
``--big`` a directory holding a 100 MB HLO module and the ~20 MB split buffer assignment made
by ``benches/make_inputs.py`` (in /tmp/hlodump-bench-cloud). The server is local: what is
measured is the client's overhead (listing, requests, buffers), not a network. The last column
is the listing and fetching alone. By default moto runs in a process of its own (as a real
server would: its Python does not take our GIL); it serves one request at a time, ~2.5 ms
each, so a directory of many small files is bound by the server's request rate, a directory
of big files by throughput.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "corpus" / "jax-0.10.2"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def big_input() -> Path:
    out = Path("/tmp/hlodump-bench-cloud/big")
    if not (out / "module_0001.jit_big.cpu_after_optimizations.txt").exists():
        gen = Path("/tmp/hlodump-bench-cloud/gen")
        subprocess.run([sys.executable, str(HERE / "make_inputs.py"), str(gen), "--scale", "full",
                        "--only", "hlo_100m", "ba_split_20m"], check=True)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(gen / "hlo_100m.txt", out / "module_0001.jit_big.cpu_after_optimizations.txt")
        for f in (gen / "ba_split_20m").iterdir():
            shutil.copy(f, out / f.name)
    return out


_SERVER = """
import logging, sys, time
logging.getLogger("werkzeug").setLevel(logging.WARNING)
from moto.server import ThreadedMotoServer
s = ThreadedMotoServer(ip_address=sys.argv[1], port=int(sys.argv[2]), verbose=False)
s.start()
while True:
    time.sleep(3600)
"""


class _Proc:
    def __init__(self, proc: "subprocess.Popen[bytes]") -> None:
        self.proc = proc

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _wait_for(host: str, port: int) -> None:
    import socket

    for _ in range(300):
        try:
            socket.create_connection((host, port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("moto server did not start")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--big", action="store_true", help="also a ~120 MB directory (generated)")
    ap.add_argument("--in-process", action="store_true",
                    help="run moto's server on a thread of this process (as the tests do) instead of its own process")
    a = ap.parse_args()

    import boto3
    import fsspec
    from moto.server import ThreadedMotoServer

    import hlodump
    from hlodump.io import stores
    from hlodump.io.plan import load

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if a.in_process:
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
    else:  # its own process: moto's Python does not share our GIL (as a real server would not)
        import socket

        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            host, port = sk.getsockname()
        proc = subprocess.Popen([sys.executable, "-c", _SERVER, host, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(host, port)
        server = _Proc(proc)
    endpoint = f"http://{host}:{port}"
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="bench")
    mem = fsspec.filesystem("memory")
    inputs = [DATA / "transformer", DATA / "control_flow"] + ([big_input()] if a.big else [])
    print(f"{'input':<14} {'files':>6} {'MB':>7} | {'disk s':>8} {'s3 s':>8} {'memory s':>9} {'buffers s':>9} "
          f"| {'s3/disk':>7} {'mem/disk':>8} | {'s3 list+fetch s':>15}")
    try:
        for root in inputs:
            files = files_of(root)
            size = sum(f.stat().st_size for f in files)
            blobs = {}
            for f in files:
                rel = f.relative_to(root).as_posix()
                data = f.read_bytes()
                blobs[rel] = data
                s3.put_object(Bucket="bench", Key=f"{root.name}/{rel}", Body=data)
                mem.pipe_file(f"/bench/{root.name}/{rel}", data)
            url = f"s3://bench/{root.name}"
            murl = f"memory://bench/{root.name}"
            # same tables from every source (and a warm page cache / connection pool)
            want = hlodump.read_arrow(root, on_error="collect")
            for src in (url, murl, blobs):
                got = hlodump.read_arrow(src, on_error="collect")
                # (named buffers are named explicitly: files that are no dump are `errors` rows)
                assert all(got[k].num_rows == t.num_rows for k, t in want.items() if k != "errors")
            t_disk = best(lambda: hlodump.read_arrow(root, on_error="collect", progress=False), a.repeat)
            t_s3 = best(lambda: hlodump.read_arrow(url, on_error="collect", progress=False), a.repeat)
            t_mem = best(lambda: hlodump.read_arrow(murl, on_error="collect", progress=False), a.repeat)
            t_buf = best(lambda: hlodump.read_arrow(blobs, on_error="collect", progress=False), a.repeat)
            t_fetch = best(lambda: load(stores.plan(url), progress=False), a.repeat)
            print(f"{root.name:<14} {len(files):>6} {size / 1e6:>7.1f} | {t_disk:>8.3f} {t_s3:>8.3f} {t_mem:>9.3f} "
                  f"{t_buf:>9.3f} | {t_s3 / t_disk:>6.2f}x {t_mem / t_disk:>7.2f}x | {t_fetch:>15.3f}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
