"""Record jax's own analyses of EVERY executable a program compiles (a `sitecustomize`).

Usage: COMPILES=FILE.jsonl PYTHONPATH=tools/corpus/generators/record_compiles python gen_<program>.py ARGS...

The program runs as its own main script, unchanged (no wrapper frame, so the source locations
and stack frames jax records in the HLO metadata are those of a plain run); this module is
imported by `site` at start-up and only hooks the import of ``jax._src.compiler``.

Wraps ``jax._src.compiler.compile_or_get_cached`` (the one place jax >= 0.4.x compiles an XLA
executable for jit / pmap / shard_map) and, after each compile, writes one JSON line to
$COMPILES: ``seq`` (0, 1, …: the order of compiles, which is the order of the dump's module
numbers), ``module_name`` (the compiled module's name), ``memory_analysis`` (every numeric field
of ``get_compiled_memory_stats()``, the object ``Compiled.memory_analysis()`` returns) and
``cost_analysis`` (``cost_analysis()``, the dict ``Compiled.cost_analysis()`` returns), or
``*_error`` where one raises. The program itself runs unchanged. Cache hits compile nothing and
dump nothing, so they record nothing either.
"""
import importlib.abc
import importlib.machinery
import json
import os
import sys

_OUT = os.environ.get("COMPILES")
_f = None
_seq = [0]


def _numeric(m):
    import numpy as np
    rec = {}
    for n in dir(m):
        if n.startswith("_"):
            continue
        try:
            v = getattr(m, n)
        except Exception as e:  # noqa: BLE001
            rec[n] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if callable(v):
            continue
        if isinstance(v, (bool, int, float)):
            rec[n] = v
        elif isinstance(v, (np.integer, np.floating)):
            rec[n] = v.item()
    return rec


def _record(exe):
    rec = {"seq": _seq[0]}
    _seq[0] += 1
    try:
        import jax
        rec["jax"] = jax.__version__
        mods = exe.hlo_modules()
        rec["module_name"] = mods[0].name if mods else None
        rec["n_hlo_modules"] = len(mods)
    except Exception as e:  # noqa: BLE001
        rec["module_name_error"] = f"{type(e).__name__}: {e}"[:300]
    try:
        m = exe.get_compiled_memory_stats()
        rec["memory_analysis_type"] = type(m).__name__
        rec["memory_analysis"] = _numeric(m)
    except Exception as e:  # noqa: BLE001
        rec["memory_analysis_error"] = f"{type(e).__name__}: {e}"[:300]
    try:
        ca = exe.cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        rec["cost_analysis"] = {str(k): float(v) for k, v in (ca or {}).items()}
    except Exception as e:  # noqa: BLE001
        rec["cost_analysis_error"] = f"{type(e).__name__}: {e}"[:300]
    global _f
    if _f is None:
        _f = open(_OUT, "w")
    _f.write(json.dumps(rec, sort_keys=True) + "\n")
    _f.flush()


def _patch(compiler):
    orig = compiler.compile_or_get_cached

    def wrapped(*args, **kwargs):
        exe = orig(*args, **kwargs)
        try:
            _record(exe)
        except Exception as e:  # noqa: BLE001
            print(f"FAILED record_compiles: {type(e).__name__}: {e}", flush=True)
        return exe

    compiler.compile_or_get_cached = wrapped




class _Hook(importlib.abc.MetaPathFinder):
    """Patches jax._src.compiler right after it is executed."""

    def find_spec(self, name, path, target=None):
        if name != "jax._src.compiler":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)
        loader.exec_module = exec_and_patch
        return spec


if _OUT:
    sys.meta_path.insert(0, _Hook())
