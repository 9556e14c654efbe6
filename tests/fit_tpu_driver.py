"""Run by tests/test_fit.py in a subprocess with libtpu on the path: ``hlodump.capture`` of two
programs (examples/fit/small.py: ``mlp`` fits, ``outer`` does not) for each target given, each
kept in OUT/<target>/<program>/; one JSON line per compile on stdout: jax's own
``memory_analysis()`` fields or the compile's error, and the seconds it took.

    python fit_tpu_driver.py OUT tpu:v5e:2x4=65536 tpu:v5p:2x2x2=163840   (target=outer's n)
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(HERE, "..", "examples", "fit", "small.py")


def main(out: str, targets: list[str]) -> None:
    t0 = time.perf_counter()
    import hlodump
    from hlodump.capture import CaptureError

    spec = importlib.util.spec_from_file_location("fit_small", SMALL)
    small = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(small)
    for item in targets:
        name, _, n = item.partition("=")
        t = time.perf_counter()
        tgt = hlodump.target(name)
        t_target = time.perf_counter() - t
        for prog, args in (("mlp", small.mlp_args(tgt)), ("outer", small.outer_args(tgt, n=int(n)))):
            where = os.path.join(out, name.replace(":", "_"), prog)
            rec = {"target": name, "program": prog, "dump": where, "devices": len(tgt.devices),
                   "device_kind": tgt.device_kind, "target_seconds": round(t_target, 3)}
            t = time.perf_counter()
            try:
                d = hlodump.capture(getattr(small, prog), *args, target=tgt, dump_to=where)
            except CaptureError as e:
                rec["error"] = e.compile_error
                rec["dump_read"] = e.dump is not None
            else:
                rec["jax_memory_analysis"] = d.jax_memory_analysis
                rec["has_cost"] = bool(d.jax_cost_analysis)
            rec["seconds"] = round(time.perf_counter() - t, 3)
            print(json.dumps(rec, sort_keys=True), flush=True)
    print(json.dumps({"total_seconds": round(time.perf_counter() - t0, 3)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
