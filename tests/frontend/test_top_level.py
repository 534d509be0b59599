"""The top-level helpers kiln shares with JAX: disable_jit, ensure_compile_time_eval, eval_shape and
ShapeDtypeStruct, make_jaxpr, typeof, named_scope/named_call, local_device_count, print_environment_info,
float0, and the small public modules (dtypes, errors, typing, stages, version, custom_derivatives)."""
from __future__ import annotations

import typing

import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_disable_jit_runs_python_eagerly():
    seen = []

    @kiln.jit
    def f(x):
        seen.append(type(x).__name__)
        return x * 2

    with kiln.disable_jit():
        np.testing.assert_allclose(f(knp.ones(2)), [2, 2])
        f(knp.ones(2))
    assert seen == ["Array", "Array"]  # concrete arrays, every call: no tracing
    f(knp.ones(2))
    assert seen[-1] == "Tracer" and not kiln.config.disable_jit
    with kiln.disable_jit(False):
        assert not kiln.config.disable_jit


def test_ensure_compile_time_eval():
    @kiln.jit
    def f(x):
        with kiln.ensure_compile_time_eval():
            n = knp.arange(4).sum()  # concrete: usable as a Python int inside jit
            assert isinstance(n, kiln.Array)
            y = x * 2  # traced values are still traced
        return knp.ones(int(n)) * y.sum()
    np.testing.assert_allclose(f(knp.ones(2)), np.full(6, 4.0))


def test_eval_shape_and_shape_dtype_struct():
    s = kiln.ShapeDtypeStruct((2, 3), np.float32)
    assert (s.shape, s.dtype, s.ndim, s.size, len(s)) == ((2, 3), np.dtype(np.float32), 2, 6, 2)
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
    assert s.update(shape=(4,)) == kiln.ShapeDtypeStruct((4,), np.float32) and s.shape == (2, 3)
    int_weak = s.update(dtype=np.int32, weak_type=True)
    assert repr(int_weak) == "ShapeDtypeStruct(shape=(2, 3), dtype=int32, weak_type=True)"
    with pytest.raises(TypeError, match="unexpected keyword argument 'vma'; it takes shape, dtype, sharding"):
        s.update(vma=frozenset())
    assert s == kiln.ShapeDtypeStruct((2, 3), "float32") and hash(s) == hash(kiln.ShapeDtypeStruct((2, 3), "float32"))
    out = kiln.eval_shape(lambda a, b: {"sum": a @ b, "n": 3}, s, np.ones((3, 4), np.int32))
    assert out["sum"] == kiln.ShapeDtypeStruct((2, 4), np.float32)
    assert out["n"] == kiln.ShapeDtypeStruct((), np.int32, weak_type=True)
    assert kiln.eval_shape(knp.sum, kiln.ShapeDtypeStruct((5,), np.float64)).dtype == np.float32  # canonicalized
    lowered = kiln.jit(lambda a: a * 2).lower(s)
    assert "stablehlo.multiply" in lowered.as_text()
    with pytest.raises(TypeError, match=r"kiln.eval_shape: argument of type str .* is not an array"):
        kiln.eval_shape(lambda a: a, "x")
    with pytest.raises(TypeError, match=r"ShapeDtypeStruct: dtype must be given"):
        kiln.ShapeDtypeStruct((2,), None)
    with pytest.raises(TypeError, match=r"ShapeDtypeStruct: shape must be a sequence of ints"):
        kiln.ShapeDtypeStruct(None, np.float32)


def test_make_jaxpr_returns_kiln_ir():
    ir = kiln.make_jaxpr(lambda x: knp.sin(x) * 2)(np.ones(3, np.float32))
    assert "sin" in str(ir) and "mul" in str(ir) and ir.out_avals[0].shape == (3,)
    ir2, shapes = kiln.make_jaxpr(lambda x, n: x * n, static_argnums=1, return_shape=True)(np.ones(2), 3)
    assert shapes == kiln.ShapeDtypeStruct((2,), np.float32)
    with pytest.raises(NotImplementedError, match=r"axis_env is not supported"):
        kiln.make_jaxpr(lambda x: x, axis_env=[("i", 2)])


