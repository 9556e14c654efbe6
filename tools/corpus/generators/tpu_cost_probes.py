#!/usr/bin/env python3
"""Probe programs for libtpu's cost analysis: each compiles one construct (a tiled shape, a
gather, a scatter, a loop, a scan, a prefetch, an async collective fusion, ...) for a TPU
topology, so the bytes accessed of ``Compiled.cost_analysis()`` can be compared with ours one
rule at a time (issue 47: how the TPU rules in analysis/cost_handlers.py were found).

Usage (a venv with jax[tpu]): python tpu_cost_probes.py OUT TARGET [PROGRAM...]
e.g. ``tpu_cost_probes.py /tmp/probes tpu:v5e:2x4``; ``NOACF=1`` compiles ``blk_*`` with
``xla_tpu_enable_async_collective_fusion=False``; ``BD``/``BFF``/``BB`` resize ``blk_*``.
The sample in tests/data/accel/tpu_v5e_2x4_probes is this, on tpu:v5e:2x4 (only the
after-optimizations HLO kept).
"""
import os, sys, json, shutil
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1"); os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
sys.path.insert(0, "/work/main/tools/corpus/generators")
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P, Mesh
from gen_accel import devices_for, Recorder
OUT = sys.argv[1]; target = sys.argv[2]; which = sys.argv[3:]
devs = devices_for(target)
mesh1 = Mesh(np.array(devs[:1]).reshape(1), ("x",))
mesh8 = Mesh(np.array(devs), ("x",))
def s1(shape, dt=jnp.float32): return jax.ShapeDtypeStruct(shape, dt, sharding=NamedSharding(mesh1, P()))
def s8(shape, spec, dt=jnp.float32): return jax.ShapeDtypeStruct(shape, dt, sharding=NamedSharding(mesh8, spec))
progs = {}
def prog(f): progs[f.__name__] = f; return f
@prog
def loop(r):
    def f(x, w):
        return lax.fori_loop(0, 4, lambda i, c: jnp.tanh(c @ w), x)
    r.compile(f, s1((256, 512)), s1((512, 512)))
@prog
def scan(r):
    def f(x, ws):
        def body(c, w): return jnp.tanh(c @ w), c.sum()
        return lax.scan(body, x, ws)
    r.compile(f, s1((256, 512)), s1((4, 512, 512)))
@prog
def dus(r):
    def f(buf, u, i): return lax.dynamic_update_slice(buf, u, (i, 0))
    r.compile(f, s1((1024, 512)), s1((8, 512)), s1((), jnp.int32), donate_argnums=0)
@prog
def dslice(r):
    def f(buf, i): return lax.dynamic_slice(buf, (i, 0), (8, 512)) * 2
    r.compile(f, s1((1024, 512)), s1((), jnp.int32))
@prog
def allgather(r):
    def f(x): return jax.lax.with_sharding_constraint(x * 2, NamedSharding(mesh8, P())) + 1
    r.compile(f, s8((1024, 512), P("x", None)))
@prog
def reducescatter(r):
    def f(x, w): return jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh8, P("x", None)))
    r.compile(f, s8((1024, 512), P(None, "x")), s8((512, 256), P("x", None)))
@prog
def transpose(r):
    def f(x): return x.T + 1
    r.compile(f, s1((512, 256)))
@prog
def reduce(r):
    def f(x): return x.sum(axis=1)
    r.compile(f, s1((512, 256)))
@prog
def bf16mm(r):
    def f(x, w): return (x @ w).astype(jnp.float32)
    r.compile(f, s1((256, 512), jnp.bfloat16), s1((512, 512), jnp.bfloat16))
@prog
def gather(r):
    def f(t, i): return t[i]
    r.compile(f, s1((1000, 256)), s1((64,), jnp.int32))
@prog
def softmax(r):
    def f(x): return jax.nn.softmax(x, axis=-1)
    r.compile(f, s1((256, 1000)))

