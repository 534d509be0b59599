"""lowering/hlo.py, the value helpers emission rules write StableHLO with: the monoid tables, and a
module built with the helpers alone, compiled and run against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from kiln.lowering import hlo
from kiln.lowering.types import ranked_type

from kiln import runtime

UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
          "and": np.bitwise_and, "or": np.bitwise_or}


@pytest.mark.parametrize("kind", sorted(UFUNCS))
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.bool_], ids=lambda d: np.dtype(d).name)
def test_identity_is_the_monoids_identity(kind, dtype):
    if kind in ("and", "or") and np.dtype(dtype).kind == "f":
        pytest.skip("no bitwise monoid on floats")
    x = np.array([0, 1, 3, 7, 100, 127] if dtype != np.bool_ else [False, True]).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        x = np.concatenate([x, [np.iinfo(dtype).min, np.iinfo(dtype).max]]).astype(dtype)
    e = np.array(hlo.identity(kind, dtype), dtype)
    np.testing.assert_array_equal(UFUNCS[kind](e, x), x)


def test_monoid_on_booleans():
    assert [hlo.monoid(k, np.bool_) for k in ("add", "multiply", "maximum", "minimum", "and", "or")] == \
        ["or", "and", "or", "and", "and", "or"]
    assert [hlo.monoid(k, np.int32) for k in ("add", "maximum")] == ["add", "maximum"]


def _run(build, *inputs: np.ndarray) -> list[np.ndarray]:
    """``@main(*inputs)`` returning ``build(*inputs as V)``, emitted with the helpers, run on CPU."""
    with runtime.mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        in_types = [ranked_type(x.shape, x.dtype) for x in inputs]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(in_types, []))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                outs = build(*[hlo.V(a, x.shape, x.dtype) for a, x in zip(block.arguments, inputs)])
                func.ReturnOp([o.v for o in outs])
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(in_types, [o.type for o in outs]))
        assert module.operation.verify()
        text = module.operation.get_asm(enable_debug_info=False)
        out_types = [(o.shape, o.dtype) for o in outs]
    cpu = runtime.local_device("cpu", 0)
    exe = runtime.compile(text, cpu, out_types)
    return [runtime.to_numpy(b) for b in exe.execute([runtime.put(x, cpu) for x in inputs])]


def test_helpers_compile_and_compute():
    x = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)

    def build(a):
        sums = hlo.rsum(a, -1)
        biggest = hlo.reduce(a, [1, 2], "maximum")
        diag = hlo.diagonal(a)
        gram = hlo.matmul(a, hlo.mT(a)) + hlo.eye_like((2,), 3, 3, np.float32)
        (loop,) = hlo.fori_loop(4, [hlo.const(1.0, np.float32)],
                                lambda i, c: [c * 2 + hlo.convert(i, np.float32)])
        keys, values = hlo.sort_along_last(sums, [diag], descending=True)
        positive = hlo.select(a > 0, a, 0)
        # (max, first argmax) over the last axis, as argmax's rule pairs them
        idx = hlo.iota(a.shape, -1)

        def pick(acc_v, acc_i, v, i):
            take = (v > acc_v) | (v.eq(acc_v) & (i < acc_i))
            return [hlo.select(take, v, acc_v), hlo.select(take, i, acc_i)]

        _, arg = hlo.reduce_general([a, idx], [hlo.const(-np.inf, np.float32), hlo.const(0, np.int32)], [-1], pick)
        return [sums, biggest, diag, gram, loop, keys, values, positive, arg]

    sums, biggest, diag, gram, loop, keys, values, positive, arg = _run(build, x)
    np.testing.assert_allclose(sums, x.sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(biggest, x.max((1, 2)))
    np.testing.assert_array_equal(diag, np.diagonal(x, axis1=1, axis2=2))
    np.testing.assert_allclose(gram, x @ np.swapaxes(x, 1, 2) + np.eye(3), rtol=1e-5, atol=1e-6)
    assert loop == 27.0  # c -> 2c + i for i in 0..3, from 1
    order = np.argsort(-sums, axis=-1, kind="stable")
    np.testing.assert_array_equal(keys, np.take_along_axis(sums, order, -1))
    np.testing.assert_array_equal(values, np.take_along_axis(np.diagonal(x, axis1=1, axis2=2), order, -1))
    np.testing.assert_array_equal(positive, np.where(x > 0, x, 0))
    np.testing.assert_array_equal(arg, x.argmax(-1))


def test_types_belong_to_the_context_they_are_asked_in():
    # ranked_type keeps the types it built, per MLIR context: one made in another context must not be reused
    shared, other = runtime.mlir_context(), ir.Context()
    with shared, ir.Location.unknown():
        a = ranked_type((2, 3), np.float32)
        assert ranked_type((2, 3), np.dtype(np.float32)) == a and str(a) == "tensor<2x3xf32>"
    with other, ir.Location.unknown():
        b = ranked_type((2, 3), np.float32)
        assert b.context is other and str(b) == "tensor<2x3xf32>"
    assert a.context is shared
    with shared, ir.Location.unknown():
        assert ranked_type([2, 3], np.float32).context is shared
