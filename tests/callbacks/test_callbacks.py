"""Host callbacks: kiln.debug.print / kiln.debug.callback, kiln.pure_callback, kiln.experimental.io_callback,
kiln.effects_barrier. Values are checked against NumPy, printed output with capsys; anything that could take
the interpreter down (a callback raising inside a loop, one returning garbage) runs in a subprocess."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.errors import CallbackError

SDS = kiln.ShapeDtypeStruct


def lines(capsys) -> list[str]:
    kiln.effects_barrier()
    return capsys.readouterr().out.splitlines()


# -- debug.print ------------------------------------------------------------------------------------------------

def test_print_under_jit_prints_every_call(capsys):
    @kiln.jit
    def f(x):
        kiln.debug.print("x = {x}, sum = {s}", x=x, s=x.sum())
        return x * 2

    np.testing.assert_array_equal(f(knp.arange(3.0)), [0, 2, 4])
    f(knp.arange(3.0) + 1)
    assert lines(capsys) == ["x = [0. 1. 2.], sum = 3.0", "x = [1. 2. 3.], sum = 6.0"]


def test_print_eager_prints_immediately(capsys):
    kiln.debug.print("eager {} {}", knp.arange(2), 3.5)
    assert capsys.readouterr().out == "eager [0 1] 3.5\n"


def test_print_formats_with_numpy_print_options_and_positional_args(capsys):
    kiln.jit(lambda x: kiln.debug.print("{0} and {0:.3f} {y}", x, y=x * knp.ones(2)))(np.float32(1.0) / 3)
    assert lines(capsys) == ["0.3333333432674408 and 0.333 [0.33333334 0.33333334]"]  # as JAX's
    with np.printoptions(precision=2):  # the print options where it is traced
        f = kiln.jit(lambda x: kiln.debug.print("{}", x))
        f(np.array([1 / 3], np.float32))
    f(np.array([2 / 3], np.float32))
    kiln.jit(lambda x: kiln.debug.print("{}", x))(np.array([1 / 3], np.float32))
    assert lines(capsys) == ["[0.33]", "[0.67]", "[0.33333334]"]


def test_print_under_vmap_prints_per_batch_element(capsys):
    def f(x):
        kiln.debug.print("row {}", x)
        return x.sum()
    xs = knp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(kiln.vmap(f)(xs), [3, 12])
    np.testing.assert_array_equal(kiln.jit(kiln.vmap(f))(xs), [3, 12])
    assert lines(capsys) == ["row [0. 1. 2.]", "row [3. 4. 5.]"] * 2


def test_inspect_array_sharding_on_one_device():
    """Eager, vmap (once, on the batched value), grad (on the primal) and jit (when lowered) on one device;
    tests/multidevice/test_inspect_sharding.py checks the layouts of partitioned programs."""
    seen = []

    def f(x):
        kiln.debug.inspect_array_sharding({"x": x, "y": x * 2}, callback=seen.append)
        return (x * x).sum()

    one = kiln.sharding.SingleDeviceSharding(kiln.devices()[0])
    x = knp.arange(3.0)
    f(x)
    np.testing.assert_allclose(kiln.grad(f)(x), [0, 2, 4])
    assert seen == [one] * 4
    seen.clear()
    np.testing.assert_allclose(kiln.vmap(f)(knp.ones((2, 3))), [3, 3])
    np.testing.assert_allclose(kiln.jit(kiln.vmap(f))(knp.ones((2, 3))), [3, 3])
    assert seen == [one] * 4
    seen.clear()
    g = kiln.jit(kiln.grad(f))
    g(x)
    g(x)  # compiled once: reported once (for x and for y)
    assert seen == [one, one]


def test_print_under_grad_prints_primal_values(capsys):
    def f(x):
        kiln.debug.print("x = {}", x)
        return (x ** 2).sum()
    x = knp.arange(3.0)
    np.testing.assert_allclose(kiln.grad(f)(x), [0, 2, 4])
    np.testing.assert_allclose(kiln.jit(kiln.grad(f))(x), [0, 2, 4])
    _, t = kiln.jvp(f, (x,), (knp.ones(3),))
    np.testing.assert_allclose(t, 6.0)
    assert lines(capsys) == ["x = [0. 1. 2.]"] * 3


def test_print_in_loops_and_branches(capsys):
    def f(x):
        def body(i, c):
            kiln.debug.print("fori {} {}", i, c)
            return c + i
        y = lax.fori_loop(0, 3, body, x)
        _, ys = lax.scan(lambda c, t: (c, (kiln.debug.print("scan {}", t), t * 2)[1]), 0.0, knp.arange(2.0))
        z = lax.while_loop(lambda c: c < 2, lambda c: (kiln.debug.print("while {}", c), c + 1)[1], 0)
        w = lax.cond(x > 0, lambda: (kiln.debug.print("pos"), 1.0)[1], lambda: (kiln.debug.print("neg"), -1.0)[1])
        return y, ys, z, w
    expected = ["fori 0 1.0", "fori 1 1.0", "fori 2 2.0", "scan 0.0", "scan 1.0", "while 0", "while 1", "pos"]
    for g in (f, kiln.jit(f)):
        y, ys, z, w = g(1.0)
        assert (float(y), ys.tolist(), int(z), float(w)) == (4.0, [0.0, 2.0], 2, 1.0)
        assert sorted(lines(capsys)) == sorted(expected)  # unordered prints: any order XLA chooses


def test_print_kept_when_its_loop_result_is_unused(capsys):
    @kiln.jit
    def f(x):
        lax.fori_loop(0, 2, lambda i, c: (kiln.debug.print("i={}", i), c)[1], x)  # result unused
        lax.cond(x > 0, lambda: kiln.debug.print("branch"), lambda: None)
        return x
    f(1.0)
    assert sorted(lines(capsys)) == ["branch", "i=0", "i=1"]


def test_print_under_remat_and_scan_grad(capsys):
    g = kiln.grad(kiln.checkpoint(lambda x: (kiln.debug.print("remat {}", x), knp.sin(x))[1]))
    np.testing.assert_allclose(g(1.0), np.cos(1.0), rtol=1e-6)
    assert set(lines(capsys)) == {"remat 1.0"}  # in the forward pass (and again where remat recomputes)

    def loss(x):
        def step(c, t):
            kiln.debug.print("t={}", t)
            return c + x * t, None
        return lax.scan(step, 0.0, knp.arange(3.0))[0]
    np.testing.assert_allclose(kiln.jit(kiln.grad(loss))(2.0), 3.0)
    assert lines(capsys) == ["t=0.0", "t=1.0", "t=2.0"]


def test_print_format_errors():
    with pytest.raises(ValueError, match=r"unused keyword arguments \['y'\].*f-string"):
        kiln.debug.print("{x}", x=1, y=2)
    with pytest.raises(ValueError, match=r"unused positional arguments \[2\]"):
        kiln.debug.print("{}", 1, 2)
    with pytest.raises(TypeError, match="kiln.debug.print: the format must be a string, got int"):
        kiln.debug.print(3)
    with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
        kiln.debug.print(None, 1)


def test_print_two_call_form_and_static_arguments(capsys):
    kiln.jit(lambda x: kiln.debug.print(ordered=True)("{a} {b}", a=x, b="text"))(2)
    assert lines(capsys) == ["2 text"]


# -- debug.callback ---------------------------------------------------------------------------------------------

def test_debug_callback_gets_numpy_arrays_and_static_args():
    seen = []

    def cb(x, tag, *, scale):
        seen.append((type(x), x.dtype, x.tolist(), tag, scale, x.flags.writeable))

    @kiln.jit
    def f(x):
        kiln.debug.callback(cb, x, "tag", scale=x * 2)
        return x
    f(knp.arange(2, dtype=knp.int32))
    kiln.effects_barrier()
    (kind, dtype, values, tag, scale, writeable), = seen
    assert kind is np.ndarray and dtype == np.int32 and values == [0, 1] and tag == "tag" and not writeable
    np.testing.assert_array_equal(scale, [0, 2])


def test_debug_callback_errors():
    with pytest.raises(TypeError, match="kiln.debug.callback: the first argument must be callable, got an object of "
                                        "type int"):
        kiln.debug.callback(3)
    with pytest.raises(CallbackError, match=r"debug.callback\(.*boom.*\) raised ZeroDivisionError"):
        def boom(x):
            return 1 / 0
        kiln.debug.callback(boom, 1.0)


# -- pure_callback ----------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::kiln.errors.RetraceWarning")  # one jit per case, on purpose
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64, np.bool_])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_pure_callback_values(shape, dtype):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=shape) > 0 if dtype == np.bool_ else (rng.normal(size=shape) * 4)).astype(dtype)

    def host(v):
        return np.flip(v).copy(), (v == v).sum(dtype=np.int32)
    expected = (np.flip(x), np.int32(x.size))

    def f(v):
        return kiln.pure_callback(host, (SDS(shape, dtype), SDS((), np.int32)), v)
    for g in (f, kiln.jit(f)):
        a, n = g(x)
        np.testing.assert_array_equal(a, expected[0])
        assert a.dtype == dtype and int(n) == x.size


def test_pure_callback_pytrees_kwargs_and_scalar_results():
    def host(pair, *, k):
        return {"s": pair[0] + pair[1] * k, "c": 3.0}   # a Python float for a float32 scalar is converted

    @kiln.jit
    def f(x, y):
        return kiln.pure_callback(host, {"s": SDS((2,), np.float32), "c": SDS((), np.float32)}, (x, y), k=y)
    out = f(knp.ones(2), knp.full(2, 2.0))
    np.testing.assert_array_equal(out["s"], [5, 5])
    assert out["c"].dtype == np.float32 and float(out["c"]) == 3.0


def test_pure_callback_float64_result_is_converted_without_x64():
    f = kiln.jit(lambda x: kiln.pure_callback(lambda v: np.asarray(v, np.float64) * 2, SDS((3,), np.float32), x))
    out = f(knp.ones(3))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2, 2, 2])


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_pure_callback_vmap_methods(method):
    shapes = []

    def host(x, y):
        shapes.append((x.shape, y.shape))
        return (x + 2 * y).astype(np.float32)

    def f(x, y):
        shape = np.broadcast_shapes(x.shape, y.shape)
        return kiln.pure_callback(host, SDS(shape, np.float32), x, y, vmap_method=method)
    xs = np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.array([1.0, -1.0], np.float32)
    expected = np.stack([xs[i] + 2 * y for i in range(4)])  # the Python loop
    for g in (kiln.vmap(f, in_axes=(0, None)), kiln.jit(kiln.vmap(f, in_axes=(0, None)))):
        shapes.clear()
        np.testing.assert_array_equal(g(xs, y), expected)
        want = {"sequential": [((2,), (2,))] * 4, "sequential_unrolled": [((2,), (2,))] * 4,
                "expand_dims": [((4, 2), (1, 2))], "broadcast_all": [((4, 2), (4, 2))],
                "legacy_vectorized": [((4, 2), (2,))]}[method]
        assert shapes == want


def test_pure_callback_vmap_with_batch_axis_not_first():
    f = functools.partial(kiln.pure_callback, lambda v: v * 3, SDS((2,), np.float32), vmap_method="sequential")
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(kiln.vmap(f, in_axes=1)(xs), xs.T * 3)


def test_pure_callback_is_dropped_when_unused_and_io_callback_is_not():
    calls = []

    @kiln.jit
    def f(x):
        kiln.pure_callback(lambda v: (calls.append("pure"), v)[1], SDS((), np.float32), x)
        kiln.experimental.io_callback(lambda v: (calls.append("io"), v)[1], SDS((), np.float32), x)
        return x
    f(1.0)
    kiln.effects_barrier()
    assert calls == ["io"]


def test_pure_callback_errors():
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        kiln.pure_callback(lambda v: v, SDS((), np.float32), 1.0, vmap_method="parallel")
    with pytest.raises(ValueError, match="cannot specify 64-bit types \\(float64\\) when enable_x64 is off"):
        kiln.pure_callback(lambda v: v, SDS((), np.float64), 1.0)
    with pytest.raises(TypeError, match="result_shape_dtypes must be a pytree of objects with .shape and .dtype"):
        kiln.pure_callback(lambda v: v, [3], 1.0)
    with pytest.raises(kiln.KilnError, match="pure callbacks do not support JVP.*custom_jvp"):
        kiln.grad(lambda x: kiln.pure_callback(lambda v: v, SDS((), np.float32), x))(1.0)
    with pytest.raises(NotImplementedError, match="needs its vmap_method: pass vmap_method= one of 'sequential'"):
        kiln.vmap(lambda x: kiln.pure_callback(lambda v: v, SDS((), np.float32), x))(knp.ones(3))


def test_pure_callback_with_custom_jvp_is_differentiable():
    @kiln.custom_jvp
    def host_sin(x):
        return kiln.pure_callback(np.sin, SDS(x.shape, x.dtype), x)

    @host_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), knp.cos(x) * t
    x = np.array([0.3, 1.2], np.float32)
    np.testing.assert_allclose(kiln.jit(kiln.grad(lambda v: host_sin(v).sum()))(x), np.cos(x), rtol=1e-6)


# -- result checks and exceptions -------------------------------------------------------------------------------

@pytest.mark.parametrize("returns, message", [
    (lambda v: v.astype(np.int32),
     r"result 0 has shape \(3,\) and dtype int32, but the declared result is float32\[3\]"),
    (lambda v: v[:2], r"result 0 has shape \(2,\) and dtype float32, but the declared result is float32\[3\]"),
    (lambda v: (v, v), r"returned 2 results, expected 1 \(float32\[3\]\)"),
    (lambda v: None, r"returned 0 results, expected 1 \(float32\[3\]\)"),
    (lambda v: 3, r"result 0 has shape \(\) and dtype int32, but the declared result is float32\[3\]"),
])
def test_wrong_results_name_the_callback(returns, message):
    def my_host_fn(v):
        return returns(v)
    f = kiln.jit(lambda x: kiln.pure_callback(my_host_fn, SDS((3,), np.float32), x))
    with pytest.raises(CallbackError, match=r"pure_callback\(.*my_host_fn\).*" + message):
        f(knp.ones(3))
    with pytest.raises(CallbackError, match=message):  # eagerly: the same check
        kiln.pure_callback(my_host_fn, SDS((3,), np.float32), knp.ones(3))


def test_exception_in_callback_is_a_kiln_error_with_the_traceback():
    def failing_host_fn(v):
        raise KeyError("no such entry")
    f = kiln.jit(lambda x: kiln.experimental.io_callback(failing_host_fn, SDS((), np.float32), x) + 1)
    for _ in range(2):  # and the executable still works afterwards
        with pytest.raises(CallbackError) as info:
            f(1.0)
        msg = str(info.value)
        assert "io_callback(" in msg and "failing_host_fn) raised KeyError: 'no such entry'" in msg
        assert "Traceback of the callback" in msg and 'raise KeyError("no such entry")' in msg
        assert isinstance(info.value.__cause__, KeyError) and isinstance(info.value, kiln.KilnError)
        assert info.value.callback_name.endswith("failing_host_fn)")
    ok = kiln.jit(lambda x: kiln.experimental.io_callback(lambda v: v * 2, SDS((), np.float32), x))
    assert float(ok(2.0)) == 4.0


def test_runtime_host_callback_checks_its_results():
    cb = kiln.runtime.HostCallback(lambda x: x, "raw", [((2,), np.float32)])
    with pytest.raises(kiln.runtime.CallbackResultError, match="raw must return a sequence of 1 arrays, got ndarray"):
        cb.call(np.ones(2, np.float32))
    ok = kiln.runtime.HostCallback(lambda x: [x.tolist()], "listy", [((2,), np.int32)], kiln.dtypes.canonicalize_dtype)
    (out,) = ok.call(np.arange(2))
    assert out.dtype == np.int32 and out.tolist() == [0, 1]


def test_callback_raising_inside_a_loop_and_returning_garbage(run_py):
    proc = run_py("""
        import numpy as np, kiln
        from kiln import lax
        from kiln.errors import CallbackError
        def host(i):
            if i == 3:
                raise RuntimeError("step 3 failed")
            return i
        def body(i, c):
            return c + kiln.pure_callback(host, kiln.ShapeDtypeStruct((), np.int32), i)
        f = kiln.jit(lambda x: lax.fori_loop(0, 10, body, x))
        for _ in range(3):
            try:
                f(0)
            except CallbackError as e:
                assert "step 3 failed" in str(e), e
            else:
                raise AssertionError("no error")
        g = kiln.jit(lambda x: kiln.pure_callback(lambda v: object(), kiln.ShapeDtypeStruct((2,), np.float32), x))
        try:
            g(np.ones(2, np.float32))
        except CallbackError as e:
            print("garbage:", e)
        print("alive", int(kiln.jit(lambda x: lax.fori_loop(0, 3, body, x))(0)))
    """)
    assert "garbage: kiln: the host callback pure_callback(" in proc.stdout
    assert "has shape () and dtype object" in proc.stdout
    assert "alive 3" in proc.stdout


# -- io_callback and ordering -----------------------------------------------------------------------------------

def test_ordered_io_callbacks_run_in_program_order():
    log = []

    def record(tag, i):
        log.append((tag, int(i)))

    @kiln.jit
    def f(x):
        def body(i, c):
            for k in range(5):
                kiln.experimental.io_callback(functools.partial(record, k), None, i, ordered=True)
            return c + 1
        c = lax.fori_loop(0, 4, body, x)
        kiln.debug.callback(lambda v: log.append(("after", int(v))), c, ordered=True)
        return c
    for _ in range(2):
        log.clear()
        assert int(f(0)) == 4
        kiln.effects_barrier()
        assert log == [(k, i) for i in range(4) for k in range(5)] + [("after", 4)]


def test_ordered_callbacks_across_calls_and_branches():
    log = []

    def g(x):
        kiln.experimental.io_callback(lambda v: log.append(("a", float(v))), None, x, ordered=True)
        lax.cond(x > 0, lambda: kiln.debug.print(ordered=True)("{}", x),
                 lambda: kiln.debug.callback(lambda v: log.append(("neg", float(v))), x, ordered=True))
        _, _ = lax.scan(lambda c, t: (c, kiln.experimental.io_callback(
            lambda v: (log.append(("s", float(v))), v)[1], SDS((), np.float32), t, ordered=True)), 0.0,
            knp.arange(2.0))
        return x
    jg = kiln.jit(g)
    for v in (-1.0, -2.0):
        jg(v)
    kiln.effects_barrier()
    assert log == [("a", -1.0), ("neg", -1.0), ("s", 0.0), ("s", 1.0), ("a", -2.0), ("neg", -2.0), ("s", 0.0),
                   ("s", 1.0)]


def test_io_callback_vmap_and_errors():
    calls = []
    f = kiln.vmap(lambda x: kiln.experimental.io_callback(lambda v: (calls.append(v.shape), v * 2)[1],
                                                          SDS((), np.float32), x))
    np.testing.assert_array_equal(kiln.jit(f)(knp.arange(3.0)), [0, 2, 4])
    assert calls == [()] * 3
    with pytest.raises(ValueError, match="cannot vmap the ordered IO callback"):
        kiln.vmap(lambda x: kiln.experimental.io_callback(lambda v: v, SDS((), np.float32), x, ordered=True))(
            knp.ones(2))
    with pytest.raises(kiln.KilnError, match="IO callbacks do not support JVP"):
        kiln.grad(lambda x: kiln.experimental.io_callback(lambda v: v, SDS((), np.float32), x))(1.0)
    with pytest.raises(TypeError, match="kiln.experimental.io_callback: the first argument must be callable"):
        kiln.experimental.io_callback(None, None)


def test_io_callback_result_none_and_eager():
    seen = []
    assert kiln.experimental.io_callback(lambda v: seen.append(int(v)), None, 5) is None
    assert seen == [5]


def test_effects_barrier_and_jit_dispatch_still_work():
    kiln.effects_barrier()  # nothing pending
    f = kiln.jit(lambda x: x + 1)
    assert float(f(f(1.0))) == 3.0


# -- error paths of the lowering and the runtime ------------------------------------------------------------------

def test_ordered_callback_in_while_cond_runs_at_each_evaluation():
    """An ordered callback in cond_fun runs before the loop and after each trip of the body, in order with the body's
    ordered callbacks, its token threaded (JAX's lowering); carries of several values, constants of both functions,
    eagerly and nested in a scan."""
    seen = []

    def log(tag):
        return lambda v: (seen.append((tag, int(v))), v)[1]

    limit, step = knp.int32(3), knp.int32(1)  # (constants of cond_fun and body_fun)

    def cond(c):
        kiln.experimental.io_callback(log("cond"), SDS((), np.int32), c[0], ordered=True)
        return c[0] < limit

    def body(c):
        kiln.experimental.io_callback(log("body"), SDS((), np.int32), c[0], ordered=True)
        return c[0] + step, c[1] * 2.0

    def loop(x):
        return lax.while_loop(cond, body, (knp.int32(0), x))

    i, y = kiln.jit(loop)(1.5)
    kiln.effects_barrier()
    assert (int(i), float(y)) == (3, 12.0)
    order = [("cond", 0), ("body", 0), ("cond", 1), ("body", 1), ("cond", 2), ("body", 2), ("cond", 3)]
    assert seen == order
    seen.clear()
    assert float(loop(knp.float32(1.0))[1]) == 8.0  # eagerly
    assert seen == order
    seen.clear()
    _, ys = kiln.jit(lambda xs: lax.scan(lambda k, x: (k, loop(x)[1]), 0, xs))(knp.array([1.0, 2.0]))
    kiln.effects_barrier()
    np.testing.assert_array_equal(np.asarray(ys), [8.0, 16.0])
    assert seen == order + order
    text = kiln.jit(loop).lower(1.5).as_text()
    assert text.count("stablehlo.while") == 1 and "!stablehlo.token" in text
    # an unordered print in cond_fun needs no token
    kiln.jit(lambda x: lax.while_loop(lambda c: (kiln.debug.print("c={}", c), c < 1)[1], lambda c: c + 1, x))(0)


def test_callbacks_on_a_platform_without_them_and_text_modules():
    from kiln import lowering, runtime
    ir = kiln.make_ir(lambda x: kiln.pure_callback(np.sin, SDS((), np.float32), x))(1.0).ir
    with pytest.raises(lowering.LoweringError, match=r"host callbacks \(pure_callback\(sin\)\) are not supported on "
                                                     "the tpu platform"):
        lowering.lower(ir, context=runtime.mlir_context(), platform="tpu")
    lowered = lowering.lower(ir, context=runtime.mlir_context(), platform="cpu")
    assert len(lowered.host_callbacks) == 1 and "xla_ffi_python_cpu_callback" in lowered.as_text()
    assert "mhlo.backend_config = {index = 0 : ui64}" in lowered.as_text()
    with pytest.raises(TypeError, match="a module with host callbacks must be given as a jaxlib.mlir ir.Module"):
        runtime.compile(lowered.as_text(), kiln.devices()[0], [((), np.float32)],
                        host_callbacks=lowered.host_callbacks)


def test_debug_callback_two_call_form():
    seen = []
    kiln.jit(lambda x: kiln.debug.callback(ordered=True)(lambda v: seen.append(int(v)), x))(7)
    kiln.effects_barrier()
    assert seen == [7]
    with pytest.raises(TypeError, match="kiln.debug.callback received unexpected arguments in the two-call form"):
        kiln.debug.callback(None, 1)


def test_callbacks_in_fresh_processes_with_and_without_the_persistent_cache(run_py, tmp_path):
    """The same program in three fresh processes: a compile cache (when there is one) must re-bind the
    callables or skip such programs, never run a stale callback or none."""
    code = """
        import numpy as np, kiln
        from kiln import lax
        @kiln.jit
        def f(x):
            kiln.debug.print("x={}", x)
            return lax.fori_loop(0, 2, lambda i, c: c + kiln.pure_callback(
                lambda v: v * 10, kiln.ShapeDtypeStruct((), np.float32), c), x)
        print("result", float(f(1.0)))
    """
    for env in ({"KILN_COMPILATION_CACHE": "0"}, {"KILN_CACHE_DIR": str(tmp_path)}, {"KILN_CACHE_DIR": str(tmp_path)}):
        out = run_py(code, env=env).stdout.splitlines()
        assert out == ["x=1.0", "result 121.0"], (env, out)


def test_debug_log_sends_each_run_to_the_kiln_debug_logger(caplog, capsys):
    """kiln.debug.log (jax.debug.log): debug.print's formatting, at every run, as an INFO record of the kiln.debug
    logger from the user's line; nothing on standard output."""
    import logging
    caplog.set_level(logging.INFO, logger="kiln.debug")

    @kiln.jit
    def f(x):
        kiln.debug.log("x = {x}, total {}", x.sum(), x=x)  # the line the records name
        return x * 2

    line = f.__wrapped__.__code__.co_firstlineno + 2
    f(knp.arange(3.0))
    f(knp.arange(3.0) + 1)
    kiln.vmap(lambda v: kiln.debug.log("v={}", v))(knp.arange(2))
    kiln.debug.log(ordered=True)("two-call form {}", 7)
    kiln.effects_barrier()
    records = [r for r in caplog.records if r.name == "kiln.debug"]
    assert [r.getMessage() for r in records] == ["x = [0. 1. 2.], total 3.0", "x = [1. 2. 3.], total 6.0", "v=0",
                                                 "v=1", "two-call form 7"]
    assert all(r.levelno == logging.INFO for r in records)
    assert records[0].filename == "test_callbacks.py" and records[0].lineno == line
    assert capsys.readouterr().out == ""
    with pytest.raises(TypeError, match=r"kiln\.debug\.log: the format must be a string, got int"):
        kiln.debug.log(3)
