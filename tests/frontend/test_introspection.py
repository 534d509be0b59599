"""Compiled introspection: ``Compiled.as_text()`` (optimised HLO), ``cost_analysis()``, ``memory_analysis()``,
``kiln.live_arrays()`` and ``Array.on_device_size_in_bytes()``; SPMD programs in a subprocess with two devices."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def _matmul_tanh(a, b):
    return knp.tanh(a @ b), (a * 2).sum()


def test_compiled_as_text_is_optimised_hlo_and_lowered_stays_stablehlo():
    a = np.ones((4, 8), np.float32)
    b = np.ones((8, 3), np.float32)
    lowered = kiln.jit(_matmul_tanh).lower(a, b)
    assert "stablehlo.dot_general" in lowered.as_text() and "func.func public @main" in lowered.as_text()
    hlo = lowered.compile().as_text()
    assert hlo.startswith("HloModule") and "ENTRY" in hlo
    assert "f32[4,8]" in hlo and "f32[4,3]" in hlo and "stablehlo." not in hlo


def test_lowered_compile_compiles_the_lowered_module(monkeypatch):
    """``lower(...).compile()`` lowers once (as JAX's ``Lowered.compile``), and jit's calls reuse the result."""
    from kiln.frontend.driver import dispatch
    x = knp.arange(3.0)
    lowerings = []
    lower_ir = dispatch.lower_ir
    monkeypatch.setattr(dispatch, "lower_ir", lambda *a, **k: lowerings.append(1) or lower_ir(*a, **k))
    f = kiln.jit(lambda x: knp.sin(x) * 2.0 + 1.0)
    lowered = f.lower(x)
    compiled = lowered.compile()
    assert len(lowerings) == 1
    np.testing.assert_allclose(compiled(x), np.sin(np.arange(3.0)) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(f(x), np.sin(np.arange(3.0)) * 2 + 1, rtol=1e-6)
    assert len(lowerings) == 1 and f._cache_size() == 1


def test_cost_analysis_is_a_dict_of_xla_estimates():
    n = 16
    a = np.ones((n, n), np.float32)
    cost = kiln.jit(lambda a, b: a @ b).lower(a, a).compile().cost_analysis()
    assert isinstance(cost, dict) and all(isinstance(v, float) for v in cost.values())
    assert cost["flops"] >= 2 * n ** 3 * 0.9  # a matmul: 2 n^3 flops
    assert cost["bytes accessed"] >= 3 * a.nbytes  # two inputs read, one output written
    cost = kiln.jit(knp.tanh).lower(a).compile().cost_analysis()
    assert cost["transcendentals"] == n * n


def test_stages_describe_their_signature_as_jax_stages():
    """jax.stages' attributes: args_info/in_avals/donate_argnums over (args, kwargs), out_tree/out_info, the traced
    function's name and output avals, the lowered module (StableHLO ir.Module, or XLA's HLO) and its cost
    before optimisation, the compiled shardings and executable."""
    x, b = np.ones(3, np.float32), np.float32(2)
    traced = kiln.jit(lambda a, b=1: (a * b, {"s": (a * b).sum()}), donate_argnums=0).trace(x, b=b)
    assert traced.fun_name == "<lambda>" and traced.donate_argnums == (0,)
    assert repr(traced.in_tree) == "PyTreeDef(((*,), {'b': *}))" and repr(traced.out_tree) == "PyTreeDef((*, {'s': *}))"
    (arg,), kwargs = traced.args_info
    assert (arg.shape, arg.dtype, arg.donated) == ((3,), np.float32, True) and not kwargs["b"].donated
    assert repr(arg) == "ArgInfo(_aval=ShapedArray(float32[3]), donated=True)"
    assert traced.in_avals[1]["b"].shape == () and traced.out_avals[1]["s"].shape == ()
    assert repr(traced.out_info[0]) == "ShapeDtypeStruct(shape=(3,), dtype=float32)"

    lowered = kiln.jit(lambda a: knp.sin(a) * 2).lower(np.ones(16, np.float32))
    assert repr(lowered.out_tree) == "PyTreeDef(*)" and lowered.donate_argnums == ()
    module = lowered.compiler_ir()
    assert str(module) == lowered.as_text() and "stablehlo.sine" in str(module)  # an MLIR module
    assert lowered.compiler_ir("stablehlo") is module
    assert lowered.compiler_ir("hlo").as_hlo_text().startswith("HloModule")  # XLA's HLO, before optimisation
    with pytest.raises(TypeError, match=r"compiler_ir\(dialect='tosa'\): the dialects are 'stablehlo'"):
        lowered.compiler_ir("tosa")
    cost = lowered.cost_analysis()
    assert cost["flops"] == 16 and cost["transcendentals"] == 16  # one multiply and one sine per element
    compiled = lowered.compile()
    device = kiln.devices()[0]
    (shard,), kw = compiled.input_shardings
    assert kw == {} and shard == compiled.output_shardings == kiln.sharding.SingleDeviceSharding(device)
    assert compiled.out_info.sharding == shard and compiled.out_info.shape == (16,)
    assert compiled.runtime_executable() is not None and compiled.in_avals == lowered.in_avals


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64, ml_dtypes.bfloat16])
def test_memory_analysis_counts_arguments_and_outputs(dtype):
    if np.dtype(dtype) == np.float64:
        kiln.config.update("enable_x64", True)
    x = np.ones((3, 5), dtype)
    y = np.ones((5,), dtype)
    stats = kiln.jit(lambda x, y: (x + y, x[0] * y)).lower(x, y).compile().memory_analysis()
    assert isinstance(stats, kiln.runtime.MemoryAnalysis)
    assert stats.argument_size_in_bytes == x.nbytes + y.nbytes
    # Several results: XLA also counts the tuple of their pointers (8 bytes each on CPU).
    assert x.nbytes + y.nbytes <= stats.output_size_in_bytes <= x.nbytes + y.nbytes + 16
    one = kiln.jit(lambda x, y: x - y).lower(x, y).compile().memory_analysis()
    assert one.output_size_in_bytes == x.nbytes
    for name in ("temp_size_in_bytes", "generated_code_size_in_bytes", "alias_size_in_bytes",
                 "host_temp_size_in_bytes", "peak_memory_in_bytes"):
        assert getattr(stats, name) >= 0
    donated = kiln.jit(lambda x: x * 2, donate_argnums=0).lower(x).compile().memory_analysis()
    assert donated.alias_size_in_bytes == x.nbytes  # the output reuses the donated input


def test_on_device_size_in_bytes():
    for dtype, shape in [(np.float32, (3,)), (np.int16, (2, 5)), (np.complex64, (4,)), (np.bool_, (7,)),
                         (ml_dtypes.bfloat16, (6,))]:
        host = np.zeros(shape, dtype)
        x = knp.asarray(host)
        assert x.on_device_size_in_bytes() == host.nbytes, dtype
    x = knp.ones(4)
    x.delete()
    with pytest.raises(kiln.DeletedBufferError):
        x.on_device_size_in_bytes()


def test_live_arrays():
    before = {id(a) for a in kiln.live_arrays()}
    x = knp.arange(5.0)
    y = kiln.jit(lambda v: v * 2)(x)
    live = kiln.live_arrays()
    assert all(isinstance(a, kiln.Array) for a in live)
    new = [a for a in live if id(a) not in before]
    assert any(a is x for a in new) and any(a is y for a in new)
    y.delete()
    assert not any(a is y for a in kiln.live_arrays())
    assert any(a is x for a in kiln.live_arrays(kiln.default_backend()))
    with pytest.raises(kiln.BackendError):
        kiln.live_arrays("no-such-backend")


def test_spmd_program_introspection(run_py):
    run_py("""
        import numpy as np, kiln, kiln.numpy as knp
        from kiln.sharding import NamedSharding, PartitionSpec as P
        mesh = kiln.make_mesh((2,), ('x',))
        host = np.arange(16.0, dtype=np.float32)
        x = kiln.device_put(host, NamedSharding(mesh, P('x')))
        r = kiln.device_put(host, NamedSharding(mesh, P()))
        assert x.on_device_size_in_bytes() == host.nbytes, x.on_device_size_in_bytes()
        assert r.on_device_size_in_bytes() == 2 * host.nbytes  # one copy per device, as JAX counts
        assert any(a is x for a in kiln.live_arrays()) and any(a is r for a in kiln.live_arrays())
        c = kiln.jit(lambda a: knp.sin(a) * 2).lower(x).compile()
        hlo = c.as_text()
        assert hlo.startswith("HloModule") and "num_partitions=2" in hlo and "f32[8]" in hlo, hlo[:400]
        assert c.cost_analysis()["transcendentals"] == 8  # per device: one shard of 8 elements
        stats = c.memory_analysis()
        assert stats.argument_size_in_bytes == host.nbytes // 2 and stats.output_size_in_bytes == host.nbytes // 2
        np.testing.assert_allclose(np.asarray(c(x)), np.sin(host) * 2, rtol=1e-6)
        (s_in,), _ = c.input_shardings
        assert s_in == x.sharding and c.output_shardings == c(x).sharding == c.out_info.sharding
        print("OK")
    """, env={"KILN_NUM_CPU_DEVICES": "2", "KILN_PLATFORMS": "cpu"})


def test_shape_dtype_struct_like():
    """jax.ShapeDtypeStruct.like (JAX's external-callbacks tutorial builds pure_callback results with it)."""
    x = kiln.numpy.arange(5.0)
    s = kiln.ShapeDtypeStruct.like(x)
    assert (s.shape, s.dtype, s.weak_type, s.sharding) == ((5,), np.dtype("float32"), False, None)  # uncommitted
    committed = kiln.device_put(x, kiln.devices()[0])
    assert kiln.ShapeDtypeStruct.like(committed).sharding == committed.sharding
    weak = kiln.ShapeDtypeStruct.like(2.0)
    assert (weak.shape, weak.dtype, weak.weak_type) == ((), np.dtype("float32"), True)
    assert kiln.ShapeDtypeStruct.like(np.zeros((2, 3), np.int8)).shape == (2, 3)

    def f(v):
        return kiln.pure_callback(lambda a: np.sin(a).astype(a.dtype), kiln.ShapeDtypeStruct.like(v), v,
                                  vmap_method="sequential")
    np.testing.assert_allclose(kiln.jit(f)(x), np.sin(np.arange(5.0)), rtol=1e-6)
    with pytest.raises(TypeError, match="ShapeDtypeStruct.like: expected an array or a scalar, got object"):
        kiln.ShapeDtypeStruct.like(object())
