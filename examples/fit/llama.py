"""A Llama-style training step (embedding, RMSNorm, attention, SwiGLU MLP; a scan over layers with
rematerialization; AdamW-like update in f32), sharded FSDP x tensor-parallel, for `hlodump fit`:

    hlodump fit examples/fit/llama.py:train_step --args shapes --target tpu:v5e:2x4 --set size=1b

`shapes(target, size=..., batch=..., seq=...)` builds the arguments as `jax.ShapeDtypeStruct`s
sharded over the target's mesh (`target.mesh(data=-1, model=M)`): nothing is allocated.
Sizes: `tiny` (a few MB, compiles in seconds), `1b` (Llama 3.2 1B's shapes), `8b` (Llama 3.1 8B's).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

SIZES = {
    "tiny": dict(d=256, ff=704, heads=4, kv_heads=4, vocab=1024, layers=2),
    "1b": dict(d=2048, ff=8192, heads=32, kv_heads=8, vocab=128256, layers=16),
    "8b": dict(d=4096, ff=14336, heads=32, kv_heads=8, vocab=128256, layers=32),
}


def _rms(x, g):
    v = (x.astype(jnp.float32) ** 2).mean(-1, keepdims=True)
    return (x * jax.lax.rsqrt(v + 1e-6).astype(x.dtype)) * g


def _block(x, p, heads, kv_heads):
    b, s, d = x.shape
    hd = d // heads
    y = _rms(x, p["n1"])
    q = (y @ p["wq"]).reshape(b, s, heads, hd)
    k = (y @ p["wk"]).reshape(b, s, kv_heads, hd)
    v = (y @ p["wv"]).reshape(b, s, kv_heads, hd)
    k = jnp.repeat(k, heads // kv_heads, axis=2)
    v = jnp.repeat(v, heads // kv_heads, axis=2)
    a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
    mask = jnp.tril(jnp.ones((s, s), bool))
    a = jax.nn.softmax(jnp.where(mask, a, -1e9).astype(jnp.float32), -1).astype(x.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, s, d)
    x = x + o @ p["wo"]
    y = _rms(x, p["n2"])
    return x + (jax.nn.silu(y @ p["w1"]) * (y @ p["w3"])) @ p["w2"]


def _loss(params, tokens, heads, kv_heads):
    x = params["emb"][tokens]

    def body(x, p):
        return jax.checkpoint(partial(_block, heads=heads, kv_heads=kv_heads))(x, p), None
    x, _ = jax.lax.scan(body, x, params["layers"])
    x = _rms(x, params["norm"])
    logits = (x @ params["emb"].T).astype(jnp.float32)
    labels = jnp.roll(tokens, -1, axis=1)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[..., None], -1))


def _step(params, opt, tokens, heads=32, kv_heads=8):
    loss, g = jax.value_and_grad(_loss)(params, tokens, heads, kv_heads)
    m, v = opt
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g.astype(jnp.float32), m, g)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * jnp.square(g.astype(jnp.float32)), v, g)
    params = jax.tree.map(lambda p, m, v: (p.astype(jnp.float32) - 1e-4 * m / (jnp.sqrt(v) + 1e-8)).astype(p.dtype),
                          params, m, v)
    return params, (m, v), loss


#: the step, with its parameters and optimizer state donated (updated in place); heads and
#: kv_heads are static
train_step = jax.jit(_step, donate_argnums=(0, 1), static_argnames=("heads", "kv_heads"))


def shapes(target, size="tiny", batch=None, seq=2048, model=None):
    """The arguments of `train_step` for `size` on `target` (an `hlodump.Target`): params (bf16),
    AdamW moments (f32), tokens [batch, seq] (batch: one sequence per device by default);
    a mesh `data` x `model` (model: 8 when the device count allows, else 1 … ). Returns
    (args, kwargs)."""
    c = SIZES[str(size)]
    n = len(target.devices)
    if model is None:
        model = next(m for m in (8, 4, 2, 1) if n % m == 0 and c["kv_heads"] % m == 0)
    mesh = target.mesh(data=-1, model=int(model))
    batch = int(batch) if batch is not None else n
    seq = int(seq)
    d, ff, L, vocab = c["d"], c["ff"], c["layers"], c["vocab"]
    kv = d // c["heads"] * c["kv_heads"]

    def sds(shape, spec, dtype=jnp.bfloat16):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))
    f, t = "data", "model"
    layers = {"n1": sds((L, d), P()), "n2": sds((L, d), P()),
              "wq": sds((L, d, d), P(None, f, t)), "wk": sds((L, d, kv), P(None, f, t)),
              "wv": sds((L, d, kv), P(None, f, t)), "wo": sds((L, d, d), P(None, t, f)),
              "w1": sds((L, d, ff), P(None, f, t)), "w3": sds((L, d, ff), P(None, f, t)),
              "w2": sds((L, ff, d), P(None, t, f))}
    params = {"emb": sds((vocab, d), P(t, f)), "norm": sds((d,), P()), "layers": layers}
    moment = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, jnp.float32, sharding=s.sharding), params)
    tokens = sds((batch, seq), P(f, None), jnp.int32)
    return (params, (moment, moment), tokens), {"heads": c["heads"], "kv_heads": c["kv_heads"]}
