"""Common mistakes with kiln's transformations give a clear error naming the function and the argument, and
leave the transformation usable afterwards.

Covers: a non-callable passed to grad/value_and_grad/jacfwd/jacrev/hessian/vmap and to lax.scan/while_loop/
fori_loop/map/switch; grad-family ``argnums`` of the wrong type or naming an argument twice; jit
``static_argnums``/``static_argnames``/``donate_argnums`` of the wrong type; ``checkpoint`` and ``pmap`` static
argument positions out of range; custom_jvp/custom_vjp ``nondiff_argnums`` out of range; a custom_jvp rule whose
tangent has the wrong dtype; a registered pytree flatten function that does not return a pair; a transformed
function that returns (or is given) something that is not an array: the message names the transformation, the
function and the output or argument.
"""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import lax, tree_util


@pytest.mark.parametrize("transform, name", [
    (kiln.grad, "grad"), (kiln.value_and_grad, "value_and_grad"), (kiln.jacfwd, "jacfwd"),
    (kiln.jacrev, "jacrev"), (kiln.hessian, "hessian"), (kiln.vmap, "vmap")])
def test_transform_of_a_non_callable(transform, name):
    with pytest.raises(TypeError, match=rf"kiln\.{name}: expected a function .*got int: 3"):
        transform(3)


@pytest.mark.parametrize("call, match", [
    (lambda: lax.scan(3, 0.0, jnp.ones(3)), r"kiln\.lax\.scan: f must be a callable, got int"),
    (lambda: lax.while_loop(3, lambda c: c, 0.0), r"kiln\.lax\.while_loop: cond_fun must be a callable"),
    (lambda: lax.fori_loop(0, 3, 3, 0.0), r"kiln\.lax\.fori_loop: body_fun must be a callable"),
    (lambda: lax.map(3, jnp.ones(3)), r"kiln\.lax\.map: f must be a callable"),
    (lambda: lax.switch(0, lambda x: x, 1.0), r"kiln\.lax\.switch: branches must be a sequence .* got function"),
])
def test_control_flow_non_callable(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_grad_argnums_duplicate_is_refused():
    # Before: kiln.grad(f, argnums=(0, 0)) returned (0., 2.): a wrong gradient for the first entry.
    f = lambda x, y: x * y  # noqa: E731
    for transform in (kiln.grad, kiln.jacrev, kiln.jacfwd):
        with pytest.raises(ValueError, match=r"argnums \(0, 0\) names the same argument more than once"):
            transform(f, argnums=(0, 0))(3.0, 2.0)
    assert [float(g) for g in kiln.grad(f, argnums=(0, 1))(3.0, 2.0)] == [2.0, 3.0]


@pytest.mark.parametrize("argnums", [0.0, "x", None])
def test_grad_argnums_of_the_wrong_type(argnums):
    with pytest.raises(TypeError, match=r"kiln\.grad: argnums must be an int or a tuple of ints"):
        kiln.grad(lambda x: x, argnums=argnums)(3.0)


def test_grad_argnums_range_still_accepted():
    g = kiln.grad(lambda x, y: x * y, argnums=range(2))(3.0, 2.0)
    assert [float(v) for v in g] == [2.0, 3.0]


@pytest.mark.parametrize("kw, match", [
    ({"static_argnums": 1.5}, r"static_argnums must be an int or a sequence of them, got float 1\.5"),
    ({"static_argnames": 3}, r"static_argnames must be a str or a sequence of them, got int 3"),
    ({"donate_argnums": "x"}, r"donate_argnums must be an int or a sequence of them, got str 'x'"),
])
def test_jit_argnums_of_the_wrong_type(kw, match):
    with pytest.raises(TypeError, match=r"kiln\.jit\(<lambda>\): " + match):
        kiln.jit(lambda x: x + 1, **kw)


def test_checkpoint_static_argnums_out_of_range():
    # Before: eagerly it ignored the bad position; under grad an IndexError leaked.
    f = kiln.checkpoint(lambda x: x * 2, static_argnums=(2,))
    with pytest.raises(ValueError, match=r"kiln\.checkpoint\(<lambda>\): static_argnums \(2,\) is out of range "
                                         r"for a call with 1 positional argument"):
        f(1.0)
    with pytest.raises(ValueError, match=r"static_argnums \(2,\) is out of range"):
        kiln.grad(f)(1.0)


def test_checkpoint_negative_static_argnum():
    f = kiln.checkpoint(lambda x, n: x ** n, static_argnums=(-1,))
    assert float(kiln.grad(f)(3.0, 2)) == 6.0


def test_checkpoint_static_argnums_int():
    # JAX takes one int as well as a tuple (before: TypeError: 'int' object is not iterable)
    power = lambda x, n: x ** n  # noqa: E731
    for f in (kiln.checkpoint(power, static_argnums=1), kiln.remat(power, static_argnums=-1)):
        assert float(kiln.grad(f)(3.0, 2)) == 6.0


def test_pmap_static_broadcasted_argnums_out_of_range():
    f = kiln.pmap(lambda x: x * 2, static_broadcasted_argnums=2)
    with pytest.raises(ValueError, match=r"kiln\.pmap\(<lambda>\): static_broadcasted_argnums=\(2,\) is out of "
                                         r"range for a call with 1 positional argument"):
        f(jnp.ones((1, 3)))
    g = kiln.pmap(lambda x: x * 2)
    np.testing.assert_allclose(g(jnp.ones((1, 3))), np.full((1, 3), 2.0))


def test_custom_jvp_nondiff_argnums_out_of_range():
    f = kiln.custom_jvp(lambda x: x, nondiff_argnums=(2,))
    f.defjvp(lambda p, t: (p[0], t[0]))
    for call in (lambda: f(1.0), lambda: kiln.jvp(f, (1.0,), (1.0,))):
        with pytest.raises(ValueError, match=r"custom_jvp function <lambda>: nondiff_argnums=\(2,\) is out of "
                                             r"range for a call with 1 argument"):
            call()


def test_custom_vjp_nondiff_argnums_out_of_range():
    f = kiln.custom_vjp(lambda x: x, nondiff_argnums=(2,))
    f.defvjp(lambda x: (x, None), lambda r, g: (g,))
    with pytest.raises(ValueError, match=r"custom_vjp function <lambda>: nondiff_argnums=\(2,\) is out of range"):
        kiln.grad(f)(1.0)


def _sin_with_rule(tangent_dtype):
    @kiln.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), (jnp.cos(primals[0]) * tangents[0]).astype(tangent_dtype)
    return f


