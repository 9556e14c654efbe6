# Two compiles for tests/test_see_it.py (issue 51): b has no exp(-x), so a's negate_exponential_fusion
# is gone; then every metadata={...} was deleted from both dumps (sed), so the values match by shape
# only and diff must name the removed one by its name, not an instruction both sides have.
import jax, jax.numpy as jnp, sys, shutil
def fa(x, y):
    a = jnp.exp(-x) * 2.0; b = jnp.where(x > 0, x, y); c = jnp.where(y > 0, b, a); return jnp.sin(c) @ jnp.cos(a).T, jnp.sin(b) @ jnp.cos(c).T
def fb(x, y):
    a = x * 2.0; b = jnp.where(x > 0, x, y); c = jnp.where(y > 0, b, a); return jnp.sin(c) @ jnp.cos(a).T, jnp.sin(b) @ jnp.cos(c).T
x = jnp.ones((256, 256)); 
for n, f in (("a", fa), ("b", fb)):
    shutil.rmtree(n, ignore_errors=True)
    jax.jit(f).lower(x, x).compile(compiler_options={"xla_dump_to": n})
