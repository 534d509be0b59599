"""kiln.shard_map on a (4, 2) mesh of CPU devices: collectives against NumPy on the blocks, output layouts,
the StableHLO (Shardy's manual computation), grad against the unsharded computation, vmap against a Python
loop, and the error paths."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.sharding import NamedSharding, PartitionSpec

P = PartitionSpec



def _x(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7 - 3


def _blocks(x, rows=4, cols=2):
    """x's blocks on the (data, model) grid: blocks[i][j] is device (i, j)'s."""
    return [np.split(r, cols, axis=1) for r in np.split(x, rows, axis=0)]


def test_collectives_over_each_axis_against_numpy(mesh):
    x = _x(8, 6)
    b = _blocks(x)

    def body(v):
        return (lax.psum(v, "data"), lax.psum(v, ("data", "model")), lax.pmean(v, "model"), lax.pmax(v, "data"),
                lax.pmin(v, "model"))
    specs = P("data", "model")
    outs = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=specs,
                                   out_specs=(P(None, "model"), P(), P("data"), P(None, "model"), P("data"))))(x)
    col = [sum(b[i][j] for i in range(4)) for j in range(2)]
    np.testing.assert_allclose(np.asarray(outs[0]), np.concatenate(col, axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(outs[1]), sum(col), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(outs[2]), np.concatenate([(r[0] + r[1]) / 2 for r in b], axis=0), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(outs[3]),
                                  np.concatenate([np.max([b[i][j] for i in range(4)], 0) for j in range(2)], axis=1))
    np.testing.assert_array_equal(np.asarray(outs[4]), np.concatenate([np.minimum(*r) for r in b], axis=0))
    assert outs[0].sharding == NamedSharding(mesh, P(None, "model")) and outs[1].sharding.spec is P()


def test_all_gather_and_axis_index(mesh):
    x = _x(8, 4)
    f = kiln.jit(kiln.shard_map(
        lambda v: (lax.all_gather(v, "data", tiled=True), lax.all_gather(v, "model", axis=1),
                   v * 0 + lax.axis_index("data") * 10 + lax.axis_index("model"),
                   knp.zeros((1,), np.int32) + lax.axis_index(("data", "model"))),
        mesh=mesh, in_specs=P("data", "model"), out_specs=(P(None, "model"), P("data"), P("data", "model"),
                                                           P(("data", "model"))),
        check_vma=False))  # all_gather's result still counts as varying along its axis (as JAX's)
    tiled, stacked, idx, flat = f(x)
    np.testing.assert_array_equal(np.asarray(tiled), x)  # gathering every block along data gives each column back
    b = _blocks(x)
    np.testing.assert_array_equal(np.asarray(stacked), np.concatenate([np.stack(r, axis=1) for r in b], axis=0))
    np.testing.assert_array_equal(np.asarray(idx), np.repeat(np.repeat(np.arange(4)[:, None] * 10 + np.arange(2), 2, 0),
                                                             2, 1))
    np.testing.assert_array_equal(np.asarray(flat), np.arange(8))  # data-major, as JAX numbers them


def test_stablehlo_is_a_manual_computation_with_explicit_collectives(mesh):
    f = kiln.jit(kiln.shard_map(lambda v: lax.psum(v.sum(), "data"), mesh=mesh, in_specs=P("data", "model"),
                                out_specs=P()))
    with pytest.raises(ValueError, match="may differ along \\['model'\\]"):  # summed over data only
        f.lower(_x(8, 4))
    f = kiln.jit(kiln.shard_map(lambda v: lax.psum(v.sum(), "data"), mesh=mesh, in_specs=P("data"), out_specs=P()))
    text = f.lower(_x(8, 4)).as_text()
    assert "sdy.manual_computation" in text and 'manual_axes={"data", "model"}' in text
    assert "stablehlo.all_reduce" in text and "replica_groups = dense<[[0, 2, 4, 6], [1, 3, 5, 7]]>" in text
    # The argument a shard_map takes directly arrives in blocks: no full copy on each device.
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>' in text
    np.testing.assert_allclose(float(f(_x(8, 4))), _x(8, 4).sum(), rtol=1e-5)


def test_eager_call_pytrees_and_static_leaves(mesh):
    x = {"a": _x(8, 2), "b": _x(4)}

    def body(tree, scale):
        return {"s": lax.psum(tree["a"].sum() * scale, ("data", "model")), "b": tree["b"] + scale}
    f = kiln.shard_map(body, mesh=mesh, in_specs=({"a": P("data", "model"), "b": P()}, None),
                       out_specs={"s": P(), "b": P()})
    out = f(x, 3.0)  # not under jit: runs as one program over the mesh all the same
    np.testing.assert_allclose(float(out["s"]), x["a"].sum() * 3, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out["b"]), x["b"] + 3)
    with mesh:  # the mesh from the context
        g = kiln.shard_map(lambda v: lax.psum(v, "data"), in_specs=P("data"), out_specs=P())
        np.testing.assert_allclose(np.asarray(g(_x(8))), _x(8).reshape(4, 2).sum(0), rtol=1e-6)


def test_grad_equals_the_unsharded_computation(mesh):
    x, w = _x(16, 4) / 10, np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)

    def loss_sharded(w, x):
        def local(w, xb):
            return lax.pmean(knp.mean(knp.tanh(xb @ w) ** 2), ("data", "model"))
        return kiln.shard_map(local, mesh=mesh, in_specs=(P(), P(("data", "model"))), out_specs=P())(w, x)

    def loss(w, x):
        return knp.mean(knp.tanh(x @ w) ** 2)
    g_ref = kiln.grad(loss)(w, x)
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(loss_sharded))(w, x)), np.asarray(g_ref), rtol=2e-5,
                               atol=1e-7)
    np.testing.assert_allclose(np.asarray(kiln.grad(loss_sharded)(w, x)), np.asarray(g_ref), rtol=2e-5, atol=1e-7)
    # The gradient with respect to the sharded argument too (a varying input: no psum of its cotangent).
    gx = kiln.jit(kiln.grad(loss_sharded, argnums=1))(w, x)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(kiln.grad(loss, argnums=1)(w, x)), rtol=2e-5, atol=1e-8)


def test_grad_through_each_linear_collective(mesh):
    x = _x(8, 4) / 5
    # all_gather's and psum's transposes; an output replicated over "model" counts once.
    def f(x):
        def local(v):
            g = lax.all_gather(v, "data", tiled=True)         # every device sees the whole column block
            return lax.psum((g * g).sum(), "model") + lax.psum(v.sum(), ("data", "model"))
        return kiln.shard_map(local, mesh=mesh, in_specs=P("data", "model"), out_specs=P(),
                              check_vma=False)(x)
    np.testing.assert_allclose(float(kiln.jit(f)(x)), (x * x).sum() + x.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(f))(x)), 2 * x + 1, rtol=1e-5)


def test_check_vma_false_takes_the_first_device_and_its_derivative(mesh):
    x = _x(8)
    f = kiln.shard_map(lambda v: v.sum(keepdims=True), mesh=mesh, in_specs=P("data"), out_specs=P(), check_vma=False)
    np.testing.assert_allclose(np.asarray(f(x)), x[:2].sum(keepdims=True), rtol=1e-6)
    g = kiln.grad(lambda x: f(x)[0])(x)
    np.testing.assert_array_equal(np.asarray(g), np.r_[np.ones(2), np.zeros(6)].astype(np.float32))


def test_vmap_of_shard_map_and_vmap_inside(mesh):
    xs = _x(3, 8, 4)
    f = kiln.shard_map(lambda v, c: lax.psum(v * c, "data"), mesh=mesh, in_specs=(P("data"), P()),
                       out_specs=P(None))
    out = kiln.vmap(f, in_axes=(0, None))(xs, np.float32(2))
    ref = np.stack([2 * x.reshape(4, 2, 4).sum(0) for x in xs])
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5)
    out = kiln.vmap(f, in_axes=(1, None), out_axes=1)(np.moveaxis(xs, 0, 1), np.float32(2))
    np.testing.assert_allclose(np.asarray(out), np.moveaxis(ref, 0, 1), rtol=1e-5)

    # vmap with its own axis name inside the body: collectives over the vmap axis and a mesh axis together.
    def body(v):  # v: (2, 4) block of rows
        return kiln.vmap(lambda r: lax.psum(r, "rows") + lax.psum(r, "data"), axis_name="rows")(v)
    g = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"),
                                check_vma=False))
    x = _x(8, 4)
    blocks = x.reshape(4, 2, 2, 2)  # (data, rows, model, cols)
    ref = blocks.sum(1, keepdims=True) + blocks.sum(0, keepdims=True)
    np.testing.assert_allclose(np.asarray(g(x)), ref.reshape(8, 4), rtol=1e-5)


def test_scan_inside_shard_map_and_committed_inputs(mesh):
    x = kiln.device_put(_x(8, 4), NamedSharding(mesh, P(None, "model")))  # laid out otherwise: resharded

    def body(v):
        def step(c, _):
            return c + lax.psum(v.sum(), "data"), None
        return lax.scan(step, knp.zeros((1,)), None, length=3)[0]
    out = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("model")))(x)
    cols = _x(8, 4).reshape(8, 2, 2).sum((0, 2))
    np.testing.assert_allclose(np.asarray(out), 3 * cols, rtol=1e-5)


def test_spec_errors(mesh):
    x = _x(8, 4)
    sm = kiln.shard_map
    with pytest.raises(ValueError, match="names mesh axis 'rows', which the mesh does not have"):
        sm(lambda v: v, mesh=mesh, in_specs=P("rows"), out_specs=P("rows"))(x)
    with pytest.raises(ValueError, match="splits dimension 1 of f32\\[8,4\\] into 8 blocks, but 8 does not divide 4"):
        sm(lambda v: v, mesh=mesh, in_specs=P(None, ("data", "model")), out_specs=P())(x)
    with pytest.raises(ValueError, match="has 3 entries, but the value is f32\\[8,4\\] with 2 dimensions"):
        sm(lambda v: v, mesh=mesh, in_specs=P("data", None, None), out_specs=P())(x)
    with pytest.raises(ValueError, match="uses mesh axis 'data' more than once"):
        sm(lambda v: v, mesh=mesh, in_specs=P("data", "data"), out_specs=P())(x)
    with pytest.raises(ValueError, match="in_specs must be a PartitionSpec or a pytree prefix"):
        sm(lambda a, b: a, mesh=mesh, in_specs=(P(), P(), P()), out_specs=P())(x, x)
    with pytest.raises(ValueError, match="out_specs has None for output;"):
        sm(lambda v: v, mesh=mesh, in_specs=P(), out_specs=None)(x)
    with pytest.raises(ValueError, match="no mesh: pass mesh="):
        sm(lambda v: v, in_specs=P(), out_specs=P())(x)
    with pytest.raises(NotImplementedError, match="manual over all of the mesh's axes"):
        sm(lambda v: v, mesh=mesh, in_specs=P(), out_specs=P(), axis_names={"data"})(x)
    with pytest.raises(NameError, match="unbound axis name 'rows'"):
        sm(lambda v: lax.psum(v, "rows"), mesh=mesh, in_specs=P(), out_specs=P())(x)


def test_replication_check_names_the_output_and_the_axes(mesh):
    x = _x(8, 4)
    f = kiln.shard_map(lambda v: (lax.psum(v, "data"), v.sum(0) + lax.axis_index("model")), mesh=mesh,
                       in_specs=P("data"), out_specs=(P(), P("data")))
    with pytest.raises(ValueError) as info:
        f(x)
    msg = str(info.value)
    assert "output[1]: out_specs entry P('data',) promises the value is the same along mesh axes ['model']" in msg
    assert "output[0]" not in msg and "check_vma=False" in msg
    # A collective inside a jitted helper is seen through.
    ok = kiln.shard_map(lambda v: kiln.jit(lambda u: lax.psum(u, "data"))(v), mesh=mesh, in_specs=P("data"),
                        out_specs=P())
    np.testing.assert_allclose(np.asarray(ok(x)), x.reshape(4, 2, 4).sum(0), rtol=1e-6)


def test_nested_shard_map_is_a_clear_error(mesh):
    inner = kiln.shard_map(lambda v: v, mesh=mesh, in_specs=P(), out_specs=P())
    outer = kiln.shard_map(lambda v: inner(v), mesh=mesh, in_specs=P(), out_specs=P())
    with pytest.raises(Exception, match="a shard_map inside another shard_map is not supported"):
        outer(_x(8))


def test_inputs_on_another_mesh(mesh):
    # Another mesh of the same devices: the program runs over the shard_map's mesh, the input is re-laid out.
    other = kiln.make_mesh((8,), ("rows",))
    x = kiln.device_put(_x(8), NamedSharding(other, P("rows")))
    f = kiln.jit(kiln.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("data"), out_specs=P("data")))
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * _x(8))
    # Other devices: a clear error.
    half = kiln.sharding.Mesh(np.array(kiln.devices()[:4]), ("data",))
    y = kiln.device_put(_x(8), NamedSharding(half, P("data")))
    with pytest.raises(Exception, match="cannot run in a program over the mesh \\{'data': 4\\}"):
        f(y)


def test_exchanges_against_numpy(mesh):
    x = _x(8, 8)
    b = _blocks(x)  # b[i][j]: (2, 4) block of device (data i, model j)
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]

    def body(v):
        return (lax.ppermute(v, "data", perm), lax.ppermute(v, "data", [(0, 2)]),
                lax.all_to_all(v, "model", 1, 0, tiled=True), lax.psum_scatter(v, "data", scatter_dimension=1,
                                                                                 tiled=True),
                lax.pbroadcast(v, "data", 2), v * 0 + lax.axis_size("data") * 10 + lax.axis_size(("data", "model")))
    f = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"),
                                check_vma=False))
    shifted, sparse, a2a, scattered, bcast, sizes = [np.asarray(o) for o in f(x)]
    grid = lambda blocks: np.concatenate([np.concatenate(r, axis=1) for r in blocks], axis=0)  # noqa: E731
    zero = np.zeros_like(b[0][0])
    np.testing.assert_array_equal(shifted, grid([b[(i - 1) % 4] for i in range(4)]))
    np.testing.assert_array_equal(sparse, grid([b[0] if i == 2 else [zero, zero] for i in range(4)]))
    # all_to_all over model, tiled: device (i, j) splits its columns in 2, sends piece k to (i, k), stacks rows.
    want = [[np.concatenate([np.split(b[i][src], 2, axis=1)[j] for src in range(2)], axis=0) for j in range(2)]
            for i in range(4)]
    np.testing.assert_array_equal(a2a, np.concatenate([np.concatenate(r, axis=1) for r in want], axis=0))
    total = [sum(b[i][j] for i in range(4)) for j in range(2)]  # psum over data, per model column
    want = [[np.split(total[j], 4, axis=1)[i] for j in range(2)] for i in range(4)]
    np.testing.assert_allclose(scattered, np.concatenate([np.concatenate(r, axis=1) for r in want], axis=0),
                               rtol=1e-5)
    np.testing.assert_array_equal(bcast, grid([b[2] for _ in range(4)]))
    np.testing.assert_array_equal(sizes, np.full((8, 8), 48.0))
    text = f.lower(x).as_text()
    for name in ("collective_permute", "all_to_all", "reduce_scatter"):
        assert f"stablehlo.{name}" in text


def test_untiled_all_to_all_and_psum_scatter(mesh):
    x = _x(4, 8, 3)  # rows over data: each device's block is (1, 8, 3)

    def body(v):
        w = v[0, :4]                                              # (4, 3): split axis 0 has the data axis' size
        return (lax.all_to_all(w, "data", 0, 1)[None],            # (1, 3, 4): element k of device i -> device k
                lax.psum_scatter(w, "data", scatter_dimension=0)[None, None])   # (1, 1, 3)
    f = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=(P("data"), P("data")),
                                check_vma=False))
    a2a, scat = (np.asarray(o) for o in f(x))
    w = x[:, :4]  # w[i]: device i's (4, 3)
    np.testing.assert_array_equal(a2a, np.stack([np.stack([w[src, i] for src in range(4)], axis=1)
                                                 for i in range(4)]))
    np.testing.assert_allclose(scat[:, 0], w.sum(0), rtol=1e-5)


def test_grad_of_the_exchanges(mesh):
    x = _x(8, 8) / 10
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]

    def f(x):
        def local(v):
            y = lax.ppermute(v, "data", perm) * v
            z = lax.all_to_all(v, "model", 1, 0, tiled=True)
            s = lax.psum_scatter(v * v, "data", scatter_dimension=1, tiled=True)
            return lax.psum((y * y).sum() + (z ** 3).sum() + s.sum(), ("data", "model"))
        return kiln.shard_map(local, mesh=mesh, in_specs=P("data", "model"), out_specs=P())(x)
    rolled = np.roll(x, 2, axis=0)  # the block above (data - 1) sits 2 rows up
    np.testing.assert_allclose(float(kiln.jit(f)(x)), ((rolled * x) ** 2).sum() + (x ** 3).sum() + (x * x).sum(),
                               rtol=1e-5)
    # d/dx of sum((r(x) x)^2) = 2 x r(x)^2 + r^-1(2 r(x) x^2); the permutation's transpose is its inverse.
    want = 2 * x * rolled ** 2 + np.roll(2 * rolled * x * x, -2, axis=0) + 3 * x ** 2 + 2 * x
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(f))(x)), want, rtol=1e-4, atol=1e-6)


def test_typeof_inside_the_body_shows_the_varying_axes(mesh):
    seen = {}

    def body(v, w):
        seen["v"], seen["w"] = kiln.typeof(v), kiln.typeof(w)
        s = lax.psum(v, "model")
        seen["s"] = kiln.typeof(s)
        seen["i"] = kiln.typeof(w + lax.axis_index("model"))
        seen["loop"] = kiln.typeof(lax.fori_loop(0, 2, lambda i, c: c + lax.psum(v, "data"), w[:2]))
        return s
    kiln.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P()), out_specs=P("data"))(_x(8, 4), _x(4, 2))
    assert str(seen["v"]) == "float32[2,2]{V:(data,model)}"
    assert repr(seen["v"]) == "ShapedArray(float32[2,2]{V:(data,model)})"
    assert seen["s"].manual_axis_type.varying == {"data"} and str(seen["s"]) == "float32[2,2]{V:data}"
    assert str(seen["w"]) == "float32[4,2]" and seen["w"].manual_axis_type.varying == frozenset()
    assert seen["i"].manual_axis_type.varying == {"model"}
    assert seen["loop"].manual_axis_type.varying == {"model"}  # the carry takes psum over data of a model block
    assert seen["v"] == kiln.ShapedArray((2, 2), np.float32)  # still equal to the plain type


def test_pcast_to_varying_marks_the_type_and_keeps_the_values(mesh):
    """JAX's shard_map notebook: pcast(x, 'i', to='varying') of a replicated value types it f32[6]{V:i}; the values
    and the derivative are those of the identity (the replicated input's cotangent summed over the devices)."""
    seen = {}

    def body(w):
        y = lax.pcast(w, "model", to="varying")
        seen["w"], seen["y"] = kiln.typeof(w), kiln.typeof(y)
        seen["both"] = kiln.typeof(lax.pcast(y, ("data", "model"), to="varying"))
        return y * 2
    f = kiln.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P(None, "model"))
    w = _x(4, 2)
    np.testing.assert_array_equal(np.asarray(f(w)), np.tile(w * 2, (1, 2)))
    assert str(seen["w"]) == "float32[4,2]" and str(seen["y"]) == "float32[4,2]{V:model}"
    assert seen["both"].manual_axis_type.varying == {"data", "model"}
    np.testing.assert_array_equal(np.asarray(kiln.grad(lambda v: f(v).sum())(w)), np.full((4, 2), 4.0))  # 2 x 2 devices
    # now varying: out_specs P() would promise that it is replicated
    with pytest.raises(ValueError, match=r"the same along mesh axes \['data', 'model'\], but it may differ along"):
        kiln.shard_map(lambda v: lax.pcast(v, "model", to="varying"), mesh=mesh, in_specs=P(), out_specs=P())(w)


