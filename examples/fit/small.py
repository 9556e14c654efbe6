"""Two small programs for `hlodump fit` (they compile in seconds; the tests and the cookbook run them):

* `mlp` — a sharded two-layer MLP: fits anywhere;
* `outer` — the outer product of a vector with itself, an n x n f32 output, which does not fit
  in HBM for `n` large enough (`outer_args(target, n=...)`: n=65536 needs 16 GiB on one device).

    hlodump fit examples/fit/small.py:mlp --args mlp_args --target tpu:v5e:2x4
    hlodump fit examples/fit/small.py:outer --args outer_args --target tpu:v5e:2x4 --set n=65536
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P


@jax.jit
def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def mlp_args(target, batch=1024, d=512, ff=2048):
    mesh = target.mesh(data=-1)

    def sds(shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec))
    return sds((int(batch), int(d)), P("data", None)), sds((int(d), int(ff)), P()), sds((int(ff), int(d)), P())


@jax.jit
def outer(v):
    return jnp.sin(v[:, None] * v[None, :])


def outer_args(target, n=65536):
    return (jax.ShapeDtypeStruct((int(n),), jnp.float32),)
