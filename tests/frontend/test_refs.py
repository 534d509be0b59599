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
    empty = kiln.empty_ref(kiln.ShapeDtypeStruct((2,), jnp.float32))
    np.testing.assert_array_equal(value(empty), [0, 0])
    kiln.free_ref(empty)
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
    # The ref owns a copy (as JAX's new_ref does): jit updates a ref's buffer in place, which must not touch x.
    assert ref.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    x.delete()
    with pytest.raises(kiln.DeletedBufferError):
        x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(value(ref), [0, 1, 2])


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
    # A write to an unmapped ref raises even of a value that is the same for every element (as in JAX: each
    # element writes it, so an increment would have to count the batch size); the ref keeps its value.
    c = kiln.new_ref(jnp.float32(0))
    same = r"kiln.vmap\(<lambda>\): the function writes to a Ref that is not mapped .* Pass the ref as an argument"
    with pytest.raises(RefError, match=same):
        kiln.vmap(lambda x: c.__setitem__(..., jnp.float32(7)))(jnp.arange(3.0))
    with pytest.raises(RefError, match=same):
        kiln.vmap(lambda rr, x: rr.__setitem__(..., rr[...] + 1), in_axes=(None, 0))(c, jnp.arange(3.0))
    assert float(c[...]) == 0.0


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


def test_custom_vjp_fwd_may_return_only_its_ref_arguments():
    """A ref that fwd returns among its residuals must be one of its arguments (JAX's rule, a ValueError there).
    kiln raised a TypeError ("not a valid array") where the call has no ref argument."""
    @kiln.custom_vjp
    def ident(x):
        return x

    fresh = {}

    def ident_fwd(x):
        fresh["ref"] = kiln.new_ref(0.0)
        return x, fresh["ref"]
    ident.defvjp(ident_fwd, lambda r, g: (g,))
    for derivative in (kiln.grad(ident), kiln.jit(kiln.grad(ident)), lambda x: kiln.vjp(ident, x)):
        with pytest.raises(RefError, match="returned a Ref among its residuals that is not one of its "
                           "arguments") as info:
            derivative(1.0)
        assert isinstance(info.value, ValueError)
    np.testing.assert_allclose(ident(2.0), 2.0)  # without differentiation fwd does not run

    @kiln.custom_vjp
    def with_ref(r, x):
        return x
    with_ref.defvjp(lambda r, x: (x, kiln.new_ref(0.0)), lambda r, g: (None, g))
    with pytest.raises(RefError, match="not one of its arguments"):
        kiln.grad(lambda x: with_ref(kiln.new_ref(1.0), x))(1.0)


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


def test_a_refs_type_is_fixed_when_it_is_created_as_jax():
    """A ref's dtype and weak type are those of its initial value, whatever is written into it (JAX 0.10.2:
    ``new_ref(0.)`` is a weakly typed ``Ref{float32[]}`` whose reads give way in promotion after ``ref[...] =
    jnp.float32(1)``, after a write in jit, a ``+=``, an ``addupdate``, a gradient accumulated by ``with_refs``)."""
    f16 = jnp.float16(1)
    r = kiln.new_ref(0.0)
    for write in (lambda: r.__setitem__(..., 1.0), lambda: r.__setitem__(..., jnp.float32(2)),
                  kiln.jit(lambda: r.__setitem__(..., jnp.float32(3))),
                  lambda: r.__setitem__(..., r[...] + jnp.float32(1)),
                  lambda: kiln.ref.addupdate(r, ..., jnp.float32(1)),
                  lambda: kiln.vjp(jnp.sin, jnp.float32(0))[1].with_refs(r)(jnp.float32(1))):
        write()
        assert r[...].weak_type and (r[...] + f16).dtype == np.float16 and repr(r).endswith("weak_type=True)")
    assert float(r[...]) == 6.0  # 3, +1, +1, +cos(0)
    s = kiln.new_ref(jnp.float32(0))  # a strongly typed ref stays so
    s[...] = 1.0
    assert not s[...].weak_type and (s[...] + f16).dtype == np.float32 and repr(s) == "Ref(1., dtype=float32)"
    c = kiln.new_ref(0)
    lax.scan(lambda _, x: (c.__setitem__(..., c[...] + x), None), None, jnp.arange(4))
    assert c[...].weak_type and int(c[...]) == 6 and repr(c) == "Ref(6, dtype=int32, weak_type=True)"
    v = kiln.new_ref(jnp.broadcast_to(1.0, (3,)))
    v[0] = jnp.float32(2)
    assert v[...].weak_type
    np.testing.assert_array_equal(value(v), [2, 1, 1])


