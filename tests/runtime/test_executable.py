"""Compile, cache, asynchronous execute, donation and the errors of dispatch."""
from __future__ import annotations

import time

import numpy as np
import pytest

from kiln import runtime

F32_4 = [((4,), np.float32)]

DONATE = """func.func public @main(%a: tensor<1024xf32> {tf.aliasing_output = 0 : i32},
                                   %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = stablehlo.add %a, %b : tensor<1024xf32>
  return %0 : tensor<1024xf32>
}"""


def _matmul_chain(n: int) -> str:
    """n dependent 1024x1024 f32 matmuls (tens of ms each on a small CPU)."""
    t = "tensor<1024x1024xf32>"
    lines = [f"func.func public @main(%x: {t}) -> {t} {{"]
    prev = "%x"
    for i in range(n):
        lines.append(f"  %m{i} = stablehlo.dot_general {prev}, %x, contracting_dims = [1] x [0] "
                     f": ({t}, {t}) -> {t}")
        lines.append(f"  %s{i} = stablehlo.tanh %m{i} : {t}")
        prev = f"%s{i}"
    lines += [f"  return {prev} : {t}", "}"]
    return "\n".join(lines)


def test_add(cpu0, add_f32_4):
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    x = np.array([1.0, 2.5, -3.0, 4.0], np.float32)
    y = np.array([0.5, 0.5, 10.0, -4.0], np.float32)
    (out,) = exe.execute([runtime.put(x, cpu0), runtime.put(y, cpu0)])
    assert runtime.buffer_device(out) is cpu0
    np.testing.assert_array_equal(runtime.to_numpy(out), x + y)
    assert exe.device is cpu0
    assert exe.as_text() == add_f32_4
    # outputs feed back as inputs
    (out2,) = exe.execute([out, out])
    np.testing.assert_array_equal(runtime.to_numpy(out2), 2 * (x + y))


def test_multiple_outputs_and_dtypes(cpu0):
    module = """func.func public @main(%a: tensor<2x3xi32>, %b: tensor<f64>)
        -> (tensor<3x2xi32>, tensor<f64>, tensor<2x3xi1>) {
      %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
      %1 = stablehlo.multiply %b, %b : tensor<f64>
      %z = stablehlo.constant dense<0> : tensor<2x3xi32>
      %2 = stablehlo.compare GT, %a, %z : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
      return %0, %1, %2 : tensor<3x2xi32>, tensor<f64>, tensor<2x3xi1>
    }"""
    exe = runtime.compile(module, cpu0, [((3, 2), np.int32), ((), np.float64), ((2, 3), np.bool_)])
    a = np.array([[1, -2, 3], [-4, 5, 0]], np.int32)
    t, sq, pos = exe.execute([runtime.put(a, cpu0), runtime.put(np.array(1.5), cpu0)])
    np.testing.assert_array_equal(runtime.to_numpy(t), a.T)
    assert runtime.to_numpy(sq) == 2.25 and runtime.to_numpy(sq).dtype == np.float64
    np.testing.assert_array_equal(runtime.to_numpy(pos), a > 0)
    assert [(o.aval.shape, o.aval.dtype) for o in (t, sq, pos)] == [
        ((3, 2), np.int32), ((), np.float64), ((2, 3), np.bool_)]


def test_compile_is_not_cached_here(cpu0, add_f32_4):
    # Executables belong to whoever compiled them (and are freed with it): no process-wide cache.
    import gc
    import weakref
    a = runtime.compile(add_f32_4, cpu0, F32_4)
    assert runtime.compile(add_f32_4, cpu0, F32_4) is not a
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None


def test_executable_cache_is_bounded_in_bytes(cpu0, add_f32_4):
    evicted = []
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    assert exe.size_estimate >= runtime.executable.EXECUTABLE_OVERHEAD_BYTES
    cache = runtime.ExecutableCache(3 * exe.size_estimate + 1, on_evict=lambda k, v: evicted.append(k))
    for k in range(5):
        assert cache.put(k, exe) is exe
    assert len(cache) == 3 and evicted == [0, 1] and cache.nbytes == 3 * exe.size_estimate
    assert cache.get(2) is exe      # now the most recently used
    cache.put(5, exe)
    assert evicted == [0, 1, 3] and cache.get(3) is None and list(cache) == [4, 2, 5]
    other = runtime.compile(add_f32_4, cpu0, F32_4)
    assert cache.put(5, other) is exe  # an existing key keeps its value
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0


def test_compile_ir_module(cpu0, add_f32_4):
    from jaxlib.mlir import ir

    ctx = runtime.mlir_context()
    assert runtime.mlir_context() is ctx
    with ctx:
        module = ir.Module.parse(add_f32_4)
    exe = runtime.compile(module, cpu0, F32_4)
    assert "stablehlo.add" in exe.as_text()
    one = runtime.put(np.ones(4, np.float32), cpu0)
    np.testing.assert_array_equal(runtime.to_numpy(exe.execute([one, one])[0]), np.full(4, 2, np.float32))


