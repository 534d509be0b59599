"""kiln.experimental.layout, serialize_executable and compute_on (JAX's modules of those names): the default
layout accepted and custom ones refused, compiled functions to bytes and back (in this process and in a fresh
one), compute_on('device') as a no-op and host offloading refused. NumPy gives the expected values."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kiln.frontend.driver.layout import array_format, resolve_format

import kiln
import kiln.numpy as knp
from kiln.experimental import compute_on as compute_on_module
from kiln.experimental import layout, serialize_executable
from kiln.experimental.compute_on import compute_on, compute_on2
from kiln.experimental.layout import Format, Layout, with_layout_constraint
from kiln.sharding import SingleDeviceSharding

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_public_names():
    assert sorted(layout.__all__) == ["Format", "Layout", "with_layout_constraint"]
    assert sorted(serialize_executable.__all__) == ["deserialize_and_load", "serialize"]
    assert sorted(compute_on_module.__all__) == ["compute_on", "compute_on2"]


# -- layout ---------------------------------------------------------------------------------------------------

def test_layout_and_format_values():
    a = Layout((0, 1))
    assert a == Layout([0, 1]) and hash(a) == hash(Layout((0, 1))) and a != Layout((1, 0)) and a != (0, 1)
    assert a.tiling is None and a.sub_byte_element_size_in_bits == 0
    assert repr(a) == "Layout(major_to_minor=(0, 1), tiling=None, sub_byte_element_size_in_bits=0)"
    b = a.update(tiling=[[8, 128]])
    assert b.tiling == ((8, 128),) and b.major_to_minor == (0, 1) and a.tiling is None
    with pytest.raises(TypeError, match=r"unknown fields \['order'\]"):
        a.update(order=(1, 0))
    with pytest.raises(ValueError, match=r"Got major_to_minor=\(0, 1\) and shape=\(2, 3, 4\)"):
        a.check_compatible_aval((2, 3, 4))
    assert repr(Layout.AUTO) == "AUTO"
    assert repr(Format()) == "Format(layout=None, sharding=None)"
    assert repr(Format(Layout.AUTO)) == "Format(layout=AUTO, sharding=None)"
    s = SingleDeviceSharding(kiln.devices()[0])
    assert Format(a, s) == Format(Layout((0, 1)), s) and Format(a, s) != Format(None, s)
    assert len({Format(a, s), Format(Layout((0, 1)), s)}) == 1


def test_format_errors():
    with pytest.raises(ValueError, match="Sharding has to be concrete when layout is of type"):
        Format(Layout((0, 1)))
    with pytest.raises(TypeError, match="Expected values are `None`, `Layout.AUTO` or an instance of `Layout`. Got 3"):
        Format(3)
    with pytest.raises(TypeError, match="Expected values are `None` or an instance of kiln.sharding.Sharding"):
        Format(None, "cpu")


def test_array_format_is_the_default_layout():
    x = kiln.device_put(np.ones((2, 3, 4), np.float32))
    f = array_format(x)
    assert f.layout == Layout((0, 1, 2), ()) and f.sharding == x.sharding
    assert array_format(kiln.device_put(np.float32(1))).layout == Layout((), ())


def test_formats_of_arrays_compiled_functions_and_placements():
    x_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = kiln.device_put(x_np)
    assert x.format == Format(Layout((0, 1), ()), x.sharding)
    compiled = kiln.jit(lambda a, b: {"o": a * b}).lower(x, 2.0).compile()
    (fa, fb), kwargs = compiled.input_formats
    assert kwargs == {} and fa == x.format and fb.layout == Layout((), ())
    assert compiled.output_formats == {"o": Format(Layout((0, 1), ()), compiled.output_shardings["o"])}
    loaded = serialize_executable.deserialize_and_load(*serialize_executable.serialize(compiled))
    assert loaded.input_formats == compiled.input_formats and loaded.output_formats == compiled.output_formats
    # a Format places as its sharding (device_put and jit's in/out_shardings), the default layout only
    y = kiln.device_put(x_np, Format(Layout((0, 1)), x.sharding))
    assert y.format == x.format
    np.testing.assert_array_equal(np.asarray(y), x_np)
    tree = kiln.device_put({"a": x_np, "b": 1.0}, Format(None, x.sharding))
    assert tree["b"].format.layout == Layout((), ())
    mesh = kiln.make_mesh((1,), ("i",))
    named = kiln.sharding.NamedSharding(mesh, kiln.sharding.PartitionSpec())
    f = kiln.jit(lambda a: a * 2, in_shardings=Format(Layout.AUTO, named), out_shardings=Format(None, named))
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * x_np)
    with pytest.raises(NotImplementedError, match=r"kiln.device_put: the layout Layout\(major_to_minor=\(1, 0\)"):
        kiln.device_put(x_np, Format(Layout((1, 0)), x.sharding))
    with pytest.raises(NotImplementedError, match=r"kiln.jit\(<lambda>\): in_shardings: the layout"):
        kiln.jit(lambda a: a, in_shardings=Format(Layout((1, 0)), named))(x)


def test_resolve_format_accepts_default_and_auto_and_refuses_custom():
    s = SingleDeviceSharding(kiln.devices()[0])
    assert resolve_format(Format(), 2, "here") is None
    assert resolve_format(Format(Layout.AUTO, s), 2, "here") is s
    assert resolve_format(Format(Layout((0, 1)), s), 2, "here") is s
    assert resolve_format(Format(Layout((0, 1), ()), s), None, "here") is s
    assert resolve_format(s, 2, "here") is s  # not a Format: as it is
    with pytest.raises(NotImplementedError, match=r"here: the layout Layout\(major_to_minor=\(1, 0\).*default layout "
                                                  r"only \(row-major"):
        resolve_format(Format(Layout((1, 0)), s), 2, "here")
    with pytest.raises(NotImplementedError, match="not XLA's default layout"):
        resolve_format(Format(Layout((0, 1), ((8, 128),)), s), 2, "here")


def test_with_layout_constraint_default_is_identity_eager_jit_grad_vmap():
    x_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = kiln.device_put(x_np)
    assert with_layout_constraint(x, Layout((0, 1))) is x
    tree = {"a": x, "b": kiln.device_put(np.ones(4, np.float32))}
    out = with_layout_constraint(tree, {"a": Layout((0, 1)), "b": Layout((0,))})
    assert out["a"] is x and out["b"] is tree["b"]
    f = kiln.jit(lambda v: with_layout_constraint(v * 2, Layout((0, 1))))
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * x_np)
    g = kiln.grad(lambda v: (with_layout_constraint(v, Layout((0, 1))) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x_np)
    v = kiln.vmap(lambda row: with_layout_constraint(row + 1, Layout((0,))))(x)
    np.testing.assert_array_equal(np.asarray(v), x_np + 1)


def test_with_layout_constraint_errors():
    x = kiln.device_put(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="with_layout_constraint: the layout .* is not XLA's default"):
        with_layout_constraint(x, Layout((1, 0)))
    with pytest.raises(ValueError, match="layouts passed to `with_layout_constraint` must be of type `Layout`"):
        with_layout_constraint(x, Layout.AUTO)
    with pytest.raises(ValueError, match="Length of major_to_minor and the rank of the value should match"):
        with_layout_constraint(x, Layout((0,)))
    with pytest.raises(ValueError, match="layouts is not a pytree prefix of x"):
        with_layout_constraint({"a": x}, {"b": Layout((0, 1))})


# -- serialize_executable -------------------------------------------------------------------------------------

_SCALE = np.linspace(-1, 1, 3).astype(np.float32)  # a constant the function closes over


def _step(params, x, *, power=2):
    y = knp.tanh(x @ params["w"]) * _SCALE
    return {"loss": (y ** power).sum(), "y": y}


def _step_np(params, x):
    y = np.tanh(x @ params["w"]) * _SCALE
    return {"loss": (y ** 2).sum(), "y": y}


PARAMS = {"w": np.linspace(-0.5, 0.5, 12).astype(np.float32).reshape(4, 3)}
X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8


def test_serialize_round_trip_in_this_process():
    compiled = kiln.jit(_step).lower(PARAMS, X).compile()
    data, in_tree, out_tree = serialize_executable.serialize(compiled)
    assert isinstance(data, bytes) and in_tree == compiled.in_tree and out_tree == compiled.out_tree
    loaded = serialize_executable.deserialize_and_load(data, in_tree, out_tree)
    x2 = X[::-1].copy()
    out = loaded(PARAMS, x2)
    want = _step_np(PARAMS, x2)
    assert out["y"].shape == (2, 3) and out["y"].dtype == np.float32 and out["loss"].shape == ()
    np.testing.assert_allclose(np.asarray(out["y"]), want["y"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(out["loss"]), want["loss"], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out["y"]), np.asarray(compiled(PARAMS, x2)["y"]))
    assert [a.shape for a in kiln.tree_util.tree_leaves(loaded.args_info)] == [(4, 3), (2, 4)]
    assert loaded.output_shardings["y"] == SingleDeviceSharding(kiln.devices()[0])
    assert "tanh" in loaded.as_text()
    # the devices are looked up by id among execution_devices
    again = serialize_executable.deserialize_and_load(data, in_tree, out_tree, backend="cpu",
                                                      execution_devices=kiln.devices("cpu"))
    np.testing.assert_array_equal(np.asarray(again(PARAMS, X)["y"]), np.asarray(compiled(PARAMS, X)["y"]))


def test_serialize_keeps_donation_and_weak_scalars():
    compiled = kiln.jit(lambda p, lr: p - lr * p, donate_argnums=0).lower(np.ones(4, np.float32), 0.5).compile()
    loaded = serialize_executable.deserialize_and_load(*serialize_executable.serialize(compiled))
    assert loaded.donate_argnums == (0,)
    p = kiln.device_put(np.full(4, 2.0, np.float32))
    out = loaded(p, 0.25)
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 1.5, np.float32))
    assert p.is_deleted()  # donated, as by the original


def test_serialize_loads_in_a_fresh_process(tmp_path):
    compiled = kiln.jit(_step).lower(PARAMS, X).compile()
    data, _, _ = serialize_executable.serialize(compiled)
    path = tmp_path / "step.bin"
    path.write_bytes(data)
    script = textwrap.dedent(f"""
        import numpy as np, kiln
        from kiln.experimental import serialize_executable as se
        params = {{"w": np.linspace(-0.5, 0.5, 12).astype(np.float32).reshape(4, 3)}}
        x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
        in_tree = kiln.tree_util.tree_structure(((params, x), {{}}))
        out_tree = kiln.tree_util.tree_structure({{"loss": 0, "y": 0}})
        f = se.deserialize_and_load(open({str(path)!r}, "rb").read(), in_tree, out_tree)
        out = f(params, x)
        np.save({str(tmp_path / "y.npy")!r}, np.asarray(out["y"]))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _step_np(PARAMS, X)["y"], rtol=1e-6, atol=1e-6)