def test_freeze_invalidates_and_only_in_the_creation_scope():
    """JAX's refs guide: freeze gives the final value and invalidates the ref (using it afterwards is an error), and
    only the scope that created a ref may freeze it (the guide's err4; JAX 0.10.2 does not check either: kiln's
    errors say what happened and what to do instead)."""
    r = kiln.new_ref(jnp.arange(3.0))
    r[1] = 5.0
    np.testing.assert_array_equal(kiln.freeze(r), [0, 5, 2])
    assert repr(r) == "Ref(<invalidated by kiln.freeze>)"
    for use in (lambda: r[...], lambda: r.__setitem__(0, 1.0), lambda: kiln.freeze(r), lambda: kiln.free_ref(r),
                lambda: kiln.jit(lambda: r[...])(), lambda: kiln.jit(lambda q: q[...])(r)):
        with pytest.raises(RefError, match=r"this Ref was invalidated by kiln.freeze and cannot be read or written "
                                           r"any more; keep using the array kiln.freeze returned, or create a new ref"):
            use()
    f = kiln.new_ref(1.0)
    kiln.free_ref(f)
    with pytest.raises(RefError, match=r"invalidated by kiln.free_ref"):
        f[...]
    outer = kiln.new_ref(0.0)
    passed = r"kiln.freeze: the Ref was passed to this traced function as an argument; a ref can only be frozen or " \
             r"freed in the scope that created it .* Read its value with ref\[...\] instead"
    closed = r"kiln.freeze: the Ref was created outside this traced function \(closed over\)"
    for call, match in ((lambda: kiln.jit(kiln.freeze)(outer), passed),
                        (lambda: kiln.vmap(kiln.freeze)(kiln.new_ref(jnp.zeros(2))), passed),
                        (lambda: kiln.jit(lambda: kiln.freeze(outer))(), closed),
                        (lambda: lax.scan(lambda c, x: (c, kiln.freeze(outer)), 0.0, jnp.arange(2.0)), closed),
                        (lambda: kiln.jit(lambda q: kiln.free_ref(q))(outer), passed.replace("freeze", "free_ref"))):
        with pytest.raises(RefError, match=match):
            call()
    assert float(outer[...]) == 0.0  # still usable

    @kiln.jit
    def created_inside(x):
        q = kiln.new_ref(x)
        q[...] += 1.0
        return kiln.freeze(q) * 2
    assert float(created_inside(1.0)) == 4.0


def test_a_ref_passed_where_an_array_is_expected_says_to_read_it():
    r = kiln.new_ref(1.0)
    with pytest.raises(TypeError, match=r"kiln.numpy.sin: argument 0 of type Ref .* is not an array or a scalar; a "
                                        r"Ref is no array: read its value first \(ref\[...\]\)"):
        jnp.sin(r)
    with pytest.raises(TypeError, match=r"value of type Ref is not a valid array.*read its value first"):
        lax.sin(r)
    with pytest.raises(TypeError, match=r"kiln.grad: argument 1 of <lambda> is a Ref .* a Ref's gradient must be "
                                        r"accumulated into a ref: use kiln.vjp and bind one with the VJP function's "
                                        r"with_refs"):
        kiln.grad(lambda x, q: x * q[...], argnums=1)(1.0, r)


