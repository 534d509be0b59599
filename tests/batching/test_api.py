"""kiln.vmap's interface: the seed's examples, in_axes/out_axes as ints, None and pytree prefixes,
keyword arguments, axis_size, nested vmaps, composites of kiln.numpy, and every error message."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# -- the seed (003) ------------------------------------------------------------------------------------

def test_seed_dot_with_unmapped_weights():
    f = lambda x, w: knp.dot(w, x)
    x_batch, w = randn(4, 5, 3), randn(100, 5)
    out = kiln.vmap(f, in_axes=(0, None), out_axes=0)(x_batch, w)
    assert out.shape == (4, 100, 3)
    np.testing.assert_allclose(np.asarray(out), np.stack([w @ x for x in x_batch]), rtol=1e-5, atol=1e-5)


def test_seed_elementwise_product():
    x = np.array([[1, 2, 3], [0, 1, 2]], np.float32)
    y = np.array([[1, 2, 3], [0, 0, 0]], np.float32)
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda a, b: a * b)(x, y)), x * y)


def test_seed_inconsistent_sizes_lists_each_argument():
    x = np.ones((2, 3), np.float32)
    y = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"(?s)inconsistent sizes for array axes to be mapped:\n"
                                         r"  argument 0 has shape \(2, 3\) and axis 0 is to be mapped \(size 2\)\n"
                                         r"  argument 1 has shape \(4, 3\) and axis 0 is to be mapped \(size 4\)"):
        kiln.vmap(lambda a, b: a * b)(x, y)


# -- in_axes / out_axes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("in_axes,out_axes", [((0, 0), 0), ((1, None), 1), ((-1, 0), -1), ((None, 1), 0),
                                              ([0, -1], 1)])
def test_int_and_none_axes(in_axes, out_axes):
    a, b = randn(3, 4), randn(4, 3)
    f = lambda x, y: knp.sin(x) * 2.0 + y
    ax, bx = in_axes
    a_in = a if ax is None else np.moveaxis(np.stack([a, a + 1, a - 1]), 0, ax)
    b_in = b.T[0] if bx is None else np.moveaxis(np.stack([b.T[0], b.T[1], b.T[2]]), 0, bx)
    a_n = [a] * 3 if ax is None else [a, a + 1, a - 1]
    b_n = [b.T[0]] * 3 if bx is None else [b.T[0], b.T[1], b.T[2]]
    want = np.moveaxis(np.stack([np.sin(x) * 2 + y for x, y in zip(a_n, b_n)]), 0, out_axes)
    got = kiln.vmap(f, in_axes=in_axes, out_axes=out_axes)(a_in, b_in)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_in_axes_pytree_prefixes():
    params = {"w": randn(3, 4), "b": randn(5, 4)}  # w unmapped, b mapped over axis 0
    xs = (randn(5, 3), randn(3, 5))  # first mapped on axis 0, second on axis 1

    def f(p, x):
        return x[0] @ p["w"] + p["b"] + x[1].sum()

    got = kiln.vmap(f, in_axes=({"w": None, "b": 0}, (0, 1)))(params, xs)
    want = np.stack([xs[0][i] @ params["w"] + params["b"][i] + xs[1][:, i].sum() for i in range(5)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # A leaf of in_axes applies to the whole subtree below it.
    got = kiln.vmap(lambda p: p["w"] * p["b"], in_axes=({"w": 1, "b": 1},))({"w": randn(2, 6), "b": randn(2, 6)})
    assert got.shape == (6, 2)


def test_out_axes_pytree_prefixes():
    x = randn(4, 3)

    def f(v):
        return {"sum": v.sum(), "pair": (v * 2.0, knp.ones(2))}

    out = kiln.vmap(f, out_axes={"sum": 0, "pair": (1, None)})(x)
    np.testing.assert_allclose(np.asarray(out["sum"]), x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out["pair"][0]), (x * 2).T, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["pair"][1]), np.ones(2))  # unmapped output stays unmapped
    out = kiln.vmap(f, out_axes=-1)(x)
    assert out["pair"][0].shape == (3, 4) and out["pair"][1].shape == (2, 4) and out["sum"].shape == (4,)


def test_keyword_arguments_are_mapped_over_axis_0():
    x, scale = randn(4, 3), randn(4)
    f = lambda v, *, scale: v * scale
    got = kiln.vmap(f, in_axes=(1,))(x.T, scale=scale)
    np.testing.assert_allclose(np.asarray(got), x * scale[:, None], rtol=1e-6)
    got = kiln.vmap(lambda v, opts: v * opts["s"], in_axes=(None,))(x[0], opts={"s": scale})
    np.testing.assert_allclose(np.asarray(got), x[0] * scale[:, None], rtol=1e-6)


def test_axis_size_without_mapped_arguments():
    out = kiln.vmap(lambda c: c * 2.0, in_axes=None, axis_size=3)(np.float32(1.5))
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0, 3.0])
    out = kiln.vmap(lambda: knp.arange(2.0), in_axes=(), axis_size=2)()
    np.testing.assert_array_equal(np.asarray(out), [[0.0, 1.0], [0.0, 1.0]])


def test_unmapped_arguments_reach_the_function_as_they_are():
    """in_axes=None leaves are not traced (as in JAX): a Python int stays an int, so it can be a jit's static
    argument or a shape inside (JAX's examples/pca_from_scratch.py), and an array stays a concrete array."""
    seen = []

    def f(x, n, table):
        seen.append((type(n), type(table)))
        return x[:n] * table[0]

    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    table = knp.asarray(np.array([2.0, 5.0], np.float32))
    out = kiln.vmap(f, in_axes=(0, None, None))(x, 2, table)
    np.testing.assert_array_equal(out, x[:, :2] * 2.0)
    assert seen == [(int, type(table))]
    first_n = kiln.jit(lambda v, n: v[:n] * 3.0, static_argnames="n")
    np.testing.assert_array_equal(kiln.vmap(first_n, in_axes=(0, None))(x, 3), x[:, :3] * 3.0)
    np.testing.assert_array_equal(kiln.vmap(lambda n, v: v * n, in_axes=(None, 0))(1.5, x), x * 1.5)


def test_outputs_independent_of_the_batch_are_broadcast():
    out = kiln.vmap(lambda x: (x, knp.float32(7.0)))(randn(3))
    np.testing.assert_array_equal(np.asarray(out[1]), [7.0, 7.0, 7.0])


def test_nested_vmap_pairwise_distances():
    a, b = randn(5, 3), randn(4, 3)
    dist = lambda x, y: knp.sqrt(knp.sum((x - y) ** 2))
    pairwise = kiln.vmap(kiln.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))
    want = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(np.asarray(pairwise(a, b)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(pairwise)(a, b)), want, rtol=1e-5, atol=1e-6)
    # Inner and outer mapped over other axes, outputs placed last.
    other = kiln.vmap(kiln.vmap(dist, in_axes=(None, 1), out_axes=-1), in_axes=(1, None), out_axes=-1)
    np.testing.assert_allclose(np.asarray(other(a.T, b.T)), want.T, rtol=1e-5, atol=1e-6)


