"""kiln.ffi: C++ XLA FFI handlers (kernels.cc, built by conftest.py) called eagerly, under jit and vmap, with
attributes, layouts, aliases and side effects; NumPy is the oracle. Errors: unknown targets, handler errors,
results of the wrong type, bad arguments, grad and vmap without a vmap_method."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import ffi

SDS = kiln.ShapeDtypeStruct
RMS, ATTRS, COUNTER, FAILS, ADD = ("kiln_test_rms_norm", "kiln_test_attrs", "kiln_test_counter", "kiln_test_fails",
                                   "kiln_test_add")
METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized"]


def rms_norm_oracle(x, eps=1e-5):
    x = np.asarray(x, np.float32)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps))


def rms_norm(x, eps=1e-5, vmap_method=None):
    return ffi.ffi_call(RMS, SDS(x.shape, x.dtype), vmap_method=vmap_method)(x, eps=np.float32(eps))


def _data(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_include_dir_has_the_ffi_headers():
    assert os.path.isfile(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 2, 4)])
def test_rms_norm_eager_and_jit(kernels, shape):
    x = _data(*shape)
    np.testing.assert_allclose(rms_norm(x), rms_norm_oracle(x), rtol=1e-6)
    both = kiln.jit(lambda x: (rms_norm(x), rms_norm(x * 2, eps=0.5)))(x)
    np.testing.assert_allclose(both[0], rms_norm_oracle(x), rtol=1e-6)
    np.testing.assert_allclose(both[1], rms_norm_oracle(x * 2, 0.5), rtol=1e-6)


def test_stablehlo_is_a_typed_ffi_custom_call(kernels):
    text = kiln.jit(rms_norm).lower(np.ones((2, 3), np.float32)).as_text()
    assert f"stablehlo.custom_call @{RMS}" in text and "api_version = 4" in text
    assert "backend_config = {eps = 9.99999974E-6 : f32}" in text
    assert "operand_layouts = [dense<[1, 0]> : tensor<2xindex>]" in text


@pytest.mark.parametrize("method", METHODS)
def test_vmap_each_method(kernels, method):
    x = _data(3, 2, 4, seed=1)
    out = kiln.vmap(lambda r: rms_norm(r, vmap_method=method))(x)
    np.testing.assert_allclose(out, rms_norm_oracle(x), rtol=1e-6)
    # an unbatched second argument: (4,) as it is, (1, 4) or (3, 4) by the method; add tiles it over x
    y = _data(4, seed=2)
    add = ffi.ffi_call(ADD, SDS((4,), np.float32), vmap_method=method)
    xb = _data(3, 4, seed=3)
    np.testing.assert_allclose(kiln.jit(kiln.vmap(add, in_axes=(0, None)))(xb, y), xb + y, rtol=1e-6)
    np.testing.assert_allclose(kiln.vmap(add, in_axes=(1, None))(xb.T.copy(), y), xb + y, rtol=1e-6)


def test_vmap_without_or_with_an_unknown_vmap_method_raises(kernels):
    with pytest.raises(NotImplementedError, match="needs its vmap_method: pass vmap_method="):
        kiln.vmap(lambda x: ffi.ffi_call(RMS, SDS((3,), np.float32))(x, eps=np.float32(0)))(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="vmap_method must be one of .*got 'loop'"):
        ffi.ffi_call(RMS, SDS((3,), np.float32), vmap_method="loop")


def test_attributes_of_several_types(kernels):
    f = ffi.ffi_call(ATTRS, [SDS((2, 3), np.float32), SDS((), np.int64)])
    x = _data(2, 3, seed=4)
    kw = dict(offset=7, scale=np.float32(1.5), negate=True, mode="four", weight=np.int32(-2),
              table=np.array([1, 2, 3], np.int64))
    expect = -x * 1.5 + (7 - 2 + 4 + 6)
    for g in (f, kiln.jit(lambda x: f(x, **kw))):
        y, count = g(x, **kw) if g is f else g(x)
        np.testing.assert_allclose(y, expect, rtol=1e-6)
        assert int(count) == 6 and count.dtype == np.int64
    assert isinstance(f(x, **kw), list) and isinstance(ffi.ffi_call(ATTRS, (SDS((2, 3), np.float32),
                                                                             SDS((), np.int64)))(x, **kw), tuple)
    y, _ = f(x, **dict(kw, negate=False, mode="", table=np.array([], np.int64)))  # eager cache keys by value
    np.testing.assert_allclose(y, x * 1.5 + 5, rtol=1e-6)


def test_attributes_lower_as_jax_does(kernels):
    f = ffi.ffi_call(RMS, SDS((2,), np.float32))
    text = kiln.jit(lambda x: f(x, i=3, f=0.5, b=True, s="hi", u=np.uint8(7), h=np.float16(2), a=np.arange(3),
                                m=np.ones((2, 2), np.float32), d={"k": 1}, l=[1, 2])).lower(np.ones(2, np.float32))
    text = text.as_text()
    for piece in ["i = 3 : i64", "f = 5.000000e-01 : f64", "b = true", 's = "hi"', "u = 7 : ui8",
                  "h = 2.000000e+00 : f16", "a = dense<[0, 1, 2]> : tensor<3xi64>",
                  "m = dense<1.000000e+00> : tensor<2x2xf32>", "d = {k = 1 : i64}", "l = [1, 2]"]:
        assert piece in text, (piece, text)


def test_bad_attributes_raise(kernels):
    f = ffi.ffi_call(RMS, SDS((2,), np.float32))
    x = np.ones(2, np.float32)
    with pytest.raises(TypeError, match="the attribute eps=.* has type object, which cannot be an FFI attribute"):
        f(x, eps=object())
    with pytest.raises(TypeError, match="does not fit in int64"):
        f(x, eps=2**70)
    with pytest.raises(TypeError, match="has dtype complex64"):
        f(x, eps=np.complex64(1))
    # a Python float is an f64 attribute (as in JAX): a handler taking a float rejects it when it runs
    with pytest.raises(kiln.KilnError, match="Wrong scalar data type: expected F32 but got F64"):
        f(x, eps=1e-5)


def test_side_effects_run_even_when_results_are_unused(kernels):
    x = np.ones(4, np.float32)
    effect = ffi.ffi_call(COUNTER, SDS((4,), np.float32), has_side_effect=True)
    pure = ffi.ffi_call(COUNTER, SDS((4,), np.float32))

    def loop(call):
        def body(i, c):
            call(x)
            return c + 1
        return kiln.jit(lambda: kiln.lax.fori_loop(0, 3, body, 0))

    before = kernels.kiln_test_counter()
    kiln.block_until_ready(kiln.jit(lambda x: (effect(x), x * 2)[1])(x))
    kiln.block_until_ready(loop(effect)())
    assert kernels.kiln_test_counter() - before == 4 + 3 * 4
    before = kernels.kiln_test_counter()
    kiln.block_until_ready(kiln.jit(lambda x: (pure(x), x * 2)[1])(x))
    kiln.block_until_ready(loop(pure)())
    assert kernels.kiln_test_counter() == before  # a pure call whose results are unused is dropped
    np.testing.assert_array_equal(pure(x), x + 1)


def test_layouts_and_aliases(kernels):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # the handler sees x column major (major-to-minor (1, 0)) and writes its result row major
    col = ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_layouts=[(1, 0)])
    np.testing.assert_array_equal(col(x), (x.T.ravel() + 1).reshape(2, 3))
    both = ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_layouts=[(1, 0)], output_layouts=(1, 0))
    np.testing.assert_array_equal(kiln.jit(both)(x), x + 1)
    text = kiln.jit(col).lower(x).as_text()
    assert "operand_layouts = [dense<[0, 1]> : tensor<2xindex>]" in text
    alias = ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_output_aliases={0: 0})
    np.testing.assert_array_equal(kiln.jit(lambda x: alias(x * 2))(x), x * 2 + 1)
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<operand_index = 0" in (
        kiln.jit(alias).lower(x).as_text().replace("output_tuple_indices = [], ", ""))
    # batched with a vectorized method, the batch axis becomes the most major one of every layout
    cols = ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_layouts=[(1, 0)], vmap_method="expand_dims")
    xs = np.stack([x, x + 10])
    np.testing.assert_array_equal(kiln.vmap(cols)(xs), np.stack([cols(x), cols(x + 10)]))


def test_bad_layouts_and_aliases_raise(kernels):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"input layout 0 \(0, 0\) is not a permutation of the 2 axes"):
        ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_layouts=[(0, 0)])(x)
    with pytest.raises(ValueError, match=r"number of input arguments \(1\) must equal the number of input layouts"):
        ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_layouts=[None, None])(x)
    with pytest.raises(ValueError, match=r"number of outputs \(1\) must equal the number of output layouts \(2\)"):
        ffi.ffi_call(COUNTER, [SDS((2, 3), np.float32)], output_layouts=[None, None])
    with pytest.raises(ValueError, match="maps input 0 .* to output 0 .*same shape and dtype"):
        ffi.ffi_call(COUNTER, SDS((3, 2), np.float32), input_output_aliases={0: 0})(x)
    with pytest.raises(ValueError, match="maps input 1 to output 0, but there are 1 inputs"):
        ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_output_aliases={1: 0})(x)
    with pytest.raises(ValueError, match="different layout"):
        ffi.ffi_call(COUNTER, SDS((2, 3), np.float32), input_output_aliases={0: 0}, input_layouts=[(1, 0)])(x)


def test_unknown_target_is_a_compile_error(kernels):
    f = ffi.ffi_call("kiln_test_no_such_target", SDS((2,), np.float32))
    with pytest.raises(kiln.KilnError, match="No FFI handler registered for kiln_test_no_such_target(.|\n)*"
                                             "register the handler with kiln.ffi.register_ffi_target"):
        f(np.ones(2, np.float32))
    np.testing.assert_array_equal(kiln.jit(lambda x: x + 1)(np.ones(2, np.float32)), 2)  # the process goes on


def test_handler_errors_and_wrong_result_types_raise(kernels):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(RuntimeError, match="the fails kernel always fails"):
        kiln.jit(ffi.ffi_call(FAILS, SDS((2, 3), np.float32)))(x)
    with pytest.raises(RuntimeError, match="Wrong buffer dtype: expected F32 but got S32"):
        ffi.ffi_call(COUNTER, SDS((2, 3), np.int32))(x)
    with pytest.raises(RuntimeError, match="rms_norm: the result must have the shape of the input"):
        ffi.ffi_call(RMS, SDS((2, 4), np.float32))(x, eps=np.float32(0))
    with pytest.raises(RuntimeError, match="rank"):
        ffi.ffi_call(ATTRS, [SDS((2, 3), np.float32), SDS((1,), np.int64)])(
            x, offset=0, scale=np.float32(1), negate=False, mode="", weight=np.int32(0), table=np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="must have 'shape' and 'dtype' attributes .* got 3 at position 1"):
        ffi.ffi_call(RMS, [SDS((2,), np.float32), 3])


def test_grad_raises(kernels):
    with pytest.raises(ValueError, match=f"the FFI call to '{RMS}' cannot be differentiated.*kiln.custom_jvp"):
        kiln.grad(lambda x: knp.sum(rms_norm(x)))(np.ones(3, np.float32))


def test_custom_vjp_gives_an_ffi_call_a_derivative(kernels):
    @kiln.custom_vjp
    def plus_one(x):
        return ffi.ffi_call(COUNTER, SDS(x.shape, x.dtype))(x)
    plus_one.defvjp(lambda x: (plus_one(x), None), lambda _, g: (g,))
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(kiln.grad(lambda x: knp.sum(plus_one(x) ** 2))(x), 2 * (x + 1))


def test_registration_errors(kernels):
    with pytest.raises(ValueError, match="fn must be a PyCapsule"):
        ffi.register_ffi_target("kiln_test_bad", kernels.RmsNorm)
    with pytest.raises(ValueError, match="api_version must be 1"):
        ffi.register_ffi_target("kiln_test_bad", ffi.pycapsule(kernels.RmsNorm), api_version=4)
    with pytest.raises(ValueError, match="expected a ctypes function pointer .* got an object of type str"):
        ffi.pycapsule("RmsNorm")
    with pytest.raises(ValueError, match="the function pointer is NULL"):
        ffi.pycapsule(ctypes.c_void_p())
    with pytest.raises(ValueError, match="use kiln.ffi.register_ffi_type"):
        ffi.register_ffi_type_id("kiln_test_type", None)
    with pytest.raises(ValueError, match="legacy_backend_config requires custom_call_api_version < 4"):
        ffi.ffi_call(RMS, SDS((2,), np.float32), legacy_backend_config="x")
    ffi.register_ffi_target_as_batch_partitionable(RMS)  # accepted (it matters to sharded programs)


def test_register_ffi_type_assigns_a_type_id(kernels):
    type_id = ctypes.c_int64(0)  # an XLA_FFI_TypeId; XLA assigns the id when it is 0
    ffi.register_ffi_type("kiln_test_type", {"type_id": ffi.pycapsule(ctypes.pointer(type_id))})
    assert type_id.value > 0
    with pytest.raises(ValueError, match="must be a dict with a 'type_id' PyCapsule"):
        ffi.register_ffi_type("kiln_test_type_2", {"type_id": 3})


def test_jaxlib_lapack_target(kernels):
    """One of jaxlib's own CPU FFI targets (LAPACK's LU factorisation; kiln registers them on first use),
    column major through input/output layouts, against SciPy."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    if "lapack_sgetrf_ffi" not in kiln.runtime.ensure_lapack_registered():
        pytest.skip("jaxlib's LAPACK kernels are unavailable here")
    a = _data(4, 4, seed=5)
    getrf = ffi.ffi_call("lapack_sgetrf_ffi", (SDS((4, 4), np.float32), SDS((4,), np.int32), SDS((), np.int32)),
                         input_layouts=[(1, 0)], output_layouts=[(1, 0), None, None], input_output_aliases={0: 0})
    lu, piv, info = kiln.jit(getrf)(a)
    lu_ref, piv_ref = scipy_linalg.lu_factor(a)
    np.testing.assert_allclose(lu, lu_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(piv) - 1, piv_ref)  # LAPACK's pivots count from 1
    assert int(info) == 0
