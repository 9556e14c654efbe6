"""Per-pass dumps for tests/test_passes.py: one small program compiled with
``xla_dump_hlo_pass_re=.*`` through ``hlodump.capture.compile_into`` (loaded on its own, so this
runs in a venv with jax alone). Usage: python gen_passes.py CAPTURE_PY OUT_DIR [--trim]

``--trim`` keeps the per-pass HLO text files and the after-optimizations HLO text (what the
committed samples under tests/data/passes/jax-V hold), and drops binaries, LLVM IR and the
buffer-assignment files."""

import importlib.util
import os
import re
import sys

import jax
import jax.numpy as jnp


def load_capture(path):
    spec = importlib.util.spec_from_file_location("hlodump_capture_alone", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def program(x, w):
    def body(c, _):
        return jnp.tanh(c @ w) + 1.0, None

    y, _ = jax.lax.scan(body, x, None, length=3)
    return (y * 2.0).sum(0), jnp.exp(x).max()


def main():
    cap, out = load_capture(sys.argv[1]), sys.argv[2]
    x, w = jnp.ones((8, 16)), jnp.full((16, 16), 0.01)
    cap.compile_into(out, jax.jit(program), (x, w), passes=True, fresh=True)
    if "--trim" in sys.argv:
        keep = re.compile(r"module_\d+\.jit_program\.(\d{4}\..*|.*after_optimizations)\.txt$")
        for name in os.listdir(out):
            if not keep.match(name):
                os.remove(os.path.join(out, name))
    print(jax.__version__)


if __name__ == "__main__":
    main()