def test_serialize_an_executable_loaded_from_the_compile_cache(tmp_path):
    # XLA's CPU executables deserialized from the persistent cache serialize again without their kernels (the
    # bytes load, and the first execution fails 'Function ..._kernel not found'): kiln writes the cache entry's
    # bytes instead. Three fresh processes: compile (a miss), compile again (a hit) and serialize, load and run.
    cache = tmp_path / "cache"
    write = textwrap.dedent(f"""
        import numpy as np, kiln, kiln.numpy as jnp
        from kiln.experimental import serialize_executable as se
        from kiln.runtime import compile_cache
        f = kiln.jit(lambda w, x: jnp.tanh(x @ w))
        c = f.lower(np.ones((4, 3), np.float32), np.ones((2, 4), np.float32)).compile()
        print(compile_cache.stats()["last"])
        open({str(tmp_path / "f.bin")!r}, "wb").write(se.serialize(c)[0])
    """)
    env = {**os.environ, "KILN_CACHE_DIR": str(cache), "KILN_COMPILATION_CACHE": "1"}
    runs = [subprocess.run([sys.executable, "-c", write], env=env, cwd=REPO, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    assert [r.stdout.split()[-1] for r in runs] == ["miss", "hit"], [r.stderr for r in runs]
    load = textwrap.dedent(f"""
        import numpy as np, kiln
        from kiln.experimental import serialize_executable as se
        args = (np.ones((4, 3), np.float32), np.ones((2, 4), np.float32))
        f = se.deserialize_and_load(open({str(tmp_path / "f.bin")!r}, "rb").read(),
                                    kiln.tree_util.tree_structure((args, {{}})), kiln.tree_util.tree_structure(0))
        print(float(np.asarray(f(*args))[0, 0]))
    """)
    out = subprocess.run([sys.executable, "-c", load], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout.split()[-1]) - np.tanh(4.0)) < 1e-6


def test_serialize_errors():
    compiled = kiln.jit(_step).lower(PARAMS, X).compile()
    data, in_tree, out_tree = serialize_executable.serialize(compiled)
    loaded = serialize_executable.deserialize_and_load(data, in_tree, out_tree)
    with pytest.raises(ValueError, match=r"compiled for arguments \(f32\[4,3\], f32\[2,4\]\) but called with "
                                         r"\(f32\[4,3\], f32\[3,4\]\)"):
        loaded(PARAMS, np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="cannot be transformed"):
        kiln.jit(lambda x: loaded(PARAMS, x)["loss"])(X)
    with pytest.raises(TypeError, match="serialize expects a compiled function"):
        serialize_executable.serialize(kiln.jit(_step))
    with pytest.raises(ValueError, match="is not a serialized kiln compiled function"):
        serialize_executable.deserialize_and_load(b"garbage" * 10, in_tree, out_tree)
    with pytest.raises(ValueError, match="in_tree/out_tree have 1/2 leaves, but the function takes 2 and returns 2"):
        serialize_executable.deserialize_and_load(data, kiln.tree_util.tree_structure(1), out_tree)
    with pytest.raises(ValueError, match=r"compiled for the devices with ids \[0\], and \[0\] are not among"):
        serialize_executable.deserialize_and_load(data, in_tree, out_tree, execution_devices=[])
    with pytest.raises(TypeError, match="backend must be None, a backend name"):
        serialize_executable.deserialize_and_load(data, in_tree, out_tree, backend=3)
    printing = kiln.jit(lambda x: (kiln.debug.print("x={x}", x=x), x * 2)[1]).lower(X).compile()
    with pytest.raises(ValueError, match="calls Python functions on the host"):
        serialize_executable.serialize(printing)


# -- compute_on -----------------------------------------------------------------------------------------------

def test_compute_on_device_is_a_no_op():
    x_np = np.arange(4, dtype=np.float32)
    x = kiln.device_put(x_np)
    with compute_on("device"):
        np.testing.assert_array_equal(np.asarray(x * 2), 2 * x_np)

    @compute_on("device")
    def f(v):
        return knp.sin(v) * 3

    np.testing.assert_allclose(np.asarray(kiln.jit(f)(x)), np.sin(x_np) * 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.grad(lambda v: f(v).sum())(x)), 3 * np.cos(x_np), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.vmap(f)(x)), np.sin(x_np) * 3, rtol=1e-6)
    with compute_on("gpu_stream:1"):  # a scheduling hint: same values on one stream
        np.testing.assert_array_equal(np.asarray(x + 1), x_np + 1)


