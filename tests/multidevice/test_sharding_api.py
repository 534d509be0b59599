"""The rest of the sharding API on 8 devices (issue 15): visualize_array_sharding's grids, jit's
in_shardings/out_shardings as pytree prefixes, PartitionSpecs under set_mesh, set_mesh/get_abstract_mesh/
AbstractMesh/use_abstract_mesh and reshard. Values against NumPy on the unsharded data."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import kiln
from kiln.sharding import AbstractDevice, AbstractMesh, AxisType, NamedSharding, PartitionSpec

P = PartitionSpec



def _put(x, mesh, *spec):
    return kiln.device_put(x, NamedSharding(mesh, P(*spec)))


def _shown(capsys, x, **kw):
    kiln.debug.visualize_array_sharding(x, use_color=False, **kw)
    return capsys.readouterr().out


def test_device_put_takes_a_pytree_of_placements(mesh):
    # As JAX's: one device or sharding per array or subtree of x (a pytree prefix of x's structure).
    s, r = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    a, b = kiln.device_put((np.arange(32.0), np.ones(4)), (s, r))
    assert a.sharding == s and b.sharding == r
    np.testing.assert_array_equal(a, np.arange(32.0))
    devices = kiln.devices()
    d = kiln.device_put({"a": np.ones(2), "b": [np.ones(3), np.zeros(3)]}, {"a": devices[1], "b": devices[2]})
    assert d["a"].device == devices[1] and d["a"].committed
    assert d["b"][0].device == devices[2] and d["b"][1].device == devices[2]
    loose, fixed = kiln.device_put([np.ones(2), np.ones(2)], [None, devices[3]])
    assert not loose.committed and fixed.committed and fixed.device == devices[3]
    with pytest.raises(ValueError, match=r"not a pytree prefix of x: at the root, expected a tuple of 2 children"):
        kiln.device_put((np.ones(2),), (s, r))
    with pytest.raises(ValueError, match=r"expected dict keys \['b'\], got \['a'\]"):
        kiln.device_put({"a": np.ones(2)}, {"b": devices[1]})
    with pytest.raises(TypeError, match="device must be a kiln device"):
        kiln.device_put([np.ones(2)], [3])


# -- visualize_array_sharding ------------------------------------------------------------------

def test_visualize_1d_split_over_data(capsys, mesh):
    assert _shown(capsys, _put(np.zeros(8), mesh, "data")) == (
        "┌───────┬───────┬───────┬───────┐\n"
        "│CPU 0,1│CPU 2,3│CPU 4,5│CPU 6,7│\n"
        "└───────┴───────┴───────┴───────┘\n")
    assert _shown(capsys, _put(np.zeros(16), mesh, ("data", "model"))) == (
        "┌" + "┬".join(["───────"] * 8) + "┐\n│" + "│".join(f" CPU {i} " for i in range(8)) + "│\n└"
        + "┴".join(["───────"] * 8) + "┘\n")


def test_visualize_2d_layouts(capsys, mesh):
    blank = "│           │           │\n"
    assert _shown(capsys, _put(np.zeros((8, 4)), mesh, None, "model")) == (
        "┌───────────┬───────────┐\n" + blank * 4 + "│CPU 0,2,4,6│CPU 1,3,5,7│\n" + blank * 4
        + "└───────────┴───────────┘\n")
    assert _shown(capsys, _put(np.zeros((8, 4)), mesh, "data", "model")) == (
        "┌───────┬───────┐\n"
        "│ CPU 0 │ CPU 1 │\n"
        "├───────┼───────┤\n"
        "│ CPU 2 │ CPU 3 │\n"
        "├───────┼───────┤\n"
        "│ CPU 4 │ CPU 5 │\n"
        "├───────┼───────┤\n"
        "│ CPU 6 │ CPU 7 │\n"
        "└───────┴───────┘\n")
    assert _shown(capsys, _put(np.zeros((8, 4)), mesh, "data")) == (
        "┌──────────┐\n│ CPU 0,1  │\n├──────────┤\n│ CPU 2,3  │\n├──────────┤\n│ CPU 4,5  │\n├──────────┤\n"
        "│ CPU 6,7  │\n└──────────┘\n")
    # Transposed axes: taller blocks (the label on the second of four lines).
    lines = _shown(capsys, _put(np.zeros((8, 4)), mesh, "model", "data")).splitlines()
    assert lines[0] == "┌───────┬───────┬───────┬───────┐" and lines[5] == "├───────┼───────┼───────┼───────┤"
    assert lines[2] == "│ CPU 0 │ CPU 2 │ CPU 4 │ CPU 6 │" and lines[7] == "│ CPU 1 │ CPU 3 │ CPU 5 │ CPU 7 │"
    assert lines[1] == lines[3] == lines[4] == "│       │       │       │       │" and len(lines) == 11


def test_visualize_replicated(capsys, mesh):
    blank = "│                   │\n"
    assert _shown(capsys, _put(np.zeros((8, 4)), mesh)) == (
        "┌───────────────────┐\n" + blank * 4 + "│CPU 0,1,2,3,4,5,6,7│\n" + blank * 4 + "└───────────────────┘\n")
    assert _shown(capsys, _put(np.zeros(8), mesh)) == (
        "┌───────────────────┐\n│CPU 0,1,2,3,4,5,6,7│\n└───────────────────┘\n")
    # A jitted function's output, laid out by the partitioner.
    y = kiln.jit(lambda x: x * 2)(_put(np.zeros((8, 4)), mesh, "data", "model"))
    assert _shown(capsys, y).count("CPU") == 8


def test_visualize_scale_and_widths(capsys, mesh):
    x = _put(np.zeros((8, 4)), mesh, "data", "model")
    assert _shown(capsys, x, scale=0.5, min_width=4, max_width=40).splitlines()[:3] == [
        "┌─────┬─────┐", "│CPU 0│CPU 1│", "├─────┼─────┤"]
    wide = _shown(capsys, _put(np.zeros((4, 16)), mesh, "data")).splitlines()
    assert all(len(line) == 80 for line in wide) and len(wide) == 9  # capped at max_width
    assert wide[1] == "│" + " " * 35 + "CPU 0,1" + " " * 36 + "│"


# -- jit: in_shardings / out_shardings as pytree prefixes ----------------------------------------

def test_in_shardings_pytree_prefix(mesh):
    w, b = np.arange(32.0, dtype=np.float32).reshape(4, 8), np.arange(8.0, dtype=np.float32)
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    rows, cols = NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None, "model"))

    def layer(params, x):
        return {"h": x @ params["w"] + params["b"], "w": params["w"], "b": params["b"], "x": x}
    f = kiln.jit(layer, in_shardings=({"w": cols, "b": None}, rows))
    out = f({"w": w, "b": b}, x)
    np.testing.assert_allclose(np.asarray(out["h"]), x @ w + b, rtol=1e-6)
    assert out["w"].sharding.spec is P(None, "model") and out["x"].sharding.spec is P("data")
    # A sharding for a whole argument covers every leaf under it; a list is a tuple (as in JAX).
    g = kiln.jit(lambda p, x: (p[0] + p[1], x), in_shardings=[NamedSharding(mesh, P("model")), None])
    s, same = g((b, b), _put(x, mesh, "data", "model"))
    np.testing.assert_array_equal(np.asarray(s), 2 * b)
    assert same.sharding.spec is P("data", "model")
    # Static arguments are not in in_shardings (JAX's convention).
    h = kiln.jit(lambda n, v: v * n, static_argnums=0, in_shardings=(rows,))
    assert h(3, b).sharding.spec is P("data")
    np.testing.assert_array_equal(np.asarray(h(3, b)), 3 * b)


def test_out_shardings_pytree_prefix(mesh):
    a = np.arange(8.0, dtype=np.float32)
    rows, rep = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    f = kiln.jit(lambda a: {"s": (a + 1, a * 2), "t": a - 1}, out_shardings={"s": rows, "t": rep})
    out = f(a)
    assert [o.sharding.spec for o in (*out["s"], out["t"])] == [P("data"), P("data"), P()]
    np.testing.assert_array_equal(np.asarray(out["s"][1]), a * 2)
    g = kiln.jit(lambda a: (a, (a + 1, a + 2)), out_shardings=(rep, (None, NamedSharding(mesh, P("model")))))
    x, (y, z) = g(_put(a, mesh, "data"))
    assert x.sharding.spec is P() and z.sharding.spec is P("model") and y.sharding.mesh == mesh
    np.testing.assert_array_equal(np.asarray(z), a + 2)


def test_partition_specs_take_the_mesh_in_context(mesh):
    a = np.arange(8.0, dtype=np.float32)
    f = kiln.jit(lambda a: (a * 2, a + 1), in_shardings=P("data"), out_shardings=(P(), None))
    with kiln.set_mesh(mesh):
        doubled, plus = f(a)
    assert doubled.sharding == NamedSharding(mesh, P()) and plus.sharding.spec is P("data")
    np.testing.assert_array_equal(np.asarray(doubled), 2 * a)
    with mesh:  # kiln also takes `with mesh:` (JAX 0.10 wants set_mesh)
        assert f(a)[1].sharding == NamedSharding(mesh, P("data"))
    other = kiln.make_mesh((8,), ("data",))
    with kiln.set_mesh(other):  # a new mesh in context: a new signature
        assert f(a)[1].sharding == NamedSharding(other, P("data"))
    with kiln.set_mesh(mesh):
        assert kiln.device_put(a, P("model")).sharding == NamedSharding(mesh, P("model"))
    with pytest.raises(ValueError, match=r"kiln.device_put: a PartitionSpec \(P\('model',\)\) needs a mesh"):
        kiln.device_put(a, P("model"))


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.jit(lambda p, x: x, in_shardings=({"w": NamedSharding(m, P()), "b": None}, None))(
        {"w": np.ones(2), "c": np.ones(2)}, np.ones(2)),
     ValueError, r"kiln.jit\(<lambda>\): in_shardings: the shardings are not a pytree prefix of the values: at "
                 r"argument p, expected dict keys \['b', 'w'\], got \['c', 'w'\]"),
    (lambda m: kiln.jit(lambda p, x: x, in_shardings=(None, (NamedSharding(m, P()),) * 2))(np.ones(2), [1.0, 2.0]),
     ValueError, r"at argument x, expected a tuple, got a list"),
    (lambda m: kiln.jit(lambda p: p, in_shardings=({"a": (None, NamedSharding(m, P()))},))({"a": (1.0,)}),
     ValueError, r"at argument p\['a'\], expected a tuple of 2 children, got one of 1"),
    (lambda m: kiln.jit(lambda a: {"a": a, "b": a}, out_shardings={"a": NamedSharding(m, P()), "c": None})(
        np.ones(8)), ValueError, r"out_shardings: .* at output, expected dict keys \['a', 'c'\], got \['a', 'b'\]"),
    (lambda m: kiln.jit(lambda a: a, in_shardings={"a": NamedSharding(m, P())})(np.ones(8)), TypeError,
     r"in_shardings must be one sharding \(for all arguments\) or a tuple .* got a dict"),
    (lambda m: kiln.jit(lambda a: a, in_shardings=(NamedSharding(m, P()),) * 2)(np.ones(8)), ValueError,
     "in_shardings has 2 entries but the function was called with 1 positional arguments"),
    (lambda m: kiln.jit(lambda a: a, in_shardings=P("data"))(np.ones(8)), ValueError,
     r"kiln.jit\(<lambda>\): in_shardings: a PartitionSpec \(P\('data',\)\) needs a mesh in context: call it "
     r"under `with kiln.set_mesh\(mesh\):`"),
    (lambda m: kiln.jit(lambda a: a, out_shardings=(P(), {"x": "data"})), TypeError,
     r"out_shardings must be a kiln.sharding.NamedSharding, a PartitionSpec .* got 'data' in \(P\(\), "),
])
def test_prefix_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)


# -- set_mesh, get_abstract_mesh, AbstractMesh, use_abstract_mesh --------------------------------

def test_set_mesh_as_setter_and_context(mesh):
    get = kiln.sharding.get_mesh
    assert get() is None and kiln.sharding.get_abstract_mesh().empty
    with kiln.set_mesh(mesh) as value:
        assert value is None and get() is mesh and kiln.sharding.get_abstract_mesh() == mesh.abstract_mesh
        with kiln.sharding.set_mesh(None):
            assert get() is None
        with mesh:
            assert get() is mesh
        assert get() is mesh
    assert get() is None
    kiln.set_mesh(mesh)  # the global setter
    try:
        assert get() is mesh
        seen = []
        t = threading.Thread(target=lambda: seen.append(get()))
        t.start(), t.join()
        assert seen == [None]  # per thread, as JAX's
        assert kiln.jit(lambda: kiln.sharding.get_abstract_mesh().size)() == 8  # readable inside jit
    finally:
        kiln.set_mesh(None)
    assert get() is None


def test_abstract_mesh(mesh):
    am = mesh.abstract_mesh
    assert am == AbstractMesh((4, 2), ("data", "model"), abstract_device=AbstractDevice("cpu", None, "cpu"))
    assert am.axis_sizes == (4, 2) and am.axis_names == ("data", "model") and am.size == 8 and not am.empty
    assert am.shape == {"data": 4, "model": 2} and am.axis_types == (AxisType.Auto, AxisType.Auto)
    assert repr(am) == ("AbstractMesh('data': 4, 'model': 2, axis_types=(Auto, Auto), device_kind=cpu, "
                        "num_cores=None, platform=cpu)")
    plain = AbstractMesh((2, 4), ("x", "y"), (AxisType.Explicit,) * 2)
    assert repr(plain) == "AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))"
    assert hash(plain) == hash(AbstractMesh((2, 4), ("x", "y"), (AxisType.Explicit,) * 2)) and plain != am
    assert plain.update(axis_names=("a", "b")).axis_names == ("a", "b") and plain.abstract_mesh is plain
    assert repr(kiln.sharding.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
    assert repr(AbstractDevice("cpu", None, "cpu")) == "AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)"
    with pytest.raises(ValueError, match="AbstractMesh does not implement devices"):
        _ = am.devices
    with pytest.raises(ValueError, match="AbstractMesh does not implement __enter__"):
        with am:
            pass
    with pytest.raises(AttributeError, match="immutable"):
        am.size = 3


def test_use_abstract_mesh(mesh):
    other = AbstractMesh((8,), ("i",))
    with kiln.sharding.use_abstract_mesh(other):
        assert kiln.sharding.get_abstract_mesh() is other and kiln.sharding.get_mesh() is None
    assert kiln.sharding.get_abstract_mesh().empty
    with kiln.set_mesh(mesh), kiln.sharding.use_abstract_mesh(other):
        assert kiln.sharding.get_abstract_mesh() is other and kiln.sharding.get_mesh() is mesh
    with kiln.set_mesh(mesh):
        with pytest.raises(ValueError, match="use_abstract_mesh cannot change the size of the mesh"):
            with kiln.sharding.use_abstract_mesh(AbstractMesh((2,), ("i",))):
                pass
        assert kiln.sharding.get_abstract_mesh() == mesh.abstract_mesh


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.set_mesh("mesh"), ValueError, "kiln.set_mesh: expected a kiln.sharding.Mesh .*got str"),
    (lambda m: kiln.jit(lambda x: kiln.set_mesh(m) and x)(1.0), ValueError,
     "kiln.set_mesh can only be used outside of kiln.jit"),
    (lambda m: kiln.sharding.use_abstract_mesh(m), ValueError, "expected a kiln.sharding.AbstractMesh, got Mesh"),
    (lambda m: AbstractMesh((2, 4), ("x",)), ValueError, r"2 axis sizes \(2, 4\) but 1 axis names"),
    (lambda m: AbstractMesh((0,), ("x",)), ValueError, "axis sizes must be positive integers"),
    (lambda m: AbstractMesh((2, 2), ("x", "x")), ValueError, "axis names must be distinct strings"),
    (lambda m: AbstractMesh((2,), ("x",), abstract_device="cpu"), TypeError,
     "abstract_device must be a kiln.sharding.AbstractDevice"),
])
def test_mesh_context_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)
    assert kiln.sharding.get_mesh() is None


# -- reshard ----------------------------------------------------------------------------------

def test_reshard(mesh):
    xs = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    x = _put(xs, mesh, "data")
    y = kiln.reshard(x, NamedSharding(mesh, P("model")))  # outside a trace: a device_put
    assert y.sharding == NamedSharding(mesh, P("model")) and kiln.sharding.reshard is kiln.reshard
    np.testing.assert_array_equal(np.asarray(y), xs)
    with kiln.set_mesh(mesh):
        tree = kiln.reshard({"a": x, "b": (xs, xs[0])}, {"a": P(), "b": P("model")})
        assert [t.sharding.spec for t in kiln.tree_util.tree_leaves(tree)] == [P(), P("model"), P("model")]
        f = kiln.jit(lambda v: kiln.reshard(v * 2, P(None, "model")) + 1)  # inside: a sharding constraint
        out = f(x)
        assert 'sdy.sharding_constraint' in f.lower(x).as_text() and out.sharding.spec is P(None, "model")
        np.testing.assert_array_equal(np.asarray(out), xs * 2 + 1)
        g = kiln.grad(lambda v: (kiln.reshard(v, P("data")) ** 2).sum())(xs)
        np.testing.assert_array_equal(np.asarray(g), 2 * xs)
        v = kiln.jit(kiln.vmap(lambda r: kiln.reshard(r, P("model")) * 3))(xs)
        assert v.sharding.spec is P(None, "model")
        np.testing.assert_array_equal(np.asarray(v), 3 * xs)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.reshard(np.ones(8), None), ValueError, "kiln.reshard: the sharding of a value is None"),
    (lambda m: kiln.reshard(np.ones(8), P("data")), ValueError,
     r"kiln.reshard: a PartitionSpec \(P\('data',\)\) needs a mesh in context"),
    (lambda m: kiln.reshard({"a": np.ones(8)}, {"b": NamedSharding(m, P())}), ValueError,
     r"kiln.reshard: the shardings are not a pytree prefix of the values: at the root, expected dict keys \['b'\]"),
    (lambda m: kiln.reshard(np.ones(8), "data"), TypeError, "shardings must be kiln.sharding.NamedSharding"),
    (lambda m: kiln.reshard(np.ones(6), NamedSharding(m, P("data"))), ValueError,
     r"splits dimension 0 of shape \(6,\) into 4 pieces"),
])
def test_reshard_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)


def test_exported_call_on_an_array_over_several_devices(mesh):
    # Outside jit too (as JAX's): the exported module runs in one program partitioned over the array's devices
    arg = np.arange(8.0, dtype=np.float32)
    exp = kiln.export.export(kiln.jit(kiln.numpy.cos))(arg)
    sharded = kiln.device_put(arg, NamedSharding(mesh, PartitionSpec("data")))
    for _ in range(2):  # the second call reuses the compiled program
        out = exp.call(sharded)
        np.testing.assert_allclose(np.asarray(out), np.cos(arg), rtol=1e-6)
    assert len(out.sharding.device_set) == 8


def test_lower_takes_the_sharding_of_a_shape_dtype_struct(mesh):
    # as JAX's: jit(f).lower(ShapeDtypeStruct(shape, dtype, sharding=...)) lowers for that layout
    sds = kiln.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, PartitionSpec("data", "model")))
    lowered = kiln.jit(lambda x: x * 2).lower(sds)
    assert 'sdy.sharding<@mesh, [{"data"}, {"model"}]>' in lowered.as_text()
    x = kiln.device_put(np.ones((8, 4), np.float32), sds.sharding)
    out = lowered.compile()(x)
    np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 2.0, np.float32))
    # export takes one-device programs only: the layout is refused, not silently dropped
    with pytest.raises(kiln.export.ExportError, match="runs over a device mesh; kiln exports one-device programs"):
        kiln.export.export(kiln.jit(lambda x: x.T))(sds)


def test_named_sharding_over_an_abstract_mesh_is_refused_clearly():
    with pytest.raises(TypeError, match="mesh is an AbstractMesh .*not supported: kiln exports one-device programs"):
        NamedSharding(AbstractMesh((4,), ("a",)), PartitionSpec("a"))


@pytest.mark.parametrize("make", [
    lambda i: i.zeros, lambda i: i.ones, lambda i: i.constant(0.5), lambda i: i.uniform(), lambda i: i.normal(),
    lambda i: i.truncated_normal(), lambda i: i.he_normal(), lambda i: i.glorot_uniform(), lambda i: i.orthogonal(),
])
def test_initializers_take_out_sharding(mesh, make):
    # JAX's fourth parameter: the same values, laid out as asked (a PartitionSpec over the mesh in context)
    init = make(kiln.nn.initializers)
    key = kiln.random.key(0)
    plain = init(key, (8, 4), np.float32)
    with kiln.set_mesh(mesh):
        laid_out = init(key, (8, 4), np.float32, PartitionSpec("data", None))
    assert laid_out.sharding.spec == PartitionSpec("data", None) and len(laid_out.sharding.device_set) == 8
    np.testing.assert_array_equal(np.asarray(laid_out), np.asarray(plain))
    by_keyword = init(key, (8, 4), np.float32, out_sharding=NamedSharding(mesh, PartitionSpec(None, "model")))
    assert by_keyword.sharding.spec == PartitionSpec(None, "model")


def test_at_methods_take_out_sharding(mesh):
    # JAX's training cookbook gathers embeddings with emb.at[tokens].get(out_sharding=P('data', None, None))
    emb = kiln.numpy.arange(12.0).reshape(6, 2)
    tokens = kiln.device_put(np.array([[1, 2], [3, 4], [0, 5], [2, 2]]), NamedSharding(mesh, PartitionSpec("data")))
    with kiln.set_mesh(mesh):
        got = kiln.jit(lambda e, t: e.at[t].get(out_sharding=PartitionSpec("data", None, None)))(emb, tokens)
        added = emb.at[0].add(1.0, out_sharding=PartitionSpec(None, "model"))
    assert got.sharding.spec[0] == "data" and added.sharding.spec == PartitionSpec(None, "model")
    np.testing.assert_array_equal(np.asarray(got), np.arange(12.0).reshape(6, 2)[np.asarray(tokens)])
    np.testing.assert_array_equal(np.asarray(added)[0], [1.0, 2.0])


def test_out_shardings_given_are_the_outputs_shardings(mesh):
    # as JAX's: a spec with trailing Nones is kept as given, so out.sharding == the requested sharding; an
    # output the partitioner lays out (Auto mesh axes) as its argument keeps the argument's spec (JAX 0.10.2 too),
    # otherwise it has the shortest spec
    s = NamedSharding(mesh, PartitionSpec("data", None, None))
    out = kiln.jit(lambda: kiln.numpy.zeros((4, 3, 2)), out_shardings=s)()
    assert out.sharding == s and out.sharding.spec == PartitionSpec("data", None, None)
    assert kiln.jit(lambda x: x * 2)(out).sharding.spec == PartitionSpec("data", None, None)
    assert kiln.jit(lambda x: x.sum(2) * 2)(out).sharding.spec == PartitionSpec("data")


def test_axis_type_queries_memory_kind_and_local_mesh(mesh):
    """JAX's mesh and sharding attributes: the axes of each type, are_all_axes_*, local_mesh, has_addressable_devices,
    with_memory_kind (tests/multidevice/test_memory_kinds.py covers placement in other memories)."""
    mixed = kiln.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Manual))
    assert (mixed.explicit_axes, mixed.manual_axes, mixed.auto_axes) == (("data",), ("model",), ())
    assert not (mixed.are_all_axes_explicit or mixed.are_all_axes_manual or mixed.are_all_axes_auto)
    assert mesh.are_all_axes_auto and mesh.auto_axes == ("data", "model") and mesh.local_mesh is mesh
    abstract = AbstractMesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    assert abstract.are_all_axes_explicit and abstract.explicit_axes == ("data", "model")
    s = NamedSharding(mesh, PartitionSpec("data"))
    assert s.has_addressable_devices and s.with_memory_kind("device") is s and s.with_memory_kind(None) is s
    host = s.with_memory_kind("pinned_host")
    assert host.memory_kind == "pinned_host" and host != s and host.with_memory_kind("device") == s
    with pytest.raises(ValueError, match=r"with_memory_kind\('hbm'\): CpuDevice\(id=0\) has no memory of kind 'hbm'; "
                                         "its memory kinds are device, pinned_host, unpinned_host"):
        s.with_memory_kind("hbm")
    single = kiln.sharding.SingleDeviceSharding(kiln.devices()[0])
    assert single.has_addressable_devices and single.with_memory_kind("device") is single


def test_device_put_may_alias_false_copies_a_sharded_array_where_it_is(mesh):
    """may_alias=False: buffers of the array's own on every device, laid out as before; the copy outlives the input."""
    value = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    sharding = NamedSharding(mesh, PartitionSpec("data", "model"))
    x = kiln.device_put(value, sharding)
    y = kiln.device_put(x, sharding, may_alias=False)
    assert y is not x and y.sharding == x.sharding and y.committed
    pointers = {s.device: s.data.unsafe_buffer_pointer() for s in x.addressable_shards}
    assert all(s.data.unsafe_buffer_pointer() != pointers[s.device] for s in y.addressable_shards)
    x.delete()
    np.testing.assert_array_equal(np.asarray(y), value)
