"""Derivatives taken inside a loop, branch, jit, vmap or checkpoint within a shard_map body, under kiln and under JAX
0.10.2 (the against_jax session): the same program with the imports changed, on 8 CPU devices, each library in its
own interpreter (tests/examples/same_as_jax.py). JAX types every trace inside a body, so a replicated parameter's
gradient taken there is summed over the devices; kiln's traces opened in a body know their inputs' varying axes
(core/varying.py nested_hints) and give the same numbers. The NumPy oracles are in
tests/multidevice/test_varying_transpose.py.

Where JAX refuses a program (a loop carry that starts replicated and becomes varying, without a pcast) kiln traces the
loop again with the wider axes and runs it: compared only where both run."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from same_as_jax import run_on_eight_cpu_devices  # noqa: E402

SCRIPT = """
import json
import numpy as np
lib, npz, out = {lib!r}, {npz!r}, {out!r}
jax = __import__(lib)
if lib == "jax":
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import NamedSharding, PartitionSpec as P
else:
    import kiln.numpy as jnp
    from kiln import lax
    from kiln.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((4, 2), ("data", "model"))
rng = np.random.default_rng(0)
w = rng.normal(size=3).astype(np.float32)
x = jax.device_put(rng.normal(size=(8, 3)).astype(np.float32), NamedSharding(mesh, P("data")))

def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w))

BODIES = {{
    "scan": lambda w, x: lax.scan(lambda a, mb: (a + jax.grad(loss)(w, mb[None]), None), jnp.zeros_like(w), x)[0],
    "jit": lambda w, x: jax.jit(jax.grad(loss))(w, x),
    "cond": lambda w, x: lax.cond(True, lambda w, x: jax.grad(loss)(w, x), lambda w, x: w, w, x),
    "fori_loop": lambda w, x: lax.fori_loop(0, 2, lambda i, a: a + jax.grad(loss)(w, x), jnp.zeros_like(w)),
    "while_loop": lambda w, x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + jax.grad(loss)(w, x)),
                                              (0, jnp.zeros_like(w)))[1],
    "vmap": lambda w, x: jax.vmap(jax.grad(loss), in_axes=(None, 0))(w, x[:, None]).sum(0),
    "checkpoint": lambda w, x: jax.checkpoint(jax.grad(loss))(w, x),
    "grad of grad": lambda w, x: jax.grad(lambda w: jnp.sum(jax.grad(loss)(w, x)))(w),
    "grad of a scan": lambda w, x: jax.grad(lambda w: lax.scan(lambda c, mb: (c + loss(w, mb[None]), None),
                                                               jnp.zeros((), w.dtype), x)[0])(w),
}}
arrays, errors = {{}}, {{}}
for name, body in BODIES.items():
    for check in (True, False):
        tag = f"{{name}}/{{'vma' if check else 'novma'}}"
        f = jax.shard_map(body if check else (lambda b: lambda w, x: b(w, x)[None])(body), mesh=mesh,
                          in_specs=(P(), P("data")), out_specs=P() if check else P("data"), check_vma=check)
        try:
            arrays[tag] = np.asarray(jax.jit(f)(w, x))
        except Exception as e:
            errors[tag] = type(e).__name__
np.savez(npz, **arrays)
open(out, "w").write(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory, run_py):
    return run_on_eight_cpu_devices(run_py, tmp_path_factory.mktemp("nested_derivatives"), SCRIPT)


def test_same_programs_ran(both):
    (k, k_errors), (j, j_errors) = both["kiln"], both["jax"]
    # JAX 0.10.2 refuses the grad of a scan whose carry starts replicated and adds a varying value (it asks for a
    # pcast); kiln runs it
    assert j_errors == {"grad of a scan/vma": "TypeError"} and k_errors == {}
    assert sorted(k) == sorted([*j, "grad of a scan/vma"]) and len(j) == 17


def test_same_values(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    for name in sorted(j):
        assert k[name].shape == j[name].shape and k[name].dtype == j[name].dtype, name
        np.testing.assert_allclose(k[name], j[name], rtol=2e-5, atol=1e-5, err_msg=name)
    # the typed (summed) and the devices' own gradients differ: the comparison tells them apart
    assert not np.allclose(j["scan/vma"], j["scan/novma"][0])