def _loopn(n):
    def run(r):
        def f(x, w):
            return lax.fori_loop(0, n, lambda i, c: jnp.tanh(c @ w), x)
        r.compile(f, s1((256, 512)), s1((512, 512)))
    return run
for _n in (2, 8):
    progs[f"loop{_n}"] = _loopn(_n)
def _scann(n):
    def run(r):
        def f(x, ws):
            def body(c, w): return jnp.tanh(c @ w), None
            return lax.scan(body, x, ws)[0]
        r.compile(f, s1((256, 512)), s1((n, 512, 512)))
    return run
for _n in (2, 8):
    progs[f"scan{_n}"] = _scann(_n)
@prog
def fsdpscan(r):
    def f(x, ws):
        def body(c, w):
            w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh8, P()))
            return jnp.tanh(c @ w), None
        return lax.scan(body, x, ws)[0]
    r.compile(f, s8((256, 512), P("x", None)), s8((4, 512, 512), P(None, "x", None)))
@prog
def gather2(r):
    def f(t, i): return t[i]
    r.compile(f, s1((4000, 256)), s1((64,), jnp.int32))
@prog
def gather3(r):
    def f(t, i): return t[i]
    r.compile(f, s1((1000, 256)), s1((128,), jnp.int32))
@prog
def gather4(r):
    def f(t, i): return t[i]
    r.compile(f, s1((1000, 512)), s1((64,), jnp.int32))

@prog
def gradscan(r):
    def loss(ws, x):
        def body(c, w): return jnp.tanh(c @ w), None
        return lax.scan(body, x, ws)[0].sum()
    r.compile(jax.grad(loss), s1((4, 512, 512)), s1((256, 512)))
@prog
def gradscanremat(r):
    def loss(ws, x):
        def body(c, w): return jax.checkpoint(lambda c, w: jnp.tanh(c @ w))(c, w), None
        return lax.scan(body, x, ws)[0].sum()
    r.compile(jax.grad(loss), s1((4, 512, 512), jnp.bfloat16), s1((256, 512), jnp.bfloat16))
@prog
def rmsnorm(r):
    def f(x, g): return (x * lax.rsqrt((x.astype(jnp.float32) ** 2).mean(-1, keepdims=True) + 1e-6)).astype(jnp.bfloat16) * g
    r.compile(f, s1((2048, 1024), jnp.bfloat16), s1((1024,), jnp.bfloat16))
@prog
def xent(r):
    def f(logits, t):
        lp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
        return -jnp.take_along_axis(lp, t[:, None], -1).mean()
    r.compile(jax.grad(f), s1((2048, 8192), jnp.bfloat16), s1((2048,), jnp.int32))
@prog
def adamw(r):
    def f(p, m, v, g):
        m = 0.9 * m + 0.1 * g; v = 0.99 * v + 0.01 * g * g
        return p - 1e-3 * (m / (jnp.sqrt(v) + 1e-8) + 0.01 * p), m, v
    x = s8((1024, 2048), P("x", None))
    r.compile(f, x, x, x, x, donate_argnums=(0, 1, 2))
@prog
def attn(r):
    def f(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
        mask = jnp.tril(jnp.ones((512, 512), bool))
        s = jnp.where(mask, s, -1e9)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s.astype(jnp.float32), -1).astype(q.dtype), v)
    q = s1((2, 8, 512, 128), jnp.bfloat16)
    r.compile(f, q, q, q)

@prog
def gatherbf(r):
    def f(t, i): return t[i]
    r.compile(f, s1((1000, 256), jnp.bfloat16), s1((8, 64), jnp.int32))
@prog
def gather100(r):
    def f(t, i): return t[i]
    r.compile(f, s1((1000, 100)), s1((64,), jnp.int32))
