"""Eager kiln.numpy calls run as one compiled program per signature (frontend/driver/eager_jit.py), and small
calls of all-array (or scalar) signatures launch directly (frontend/driver/direct_call.py)."""
import logging

import numpy as np
import pytest
import scipy.special
from kiln.frontend.driver.array import Array as ConcreteArray  # (kiln.Array is the public type)
from kiln.frontend.driver.direct_call import DirectCall

import kiln
import kiln.numpy as knp

RNG = np.random.default_rng(0)


@pytest.fixture
def compiles(caplog):
    caplog.set_level(logging.WARNING, logger="kiln")
    with kiln.config.override("log_compiles", True):
        yield lambda: [r.getMessage() for r in caplog.records if "XLA compilation" in r.getMessage()]


def test_scalar_operand_is_broadcast_inside_one_program(primitive_runs):
    x = knp.asarray(RNG.standard_normal(1000).astype(np.float32))
    y = x * 1.67
    assert primitive_runs == []  # no separate broadcast (nor convert) of the scalar to a full array
    np.testing.assert_array_equal(y, np.asarray(x) * np.float32(1.67))
    selu = 1.0507 * knp.where(x > 0, x, 1.6733 * knp.exp(x) - 1.6733)
    assert primitive_runs == []
    expect = 1.0507 * np.where(np.asarray(x) > 0, np.asarray(x), 1.6733 * np.exp(np.asarray(x)) - 1.6733)
    np.testing.assert_allclose(selu, expect.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_one_compile_per_signature(compiles):
    x = knp.asarray(RNG.standard_normal((3, 5)).astype(np.float32))
    before = len(compiles())
    for _ in range(3):
        knp.tanh(x), knp.sum(x, axis=1), x + 2.5
    assert len(compiles()) - before <= 3  # at most one each (none when another test compiled them already)
    n = len(compiles())
    knp.sum(x, axis=0)  # a new static option: a new program
    assert len(compiles()) == n + 1 and "sum" in compiles()[-1]


@pytest.mark.parametrize("dtype", [np.float16, knp.bfloat16, np.float32, np.int8, np.uint8, np.int32, np.bool_])
def test_eager_equals_traced_dtypes_and_weak_types(dtype):
    """Eager results equal the same expression traced: dtypes, weak types and values, for Python scalars of each
    kind beside arrays of each dtype."""
    x = knp.asarray((RNG.standard_normal(6) * 4).astype(np.float32)).astype(dtype)
    exprs = [lambda a: a + 2, lambda a: a * 2.5, lambda a: a > 1, lambda a: knp.maximum(a, 0),
             lambda a: knp.where(a > 0, a, 0), lambda a: knp.sum(a), lambda a: a * True, lambda a: -a,
             lambda a: knp.abs(a), lambda a: a ** 2, lambda a: knp.max(a, keepdims=True)]
    if np.dtype(dtype) == np.bool_:
        exprs = [e for i, e in enumerate(exprs) if i in (2, 5, 6, 10)]
    for expr in exprs:
        eager, traced = expr(x), kiln.jit(expr)(x)
        assert eager.dtype == traced.dtype and eager.weak_type == traced.weak_type, expr
        np.testing.assert_array_equal(np.asarray(eager, np.float64), np.asarray(traced, np.float64))


def test_integer_overflow_checks_are_kept():
    small = knp.asarray(np.array([1, 2], np.uint8))
    np.testing.assert_array_equal(small + 5, [6, 7])
    np.testing.assert_array_equal(small + 5, [6, 7])  # the direct launch of (uint8 array, small int)
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.add: Python int 300 is out of range for uint8"):
        small + 300
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.multiply: Python int -1 is out of range"):
        small * -1
    big = knp.arange(3.0) * 2**20  # a larger int beside a float array converts to the float
    np.testing.assert_array_equal(big, np.arange(3.0, dtype=np.float32) * np.float32(2**20))
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.multiply: Python int 1099511627776 is out"):
        knp.arange(3.0) * 2**40  # beyond int32 (without x64), as JAX
    i32 = knp.arange(3)
    np.testing.assert_array_equal(i32 + 1000, np.arange(3) + 1000)


def test_bad_arguments_get_the_functions_own_messages():
    x = knp.ones(3)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.add: argument 1 is a list"):
        knp.add(x, [1, 2, 3])
    with pytest.raises(kiln.BroadcastError, match=r"kiln\.numpy\.add: operands could not be broadcast"):
        x + knp.ones(4)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.sum: out= is not supported"):
        knp.sum(x, out=x)
    x.delete()
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.numpy\.tanh: argument x refers to a deleted array"):
        knp.tanh(x)


def test_static_options_the_cpp_path_cannot_hash_run_op_by_op():
    x = knp.arange(6.0)
    for shape in [(knp.asarray(2), 3), (np.int64(3), 2), [2, 3]]:  # an array, a NumPy int, a list
        assert knp.reshape(x, shape).shape == tuple(int(d) for d in shape)
    np.testing.assert_array_equal(knp.sum(x.reshape(2, 3), axis=[0, 1]), 15.0)


def test_eager_programs_per_function_are_bounded(monkeypatch):
    from kiln.frontend.driver import eager_jit as eager_jit_module
    monkeypatch.setattr(eager_jit_module, "EAGER_SIGNATURES", 4)
    cos = eager_jit_module.eager_jit()(lambda x: knp.cos(x))  # a function made after the bound is lowered
    for n in range(1, 9):
        np.testing.assert_allclose(cos(knp.zeros(n)), np.ones(n))
    jitted, = cos._eager_state
    assert len(jitted._signatures.entries) == 4
    assert jitted._cpp is None or jitted._cpp._cache_size() <= 4
    np.testing.assert_allclose(cos(knp.zeros(3)), np.ones(3))


def test_inside_a_trace_the_implementation_is_inlined():
    ir = kiln.make_ir(lambda a: knp.tanh(a) * 2.0 + knp.sum(a))(knp.ones(3))
    names = [e.prim.name for e in ir.ir.eqns]
    assert "tanh" in names and "reduce_sum" in names and not any("call" in n for n in names)


def test_host_arrays_and_lists_of_axes():
    host = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(knp.sum(host, axis=[0, 1]), host.sum())
    np.testing.assert_array_equal(knp.multiply(host, 2.0), host * 2)
    host[0, 0] = 100.0  # the result above is not affected: jit copies host arrays
    np.testing.assert_array_equal(knp.max(host), 100.0)


def test_debug_nans_still_checks_eager_ops():
    with kiln.config.override("debug_nans", True):
        with pytest.raises(FloatingPointError, match="log"):
            knp.log(knp.asarray([-1.0]))
    np.testing.assert_array_equal(knp.log(knp.asarray([1.0])), [0.0])


# -- the direct launch of the last all-arrays signature ------------------------------------------------------

def test_direct_launch_matches_and_falls_back(count_misses):
    f = kiln.jit(lambda a, b: (a * b, a - b))
    a, b = knp.arange(4.0), knp.ones(4)
    first = f(a, b)
    assert f._signatures.direct is not None
    for _ in range(3):
        out = f(a, b)
        assert type(out) is tuple and len(out) == 2
        np.testing.assert_array_equal(out[0], first[0])
    assert len(count_misses) == (1 if f._cpp is not None else 0)  # (no C++ dispatch: no C++ misses)
    # equal but distinct arrays, a new shape, a committed argument: right results on every path
    np.testing.assert_array_equal(f(knp.arange(4.0), knp.ones(4))[1], np.arange(4.0) - 1)
    np.testing.assert_array_equal(f(knp.arange(3.0), knp.ones(3))[0], np.arange(3.0))
    committed = kiln.device_put(knp.ones(4), kiln.devices()[0])
    out = f(a, committed)
    assert out[0].committed and not f(a, b)[0].committed
    np.testing.assert_array_equal(f(a, b)[0], np.arange(4.0))


def test_direct_launch_scalars():
    f = kiln.jit(lambda a, s: a * s)
    x = knp.arange(4.0)
    for s in [2.0, 3.0, 2.0, float("nan"), *[float(i) for i in range(100)], 2.0]:  # more values than are kept
        np.testing.assert_array_equal(f(x, s), np.arange(4.0, dtype=np.float32) * np.float32(s))
    i = knp.arange(4)
    assert f(i, 5).dtype == np.int32 and f(i, True).dtype == np.int32
    with pytest.raises(kiln.IntegerOverflowError, match="out of range for int32"):
        f(i, 2**40)
    np.testing.assert_array_equal(f(i, 2**30), np.arange(4, dtype=np.int32) * np.int32(2**30))


def test_direct_launch_of_one_array_and_one_scalar(monkeypatch):
    # x * 2.0, 2.0 - x, x > 0: DirectCall.run unrolled; every mismatch falls back to the other paths.
    from kiln.frontend.driver import eager_jit as eager_jit_module
    from kiln.frontend.driver.direct_call import ArrayAndScalarCall
    x = knp.arange(13.0)  # a shape no other test gives these ops: the signature is new, so it becomes the direct one
    for _ in range(2):
        x * 2.0, 2.0 - x
    sigs = knp.subtract._eager_state[0]._signatures
    assert type(sigs.direct) is ArrayAndScalarCall and sigs.direct.array_at == 1
    monkeypatch.setattr(eager_jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    for s in (2.0, 3.5, 2.0):
        np.testing.assert_array_equal(x * s, np.arange(13.0, dtype=np.float32) * np.float32(s))
        np.testing.assert_array_equal(s - x, np.float32(s) - np.arange(13.0, dtype=np.float32))
    monkeypatch.undo()
    y = 10.0 - knp.arange(3.0)  # another shape
    np.testing.assert_array_equal(y, [10.0, 9.0, 8.0])
    i = 3 - knp.arange(4)  # an int scalar beside an int array: another signature, int32 as before
    assert i.dtype == np.int32 and i.tolist() == [3, 2, 1, 0]
    assert (2.0 - knp.arange(4)).dtype == np.float32
    x.delete()
    with pytest.raises(kiln.DeletedBufferError, match="refers to a deleted"):
        2.0 - x


def test_direct_launch_with_static_options(monkeypatch):
    # knp.sum(x, axis=0), knp.round(x, 2), static_argnums: the options must equal the recorded ones, by type too.
    from kiln.frontend.driver import eager_jit as eager_jit_module
    from kiln.frontend.driver.direct_call import OneArrayOptionsCall
    h = np.arange(12.0, dtype=np.float32).reshape(3, 4) * np.float32(1.2345)
    x = knp.asarray(h)
    for _ in range(2):
        knp.sum(x, axis=0), knp.sum(x, axis=1), knp.round(x, 2), knp.round(x, 1)
    # (one array by position, the rest options: matched and launched without the inner signature's run)
    assert type(knp.sum._eager_state[0]._signatures.direct) is OneArrayOptionsCall
    assert type(knp.round._eager_state[0]._signatures.direct) is OneArrayOptionsCall
    monkeypatch.setattr(eager_jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    for _ in range(2):
        np.testing.assert_allclose(knp.sum(x, axis=0), h.sum(axis=0), rtol=1e-6)
        np.testing.assert_allclose(knp.sum(x, axis=1), h.sum(axis=1), rtol=1e-6)
        np.testing.assert_allclose(knp.round(x, 2), np.round(h, 2), rtol=1e-6)  # rounded in float32 (as JAX)
        np.testing.assert_allclose(knp.round(x, 1), np.round(h, 1), rtol=1e-6)
    monkeypatch.undo()
    np.testing.assert_allclose(knp.sum(x), h.sum(), rtol=1e-6)  # no option: another signature
    np.testing.assert_allclose(knp.sum(x, 1), h.sum(axis=1), rtol=1e-6)  # the option given by position
    np.testing.assert_allclose(knp.sum(a=x, axis=1), h.sum(axis=1), rtol=1e-6)  # the array by keyword
    np.testing.assert_allclose(knp.round(x, 1), np.round(h, 1), rtol=1e-6)
    np.testing.assert_allclose(knp.round(x, decimals=2), np.round(h, 2), rtol=1e-6)  # by keyword: not (x, 1)
    np.testing.assert_allclose(knp.sum(x, axis=np.int64(1)), h.sum(axis=1), rtol=1e-6)  # == 1, another type
    f = kiln.jit(lambda a, n: a * n, static_argnums=1)
    i = knp.arange(3)
    for _ in range(2):
        assert f(i, 2).dtype == np.int32
    assert f(i, 2.0).dtype == np.float32  # 2.0 == 2, but another type: another program
    g = kiln.jit(lambda a, k=1: a + k, static_argnames="k")
    for _ in range(2):
        np.testing.assert_array_equal(g(i, k=5), [5, 6, 7])
    np.testing.assert_array_equal(g(i), [1, 2, 3])  # k left to its default is not k=5
    np.testing.assert_array_equal(g(i, 7), [7, 8, 9])
    np.testing.assert_array_equal(g(i), [1, 2, 3])  # nor is k=7 given by position (never matched inline)
    # The recorded signatures take a float32[3, 4] array: another shape or a NumPy array is another call.
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        np.testing.assert_array_equal(knp.swapaxes(x, 0, 1), h.T)
        np.testing.assert_array_equal(knp.swapaxes(knp.asarray(m), 0, 1), m.T)
        np.testing.assert_array_equal(knp.swapaxes(m, 0, 1), m.T)
        with pytest.raises(TypeError, match="kiln.numpy.sum: argument 0 is a list"):
            knp.sum([[1.0, 2.0]], axis=0)
        np.testing.assert_array_equal(knp.sum(x, axis=0).shape, (4,))
    x.delete()
    with pytest.raises(kiln.DeletedBufferError, match="kiln.numpy.sum: argument a refers to a deleted"):
        knp.sum(x, axis=0)


def test_direct_launch_follows_flags():
    f = kiln.jit(lambda a: a + 1.0)
    x = knp.ones(2)
    f(x), f(x)
    with kiln.config.override("enable_x64", True):
        assert f(np.ones(2)).dtype == np.float64
        assert f(x).dtype == np.float32  # a float32 argument stays float32
    with kiln.config.override("debug_nans", True):
        g = kiln.jit(lambda a: knp.log(a))
        with pytest.raises(FloatingPointError):
            g(-x)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])


def test_direct_launch_deleted_and_donated_arguments():
    f = kiln.jit(lambda a: a + 1)
    x = knp.ones(3)
    f(x), f(x)
    x.delete()
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.jit\(<lambda>\): argument a refers to a deleted"):
        f(x)
    g = kiln.jit(lambda a: a * 2, donate_argnums=0)
    y = knp.ones(3)
    out = g(y)
    assert type(g._signatures.direct) is DirectCall and g._signatures.direct.donated == (0,)
    with pytest.raises(kiln.DeletedBufferError, match=r"argument a refers to a deleted array: it was donated"):
        g(y)
    np.testing.assert_array_equal(g(out), [4.0, 4.0, 4.0])
    assert out.is_deleted()


def test_direct_launch_donates_arrays_whose_host_view_is_cached(monkeypatch):
    """The direct launch drops a donated array's cached host view first, as the Python path does: a pinned buffer
    is silently not donated by XLA."""
    g = kiln.jit(lambda a: a * 2, donate_argnums=0)
    g(knp.ones(3))
    monkeypatch.setattr(kiln.frontend.driver.jit.JittedFunction, "_call", lambda *a, **k: pytest.fail("Python path"))
    z = knp.ones(3) * 5  # the signature recorded (a weak-typed full(3, 5.0) would be another)
    np.asarray(z)  # caches the host view
    np.testing.assert_array_equal(g(z), [10.0, 10.0, 10.0])
    assert z.is_deleted()


def test_clear_caches_drops_the_direct_launch():
    f = kiln.jit(lambda a: a * 3)
    x = knp.ones(2)
    f(x), f(x)
    assert f._signatures.direct is not None
    kiln.clear_caches()
    assert f._signatures.direct is None
    np.testing.assert_array_equal(f(x), [3.0, 3.0])


def test_inline_match_of_plain_signatures_checks_every_argument_and_the_flags():
    # One or two arrays in, one out: JittedFunction.__call__ and the eager wrapper match these inline.
    g = kiln.jit(lambda a, b: a * b)
    a, b = knp.arange(4.0), knp.full(4, 2.0)
    g(a, b), g(a, b)
    assert g._signatures.direct.arity == 2
    np.testing.assert_array_equal(g(a, b), np.arange(4.0) * 2)
    np.testing.assert_array_equal(g(b, a), np.arange(4.0) * 2)
    np.testing.assert_array_equal(g(a, knp.full(1, 3.0)), np.arange(4.0) * 3)  # second argument differs
    np.testing.assert_array_equal(g(a, 0.5), np.arange(4.0) / 2)
    with pytest.raises(TypeError):
        g(a)
    b.delete()
    with pytest.raises(kiln.DeletedBufferError, match="argument b refers to a deleted"):
        g(a, b)
    h = kiln.jit(lambda: knp.arange(3.0))  # no arguments: never a plain signature
    h(), h()
    np.testing.assert_array_equal(h(), [0.0, 1.0, 2.0])
    y = -knp.ones(2)
    f = kiln.jit(lambda x: knp.log(x))
    f(y), f(y), knp.log(y), knp.log(y)
    with kiln.config.override("debug_nans", True):  # the flags changed: the recorded launches do not run
        with pytest.raises(FloatingPointError):
            f(y)
        with pytest.raises(FloatingPointError):
            knp.log(y)
    assert np.isnan(np.asarray(f(y))).all() and np.isnan(np.asarray(knp.log(y))).all()


def test_fixed_arity_entry_of_unary_and_binary_functions():
    """kiln.numpy's functions of one or two positional-only arguments have an entry of that fixed signature
    (faster to call than *args/**kwargs): every kind of call still reaches the right program, errors name the
    function as JAX's do, and the function pickles by its name."""
    import inspect
    import pickle
    a, b = knp.arange(4.0), knp.full(4, 2.0)
    for _ in range(2):  # the second round runs the recorded launches
        np.testing.assert_array_equal(knp.add(a, b), np.arange(4.0) + 2)
        np.testing.assert_array_equal(knp.add(a, 0.5), np.arange(4.0) + 0.5)  # a recent signature with a scalar
        np.testing.assert_array_equal(knp.add(a, knp.ones(1)), np.arange(4.0) + 1)  # another signature
        np.testing.assert_array_equal(knp.add(2, 3), 5)
        np.testing.assert_allclose(knp.tanh(a), np.tanh(np.arange(4.0)), rtol=1e-6)
        np.testing.assert_allclose(knp.tanh(np.ones(2, np.float32)), np.tanh(np.ones(2)), rtol=1e-6)
        assert float(knp.add(a, b)[0]) == 2.0 and float(knp.multiply(a, 0.0)[0]) == 0.0
    assert inspect.signature(knp.add) == inspect.signature(lambda x, y, /: None)
    traced = kiln.make_jaxpr(lambda x: knp.tanh(knp.add(x, a)))(b)
    assert [e.prim.name for e in traced.ir.eqns][-2:] == ["add", "tanh"]  # inlined under a trace, as before
    with pytest.raises(TypeError, match=r"^tanh\(\) takes 1 positional argument but 2 were given"):
        knp.tanh(a, b)
    with pytest.raises(TypeError, match=r"^add\(\) missing 1 required positional argument: 'y'"):
        knp.add(a)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.add: .*list"):
        knp.add(a, [1.0, 2.0, 3.0, 4.0])
    assert pickle.loads(pickle.dumps(knp.tanh)) is knp.tanh
    b.delete()
    with pytest.raises(kiln.DeletedBufferError):
        knp.add(a, b)


def test_fixed_arity_entry_of_functions_with_keyword_options():
    """matmul(a, b, /, *, precision=None, preferred_element_type=None, out_sharding=None): a call without keywords
    is launched by the fixed entry in front (takes_out_sharding's wrapper stays behind it, for out_sharding=);
    options, out_sharding included, go through the general path; errors name matmul's own parameters."""
    import inspect
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4), dtype=np.float32), rng.standard_normal((4, 2), dtype=np.float32)
    a, b = knp.asarray(x), knp.asarray(y)
    for _ in range(2):  # the second round runs the recorded launch
        np.testing.assert_allclose(knp.matmul(a, b), x @ y, rtol=1e-5)
    sigs = knp.matmul._eager_state[0]._signatures
    assert sigs.direct.arity == 2  # a plain signature: matched inline by the entry
    assert knp.matmul.__code__.co_varnames[:2] == ("a", "b")  # the entry itself, no wrapper in front
    np.testing.assert_allclose(knp.matmul(a, b, precision="highest"), x @ y, rtol=1e-5)
    mesh = kiln.sharding.Mesh(kiln.devices()[:1], ("i",))
    replicated = kiln.sharding.NamedSharding(mesh, kiln.sharding.PartitionSpec())
    out = knp.matmul(a, b, out_sharding=replicated)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5)
    assert out.sharding == replicated
    assert list(inspect.signature(knp.matmul).parameters) == ["a", "b", "precision", "preferred_element_type",
                                                              "out_sharding"]
    with pytest.raises(TypeError, match=r"^matmul\(\) missing 1 required positional argument: 'b'"):
        knp.matmul(a)
    with pytest.raises(TypeError, match=r"^matmul\(\) got an unexpected keyword argument 'axis'"):
        knp.matmul(a, b, axis=0)
    with pytest.raises(TypeError, match=r"^add\(\) got an unexpected keyword argument 'axis'"):
        knp.add(a, a, axis=0)
    np.testing.assert_allclose(knp.sum(a), x.sum(), rtol=1e-5)  # (one positional argument and keyword options)


