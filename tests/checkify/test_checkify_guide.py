"""The code blocks of JAX's checkify guide (docs/debugging/checkify_guide.md, jax-v0.10.2), ported with ``import
kiln as jax``: each block is written once over a namespace ``M`` (kiln here; jax in the optional comparison at the
end) and returns what it prints; ``EXPECTED`` holds what JAX 0.10.2 prints (found by running it: constants, so that
the test needs no jax). The guide's comments are older than JAX 0.10.2: its messages there end in `` (`check`
failed)`` without a location, and ``checked_f(x, 100)`` with a Python int raises a TypeError (the checkified function
closes over its arguments, so ``i`` stays a Python int, which ``check`` refuses as a format argument).

Left out: the ``pmap`` and ``pjit`` blocks (several devices).
"""
from __future__ import annotations

import types

import pytest

import kiln
import kiln.numpy as jnp
from kiln.experimental import checkify


def _outcome(fn) -> str:
    """What a call prints: its value's repr, or the exception's class family and first line."""
    try:
        return f"-> {fn()!r}"
    except ValueError as e:  # JaxRuntimeError, the functionalization error
        kind = "JaxRuntimeError" if type(e).__name__ == "JaxRuntimeError" else "ValueError"
        return f"raises {kind}: {str(e).splitlines()[0]}"
    except TypeError as e:
        kind = "TracerBoolConversionError" if "TracerBoolConversionError" in type(e).__name__ else "TypeError"
        return f"raises {kind}" + (f": {e}" if kind == "TypeError" else "")
    except AssertionError as e:
        return f"raises AssertionError: {str(e).splitlines()[0]}"


def block_intro(M):
    def f(x, i):
        M.checkify.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
        y = x[i]
        z = M.jnp.sin(y)
        return z

    jittable_f = M.checkify.checkify(f)
    err, z = M.jax.jit(jittable_f)(M.jnp.ones((5,)), -2)
    out = [str(err.get())]

    errors = M.checkify.user_checks | M.checkify.index_checks | M.checkify.float_checks
    checked_f = M.checkify.checkify(f, errors=errors)
    for args in [(M.jnp.ones((5,)), 100), (M.jnp.ones((5,)), -1), (M.jnp.array([M.jnp.inf, 1]), 0),
                 (M.jnp.array([5, 1]), 0)]:
        out.append(_outcome(lambda: checked_f(*args)[0].throw()))
    # The same calls with array indices (what a jitted caller passes):
    for args in [(M.jnp.ones((5,)), M.jnp.array(100)), (M.jnp.ones((5,)), M.jnp.array(-1)),
                 (M.jnp.array([M.jnp.inf, 1]), M.jnp.array(0)), (M.jnp.array([5, 1]), M.jnp.array(0))]:
        out.append(_outcome(lambda: checked_f(*args)[0].throw()))
    # Functionalizing checks: jit without checkify
    out.append(_outcome(lambda: M.jax.jit(f)(M.jnp.ones((5,)), -1)))
    return out


def block_why(M):
    def f(x):
        assert x > 0., "must be positive!"
        return M.jnp.log(x)
    out = [_outcome(lambda: M.jax.grad(f)(0.)), _outcome(lambda: M.jax.jit(f)(0.))]

    def f_checked(x):
        error = x <= 0.
        result = M.jnp.log(x)
        return error, result

    def manual():
        err, y = M.jax.jit(f_checked)(0.)
        if err:
            raise ValueError("must be positive!")
    out.append(_outcome(manual))

    def g(x):
        M.checkify.check(x > 0., "{} must be positive!", x)  # convenient but effectful API
        return M.jnp.log(x)
    g_checked = M.checkify.checkify(g)

    def functionalized():
        err, x = M.jax.jit(g_checked)(-1.)
        err.throw()
    out.append(_outcome(functionalized))
    return out


def block_error_cases(M):
    return [_outcome(lambda: M.jnp.arange(3)[5]), _outcome(lambda: float(M.jnp.sin(M.jnp.inf))),
            _outcome(lambda: M.jnp.ones((5,)) / M.jnp.arange(5))]


def block_automatic(M):
    def f(x, i):
        y = x[i]        # i could be out of bounds.
        z = M.jnp.sin(y)  # z could become NaN
        return z

    errors = M.checkify.user_checks | M.checkify.index_checks | M.checkify.float_checks
    checked_f = M.checkify.checkify(f, errors=errors)
    return [_outcome(lambda: checked_f(M.jnp.ones((5,)), 100)[0].throw()),
            _outcome(lambda: checked_f(M.jnp.array([M.jnp.inf, 1]), 0)[0].throw())]


