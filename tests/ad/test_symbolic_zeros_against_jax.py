"""``symbolic_zeros=True`` against JAX, where JAX is installed: the same programs give the custom rules the same
view (SymbolicZero where JAX gives one, CustomVJPPrimal.perturbed as JAX sets it) and the same values. The
values themselves are checked against hand-derived ones in test_symbolic_zeros.py.
In one process, kiln imported first (it leaves the process-wide jit states to JAX when JAX comes first)."""
import numpy as np
import pytest
from kiln.frontend.ad import symbolic_zeros as kiln_sz

import kiln  # noqa: I001  (before jax)
import kiln.numpy as knp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_cd = pytest.importorskip("jax.custom_derivatives")

X, Y = np.float32(0.7), np.float32(1.3)
XS, YS = np.float32([0.1, 0.5, 0.9]), np.float32([1.1, 1.2, 1.3])


def _libs():
    return [(kiln, knp, kiln_sz), (jax, jnp, jax_cd)]


def _kind(t, sz) -> str:
    if type(t) is sz.SymbolicZero:
        return f"Z{tuple(t.shape)}"
    if type(t) is sz.CustomVJPPrimal:
        return f"P{t.perturbed}"
    return "A"


def _functions(lib, np_, sz, log):
    """A custom_jvp and a custom_vjp function of two outputs with symbolic-zeros rules that log what they see."""
    @lib.custom_jvp
    def f(x, y, n):
        return np_.sin(x) * y + n, np_.cos(y)

    def f_jvp(p, t):
        x, y, n = p
        log.append(("jvp",) + tuple(_kind(v, sz) for v in t))
        out = f(x, y, n)
        t0 = np_.zeros_like(out[0])
        if type(t[0]) is not sz.SymbolicZero:
            t0 = t0 + np_.cos(x) * y * t[0]
        if type(t[1]) is not sz.SymbolicZero:
            t0 = t0 + np_.sin(x) * t[1]
        t1 = sz.SymbolicZero.from_primal_value(out[1]) if type(t[1]) is sz.SymbolicZero else -np_.sin(y) * t[1]
        return out, (t0, t1)

    f.defjvp(f_jvp, symbolic_zeros=True)

    @lib.custom_vjp
    def g(x, y, n):
        return np_.sin(x) * y + n, np_.cos(y)

    def g_fwd(x, y, n):
        log.append(("fwd", _kind(x, sz), _kind(y, sz), _kind(n, sz)))
        x, y, n = sz.custom_vjp_primal_tree_values((x, y, n))
        return g(x, y, n), (x, y)

    def g_bwd(res, ct):
        x, y = res
        log.append(("bwd", _kind(ct[0], sz), _kind(ct[1], sz)))
        gx, gy = np_.zeros_like(x), np_.zeros_like(y)
        if type(ct[0]) is not sz.SymbolicZero:
            gx, gy = gx + np_.cos(x) * y * ct[0], gy + np_.sin(x) * ct[0]
        if type(ct[1]) is not sz.SymbolicZero:
            gy = gy - np_.sin(y) * ct[1]
        return gx, gy, None

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
    return f, g


