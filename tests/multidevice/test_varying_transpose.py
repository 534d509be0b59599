"""Typed transposition in shard_map bodies that check varying axes (frontend/ad/varying_transpose.py), on the (4, 2)
mesh ("data", "model"): JAX's values for derivatives taken inside a body (a value the same on every device gets
the sum of the devices' cotangents; psum's cotangent is kept, not multiplied), the gradient of whole shard_maps
against NumPy, and the collectives the backward programs run. Bodies with check_vma=False keep the untyped
(per-device) answers, as JAX's do. Expected values are NumPy sums over the devices' blocks."""
from __future__ import annotations

import numpy as np
import pytest
from ported_pages import collectives as _collectives

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.sharding import PartitionSpec

P = PartitionSpec
RNG = np.random.default_rng(17111)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


# -- derivatives taken inside a body --------------------------------------------------------------------------------

def test_grad_of_a_replicated_value_inside_a_body_sums_over_the_devices(mesh):
    w, x = _f32(3), _f32(8, 3)  # w replicated, x's rows split over "data"

    def body(w, x):
        g = kiln.grad(lambda w: knp.sum(knp.tanh(x @ w)))(w)
        return g, lax.pmean(g, "data")
    g, g_mean = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P())))(w, x)
    x64 = x.astype(np.float64)
    want = ((1 - np.tanh(x64 @ w) ** 2)[:, None] * x64).sum(0)  # every block's rows: the sum over "data"
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-5, atol=1e-6)
    # the gradient is already the same on every device: pmean keeps it (JAX's numbers; not the per-device mean)
    np.testing.assert_allclose(np.asarray(g_mean), want, rtol=2e-5, atol=1e-6)


def test_without_check_vma_a_grad_inside_a_body_is_the_devices_own(mesh):
    w, x = _f32(3), _f32(8, 3)

    def body(w, x):
        return kiln.grad(lambda w: knp.sum(knp.tanh(x @ w)))(w)[None]
    g = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P("data"), check_vma=False)(w, x)
    x64 = x.astype(np.float64)
    per_row = (1 - np.tanh(x64 @ w) ** 2)[:, None] * x64
    want = per_row.reshape(4, 2, 3).sum(1)  # each device's two rows
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-5, atol=1e-6)


def test_grad_of_psum_inside_a_body_keeps_the_cotangent(mesh):
    x = _f32(8, 2)

    def body(v):
        return kiln.grad(lambda v: knp.sum(lax.psum(v, "data") * 3.0))(v)
    g = kiln.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))(x)
    np.testing.assert_array_equal(np.asarray(g), np.full((8, 2), 3.0, np.float32))  # JAX's: not 4 * 3


def test_vjp_inside_a_body_with_a_varying_cotangent(mesh):
    w, x, ct = _f32(2), _f32(8, 2), _f32(8, 2)

    def body(w, x, ct):
        y, pullback = kiln.vjp(lambda w: x * knp.sin(w), w)
        (gw,) = pullback(ct)
        return y, gw
    y, gw = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                           out_specs=(P("data"), P()))(w, x, ct)
    np.testing.assert_allclose(np.asarray(y), x * np.sin(w), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gw), (ct * x).sum(0) * np.cos(w), rtol=2e-5, atol=1e-6)


def test_grad_inside_a_body_through_a_scan_and_a_cond(mesh):
    """Loops and branches are transposed untyped inside; their replicated operands' cotangents are summed."""
    w, xs = _f32(2), _f32(8, 5, 2)

    def loss(w, xs):
        def step(c, x):
            c = lax.cond(knp.sum(x) > 0, lambda c: c * w + x, lambda c: c - x * w, c)
            return c, knp.sum(c)
        _, ys = lax.scan(step, knp.zeros(2), xs[0])
        return knp.sum(ys)

    def body(w, xs):
        return kiln.grad(loss)(w, xs)
    g = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(w, xs)
    eps = 1e-6
    per_example = []
    for e in range(8):  # the devices' blocks hold two examples; each device's loss reads its first
        if e % 2:
            continue
        x64 = xs[e].astype(np.float64)

        def f(w):
            c, total = np.zeros(2), 0.0
            for x in x64:
                c = c * w + x if x.sum() > 0 else c - x * w
                total += c.sum()
            return total
        per_example.append([(f(w + eps * d) - f(w - eps * d)) / (2 * eps) for d in np.eye(2)])
    np.testing.assert_allclose(np.asarray(g), np.sum(per_example, 0), rtol=1e-4, atol=1e-5)


