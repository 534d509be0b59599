"""jit over a device mesh (issue 15): computation follows inputs laid out by NamedShardings, in_shardings and
out_shardings, XLA's partitioner choosing the other layouts (Shardy attributes in the StableHLO); values against
NumPy on the unsharded data."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.sharding import NamedSharding, PartitionSpec

P = PartitionSpec



def _put(x, mesh, *spec):
    return kiln.device_put(x, NamedSharding(mesh, P(*spec)))


def test_computation_follows_sharded_inputs(mesh):
    xs, ws = np.arange(32.0, dtype=np.float32).reshape(8, 4), np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    x, w = _put(xs, mesh, "data", None), _put(ws, mesh, None, "model")
    f = kiln.jit(lambda x, w: knp.tanh(x @ w))
    y = f(x, w)
    np.testing.assert_allclose(np.asarray(y), np.tanh(xs @ ws), rtol=1e-6)
    assert y.sharding == NamedSharding(mesh, P("data", "model")) and y.committed  # the partitioner's choice
    total = kiln.jit(lambda x: (x * x).sum())(x)
    assert total.sharding.spec is P() and total.is_fully_replicated
    np.testing.assert_allclose(float(total), (xs * xs).sum(), rtol=1e-6)
    # A NumPy or uncommitted input joins the mesh replicated.
    z = kiln.jit(lambda x, b: x + b)(x, np.ones(4, np.float32))
    np.testing.assert_array_equal(np.asarray(z), xs + 1)
    assert z.sharding.mesh == mesh


def test_stablehlo_states_the_layouts(mesh):
    x = _put(np.ones((8, 4), np.float32), mesh, "data", "model")
    text = kiln.jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, P())).lower(x).as_text()
    assert 'sdy.mesh @mesh = <["data"=4, "model"=2]>' in text and "mhlo.num_partitions = 8" in text
    assert '#sdy.sharding<@mesh, [{"data"}, {"model"}]>' in text and "#sdy.sharding<@mesh, [{}, {}]>" in text


def test_in_and_out_shardings(mesh):
    a, b = np.arange(8.0, dtype=np.float32), np.ones(8, np.float32)
    f = kiln.jit(lambda a, b: (a + b, a * b), in_shardings=NamedSharding(mesh, P("data")),
                 out_shardings=(NamedSharding(mesh, P()), None))
    s, p = f(a, b)
    np.testing.assert_array_equal(np.asarray(s), a + b)
    np.testing.assert_array_equal(np.asarray(p), a * b)
    assert s.sharding.spec is P() and p.sharding.spec is P("data")
    g = kiln.jit(lambda a, b: a - b, in_shardings=(NamedSharding(mesh, P("model")), None))
    d = g(a, _put(b, mesh, "data"))
    np.testing.assert_array_equal(np.asarray(d), a - b)
    h = kiln.jit(lambda a: a * 3, out_shardings=NamedSharding(mesh, P(("data", "model"))))(a)
    assert h.sharding.spec is P(("data", "model")) and len({str(s.index) for s in h.addressable_shards}) == 8


def test_eager_ops_grad_and_vmap_on_sharded_arrays(mesh):
    xs = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = _put(xs, mesh, "data")
    y = knp.sin(x) + 1
    assert y.sharding.spec is P("data")
    np.testing.assert_allclose(np.asarray(y), np.sin(xs) + 1, rtol=1e-6)
    g = kiln.grad(lambda v: (v ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 2 * xs)
    np.testing.assert_allclose(np.asarray(kiln.vmap(lambda r: r @ r)(x)), (xs * xs).sum(1), rtol=1e-6)
    # A jitted training step: parameters stay laid out step after step.
    w = _put(np.zeros(4, np.float32), mesh)
    step = kiln.jit(lambda w, x: w - 0.01 * kiln.grad(lambda w: ((x @ w - 1.0) ** 2).mean())(w))
    for _ in range(3):
        w = step(w, x)
    ref = np.zeros(4, np.float32)
    for _ in range(3):
        ref = ref - 0.01 * (2 * xs.T @ (xs @ ref - 1.0) / 8)
    np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-5)


def test_one_device_mesh_and_explicit_device(mesh):
    one = kiln.make_mesh((1,), ("i",))
    x = kiln.jit(lambda v: v + 1, in_shardings=NamedSharding(one, P("i")))(np.arange(4.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(x), np.arange(4.0) + 1)
    s = _put(np.arange(8.0, dtype=np.float32), mesh, "data")
    on3 = kiln.jit(lambda v: v * 2, device=kiln.devices()[3])(s)  # an explicit device gathers the input
    assert on3.device == kiln.devices()[3]
    np.testing.assert_array_equal(np.asarray(on3), np.arange(8.0) * 2)


def test_many_mesh_steps_without_waiting_do_not_crash():
    """XLA's CPU collectives abort the process when thousands of mesh executions queue up (NOTES §6); kiln
    bounds the executions in flight. Runs in tests/multidevice's subprocess."""
    mesh = kiln.make_mesh((8,), ("i",))
    x = _put(np.ones(8, np.float32), mesh, "i")
    f = kiln.jit(lambda x: x * 0.5 + x.sum() / 16)  # an all-reduce every step
    for _ in range(2000):
        x = f(x)
    f(x).sum()  # the results are discarded as they come, too
    for _ in range(500):
        f(x)
    np.testing.assert_allclose(np.asarray(x), np.ones(8), rtol=1e-5)