@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_custom_jvp_tangent_of_the_wrong_dtype(dtype):
    # Before: jvp returned a float16/int32 tangent for a float32 output; grad failed inside kiln.
    f = _sin_with_rule(dtype)
    match = rf"custom_jvp rule of f \(tangent output\): output 0 has dtype {dtype}, but the tangent of an output " \
            r"of type f32\[2\] must be float32"
    with pytest.raises(TypeError, match=match):
        kiln.jvp(f, (jnp.ones(2),), (jnp.ones(2),))
    with pytest.raises(TypeError, match=match):
        kiln.grad(lambda x: f(x).sum())(jnp.ones(2))


def test_custom_jvp_tangent_right_dtype_and_literal_zero():
    f = _sin_with_rule("float32")
    x = np.array([0.3, 1.2], np.float32)
    np.testing.assert_allclose(kiln.grad(lambda x: f(x).sum())(x), np.cos(x), rtol=1e-6)

    @kiln.custom_jvp
    def g(x):
        return x * 2.0
    g.defjvp(lambda p, t: (g(p[0]), 0.0))  # a weak-typed Python scalar adapts to the output's dtype
    assert float(kiln.jvp(g, (1.0,), (1.0,))[1]) == 0.0


def test_registered_flatten_not_returning_a_pair():
    class Box:
        pass
    tree_util.register_pytree_node(Box, lambda b: 3, lambda aux, children: Box())
    with pytest.raises(ValueError, match=r"flatten function registered for pytree node type .*Box must return a "
                                         r"pair \(children, aux_data\), got int: 3"):
        tree_util.tree_leaves([Box()])
    assert tree_util.tree_leaves([1, (2,)]) == [1, 2]


def _returns_str(a):
    return "s"