def test_eager_ops_inside_a_trace_are_inlined_even_on_arrays():
    c = knp.arange(3.0)
    knp.sin(c), knp.sin(c)  # a direct launch recorded for (c,)
    ir = kiln.make_ir(lambda x: knp.sin(c) + x)(knp.ones(3))
    assert "sin" in [e.prim.name for e in ir.ir.eqns]  # staged, as JAX stages jnp functions under jit


def test_indexing_with_slices_ellipsis_and_integer_arrays_is_one_program(primitive_runs):
    h = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x, i = knp.asarray(h), knp.array([0, 2, -1])
    cases = [(lambda: x[1:2], h[1:2]), (lambda: x[0, 1:3], h[0, 1:3]), (lambda: x[..., 0], h[..., 0]),
             (lambda: x[::-1, None], h[::-1, None]), (lambda: x[:, i], h[:, [0, 2, -1]]),
             (lambda: x[1, :, i], h[1, :, [0, 2, -1]]), (lambda: x[knp.array([[1], [0]])], h[[[1], [0]]])]
    for index, expected in cases:
        np.testing.assert_array_equal(index(), expected)
    assert primitive_runs == []
    np.testing.assert_array_equal(x[x > 20.0], h[h > 20.0])  # a mask: its shape depends on values, op by op
    with pytest.raises(IndexError):
        x[knp.array([0.5])]


