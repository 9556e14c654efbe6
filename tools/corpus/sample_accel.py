#!/usr/bin/env python3
"""Copy the TPU/GPU sample of tests/data/accel out of gen_accel.py's output.

Usage: python3 tools/corpus/sample_accel.py ACCEL OUT

ACCEL is gen_accel.py's OUT (ACCEL/<target>/<program>/ dump folders, <program>.compiles.jsonl,
<program>.error.txt). For each target of SAMPLE below, the listed programs are copied whole
(every file the compiler wrote, folders included) with their .compiles.jsonl (jax's own
memory_analysis()/cost_analysis(): the oracle) and .error.txt (a failed compile's error text);
in llama, oom and passes without the files every small program
also has (`REPEATED`); for every other program of the target only the .compiles.jsonl and .error.txt.

Machine paths are replaced by neutral ones of the same length (as sample.py does): the dump
folder, the generator's folder, the venvs' site-packages (`SITE_PACKAGES`, colon-separated), and libtpu's default `/tmp/` paths in its flag file (`/var/`).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample  # noqa: E402

ALL = ("mlp", "llama", "collectives", "pallas", "offload", "oom", "passes", "proto")  # cublas: GPU only
SAMPLE = {
    "tpu_v5e_2x4": ALL,
    "tpu_v4_2x2x1": ("mlp", "collectives", "offload"),
    "tpu_v5p_2x2x2": ("mlp", "collectives"),
    "tpu_v6e_2x4": ("mlp", "collectives", "pallas"),
    "tpu_TPU7x_2x2x1": ("mlp", "collectives", "offload"),
    "tpu_v5e_2x2_x2": ("mlp", "collectives"),
    "gpu_h100": ("mlp", "llama", "collectives", "pallas", "offload", "oom", "proto", "cublas"),
    "gpu_a100": ("mlp", "collectives"),
}
VENVS = [d.rstrip("/") + "/" for d in os.environ.get("SITE_PACKAGES", "/work/venvs/tpu/lib/python3.12/site-packages:"
                                                         "/work/venvs/gpu/lib/python3.12/site-packages").split(":")]
# In the large programs, the files every small program also has (HLO copies at later stages,
# libtpu's flag files) are left out: the budget of tests/data.
LARGE = ("llama", "oom", "passes")
REPEATED = (".after_codegen.txt", "_after_buffer_assignment.txt", "_before_buffer_assignment.txt",
            ".flagfile", ".tpu_comp_env.txt", ".before_config_assignment.txt", ".after_spmd_partitioner.txt")
GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generators") + "/"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    accel, out = (os.path.abspath(a) for a in argv)
    total = 0
    for target, programs in SAMPLE.items():
        src = os.path.join(accel, target)
        if not os.path.isdir(src):
            print(f"{target}: not in {accel}, skipped")
            continue
        reps = [((src + "/").encode(), sample.neutral(src + "/", sample.NEUTRAL_DUMPS).encode()),
                (GEN.encode(), sample.neutral(GEN, sample.NEUTRAL_GEN).encode()),
                (b"/tmp/", b"/var/")]
        for venv in VENVS:  # jax's own frames (Pallas kernels) name its site-packages
            reps.append((venv.encode(), sample.neutral(venv, sample.NEUTRAL_SITE).encode()))
        reps.sort(key=lambda r: -len(r[0]))
        chosen = []
        for name in sorted(os.listdir(src)):
            path = os.path.join(src, name)
            if os.path.isdir(path):
                if name in programs:
                    chosen += [os.path.relpath(os.path.join(root, f), src)
                               for root, _dirs, files in os.walk(path) for f in files
                               if not (name in LARGE and f.endswith(REPEATED))]
            elif name.endswith((".compiles.jsonl", ".error.txt")):
                chosen.append(name)
        n, size = sample.copy_program(src, os.path.join(out, target), sorted(chosen), reps)
        total += size
        print(f"{target}: {n} files, {size} bytes")
    print(f"total {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
