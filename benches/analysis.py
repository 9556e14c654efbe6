#!/usr/bin/env python3
"""CPU time of the analyses against the read of the same dump, at ~200 and ~1,000+ modules.

    python benches/analysis.py [--copies 1 5] [--legacy]
    python benches/analysis.py --tiny 1000 4000 16000 [--only summary ...]

Inputs: every program directory of ``tests/data/corpus`` (12 jax releases, CPU dumps: HLO text,
per-pass HLO, split and combined buffer assignments, live ranges, memory-usage reports) copied
``K`` times under ``benches/out/analysis/x{K}/copy_i/…``: each copy is a dump of its own, so the
modules are distinct (modules are (dump, id, name)) and the dump grows linearly.

Per size, in one fresh child process per analysis (so no analysis reuses another's cached
tables): ``read_arrow`` (threads=1) CPU seconds, then the analysis' CPU seconds on that dump,
their ratio, the per-module cost, and the child's peak RSS (VmHWM). Then ``hlodump summary
--json`` on the whole dump, wall time of the command. ``--legacy`` also times the first analysis
layer (tests/legacy_analysis.py) on the smaller size.

``--tiny N …``: instead of the corpus copies, N tiny modules in one dump directory (one module of
the corpus, jax 0.10.2 ``misc/module_0103.jit__lambda``: its after-optimizations HLO text, buffer
assignment, values, live ranges and memory-usage report, 5 files, ~4.5 KB, renumbered
``module_0000`` … ``module_{N-1}``) under ``benches/out/analysis/tiny{N}/``: the per-module
overhead of every analysis, which must stay flat from 1k to 100k modules (issue 37).

Prints a table and writes ``benches/out/analysis.json``.

    python benches/analysis.py --generated 1000 10000

Generated dumps: N after-optimizations HLO modules (the 12 smallest of jax 0.12.0.1's corpus
programs, cycled, each with a module id of its own) in one directory: ``read_arrow``, then
``summary(cost=False)``, ``cost_analysis`` and ``summary`` (with cost, after the others: cached)
in one child process; CPU seconds and per-module milliseconds of the cost — flat from 1k to
10k when nothing loops per module.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
ANALYSES = {
    "summary": "A.summary(d, cost=False)",
    "summary_with_cost": "A.summary(d)",
    "cost_analysis": "A.cost_analysis(d)",
    "peak_buffers": "A.peak_buffers(d)",
    "memory_timeline": "A.memory_timeline(d)",
    "breakdown_source": "A.breakdown(d, 'source')",
}


def _built(name: str, fill: Callable[[Path], None]) -> Path:
    """``out/analysis/<name>``, made once: ``fill`` writes it into a temporary folder, renamed
    into place when complete (an interrupted run leaves no half-made input behind)."""
    out = HERE / "out" / "analysis" / name
    if out.is_dir():
        return out
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    fill(tmp)
    tmp.rename(out)
    return out


def make_generated(n: int) -> Path:
    """``n`` modules cycling through the 12 smallest jax 0.12.0.1 after-optimizations texts."""
    srcs = sorted((CORPUS / "jax-0.12.0.1").glob("*/*.cpu_after_optimizations.txt"), key=lambda p: p.stat().st_size)[:12]
    texts = [(p.name.split(".")[1], p.read_bytes()) for p in srcs]

    def fill(tmp: Path) -> None:
        for i in range(n):
            name, text = texts[i % len(texts)]
            (tmp / f"module_{i:06d}.{name}.cpu_after_optimizations.txt").write_bytes(text)

    return _built(f"gen{n}", fill)


def generated_child(path: str) -> None:
    import hlodump
    from hlodump import analysis as A

    t0 = time.process_time()
    d = hlodump.read_arrow(path, threads=1, progress=False)
    t1 = time.process_time()
    n = len(A._module_list(d))
    t2 = time.process_time()
    A.summary(d, cost=False)
    t3 = time.process_time()
    ca = A.cost_analysis(d)
    t4 = time.process_time()
    A.summary(d)
    t5 = time.process_time()
    assert sum(1 for r in ca if r["cost_analysis"]) == n
    print(json.dumps({"modules": n, "read_s": t1 - t0, "modules_s": t2 - t1, "summary_s": t3 - t2, "cost_s": t4 - t3,
                      "summary_with_cost_after_s": t5 - t4}))


def make(k: int) -> Path:
    """``k`` copies of the whole corpus."""
    def fill(tmp: Path) -> None:
        for i in range(k):
            shutil.copytree(CORPUS, tmp / f"copy_{i}", ignore=shutil.ignore_patterns("README.md"))

    return _built(f"x{k}", fill)


TINY = CORPUS / "jax-0.10.2" / "misc"
TINY_MODULE = "module_0103.jit__lambda"
TINY_SUFFIXES = (".cpu_after_optimizations.txt", ".cpu_after_optimizations-buffer-assignment.txt",
                 ".cpu_after_optimizations-buffer-assignment-values.txt",
                 ".cpu_after_optimizations-live-range.txt", ".cpu_after_optimizations-memory-usage-report.txt")


def make_tiny(n: int) -> Path:
    """``n`` copies of one tiny module, numbered module_0000 … (see the module docstring)."""
    texts = {sfx: (TINY / (TINY_MODULE + sfx)).read_bytes() for sfx in TINY_SUFFIXES}

    def fill(tmp: Path) -> None:
        for i in range(n):
            for sfx, text in texts.items():
                (tmp / f"module_{i:04d}.jit__lambda{sfx}").write_bytes(text)

    return _built(f"tiny{n}", fill)


def child(path: str, expr: str, legacy: bool) -> None:
    import resource

    import hlodump

    if legacy:
        sys.path.insert(0, str(ROOT / "tests"))
        import legacy_analysis as A  # noqa: F401
    else:
        from hlodump import analysis as A  # noqa: F401
    t0 = time.process_time()
    d = hlodump.read_arrow(path, threads=1, progress=False)
    t1 = time.process_time()
    from hlodump import analysis as E

    n = len(E._module_list(d)) if not legacy else len(A._module_list(d))
    t2 = time.process_time()
    eval(expr)
    t3 = time.process_time()
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"read_s": t1 - t0, "analysis_s": t3 - t2, "modules": n, "peak_rss": hwm}))


def run_child(path: Path, name: str, legacy: bool) -> dict:
    args = [sys.executable, __file__, "--child", str(path), ANALYSES[name]] + (["--legacy"] if legacy else [])
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_wall(path: Path, *opts: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``hlodump summary OPTS PATH`` (this checkout's hlodump: ``python -m``;
    CPU: user + system of the child, so a busy machine shows in wall time only)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hlodump.cli", "summary", *opts, str(path)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, nargs="*", default=[1, 5])
    ap.add_argument("--legacy", action="store_true", help="also time the first analysis layer (smallest size)")
    ap.add_argument("--tiny", type=int, nargs="*", default=None, metavar="N",
                    help="N tiny modules in one dump instead of corpus copies (e.g. 1000 4000 16000)")
    ap.add_argument("--only", nargs="*", choices=sorted(ANALYSES), default=None, help="these analyses only")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--generated", type=int, nargs="*", help="generated dumps of N small modules (see above)")
    ap.add_argument("--generated-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.generated_child:
        generated_child(a.generated_child)
        return 0
    if a.generated:
        print(f"{'modules':>8} {'read s':>7} {'summary s':>9} {'cost s':>7} {'cost/read':>9} {'cost ms/module':>14}")
        for n in a.generated:
            path = make_generated(n)
            p = subprocess.run([sys.executable, __file__, "--generated-child", str(path)], capture_output=True,
                               text=True, check=True)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            print(f"{r['modules']:>8} {r['read_s']:>7.2f} {r['summary_s']:>9.2f} {r['cost_s']:>7.2f} "
                  f"{r['cost_s'] / r['read_s']:>9.2f} {1000 * r['cost_s'] / r['modules']:>14.3f}", flush=True)
        return 0
    if a.child:
        child(a.child[0], a.child[1], a.legacy)
        return 0
    results = []
    hdr = f"{'modules':>7} {'MB':>6} {'analysis':<18} {'read s':>7} {'analysis s':>10} {'ratio':>6} {'ms/module':>9} {'peak RSS':>9}"
    print(hdr)
    sizes = [("tiny", n) for n in a.tiny] if a.tiny else [("copies", k) for k in a.copies]
    for how, k in sizes:
        path = make_tiny(k) if how == "tiny" else make(k)
        mb = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
        for name in (a.only or ANALYSES):
            for legacy in ([False, True] if a.legacy and how == "copies" and k == min(a.copies) else [False]):
                r = run_child(path, name, legacy)
                r.update(**{how: k}, mb=mb, analysis=name + (" (legacy)" if legacy else ""))
                results.append(r)
                print(f"{r['modules']:>7} {mb:>6.1f} {r['analysis']:<18} {r['read_s']:>7.2f} {r['analysis_s']:>10.2f} "
                      f"{r['analysis_s'] / r['read_s']:>6.2f} {1000 * r['analysis_s'] / r['modules']:>9.2f} "
                      f"{r['peak_rss'] / 2**20:>7.0f}MB", flush=True)
        for opts in (("--json",), ()):
            w, cpu = cli_wall(path, *opts)
            what = "hlodump summary " + " ".join(opts)
            results.append({how: k, "mb": mb, "analysis": what.strip(), "wall_s": w, "cpu_s": cpu})
            print(f"{'':>7} {mb:>6.1f} {what.strip()}: {w:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    out = HERE / "out" / ("analysis_tiny.json" if a.tiny else "analysis.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