@pytest.mark.parametrize("name, call", [
    ("vmap", lambda: kiln.vmap(_returns_str)(jnp.ones(3))),
    ("grad", lambda: kiln.grad(_returns_str)(1.0)),
    ("value_and_grad", lambda: kiln.value_and_grad(_returns_str)(1.0)),
    ("jvp", lambda: kiln.jvp(_returns_str, (1.0,), (1.0,))),
    ("vjp", lambda: kiln.vjp(_returns_str, 1.0)),
    ("linearize", lambda: kiln.linearize(_returns_str, 1.0)),
    ("jacfwd", lambda: kiln.jacfwd(_returns_str)(1.0)),
    ("jacrev", lambda: kiln.jacrev(_returns_str)(1.0)),
    ("hessian", lambda: kiln.hessian(_returns_str)(1.0)),
])
def test_transformed_function_returning_a_non_array(name, call):
    # Before: "kiln: value of type str is not a valid array: 's'", naming neither the transformation nor the output.
    with pytest.raises(TypeError, match=rf"^kiln\.{name}: the output of _returns_str is a str \('s'\), not an array; "
                                        r"the function must return arrays, scalars or pytrees of them$"):
        call()


def test_non_array_output_is_named_by_its_path():
    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match=r"kiln\.vmap: output\[1\] of <lambda> is an object \(<object"):
        kiln.vmap(lambda a: (a, object()))(x)
    # (an auxiliary output that is not traced comes back as it was, a str too, as in JAX: test_api.py)
    with pytest.raises(TypeError, match=r"kiln\.grad: the output of <lambda> is a str \('s'\)"):
        kiln.grad(lambda a: "s")(x)
    with pytest.raises(TypeError, match=r"kiln\.jit\(<lambda>\): the function returned a str \('s'\)"):
        kiln.jit(lambda a: {"k": "s"})(x)
    # a transformation inside another names itself, not the outer one
    with pytest.raises(TypeError, match=r"^kiln\.vmap: the output of _returns_str is a str"):
        kiln.grad(lambda a: kiln.vmap(_returns_str)(a).sum())(x)
    # outputs that are arrays, Python scalars or None still pass
    out = kiln.vmap(lambda a: (a, 1.0, None))(x)
    assert out[0].shape == (2, 3) and out[2] is None


def test_transformed_function_given_a_non_array():
    with pytest.raises(TypeError, match=r"kiln\.vmap: argument 0 of <lambda> is a str \('s'\), not an array; a "
                                        r"mapped argument must be an array .*pass in_axes=None"):
        kiln.vmap(lambda a: a)("s")
    with pytest.raises(TypeError, match=r"kiln\.vmap: keyword argument 's' of <lambda> is a str .*keyword arguments "
                                        r"are always mapped"):
        kiln.vmap(lambda a, s=None: a)(jnp.ones(3), s="s")
    assert kiln.vmap(lambda a, s: a, in_axes=(0, None))(jnp.ones(3), "s").shape == (3,)  # unmapped: passed as is
    for name, transform in [("grad", kiln.grad), ("value_and_grad", kiln.value_and_grad), ("jacfwd", kiln.jacfwd),
                            ("jacrev", kiln.jacrev), ("hessian", kiln.hessian)]:
        with pytest.raises(TypeError, match=rf"kiln\.{name}: argument 0 of <lambda> is a str \('s'\), not an array; "
                                            r"differentiated arguments must be arrays"):
            transform(lambda a: a)("s")
    with pytest.raises(TypeError, match=r"kiln\.grad: argument 1\['w'\] of <lambda> is a str"):
        kiln.grad(lambda a, b: a * b["w"], argnums=1)(1.0, {"w": "s"})
    with pytest.raises(TypeError, match=r"kiln\.jvp: argument of type str \('s'\) is not an array"):
        kiln.jvp(lambda a: a, ("s",), (1.0,))
    with pytest.raises(TypeError, match=r"kiln\.vjp: argument of type str \('s'\) is not an array"):
        kiln.vjp(lambda a: a, "s")
    with pytest.raises(TypeError, match=r"kiln\.jit\(<lambda>\): argument a is an object \(<object"):
        kiln.jit(lambda a: a)(object())


def test_checkpoint_static_argnames_and_prevent_cse_flags():
    # JAX's checkpoint also takes static_argnames and per-argument prevent_cse flags (kiln raised TypeError)
    def power(x, *, n):
        assert isinstance(n, int)  # static: a Python int, for Python control flow
        return x ** n
    for f in (kiln.checkpoint(power, static_argnames="n"), kiln.checkpoint(power, static_argnames=("n",)),
              kiln.checkpoint(power, static_argnames="n", prevent_cse=(False,))):
        assert float(kiln.grad(lambda x: f(x, n=3))(2.0)) == 12.0
        assert float(kiln.jit(kiln.grad(lambda x: f(x, n=2)))(3.0)) == 6.0
