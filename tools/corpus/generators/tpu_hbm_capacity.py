"""The largest argument (bytes) a one-instruction program may take on one device of TARGET before
the compile fails with CompileTimeHbmOom: the HBM libtpu lets a program use (less the program's
few bytes), to 4 KiB. The source of hlodump.analysis.capacity.TPU_HBM.

    TPU_SKIP_MDS_QUERY=1 ALLOW_MULTIPLE_LIBTPU_LOAD=1 /work/venvs/tpu/bin/python \
        tools/corpus/generators/tpu_hbm_capacity.py tpu:v5e:2x4

(libtpu 0.0.50.1: v5e 16909291520, v4 16372948992, v6e 33545986048, v5p 102786596864, TPU7x
101724389376; each in 1-2 s of compiles.) Just over the limit libtpu prints the detailed report
('Used 15.75G of 15.75G hbm. Exceeded hbm capacity by 3.0K.'), far over it the one-line E1000."""
import sys, time
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P
import gen_accel as G

target = sys.argv[1]
devs = G.devices_for(target)[:1]
mesh = G.mesh_of(devs)
def fits(nbytes):
    n = nbytes // 4
    x = G.sds((n,), jnp.float32, mesh, P())
    try:
        jax.jit(lambda x: x[0] + 1).lower(x).compile()
        return True, ""
    except Exception as e:
        return False, str(e).splitlines()[0]
lo, hi = 1 << 30, 200 << 30   # lo fits, hi fails
t = time.time()
ok, _ = fits(lo); assert ok
ok, msg = fits(hi); assert not ok, "200G fits?"
print("hi msg:", msg, flush=True)
while hi - lo > 4096:
    mid = (lo + hi) // 2 // 4096 * 4096
    ok, m = fits(mid)
    if ok: lo = mid
    else: hi, msg = mid, m
print(f"{target}: fits {lo} ({lo/2**30:.4f} GiB), fails {hi}: {msg}  [{time.time()-t:.0f}s]", flush=True)
print("device_kind:", devs[0].device_kind)