def test_vjp_with_respect_to_ref_arguments():
    """JAX's refs guide: a ref primal's gradient (with respect to its value when vjp is called) is added into the
    ref bound with with_refs; the function's writes to it happen (once) in vjp and are differentiated."""
    def g(x_ref, w):
        x_ref[...] = jnp.sin(x_ref[...]) * w
        return jnp.sum(x_ref[...] ** 2), {"w": w}
    x0, w0 = np.array([0.5, 2.0], np.float32), np.float32(1.5)
    x_ref = kiln.new_ref(jnp.asarray(x0))
    y, g_vjp, aux = kiln.vjp(g, x_ref, w0, has_aux=True)
    np.testing.assert_allclose(y, np.sum((np.sin(x0) * w0) ** 2), rtol=1e-6)
    assert float(aux["w"]) == 1.5
    np.testing.assert_allclose(value(x_ref), np.sin(x0) * w0, rtol=1e-6)  # written in place, once
    acc = kiln.new_ref(jnp.ones(2))
    out = g_vjp.with_refs(acc, kiln.ad.GradValue())(jnp.float32(1))
    assert out[0] == kiln.ad.GradRef()
    np.testing.assert_allclose(value(acc), 1 + 2 * np.sin(x0) * w0 ** 2 * np.cos(x0), rtol=1e-5)
    np.testing.assert_allclose(out[1], np.sum(2 * np.sin(x0) ** 2 * w0), rtol=1e-5)
    assert g_vjp.with_refs(kiln.ad.DontWant(), kiln.ad.DontWant())(jnp.float32(1)) == (kiln.ad.DidntWant(),) * 2
    with pytest.raises(RefError, match=r"kiln.vjp: primal 0 is a Ref, so its gradient must be accumulated into a "
                                       r"ref .* bind one with the VJP function's with_refs before applying it"):
        g_vjp(jnp.float32(1))
    with pytest.raises(RefError, match=r"primal 0 is a Ref.*pass a Ref for it to with_refs.*kiln.ad.DontWant\(\)"):
        g_vjp.with_refs(kiln.ad.GradValue(), kiln.ad.GradValue())(jnp.float32(1))
    with pytest.raises(RefError, match=r"kiln.vjp: the same Ref is passed as two primals"):
        kiln.vjp(lambda a, b: a[...] + b[...], x_ref, x_ref)

    @kiln.jit  # inside jit: the ref arguments are the jitted function's
    def step(p_ref, acc_ref):
        loss, p_vjp = kiln.vjp(lambda r: jnp.sum(r[...] ** 3), p_ref)
        p_vjp.with_refs(acc_ref)(jnp.ones_like(loss))
        return loss
    p, acc = kiln.new_ref(jnp.asarray(x0)), kiln.new_ref(jnp.zeros(2))
    np.testing.assert_allclose(step(p, acc), np.sum(x0 ** 3), rtol=1e-6)
    step(p, acc)
    np.testing.assert_allclose(value(acc), 2 * 3 * x0 ** 2, rtol=1e-6)
    # closed over and passed: one ref, the closure sees the argument's writes
    c = kiln.new_ref(jnp.float32(3))

    def both(r):
        r[...] = r[...] * 2
        return c[...] ** 2
    y, both_vjp = kiln.vjp(both, c)
    acc = kiln.new_ref(jnp.float32(0))
    both_vjp.with_refs(acc)(jnp.float32(1))
    assert float(y) == 36.0 and float(c[...]) == 6.0 and float(acc[...]) == 2 * 6.0 * 2


