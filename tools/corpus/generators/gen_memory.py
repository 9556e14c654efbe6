"""Memory analysis of compiled programs, next to the XLA dumps of the same modules.

Defines jitted programs with unique function names (so each HLO module is named
jit_<name> once per process), compiles each with jax.jit(f, donate_argnums=...).lower(...).compile(),
and writes one JSON line per program to $OUT/memory_analysis.jsonl with the program
name, the HLO module name (first line of compiled.as_text()) and every public numeric
attribute of compiled.memory_analysis(). Each step is in try/except: a failing step
prints `FAILED <step>: <error>` and the program goes on, so it runs on jax 0.4.13..0.10.2.

Usage:
  XLA_FLAGS="--xla_dump_to=DIR --xla_force_host_platform_device_count=8" JAX_PLATFORMS=cpu \
  OUT=DIR python gen_memory.py
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

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

OUT = os.environ.get("OUT", ".")
os.makedirs(OUT, exist_ok=True)
JSONL = os.path.join(OUT, "memory_analysis.jsonl")
_out = open(JSONL, "w")


def fail(step, e):
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    print(f"FAILED {step}: {type(e).__name__}: {msg}", flush=True)


def numeric_attrs(m):
    rec = {}
    names = [n for n in dir(m) if not n.startswith("_")]
    for n in names:
        try:
            v = getattr(m, n)
        except Exception as e:  # noqa: BLE001
            rec[n] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if callable(v):
            continue
        if isinstance(v, bool):
            rec[n] = v
        elif isinstance(v, (int, float)):
            rec[n] = v
        elif isinstance(v, (np.integer, np.floating)):
            rec[n] = v.item()
    return rec


def module_name_of(text):
    for line in text.splitlines():
        m = re.match(r"\s*HloModule\s+([^\s,]+)", line)
        if m:
            return m.group(1)
        if line.strip():
            break
    return None


def record(name, f, args, donate=(), jit_kwargs=None, call=True):
    rec = {"program": name, "jax": jax.__version__}
    jit_kwargs = dict(jit_kwargs or {})
    if donate:
        jit_kwargs["donate_argnums"] = donate
        rec["donate_argnums"] = list(donate)
    c = None
    try:
        jf = jax.jit(f, **jit_kwargs)
        c = jf.lower(*args).compile()
    except Exception as e:  # noqa: BLE001
        fail(f"{name}.compile", e)
        rec["compile_error"] = f"{type(e).__name__}: {e}"[:500]
    if c is not None:
        try:
            text = c.as_text()
            if isinstance(text, (list, tuple)):
                text = text[0]
            rec["module_name"] = module_name_of(text)
        except Exception as e:  # noqa: BLE001
            fail(f"{name}.as_text", e)
            rec["as_text_error"] = f"{type(e).__name__}: {e}"[:500]
        try:
            m = c.memory_analysis()
            if isinstance(m, (list, tuple)):
                rec["memory_analysis_was_list"] = len(m)
                m = m[0] if m else None
            if m is None:
                rec["memory_analysis"] = None
            else:
                rec["memory_analysis_type"] = type(m).__name__
                rec.update(numeric_attrs(m))
        except Exception as e:  # noqa: BLE001
            fail(f"{name}.memory_analysis", e)
            rec["memory_analysis_error"] = f"{type(e).__name__}: {e}"[:500]
        if call:
            try:
                out = c(*args)
                jax.block_until_ready(out)
                rec["called"] = True
            except Exception as e:  # noqa: BLE001
                fail(f"{name}.call", e)
                rec["call_error"] = f"{type(e).__name__}: {e}"[:500]
    _out.write(json.dumps(rec, sort_keys=True) + "\n")
    _out.flush()
    print("ok" if c is not None else "FAILED", name, rec.get("module_name"), flush=True)


def fresh(a):
    """A new device array (donated arguments are consumed)."""
    return jax.device_put(np.asarray(a))


rs = np.random.RandomState(0)
N = 32


def mem_donated_update(w, g):
    return w - 0.1 * g, jnp.sum(g * g)


def mem_scan_rnn(wx, xs, h0):
    def step(h, x):
        h = jnp.tanh(x @ wx + h)
        return h, jnp.sum(h)
    return lax.scan(step, h0, xs)


def mem_while_newton(x):
    def cond(s):
        i, y, err = s
        return jnp.logical_and(i < 50, err > 1e-6)

    def body(s):
        i, y, _ = s
        y2 = 0.5 * (y + x / y)
        return i + 1, y2, jnp.max(jnp.abs(y2 - y))
    return lax.while_loop(cond, body, (0, jnp.ones_like(x), jnp.asarray(1.0, x.dtype)))


def mem_cond_switch(x, idx, flag):
    y = lax.cond(flag, lambda t: jnp.sin(t) * 2.0, lambda t: jnp.cos(t) - 1.0, x)
    z = lax.switch(idx, [lambda t: t + 1.0, lambda t: t * t, lambda t: jnp.exp(-t)], y)
    return y, z


def mem_sort_argsort(x, k):
    return jnp.sort(x), jnp.argsort(x), lax.sort_key_val(x, k)


def mem_gather_scatter(x, idx, upd):
    g = x[idx]
    s = x.at[idx].add(upd)
    return g, s


def mem_linalg(a, spd, rhs):
    outs = [jnp.linalg.solve(a, rhs), jnp.linalg.cholesky(spd)]
    outs.extend(jnp.linalg.qr(a))
    outs.append(jnp.linalg.svd(a, compute_uv=False))
    return tuple(outs)


def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jax.nn.relu(x @ w1 + b1)
    return jnp.mean((h @ w2 + b2 - y) ** 2)


def mem_mlp_grad(params, x, y):
    return jax.value_and_grad(_mlp_loss)(params, x, y)


def mem_conv(img, ker):
    y = lax.conv_general_dilated(img, ker, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y).sum(axis=(1, 2))


def mem_reductions(x):
    return (jnp.sum(x), jnp.max(x, axis=0), jnp.mean(x, axis=1), jnp.argmax(x, axis=1),
            jax.nn.logsumexp(x, axis=-1), jnp.cumsum(x, axis=0))


def mem_tuple_outputs(a, b):
    return {"sum": a + b, "prod": a * b, "pair": (a - b, (jnp.dot(a, b), a.T))}


def mem_identity_alias(x):
    return x


def mem_alias_passthrough(x, y):
    return x, y * 2.0


def mem_spmd_mlp(w1, w2, x):
    h = jnp.tanh(x @ w1)
    return jnp.sum((h @ w2) ** 2)


def main():
    print("jax", jax.__version__, "devices", len(jax.devices()), flush=True)
    a = rs.randn(N, N).astype(np.float32)
    record("mem_donated_update", mem_donated_update, (fresh(a), fresh(a * 0.5)), donate=(0,))
    record("mem_scan_rnn", mem_scan_rnn,
           (fresh(a * 0.1), fresh(rs.randn(10, 4, N).astype(np.float32)), fresh(np.zeros((4, N), np.float32))))
    record("mem_while_newton", mem_while_newton, (fresh(np.abs(a[0]) + 0.5),))
    record("mem_cond_switch", mem_cond_switch, (fresh(a[0]), np.int32(1), np.bool_(True)))
    record("mem_sort_argsort", mem_sort_argsort, (fresh(rs.randn(1000).astype(np.float32)),
                                                 fresh(np.arange(1000, dtype=np.int32))))
    record("mem_gather_scatter", mem_gather_scatter,
           (fresh(a), fresh(rs.randint(0, N, size=(64,)).astype(np.int32)), fresh(rs.randn(64, N).astype(np.float32))))
    spd = a @ a.T + N * np.eye(N, dtype=np.float32)
    record("mem_linalg", mem_linalg, (fresh(a), fresh(spd), fresh(rs.randn(N, 3).astype(np.float32))))
    params = ((fresh(rs.randn(N, 64).astype(np.float32) * 0.1), fresh(np.zeros(64, np.float32))),
              (fresh(rs.randn(64, 8).astype(np.float32) * 0.1), fresh(np.zeros(8, np.float32))))
    record("mem_mlp_grad", mem_mlp_grad, (params, fresh(rs.randn(16, N).astype(np.float32)),
                                          fresh(rs.randn(16, 8).astype(np.float32))))
    record("mem_conv", mem_conv, (fresh(rs.randn(2, 16, 16, 3).astype(np.float32)),
                                  fresh(rs.randn(3, 3, 3, 8).astype(np.float32))))
    record("mem_reductions", mem_reductions, (fresh(rs.randn(64, 48).astype(np.float32)),))
    record("mem_tuple_outputs", mem_tuple_outputs, (fresh(a), fresh(a.T.copy())))
    record("mem_identity_alias", mem_identity_alias, (fresh(a),), donate=(0,))
    record("mem_alias_passthrough", mem_alias_passthrough, (fresh(a), fresh(a)), donate=(0, 1))

    # SPMD over 8 host devices.
    try:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    except Exception as e:  # noqa: BLE001
        fail("mem_spmd_mlp.import", e)
        return
    try:
        devs = np.array(jax.devices()[:8])
        if devs.size < 8:
            raise RuntimeError(f"only {devs.size} devices")
        mesh = Mesh(devs.reshape(2, 4), ("data", "model"))
        s_w1 = NamedSharding(mesh, P(None, "model"))
        s_w2 = NamedSharding(mesh, P("model", None))
        s_x = NamedSharding(mesh, P("data", None))
        w1 = jax.device_put(rs.randn(N, 64).astype(np.float32) * 0.1, s_w1)
        w2 = jax.device_put(rs.randn(64, N).astype(np.float32) * 0.1, s_w2)
        x = jax.device_put(rs.randn(16, N).astype(np.float32), s_x)
    except Exception as e:  # noqa: BLE001
        fail("mem_spmd_mlp.setup", e)
        return
    record("mem_spmd_mlp", mem_spmd_mlp, (w1, w2, x),
           jit_kwargs=dict(in_shardings=(s_w1, s_w2, s_x), out_shardings=NamedSharding(mesh, P())))

    def mem_spmd_grad_donated(w1, w2, x):
        g1, g2 = jax.grad(mem_spmd_mlp, argnums=(0, 1))(w1, w2, x)
        return w1 - 0.1 * g1, w2 - 0.1 * g2
    record("mem_spmd_grad_donated", mem_spmd_grad_donated,
           (jax.device_put(np.asarray(w1), s_w1), jax.device_put(np.asarray(w2), s_w2), x), donate=(0, 1),
           jit_kwargs=dict(in_shardings=(s_w1, s_w2, s_x), out_shardings=(s_w1, s_w2)))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        fail("main", e)
        traceback.print_exc()
    _out.close()
