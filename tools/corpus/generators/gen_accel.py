#!/usr/bin/env python3
"""TPU and GPU dumps made on a CPU-only machine (ahead-of-time compiles), with jax's own figures.

Usage: python gen_accel.py OUT TARGET [PROGRAM...]

TARGET is `tpu:<topology>` (`tpu:v5e:2x4`, `tpu:v4:2x2x1`, `tpu:v5p:2x2x2`, `tpu:v6e:2x4`,
`tpu:TPU7x:2x2x1`; `*N` for N slices: `tpu:v5e:2x2*2`) run with a venv holding `jax[tpu]`
(libtpu), or `gpu:<h100|a100>` run with a venv holding `jax[cuda12]` (the CUDA plugin; the
target configs come from `GPU_TARGETS`, default ../shared/gpu_targets). No accelerator is
needed: jax compiles for a topology description, on `ShapeDtypeStruct`s, nothing is allocated.

Each PROGRAM (default: all) compiles into OUT/<target>/<program>/ (one dump folder, as
`--xla_dump_to` writes it) and appends one JSON line per compile to
OUT/<target>/<program>.compiles.jsonl: the module name, every field of
`Compiled.memory_analysis()` (jax 0.12 has 14 numbers), `Compiled.cost_analysis()`, or, for a
compile that fails (the `oom` program), the error text, which is also written to
OUT/<target>/<program>.error.txt.

Programs: mlp (a sharded matmul), llama (a Llama-style training step: FSDP x TP, remat, scan
over layers, AdamW), collectives (shard_map: psum, all_gather, psum_scatter, ppermute,
all_to_all), pallas (TPU: the flash-attention Pallas kernel; GPU: a Pallas/Triton matmul),
offload (activations offloaded to pinned host memory), oom (a program larger than the device),
passes (per-pass dumps), proto (text and binary protos).
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from functools import partial

os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
if len(sys.argv) > 2 and sys.argv[2].startswith("gpu:"):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_TARGETS = os.environ.get("GPU_TARGETS", os.path.join(HERE, "..", "..", "..", "..", "shared", "gpu_targets"))
GPU_CONFIGS = {"h100": "h100_sxm.txtpb", "a100": "a100_sxm_80.txtpb"}


def devices_for(target: str):
    """The compile-only devices of TARGET."""
    kind, _, rest = target.partition(":")
    if kind == "tpu":
        topo, _, slices = rest.partition("*")
        desc = topologies.get_topology_desc(topo, "tpu", num_slices=int(slices or 1))
        return list(desc.devices)
    if kind == "gpu":
        name, _, shape = rest.partition(":")
        cfg = open(os.path.join(GPU_TARGETS, GPU_CONFIGS[name]), encoding="utf-8").read()
        desc = topologies.get_topology_desc(platform="cuda", topology=shape or "1x1x8", target_config=cfg)
        return list(desc.devices)
    raise SystemExit(f"unknown target {target!r}")


def mesh_of(devs, axes=("data", "model")):
    n = len(devs)
    model = 2 if n % 2 == 0 and n > 1 else 1
    return Mesh(np.array(devs).reshape(n // model, model), axes)


def sds(shape, dtype, mesh, spec):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))


def memory_fields(m) -> dict:
    return {k: getattr(m, k) for k in dir(m) if not k.startswith("_") and isinstance(getattr(m, k), (int, float))}


class Recorder:
    def __init__(self, out: str, program: str):
        self.dump = os.path.join(out, program)
        self.jsonl = os.path.join(out, program + ".compiles.jsonl")
        self.error = os.path.join(out, program + ".error.txt")
        for f in (self.jsonl, self.error):
            if os.path.exists(f):
                os.remove(f)

    def compile(self, fn, *args, options=None, **jit):
        opts = {"xla_dump_to": self.dump, **(options or {})}
        lowered = jax.jit(fn, **jit).lower(*args)
        rec: dict = {}
        try:
            c = lowered.compile(compiler_options=opts)
        except Exception as e:  # a compile that fails (out of memory) is an answer too
            rec["error"] = str(e)
            with open(self.error, "a", encoding="utf-8") as f:
                f.write(str(e) + "\n")
            print("  compile failed:", str(e).splitlines()[0][:160])
        else:
            rec["module_name"] = c.as_text().split("\n", 1)[0].split()[1].rstrip(",")
            rec["memory_analysis"] = memory_fields(c.memory_analysis())
            ca = c.cost_analysis()
            rec["cost_analysis"] = ca[0] if isinstance(ca, list) else ca
        with open(self.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
        return rec


# ---- programs -------------------------------------------------------------------------------

def p_mlp(r: Recorder, devs, target):
    mesh = mesh_of(devs)

    def f(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2
    r.compile(f, sds((1024, 512), jnp.bfloat16, mesh, P("data", None)),
              sds((512, 2048), jnp.bfloat16, mesh, P(None, "model")),
              sds((2048, 512), jnp.bfloat16, mesh, P("model", None)))


def llama_step(cfg):
    d, f, h, vocab, layers = cfg["d"], cfg["ff"], cfg["heads"], cfg["vocab"], cfg["layers"]

    def rms(x, g):
        return x * jax.lax.rsqrt((x.astype(jnp.float32) ** 2).mean(-1, keepdims=True) + 1e-6).astype(x.dtype) * g

    def block(x, p):
        b, s, _ = x.shape
        y = rms(x, p["n1"])
        q = (y @ p["wq"]).reshape(b, s, h, d // h)
        k = (y @ p["wk"]).reshape(b, s, h, d // h)
        v = (y @ p["wv"]).reshape(b, s, h, d // h)
        a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // h)
        mask = jnp.tril(jnp.ones((s, s), bool))
        a = jax.nn.softmax(jnp.where(mask, a, -1e9).astype(jnp.float32), -1).astype(x.dtype)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, s, d)
        x = x + o @ p["wo"]
        y = rms(x, p["n2"])
        return x + (jax.nn.silu(y @ p["w1"]) * (y @ p["w3"])) @ p["w2"]

    def loss(params, tokens):
        x = params["emb"][tokens]

        def body(x, p):
            return jax.checkpoint(block)(x, p), None
        x, _ = jax.lax.scan(body, x, params["layers"])
        logits = (x @ params["emb"].T).astype(jnp.float32)
        return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])

    def step(params, opt, tokens):
        l, g = jax.value_and_grad(loss)(params, tokens)
        m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g.astype(jnp.float32), opt, g)
        params = jax.tree.map(lambda p, m: (p.astype(jnp.float32) - 1e-3 * m).astype(p.dtype), params, m)
        return params, m, l

    def shapes(mesh, dtype=jnp.bfloat16):
        L = layers
        fsdp, tp = "data", "model"
        lay = {"n1": ((L, d), P(None, None)), "n2": ((L, d), P(None, None)),
               "wq": ((L, d, d), P(None, fsdp, tp)), "wk": ((L, d, d), P(None, fsdp, tp)),
               "wv": ((L, d, d), P(None, fsdp, tp)), "wo": ((L, d, d), P(None, tp, fsdp)),
               "w1": ((L, d, f), P(None, fsdp, tp)), "w3": ((L, d, f), P(None, fsdp, tp)),
               "w2": ((L, f, d), P(None, tp, fsdp))}
        params = {"emb": sds((vocab, d), dtype, mesh, P(tp, fsdp)),
                  "layers": {k: sds(s, dtype, mesh, sp) for k, (s, sp) in lay.items()}}
        opt = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, jnp.float32, sharding=s.sharding), params)
        tokens = sds((cfg["batch"], cfg["seq"]), jnp.int32, mesh, P(fsdp, None))
        return params, opt, tokens
    return step, shapes


def p_llama(r: Recorder, devs, target):
    mesh = mesh_of(devs)
    step, shapes = llama_step(dict(d=1024, ff=2816, heads=8, vocab=8192, layers=4, batch=16, seq=512))
    params, opt, tokens = shapes(mesh)
    r.compile(step, params, opt, tokens, donate_argnums=(0, 1))


def p_oom(r: Recorder, devs, target):
    """A training step far larger than the device: the compile fails with an out-of-memory
    error, and (on TPU) still writes its buffer assignment."""
    mesh = mesh_of(devs)
    step, shapes = llama_step(dict(d=8192, ff=28672, heads=64, vocab=32000, layers=8, batch=64, seq=4096))
    params, opt, tokens = shapes(mesh)
    r.compile(step, params, opt, tokens, donate_argnums=(0, 1))


def p_collectives(r: Recorder, devs, target):
    from jax import shard_map
    n = len(devs)
    mesh = Mesh(np.array(devs), ("i",))

    def f(x, y):
        a = jax.lax.psum(x, "i")
        b = jax.lax.all_gather(x, "i", tiled=True)
        c = jax.lax.psum_scatter(y, "i", tiled=True)
        d = jax.lax.ppermute(x, "i", [(k, (k + 1) % n) for k in range(n)])
        e = jax.lax.all_to_all(y, "i", 0, 0, tiled=True)
        return a + d, b, c, e
    g = shard_map(f, mesh=mesh, in_specs=(P("i"), P("i")), out_specs=(P("i"), P("i"), P("i"), P("i")))
    r.compile(g, sds((n * 256, 1024), jnp.float32, mesh, P("i")), sds((n * n * 64, 512), jnp.bfloat16, mesh, P("i")))


def p_pallas(r: Recorder, devs, target):
    if target.startswith("tpu:"):
        from jax.experimental.pallas.ops.tpu import flash_attention as fa
        mesh = Mesh(np.array(devs[:1]), ("x",))
        q = sds((2, 8, 2048, 128), jnp.bfloat16, mesh, P())

        def f(q, k, v):
            return fa.flash_attention(q, k, v, causal=True)
        r.compile(f, q, q, q)
        return
    from jax.experimental import pallas as pl

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    def matmul(x, y):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
                              grid=(x.shape[0] // 64, y.shape[1] // 64),
                              in_specs=[pl.BlockSpec((64, x.shape[1]), lambda i, j: (i, 0)),
                                        pl.BlockSpec((y.shape[0], 64), lambda i, j: (0, j))],
                              out_specs=pl.BlockSpec((64, 64), lambda i, j: (i, j)))(x, y)
    mesh = Mesh(np.array(devs[:1]), ("x",))
    with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
        r.compile(matmul, sds((512, 256), jnp.float16, mesh, P()), sds((256, 512), jnp.float16, mesh, P()))


def p_offload(r: Recorder, devs, target):
    mesh = mesh_of(devs)
    from jax.ad_checkpoint import checkpoint_name
    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["h"],
        offload_src="device", offload_dst="pinned_host")

    def layer(x, w):
        h = checkpoint_name(jnp.tanh(x @ w), "h")
        return jnp.tanh(h @ w.T)

    def loss(x, ws):
        def body(x, w):
            return jax.checkpoint(layer, policy=policy)(x, w), None
        x, _ = jax.lax.scan(body, x, ws)
        return (x.astype(jnp.float32) ** 2).sum()
    r.compile(jax.grad(loss, argnums=1), sds((512, 1024), jnp.bfloat16, mesh, P("data", None)),
              sds((4, 1024, 2048), jnp.bfloat16, mesh, P(None, None, "model")))


def p_passes(r: Recorder, devs, target):
    mesh = mesh_of(devs)

    def f(x, w):
        return jax.nn.relu(x @ w).sum(1)
    r.compile(f, sds((256, 512), jnp.float32, mesh, P("data", None)), sds((512, 256), jnp.float32, mesh, P()),
              options={"xla_dump_hlo_pass_re": "spmd|fusion|layout"})


def p_proto(r: Recorder, devs, target):
    mesh = mesh_of(devs)

    def f(x, w):
        return jax.nn.gelu(x @ w) @ w.T
    r.compile(f, sds((512, 512), jnp.bfloat16, mesh, P("data", None)), sds((512, 1024), jnp.bfloat16, mesh, P(None, "model")),
              options={"xla_dump_hlo_as_proto": True, "xla_dump_hlo_as_text": True})


def p_cublas(r: Recorder, devs, target):
    """GPU: gemms and a convolution as library calls (cuBLAS / cuBLASLt / cuDNN custom calls), not
    Triton fusions (jax 0.12 picks Triton for every gemm of the other programs)."""
    dev = devs[:1]
    mesh = mesh_of(dev)

    def f(x, w, b, img, k):
        y = jnp.einsum("bmk,bkn->bmn", x, w)  # batched gemm
        z = jax.nn.relu(x[0] @ w[0] + b)      # gemm with a bias epilogue (cuBLASLt)
        c = jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y, z, c
    r.compile(f, sds((4, 256, 512), jnp.bfloat16, mesh, P()), sds((4, 512, 128), jnp.bfloat16, mesh, P()),
              sds((128,), jnp.bfloat16, mesh, P()), sds((8, 32, 32, 64), jnp.float32, mesh, P()),
              sds((3, 3, 64, 128), jnp.float32, mesh, P()),
              options={"xla_gpu_enable_triton_gemm": False, "xla_gpu_enable_cublaslt": True})


PROGRAMS = {"mlp": p_mlp, "llama": p_llama, "collectives": p_collectives, "pallas": p_pallas,
            "offload": p_offload, "oom": p_oom, "passes": p_passes, "proto": p_proto,
            "cublas": p_cublas}


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    out, target, *names = argv
    slug = target.replace(":", "_").replace("*", "_x")
    out = os.path.join(out, slug)
    os.makedirs(out, exist_ok=True)
    devs = devices_for(target)
    print(f"{target}: {len(devs)} devices, {devs[0].device_kind}")
    for name in names or PROGRAMS:
        print(name)
        try:
            PROGRAMS[name](Recorder(out, name), devs, target)
        except Exception:
            print("FAILED", name)
            traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