def test_data_parallel_steps_with_donation_do_not_abort(run_py):
    """8 CPU devices on fewer cores: two executions of a data-parallel step (an all-reduce of the gradients,
    donated parameters) in flight at once aborted the process after XLA's 40 s rendezvous timeout (300 steps of a
    64-64-1 MLP did so every time; jax.jit too). kiln runs such meshes one execution at a time. In a subprocess of
    its own: an abort fails this test only."""
    run_py("""
        import numpy as np, kiln, kiln.numpy as knp
        from kiln.sharding import NamedSharding, PartitionSpec as P
        rng = np.random.RandomState(0)
        params = [(0.1 * rng.randn(m, n).astype(np.float32), np.zeros(n, np.float32)) for m, n in ((64, 64), (64, 1))]
        def loss(params, x, y):
            (w1, b1), (w2, b2) = params
            return knp.mean((knp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
        step = kiln.jit(lambda p, x, y: kiln.tree.map(lambda a, g: a - 0.01 * g, p, kiln.grad(loss)(p, x, y)),
                        donate_argnums=0)
        mesh = kiln.make_mesh((8,), ("batch",))
        p = kiln.device_put(params, NamedSharding(mesh, P()))
        x = kiln.device_put(rng.rand(128, 64).astype(np.float32), NamedSharding(mesh, P("batch")))
        y = kiln.device_put(rng.rand(128, 1).astype(np.float32), NamedSharding(mesh, P("batch")))
        first = float(loss(p, x, y))
        for _ in range(300):
            p = step(p, x, y)
        assert float(loss(p, x, y)) < first
        print("OK")
    """, env={"KILN_NUM_CPU_DEVICES": "8", "KILN_PLATFORMS": "cpu"}, timeout=150)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.jit(lambda a, b: a + b)(_put(np.ones(8), m, "data"),
                                            _put(np.ones(8), kiln.make_mesh((8,), ("i",)), "i")),
     ValueError, r"argument a is laid out over Mesh\('data': 4, 'model': 2.* but argument b over Mesh\('i': 8"),
    (lambda m: kiln.jit(lambda a, b: a + b)(_put(np.ones(8), kiln.make_mesh((2,), ("i",)), "i"),
                                            kiln.device_put(np.ones(8), kiln.devices()[5])),
     ValueError, r"argument b is committed to .*id=5.*, which is not in the mesh"),
    (lambda m: kiln.jit(lambda a: a, in_shardings=(NamedSharding(m, P()),) * 2)(np.ones(2)),
     TypeError, "in_shardings has 2 entries but the function was called with 1 positional arguments"),
    (lambda m: kiln.jit(lambda a: a, out_shardings="data"), TypeError,
     "out_shardings must be a kiln.sharding.NamedSharding, a PartitionSpec .*, None, or a pytree of them; got 'data'"),
    (lambda m: kiln.jit(lambda a: a, in_shardings=NamedSharding(m, P("data")))(np.ones(6)), ValueError,
     r"splits dimension 0 of shape \(6,\) into 4 pieces"),
])
def test_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)