def test_compile_error_includes_xla_message(cpu0):
    with pytest.raises(runtime.CompileError, match="failed to compile") as info:
        runtime.compile("func.func @main( garbage", cpu0, F32_4)
    assert "error" in str(info.value)
    bad_alias = DONATE.replace("%a: tensor<1024xf32> {", "%a: tensor<512xf32> {").replace(
        "stablehlo.add %a, %b", "stablehlo.add %b, %b")
    with pytest.raises(runtime.CompileError, match="aliased"):
        runtime.compile(bad_alias, cpu0, [((1024,), np.float32)])


def test_out_types_count_checked(cpu0, add_f32_4):
    with pytest.raises(runtime.CompileError, match="returns 1 results but out_types lists 2"):
        runtime.compile(add_f32_4, cpu0, F32_4 * 2)


def test_compile_rejects_other_types(cpu0):
    with pytest.raises(TypeError, match="StableHLO text"):
        runtime.compile(42, cpu0, F32_4)


def test_execute_is_asynchronous(cpu0):
    exe = runtime.compile(_matmul_chain(6), cpu0, [((1024, 1024), np.float32)])
    x = runtime.put(np.full((1024, 1024), 1e-3, np.float32), cpu0)
    runtime.block_until_ready(exe.execute([x])[0])  # warm up
    for _ in range(3):  # retried: a noisy machine may deschedule us for the whole computation
        t0 = time.perf_counter()
        (out,) = exe.execute([x])
        launched = time.perf_counter() - t0
        ready_at_return = runtime.is_ready(out)
        runtime.block_until_ready(out)
        total = time.perf_counter() - t0
        if not ready_at_return and launched < total / 2:
            break
    else:
        pytest.fail(f"execute returned after {launched * 1e3:.1f} ms of {total * 1e3:.1f} ms, "
                    f"ready={ready_at_return}")
    assert runtime.is_ready(out)
    assert np.isfinite(runtime.to_numpy(out)).all()


def test_donation(cpu0):
    exe = runtime.compile(DONATE, cpu0, [((1024,), np.float32)], num_donated=1)
    assert exe.num_donated == 1
    x = runtime.put(np.arange(1024, dtype=np.float32), cpu0)
    y = runtime.put(np.ones(1024, np.float32), cpu0)
    (out,) = exe.execute([x, y])
    assert runtime.is_deleted(x) and not runtime.is_deleted(y)
    np.testing.assert_array_equal(runtime.to_numpy(out), np.arange(1024, dtype=np.float32) + 1)
    match = r"deleted or donated \(argument 0 of the computation\)"
    with pytest.raises(runtime.DeletedBufferError, match=match):
        exe.execute([x, y])
    with pytest.raises(runtime.DeletedBufferError, match="deleted or donated"):
        runtime.to_numpy(x)


def test_deleted_argument(cpu0, add_f32_4):
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    a = runtime.put(np.ones(4, np.float32), cpu0)
    b = runtime.put(np.ones(4, np.float32), cpu0)
    runtime.delete(b)
    with pytest.raises(runtime.DeletedBufferError, match="argument 1"):
        exe.execute([a, b])


def test_bad_arguments(cpu0, add_f32_4):
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    a = runtime.put(np.ones(4, np.float32), cpu0)
    with pytest.raises(TypeError, match="Argument 1 .* not a device buffer"):
        exe.execute([a, np.ones(4, np.float32)])
    with pytest.raises(TypeError, match="takes 2 arguments but was given 1"):
        exe.execute([a])
    with pytest.raises(runtime.KilnRuntimeError, match="size"):
        exe.execute([a, runtime.put(np.ones(5, np.float32), cpu0)])


def test_cost_analysis_and_memory_stats(cpu0, add_f32_4):
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    cost = exe.cost_analysis()
    assert cost is None or cost.get("flops", 4.0) == 4.0
    stats = exe.memory_stats()
    assert stats is None or stats.argument_size_in_bytes == 32


def test_wrong_device_subprocess(run_py):
    run_py("""
        import numpy as np
        from kiln import runtime
        ADD = '''func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.add %a, %b : tensor<4xf32>
          return %0 : tensor<4xf32>
        }'''
        d0, d1 = runtime.devices("cpu")
        e0 = runtime.compile(ADD, d0, [((4,), np.float32)])
        e1 = runtime.compile(ADD, d1, [((4,), np.float32)])
        assert e0 is not e1 and e1.device is d1
        x = np.arange(4, dtype=np.float32)
        a1, b1 = runtime.put(x, d1), runtime.put(x, d1)
        (o,) = e1.execute([a1, b1])
        assert runtime.buffer_device(o) is d1
        np.testing.assert_array_equal(runtime.to_numpy(o), 2 * x)
        try:
            e0.execute([runtime.put(x, d0), a1])
        except runtime.DeviceError as e:
            msg = str(e)
            assert "Argument 1" in msg and "CpuDevice(id=1)" in msg, msg
            assert "compiled for CpuDevice(id=0)" in msg, msg
        else:
            raise AssertionError("no DeviceError")
        (o,) = e0.execute([runtime.copy_to(a1, d0), runtime.copy_to(b1, d0)])
        np.testing.assert_array_equal(runtime.to_numpy(o), 2 * x)
        print("ok")
    """, env={"KILN_NUM_CPU_DEVICES": "2"})