# -- derivatives taken inside a loop, branch, jit, vmap or checkpoint within a body -----------------------------------
# The traces opened inside a body know the mesh axes their inputs vary along (core/varying.py nested_hints), so the
# derivatives taken there are typed too: a replicated parameter's gradient is the sum over the devices, as JAX's.

def _tanh_loss(w, x):
    return knp.sum(knp.tanh(x @ w))


def _tanh_loss_grad(w, x):
    """NumPy: the gradient of _tanh_loss, summed over the rows of ``x``."""
    x64 = x.astype(np.float64)
    return ((1 - np.tanh(x64 @ w) ** 2)[:, None] * x64).sum(0)


NESTED = {  # name: (the body (w, x block of 2 rows) -> the gradient, how many times it counts every row)
    "scan over microbatches": (lambda w, x: lax.scan(
        lambda acc, mb: (acc + kiln.grad(_tanh_loss)(w, mb[None]), None), knp.zeros_like(w), x)[0], 1),
    "jit": (lambda w, x: kiln.jit(kiln.grad(_tanh_loss))(w, x), 1),
    "cond": (lambda w, x: lax.cond(True, lambda w, x: kiln.grad(_tanh_loss)(w, x), lambda w, x: w, w, x), 1),
    "switch": (lambda w, x: lax.switch(1, [lambda w, x: w, lambda w, x: kiln.grad(_tanh_loss)(w, x)], w, x), 1),
    "fori_loop": (lambda w, x: lax.fori_loop(0, 2, lambda i, a: a + kiln.grad(_tanh_loss)(w, x),
                                             knp.zeros_like(w)), 2),
    "while_loop": (lambda w, x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + kiln.grad(_tanh_loss)(
        w, x)), (0, knp.zeros_like(w)))[1], 3),
    "vmap": (lambda w, x: kiln.vmap(kiln.grad(_tanh_loss), in_axes=(None, 0))(w, x[:, None]).sum(0), 1),
    "checkpoint": (lambda w, x: kiln.checkpoint(kiln.grad(_tanh_loss))(w, x), 1),
    "jit of a scan": (lambda w, x: kiln.jit(lambda w, x: lax.scan(
        lambda acc, mb: (acc + kiln.grad(_tanh_loss)(w, mb[None]), None), knp.zeros_like(w), x)[0])(w, x), 1),
}


@pytest.mark.parametrize("name", list(NESTED))
def test_grad_inside_a_nested_trace_of_a_body_sums_over_the_devices(mesh, name):
    body, times = NESTED[name]
    w, x = _f32(3), _f32(8, 3)
    # out_specs P(): check_vma accepts it only where the gradient is known to be the same on every device
    g = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P()))(w, x)
    np.testing.assert_allclose(np.asarray(g), times * _tanh_loss_grad(w, x), rtol=2e-5, atol=1e-5)


def test_without_check_vma_a_grad_inside_a_scan_is_the_devices_own(mesh):
    w, x = _f32(3), _f32(8, 3)
    body, _ = NESTED["scan over microbatches"]
    g = kiln.shard_map(lambda w, x: body(w, x)[None], mesh=mesh, in_specs=(P(), P("data")), out_specs=P("data"),
                       check_vma=False)(w, x)
    want = [_tanh_loss_grad(w, x[2 * d:2 * d + 2]) for d in range(4)]
    np.testing.assert_allclose(np.asarray(g), np.stack(want), rtol=2e-5, atol=1e-5)


