"""Mutable array references (kiln.new_ref, kiln.ref; JAX's jax.Ref): the examples of JAX's "Ref: mutable arrays
for data plumbing and memory control" page that kiln supports, checked against NumPy, and their errors."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import lax

RefError = kiln.frontend.core.refs.RefError


def value(ref):
    return np.asarray(ref[...])


def test_a_jitted_function_updates_a_ref_it_closes_over():
    x_ref = kiln.new_ref(jnp.zeros(3))

    @kiln.jit
    def f():
        x_ref[1] += 1.0
    assert repr(x_ref) == "Ref([0., 0., 0.], dtype=float32)"
    f()
    f()  # the cached program reads the ref's value anew
    np.testing.assert_array_equal(value(x_ref), [0, 2, 0])
    x_ref[...] = jnp.full(3, 5.0)  # changed outside: the next call sees it
    f()
    np.testing.assert_array_equal(value(x_ref), [5, 6, 5])


def test_reading_a_closed_over_ref_sees_its_value_at_each_call():
    scale = kiln.new_ref(jnp.float32(2.0))
    f = kiln.jit(lambda x: x * scale[...])
    assert float(f(3.0)) == 6.0
    scale[...] = jnp.float32(10.0)
    assert float(f(3.0)) == 30.0


def test_indexing_follows_numpy():
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x_ref = kiln.new_ref(jnp.asarray(host))
    row = x_ref[0]
    x_ref[1] = row
    host[1] = host[0]
    val = x_ref[1, 2]
    x_ref[2, 3] = val
    host[2, 3] = host[1, 2]
    col = x_ref[:, 1]
    x_ref[0, :3] = col
    host[0, :3] = host[:, 1]
    vals = x_ref[jnp.array([0, 0, 1]), jnp.array([1, 2, 3])]
    x_ref[jnp.array([1, 2, 1]), jnp.array([0, 0, 1])] = vals
    host[[1, 2, 1], [0, 0, 1]] = host[[0, 0, 1], [1, 2, 3]]
    np.testing.assert_array_equal(value(x_ref), host)
    assert x_ref.shape == (3, 4) and x_ref.dtype == np.float32 and len(x_ref) == 3
    assert str(kiln.typeof(x_ref)) == "Ref{float32[3,4]}" and isinstance(x_ref, kiln.Ref)
    assert not isinstance(x_ref, kiln.Array)


def test_refs_inside_pure_functions_under_grad_and_jit():
    def g(x):
        x_ref = kiln.new_ref(0.0)
        x_ref[...] = jnp.sin(x)
        return x_ref[...]
    np.testing.assert_allclose(kiln.grad(g)(1.0), np.cos(1.0), rtol=1e-6)

    @kiln.jit
    def pure(x):
        ref = kiln.new_ref(x)
        ref[...] = ref[...] + ref[...]
        return ref[...]
    assert float(pure(3.0)) == 6.0 and float(kiln.grad(pure)(3.0)) == 2.0
    np.testing.assert_allclose(kiln.vmap(g)(jnp.arange(3.0)), np.sin(np.arange(3.0)), rtol=1e-6)


def test_ref_arguments_of_a_jitted_function_are_written_back():
    @kiln.jit
    def sin_inplace(x_ref):
        x_ref[...] = jnp.sin(x_ref[...])
    x_ref = kiln.new_ref(jnp.arange(3.0))
    sin_inplace(x_ref)
    np.testing.assert_allclose(value(x_ref), np.sin(np.arange(3.0)), rtol=1e-6)
    other = kiln.new_ref(jnp.ones(3))
    sin_inplace(other)  # the same program, another ref
    np.testing.assert_allclose(value(other), np.sin(np.ones(3)), rtol=1e-6)
    np.testing.assert_allclose(value(x_ref), np.sin(np.arange(3.0)), rtol=1e-6)

    @kiln.jit
    def outer(r, s):
        sin_inplace(r)  # a nested jitted call writes the outer trace's ref
        s[...] = r[...] * 2
        return r[...] + 1
    a, b = kiln.new_ref(jnp.arange(2.0)), kiln.new_ref(jnp.zeros(2))
    np.testing.assert_allclose(outer(a, b), np.sin(np.arange(2.0)) + 1, rtol=1e-6)
    np.testing.assert_allclose(value(b), 2 * np.sin(np.arange(2.0)), rtol=1e-6)


def test_refs_written_in_loops_and_branches():
    r = kiln.new_ref(0)
    xs = jnp.arange(10)

    def body(_, x):
        r[...] += x
        return None, x * 2
    _, ys = lax.scan(body, None, xs)
    assert int(r[...]) == 45
    np.testing.assert_array_equal(ys, np.arange(10) * 2)
    acc = kiln.new_ref(jnp.zeros(2))
    lax.fori_loop(0, 4, lambda i, c: (acc.__setitem__(0, acc[0] + i), c)[1], 0)
    np.testing.assert_array_equal(value(acc), [6, 0])
    w = kiln.new_ref(0)
    assert int(lax.while_loop(lambda i: i < 5, lambda i: (w.__setitem__(..., w[...] + i), i + 1)[1], 0)) == 5
    assert int(w[...]) == 10
    c = kiln.new_ref(0.0)
    lax.cond(True, lambda: c.__setitem__(..., 1.0), lambda: None)
    lax.cond(False, lambda: c.__setitem__(..., 7.0), lambda: None)
    assert float(c[...]) == 1.0
    s = kiln.new_ref(jnp.zeros(3))
    lax.switch(2, [lambda: None, lambda: None, lambda: s.__setitem__(2, 5.0)])
    np.testing.assert_array_equal(value(s), [0, 0, 5])

    @kiln.jit
    def in_jit(xs):
        total = kiln.new_ref(jnp.float32(0))  # a ref of the jitted function, written in its loop
        lax.scan(lambda c, x: ((total.__setitem__(..., total[...] + x), c)[1], None), 0, xs)
        return total[...]
    assert float(in_jit(jnp.arange(5.0))) == 10.0


def test_ref_api_functions():
    q = kiln.new_ref(jnp.arange(3.0))
    assert float(kiln.ref.get(q, 1)) == 1.0
    np.testing.assert_array_equal(kiln.ref.get(q), [0, 1, 2])
    assert float(kiln.ref.swap(q, 0, jnp.float32(9))) == 0.0
    np.testing.assert_array_equal(value(q), [9, 1, 2])
    kiln.ref.addupdate(q, jnp.array([0, 0]), jnp.ones(2))  # repeated indices add up
    np.testing.assert_array_equal(value(q), [11, 1, 2])
    kiln.ref.set(q, None, jnp.zeros(3))
    np.testing.assert_array_equal(kiln.freeze(q), [0, 0, 0])
    np.testing.assert_array_equal(value(kiln.empty_ref(kiln.ShapeDtypeStruct((2,), jnp.float32))), [0, 0])
    kiln.free_ref(q)
    assert repr(kiln.new_ref(3)) == "Ref(3, dtype=int32, weak_type=True)"


def test_errors():
    x_ref = kiln.new_ref(1.0)
    with pytest.raises(TypeError, match=r"kiln.numpy.sin: argument 0 of type Ref"):
        jnp.sin(x_ref)
    with pytest.raises(TypeError):
        x_ref + 1
    with pytest.raises(RefError, match=r"the function returned a mutable array reference \(a Ref\), but refs "
                                       r"cannot be returned"):
        kiln.jit(lambda r: r)(x_ref)
    with pytest.raises(RefError, match=r"the same Ref is passed as argument a and as argument b"):
        kiln.jit(lambda a, b: None)(x_ref, x_ref)
    with pytest.raises(RefError, match=r"a Ref is both closed over by the function and passed as argument y"):
        kiln.jit(lambda y: y.__setitem__(..., x_ref[...]))(x_ref)
    q = kiln.new_ref(jnp.arange(3.0))
    with pytest.raises(ValueError, match=r"kiln.ref.set: the value has shape \(2,\), but the indexed part of the Ref "
                                         r"has shape \(3,\)"):
        q[...] = jnp.ones(2)
    with pytest.raises(ValueError, match=r"the value has dtype int32, but the Ref holds float32"):
        q[...] = jnp.ones(3, jnp.int32)
    with pytest.raises(RefError, match=r"refs of refs are not supported"):
        kiln.new_ref(q)
    with pytest.raises(RefError, match=r"kiln.vmap\(<lambda>\): the function writes a value that differs between "
                                       r"batch elements to a Ref that is not mapped"):
        kiln.vmap(lambda x: x_ref.__setitem__(..., x))(jnp.arange(3.0))
    with pytest.raises(RefError, match=r"kiln: <lambda> writes a value that depends on the differentiated inputs to "
                                       r"a Ref created outside the differentiated function"):
        kiln.grad(lambda x: (x_ref.__setitem__(..., x), x * 2)[1])(1.0)
    with pytest.raises(RefError, match=r"kiln.jit\(<lambda>\).trace/.lower: an argument is a Ref"):
        kiln.jit(lambda r: r[...]).lower(q)
    leaked = []
    kiln.jit(lambda x: leaked.append(kiln.new_ref(x)) or x)(1.0)
    with pytest.raises(RefError, match=r"used after that trace ended"):
        leaked[0][...]


def test_a_cached_program_serves_calls_inside_and_outside_other_traces():
    r = kiln.new_ref(jnp.float32(1))
    f = kiln.jit(lambda x: x * r[...])
    assert float(f(2.0)) == 2.0  # traced at the top level first
    assert float(kiln.jit(lambda x: f(x) + 1)(2.0)) == 3.0
    r[...] = jnp.float32(3)
    assert float(kiln.jit(lambda x: f(x) + 1)(2.0)) == 7.0 and float(f(2.0)) == 6.0
    g = kiln.jit(lambda x: x * r[...] + 100)
    assert float(kiln.jit(lambda x: g(x))(1.0)) == 103.0  # traced inside another trace first
    r[...] = jnp.float32(5)
    assert float(g(1.0)) == 105.0
    w = kiln.new_ref(jnp.float32(0))

    @kiln.jit
    def inc(x):
        w[...] += x
        return x
    kiln.jit(lambda x: inc(x) * 2)(1.0)
    inc(2.0)
    assert float(w[...]) == 3.0
    assert float(kiln.grad(lambda x: x * r[...])(1.0)) == 5.0  # reads under transformations
    np.testing.assert_array_equal(kiln.vmap(lambda x: x * r[...])(jnp.ones(2)), [5, 5])
    _, ys = lax.scan(lambda c, x: (c, x * r[...]), 0.0, jnp.arange(3.0))
    np.testing.assert_array_equal(ys, [0, 5, 10])
    loop = kiln.jit(lambda xs: lax.scan(lambda c, x: (c + x * r[...], None), 0.0, xs)[0])
    assert float(loop(jnp.arange(3.0))) == 15.0
    r[...] = jnp.float32(1)
    assert float(loop(jnp.arange(3.0))) == 3.0  # the loop's read of the ref is a parameter of the program


def test_buffer_pointers():
    x = jnp.arange(3.0)
    assert isinstance(x.unsafe_buffer_pointer(), int) and x.unsafe_buffer_pointer() != 0
    ref = kiln.new_ref(x)
    assert ref.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    x.delete()
    with pytest.raises(kiln.DeletedBufferError):
        x.unsafe_buffer_pointer()


def test_vmap_over_ref_arguments():
    def dist(x, y, out_ref):
        assert x.ndim == y.ndim == 1 and out_ref.ndim == 0
        out_ref[...] = jnp.sum((x - y) ** 2)
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    out_ref = kiln.new_ref(jnp.zeros((3, 3)))
    kiln.vmap(kiln.vmap(dist, (0, None, 0)), (None, 0, 0))(jnp.asarray(host), jnp.asarray(host), out_ref)
    np.testing.assert_array_equal(value(out_ref), ((host[None, :, :] - host[:, None, :]) ** 2).sum(-1))
    r = kiln.new_ref(jnp.zeros((2, 3)))
    kiln.vmap(lambda rr, x: rr.__setitem__(..., rr[...] + x), in_axes=(1, 0))(r, jnp.arange(3.0))
    kiln.jit(lambda: kiln.vmap(lambda rr, x: rr.__setitem__(..., rr[...] + x), in_axes=(1, 0))(r, jnp.arange(3.0)))()
    np.testing.assert_array_equal(value(r), [[0, 2, 4], [0, 2, 4]])
    c = kiln.new_ref(jnp.float32(0))
    kiln.vmap(lambda x: c.__setitem__(..., jnp.float32(7)))(jnp.arange(3.0))  # the same value for every element
    assert float(c[...]) == 7.0


def test_plumbing_refs_under_differentiation():
    def foo(x, some_plumbing_ref):
        y = x + x
        some_plumbing_ref[...] += kiln.lax.stop_gradient(y)
        return y
    pr = kiln.new_ref(0.0)
    assert float(kiln.grad(foo)(1.0, pr)) == 2.0 and float(pr[...]) == 2.0
    value_, grad_ = kiln.value_and_grad(foo)(2.0, pr)
    assert (float(value_), float(grad_), float(pr[...])) == (4.0, 2.0, 6.0)
    assert float(kiln.jit(kiln.grad(foo))(1.0, pr)) == 2.0 and float(pr[...]) == 8.0  # in jit: a ref argument
    primal, tangent = kiln.jvp(lambda x: foo(x, pr), (1.0,), (1.0,))
    assert (float(primal), float(tangent), float(pr[...])) == (2.0, 2.0, 10.0)
    stats = kiln.new_ref(jnp.zeros(3))

    def loss(w, x):
        h = jnp.tanh(x * w)
        stats[...] = kiln.lax.stop_gradient(h)  # plumb an intermediate value out, as a metric
        return jnp.sum(h)
    g = kiln.grad(loss)(0.5, jnp.arange(3.0))
    np.testing.assert_allclose(g, np.sum(np.arange(3.0) / np.cosh(0.5 * np.arange(3.0)) ** 2), rtol=1e-6)
    np.testing.assert_allclose(value(stats), np.tanh(0.5 * np.arange(3.0)), rtol=1e-6)


def test_custom_vjp_shares_ref_arguments_with_bwd():
    @kiln.custom_vjp
    def stash_grads(grads_ref, x):
        return x

    def stash_grads_fwd(grads_ref, x):
        return x, grads_ref

    def stash_grads_bwd(grads_ref, g):
        grads_ref[...] = g
        return None, g
    stash_grads.defvjp(stash_grads_fwd, stash_grads_bwd)

    def f(x, grads_ref):
        return jnp.sin(stash_grads(grads_ref, x))
    grads_ref = kiln.new_ref(0.0)
    np.testing.assert_allclose(kiln.grad(f)(1.0, grads_ref), np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(grads_ref[...], np.cos(1.0), rtol=1e-6)  # the cotangent at the stash point
    inside = kiln.new_ref(0.0)
    np.testing.assert_allclose(kiln.jit(kiln.grad(f))(2.0, inside), np.cos(2.0), rtol=1e-6)
    np.testing.assert_allclose(inside[...], np.cos(2.0), rtol=1e-6)
    np.testing.assert_allclose(f(1.0, grads_ref), np.sin(1.0), rtol=1e-6)  # no derivative: the function runs

    @kiln.custom_vjp
    def bad(r, x):
        return x
    bad.defvjp(lambda r, x: (x, r), lambda r, g: (g, g))
    with pytest.raises(kiln.CustomDerivativeError, match=r"must return None as the cotangent of a Ref argument"):
        kiln.grad(lambda x: bad(grads_ref, x))(1.0)


def test_checkpoint_and_iteration():
    r = kiln.new_ref(jnp.zeros(3))
    out = kiln.jit(kiln.checkpoint(lambda x: (r.__setitem__(..., x * 2), x)[1]))(jnp.ones(3))
    np.testing.assert_array_equal(out, [1, 1, 1])
    np.testing.assert_array_equal(value(r), [2, 2, 2])
    total = kiln.new_ref(jnp.float32(0))

    def loss(x):
        y = jnp.sin(x)
        total[...] = kiln.lax.stop_gradient(jnp.sum(y))
        return jnp.sum(y * y)
    xs = np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(kiln.jit(kiln.grad(kiln.checkpoint(loss)))(xs), np.sin(2 * xs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total[...], np.sin(xs).sum(), rtol=1e-6)
    # Iterating a ref gives the rows of its value (indexing past the end clamps, so without __iter__ it never ended)
    np.testing.assert_array_equal([float(v) for v in kiln.new_ref(jnp.arange(3.0))], [0, 1, 2])


def test_donating_a_ref_argument_updates_it_in_place():
    r = kiln.new_ref(jnp.arange(3.0))
    before = r.unsafe_buffer_pointer()
    sin_inplace = kiln.jit(lambda x: x.__setitem__(..., jnp.sin(x[...])), donate_argnums=0)
    sin_inplace(r)
    assert r.unsafe_buffer_pointer() == before  # XLA wrote the result into the ref's own buffer
    np.testing.assert_allclose(value(r), np.sin(np.arange(3.0)), rtol=1e-6)
    sin_inplace(r)
    np.testing.assert_allclose(value(r), np.sin(np.sin(np.arange(3.0))), rtol=1e-6)


def test_a_ref_argument_kept_past_its_trace_raises_when_used():
    kept = []
    kiln.jit(lambda r: kept.append(r))(kiln.new_ref(jnp.zeros(2)))
    kiln.vmap(lambda r: kept.append(r))(kiln.new_ref(jnp.zeros(2)))
    for ref in kept:
        with pytest.raises(RefError, match=r"used after that trace ended"):
            ref[...]


def test_a_write_leaves_the_ref_strongly_typed_as_jax():
    # JAX's refs guide prints Ref(0.5403023, dtype=float32) after a custom_vjp's bwd wrote into new_ref(0.):
    # set and swap store a strongly typed value (the ref no longer gives way in promotion); addupdate keeps the type
    f16 = jnp.float16(1)
    r = kiln.new_ref(0.0)
    assert (r[...] + f16).dtype == np.float16
    r[...] = 1.0
    assert (r[...] + f16).dtype == np.float32 and "weak_type" not in repr(r)
    r = kiln.new_ref(jnp.broadcast_to(1.0, (3,)))
    r[0] = 2.0
    assert (r[...] + f16).dtype == np.float32
    np.testing.assert_array_equal(value(r), [2, 1, 1])
    r = kiln.new_ref(1.0)
    kiln.jit(lambda: r.__setitem__(..., 5.0))()
    assert repr(r) == "Ref(5., dtype=float32)"
    r = kiln.new_ref(1.0)
    kiln.ref.addupdate(r, ..., 1.0)
    assert repr(r) == "Ref(2., dtype=float32, weak_type=True)"
