"""Pairs of compiles that differ by one known cause, for ``hlodump diff``'s explanations
(tests/test_diff_explain.py, tests/data/diff/).

Each case compiles the same function twice with jax's ahead-of-time API,
``jax.jit(f, ...).lower(*args).compile(compiler_options={"xla_dump_to": D, ...})``, into
``OUT/<case>/a`` and ``OUT/<case>/b``; only one thing changes between a and b:

* ``donate``     — a donates its first argument (``donate_argnums=0``), b does not: b's output
  gets a buffer of its own (cause: ``aliasing``);
* ``checkpoint`` — the gradient of a stack of layers, b with ``jax.checkpoint`` around each layer
  (cause: ``remat``);
* ``checkpoint_scan`` — the gradient of a ``lax.scan`` over layers, b with ``jax.checkpoint``
  (policy ``dots_saveable``) around the scanned layer: the stacked residuals go (cause: ``remat``);
* ``donate_many`` — an Adam update, a donating params and both moments (cause: ``aliasing``);
* ``flag``       — b compiled with ``xla_disable_hlo_passes=fusion`` (a fusion-limiting option:
  the CPU compiler's instruction fusion pass is off; cause: ``options``, and ``fusion`` without
  an options table);
* ``shape``      — b's input has twice the rows (cause: ``shape``);
* ``checkpoint_tiny`` — the gradient of a small function, b under ``jax.checkpoint``: the peak
  does not move (the cause is named at 0 bytes);
* ``dtype``      — an MLP's gradient, b with bfloat16 weights and input (cause: ``shape``: the
  converts the CPU adds for bf16 dots follow from the inputs).

Usage (jax 0.10.2, CPU):
  JAX_PLATFORMS=cpu python gen_diff.py OUT
Then the dumps are trimmed to what the diff reads (the after-optimizations HLO text, its
buffer-assignment and live-range files, the debug options): ``--trim``.
"""
import os
import shutil
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

OUT = next((a for a in sys.argv[1:] if not a.startswith("--")), "diff")
KEEP = ("cpu_after_optimizations.txt", "cpu_after_optimizations-buffer-assignment.txt",
        "cpu_after_optimizations-buffer-assignment-values.txt", "cpu_after_optimizations-live-range.txt",
        ".debug_options")


def compile_to(fn, args, out, donate=(), **opts):
    os.makedirs(out, exist_ok=True)
    jax.jit(fn, donate_argnums=donate).lower(*args).compile(
        compiler_options={"xla_dump_to": os.path.abspath(out), **opts})


# ---------------------------------------------------------------- donate

def scale_add(x, y):
    return x * 2.0 + jnp.tanh(y)


# ---------------------------------------------------------------- checkpoint

def _layer(w, h):
    return jnp.tanh(h @ w) * jax.nn.sigmoid(h)


def _stack(layer):
    def loss(ws, x):
        h = x
        for w in ws:
            h = layer(w, h)
        return jnp.sum(h * h)
    return jax.grad(loss)


def mlp_grad(ws, x):
    return _stack(_layer)(ws, x)


def mlp_grad_ckpt(ws, x):
    return _stack(jax.checkpoint(_layer))(ws, x)


def _scan_layer(w, h):
    return jnp.tanh(h @ w)


def scan_grad(ws, x):
    def loss(ws, x):
        h, _ = jax.lax.scan(lambda h, w: (_scan_layer(w, h), None), x, ws)
        return jnp.sum(h ** 2)
    return jax.grad(loss)(ws, x)


def scan_grad_ckpt(ws, x):
    layer = jax.checkpoint(_scan_layer, policy=jax.checkpoint_policies.dots_saveable)

    def loss(ws, x):
        h, _ = jax.lax.scan(lambda h, w: (layer(w, h), None), x, ws)
        return jnp.sum(h ** 2)
    return jax.grad(loss)(ws, x)


def adam(p, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.99 * v + 0.01 * g * g
    return p - 1e-3 * m2 / (jnp.sqrt(v2) + 1e-8), m2, v2


def tiny(x):
    return jnp.sum(jnp.sin(x) * x)


def mlp_loss(w1, w2, x):
    return jnp.mean((jax.nn.gelu(x @ w1) @ w2) ** 2)


# ---------------------------------------------------------------- flag / shape

def norm_mlp(x, w):
    h = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    h = h / jnp.sum(h, axis=-1, keepdims=True)
    return jnp.tanh(h @ w) + jnp.sin(h @ w) * 0.5


def main() -> None:
    k = jax.random.split(jax.random.PRNGKey(0), 8)
    x = jax.random.normal(k[0], (256, 256), jnp.float32)
    y = jax.random.normal(k[1], (256, 256), jnp.float32)
    compile_to(scale_add, (x, y), f"{OUT}/donate/a", donate=(0,))
    compile_to(scale_add, (x, y), f"{OUT}/donate/b")

    ws = [jax.random.normal(k[2 + i], (128, 128), jnp.float32) * 0.1 for i in range(4)]
    xb = jax.random.normal(k[6], (256, 128), jnp.float32)
    compile_to(mlp_grad, (ws, xb), f"{OUT}/checkpoint/a")
    compile_to(mlp_grad_ckpt, (ws, xb), f"{OUT}/checkpoint/b")

    xs = jax.random.normal(k[7], (128, 256), jnp.float32)
    w = jax.random.normal(k[1], (256, 256), jnp.float32)
    compile_to(norm_mlp, (xs, w), f"{OUT}/flag/a")
    compile_to(norm_mlp, (xs, w), f"{OUT}/flag/b", xla_disable_hlo_passes="fusion")

    compile_to(norm_mlp, (xs, w), f"{OUT}/shape/a")
    compile_to(norm_mlp, (jnp.concatenate([xs, xs]), w), f"{OUT}/shape/b")

    wsc = jax.random.normal(k[3], (6, 128, 128), jnp.float32) * 0.1
    compile_to(scan_grad, (wsc, xb), f"{OUT}/checkpoint_scan/a")
    compile_to(scan_grad_ckpt, (wsc, xb), f"{OUT}/checkpoint_scan/b")

    st = [jax.random.normal(k[i], (128, 256), jnp.float32) for i in range(4)]
    compile_to(adam, st, f"{OUT}/donate_many/a", donate=(0, 2, 3))
    compile_to(adam, st, f"{OUT}/donate_many/b")

    w1 = jax.random.normal(k[4], (128, 256), jnp.float32) * 0.05
    w2 = jax.random.normal(k[5], (256, 128), jnp.float32) * 0.05
    xm = jax.random.normal(k[6], (64, 128), jnp.float32)
    compile_to(jax.grad(mlp_loss, argnums=(0, 1)), (w1, w2, xm), f"{OUT}/dtype/a")
    compile_to(jax.grad(mlp_loss, argnums=(0, 1)), tuple(t.astype(jnp.bfloat16) for t in (w1, w2, xm)),
               f"{OUT}/dtype/b")

    compile_to(jax.grad(tiny), (jnp.ones((64,), jnp.float32),), f"{OUT}/checkpoint_tiny/a")
    compile_to(jax.grad(jax.checkpoint(tiny)), (jnp.ones((64,), jnp.float32),), f"{OUT}/checkpoint_tiny/b")

    if "--trim" in sys.argv:
        for root, dirs, files in os.walk(OUT, topdown=False):
            for f in files:
                if not f.endswith(KEEP):
                    os.remove(os.path.join(root, f))
            for dname in dirs:
                p = os.path.join(root, dname)
                if not os.listdir(p):
                    shutil.rmtree(p)


if __name__ == "__main__":
    main()