def test_all_gather_varies_and_all_gather_to_invarying_does_not(mesh):
    """As JAX's types (JEP 17111): all_gather's result varies along the gathered axis, even of a replicated value;
    all_gather(..., to='invarying') (JAX's all_gather_invariant) is the same on every device, so out_specs may leave
    the axis out. The values and the transpose (psum_scatter of the cotangents) are NumPy's."""
    seen = {}

    def body(v, w):
        seen["v"], seen["w"] = kiln.typeof(lax.all_gather(v, "data")), kiln.typeof(lax.all_gather(w, "data"))
        inv = lax.all_gather(v, "data", tiled=True, to="invarying")
        seen["inv"] = kiln.typeof(inv)
        return inv
    x, w = _x(8, 4), _x(4,)
    f = kiln.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P()), out_specs=P(None, "model"))
    np.testing.assert_array_equal(np.asarray(f(x, w)), x)
    assert str(seen["v"]) == "float32[4,2,2]{V:(data,model)}" and str(seen["w"]) == "float32[4,4]{V:data}"
    assert str(seen["inv"]) == "float32[8,2]{V:model}"
    ct = _x(8, 4) * 3
    (dx,) = kiln.linear_transpose(lambda v: f(v, w), x)(ct)
    np.testing.assert_allclose(np.asarray(dx), ct, rtol=1e-6)  # each block's slice of the cotangent, once
    with pytest.raises(ValueError, match=r"mesh axes \['data', 'model'\], but it may differ along \['data'\]"):
        kiln.shard_map(lambda v: lax.all_gather(v, "data"), mesh=mesh, in_specs=P(), out_specs=P())(w)
    with pytest.raises(ValueError, match=r"to='sideways' is not one of 'varying', 'invarying'"):
        kiln.shard_map(lambda v: lax.all_gather(v, "data", to="sideways"), mesh=mesh, in_specs=P(), out_specs=P())(w)
    with pytest.raises(NotImplementedError, match=r"to='reduced' needs reduced axes in the types"):
        kiln.shard_map(lambda v: lax.all_gather(v, "data", to="reduced"), mesh=mesh, in_specs=P(), out_specs=P())(w)