def test_vmap_inside_and_outside_jit():
    x, w = randn(6, 4), randn(4, 2)
    f = lambda v, w: knp.tanh(v @ w)
    want = np.tanh(x @ w)
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.vmap(f, in_axes=(0, None)))(x, w)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.vmap(kiln.jit(f), in_axes=(0, None))(x, w)), want, rtol=1e-5)
    text = kiln.jit(kiln.vmap(f, in_axes=(0, None))).lower(x, w).as_text()
    assert "stablehlo.while" not in text and "stablehlo.dot_general" in text



def test_batch_dimension_stays_in_place():
    """Mapped over axis 1, a chain of elementwise ops (with Python scalars), slices, concatenation, reductions,
    reshapes and broadcasts of operands batched alike keeps the batch dimension at 1: the batched IR has no
    transpose."""
    def f(m, w):
        r = knp.tanh(m * 2.0 + w)
        r = knp.concatenate([r, r[:, :1]], axis=1).reshape(3, 5)
        r = r - knp.max(r, axis=1, keepdims=True)
        return knp.exp(r) / knp.sum(knp.exp(r), axis=1, keepdims=True) + knp.where(r > 0, r, 0.0)

    x, w = randn(3, 6, 4), randn(3, 6, 4)
    batched = kiln.vmap(f, in_axes=(1, 1), out_axes=1)
    assert "transpose" not in {e.prim.name for e in kiln.make_ir(batched)(x, w).ir.eqns}
    np.testing.assert_allclose(np.asarray(batched(x, w)),
                               np.stack([np.asarray(f(x[:, i], w[:, i])) for i in range(6)], 1), rtol=1e-5, atol=1e-6)