CASES = {
    "grad_x": lambda lib, h: lib.grad(lambda x, y: h(x, y, 2)[0])(X, Y),
    "grad_y_second": lambda lib, h: lib.grad(lambda x, y: h(x, y, 2)[1], 1)(X, Y),
    "grad_both": lambda lib, h: lib.grad(lambda x, y: h(x, y, 2)[0] + h(x, y, 2)[1], (0, 1))(X, Y),
    "jit_grad": lambda lib, h: lib.jit(lib.grad(lambda x, y: h(x, y, 2)[0]))(X, Y),
    "grad_jit": lambda lib, h: lib.grad(lib.jit(lambda x, y: h(x, y, 2)[0]))(X, Y),
    "vjp": lambda lib, h: lib.vjp(lambda x, y: h(x, y, 2), X, Y)[1]((np.float32(1.0), np.float32(0.0))),
    "vmap_grad": lambda lib, h: lib.vmap(lib.grad(lambda x, y: h(x, y, 2)[0]))(XS, YS),
    "grad_vmap": lambda lib, h: lib.grad(lambda xs: lib.vmap(h, (0, None, None))(xs, Y, 2)[0].sum())(XS),
    "grad_vmap_y": lambda lib, h: lib.grad(lambda ys: lib.vmap(h, (None, 0, None))(X, ys, 2)[1].sum())(YS),
    "grad_vmap_vmap": lambda lib, h: lib.grad(lambda a: lib.vmap(lib.vmap(h, (0, None, None)), (0, None, None))(
        a, Y, 2)[0].sum())(np.ones((2, 3), np.float32)),
    "jacrev": lambda lib, h: lib.jacrev(lambda x: h(x, YS, 2)[0])(XS),
    "scan": lambda lib, h: lib.grad(lambda x: lib.lax.scan(lambda c, _: (h(c, Y, 2)[0] * 0.5, None), x, None,
                                                           length=3)[0])(X),
    "jvp": lambda lib, h: lib.jvp(lambda x: h(x, Y, 2), (X,), (np.float32(1.0),)),
    "grad_grad": lambda lib, h: lib.grad(lib.grad(lambda x, y: h(x, y, 2)[0]))(X, Y),
    "fori_jvp": lambda lib, h: lib.jvp(lambda x: lib.lax.fori_loop(0, 2, lambda i, c: h(c, Y, 2)[0] * 0.1, x),
                                       (X,), (np.float32(1.0),)),
}
FORWARD_ONLY = {"jvp", "grad_grad", "fori_jvp"}  # JAX has no forward mode of custom_vjp (and kiln neither)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("case", list(CASES))
def test_rules_see_what_jax_rules_see(kind, case):
    if kind == "custom_vjp" and case in FORWARD_ONLY:
        pytest.skip("forward mode of a custom_vjp function")
    results = []
    for lib, np_, sz in _libs():
        log = []
        f, g = _functions(lib, np_, sz, log)
        out = CASES[case](lib, f if kind == "custom_jvp" else g)
        results.append(([np.asarray(v, np.float64) for v in lib.tree_util.tree_leaves(out)], log))
    (k_vals, k_log), (j_vals, j_log) = results
    assert k_log == j_log
    assert len(k_vals) == len(j_vals)
    for a, b in zip(k_vals, j_vals):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


def test_symbolic_zero_objects_like_jax():
    for _lib, np_, sz in _libs():
        z = sz.SymbolicZero.from_primal_value(np_.ones((2, 3), np.float32))
        assert repr(z) == "SymbolicZero" and (z.shape, z.dtype, z.ndim, z.size) == ((2, 3), np.float32, 2, 6)
        assert str(sz.SymbolicZero.from_primal_value(np.int32(1)).dtype) == str(jax.dtypes.float0)
        zeros = sz.zero_from_primal({"a": np.float32(1.0), "b": np.int32(2)})
        assert float(zeros["a"]) == 0.0 and zeros["b"].dtype == jax.dtypes.float0
        assert [type(v).__name__ for v in sz.zero_from_primal([1.0, 2], symbolic_zeros=True)] == ["SymbolicZero"] * 2
        assert sz.custom_vjp_primal_tree_values([sz.CustomVJPPrimal(1.0, False)]) == [1.0]
        with pytest.raises(TypeError):
            sz.custom_vjp_primal_tree_values([1.0])
        with pytest.raises(TypeError):
            np_.sin(z)


def test_mismatching_symbolic_zeros_raise_as_in_jax():
    for lib, np_, sz in _libs():
        f = lib.custom_jvp(lambda x: np_.sin(x))
        f.defjvp(lambda p, t: (np_.sin(p[0]), sz.SymbolicZero.from_primal_value(np.ones(2, np.float32))),
                 symbolic_zeros=True)
        with pytest.raises(TypeError):
            lib.grad(f)(X)
        g = lib.custom_vjp(lambda x, y: x * y)
        g.defvjp(lambda x, y: (x.value * y.value, (x.value, y.value)),
                 lambda r, c: (c * r[1], sz.SymbolicZero.from_primal_value(np.ones(3, np.float32))),
                 symbolic_zeros=True)
        with pytest.raises(ValueError):
            lib.grad(g, (0, 1))(X, Y)
        with pytest.raises(NotImplementedError):
            g.defvjp(lambda x: (x, None), lambda r, c: (c,), symbolic_zeros=True, optimize_remat=True)
