"""Dump text and proto of the same compile (``--xla_dump_hlo_as_proto``) for a few programs.

Usage: python proto_twins.py OUT_DIR
One directory per program under OUT_DIR, each with the text and proto twins of one compile,
and ``memory_analysis.json`` (jax's figures). Runs under any jax (the venvs under /work/venvs)."""

import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
import jax
import jax.numpy as jnp

FIELDS = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes")


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def update(p, g):
    return p - 0.1 * g, (g * g).sum()


def loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: c @ c.T / 16.0 + 1.0, x)


def cond(x, y):
    return jax.lax.cond(x.sum() > 0, lambda a: a * 2.0, lambda a: a - y, x)


def softmax_ce(logits, labels):
    lp = jax.nn.log_softmax(logits)
    return -(lp * jax.nn.one_hot(labels, logits.shape[-1])).sum(-1).mean()


def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def scan_rnn(h, xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    return jax.lax.scan(step, h, xs)


def gather_sort(x, idx):
    y = jnp.sort(x, axis=-1)
    return y[idx], jnp.argmax(x, axis=0), jnp.cumsum(x, axis=1)


def slicing(x):
    a = x[1:5, ::2]
    b = jnp.pad(x, ((1, 2), (0, 3)))
    c = jnp.concatenate([x, x * 2], axis=0)
    d = jax.lax.dynamic_update_slice(x, jnp.ones((2, 2)), (1, 1))
    return a.sum() + b.sum() + c.sum() + d.sum(), jnp.transpose(x).reshape(-1)[::3]


def mixed(x):
    y = x.astype(jnp.bfloat16)
    z = (y * y).astype(jnp.float32)
    return jnp.where(z > 1.0, jnp.exp(z), jnp.log1p(jnp.abs(z))), (x.astype(jnp.int32) % 3)


def programs():
    k = jax.random.PRNGKey(0)
    x = jax.random.normal(k, (32, 64))
    w1, w2 = jnp.full((64, 128), 0.01), jnp.full((128, 8), 0.02)
    p = jnp.arange(4096, dtype=jnp.float32).reshape(64, 64)
    yield "mlp", jax.jit(mlp), (x, w1, w2)
    yield "donated", jax.jit(update, donate_argnums=0), (p, p + 1)
    yield "loop", jax.jit(loop), (p,)
    yield "cond", jax.jit(cond), (p, p)
    yield "softmax_ce", jax.jit(jax.value_and_grad(softmax_ce)), (x, jnp.arange(32) % 64)
    yield "conv", jax.jit(conv), (jnp.ones((2, 16, 16, 3)), jnp.ones((3, 3, 3, 8)))
    yield "scan_rnn", jax.jit(scan_rnn), (jnp.ones((4, 16)), jnp.ones((10, 4, 16)), jnp.eye(16))
    yield "gather_sort", jax.jit(gather_sort), (x, jnp.array([3, 1, 2]))
    yield "slicing", jax.jit(slicing), (jnp.ones((8, 8)),)
    yield "mixed", jax.jit(mixed), (x,)


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    for name, fn, args in programs():
        if only and name not in only:
            continue
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        c = fn.lower(*args).compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_as_proto": True,
                                                      "xla_dump_hlo_as_text": True})
        ma = c.memory_analysis()
        fig = {f: getattr(ma, f) for f in FIELDS} if ma is not None else None
        with open(os.path.join(d, "memory_analysis.json"), "w") as f:
            json.dump({"jax": jax.__version__, "memory_analysis": fig}, f)
        print(json.dumps({"program": name, "dir": d, "memory_analysis": fig}))


if __name__ == "__main__":
    main()
