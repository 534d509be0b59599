"""jaxlib's C++ dispatch path (kiln.runtime.fastpath): same results as the Python path, no Python work
on repeated calls, and every error still explained by kiln."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import runtime

pytestmark = pytest.mark.skipif(not runtime.fastpath.available(), reason="C++ dispatch unavailable here")


def test_repeated_calls_stay_in_cpp(count_misses):
    f = kiln.jit(lambda a, b: {"s": a + b, "p": (a * b, b)})
    a, b = knp.arange(4.0), knp.ones(4)
    outs = [f(a, b) for _ in range(5)]
    assert len(count_misses) == 1
    for out in outs:
        np.testing.assert_array_equal(out["s"], np.arange(4.0) + 1)
        np.testing.assert_array_equal(out["p"][0], np.arange(4.0))
        assert isinstance(out["p"][1], kiln.Array) and out["p"][1].dtype == np.float32


def test_new_signature_misses_once(count_misses):
    f = kiln.jit(lambda a: a * 2)
    f(knp.ones(3)), f(knp.ones(3)), f(knp.ones(4)), f(knp.ones(4)), f(knp.ones(4, dtype=knp.int32))
    assert len(count_misses) == 3


def test_static_arguments_and_keywords(count_misses):
    f = kiln.jit(lambda x, n: x * n, static_argnames="n")
    x = knp.ones(2)
    assert float(f(x, n=3)[0]) == 3.0 and float(f(x, n=3)[0]) == 3.0 and float(f(x, n=4)[0]) == 4.0
    assert len(count_misses) == 2


def test_scalar_arguments_stay_in_cpp(count_misses):
    """Python and NumPy scalars (a training loop's step number, a learning rate) are converted in C++."""
    f = kiln.jit(lambda a, i, lr: a * i + lr)
    a = knp.ones(3)
    for i in range(4):
        np.testing.assert_array_equal(f(a, i, np.float32(0.5)), np.full(3, i + 0.5))
    assert len(count_misses) == 1


def test_numpy_array_arguments_take_the_direct_launch_which_copies_them(count_misses, monkeypatch):
    """Never the C++ path (which may alias their memory, see test_host_array_changed_after_the_call_...): after the
    first call, the direct launch, which copies each NumPy array; another dtype or shape is another signature."""
    f = kiln.jit(lambda a, b: a + b)
    for i in range(3):
        np.testing.assert_array_equal(f(np.full(3, i, np.float32), 2.0), np.full(3, i + 2.0))
    assert len(count_misses) == 1
    from kiln.frontend.driver import jit as jit_module
    monkeypatch.setattr(jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    np.testing.assert_array_equal(f(np.arange(3, dtype=np.float32), 1.0), [1.0, 2.0, 3.0])
    with kiln.transfer_guard("disallow"), pytest.raises(kiln.errors.TransferGuardError, match="host-to-device"):
        f(np.arange(3, dtype=np.float32), 1.0)  # each call's copy is a transfer the guard sees
    monkeypatch.undo()
    np.testing.assert_array_equal(f(np.arange(3.0), 1.0), [1.0, 2.0, 3.0])  # float64: canonicalised, new signature
    np.testing.assert_array_equal(f(np.arange(4, dtype=np.float32), 1.0), [1.0, 2.0, 3.0, 4.0])
    assert len(count_misses) == 3


def test_host_arguments_keep_their_dtypes_and_weak_types(count_misses):
    """The C++ signature tells a weak Python int from a strong NumPy int32 and a bool, as kiln's key does: each
    kind keeps its own compiled program and result dtype on the C++ path."""
    f = kiln.jit(lambda x, n: x * n)
    x8 = knp.arange(3, dtype=knp.int8)
    for _ in range(3):
        assert f(x8, 3).dtype == np.int8  # weak: the array's dtype wins
        assert f(x8, np.int32(3)).dtype == np.int32  # strong: promotes
        assert f(x8, True).dtype == np.int8
        assert f(x8, 2.5).dtype == np.float32  # weak float
        assert f(x8, np.float64(2.5)).dtype == np.float32  # canonicalised (x64 off)
    np.testing.assert_array_equal(f(x8, 3), [0, 3, 6])
    np.testing.assert_array_equal(f(x8, 2.5), [0, 2.5, 5])
    np.testing.assert_array_equal(f(x8, np.float64(0.5)), [0, 0.5, 1.0])
    assert len(count_misses) == 5


def test_host_array_layouts_on_the_cpp_path():
    """Strided views, Fortran order, 0-d arrays and NumPy scalars give the same values on every call."""
    f = kiln.jit(lambda a, b: a * 10 + b)  # (host arrays take the Python path, scalars the C++ one)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for _ in range(3):
        np.testing.assert_array_equal(f(base[::2, 1::2], np.float32(1)), base[::2, 1::2] * 10 + 1)
        np.testing.assert_array_equal(f(np.asfortranarray(base), np.array(2.0, np.float32)), base * 10 + 2)
        np.testing.assert_array_equal(f(base.T, 0), base.T * 10)


def test_host_array_changed_after_the_call_does_not_change_the_result():
    """JAX's C++ path may alias a NumPy argument's memory on CPU while the call runs asynchronously; kiln
    copies host arrays at the call, so reusing the buffer right away is safe."""
    f = kiln.jit(lambda a: a * 2)
    x = np.ones(1 << 16, np.float32)
    f(x)
    for i in range(5):
        x[:] = i
        out = f(x)
        x[:] = -1  # the caller reuses its buffer right away
        np.testing.assert_array_equal(np.asarray(out)[:3], [2 * i] * 3)


def test_python_int_out_of_range_on_the_cpp_path_gets_kilns_error():
    f = kiln.jit(lambda i, x: x * i)
    x = knp.ones(2)
    f(3, x), f(4, x)  # the C++ now holds the weak-int32 signature
    with pytest.raises(kiln.IntegerOverflowError, match="Python int 1099511627776 is out of range for int32"):
        f(2**40, x)
    np.testing.assert_array_equal(f(5, x), [5.0, 5.0])


def test_transfer_guard_applies_to_host_arguments_on_the_cpp_path():
    f = kiln.jit(lambda a: a + 1)
    f(np.ones(3, np.float32)), f(np.ones(3, np.float32))
    with kiln.transfer_guard("disallow"):
        with pytest.raises(kiln.errors.TransferGuardError, match="implicit host-to-device transfer"):
            f(np.ones(3, np.float32))
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2.0, 2.0, 2.0])