def test_nn_and_creation_functions_are_one_program(primitive_runs):
    h = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    x = knp.asarray(h)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(kiln.nn.softmax(x), e / e.sum(axis=-1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(kiln.nn.relu(x), np.maximum(h, 0))
    np.testing.assert_allclose(kiln.nn.elu(x, 0.5), np.where(h > 0, h, 0.5 * np.expm1(h)), rtol=1e-6)
    np.testing.assert_array_equal(kiln.nn.one_hot(knp.array([0, 2]), 3), np.eye(3, dtype=np.float32)[[0, 2]])
    np.testing.assert_allclose(kiln.scipy.special.logsumexp(x, axis=1), np.log(np.exp(h).sum(axis=1)), rtol=1e-6)
    np.testing.assert_allclose(knp.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(knp.eye(3, k=1), np.eye(3, k=1, dtype=np.float32))
    np.testing.assert_array_equal(knp.outer(x[0], x[1]), np.outer(h[0], h[1]))
    np.testing.assert_array_equal(knp.tile(x, (1, 2)), np.tile(h, (1, 2)))
    assert primitive_runs == []
    with pytest.raises(ValueError, match="kiln.numpy.linspace: num must be non-negative"):
        knp.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="kiln.nn.one_hot: num_classes must be a static Python int"):
        kiln.nn.one_hot(knp.array([0]), 2.5)


def test_indexing_comparison_and_linalg_functions_are_one_program(primitive_runs):
    h = np.array([[4.0, 1.0, -2.0], [1.0, 5.0, 0.5], [-2.0, 0.5, 6.0]], np.float32)
    x, v, i = knp.asarray(h), knp.asarray(h[0]), knp.array([2, 0, 5])
    np.testing.assert_array_equal(knp.take(v, i, mode="clip"), np.take(h[0], [2, 0, 5], mode="clip"))
    np.testing.assert_array_equal(knp.take(v, i, fill_value=-1.0), [-2.0, 4.0, -1.0])  # out of bounds: the fill
    order = np.argsort(h, axis=1)
    np.testing.assert_array_equal(knp.argsort(x, axis=1), order)
    np.testing.assert_array_equal(knp.take_along_axis(x, knp.asarray(order), axis=1), np.sort(h, axis=1))
    np.testing.assert_array_equal(knp.isclose(x, x + 1e-7), np.isclose(h, h + np.float32(1e-7)))
    assert bool(knp.allclose(x, x * 1.5, rtol=0.6)) and not bool(knp.allclose(x, x * 1.5))
    assert bool(knp.array_equal(x, x)) and not bool(knp.array_equal(x, v))
    np.testing.assert_allclose(knp.round(x * 1.2345, 2), np.round(h * np.float32(1.2345), 2), rtol=1e-6)
    np.testing.assert_array_equal(knp.diag(v, 1), np.diag(h[0], 1))
    np.testing.assert_array_equal(knp.triu(x, 1), np.triu(h, 1))
    np.testing.assert_array_equal(knp.tril(x), np.tril(h))
    np.testing.assert_array_equal(knp.roll(v, 1), np.roll(h[0], 1))
    np.testing.assert_array_equal(knp.trace(x), np.trace(h))
    for got, want in zip(knp.split(v, 3), np.split(h[0], 3)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(knp.array_split(x, 2, axis=1), np.array_split(h, 2, axis=1)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(knp.linalg.norm(x, axis=1), np.linalg.norm(h, axis=1), rtol=1e-6)
    np.testing.assert_allclose(knp.linalg.norm(x, "fro"), np.linalg.norm(h, "fro"), rtol=1e-6)
    np.testing.assert_allclose(knp.linalg.inv(x), np.linalg.inv(h), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(knp.linalg.solve(x, v), np.linalg.solve(h, h[0]), rtol=1e-5)
    np.testing.assert_allclose(knp.linalg.det(x), np.linalg.det(h), rtol=1e-5)
    np.testing.assert_allclose(knp.linalg.eigh(x).eigenvalues, np.linalg.eigh(h).eigenvalues, rtol=1e-5)
    np.testing.assert_allclose(knp.linalg.cholesky(x), np.linalg.cholesky(h), rtol=1e-5)
    np.testing.assert_allclose(knp.linalg.matrix_power(x, 3), np.linalg.matrix_power(h, 3), rtol=1e-5)
    assert int(knp.linalg.matrix_rank(x)) == 3
    # Data-dependent sizes: one small program counts the nonzero elements, one more computes the indices.
    m = h > 0.9
    for got, want in zip(knp.nonzero(m), np.nonzero(m)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(knp.flatnonzero(x > 0.9), np.flatnonzero(m))
    np.testing.assert_array_equal(knp.argwhere(x > 0.9), np.argwhere(m))
    np.testing.assert_array_equal(knp.nonzero(v, size=4, fill_value=7)[0], [0, 1, 2, 7])
    assert primitive_runs == []
    # The implementations' own errors, raised while tracing the program.
    with pytest.raises(NotImplementedError, match="kiln.numpy.take: mode='raise' is not supported"):
        knp.take(v, i, mode="raise")
    with pytest.raises(ValueError, match="kiln.numpy.linalg.qr: mode must be"):
        knp.linalg.qr(x, mode="raw")
    with pytest.raises(TypeError, match="matrix_power: exponent must be a static integer"):
        knp.linalg.matrix_power(x, 1.5)
    with pytest.raises(ValueError, match="kiln.numpy.nonzero: calling nonzero on 0-d arrays"):
        knp.nonzero(v[0])
    with pytest.raises(kiln.ConcretizationTypeError, match="kiln.numpy.flatnonzero: the number of nonzero"):
        kiln.jit(knp.flatnonzero)(v)
    y = knp.ones((2, 2))
    knp.linalg.inv(y)
    y.delete()
    with pytest.raises(kiln.DeletedBufferError, match="kiln.numpy.linalg.inv: argument a refers to a deleted"):
        knp.linalg.inv(y)


def test_more_elementwise_nan_and_product_functions_are_one_program(primitive_runs):
    h = np.array([[1.5, -np.inf, np.nan], [0.25, 2.0, -3.0]], np.float32)
    x, v = knp.asarray(h), knp.asarray(h[1])
    np.testing.assert_array_equal(knp.logical_and(x > 0, x < 2), np.logical_and(h > 0, h < 2))
    np.testing.assert_array_equal(knp.isinf(x), np.isinf(h))
    np.testing.assert_array_equal(knp.isneginf(x), np.isneginf(h))
    np.testing.assert_allclose(knp.log10(knp.abs(v)), np.log10(np.abs(h[1])), rtol=1e-6)
    np.testing.assert_array_equal(knp.nan_to_num(x, nan=9.0), np.nan_to_num(h, nan=9.0))
    np.testing.assert_array_equal(knp.trunc(x), np.trunc(h))
    np.testing.assert_array_equal(knp.copysign(v, -1.0), np.copysign(h[1], -1.0))
    np.testing.assert_allclose(knp.sinc(v), np.sinc(h[1]), rtol=1e-6)
    np.testing.assert_array_equal(knp.fmax(x, 0.0), np.fmax(h, 0.0))
    np.testing.assert_allclose(knp.degrees(v), np.degrees(h[1]), rtol=1e-6)
    np.testing.assert_allclose(knp.nanmean(x, axis=1), np.nanmean(h, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(knp.nanmax(x, axis=0), np.nanmax(h, axis=0))
    finite_and_nan = np.array([1.0, np.nan, 3.0], np.float32)
    np.testing.assert_allclose(knp.nanstd(knp.asarray(finite_and_nan)), np.nanstd(finite_and_nan), rtol=1e-6)
    np.testing.assert_array_equal(knp.nancumsum(x, axis=1), np.nancumsum(h, axis=1))
    np.testing.assert_allclose(knp.geomspace(1.0, 100.0, 5), np.geomspace(1.0, 100.0, 5, dtype=np.float32),
                               rtol=1e-6)
    np.testing.assert_array_equal(knp.diagonal(x), np.diagonal(h))
    np.testing.assert_array_equal(knp.rot90(x), np.rot90(h))
    np.testing.assert_array_equal(knp.kron(v, v), np.kron(h[1], h[1]))
    np.testing.assert_allclose(knp.convolve(v, v), np.convolve(h[1], h[1]), rtol=1e-6)
    np.testing.assert_allclose(knp.vdot(v, v), np.vdot(h[1], h[1]), rtol=1e-6)
    np.testing.assert_allclose(knp.polyval(v, 2.0), np.polyval(h[1], 2.0), rtol=1e-6)
    for got, want in zip(knp.meshgrid(v, v[:2], indexing="ij"), np.meshgrid(h[1], h[1, :2], indexing="ij")):
        np.testing.assert_array_equal(got, want)
    rows = np.array([[1.0, 2.0, 4.0], [3.0, 1.0, 0.0]], np.float32)
    np.testing.assert_allclose(knp.corrcoef(knp.asarray(rows)), np.corrcoef(rows), rtol=1e-5, atol=1e-6)
    assert primitive_runs == []
    with pytest.raises(TypeError, match="kiln.numpy.isposinf: not supported for complex inputs"):
        knp.isposinf(knp.ones(2, np.complex64))
    with pytest.raises(ValueError, match="kiln.numpy.convolve"):
        knp.convolve(v, v, mode="nope")
    with pytest.raises(ValueError, match="kiln.numpy.meshgrid: indexing must be 'xy' or 'ij'"):
        knp.meshgrid(v, v, indexing="q")


def test_shape_histogram_fft_and_bit_functions_are_one_program(primitive_runs):
    h = np.array([[1.5, -2.0, 0.5, 3.0], [0.25, 2.0, -3.0, 1.0], [4.0, -1.0, 0.0, 2.5]], np.float32)
    x, w = knp.asarray(h), knp.asarray(np.arange(4.0, dtype=np.float32))
    np.testing.assert_array_equal(knp.repeat(x, 2, axis=1), np.repeat(h, 2, axis=1))
    np.testing.assert_array_equal(knp.repeat(x, (1, 0, 2), axis=0), np.repeat(h, (1, 0, 2), axis=0))
    np.testing.assert_array_equal(knp.resize(x, (5, 3)), np.resize(h, (5, 3)))
    np.testing.assert_array_equal(knp.append(x, 7.0), np.append(h, 7.0))
    np.testing.assert_array_equal(knp.insert(x, 1, 9.0, axis=0), np.insert(h, 1, 9.0, axis=0))
    np.testing.assert_array_equal(knp.delete(x, 2, axis=1), np.delete(h, 2, axis=1))
    np.testing.assert_allclose(knp.gradient(x, 0.5, axis=1), np.gradient(h, 0.5, axis=1), rtol=1e-6)
    counts, edges = knp.histogram(x, bins=3, range=(-3.0, 3.0))
    np.testing.assert_allclose(edges, np.histogram_bin_edges(h, bins=3, range=(-3.0, 3.0)), rtol=1e-6)
    # (the edges round as JAX's linspace: -0.9999999 for -1, which puts h's -1.0 in the first bin, as JAX does)
    np.testing.assert_array_equal(counts, np.histogram(h, bins=np.asarray(edges))[0])
    np.testing.assert_allclose(knp.average(x, axis=1, weights=w), np.average(h, axis=1, weights=np.arange(4.0)),
                               rtol=1e-6)
    np.testing.assert_allclose(knp.cross(x[:, :3], x[:, 1:]), np.cross(h[:, :3], h[:, 1:]), rtol=1e-6)
    np.testing.assert_allclose(knp.fft.fft(x), np.fft.fft(h), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(knp.fft.irfft2(x), np.fft.irfft2(h), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(knp.partition(x[0], 1)[1], np.partition(h[0], 1)[1])
    bits = knp.asarray(np.array([3, 250], np.uint8))
    np.testing.assert_array_equal(knp.unpackbits(bits), np.unpackbits(np.array([3, 250], np.uint8)))
    assert primitive_runs == []
    with pytest.raises(ValueError, match="kiln.numpy.repeat: repeats must be non-negative"):
        knp.repeat(x, -1)
    with pytest.raises(ValueError, match="kiln.numpy.fft.fft: invalid norm 'bad'"):
        knp.fft.fft(x, norm="bad")
    np.testing.assert_array_equal(knp.delete(x, [0, 2], axis=1), np.delete(h, [0, 2], axis=1))  # a list: op by op

def test_joining_a_list_of_arrays_is_one_program(primitive_runs, compiles):
    """concatenate, stack, hstack, vstack, dstack, column_stack and lexsort take a list (or tuple) of arrays as
    one program: one compile for a new signature and no primitive run by itself (before, every array was
    reshaped by an execution of its own and then joined by another)."""
    h = np.arange(21.0, dtype=np.float32).reshape(7, 3)  # shapes no other test uses: the compiles are counted
    x, y, v = knp.asarray(h), knp.asarray(h * 2), knp.asarray(h[:, 0])
    keys = (knp.array([3, 1, 3, 2, 1, 3, 2]), knp.array([1, 1, 0, 0, 1, 1, 0]))
    cases = [(lambda: knp.concatenate([x, y], axis=1), np.concatenate([h, h * 2], axis=1)),
             (lambda: knp.concatenate((x, y), axis=None), np.concatenate([h, h * 2], axis=None)),
             (lambda: knp.stack([x, y, x], axis=1), np.stack([h, h * 2, h], axis=1)),
             (lambda: knp.hstack([v, v]), np.hstack([h[:, 0], h[:, 0]])),
             (lambda: knp.vstack([v, v]), np.vstack([h[:, 0], h[:, 0]])),
             (lambda: knp.dstack([x, y]), np.dstack([h, h * 2])),
             (lambda: knp.column_stack([v, x, v]), np.column_stack([h[:, 0], h, h[:, 0]])),
             (lambda: knp.lexsort(keys), np.lexsort([np.asarray(k) for k in keys])),
             (lambda: knp.stack([np.float32(2) * h, x]), np.stack([2 * h, h]))]  # a host array among them
    for join, expected in cases:
        before = len(compiles())
        got = join()
        assert len(compiles()) - before == 1, compiles()[before:]
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == (np.int32 if expected.dtype == np.int64 else expected.dtype)  # 64-bit off: int32
        join()
        assert len(compiles()) - before == 1  # the second call: the same program
    assert primitive_runs == []
    # Forms the compiled path does not take run op by op, with the same results and errors.
    np.testing.assert_array_equal(knp.stack([v[1], 2.5]), np.array([3.0, 2.5], np.float32))  # a Python float
    many = [v] * 40  # longer than eager_jit.MAX_SEQUENCE: a one-off call would compile a 40-parameter program
    np.testing.assert_array_equal(knp.stack(many), np.stack([h[:, 0]] * 40))
    np.testing.assert_array_equal(knp.stack(x), np.stack(h))  # an array: its rows
    with pytest.raises(ValueError, match=r"kiln.numpy.stack: all input arrays must have the same shape, got "
                                         r"\(7, 3\) \(7,\)"):
        knp.stack([x, v])
    with pytest.raises(ValueError, match="kiln.numpy.concatenate: need at least one array"):
        knp.concatenate([])


def test_functional_updates_are_one_program(primitive_runs):
    h = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x, i, ones = knp.asarray(h), knp.array([0, 2]), knp.ones(4)
    primitive_runs.clear()
    expected = h.copy()
    expected[[0, 2]] = 1.0
    np.testing.assert_array_equal(x.at[i].set(ones), expected)
    expected = h.copy()
    np.add.at(expected, (slice(None), [0, 2, 0]), 2.0)
    np.testing.assert_array_equal(x.at[:, knp.array([0, 2, 0])].add(2.0), expected)  # repeated indices add twice
    expected = h.copy()
    expected[1:3, ..., 0] *= 3.0
    np.testing.assert_array_equal(x.at[1:3, ..., 0].multiply(3.0), expected)
    assert primitive_runs == []
    with pytest.raises(kiln.IntegerOverflowError, match=r"at\[\]\.set: Python int 300 is out of range for uint8"):
        knp.arange(4, dtype=np.uint8).at[0].set(300)


def test_linspace_of_python_ints_is_one_program(run_py):
    # Bounds that are Python ints beyond the small range, with no array beside them, become floats: one program,
    # the one JAX's jitted linspace compiles (op by op, the division by num - 1 rounds otherwise), from the
    # first call of a process on (later calls could launch an earlier signature directly).
    out = run_py("""
        import numpy as np, kiln.numpy as knp
        from kiln.frontend.core import tracing
        runs, apply = [], tracing._eager.apply
        tracing._eager.apply = lambda prim, args, params: (runs.append(prim.name), apply(prim, args, params))[1]
        ints = np.asarray(knp.linspace(-2, 2, 101))
        assert runs == [], runs
        np.testing.assert_array_equal(ints, knp.linspace(-2.0, 2.0, 101))
        print("ok")
    """)
    assert out.stdout.strip().endswith("ok")


def test_direct_launch_without_the_cpp_dispatch(run_py):
    # jax imported before kiln (or KILN_CPP_DISPATCH=0) leaves kiln without jaxlib's C++ dispatch: jitted calls,
    # eager kiln.numpy ops and eager primitives still launch their last plain signature directly.
    out = run_py("""
        import numpy as np, kiln, kiln.numpy as knp
        from kiln.frontend.driver import eager
        from kiln.runtime import fastpath
        assert not fastpath.available()
        x, y = knp.arange(4.0), knp.ones(4)
        f = kiln.jit(lambda a, b: a * b + 1.0)
        for _ in range(3):
            np.testing.assert_array_equal(f(x, y), np.arange(4.0) + 1)
            np.testing.assert_allclose(knp.tanh(x), np.tanh(np.arange(4.0)), rtol=1e-6)
            np.testing.assert_array_equal(kiln.lax.add(x, y), np.arange(4.0) + 1)
        assert f._cpp is None and f._signatures.direct is not None
        assert knp.tanh._eager_state[0]._signatures.direct is not None
        assert any(key[0].name == "add" for key in eager._direct)
        print("ok")
    """, env={"KILN_CPP_DISPATCH": "0"})
    assert out.stdout.strip().endswith("ok")


def test_errors_of_operators_name_the_operator():
    for index, where in [(lambda x: x[1:2], "kiln.Array.__getitem__"),
                         (lambda x: x[knp.array([0])], "kiln.Array.__getitem__"),
                         (lambda x: x.at[0].add(1.0), r"kiln.Array.at\[\]")]:
        x = knp.arange(3.0)
        index(x)
        x.delete()
        with pytest.raises(kiln.DeletedBufferError, match=where + ": argument x refers to a deleted array"):
            index(x)


def test_alternating_signatures_each_launch_directly(monkeypatch):
    # x * y and x * 2.0 alternately: both stay on the direct launch (the C++ path's hits record none).
    from kiln.frontend.driver import jit as jit_module
    kiln.clear_caches()  # other tests' signatures of multiply: this one counts its own
    x, y = knp.arange(4.0), knp.ones(4)
    for _ in range(2):
        knp.multiply(x, y), knp.multiply(x, 2.0)
    sigs = knp.multiply._eager_state[0]._signatures
    assert len(sigs.recent) == 2
    monkeypatch.setattr(jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    from kiln.frontend.driver import eager_jit as eager_jit_module
    monkeypatch.setattr(eager_jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    for _ in range(3):
        np.testing.assert_array_equal(knp.multiply(x, y), np.arange(4.0))
        np.testing.assert_array_equal(x * 2.0, np.arange(4.0) * 2)
    monkeypatch.undo()
    f = kiln.jit(lambda a, b: a + b)
    for b in (y, 1.0, knp.ones(3), 2.0, knp.ones(2), 3.0):  # five signatures: the oldest is forgotten
        f(x[:len(b)] if type(b) is not float else x, b), f(x[:len(b)] if type(b) is not float else x, b)
    assert len(f._signatures.recent) == jit_module.RECENT_DIRECT_CALLS


def test_errors_name_the_function_by_its_public_path():
    # Errors of eagerly compiled functions name them as users call them, subpackages included.
    x = knp.ones((2, 3))
    with pytest.raises(ValueError, match=r"kiln\.numpy\.fft\.ifft: invalid norm 'bad'"):
        knp.fft.ifft(x, norm="bad")
    y = knp.ones((2, 2))
    y.delete()
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.numpy\.linalg\.det: argument a refers to a deleted"):
        knp.linalg.det(y)
    z = knp.ones(3)
    z.delete()
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.numpy\.fft\.rfft: argument a refers to a deleted"):
        knp.fft.rfft(z)


def test_iterating_over_an_array_compiles_a_few_programs_not_one_per_row(compiles):
    # As JAX's: chunks of at most 100 rows, each a dynamic slice (one program per chunk size) unstacked by one
    # program; before, every row was an indexing program of its own, compiled again for each new index.
    h = np.arange(251 * 3, dtype=np.float32).reshape(251, 3)
    x = knp.asarray(h)
    before = len(compiles())
    rows = list(x)
    assert len(rows) == 251 and all(type(r) is ConcreteArray and r.shape == (3,) for r in rows)
    np.testing.assert_array_equal(np.stack([np.asarray(r) for r in rows]), h)
    assert len(compiles()) - before <= 4  # slice and unstack for 100 rows, and for the 51 left
    again = len(compiles())
    assert len(list(x)) == 251 and len(compiles()) == again  # the same programs
    assert [int(v) for v in knp.arange(5)] == [0, 1, 2, 3, 4]  # a short array: one unstack
    a, b = knp.asarray(np.float32([[1, 2], [3, 4]]))  # unpacking
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [3.0, 4.0]
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(knp.float32(1.0) + knp.zeros(()))
    # inside a trace a tracer iterates row by row (traced indexing)
    np.testing.assert_array_equal(kiln.jit(lambda v: sum(r for r in v))(knp.asarray(h[:4])), h[:4].sum(0))


def test_a_jitted_call_on_concrete_arrays_inside_a_trace_is_recorded():
    # Once a signature launches directly (or through jaxlib's C++ path), a call of it inside a trace must still be
    # recorded as a call, as JAX records it, not run at trace time into a constant (checkify(jit(f)) lost its
    # checks so).
    for args in [(knp.ones(3),), ({"a": knp.ones(3)},)]:
        f = kiln.jit(lambda v: kiln.tree_util.tree_map(lambda t: t * 2, v))
        f(*args), f(*args)
        assert f._signatures.direct is not None
        names = [e.prim.name for e in kiln.make_ir(lambda: f(*args))().ir.eqns]
        assert names == ["jit_call"], names
        out = kiln.jit(lambda: f(*args))()
        np.testing.assert_array_equal(kiln.tree_util.tree_leaves(out)[0], [2.0, 2.0, 2.0])


def test_more_functions_that_jax_jits_are_one_program(primitive_runs):
    """Functions JAX compiles whole when called eagerly (its jitted jax.numpy, jax.nn and jax.scipy functions) are
    one program in kiln too: before, each ran primitive by primitive (np.pad(x, 1) took 90 us against JAX's 18)."""
    h = np.array([[1.5, -2.0, np.nan, 3.0], [0.25, 2.0, -3.0, np.inf]], np.float32)
    x, v = knp.asarray(h), knp.asarray(h[1, :3])
    ints = knp.asarray(np.array([12, 18, -7, 5], np.int32))
    np.testing.assert_array_equal(knp.pad(v, 1), np.pad(h[1, :3], 1))
    np.testing.assert_array_equal(knp.pad(x, ((0, 1), (2, 0)), constant_values=7.0),
                                  np.pad(h, ((0, 1), (2, 0)), constant_values=7.0))
    np.testing.assert_array_equal(knp.pad(v, (1, 2), mode="edge"), np.pad(h[1, :3], (1, 2), mode="edge"))
    np.testing.assert_array_equal(knp.pad(v, 2, mode="maximum", stat_length=2),
                                  np.pad(h[1, :3], 2, mode="maximum", stat_length=2))
    np.testing.assert_array_equal(knp.clip(v, -1, 1), np.clip(h[1, :3], -1, 1))
    np.testing.assert_array_equal(knp.isnan(x), np.isnan(h))
    np.testing.assert_array_equal(knp.isfinite(x), np.isfinite(h))
    np.testing.assert_array_equal(knp.floor(v), np.floor(h[1, :3]))
    np.testing.assert_array_equal(knp.ceil(v), np.ceil(h[1, :3]))
    np.testing.assert_array_equal(knp.rint(v), np.rint(h[1, :3]))
    np.testing.assert_array_equal(knp.fmod(v, 2.0), np.fmod(h[1, :3], np.float32(2.0)))
    np.testing.assert_array_equal(knp.cumsum(v), np.cumsum(h[1, :3]))
    np.testing.assert_array_equal(knp.cumprod(x[:, :2], axis=0), np.cumprod(h[:, :2], axis=0))
    np.testing.assert_array_equal(knp.cumulative_sum(v, include_initial=True),
                                  np.concatenate([[0.0], np.cumsum(h[1, :3])]).astype(np.float32))
    np.testing.assert_array_equal(knp.diff(v), np.diff(h[1, :3]))
    np.testing.assert_array_equal(knp.sort(v), np.sort(h[1, :3]))
    np.testing.assert_array_equal(knp.sort(v, descending=True), np.sort(h[1, :3])[::-1])
    np.testing.assert_array_equal(knp.searchsorted(knp.sort(v), 0.5), np.searchsorted(np.sort(h[1, :3]), 0.5))
    np.testing.assert_array_equal(knp.flip(x, 1), np.flip(h, 1))
    np.testing.assert_array_equal(knp.atleast_2d(v), np.atleast_2d(h[1, :3]))
    np.testing.assert_array_equal(knp.gcd(ints, 6), np.gcd(np.array([12, 18, -7, 5]), 6))
    np.testing.assert_array_equal(ints >> 1, np.array([12, 18, -7, 5], np.int32) >> 1)
    np.testing.assert_array_equal(ints & 6, np.array([12, 18, -7, 5], np.int32) & 6)
    np.testing.assert_array_equal(~ints, ~np.array([12, 18, -7, 5], np.int32))
    np.testing.assert_allclose(knp.inner(v, v), np.inner(h[1, :3], h[1, :3]), rtol=1e-6)
    np.testing.assert_allclose(kiln.nn.sparse_plus(v), np.where(h[1, :3] <= -1, 0, np.where(
        h[1, :3] >= 1, h[1, :3], (h[1, :3] + 1) ** 2 / 4)), rtol=1e-6)
    np.testing.assert_array_equal(kiln.scipy.special.gammasgn(v - 0.5), scipy.special.gammasgn(h[1, :3] - 0.5))
    flat = knp.asarray(np.array([0, 5, 11], np.int32))
    for got, want in zip(knp.unravel_index(flat, (3, 4)), np.unravel_index([0, 5, 11], (3, 4))):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(knp.isin(flat, knp.asarray(np.array([5, 7], np.int32))), [False, True, False])
    np.testing.assert_allclose(knp.logspace(0, 2, 5), np.logspace(0, 2, 5, dtype=np.float32), rtol=1e-6)
    quotient, remainder = knp.divmod(v, 2.0)
    np.testing.assert_array_equal(quotient, np.floor_divide(h[1, :3], np.float32(2.0)))
    np.testing.assert_array_equal(remainder, np.mod(h[1, :3], np.float32(2.0)))
    assert primitive_runs == []
    # options the compiled path cannot hash (lists) take the implementation's own path, still one program there
    np.testing.assert_array_equal(knp.pad(x, [[1, 0], [0, 2]], mode="mean", stat_length=[[1, 1], [2, 2]]),
                                  np.pad(h, [[1, 0], [0, 2]], mode="mean", stat_length=[[1, 1], [2, 2]]))
    assert primitive_runs == []
    # their errors are still their own, raised as they are traced
    with pytest.raises(ValueError, match=r"kiln.numpy.pad: constant_values of shape \(3,\) must be a scalar"):
        knp.pad(x, 1, constant_values=knp.ones(3))
    with pytest.raises(TypeError, match="kiln.numpy.invert: not supported for floating-point inputs"):
        _ = ~v
    with pytest.raises(TypeError, match="kiln.numpy.clip: complex values have no ordering"):
        knp.clip(knp.ones(2, np.complex64), 0, 1)


def test_methods_and_unary_operators_are_the_numpy_functions(monkeypatch):
    """x.sum(), x.max(axis=0), -x, abs(x) are kiln.numpy's functions themselves (NumPy's parameters, in NumPy's
    order), so that a repeated call launches directly, as knp.sum(x) does: no C++ or Python path."""
    from kiln.frontend.driver import eager_jit as eager_jit_module
    h = np.arange(6.0, dtype=np.float32).reshape(2, 3) - 2
    x = knp.asarray(h)
    calls = {"sum": lambda: x.sum(), "max axis": lambda: x.max(axis=0),
             "mean keepdims": lambda: x.mean(1, None, None, True),
             "std ddof": lambda: x.std(ddof=1), "argmax": lambda: x.argmax(), "cumsum": lambda: x.cumsum(axis=1),
             "neg": lambda: -x, "abs": lambda: abs(x), "ravel": lambda: x.ravel(), "round": lambda: knp.round(x, 1),
             "swapaxes": lambda: knp.swapaxes(x, 0, 1)}
    want = {"sum": h.sum(), "max axis": h.max(axis=0), "mean keepdims": h.mean(1, keepdims=True),
            "std ddof": h.std(ddof=1), "argmax": h.argmax(), "cumsum": h.cumsum(axis=1), "neg": -h, "abs": abs(h),
            "ravel": h.ravel(), "round": np.round(h, 1), "swapaxes": np.swapaxes(h, 0, 1)}
    for call in calls.values():
        call()  # compiles and records each signature
    monkeypatch.setattr(eager_jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    for name, call in calls.items():
        np.testing.assert_allclose(call(), want[name], rtol=1e-6, err_msg=name)
    monkeypatch.undo()
    assert type(x).sum is knp.sum and type(x).__neg__ is knp.negative
    with pytest.raises(TypeError, match="out= is not supported"):
        x.sum(0, None, True)  # NumPy's order: the third parameter is out


def test_gelu_eagerly_runs_its_operations_without_broadcast_constants(primitive_runs):
    """JAX does not jit gelu: its operations run one by one eagerly, kiln's too (they round as JAX's), each a
    kiln.numpy function taking its scalar as an argument; before, every constant was a full-size array made by an
    execution of its own (12 executions for the tanh form, 8 now)."""
    h = np.linspace(-4, 4, 33, dtype=np.float32)
    x = knp.asarray(h)
    c = np.float32(np.sqrt(2 / np.pi))
    want = h * (np.float32(0.5) * (1 + np.tanh(c * (h + np.float32(0.044715) * h ** 3))))
    np.testing.assert_allclose(kiln.nn.gelu(x), want, rtol=2e-6, atol=1e-6)  # (1 + tanh cancels near -4)
    np.testing.assert_allclose(kiln.nn.gelu(x, approximate=False), 0.5 * h * scipy.special.erfc(-h / np.sqrt(2)),
                               rtol=2e-6, atol=1e-7)
    assert primitive_runs == ["erfc"]  # (kiln.lax.erfc, as JAX's lax.erfc, is not jitted)


def test_creation_functions_are_one_program_without_a_transfer(primitive_runs, monkeypatch):
    """zeros, ones, full, the *_like functions, arange, eye and linspace called eagerly are one compiled program
    per shape and dtype: before, a fill value was copied to the device and broadcast by an execution of its own
    (about 30 µs a call, now about 5). The values and weak types are the op-by-op ones (empty is zeros: XLA has
    no uninitialised memory)."""
    from kiln import runtime
    x, w = knp.arange(6.0).reshape(2, 3), knp.asarray(2.0)  # (w: weakly typed)
    for _ in range(2):  # (the first call compiles)
        monkeypatch.setattr(runtime, "put", lambda *a: pytest.fail("copied a value to the device"))
        got = {
            "zeros": knp.zeros((2, 3)), "ones": knp.ones(4, knp.int8), "empty": knp.empty(2),
            "zeros_like": knp.zeros_like(x), "ones_like": knp.ones_like(x, shape=(3,)),
            "empty_like": knp.empty_like(x, dtype=knp.int32), "arange": knp.arange(1, 7, 2),
            "eye": knp.eye(3, k=-1),
        }
        monkeypatch.undo()
        # (a fill value or a bound is an argument of the program: the Python path's first call copies it)
        got.update(full=knp.full((2, 2), 2.5), full_like=knp.full_like(x, 7, dtype=knp.int32),
                   linspace=knp.linspace(0, 1, 5), full_int=knp.full(3, 5, knp.uint8), full_bool=knp.full(2, True),
                   full_array=knp.full((2, 3), knp.arange(3.0)), zeros_like_weak=knp.zeros_like(w))
        assert primitive_runs == []
    want = {
        "zeros": np.zeros((2, 3), np.float32), "ones": np.ones(4, np.int8), "empty": np.zeros(2, np.float32),
        "zeros_like": np.zeros((2, 3), np.float32), "ones_like": np.ones(3, np.float32),
        "empty_like": np.zeros((2, 3), np.int32), "full_like": np.full((2, 3), 7, np.int32),
        "arange": np.arange(1, 7, 2, dtype=np.int32), "eye": np.eye(3, k=-1, dtype=np.float32),
        "linspace": np.linspace(0, 1, 5, dtype=np.float32), "full": np.full((2, 2), 2.5, np.float32),
        "full_int": np.full(3, 5, np.uint8), "full_bool": np.full(2, True),
        "full_array": np.tile(np.arange(3.0, dtype=np.float32), (2, 1)), "zeros_like_weak": np.float32(0),
    }
    for name, value in want.items():
        assert got[name].dtype == value.dtype, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    weak = {name for name, v in got.items() if v.weak_type}
    assert weak == {"full", "zeros_like_weak"}  # a Python float fill, and the like of a weak array: as op by op
    # a NumPy prototype is not copied to the device to read its shape (op by op), a list fill is converted
    sizes, put = [], runtime.put
    monkeypatch.setattr(runtime, "put", lambda x, *a: sizes.append(x.size) or put(x, *a))
    assert knp.zeros_like(np.ones((500, 500))).shape == (500, 500)
    assert max(sizes) == 1  # (the fill value)
    monkeypatch.undo()
    np.testing.assert_array_equal(knp.full((2, 2), [1, 2]), [[1, 2], [1, 2]])


def test_einsum_is_one_program_in_both_call_forms(primitive_runs, compiles):
    """einsum called eagerly: one compiled program per subscripts and operand types (parsing and the contraction
    order at trace time; 64 µs a call before, each pairwise step an execution of its own). The interleaved form is
    converted to subscripts first."""
    a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 5), (5, 2)))
    x, y, z = (knp.asarray(v) for v in (a, b, c))
    for _ in range(2):
        np.testing.assert_allclose(knp.einsum("ij,jk,kl->il", x, y, z), a @ b @ c, rtol=1e-5)
        np.testing.assert_allclose(knp.einsum(x, [0, 1], y, [1, 2], z, [2, 3], [0, 3]), a @ b @ c, rtol=1e-5)
        np.testing.assert_allclose(knp.einsum("ij->", x), a.sum(), rtol=1e-5)
    assert primitive_runs == []
    # "ij,jk,kl->il", the interleaved call's "ab,bc,cd->ad" (the same program: a compile-cache hit) and "ij->"
    assert [m.split(" in ")[0] for m in compiles()] == ["Finished XLA compilation of jit(einsum)"] * 3
    # an explicit path (a list: not a static option the compiled path hashes) runs op by op, with the same values
    np.testing.assert_allclose(knp.einsum("ij,jk,kl->il", x, y, z, optimize=[(1, 2), (0, 1)]), a @ b @ c, rtol=1e-5)
    assert "dot_general" in primitive_runs


def test_tensordot_and_vecdot_are_one_program(primitive_runs):
    """tensordot (axes as an int, or as lists, which are passed on as tuples) and vecdot called eagerly run one
    compiled program each (they were a dot_general run on its own, after the preamble in Python: 15 and 30 µs)."""
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((4, 5)).astype(np.float32)
    x, y = knp.asarray(a), knp.asarray(b)
    for _ in range(2):
        np.testing.assert_allclose(knp.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=1e-5)
        np.testing.assert_allclose(knp.tensordot(x, y, axes=([1], [0])), a @ b, rtol=1e-5)
        np.testing.assert_allclose(knp.tensordot(x, x, axes=2), np.tensordot(a, a), rtol=1e-5)
        np.testing.assert_allclose(knp.vecdot(x, x), np.einsum("ij,ij->i", a, a), rtol=1e-5)
        np.testing.assert_allclose(knp.vecdot(y, y, axis=0), np.einsum("ij,ij->j", b, b), rtol=1e-5)
    assert primitive_runs == []
    with pytest.raises(TypeError, match="kiln.numpy.tensordot: axes must be an int or a pair of axis sequences"):
        knp.tensordot(x, y, axes=[0, 1, 2])


def test_special_functions_are_one_program_except_in_narrow_floats(primitive_runs):
    """kiln.scipy.special's compositions called eagerly on float32 are one compiled program each (ndtr was 17
    executions, owens_t 85); on bfloat16 they stay op by op, each operation rounding as JAX's unjitted ones do."""
    h = np.linspace(-2.5, 2.5, 11, dtype=np.float32)
    x = knp.asarray(h)
    special, norm = kiln.scipy.special, kiln.scipy.stats.norm
    got = {"ndtr": special.ndtr(x), "norm.cdf": norm.cdf(x), "log_ndtr": special.log_ndtr(x),
           "xlogy": special.xlogy(x, knp.abs(x)), "entr": special.entr(knp.abs(x)),
           "owens_t": special.owens_t(x, 0.5), "logit": special.logit(knp.abs(x) / 3)}
    assert primitive_runs == []
    want = {"ndtr": scipy.special.ndtr(h), "norm.cdf": scipy.special.ndtr(h), "log_ndtr": scipy.special.log_ndtr(h),
            "xlogy": scipy.special.xlogy(h, np.abs(h)), "entr": scipy.special.entr(np.abs(h)),
            "owens_t": scipy.special.owens_t(h, 0.5), "logit": scipy.special.logit(np.abs(h) / 3)}
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    special.ndtr(x.astype(knp.bfloat16))
    assert "erfc" in primitive_runs


def test_special_functions_with_loops_are_one_program(primitive_runs):
    """betainc, hyp1f1, hyp2f1 and zeta called eagerly are one compiled program each, not their loop traced again
    and run op by op at every call (betainc was 7 ms a call against JAX's 0.1 ms); gamma, loggamma, erfcx, dawsn,
    wofz, rel_entr, kl_div and boxcox too."""
    h = np.linspace(0.1, 0.9, 7)
    x, y = knp.asarray(h, knp.float32), knp.asarray(h + 1, knp.float32)
    special = kiln.scipy.special
    got = {"betainc": special.betainc(y, 2 * y, x), "hyp1f1": special.hyp1f1(y, y + 1, x),
           "hyp2f1": special.hyp2f1(y, y, y + 1, x / 2), "zeta": special.zeta(y + 1, y), "gamma": special.gamma(y),
           "loggamma": special.loggamma(y), "erfcx": special.erfcx(x), "dawsn": special.dawsn(x),
           "wofz": special.wofz(x + 0.5j), "rel_entr": special.rel_entr(x, y), "kl_div": special.kl_div(x, y),
           "boxcox": special.boxcox(y, 0.5), "boxcox1p": special.boxcox1p(x, 0.5)}
    assert primitive_runs == []
    g = h + 1
    want = {"betainc": scipy.special.betainc(g, 2 * g, h), "hyp1f1": scipy.special.hyp1f1(g, g + 1, h),
            "hyp2f1": scipy.special.hyp2f1(g, g, g + 1, h / 2), "zeta": scipy.special.zeta(g + 1, g),
            "gamma": scipy.special.gamma(g), "loggamma": scipy.special.loggamma(g), "erfcx": scipy.special.erfcx(h),
            "dawsn": scipy.special.dawsn(h), "wofz": scipy.special.wofz(h + 0.5j),
            "rel_entr": scipy.special.rel_entr(h, g), "kl_div": scipy.special.kl_div(h, g),
            "boxcox": scipy.special.boxcox(g, 0.5), "boxcox1p": scipy.special.boxcox1p(h, 0.5)}
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=2e-5, atol=1e-6, err_msg=name)


def test_fftshift_is_one_program(primitive_runs):
    """fftshift and ifftshift called eagerly are one compiled program (they were two slices and a concatenate
    per axis, each run on its own)."""
    h = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = knp.asarray(h)
    np.testing.assert_array_equal(knp.fft.fftshift(x), np.fft.fftshift(h))
    np.testing.assert_array_equal(knp.fft.ifftshift(x, axes=1), np.fft.ifftshift(h, axes=1))
    np.testing.assert_array_equal(knp.fft.fftshift(x, axes=(0,)), np.fft.fftshift(h, axes=(0,)))
    assert primitive_runs == []
    np.testing.assert_array_equal(knp.fft.fftshift(x, axes=[0, 1]), np.fft.fftshift(h, axes=[0, 1]))  # (op by op)