def test_a_ref_owns_its_buffer_and_jit_updates_it_in_place():
    """As JAX's refs: a jitted function updates a ref it is passed or closes over in place (the buffer is donated:
    its address stays), so a ref shares its buffer with no array: new_ref, reading and writing the whole value
    copy, and the arrays involved stay valid and unchanged."""
    x = jnp.arange(3.0)
    r = kiln.new_ref(x)
    before = r[...]
    address = r.unsafe_buffer_pointer()
    inc = kiln.jit(lambda q: q.__setitem__(..., q[...] + 1))
    repr(r)  # (a cached host view must not stop the donation)
    inc(r)
    inc(r)
    assert r.unsafe_buffer_pointer() == address
    np.testing.assert_array_equal(value(r), [2, 3, 4])
    np.testing.assert_array_equal(x, [0, 1, 2])
    np.testing.assert_array_equal(before, [0, 1, 2])
    a = jnp.ones(3)
    r[...] = a
    inc(r)
    np.testing.assert_array_equal(a, [1, 1, 1])
    np.testing.assert_array_equal(value(r), [2, 2, 2])
    frozen = kiln.freeze(r)
    np.testing.assert_array_equal(frozen, [2, 2, 2])
    c = kiln.new_ref(jnp.arange(3.0))
    address = c.unsafe_buffer_pointer()
    double = kiln.jit(lambda: c.__setitem__(..., c[...] * 2))
    double()
    double()
    assert c.unsafe_buffer_pointer() == address
    np.testing.assert_array_equal(value(c), [0, 4, 8])
    read_only = kiln.new_ref(jnp.arange(3.0))
    add = kiln.jit(lambda v: v + read_only[...])
    np.testing.assert_array_equal(add(1.0), [1, 2, 3])
    np.testing.assert_array_equal(add(1.0), [1, 2, 3])  # not donated: a read leaves the buffer alone
    np.testing.assert_array_equal(value(read_only), [0, 1, 2])


def test_a_compiled_function_writes_the_refs_it_closes_over():
    """jit(f).lower().compile(): the program's writes to a ref f closes over go back into the ref (before, the call
    returned the ref's final value among the outputs and left the ref as it was), updated in place."""
    c = kiln.new_ref(jnp.arange(3.0))
    f = kiln.jit(lambda x: (c.__setitem__(..., c[...] + x), x * 2)[1])
    compiled = f.lower(1.0).compile()
    address = c.unsafe_buffer_pointer()
    assert float(compiled(1.0)) == 2.0
    assert float(compiled(2.0)) == 4.0
    np.testing.assert_array_equal(value(c), [3, 4, 5])
    assert c.unsafe_buffer_pointer() == address
    f(1.0)
    np.testing.assert_array_equal(value(c), [4, 5, 6])


def test_arrays_a_transformation_writes_into_a_ref_survive_its_in_place_updates():
    """A transformation that evaluates its trace and writes back what the function wrote to a ref can hand the ref
    an array its caller holds (``r[...] = a`` under grad gives the ref ``a`` itself); jit copies such a value once
    before it donates the ref's buffer, so ``a`` stays valid and unchanged."""
    writes = {"grad": lambda r, a: kiln.grad(lambda x: (r.__setitem__(..., a), x)[1])(1.0),
              "jvp": lambda r, a: kiln.jvp(lambda x: (r.__setitem__(..., a), x)[1], (1.0,), (1.0,)),
              "vjp": lambda r, a: kiln.vjp(lambda x: (r.__setitem__(..., a), x)[1], 1.0),
              "vjp of the ref": lambda r, a: kiln.vjp(lambda q: (q.__setitem__(..., a), 1.0)[1], r),
              "checkpoint": lambda r, a: kiln.checkpoint(lambda x: (r.__setitem__(..., a), x)[1])(1.0),
              "fori_loop": lambda r, a: lax.fori_loop(0, 2, lambda i, c: (r.__setitem__(..., a), c)[1], 0.0)}
    inc = kiln.jit(lambda q: q.__setitem__(..., q[...] + 1))
    for name, write in writes.items():
        a, r = jnp.ones(3), kiln.new_ref(jnp.zeros(3))
        write(r, a)
        inc(r)  # a ref argument: donated
        np.testing.assert_array_equal(a, [1, 1, 1], err_msg=name)
        np.testing.assert_array_equal(value(r), [2, 2, 2], err_msg=name)
        a, c = jnp.ones(3), kiln.new_ref(jnp.zeros(3))
        write(c, a)
        kiln.jit(lambda: c.__setitem__(..., c[...] + 1))()  # a closed-over ref it writes: donated
        np.testing.assert_array_equal(a, [1, 1, 1], err_msg=name)
        np.testing.assert_array_equal(value(c), [2, 2, 2], err_msg=name)
