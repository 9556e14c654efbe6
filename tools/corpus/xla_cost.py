"""XLA's own cost analysis of each after-optimizations HLO text in a folder, by the jaxlib of the
running venv: ``hlo_module_cost_analysis`` over ``hlo_module_from_text`` (the same call jax's
``Compiled.cost_analysis()`` ends in, minus the compile).

For dumps of producers without a public cost API (TensorFlow, PyTorch/XLA): run it once with a
jaxlib whose XLA is of the producer's era and once with the newest, and keep both.

    VENV/bin/python tools/corpus/xla_cost.py FOLDER > FOLDER/xla_cost-jaxlib-V.json
"""

import glob
import json
import os
import sys

import jax
import jaxlib
import jaxlib._hlo as _hlo
from jax._src.lib import xla_client as xc

KEYS = ("flops", "transcendentals", "bytes accessed")


def main(folder: str) -> None:
    client = jax.devices("cpu")[0].client
    out = {"jaxlib": jaxlib.__version__, "modules": {}}
    for path in sorted(glob.glob(os.path.join(folder, "*after_optimizations.txt"))):
        module = _hlo.hlo_module_from_text(open(path, encoding="utf-8").read())
        figures = xc._xla.hlo_module_cost_analysis(client, module)
        out["modules"][os.path.basename(path)] = {k: float(figures[k]) for k in KEYS if k in figures}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