def test_other_host_values_use_the_python_path(count_misses):
    import enum

    class Scale(enum.IntEnum):
        TWO = 2
    f = kiln.jit(lambda a, b: a * b)
    for _ in range(3):
        np.testing.assert_array_equal(f(knp.ones(2), Scale.TWO), [2.0, 2.0])
    assert len(count_misses) == 3  # an int subclass: converted in Python every time, still correct


def test_committed_outputs_follow_inputs():
    f = kiln.jit(lambda a: a + 1)
    x = kiln.device_put(knp.ones(2), kiln.devices()[0])
    for _ in range(3):
        out = f(x)
        assert out.committed and out.device == kiln.devices()[0]
    assert not f(knp.ones(2)).committed


def test_deleted_argument_still_gets_kiln_error():
    f = kiln.jit(lambda a: a + 1)
    x = knp.ones(3)
    f(x), f(x)
    x.delete()
    with pytest.raises(kiln.DeletedBufferError, match="argument a refers to a deleted array"):
        f(x)
    np.testing.assert_array_equal(f(knp.ones(3)), np.full(3, 2.0))



def test_a_deleted_argument_is_launched_at_most_once(run_py):
    # Every launch on a deleted buffer has PJRT log an error line; the fast paths that find one hand the call to
    # the Python path, which checks before launching, instead of launching again (three lines before; JAX's jit
    # logs one). In a subprocess, to read its stderr.
    proc = run_py("""
        import sys
        import kiln, kiln.numpy as knp
        donate = kiln.jit(lambda x: x * 2, donate_argnums=0)
        g = kiln.jit(lambda x: x + 1)
        g(knp.ones(4)), g(knp.ones(4))
        knp.tanh(knp.ones(4)), knp.tanh(knp.ones(4))
        for call in (g, knp.tanh, lambda x: x - 1.0, lambda x: g(x=x)):
            x = knp.ones(4)
            donate(x)
            try:
                call(x)
            except kiln.DeletedBufferError as e:
                assert "deleted" in str(e), e
            else:
                sys.exit("no error")
            print("call done", file=sys.stderr, flush=True)
    """)
    calls = proc.stderr.split("call done")[:-1]
    assert len(calls) == 4, proc.stderr
    for text in calls:
        assert text.count("ExecutePrepare") <= 1, text

def test_config_change_retraces(count_misses):
    f = kiln.jit(lambda a: a + 1.0)
    x = knp.ones(2)
    f(x), f(x)
    with kiln.config.override("enable_x64", True):
        y = f(np.ones(2))
        assert y.dtype == np.float64
    z = f(x)  # the flags are as they were: the float32 program of the first calls, without retracing
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z, np.full(2, 2.0, np.float32))
    assert len(count_misses) >= 2


def test_closed_over_arrays_stay_in_cpp(count_misses, capfd):
    c = knp.asarray(np.array([1.0, 2.0], np.float32))
    f = kiln.jit(lambda x: x * c + 1)
    x = knp.ones(2)
    for _ in range(4):
        np.testing.assert_array_equal(f(x), [2.0, 3.0])
    assert len(count_misses) == 1
    assert "expected" not in capfd.readouterr().err  # no failed launch fell back behind the scenes


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


kiln.tree_util.register_pytree_node(_Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: _Pair(*ch))


class _Unregistered:
    def __init__(self, value):
        self.value = value


def test_registered_pytree_classes_in_and_out(count_misses):
    f = kiln.jit(lambda p: _Pair(p.b, p.a * 2))
    p = _Pair(knp.ones(2), knp.zeros(3))
    for _ in range(3):
        out = f(p)
        assert isinstance(out, _Pair)
        np.testing.assert_array_equal(out.a, np.zeros(3))
        np.testing.assert_array_equal(out.b, np.full(2, 2.0))
    assert len(count_misses) == 1


def test_static_objects_still_correct():
    f = kiln.jit(lambda x, u: x * u.value, static_argnums=1)
    u = _Unregistered(3.0)  # hashable by identity: a valid static argument
    for _ in range(3):
        np.testing.assert_array_equal(f(knp.ones(2), u), np.full(2, 3.0))