def test_pmean_sums_once(mesh):
    # the axis size is static (as JAX's psum(1, axis)): one collective, for the sum
    f = kiln.shard_map(lambda v: lax.pmean(v, ("data", "model")), mesh=mesh, in_specs=P("data", "model"),
                       out_specs=P())
    x = _x(8, 4)
    np.testing.assert_allclose(np.asarray(f(x)), np.mean(_blocks(x), axis=(0, 1)), rtol=1e-6)
    body = kiln.make_jaxpr(f)(x).jaxpr.eqns[0].params["body"].ir
    assert [e.prim.name for e in body.eqns].count("psum") == 1


def test_in_specs_default_to_the_arguments_layouts(mesh):
    x = kiln.device_put(_x(8, 4), NamedSharding(mesh, P("data", "model")))
    w = np.float32(3)  # a host value: replicated

    def total(x, w):
        return kiln.shard_map(lambda b, c: lax.psum(b.sum() * c, ("data", "model")), mesh=mesh, out_specs=P())(x, w)
    np.testing.assert_allclose(float(total(x, w)), 3 * _x(8, 4).sum(), rtol=1e-5)          # eager
    np.testing.assert_allclose(float(kiln.jit(total)(x, w)), 3 * _x(8, 4).sum(), rtol=1e-5)  # jit arguments
    g = kiln.jit(kiln.grad(total))(x, w)                                                     # through grad
    np.testing.assert_allclose(np.asarray(g), np.full((8, 4), 3.0), rtol=1e-6)
    with pytest.raises(ValueError, match="cannot infer the in_specs entry for argument leaf 0: it is a value "
                                         "computed inside the trace"):
        kiln.jit(lambda x: total(x * 2, w))(x)
    other = kiln.device_put(_x(8), NamedSharding(kiln.make_mesh((8,), ("rows",)), P("rows")))
    with pytest.raises(ValueError, match="is laid out over .* not over the shard_map's mesh"):
        kiln.shard_map(lambda b: b, mesh=mesh, out_specs=P())(other)


def test_eager_results_carry_the_stated_out_specs(mesh):
    # As JAX's: the result's spec is the out_specs entry as written (P("data", None)), not the layout read back
    # from the partitioner, which drops trailing Nones; the layout and the values are the same
    x = kiln.device_put(_x(8, 4), NamedSharding(mesh, P(None, "data")))
    out = kiln.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P(None, "data"), out_specs=P(None, "data"))(x)
    assert out.sharding.spec == P(None, "data")
    rows = kiln.shard_map(lambda a: lax.psum_scatter(a, "data", tiled=True), mesh=mesh, in_specs=P(None, "data"),
                          out_specs=P("data", None))(x)
    assert rows.sharding.spec == P("data", None) and rows.sharding == NamedSharding(mesh, P("data", None))
    np.testing.assert_allclose(np.asarray(out), _x(8, 4) * 2)
    assert rows.sharding.is_equivalent_to(NamedSharding(mesh, P("data")), 2)