def test_a_jitted_grad_called_outside_and_inside_bodies(mesh):
    """The jit's signatures are keyed by the varying axes too: its trace inside a body is not reused outside, nor
    in a body that does not check them."""
    w, x = _f32(3), _f32(8, 3)
    gfn = kiln.jit(kiln.grad(_tanh_loss))
    np.testing.assert_allclose(np.asarray(gfn(w, x[:2])), _tanh_loss_grad(w, x[:2]), rtol=2e-5, atol=1e-5)
    typed = kiln.shard_map(gfn, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(w, x)
    own = kiln.shard_map(lambda w, x: gfn(w, x)[None], mesh=mesh, in_specs=(P(), P("data")), out_specs=P("data"),
                         check_vma=False)(w, x)
    np.testing.assert_allclose(np.asarray(typed), _tanh_loss_grad(w, x), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(own), np.stack([_tanh_loss_grad(w, x[2 * d:2 * d + 2]) for d in range(4)]),
                               rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gfn(w, x[:2])), _tanh_loss_grad(w, x[:2]), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("loop", ["scan", "while_loop"])
def test_a_carry_that_an_iteration_makes_varying(mesh, loop):
    """The carry starts the same on every device and adds a device's row each step: the body is traced again with
    it varying, so the gradient taken with it is summed over the devices (JAX asks for a pcast on the init)."""
    w, x = _f32(3), _f32(8, 3)

    def step(c, g, row):  # the gradient reads the carry as it came in: the same on every device on the first step only
        return c + row, g + kiln.grad(lambda w: knp.sum(knp.tanh(c * w)))(w)

    def body(w, x):
        if loop == "scan":
            (_, g), _ = lax.scan(lambda cg, row: (step(*cg, row), None), (knp.zeros(3), knp.zeros(3)), x)
            return g
        return lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, *step(s[1], s[2], x[s[0]])),
                              (0, knp.zeros(3), knp.zeros(3)))[2]
    g = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(w, x)
    want = np.zeros(3)
    for d in range(4):
        c = np.zeros(3)
        for row in x[2 * d:2 * d + 2].astype(np.float64):
            want += (1 - np.tanh(c * w) ** 2) * c
            c = c + row
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-5, atol=1e-5)


def test_second_derivative_inside_a_body(mesh):
    """grad of a grad taken in the body: the inner gradient is already summed over the devices; the outer one sums
    the devices' second derivatives once (not once per device)."""
    w, x = _f32(3), _f32(8, 3)

    def body(w, x):
        return kiln.grad(lambda w: knp.sum(kiln.grad(_tanh_loss)(w, x)))(w)
    g = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(w, x)
    x64 = x.astype(np.float64)
    t = np.tanh(x64 @ w)
    want = ((-2 * t * (1 - t ** 2) * x64.sum(1))[:, None] * x64).sum(0)
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-5, atol=1e-5)


def test_typeof_inside_a_loop_body_within_a_shard_map(mesh):
    seen = {}

    def body(w, x):
        def step(c, row):
            seen.update(c=kiln.typeof(c), row=kiln.typeof(row), w=kiln.typeof(w), cw=kiln.typeof(c * row))
            return c, None
        return lax.scan(step, w, x)[0]
    kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(_f32(3), _f32(8, 3))
    assert str(seen["c"]) == str(seen["w"]) == "float32[3]"
    assert str(seen["row"]) == str(seen["cw"]) == "float32[3]{V:data}"


def test_a_while_loop_whose_predicate_varies(mesh):
    """Devices run different numbers of iterations: every carry varies along the predicate's axes inside the body."""
    seen = {}

    def body(x):
        def step(c):
            seen.update(i=kiln.typeof(c[0]), v=kiln.typeof(c[1]))
            return c[0] + 1, c[1] * 2.0
        return lax.while_loop(lambda c: c[0] <= lax.axis_index("data"), step, (knp.int32(0), knp.ones(())))[1][None]
    out = kiln.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(_f32(8))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0, 8.0, 16.0])  # device d runs d + 1 iterations
    assert str(seen["i"]) == "int32[]{V:data}" and str(seen["v"]) == "float32[]{V:data}"


# -- the gradient of a whole shard_map ------------------------------------------------------------------------------

def _data_parallel_loss(mesh):
    def body(w, b, x, y):
        pred = knp.tanh(x @ w + b)
        return lax.pmean(knp.mean((pred - y) ** 2), "data")
    return kiln.shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data"), P("data")), out_specs=P())