def test_elementwise_batching_places_the_batch_dimension_as_jax():
    """An elementwise op whose operands are not batched alike (an unbatched array, batch dimensions that differ)
    moves every batch dimension to the front, as JAX's rule does (the transposes XLA sees decide how it fuses
    the program, and so its float bits); Python scalars do not count."""
    w, b, xs = randn(10, 16), randn(10), randn(8, 16)
    layer = kiln.vmap(lambda w, b, x: knp.dot(w, x) + b, in_axes=(None, None, 0))
    eqns = kiln.make_ir(layer)(w, b, xs).ir.eqns
    # the unbatched b: to a batch dimension of size 1, then widened (JAX's add broadcasts the size-1 dimension)
    assert [e.prim.name for e in eqns] == ["dot_general", "transpose", "broadcast_in_dim", "broadcast_in_dim", "add"]
    np.testing.assert_allclose(np.asarray(layer(w, b, xs)), xs @ w.T + b, rtol=1e-5, atol=1e-5)
    # batched at 1 alike, with a Python scalar: stays at 1
    ir = kiln.make_ir(kiln.vmap(lambda u, v: u * 2.0 + v, in_axes=1, out_axes=1))(randn(3, 5), randn(3, 5)).ir
    assert "transpose" not in [e.prim.name for e in ir.eqns]
    # batched at different dimensions: both go to the front
    u, v = randn(5, 3), randn(3, 5)
    both = kiln.vmap(lambda p, q: p - q, in_axes=(0, 1))
    assert kiln.make_ir(both)(u, v).ir.eqns[-1].outputs[0].aval.shape == (5, 3)
    np.testing.assert_allclose(np.asarray(both(u, v)), u - v.T, rtol=1e-6)

# -- composites of kiln.numpy against a loop ----------------------------------------------------------

def _at(v):
    return knp.asarray(v).at


def _softmax(v):
    e = knp.exp(v - knp.max(v, axis=-1, keepdims=True))
    return e / knp.sum(e, axis=-1, keepdims=True)


def _spd(n):
    a = randn(n, n)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


