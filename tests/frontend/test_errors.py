"""Bad input gets a clear error, nothing crashes, and no cache is poisoned: after each error the
same jitted function still works with good input."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

X3 = np.array([1.0, 2.0, 3.0], np.float32)


def _works(f, *args, expected):
    """``f`` gives ``expected`` on these arguments, and on them as kiln arrays, called twice each (repeated
    calls with kiln arrays may take a compiled dispatch path: it must not have been poisoned either)."""
    as_kiln = kiln.tree_util.tree_map(lambda a: knp.asarray(a) if isinstance(a, np.ndarray) else a, args)
    for call_args in (args, args, as_kiln, as_kiln):
        np.testing.assert_allclose(np.asarray(f(*call_args)), expected, rtol=1e-6)


# -- non-array arguments ----------------------------------------------------------------------

@pytest.mark.parametrize("bad,shown", [("hello", r"a str \('hello'\)"), (object(), r"an? object \(<object"),
                                       ({1, 2}, r"a set"), (np.array(["a"]), r"a ndarray")])
def test_non_array_argument_names_its_path(bad, shown):
    @kiln.jit
    def loss(params, x):
        return params["w"] * x + params["b"][0]

    good = {"w": X3, "b": [1.0]}
    _works(loss, good, 2.0, expected=X3 * 2 + 1)
    with pytest.raises(TypeError, match=r"kiln\.jit\(loss\): argument params\['w'\] is " + shown +
                       r".*not a valid array type.*static_argnames='params'"):
        loss({"w": bad, "b": [1.0]}, 2.0)
    with pytest.raises(TypeError, match=r"argument params\['b'\]\[0\] is " + shown):
        loss({"w": X3, "b": [bad]}, 2.0)
    with pytest.raises(TypeError, match=r"argument x is " + shown):
        loss(good, bad)
    with pytest.raises(TypeError, match=r"argument x is " + shown):
        loss(good, x=bad)
    _works(loss, good, 2.0, expected=X3 * 2 + 1)
    _works(loss, good, 3.0, expected=X3 * 3 + 1)


def test_non_array_argument_after_static_argument_names_the_right_parameter():
    f = kiln.jit(lambda n, a, b: a * n + b, static_argnums=0)
    with pytest.raises(TypeError, match=r"argument b is a str"):
        f(2, X3, "oops")
    _works(f, 2, X3, 1.0, expected=X3 * 2 + 1)


def test_bad_return_value():
    calls = []

    @kiln.jit
    def f(x, give_text):
        calls.append(1)
        return "text" if give_text else x * 2

    with pytest.raises(TypeError, match=r"kiln\.jit\(f\): the function returned a str \('text'\); jitted functions "
                                        r"must return arrays"):
        kiln.jit(f.__wrapped__, static_argnums=1)(X3, True)
    _works(kiln.jit(f.__wrapped__, static_argnums=1), X3, False, expected=X3 * 2)


# -- static arguments -------------------------------------------------------------------------

def test_unhashable_static_argument():
    @partial(kiln.jit, static_argnums=1)
    def f(x, sizes):
        return x * len(sizes)

    with pytest.raises(TypeError, match=r"static argument 'sizes' \(position 1\) has unhashable type list; "
                                        r"static arguments must be hashable\. Pass a tuple instead of a list"):
        f(X3, [1, 2])
    with pytest.raises(TypeError, match=r"unhashable type dict.*Pass a tuple of items instead of a dict"):
        f(X3, {"a": 1})
    with pytest.raises(TypeError, match=r"static argument 'sizes' \(position 1\) is an array; static arguments "
                                        r"must be hashable Python values"):
        f(X3, knp.ones(2))
    with pytest.raises(TypeError, match=r"unhashable type ndarray"):
        f(X3, np.ones(2))
    _works(f, X3, (1, 2), expected=X3 * 2)
    assert f._cache_size() == 1


def test_static_keyword_unhashable():
    f = kiln.jit(lambda x, opts=(): x * len(opts), static_argnames="opts")
    with pytest.raises(TypeError, match=r"static argument 'opts' \(keyword 'opts'\) has unhashable type list"):
        f(X3, opts=[1])
    _works(lambda a: f(a, opts=(1, 2, 3)), X3, expected=X3 * 3)


def test_static_argument_whose_eq_raises():
    class Weird:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            raise RuntimeError("no comparisons")

    f = kiln.jit(lambda x, w: x + 1, static_argnums=1)
    w = Weird()
    _works(f, X3, w, expected=X3 + 1)
    _works(f, X3, Weird(), expected=X3 + 1)  # equality fails: treated as a different value, not a crash


def test_bad_jit_options():
    def f(a, b):
        return a + b

    with pytest.raises(TypeError, match=r"static_argnums=2 is out of range: the function takes 2 positional "
                                        r"argument\(s\) \(a, b\)"):
        kiln.jit(f, static_argnums=2)
    with pytest.raises(TypeError, match=r"static_argnames='c' is not a parameter of the function \(its parameters: "
                                        r"a, b\)"):
        kiln.jit(f, static_argnames="c")
    with pytest.raises(TypeError, match=r"donate_argnums must be ints, got 'a'"):
        kiln.jit(f, donate_argnums=["a"])
    with pytest.raises(TypeError, match=r"kiln\.jit: expected a function, got int: 3"):
        kiln.jit(3)


# -- backends and devices ---------------------------------------------------------------------

def test_unknown_backend_lists_available_ones():
    available = ", ".join(kiln.runtime.available_backends())
    f = kiln.jit(lambda a: a + 1)
    with pytest.raises(kiln.BackendError, match=f"Unknown backend 'nosuch'. Available backends: {available}"):
        kiln.jit(lambda a: a + 1, backend="nosuch")(X3)
    with pytest.raises(kiln.BackendError, match="Unknown backend 'nosuch'. Available backends"):
        kiln.devices("nosuch")
    before = kiln.config.default_backend
    with pytest.raises(kiln.BackendError, match="Unknown backend 'nosuch'. Available backends"):
        kiln.config.update("default_backend", "nosuch")
    assert kiln.config.default_backend == before  # the failed update changed nothing
    _works(f, X3, expected=X3 + 1)


@pytest.mark.backend("cpu")
def test_backend_not_available():
    if "cuda" in kiln.runtime.available_backends():
        pytest.skip("cuda is available here")
    with pytest.raises(kiln.BackendError, match="Backend 'cuda' is not available.*Available backends: cpu"):
        kiln.jit(lambda a: a, backend="cuda")(X3)


def test_device_index_out_of_range():
    n = len(kiln.devices())
    with pytest.raises(kiln.DeviceError, match=rf"Device index {n + 3} is out of range for backend '\w+', which "
                                               rf"has {n} device"):
        kiln.runtime.local_device(None, n + 3)
    with pytest.raises(kiln.DeviceError, match="Device index must be an int"):
        kiln.runtime.local_device(None, "0")


def test_bad_device_arguments():
    f = kiln.jit(lambda a: a + 1, device=0)
    with pytest.raises(TypeError, match=r"device= expects a kiln device \(from kiln\.devices\(\)\), got 0"):
        f(X3)
    with pytest.raises(TypeError, match=r"kiln\.device_put: device must be a kiln device .* got int 0"):
        kiln.device_put(X3, 0)
    _works(kiln.jit(lambda a: a + 1, device=kiln.devices()[0]), X3, expected=X3 + 1)


# -- shapes and dtypes ------------------------------------------------------------------------

def test_shape_mismatch_shows_both_shapes():
    f = kiln.jit(lambda a, b: a + b)
    with pytest.raises(ValueError, match=r"kiln\.numpy\.add: operands could not be broadcast together with shapes "
                                         r"\(3,\) \(4,\)"):
        knp.ones(3) + knp.ones(4)
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) \(4,\)"):
        f(np.ones((2, 3), np.float32), np.ones(4, np.float32))
    with pytest.raises(kiln.ShapeError,
                       match=r"kiln\.lax\.add: operand shapes \(3,\) and \(4,\) do not broadcast \(kiln\.lax "
                             r"broadcasts rank-0 operands and axes of size 1"):
        lax.add(knp.ones(3), knp.ones(4))
    with pytest.raises(TypeError, match=r"kiln\.lax\.mul: operand shapes \(3,\) and \(1, 3\) do not broadcast"):
        kiln.jit(lax.mul)(knp.ones(3), knp.ones((1, 3)))
    with pytest.raises(TypeError, match=r"kiln\.lax\.add: operands must have the same dtype, got float32 and int32"):
        lax.add(knp.ones(3), knp.ones(3, dtype=knp.int32))
    with pytest.raises(kiln.ShapeError, match=r"kiln\.numpy\.matmul: shapes \(2, 3\) and \(4, 2\) are not aligned"):
        f2 = kiln.jit(lambda a, b: a @ b)
        f2(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    _works(f, X3, X3, expected=X3 * 2)
    _works(f, np.ones((2, 3), np.float32), X3, expected=np.ones((2, 3)) + X3)


def test_invalid_dtypes():
    with pytest.raises(TypeError, match=r"kiln\.numpy\.zeros: invalid dtype 'float31'\. Did you mean 'float32'\? "
                                        r"Valid dtypes: bool, uint8"):
        knp.zeros(3, dtype="float31")
    with pytest.raises(TypeError, match=r"dtype 'str' is not supported; kiln arrays hold numeric or boolean data"):
        knp.ones(3).astype(str)
    with pytest.raises(TypeError, match=r"invalid dtype 'nope'"):
        lax.convert_element_type(knp.ones(3), "nope")

    @kiln.jit
    def cast(x):
        return x.astype("int33")

    with pytest.raises(TypeError, match=r"invalid dtype 'int33'"):
        cast(X3)
    g = kiln.jit(lambda x, dt: x.astype(dt), static_argnums=1)
    with pytest.raises(TypeError, match=r"invalid dtype 'flaot16'\. Did you mean 'float16'"):
        g(X3, "flaot16")
    assert g(X3, "float16").dtype == np.float16
    with pytest.raises(TypeError, match=r"kiln\.lax\.sin: does not accept dtype int32"):
        lax.sin(knp.ones(3, dtype=knp.int32))


def test_operand_type_errors():
    x = knp.ones(3)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Array' and 'str'"):
        x + "a"
    with pytest.raises(TypeError, match=r"kiln\.numpy\.add: argument 1 is a list; kiln\.numpy does not convert lists"):
        x + [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match=r"kiln\.numpy\.add: argument 1 of type str"):
        knp.add(x, "a")
    assert (x == None) is False  # noqa: E711 - as NumPy's identity fallback: not an elementwise comparison
    assert (x != "text") is True

    class Meters:
        def __radd__(self, other):
            return "Meters.__radd__"

    assert x + Meters() == "Meters.__radd__"  # unknown types get their reflected method called

    @kiln.jit
    def f(a):
        return a + "x"

    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tracer' and 'str'"):
        f(X3)


def test_array_construction_errors():
    with pytest.raises(TypeError, match=r"kiln\.numpy\.array: cannot make an array from str"):
        knp.asarray("abc")
    with pytest.raises(TypeError, match=r"cannot make an array from object"):
        knp.asarray(object())
    with pytest.raises(ValueError, match=r"cannot make an array from list .*inhomogeneous"):
        knp.asarray([[1, 2], [3]])
    with pytest.raises(TypeError, match=r"kiln: value of type str is not a valid array"):
        kiln.device_put("abc")
    with pytest.raises(OverflowError, match=r"Python int 1099511627776 is out of range for int32"):
        kiln.jit(lambda a: a)(2 ** 40)
    with pytest.raises(ValueError, match=r"negative dimensions are not allowed"):
        knp.zeros(-1)


def test_python_scalar_out_of_range_for_the_array_dtype():
    u8 = knp.ones(3, dtype=knp.uint8)
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.add: Python int 256 is out of range for uint8 "
                       r"\(range \[0, 255\]\), the dtype it takes from the array it is combined with: cast the "
                       r"array to a wider dtype first, or use a float \(256\) if the exact value does not matter"):
        u8 + 256
    with pytest.raises(OverflowError, match=r"kiln\.numpy\.add: Python int -1 is out of range for uint8"):
        u8 + -1
    with pytest.raises(OverflowError, match=r"Python int 300 is out of range for int8"):
        lax.add(knp.ones(3, dtype=knp.int8), 300)
    f = kiln.jit(lambda a, b: a * b)
    with pytest.raises(OverflowError, match=r"kiln\.numpy\.multiply: Python int 1000 is out of range for int8"):
        kiln.jit(lambda a: a * 1000)(np.ones(2, np.int8))
    np.testing.assert_array_equal(np.asarray(u8 + 255), [0, 0, 0])  # in range: wraps, as NumPy
    np.testing.assert_array_equal(np.asarray(f(np.ones(2, np.int8), np.int8(3))), [3, 3])


def test_config_errors():
    with pytest.raises(ValueError, match=r"unknown flag 'enable_x32'; known flags: .*enable_x64"):
        kiln.config.update("enable_x32", True)
    with pytest.raises(ValueError, match=r"kiln\.config\.update\('enable_x64', 1\): expected a bool, got int"):
        kiln.config.update("enable_x64", 1)
    with pytest.raises(AttributeError, match=r"kiln\.config has no flag 'nope'"):
        getattr(kiln.config, "nope")  # noqa: B009
    assert kiln.config.enable_x64 is False


# -- deleted arrays: errors, never crashes ----------------------------------------------------

def test_deleted_array_uses_raise():
    f = kiln.jit(lambda a: a + 1)
    x = knp.ones(4)
    x.delete()
    for use, where in [(x.is_ready, "is_ready"), (x.block_until_ready, "block_until_ready"),
                       (lambda: np.asarray(x), "to_numpy"), (x.item, "to_numpy"),
                       (lambda: kiln.device_get(x), "to_numpy")]:
        with pytest.raises(kiln.DeletedBufferError, match=f"deleted or donated \\({where}\\)"):
            use()
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.jit\(<lambda>\): argument a refers to a deleted"):
        f(x)
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.numpy\.multiply: argument x refers to a deleted array"):
        x * 2
    with pytest.raises(kiln.DeletedBufferError, match=r"kiln\.device_put: the array was deleted"):
        kiln.device_put(x, kiln.devices()[0])
    x.delete()  # deleting twice is harmless
    _works(f, knp.ones(4), expected=np.full(4, 2.0))


# -- errors inside traces ---------------------------------------------------------------------

def test_error_in_traced_function_then_good_input():
    @kiln.jit
    def f(x):
        return x.reshape(2, 2) * 2

    with pytest.raises(ValueError, match=r"cannot reshape array of size 3 \(shape \(3,\)\) into shape \(2, 2\)"):
        f(X3)
    with pytest.raises(ValueError, match=r"axis 3 is out of bounds for an array of dimension 1"):
        kiln.jit(lambda a: a.sum(axis=3))(X3)
    _works(f, np.arange(4, dtype=np.float32), expected=np.arange(4).reshape(2, 2) * 2)
    assert f._cache_size() == 1
    from kiln.frontend.core.tracing import current_builder
    assert current_builder() is None


def test_errors_in_nested_jit():
    inner = kiln.jit(lambda a: a.reshape(2, 2))
    outer = kiln.jit(lambda a: inner(a) + 1)
    with pytest.raises(ValueError, match="cannot reshape array of size 3"):
        outer(X3)
    _works(outer, np.zeros(4, np.float32), expected=np.ones((2, 2)))
    _works(inner, np.zeros(4, np.float32), expected=np.zeros((2, 2)))