def test_compute_on2_device():
    g = compute_on2(lambda a, b: (a * b, a + b), compute_type="device", out_memory_spaces=("device", None))
    p, s = kiln.jit(g)(np.float32(3), np.float32(4))
    assert float(p) == 12 and float(s) == 7
    deco = compute_on2(compute_type="device", out_memory_spaces="device", compiler_options={})
    np.testing.assert_array_equal(np.asarray(deco(lambda a: a - 1)(np.ones(2))), np.zeros(2))


def test_compute_on_errors():
    with pytest.raises(NotImplementedError, match=r"compute_on\('device_host'\): offloading .* not supported.*"
                                                  r"kiln.pure_callback.*backend='cpu'"):
        with compute_on("device_host"):
            pass
    with pytest.raises(NotImplementedError, match="TPU SparseCores are not supported"):
        compute_on("tpu_sparsecore").__enter__()
    with pytest.raises(ValueError, match="Invalid compute type gpu. Current supported values are"):
        with compute_on("gpu"):
            pass
    with pytest.raises(TypeError, match="compute_type argument must be a string, got int"):
        with compute_on(3):
            pass
    with pytest.raises(NotImplementedError, match="device_host"):
        compute_on2(lambda a: a, compute_type="device_host", out_memory_spaces="device")
    with pytest.raises(NotImplementedError, match="out_memory_spaces 'pinned_host': kiln keeps arrays in device"):
        compute_on2(lambda a: a, compute_type="device", out_memory_spaces="pinned_host")
    with pytest.raises(ValueError, match="out_memory_spaces must be memory spaces"):
        compute_on2(lambda a: a, compute_type="device", out_memory_spaces=3)
    with pytest.raises(TypeError, match="compiler_options must be a dict"):
        compute_on2(lambda a: a, compute_type="device", out_memory_spaces="device", compiler_options=[1])