def test_with_sharding_constraint(mesh):
    s = NamedSharding(mesh, P("data"))
    xs = np.arange(8.0, dtype=np.float32)
    f = kiln.jit(lambda x: kiln.lax.with_sharding_constraint(x * 2, s) + 1)
    y = f(xs)  # a one-device input: the constraint's mesh runs the program
    np.testing.assert_array_equal(np.asarray(y), xs * 2 + 1)
    assert y.sharding == s
    assert '%2 = sdy.sharding_constraint %1 <@mesh, [{"data"}]>' in f.lower(xs).as_text()
    # Outside jit it lays the value out; a pytree with a PartitionSpec under `with mesh:`.
    assert kiln.lax.with_sharding_constraint(xs, s).sharding == s
    with mesh:
        out = kiln.jit(lambda t: kiln.lax.with_sharding_constraint(t, P("model")))({"a": xs, "b": xs[:2]})
    assert out["a"].sharding.spec is P("model") and out["b"].sharding.spec is P("model")
    # Derivatives and batching keep the constraint.
    g = kiln.jit(kiln.grad(lambda x: (kiln.lax.with_sharding_constraint(x, s) ** 2).sum()))(xs)
    np.testing.assert_array_equal(np.asarray(g), 2 * xs)
    v = kiln.jit(kiln.vmap(lambda x: kiln.lax.with_sharding_constraint(x, s) * 2))(np.ones((3, 8), np.float32))
    assert v.sharding.spec is P(None, "data")
    np.testing.assert_array_equal(np.asarray(v), np.full((3, 8), 2.0))


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.lax.with_sharding_constraint(np.ones(8), P("data")), ValueError,
     r"a PartitionSpec \(P\('data',\)\) needs a mesh"),
    (lambda m: kiln.lax.with_sharding_constraint(np.ones(8), "data"), TypeError,
     "shardings must be kiln.sharding.NamedSharding"),
    (lambda m: kiln.jit(lambda x: kiln.lax.with_sharding_constraint(x, NamedSharding(m, P("data"))))(np.ones(6)),
     ValueError, r"splits dimension 0 of shape \(6,\) into 4 pieces"),
    (lambda m: kiln.jit(lambda x: kiln.lax.with_sharding_constraint(
        x, NamedSharding(kiln.sharding.Mesh(np.array(kiln.devices()[:4]), ("i",)), P("i"))))(
            _put(np.ones(8), m, "data")),
     Exception, r"the constraint's mesh \{'i': 4\} differs from the mesh the program runs on"),
])
def test_constraint_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)


def test_device_put_inside_jit_is_a_sharding_constraint(mesh):
    """As JAX's (docs/new_docs/201/placement.md: under jit "you can change an array's layout on the mesh"): a traced
    value put to a NamedSharding (or a PartitionSpec with a mesh in context) is laid out so; before, kiln ignored the
    sharding inside a trace."""
    xs = np.arange(8.0, dtype=np.float32)
    x = _put(xs, mesh, "data")
    y = kiln.jit(lambda v: kiln.device_put(v * 2, NamedSharding(mesh, P())))(x)
    assert y.sharding == NamedSharding(mesh, P()) and y.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(y), xs * 2)
    with kiln.set_mesh(mesh):
        z = kiln.jit(lambda v: kiln.device_put(v, P("model")))(y)
    assert z.sharding.spec is P("model")
    np.testing.assert_array_equal(np.asarray(z), xs * 2)
    # a device (or no placement) inside a trace still leaves the value where the program puts it
    w = kiln.jit(lambda v: kiln.device_put(v, kiln.devices()[3]) + 1)(x)
    assert w.sharding.mesh == mesh
    np.testing.assert_array_equal(np.asarray(w), xs + 1)


def test_jit_refuses_a_mesh_of_the_same_axes_over_other_devices():
    """docs/new_docs/201/placement.md: a device_put to another mesh inside jit is an error (JAX: "Received
    incompatible devices for jitted computation"). Meshes of the same axes over other devices lower alike, so
    before, kiln ran the program over the arguments' mesh and dropped the move."""
    full = kiln.make_mesh((8,), ("x",))
    mesh_a = kiln.make_mesh((4,), ("x",), devices=full.devices[:4])
    mesh_b = kiln.make_mesh((4,), ("x",), devices=full.devices[4:])
    xa = _put(np.arange(8.0), mesh_a, "x")
    for move in (lambda v: kiln.device_put(v, NamedSharding(mesh_b, P("x"))),
                 lambda v: kiln.lax.with_sharding_constraint(v, NamedSharding(mesh_b, P("x")))):
        with pytest.raises(ValueError, match=r"inputs are laid out over Mesh\('x': 4, .*\) of devices \[0, 1, 2, 3\], "
                                             r"but .* names Mesh\('x': 4, .*\) of devices \[4, 5, 6, 7\]; a compiled "
                                             r"computation runs over one mesh .* outside jit"):
            kiln.jit(move)(xa)


