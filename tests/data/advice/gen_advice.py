"""The programs behind tests/test_see_it.py's advice tests (issue 51): each has one cause that
``hlodump.analysis.advice`` names, compiled with and without its fix, and jax's own figures
(``memory_analysis.json``: Compiled.memory_analysis() of every compile) as the oracle.

    python3 tests/data/advice/gen_advice.py tests/data/advice     # jax 0.10.2, CPU

Each compile dumps to its own folder (compiler_options={"xla_dump_to": …}); LLVM IR, object
files, MLIR and the before-optimizations text are deleted (nothing the tests read).
"""
import glob
import json
import os
import shutil
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

out = sys.argv[1]
res = {}


def dump(name, f, *args, donate=(), **kw):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    c = jax.jit(f, donate_argnums=donate, **kw).lower(*args).compile(compiler_options={"xla_dump_to": d})
    ma = c.memory_analysis()
    res[name] = {k: int(getattr(ma, k)) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                                 "alias_size_in_bytes", "temp_size_in_bytes",
                                                 "peak_memory_in_bytes")}
    for p in glob.glob(os.path.join(d, "*")):
        if p.endswith((".ll", ".o", ".mlir", ".before_optimizations.txt")) or "-memory-usage-report" in p:
            os.remove(p)


# donation: an update step whose first output has the first argument's shape
def step(w, g, lr):
    return w - lr * g, jnp.sum(g)


w = jnp.ones((256, 1024), jnp.float32)
dump("donate_no", step, w, w, 0.1)
dump("donate_yes", step, w, w, 0.1, donate=(0,))


# remat: activations of a deep, narrow MLP kept from the forward pass for the backward pass
def mlp(ws, x):
    for W in ws:
        x = jnp.tanh(x @ W)
    return jnp.sum(x * x)


def mlp_checkpointed(ws, x):
    for W in ws:
        x = jax.checkpoint(lambda x, W: jnp.tanh(x @ W))(x, W)
    return jnp.sum(x * x)


ws = [jnp.full((128, 128), 0.01, jnp.float32) for _ in range(6)]
x = jnp.ones((2048, 128), jnp.float32)
dump("remat_no", jax.grad(mlp), ws, x)



# layout: a transposed argument returned and used: XLA copies it into the layout asked for
def lay(a, b):
    t = a.T
    return jnp.sin(t) @ b, t


dump("layout", lay, jnp.ones((512, 256), jnp.float32), jnp.ones((512, 128), jnp.float32))

# collective: a weight all-gathered first and used last, a large temporary in between
mesh = Mesh(jax.devices()[:8], ("d",))


def gather_early(w, x):
    wg = jax.lax.all_gather(w, "d", tiled=True)  # (512, 256), gathered before the big temporary
    # (1024, 1024): a buffer at the peak; the barrier keeps the gathered weight's use after it
    h, wg = jax.lax.optimization_barrier((jnp.tanh(x @ x.T), wg))
    s = jnp.sum(jnp.sin(h))
    return s + jnp.sum(jnp.tanh(x[:, :256]) @ wg.T)


f = jax.shard_map(gather_early, mesh=mesh, in_specs=(P("d"), P()), out_specs=P(), check_vma=False)
dump("collective", f, jnp.ones((512, 256), jnp.float32), jnp.ones((1024, 256), jnp.float32))

with open(os.path.join(out, "memory_analysis.json"), "w") as f:
    json.dump({"jax": jax.__version__, "compiles": res}, f, indent=1, sort_keys=True)
    f.write("\n")