def test_typeof_named_scope_named_call_and_devices():
    t = kiln.typeof(knp.ones((2, 3)))
    assert isinstance(t, kiln.ShapedArray) and t.shape == (2, 3) and t.dtype == np.float32
    assert kiln.typeof(1.0).weak_type
    kiln.jit(lambda x: kiln.typeof(x).shape == (4,) or 1 / 0)(np.ones(4))  # tracers too
    # printed as JAX prints avals; outside shard_map nothing varies along mesh axes
    assert str(t) == "float32[2,3]" and repr(t) == "ShapedArray(float32[2,3])"
    # a weakly typed one: str with JAX's "~", repr with the flag
    weak = kiln.typeof(kiln.jit(lambda: 2.0)())
    assert str(weak) == "~float32[]" and repr(weak) == "ShapedArray(float32[], weak_type=True)"
    assert t.manual_axis_type.varying == frozenset() and t.mat is t.manual_axis_type
    with pytest.raises(TypeError, match=r"kiln.typeof: str .* is not an array or scalar"):
        kiln.typeof("a")
    with kiln.named_scope("block"):
        y = knp.ones(2) + 1
    np.testing.assert_allclose(y, [2, 2])
    with pytest.raises(TypeError, match=r"kiln.named_scope: the name must be a str, got int"):
        with kiln.named_scope(3):
            pass
    f = kiln.named_call(lambda x: x + 1, name="inc")
    assert float(kiln.jit(f)(1.0)) == 2.0 and float(kiln.grad(f)(1.0)) == 1.0
    with pytest.raises(TypeError, match=r"kiln.named_call: name must be a str or None"):
        kiln.named_call(f, name=1)
    assert kiln.local_device_count() == len(kiln.local_devices()) >= 1
    text = kiln.print_environment_info(return_string=True)
    assert "kiln:" in text and "jaxlib:" in text and "numpy:" in text and "device info:" in text


def test_typeof_sharding_says_kiln_types_carry_none():
    # JAX's docs/parallel.md prints jax.typeof(x).sharding (sharding in types), top level and inside jit: kiln's
    # avals carry no sharding, and the error says so and where to read a layout (not Python's bare message)
    want = r"kiln.typeof\(x\).sharding: kiln's types carry no sharding .*x.sharding.*inspect_array_sharding"
    with pytest.raises(AttributeError, match=want):
        _ = kiln.typeof(knp.ones(3)).sharding
    with pytest.raises(AttributeError, match=want):
        kiln.jit(lambda x: kiln.typeof(x).sharding)(np.ones(3))
    assert getattr(kiln.typeof(knp.ones(3)), "sharding", None) is None  # still an AttributeError to getattr


def test_print_environment_info_prints(capsys):
    assert kiln.print_environment_info() is None
    assert "jaxlib:" in capsys.readouterr().out


def test_float0_and_small_modules():
    assert kiln.float0 == np.dtype([("float0", np.void, 0)]) and kiln.dtypes.float0 is kiln.float0
    g = kiln.grad(lambda x, n: x * n, argnums=1, allow_int=True)(1.0, 3)
    assert g.dtype == kiln.float0
    d = kiln.dtypes
    key = kiln.random.key(0)
    assert d.issubdtype(key.dtype, d.extended) and d.issubdtype(key.dtype, d.prng_key)
    assert not d.issubdtype(key.dtype, np.floating) and not d.issubdtype(np.float32, d.extended)
    assert d.canonicalize_dtype(key.dtype, allow_extended_dtype=True) == key.dtype
    with pytest.raises(TypeError, match=r"is an extended dtype .*allow_extended_dtype=True"):
        d.canonicalize_dtype(key.dtype)
    assert d.canonicalize_dtype(np.float64) == np.float32
    assert d.itemsize_bits(d.bfloat16) == 16 and d.itemsize_bits(np.int8) == 8 and d.itemsize_bits(key.dtype) == 64
    assert [d.scalar_type_of(v) for v in (True, 1, np.float32(1), knp.ones(1, np.complex64))] == [
        bool, int, float, complex]
    with pytest.raises(TypeError, match=r"scalar_type_of: .* has no scalar type"):
        d.scalar_type_of(np.dtype("V4"))
    assert d.result_type(np.int32, 1.0) == np.float32 and d.finfo(d.bfloat16).bits == 16 and d.iinfo(np.int8).max == 127
    e = kiln.errors
    assert e.ConcretizationTypeError is kiln.ConcretizationTypeError
    assert issubclass(e.TracerBoolConversionError, e.ConcretizationTypeError)
    assert issubclass(e.JAXTypeError, TypeError) and issubclass(e.JAXIndexError, IndexError)
    for cls in (e.ConcretizationTypeError, e.TracerArrayConversionError, e.TracerIntegerConversionError,
                e.UnexpectedTracerError, e.KeyReuseError):
        assert issubclass(cls, e.JAXTypeError), cls  # as in JAX
    assert issubclass(e.JaxRuntimeError, kiln.KilnError) and issubclass(e.KeyReuseError, kiln.KilnError)
    assert issubclass(e.NonConcreteBooleanIndexError, IndexError)
    with pytest.raises(e.TracerBoolConversionError):
        kiln.jit(lambda x: 1 if x > 0 else 2)(1.0)
    assert knp.ones(2).__class__ in typing.get_args(kiln.typing.ArrayLike)
    assert isinstance(np.ones(2), kiln.typing.DTypeLike.__args__[-1])  # SupportsDType: anything with .dtype
    assert kiln.stages.Wrapped is type(kiln.jit(lambda x: x))
    assert isinstance(kiln.jit(lambda x: x).lower(1.0), kiln.stages.Lowered)
    assert kiln.version.__version__ == kiln.__version__ and kiln.version.__version_info__[0] >= 0
    cd = kiln.custom_derivatives
    assert cd.custom_jvp is kiln.custom_jvp and cd.custom_gradient is kiln.custom_gradient