def block_jit(M):
    def f(x, i):
        return x[i]

    checkify_of_jit = M.checkify.checkify(M.jax.jit(f), errors=M.checkify.index_checks)
    jit_of_checkify = M.jax.jit(M.checkify.checkify(f, errors=M.checkify.index_checks))
    err, _ = checkify_of_jit(M.jnp.ones((5,)), 100)
    out = [err.get()]
    err, _ = jit_of_checkify(M.jnp.ones((5,)), 100)
    return out + [err.get()]


def block_vmap(M):
    def f(x, i):
        M.checkify.check(i >= 0, "index needs to be non-negative!")
        return x[i]

    checked_f = M.checkify.checkify(f, errors=M.checkify.all_checks)
    errs, out = M.jax.vmap(checked_f)(M.jnp.ones((3, 5)), M.jnp.array([-1, 2, 100]))
    result = [errs.get(), _outcome(errs.throw)]

    @M.jax.vmap
    def g(x, i):
        M.checkify.check(i >= 0, "index needs to be non-negative!")
        return x[i]

    checked_g = M.checkify.checkify(g, errors=M.checkify.all_checks)
    err, out = checked_g(M.jnp.ones((3, 5)), M.jnp.array([-1, 2, 100]))
    return result + [_outcome(err.throw)]


def block_grad(M):
    def f(x):
        return x / (1 + M.jnp.sqrt(x))

    grad_f = M.jax.grad(f)
    err, _ = M.checkify.checkify(grad_f, errors=M.checkify.nan_checks)(0.)
    out = [err.get()]

    @M.jax.custom_vjp
    def assert_gradient_negative(x):
        return x

    def fwd(x):
        return assert_gradient_negative(x), None

    def bwd(_, grad):
        M.checkify.check(grad < 0, "gradient needs to be negative!")
        return (grad,)

    assert_gradient_negative.defvjp(fwd, bwd)
    return out + [_outcome(lambda: M.jax.grad(assert_gradient_negative)(-1.))]


_OOB5 = "out-of-bounds indexing for array of shape (5,): index 100 is out of bounds for axis 0 with size 5. "
_PY_INT = "raises TypeError: Formatting arguments to checkify.check need to be PyTrees of arrays, but got {} of type " \
          "<class 'int'>."
_NEG = "index needs to be non-negative! (`check` failed)"
EXPECTED = {
    block_intro: [
        "index needs to be non-negative, got -2 (`check` failed)",
        _PY_INT.format(100), _PY_INT.format(-1), _PY_INT.format(0), _PY_INT.format(0),
        f"raises JaxRuntimeError: {_OOB5}",
        "raises JaxRuntimeError: index needs to be non-negative, got -1 (`check` failed)",
        "raises JaxRuntimeError: nan generated by primitive: sin.",
        "-> None",
        "raises ValueError: Cannot abstractly evaluate a checkify.check which was not functionalized. This probably "
        "means you tried to stage (jit/scan/pmap/...) a `check` without functionalizing it through "
        "`checkify.checkify`.",
    ],
    block_why: [
        "raises AssertionError: must be positive!",
        "raises TracerBoolConversionError",
        "raises ValueError: must be positive!",
        "raises JaxRuntimeError: -1.0 must be positive! (`check` failed)",
    ],
    block_error_cases: [
        "-> Array(2, dtype=int32)",
        "-> nan",
        "-> Array([       inf, 1.        , 0.5       , 0.33333334, 0.25      ],      dtype=float32)",
    ],
    block_automatic: [f"raises JaxRuntimeError: {_OOB5}", "raises JaxRuntimeError: nan generated by primitive: sin."],
    block_jit: [_OOB5, _OOB5],
    block_vmap: [
        f"at mapped index 0: {_NEG}\nat mapped index 2: {_OOB5}",
        f"raises JaxRuntimeError: {_NEG}",
        f"raises JaxRuntimeError: {_NEG}",
    ],
    block_grad: ["nan generated by primitive: mul.",
                 "raises JaxRuntimeError: gradient needs to be negative! (`check` failed)"],
}


def _kiln() -> types.SimpleNamespace:
    return types.SimpleNamespace(jax=kiln, jnp=jnp, checkify=checkify)


@pytest.mark.parametrize("block", list(EXPECTED), ids=lambda b: b.__name__)
def test_guide_block_prints_what_jax_prints(block):
    assert block(_kiln()) == EXPECTED[block]


@pytest.mark.parametrize("block", list(EXPECTED), ids=lambda b: b.__name__)
def test_expected_output_matches_jax(block):
    """Where JAX is installed: the constants above are what JAX prints."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jax_numpy
    from jax.experimental import checkify as jax_checkify
    assert block(types.SimpleNamespace(jax=jax, jnp=jax_numpy, checkify=jax_checkify)) == EXPECTED[block]