COMPOSITES = {
    "reductions": (lambda v: (knp.sum(v, 0), knp.mean(v), knp.max(v, 1), knp.argmin(v, 0), knp.std(v, 1),
                              knp.prod(v[:2], 0), knp.any(v > 1), knp.all(v > -3)), lambda: [randn(3, 4)]),
    "matmul-einsum": (lambda a, b: (a @ b, knp.einsum("ij,jk->ik", a, b), knp.einsum("ij,ij->i", a, a),
                                    knp.tensordot(a, b, 1), knp.outer(a[0], b[:, 0])),
                      lambda: [randn(2, 3), randn(3, 4)]),
    "indexing": (lambda v, i: (v[1], v[:, ::-2], v[i], v[..., i], knp.take(v, i, axis=1), v[i, [0, 2]],
                               knp.take_along_axis(v, knp.argsort(v, axis=1), axis=1)),
                 lambda: [randn(3, 4), np.int32(rng.integers(0, 3))]),
    "at": (lambda v, i, u: (_at(v)[i].set(u), _at(v)[:, i].add(1.0), _at(v)[i, 1:].multiply(u[1:]),
                            _at(v)[1].max(u), _at(v)[knp.array([0, 2, 0])].add(1.0)),
           lambda: [randn(3, 4), np.int32(rng.integers(0, 3)), randn(4)]),
    "sort-cumsum": (lambda v: (knp.sort(v, axis=0), knp.argsort(v, axis=-1), knp.cumsum(v, 1), knp.cumprod(v, 0),
                               kiln.lax.top_k(v, 2)), lambda: [randn(3, 4)]),
    "softmax": (lambda v: (_softmax(v), kiln.nn.softmax(v), kiln.nn.log_softmax(v, axis=0), kiln.nn.relu(v)),
                lambda: [randn(3, 4)]),
    "conv": (lambda x, k: kiln.lax.conv(x[None, None], k[None, None], (1,), "SAME")[0, 0],
             lambda: [randn(7), randn(3)]),
    "linalg": (lambda a, b: (knp.linalg.solve(a, b), knp.linalg.inv(a), knp.linalg.det(a), knp.linalg.cholesky(a),
                             knp.linalg.norm(a), knp.linalg.slogdet(a)[1]), lambda: [_spd(3), randn(3)]),
    "shape": (lambda v: (knp.concatenate([v, v * 2], axis=1), knp.stack([v, v], -1), v.T, v.reshape(-1),
                         knp.pad(v, 1), knp.roll(v, 1, axis=1), knp.tile(v, (1, 2)), knp.where(v > 0, v, 0.0),
                         knp.expand_dims(v, 0), knp.flip(v, 0)), lambda: [randn(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_functions(name, vm):
    f, gen = COMPOSITES[name]
    examples = [gen() for _ in range(3)]
    nargs = len(examples[0])
    tol = 1e-4 if name == "linalg" else 2e-5
    vm.check_vmap(f, examples, (0,) * nargs, 0, rtol=tol, atol=tol)
    vm.check_vmap(f, examples, (-1,) + (None,) * (nargs - 1), -1, rtol=tol, atol=tol)


def test_composites_under_jit(vm):
    """All composite functions in one jitted program, mapped over their last axis."""
    names = sorted(COMPOSITES)
    data = {n: [COMPOSITES[n][1]() for _ in range(3)] for n in names}
    axes = {n: (-1,) * len(data[n][0]) for n in names}

    @kiln.jit
    def everything(args):
        return {n: kiln.vmap(COMPOSITES[n][0], in_axes=axes[n])(*args[n]) for n in names}

    outs = everything({n: vm.stack_args(data[n], axes[n]) for n in names})
    for n in names:
        want = vm.loop_reference(COMPOSITES[n][0], data[n], axes[n], 0)
        tol = 1e-4 if n == "linalg" else 2e-5
        vm.assert_trees_close(outs[n], want, rtol=tol, atol=tol)


# -- errors -------------------------------------------------------------------------------------------

def f2(a, b):
    return a * b


def test_error_inconsistent_sizes_names_argument_paths():
    with pytest.raises(ValueError, match=r"(?s)argument 0\['b'\] has shape \(4, 3\) and axis 0 .*"
                                         r"argument 0\['w'\] has shape \(2, 3\) and axis 1 .*"
                                         r"keyword argument 'scale' has shape \(2,\)"):
        kiln.vmap(lambda d, scale: d["w"], in_axes=({"w": 1, "b": 0},))(
            {"w": np.ones((2, 3)), "b": np.ones((4, 3))}, scale=np.ones(2))
    with pytest.raises(ValueError, match=r"axis_size=5 was given"):
        kiln.vmap(f2, axis_size=5)(np.ones(3), np.ones(3))


def test_error_in_axes_structure():
    with pytest.raises(ValueError, match=r"in_axes has 3 entries but the function was called with 2 positional"):
        kiln.vmap(f2, in_axes=(0, 0, 0))(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"in_axes\[0\] = \{'a': 0\} is not a pytree prefix of argument 0: at the "
                                         r"top level, expected a dict, got a leaf of type ndarray"):
        kiln.vmap(f2, in_axes=({"a": 0}, 0))(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"in_axes\[0\] = \{'a': 0, 'b': 1\} is not a pytree prefix of argument 0: "
                                         r"at the top level, expected dict keys \['a', 'b'\], got \['a', 'c'\]"):
        kiln.vmap(lambda d: d["a"], in_axes=({"a": 0, "b": 1},))({"a": np.ones(2), "c": np.ones(2)})
    with pytest.raises(ValueError, match=r"in_axes entries must be ints or None, got 'x' at in_axes\[1\]\['k'\]"):
        kiln.vmap(f2, in_axes=(0, {"k": "x"}))(np.ones(2), {"k": np.ones(2)})
    with pytest.raises(ValueError, match=r"in_axes must be an int, None, or a tuple with one entry per positional "
                                         r"argument, got dict"):
        kiln.vmap(f2, in_axes={"a": 0})
    with pytest.raises(ValueError, match=r"out_axes = \{'x': 0\} is not a pytree prefix of the function's output: "
                                         r"at the top level, expected dict keys \['x'\], got \['x', 'y'\]"):
        kiln.vmap(lambda a: {"x": a, "y": a}, out_axes={"x": 0})(np.ones(2))


def test_error_axis_out_of_range():
    with pytest.raises(ValueError, match=r"in_axes=2 is out of range for argument 1 of shape \(2, 3\) \(rank 2\)"):
        kiln.vmap(f2, in_axes=(0, 2))(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"in_axes=-3 is out of range for argument 0\[1\] of shape \(2, 3\)"):
        kiln.vmap(lambda t: t[0] + t[1], in_axes=((0, -3),))((np.ones(2), np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"out_axes=3 is out of range for output\[1\], of rank 2"):
        kiln.vmap(lambda a: (a, a), out_axes=(0, 3))(np.ones((2, 3)))


def test_error_out_axes_none_on_a_batched_output():
    with pytest.raises(ValueError, match=r"out_axes is None for output\['y'\], but it depends on the mapped axis"):
        kiln.vmap(lambda a: {"x": a, "y": a * 2}, out_axes={"x": 0, "y": None})(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"out_axes is None for the output, but it depends on the mapped axis"):
        kiln.vmap(f2, out_axes=None)(np.ones(2), np.ones(2))
    # None is fine for an output that is the same for every batch element.
    out = kiln.vmap(lambda a, w: (a * w, w + 1.0), in_axes=(0, None), out_axes=(0, None))(np.ones((2, 3)), np.ones(3))
    assert out[1].shape == (3,)


def test_error_mapping_a_scalar():
    with pytest.raises(ValueError, match=r"cannot map over axis 0 of argument 1, a 0-d \(scalar\) value; use "
                                         r"in_axes=None for it"):
        kiln.vmap(f2)(np.ones(3), 2.0)
    with pytest.raises(ValueError, match=r"cannot map over axis 0 of keyword argument 'k', a 0-d"):
        kiln.vmap(lambda a, k: a * k)(np.ones(3), k=np.float32(2))


def test_error_nothing_mapped_without_axis_size():
    with pytest.raises(ValueError, match=r"no argument is mapped \(all in_axes are None\) and axis_size is not given"):
        kiln.vmap(f2, in_axes=None)(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"axis_size must be a non-negative int, got -1"):
        kiln.vmap(f2, axis_size=-1)


def test_vmap_error_is_a_kiln_error():
    with pytest.raises(kiln.KilnError):
        kiln.vmap(f2)(np.ones(2), np.ones(3))


def test_python_control_flow_on_values_computed_from_closed_over_arrays():
    # As JAX: what the function computes from concrete arrays it closes over (or is given unmapped) alone has a
    # value; the mapped argument's values do not (they differ between batch elements)
    table = knp.array([1.0, -2.0, 3.0])

    def f(x, scale):
        if table.sum() > 0 and scale > 1:
            return x * table[2] * scale
        return -x

    np.testing.assert_array_equal(kiln.vmap(f, in_axes=(0, None))(knp.ones(3), knp.array(2.0)), [6.0, 6.0, 6.0])
    with pytest.raises(kiln.TracerBoolConversionError, match=r"bool\(\) needs a concrete value"):
        kiln.vmap(lambda x: x if x.sum() > 0 else -x)(knp.ones((3, 2)))


def test_values_of_an_enclosing_grad_stay_traced_under_vmap():
    # y carries grad's derivative: a Python bool of it inside vmap would drop it, so it raises (JAX computes it
    # from the primal; kiln cannot tell such a value from a constant there)
    def outer(y):
        return kiln.vmap(lambda x: x * y if y > 0 else x)(knp.ones(2)).sum()
    with pytest.raises(kiln.TracerBoolConversionError):
        kiln.grad(outer)(2.0)


def test_unmapped_python_scalar_output_stays_a_python_scalar():
    # As JAX: with out_axes=None a Python scalar the function returns comes back as it is; with an axis it is
    # broadcast to an array.
    xs = kiln.numpy.arange(3.0)
    assert kiln.vmap(lambda x: 8.0, out_axes=None)(xs) == 8.0
    assert type(kiln.vmap(lambda x: 8.0, out_axes=None)(xs)) is float
    y, s, b = kiln.vmap(lambda x: (x * 2, 8, True), out_axes=(0, None, None))(xs)
    assert (type(s), s, type(b), b) == (int, 8, bool, True)
    np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda x: 8.0)(xs)), [8.0, 8.0, 8.0])
    # NumPy values too (kiln converted them to arrays)
    host, scalar = np.ones(3, np.float32), np.float32(2.5)
    h, sc = kiln.vmap(lambda x: (host, scalar), out_axes=None)(xs)
    assert h is host and sc is scalar
