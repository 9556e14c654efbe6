#!/usr/bin/env python3
"""jax's and XLA's own figures next to a release's sample (tests need no jax of that release).

Usage: python3 tools/corpus/oracles.py DUMPS SAMPLE VERSION --python VENV_PYTHON

DUMPS/jax-<V>/<program>.compiles.jsonl (make_dumps.sh RECORD=1: one line per compile, in module
order) and SAMPLE/jax-<V>/<program>/ (sample.py's copy of DUMPS/jax-<V>/<program>/) give
SAMPLE/jax-<V>/jax_analysis.json:
  {"jax": V, "modules": {"<program>/module_NNNN.<name>": {"module_name", "memory_analysis": {…every
   numeric field of Compiled.memory_analysis()…}, "cost_analysis": {…Compiled.cost_analysis()…}}}}
for every after-optimizations module of the sample (compile k of a program is its k-th module by
number; the names are checked), and VENV_PYTHON (a venv with jaxlib V) runs xla_parse.py over
SAMPLE/jax-<V> into SAMPLE/jax-<V>/xla_parse.json (XLA's own parse of every HLO text file).

  python3 tools/corpus/oracles.py --memory-cost DUMPS VERSION TESTDATA

copies gen_memory.py's and gen_cost.py's output (DUMPS/jax-<V>/memory/, DUMPS/jax-<V>/cost/: the
jsonl and the buffer assignments / after-optimizations HLO) into TESTDATA/memory_analysis/jax-<V>/
and TESTDATA/cost/jax-<V>/, the layout of the older releases there, paths neutralised as sample.py
does (same length).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_AFTER = re.compile(r"^module_(\d{4,})\.(.+)\.[a-z0-9_.]*after_optimizations\.txt$")


def after_modules(d: str) -> list[tuple[int, str]]:
    """(number, name) of the after-optimizations modules under d (also in the
    `<name>/<host>_<pid>/` folders of --xla_dump_hlo_to_subfolder)."""
    return sorted({(int(m[1]), m[2]) for _root, _dirs, names in os.walk(d) for n in names if (m := _AFTER.match(n))})


def memory_cost(dumps: str, version: str, testdata: str) -> None:
    sys.path.insert(0, HERE)
    import sample
    gen = os.path.join(HERE, "generators") + "/"
    for kind, pat, jsonl, dst in (("memory", r"-buffer-assignment\.txt$", "memory_analysis.jsonl", "memory_analysis"),
                                  ("cost", r"\.cpu_after_optimizations\.txt$", "cost_analysis.jsonl", "cost")):
        src = os.path.join(os.path.abspath(dumps), f"jax-{version}", kind) + "/"
        out = os.path.join(testdata, dst, f"jax-{version}")
        reps = [(src[:-1].encode(), sample.neutral(src, sample.NEUTRAL_DUMPS)[:-1].encode()),
                (gen.encode(), sample.neutral(gen, sample.NEUTRAL_GEN).encode())]
        reps.sort(key=lambda r: -len(r[0]))
        names = [n for n in sorted(os.listdir(src)) if re.search(pat, n)] + [jsonl]
        n, size = sample.copy_program(src, out, names, reps)
        print(f"{out}: {n} files, {size} bytes")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--memory-cost"]:
        if len(argv) != 4:
            raise SystemExit("usage: oracles.py --memory-cost DUMPS VERSION TESTDATA")
        memory_cost(*argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dumps")
    ap.add_argument("sample")
    ap.add_argument("version")
    ap.add_argument("--python", required=True, help="python of a venv with jax VERSION")
    a = ap.parse_args(argv)
    src = os.path.join(a.dumps, f"jax-{a.version}")
    dst = os.path.join(a.sample, f"jax-{a.version}")
    out = {}
    for program in sorted(os.listdir(dst)):
        pdst = os.path.join(dst, program)
        if not os.path.isdir(pdst):
            continue
        cj = os.path.join(src, program + ".compiles.jsonl")
        recs = [json.loads(x) for x in open(cj, encoding="utf-8")]
        full = after_modules(os.path.join(src, program))
        if len(recs) != len(full) or any(r.get("module_name") != name for r, (_, name) in zip(recs, full)):
            raise SystemExit(f"{cj}: {len(recs)} compiles do not match the {len(full)} modules of the dump "
                             f"({[r.get('module_name') for r in recs][:5]} vs {[n for _, n in full][:5]})")
        by_id = {mid: r for r, (mid, _) in zip(recs, full)}
        for mid, name in after_modules(pdst):
            r = by_id[mid]
            out[f"{program}/module_{mid:04d}.{name}"] = {
                k: r[k] for k in ("module_name", "memory_analysis", "cost_analysis",
                                  "memory_analysis_error", "cost_analysis_error") if k in r}
    with open(os.path.join(dst, "jax_analysis.json"), "w", encoding="utf-8") as f:
        json.dump({"jax": a.version, "modules": out}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"jax-{a.version}: jax_analysis.json, {len(out)} modules")
    xp = os.path.join(dst, "xla_parse.json")
    tmp = xp + ".tmp"
    subprocess.run([a.python, os.path.join(HERE, "xla_parse.py"), dst, tmp], check=True)
    os.replace(tmp, xp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