def test_mesh_mismatch_names_the_meshes_devices():
    """Two meshes of the same axes print alike: the error names their devices (placement.md's `a + b` of scalars
    committed to one-device meshes)."""
    devices = kiln.devices()
    m0, m1 = (kiln.make_mesh((1,), ("x",), devices=devices[i:i + 1]) for i in (0, 1))
    a, b = kiln.device_put(1.0, NamedSharding(m0, P())), kiln.device_put(2.0, NamedSharding(m1, P()))
    with pytest.raises(ValueError, match=r"argument x is laid out over Mesh\('x': 1, .*\) of devices \[0\] but "
                                         r"argument y over Mesh\('x': 1, .*\) of devices \[1\]; every input"):
        a + b


def test_out_shardings_per_element_of_the_returned_tuple(mesh):
    """A tuple of out_shardings gives one sharding per element of the returned tuple (a dict of parameters and a
    loss here: five arrays), as JAX's pytree prefix; before, kiln zipped it with the arrays and built a module XLA
    crashed on."""
    rows, repl = NamedSharding(mesh, P(("data", "model"))), NamedSharding(mesh, P())
    x = np.arange(16 * 3, dtype=np.float32).reshape(16, 3) / 10
    params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}

    def step(p, x):
        loss, g = kiln.value_and_grad(lambda p: knp.mean((x @ p["w"] + p["b"]) ** 2))(p)
        return kiln.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss

    new, loss = kiln.jit(step, in_shardings=(repl, rows), out_shardings=(repl, repl))(params, x)
    assert new["w"].sharding == repl and loss.sharding == repl
    pred = x @ params["w"]
    np.testing.assert_allclose(float(loss), np.mean(pred ** 2), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(new["b"]), -0.1 * pred.mean(axis=0), rtol=1e-5)  # d mean(pred²)/db
    with pytest.raises(ValueError, match=r"out_shardings: the shardings are not a pytree prefix of the values: at "
                                         r"output, expected a tuple of 4 children, got one of 2"):
        kiln.jit(step, in_shardings=(repl, rows), out_shardings=(repl,) * 4)(params, x)


def test_outputs_laid_out_as_the_first_laid_out_argument_get_its_sharding(mesh):
    """As JAX's jit: an output laid out as the first argument that came laid out over the mesh (a committed
    array, a ShapeDtypeStruct with a sharding) gets that argument's sharding, spec as written (P('data', None),
    where the layout read back from the program reads P('data',)). Other outputs, and every output when no
    argument came laid out, get the shortest spec. (kiln dropped the trailing None, so y.sharding == x.sharding
    was False for y = jit(lambda x: x * 2)(x).)"""
    xs = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    rows, cols = _put(xs, mesh, "data", None), _put(xs, mesh, None, "data")
    twice = kiln.jit(lambda x: x * 2)
    y = twice(rows)
    np.testing.assert_array_equal(np.asarray(y), xs * 2)
    assert y.sharding.spec == P("data", None) and y.sharding == rows.sharding
    assert twice(_put(xs, mesh, "data")).sharding.spec == P("data")  # (another cache entry: its own spec)
    assert isinstance(twice(xs).sharding, kiln.sharding.SingleDeviceSharding)  # no mesh argument: one device
    # the first laid-out argument is the template, after unplaced ones; a later one's layout is read back
    a, b = kiln.jit(lambda h, x, z: (x + h, z * 2))(xs, rows, cols)
    assert (a.sharding.spec, b.sharding.spec) == (P("data", None), P(None, "data"))
    assert kiln.jit(lambda x: x.T)(rows).sharding.spec == P(None, "data")  # another layout: read back
    assert kiln.jit(lambda x: x.sum(1))(rows).sharding.spec == P("data")  # another rank: read back
    scalar = kiln.device_put(np.float32(2), NamedSharding(mesh, P()))  # a 0-d first template
    assert kiln.jit(lambda s, x: x * s)(scalar, rows).sharding.spec == P("data")
    assert kiln.jit(lambda x: x * 2)(_put(xs, mesh, None, None)).sharding.spec == P(None, None)
    # given in_shardings with a NumPy argument are not a template (as JAX's); given out_shardings win
    given = kiln.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("data", None)))
    assert given(xs).sharding.spec == P("data")
    assert kiln.jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, P("data")))(rows).sharding.spec == P("data")
    sm = kiln.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("data", None), out_specs=P("data", None))
    assert kiln.jit(sm)(rows).sharding.spec == P("data", None)
    sds = kiln.ShapeDtypeStruct((8, 4), np.float32, sharding=rows.sharding)
    assert kiln.jit(lambda x: x * 2).lower(sds).compile().output_shardings.spec == P("data", None)
