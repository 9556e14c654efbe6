"""jax's own cost analysis of compiled programs, next to the XLA dumps of the same modules.

Each program is compiled with ``jax.jit(f).lower(*args).compile(compiler_options={"xla_dump_to":
OUT})`` (no XLA_FLAGS for the dump) and one JSON line per program goes to
``$OUT/cost_analysis.jsonl``: the program name, the HLO module name, jax's
``Compiled.cost_analysis()`` (a dict since jax 0.4.38, a one-element list before: stored as the
dict) and, for the collective programs, what the program sends (kind, group size, the bytes S
of each collective as NCCL's tests define them) so the ``collectives`` table can be checked.
Every step is in try/except (``FAILED <step>: …``), so it runs on jax 0.4.35 … 0.10.2.

Usage (8 host devices for the SPMD and collective programs):
  XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu OUT=DIR python gen_cost.py
"""
import json
import os
import re
import sys
import traceback

_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

OUT = os.path.abspath(os.environ.get("OUT", "."))
os.makedirs(OUT, exist_ok=True)
_out = open(os.path.join(OUT, "cost_analysis.jsonl"), "w")
rs = np.random.RandomState(0)


def fail(step, e):
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    print(f"FAILED {step}: {type(e).__name__}: {msg}", flush=True)


def module_name_of(text):
    for line in text.splitlines():
        m = re.match(r"\s*HloModule\s+([^\s,]+)", line)
        if m:
            return m.group(1)
        if line.strip():
            break
    return None


def plain(d):
    return {str(k): float(v) for k, v in d.items()}


def record(name, f, args, expect=None, jit_kwargs=None):
    rec = {"program": name, "jax": jax.__version__}
    try:
        c = jax.jit(f, **(jit_kwargs or {})).lower(*args).compile(compiler_options={"xla_dump_to": OUT})
    except Exception as e:  # noqa: BLE001
        fail(f"{name}.compile", e)
        rec["compile_error"] = f"{type(e).__name__}: {e}"[:500]
        _out.write(json.dumps(rec) + "\n")
        return
    try:
        rec["module_name"] = module_name_of(c.as_text())
    except Exception as e:  # noqa: BLE001
        fail(f"{name}.as_text", e)
    try:
        ca = c.cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        rec["cost_analysis"] = plain(ca or {})
    except Exception as e:  # noqa: BLE001
        fail(f"{name}.cost_analysis", e)
        rec["cost_analysis_error"] = f"{type(e).__name__}: {e}"[:500]
    if expect is not None:
        rec["collectives"] = expect
    _out.write(json.dumps(rec) + "\n")
    _out.flush()


def f32(*shape):
    return rs.randn(*shape).astype(np.float32)


# ---- programs (unique function names: the HLO module is jit_<name>)

def cost_matmul(a, b):
    return a @ b


