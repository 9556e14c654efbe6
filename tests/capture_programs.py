"""Programs for tests/test_capture.py, compiled through capture's jax half
(``hlodump.capture.compile_into``, loaded on its own so that this runs in a venv with jax alone)
or, with ``--capture``, through ``hlodump.capture`` itself (then our figures are printed too).

Usage: python capture_programs.py CAPTURE_PY OUT_DIR [--capture]
Prints one JSON line per program: program, directory, jax's ``memory_analysis()`` figures (and
``ours``: ``hlodump.analysis.summary``'s ``memory_analysis`` with ``--capture``). The SPMD
program runs when there are 8 devices (``--xla_force_host_platform_device_count=8``)."""

import importlib.util
import json
import os
import sys

import jax
import jax.numpy as jnp

FIELDS = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
          "host_argument_size_in_bytes", "host_output_size_in_bytes", "host_alias_size_in_bytes",
          "host_temp_size_in_bytes")


def load_capture(path):
    spec = importlib.util.spec_from_file_location("hlodump_capture_alone", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def update(p, g):
    return p - 0.1 * g, (g * g).sum()


def power(x, n):
    for _ in range(n):
        x = jnp.sin(x) * x
    return x


def loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: c @ c.T / 16.0 + 1.0, x)


def scaled(x, *, scale):
    return jnp.cumsum(x * scale, axis=0)


def programs():
    """(name, fn, args, kwargs): a plain function, donated and static arguments of a jax.jit
    function, a Lowered, a Traced (where this jax has ``.trace``), keyword arguments, SPMD."""
    x, w1, w2 = jnp.ones((32, 64)), jnp.full((64, 128), 0.01), jnp.full((128, 8), 0.02)
    p = jnp.arange(4096, dtype=jnp.float32).reshape(64, 64)
    yield "plain", mlp, (x, w1, w2), {}
    yield "donated", jax.jit(update, donate_argnums=0), (p, p + 1), {}
    yield "static", jax.jit(power, static_argnums=1), (p, 3), {}
    yield "lowered", jax.jit(loop).lower(p), (), {}
    if hasattr(jax.jit(loop), "trace"):
        yield "traced", jax.jit(lambda a: loop(a) * 2).trace(p), (), {}
    yield "kwargs", scaled, (p,), {"scale": jnp.float32(3.0)}
    if jax.device_count() >= 8:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        mesh = Mesh(jax.devices()[:8], ("d",))
        row = NamedSharding(mesh, P("d", None))
        big = jax.device_put(jnp.ones((256, 512)), row)
        wt = jax.device_put(jnp.ones((512, 256)) / 512, NamedSharding(mesh, P(None, None)))
        spmd = jax.jit(lambda a, b: jnp.tanh(a @ b).sum(1), in_shardings=(row, NamedSharding(mesh, P(None, None))),
                       out_shardings=NamedSharding(mesh, P("d")))
        yield "spmd", spmd, (big, wt), {}


def figures(compiled):
    ma = compiled.memory_analysis()
    return {k: getattr(ma, k) for k in FIELDS if hasattr(ma, k)}


def main():
    capture_py, out = sys.argv[1], sys.argv[2]
    full = "--capture" in sys.argv
    for name, fn, args, kwargs in programs():
        directory = os.path.join(out, name)
        rec = {"program": name, "dir": directory, "jax": jax.__version__, "devices": jax.device_count()}
        if full:
            import hlodump
            from hlodump import analysis as A

            d = hlodump.capture(fn, *args, dump_to=directory, **kwargs)
            (s,) = A.summary(d, top=0)
            rec.update(module=s["module"], ours=s["memory_analysis"], figures=figures(d.compiled))
        else:
            cap = load_capture(capture_py)
            compiled, written = cap.compile_into(directory, fn, args, kwargs, fresh=True)
            rec.update(figures=figures(compiled), files=len(written))
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