def test_data_parallel_gradient_against_numpy_and_its_collectives(mesh):
    w, b, x, y = _f32(3, 2), _f32(2), _f32(16, 3), _f32(16, 2)
    loss = _data_parallel_loss(mesh)
    gw, gb = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(w, b, x, y)
    x64 = x.astype(np.float64)
    pred = np.tanh(x64 @ w + b)
    d = 2 * (pred - y) * (1 - pred ** 2) / 32  # the mean over every element (4 blocks of 4 x 2)
    np.testing.assert_allclose(np.asarray(gw), x64.T @ d, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), d.sum(0), rtol=2e-5, atol=1e-6)
    # one psum forward, one per parameter backward (JAX's); the untyped transposition had one more
    assert _collectives(kiln.make_jaxpr(kiln.grad(loss, argnums=(0, 1)))(w, b, x, y)) == {"psum": 3}
    # the bias's cotangent is summed before it is broadcast to the rows: its psum is of 2 numbers, not 4 x 2
    text = str(kiln.make_jaxpr(kiln.grad(loss, argnums=1))(w, b, x, y))
    assert "psum[axis_name=('data',)] " in text and "f32[2] = psum" in text and "f32[4,2] = psum" not in text


def test_an_invariant_output_named_in_out_specs(mesh):
    """out_specs may split an output along an axis it does not vary along: the blocks are copies, and a
    replicated input's gradient sums every copy's cotangent."""
    w = _f32(4)
    f = kiln.shard_map(lambda w: knp.sin(w), mesh=mesh, in_specs=P(), out_specs=P("data"))
    ct = _f32(16)
    (g,) = kiln.vjp(f, w)[1](ct)
    np.testing.assert_allclose(np.asarray(f(w)), np.tile(np.sin(w), 4), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), ct.reshape(4, 4).sum(0) * np.cos(w), rtol=2e-5, atol=1e-6)


def test_an_output_of_a_loop_replicated_in_out_specs(mesh):
    """A loop's results count as varying in the typed transposition; one that out_specs says is replicated takes its
    cotangent on the first device (the untyped rule), so its gradient is not counted once per device."""
    w = _f32(3)

    def body(w, x):
        c, _ = lax.scan(lambda c, _: (c * w, None), knp.ones(3), None, length=3)
        return c, x * 2
    f = kiln.shard_map(body, mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P("data")))
    g = kiln.grad(lambda w: knp.sum(f(w, knp.ones(8))[0]))(w)
    np.testing.assert_allclose(np.asarray(g), 3 * w.astype(np.float64) ** 2, rtol=2e-5)


def test_per_example_gradients_through_a_shard_map_against_a_loop(mesh):
    """vmap of the typed backward program (its pvary and psum batched) against a Python loop."""
    w, xs = _f32(3, 2), _f32(5, 8, 3)
    f = kiln.shard_map(lambda w, x: lax.psum(knp.sum(knp.sin(x @ w)), "data"), mesh=mesh,
                       in_specs=(P(), P("data")), out_specs=P())
    batched = kiln.vmap(kiln.grad(f), in_axes=(None, 0))(w, xs)
    for e in range(5):
        np.testing.assert_allclose(np.asarray(batched[e]), np.asarray(kiln.grad(f)(w, xs[e])), rtol=1e-5, atol=1e-6)


def test_second_derivative_of_a_shard_map(mesh):
    w, x = _f32(3), _f32(8, 3)
    f = kiln.shard_map(lambda w, x: lax.psum(knp.sum(knp.sin(x @ w)), "data"), mesh=mesh,
                       in_specs=(P(), P("data")), out_specs=P())
    h = kiln.hessian(f)(w, x)
    x64 = x.astype(np.float64)
    want = -(np.sin(x64 @ w)[:, None, None] * x64[:, :, None] * x64[:, None, :]).sum(0)
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("check_vma", [True, False])
def test_grad_through_all_gather_invariant(mesh, check_vma):
    x = _f32(8)
    f = kiln.shard_map(lambda v: knp.sum(knp.sin(lax.all_gather(v, "data", tiled=True, to="invarying"))),
                       mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=check_vma)
    np.testing.assert_allclose(np.asarray(kiln.grad(f)(x)), np.cos(x), rtol=1e-6)
    comm = _collectives(kiln.make_jaxpr(kiln.grad(f))(x))
    # typed: the cotangent of the gathered value is one value, and each device slices its block out of it;
    # untyped: a psum_scatter, then a psum over "model" for the input replicated along it
    assert comm == ({"all_gather": 1} if check_vma else {"all_gather": 1, "psum_scatter": 1, "psum": 1})