@prog
def scatteradd(r):
    def f(t, i, u): return t.at[i].add(u)
    r.compile(f, s1((1000, 256), jnp.bfloat16), s1((8, 64), jnp.int32), s1((8, 64, 256), jnp.bfloat16))
@prog
def scatteraddf(r):
    def f(t, i, u): return t.at[i].add(u)
    r.compile(f, s1((1000, 256)), s1((64,), jnp.int32), s1((64, 256)))

@prog
def psum8(r):
    def f(x, w): return x @ w
    r.compile(f, s8((256, 1024), P(None, "x")), s8((1024, 512), P("x", None)))
@prog
def fsdpgrad(r):
    def loss(w, x):
        return jnp.tanh(x @ w).sum()
    r.compile(jax.grad(loss), s8((1024, 512), P("x", None)), s8((256, 1024), P("x", None)))

from gen_accel import llama_step, mesh_of
def _llama(mode):
    def run(r):
        mesh = mesh_of(devs)
        step, shapes = llama_step(dict(d=512, ff=1024, heads=4, vocab=2048, layers=2, batch=8, seq=256))
        params, opt, tokens = shapes(mesh)
        import gen_accel
        if mode == "step":
            r.compile(step, params, opt, tokens, donate_argnums=(0, 1)); return
        # rebuild loss: llama_step's closure; get it via step's free vars
        loss = step.__closure__[0].cell_contents if step.__code__.co_freevars[0] == "loss" else None
        if mode == "fwd":
            r.compile(loss, params, tokens)
        else:
            r.compile(jax.grad(loss), params, tokens)
    return run
for _m in ("step", "fwd", "grad"):
    progs["llama_" + _m] = _llama(_m)

@prog
def psumscan(r):
    def f(x, ws):
        def body(c, w): return jnp.tanh(c @ w), None
        return lax.scan(body, x, ws)[0]
    r.compile(f, s8((256, 1024), P(None, "x")), s8((4, 1024, 1024), P(None, "x", None)))

def _blk(kind):
    def run(r):
        mesh = mesh_of(devs)
        d, ff, L = int(os.environ.get("BD", 512)), int(os.environ.get("BFF", 1024)), 2
        nb = int(os.environ.get("BB", 8))
        def mlp(x, p):
            return x + (jax.nn.silu(x @ p["w1"]) * (x @ p["w3"])) @ p["w2"]
        def att(x, p):
            b, s_, _ = x.shape
            q = (x @ p["wq"]).reshape(b, s_, 4, d // 4); k = (x @ p["wk"]).reshape(b, s_, 4, d // 4)
            a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32), -1).astype(x.dtype)
            return x + jnp.einsum("bhqk,bkhd->bqhd", a, q).reshape(b, s_, d) @ p["wo"]
        def plain(x, p):
            return x + jnp.tanh(x @ p["w1"]) @ p["w2"]
        blk = {"mlp": mlp, "att": att, "plain": plain}[kind]
        def loss(params, x):
            y, _ = lax.scan(lambda c, p: (blk(c, p), None), x, params)
            return y.astype(jnp.float32).sum()
        fs, tp = "data", "model"
        def sp(shape, spec): return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, spec))
        params = {"w1": sp((L, d, ff), P(None, fs, tp)), "w3": sp((L, d, ff), P(None, fs, tp)), "w2": sp((L, ff, d), P(None, tp, fs)),
                  "wq": sp((L, d, d), P(None, fs, tp)), "wk": sp((L, d, d), P(None, fs, tp)), "wo": sp((L, d, d), P(None, tp, fs))}
        r.compile(loss, params, sp((nb, 256, d), P(fs, None, None)), options=OPTS)
    return run
OPTS = {}
if os.environ.get("NOACF"):
    OPTS = {"xla_tpu_enable_async_collective_fusion": False}
for _k in ("mlp", "att", "plain"):
    progs["blk_" + _k] = _blk(_k)
for name in which or progs:
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    progs[name](Recorder(OUT, name))
    print(name, "ok")