def cost_conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def cost_conv_strided(x, k):
    return lax.conv_general_dilated(x, k, (2, 2), ((1, 0), (0, 1)), rhs_dilation=(1, 2),
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def cost_elementwise(a, b):
    return jnp.maximum(a * b + 3.0, a - b) / (jnp.abs(b) + 1.0)


def cost_transcendentals(a):
    return jnp.exp(a) + jnp.log(jnp.abs(a) + 1) + jnp.tanh(a) * jnp.sin(a) + jnp.sqrt(jnp.abs(a)) + jax.nn.sigmoid(a)


def cost_reduce(a):
    return a.sum(0), a.max(1), jnp.argmax(a, axis=1)


def cost_reduce_window(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"), jnp.cumsum(x, axis=2)


def cost_pool_grad(x):
    return jax.grad(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum())(x)


def cost_scatter(x, idx, v):
    return x.at[idx].add(v)


def cost_gather(x, idx):
    return x[idx] * 2.0


def cost_sort(x, y):
    return jnp.sort(x), jnp.argsort(y)


def cost_fft(x):
    return jnp.fft.rfft(x).real.sum() + jnp.abs(jnp.fft.fft2(x.astype(jnp.complex64))).sum()


def cost_while(x):
    return lax.fori_loop(0, 17, lambda i, c: jnp.tanh(c @ c.T) * 0.5 + c, x)


def cost_scan(w, xs, h):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    return lax.scan(step, h, xs)


def cost_cond(p, x):
    return lax.cond(p, lambda y: jnp.exp(y) @ y, lambda y: y * 2.0, x)


def cost_switch(i, x):
    return lax.switch(i, [lambda y: y + 1, lambda y: jnp.sin(y), lambda y: y @ y], x)


def cost_custom_call(a):
    q, r = jnp.linalg.qr(a)
    return q.sum() + r.sum()


def cost_bf16(a, b):
    return (a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16)).astype(jnp.float32) + 1.0


def cost_int(a, b):
    return (a * b + (a >> 2)) ^ (b & 7), a // (jnp.abs(b) + 1)


def cost_dynamic_slice(x, i):
    y = lax.dynamic_slice(x, (i, 0), (4, x.shape[1]))
    return lax.dynamic_update_slice(x, y * 2, (i + 1, 0))


def cost_attention(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / 8.0
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)


def cost_linalg(a, b):
    l = jnp.linalg.cholesky(a)
    return jax.scipy.linalg.solve_triangular(l, b, lower=True)


def cost_shapes(a):
    b = jnp.concatenate([a, a[::-1]], axis=0)
    c = jnp.pad(b, ((1, 2), (3, 0)))
    return c[2:10:2, 1:].T, jnp.reshape(a, (-1,))[::3]


def cost_random(key):
    return jax.random.normal(key, (64, 32)), jax.random.uniform(key, (128,))


def cost_mlp_grad(w1, w2, x, y):
    def loss(ws):
        h = jax.nn.relu(x @ ws[0])
        return jnp.mean((h @ ws[1] - y) ** 2)
    return jax.grad(loss)((w1, w2))


def _shard_map():
    try:
        return jax.shard_map
    except AttributeError:
        from jax.experimental.shard_map import shard_map
        return shard_map


def main():
    print("jax", jax.__version__, "devices", len(jax.devices()), flush=True)
    record("cost_matmul", cost_matmul, (f32(64, 128), f32(128, 32)))
    record("cost_conv", cost_conv, (f32(2, 16, 16, 3), f32(3, 3, 3, 8)))
    record("cost_conv_strided", cost_conv_strided, (f32(2, 4, 15, 13), f32(6, 4, 3, 2)))
    record("cost_elementwise", cost_elementwise, (f32(96, 80), f32(96, 80)))
    record("cost_transcendentals", cost_transcendentals, (f32(50, 40),))
    record("cost_reduce", cost_reduce, (f32(64, 48),))
    record("cost_reduce_window", cost_reduce_window, (f32(2, 12, 12, 4),))
    record("cost_pool_grad", cost_pool_grad, (f32(2, 8, 8, 3),))
    record("cost_scatter", cost_scatter, (f32(100, 16), rs.randint(0, 100, size=(30,)).astype(np.int32), f32(30, 16)))
    record("cost_gather", cost_gather, (f32(100, 16), rs.randint(0, 100, size=(40,)).astype(np.int32)))
    record("cost_sort", cost_sort, (f32(1000), f32(300)))
    record("cost_fft", cost_fft, (f32(16, 64),))
    record("cost_while", cost_while, (f32(16, 16),))
    record("cost_scan", cost_scan, (f32(32, 32), f32(10, 4, 32), f32(4, 32)))
    record("cost_cond", cost_cond, (np.bool_(True), f32(24, 24)))
    record("cost_switch", cost_switch, (np.int32(1), f32(24, 24)))
    record("cost_custom_call", cost_custom_call, (f32(20, 12),))
    record("cost_bf16", cost_bf16, (f32(64, 64), f32(64, 48)))
    record("cost_int", cost_int, (rs.randint(-50, 50, size=(40, 30)).astype(np.int32),
                                  rs.randint(-50, 50, size=(40, 30)).astype(np.int32)))
    record("cost_dynamic_slice", cost_dynamic_slice, (f32(32, 16), np.int32(3)))
    record("cost_attention", cost_attention, (f32(2, 16, 8), f32(2, 24, 8), f32(2, 24, 8)))
    spd = f32(12, 12)
    record("cost_linalg", cost_linalg, (spd @ spd.T + 12 * np.eye(12, dtype=np.float32), f32(12, 5)))
    record("cost_shapes", cost_shapes, (f32(12, 9),))
    try:
        record("cost_random", cost_random, (jax.random.PRNGKey(0),))
    except Exception as e:  # noqa: BLE001
        fail("cost_random", e)
    record("cost_mlp_grad", cost_mlp_grad, (f32(32, 64), f32(64, 8), f32(16, 32), f32(16, 8)))
    spmd()
    collectives()


def spmd():
    try:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        devs = np.array(jax.devices()[:8])
        if devs.size < 8:
            raise RuntimeError(f"only {devs.size} devices")
        mesh = Mesh(devs.reshape(2, 4), ("data", "model"))
        w = jax.device_put(f32(64, 128), NamedSharding(mesh, P(None, "model")))
        x = jax.device_put(f32(32, 64), NamedSharding(mesh, P("data", None)))

        def cost_spmd_mlp(w, x):
            return jnp.tanh(x @ w).sum()
        record("cost_spmd_mlp", cost_spmd_mlp, (w, x))
    except Exception as e:  # noqa: BLE001
        fail("cost_spmd_mlp", e)


def collectives():
    """shard_map programs over 8 devices with collectives of sizes we know (f32, 4 bytes)."""
    try:
        from jax.sharding import Mesh, PartitionSpec as P
        shard_map = _shard_map()
        mesh = Mesh(np.array(jax.devices()[:8]), ("i",))
    except Exception as e:  # noqa: BLE001
        fail("collectives.setup", e)
        return
    x = f32(8 * 16, 32)  # per device f32[16,32] = 2048 bytes

    def sm(f, out_specs=P("i")):
        kw = {"mesh": mesh, "in_specs": P("i"), "out_specs": out_specs}
        try:
            return shard_map(f, check_vma=False, **kw)
        except TypeError:
            return shard_map(f, check_rep=False, **kw)

    def comm_psum(a):
        return lax.psum(a, "i")
    record("comm_psum", sm(comm_psum), (x,),
           expect=[{"kind": "all-reduce", "group_size": 8, "bytes": 2048}])

    def comm_all_gather(a):
        return lax.all_gather(a, "i", tiled=True)
    record("comm_all_gather", sm(comm_all_gather), (x,),
           expect=[{"kind": "all-gather", "group_size": 8, "bytes": 2048 * 8}])

    def comm_ppermute(a):
        return lax.ppermute(a, "i", [(j, (j + 1) % 8) for j in range(8)])
    record("comm_ppermute", sm(comm_ppermute), (x,),
           expect=[{"kind": "collective-permute", "group_size": 8, "bytes": 2048}])

    def comm_all_to_all(a):
        return lax.all_to_all(a, "i", 0, 0, tiled=True)
    record("comm_all_to_all", sm(comm_all_to_all), (x,),
           expect=[{"kind": "all-to-all", "group_size": 8, "bytes": 2048}])

    def comm_psum_scatter(a):
        return lax.psum_scatter(a, "i", scatter_dimension=0, tiled=True)
    record("comm_psum_scatter", sm(comm_psum_scatter), (x,),
           expect=[{"kind": "reduce-scatter", "group_size": 8, "bytes": 2048}])


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        fail("main", e)
        traceback.print_exc()
    _out.close()
    sys.exit(0)
