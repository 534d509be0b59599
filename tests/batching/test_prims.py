"""vmap of every primitive against a Python loop over the batch.

``CASES`` is a table: for each primitive, functions that use it, a generator of one batch element's
arguments, and the (in_axes, out_axes) variants to check (0, 1, -1 and None mixtures). Each case
also checks that the primitive's batching rule really ran. ``test_every_primitive_has_a_case``
walks the primitive registry and fails when a primitive has no case here (the collectives, which
need an axis name, are in test_collectives.py; ``custom_vjp_lin`` in test_transforms.py).
Checks run eagerly on small shapes; one test runs every case again under ``kiln.jit`` (one
compilation) and one runs every function as ``vmap(jit(f))``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
from kiln.frontend.core.primitive import registry
from kiln.frontend.lax import elementwise as ew
from kiln.frontend.lax import special as sp

import kiln
import kiln.experimental.checkify  # noqa: F401  (registers check)
import kiln.numpy as knp
from kiln import lax
from kiln.experimental.xla_metadata import set_xla_metadata, xla_metadata_call

# with_sharding_constraint's cases: rows laid out over a one-device mesh (any session has one device).
_ONE_DEVICE_ROWS = kiln.sharding.NamedSharding(kiln.make_mesh((1,), ("i",)), kiln.P("i"))

B = 3  # batch size

# Primitives that are checked in other files of this directory.
ELSEWHERE = {
    "psum": "test_collectives.py", "pmax": "test_collectives.py", "pmin": "test_collectives.py",
    "all_gather": "test_collectives.py", "axis_index": "test_collectives.py",
    "ppermute": "test_collectives_more.py", "all_to_all": "test_collectives_more.py",
    "psum_scatter": "test_collectives_more.py",
    "custom_vjp_lin": "test_transforms.py::test_custom_vjp_lin_batches_and_transposes",
    "debug_callback": "../callbacks/test_callbacks.py::test_print_under_vmap_prints_per_batch_element",
    "inspect_sharding": "../callbacks/test_callbacks.py::test_inspect_array_sharding_on_one_device",
    "pure_callback": "../callbacks/test_callbacks.py::test_pure_callback_vmap_methods",
    "io_callback": "../callbacks/test_callbacks.py::test_io_callback_vmap_and_errors",
    "ffi_call": "../ffi/test_ffi.py::test_vmap_each_method",
    "check": "../checkify/test_checkify.py::test_check_under_eager_grad_and_vmap_raises",
}
# iota has no operands, so its batching rule never runs: its cases only check it is in the function.
NEVER_BATCHED = {"iota", "platform_index"}


@dataclass
class Case:
    prim: str
    fn: Callable
    gen: Callable[[np.random.Generator], list]
    variants: list[tuple[tuple, Any]]  # (in_axes, out_axes)
    tol: float = 2e-5
    id: str = ""
    extra: dict = field(default_factory=dict)


CASES: list[Case] = []


def case(prim, fn, gen, variants, tol=2e-5, id=""):
    CASES.append(Case(prim, fn, gen, variants, tol, id or prim))


def f32(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i32(rng, *shape, lo=-5, hi=6):
    return rng.integers(lo, hi, shape).astype(np.int32)


# A rotation of variants, so that over the table every kind of in_axes/out_axes is exercised.
UNARY_VARIANTS = [((0,), 0), ((1,), 1), ((-1,), -1), ((1,), 0), ((0,), -1)]
BINARY_VARIANTS = [((0, 0), 0), ((1, None), 1), ((None, -1), -1), ((-1, 1), 0), ((0, None), -1)]


def _rot(variants, i, n=2):
    return [variants[(i + k) % len(variants)] for k in range(n)]


# -- elementwise --------------------------------------------------------------------------------------
_POSITIVE = {"log", "sqrt", "rsqrt", "log1p", "lgamma", "digamma"}
_UNIT = {"asin", "acos", "atanh", "erf_inv"}


def _unary_gen(name, kinds):
    def gen(rng):
        if "f" not in kinds:
            return [i32(rng, 2, 4, lo=-100, hi=100)]
        if name in _POSITIVE:
            return [f32(rng, 2, 4, lo=0.5, hi=3.0)]
        if name in _UNIT:
            return [f32(rng, 2, 4, lo=-0.9, hi=0.9)]
        if name == "acosh":
            return [f32(rng, 2, 4, lo=1.1, hi=3.0)]
        return [f32(rng, 2, 4)]
    return gen


_unary = {**{n: (p, ew.UNARY[n][0]) for n, p in ew.unary_prims.items()},
          **{n: (p, sp.SPECIAL_UNARY[n]) for n, p in sp.special_unary_prims.items()}}
for _i, (_name, (_p, _kinds)) in enumerate(sorted(_unary.items())):
    case(_name, lambda x, _p=_p: _p.bind(x), _unary_gen(_name, _kinds), _rot(UNARY_VARIANTS, _i),
         tol=1e-4 if _name in ("digamma", "lgamma", "erf_inv", "tan") else 2e-5)


def _binary_gen(name, kinds):
    def gen(rng):
        if name in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
            return [i32(rng, 2, 4, lo=-50, hi=50), i32(rng, 2, 4, lo=0, hi=6)]
        if "f" not in kinds:
            return [i32(rng, 2, 4, lo=-50, hi=50), i32(rng, 2, 4, lo=-50, hi=50)]
        if name == "pow":
            return [f32(rng, 2, 4, lo=0.5, hi=2.0), f32(rng, 2, 4)]
        if name in ("div", "rem"):
            return [f32(rng, 2, 4), f32(rng, 2, 4, lo=0.5, hi=2.0)]
        return [f32(rng, 2, 4), f32(rng, 2, 4)]
    return gen


_binary = {n: (p, ew.BINARY[n][0]) for n, p in ew.binary_prims.items()}
_binary["nextafter"] = (sp.nextafter_p, "f")
_binary["mulhi"] = (sp.mulhi_p, "iu")
for _i, (_name, (_p, _kinds)) in enumerate(sorted(_binary.items())):
    case(_name, lambda x, y, _p=_p: _p.bind(x, y), _binary_gen(_name, _kinds), _rot(BINARY_VARIANTS, _i))

case("clamp", lax.clamp, lambda r: [f32(r, 2, 3, lo=-2, hi=0), f32(r, 2, 3), f32(r, 2, 3, lo=0, hi=2)],
     [((0, 0, 0), 0), ((None, 1, -1), 1), ((1, None, None), -1), ((None, None, 0), 0)])
case("clamp", lambda x: lax.clamp(-0.5, x, 0.5), lambda r: [f32(r, 2, 3)], [((0,), 1)], id="clamp-scalar-bounds")
case("round", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
     lambda r: [f32(r, 3, 4, lo=-3, hi=3)], [((1,), 0), ((-1,), 1)])
case("convert_element_type", lambda x: lax.convert_element_type(x, np.int32), lambda r: [f32(r, 3, 4, lo=-9, hi=9)],
     [((0,), -1), ((1,), 1)])
case("stop_gradient", lax.stop_gradient, lambda r: [f32(r, 3, 2)], [((-1,), 0)])
case("select", lax.select, lambda r: [f32(r, 2, 3) > 0, f32(r, 2, 3), f32(r, 2, 3)],
     [((0, 0, 0), 0), ((None, 1, -1), 1), ((1, None, None), -1)])
case("select", lambda p, a, b: lax.select(p, a, b), lambda r: [np.bool_(r.uniform() > 0.5), f32(r, 2, 3), f32(r, 2, 3)],
     [((0, 1, None), 0), ((0, None, None), -1), ((None, 0, 1), 1)], id="select-scalar-predicate")
case("real", lax.real, lambda r: [(f32(r, 2, 3) + 1j * f32(r, 2, 3)).astype(np.complex64)], [((1,), 0)])
case("imag", lax.imag, lambda r: [(f32(r, 2, 3) + 1j * f32(r, 2, 3)).astype(np.complex64)], [((-1,), 1)])
case("complex", lax.complex, lambda r: [f32(r, 2, 3), f32(r, 2, 3)], [((0, None), 0), ((1, -1), -1)])
case("conj", lax.conj, lambda r: [(f32(r, 2, 3) + 1j * f32(r, 2, 3)).astype(np.complex64)], [((1,), 0)])
case("integer_pow", lambda x: lax.integer_pow(x, 3), lambda r: [f32(r, 2, 3)], [((1,), 0), ((0,), 1)])
case("square", lax.square, lambda r: [f32(r, 2, 3)], [((1,), 0), ((0,), 1)])
case("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, np.int32), lambda r: [f32(r, 2, 3)],
     [((1,), 0)], id="bitcast-same-width")
case("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, np.uint8), lambda r: [f32(r, 2, 3)],
     [((-1,), 0), ((0,), -1)], id="bitcast-narrowing")
case("bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, np.float32),
     lambda r: [r.integers(0, 64, (2, 4)).astype(np.uint8)], [((0,), 0), ((-1,), 1)], id="bitcast-widening")

# -- structural ---------------------------------------------------------------------------------------
case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), lambda r: [f32(r, 3, 1)],
     [((0,), 0), ((1,), 1), ((-1,), -1)])
case("reshape", lambda x: lax.reshape(x, (6, 4)), lambda r: [f32(r, 2, 3, 4)], [((0,), 0), ((1,), 1), ((-1,), -1)])
case("reshape", lambda x: lax.reshape(x, (2, 12)), lambda r: [f32(r, 2, 3, 4)], [((1,), 1), ((2,), 0)],
     id="reshape-keeps-prefix")
case("transpose", lambda x: lax.transpose(x, (2, 0, 1)), lambda r: [f32(r, 2, 3, 4)],
     [((0,), 0), ((1,), -1), ((-1,), 1)])
case("slice", lambda x: lax.slice(x, (1, 0), (4, 6), (2, 1)), lambda r: [f32(r, 5, 6)], [((0,), 1), ((-1,), -1)])
case("rev", lambda x: lax.rev(x, (0, 2)), lambda r: [f32(r, 2, 3, 4)], [((1,), 0), ((-1,), -1)])
case("concatenate", lambda a, b, c: lax.concatenate([a, b, c], 1),
     lambda r: [f32(r, 2, 3), f32(r, 2, 1), f32(r, 2, 2)],
     [((0, None, 1), 0), ((-1, -1, -1), 1), ((None, 0, None), -1)])
case("pad", lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 1, 0))), lambda r: [f32(r, 3, 4), np.float32(r.uniform())],
     [((0, None), 0), ((1, 0), 1), ((None, 0), -1)])
case("iota", lambda x: x + lax.iota(np.float32, 4), lambda r: [f32(r, 4)], [((0,), 0)])
case("dynamic_slice", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
     lambda r: [f32(r, 4, 5), np.int32(r.integers(-1, 4)), np.int32(r.integers(0, 5))],
     [((0, None, None), 0), ((1, None, None), -1), ((1, 0, None), 0), ((None, 0, 0), 1), ((-1, None, 0), -1)])
case("dynamic_update_slice", lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
     lambda r: [f32(r, 4, 5), f32(r, 2, 3), np.int32(r.integers(-1, 4)), np.int32(r.integers(0, 5))],
     [((0, 0, None, None), 0), ((1, None, None, None), 1), ((None, -1, None, None), -1),
      ((0, 1, 0, None), 0), ((None, None, 0, 0), 1), ((-1, 0, None, 0), -1)])

# -- reductions and contractions ----------------------------------------------------------------------
for _i, _name in enumerate(("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")):
    case(_name, lambda x, _f=getattr(lax, _name): _f(x, (0, 2)), lambda r: [f32(r, 2, 3, 4, lo=0.5, hi=1.5)],
         _rot([((0,), 0), ((1,), -1), ((-1,), 0), ((2,), 1)], _i))
case("reduce_and", lambda x: lax.reduce_and(x, (1,)), lambda r: [f32(r, 2, 3) > -1], [((0,), 0), ((-1,), -1)])
case("reduce_or", lambda x: lax.reduce_or(x, (0,)), lambda r: [f32(r, 2, 3) > 1], [((1,), 0), ((-1,), 1)])
case("argmax", lambda x: lax.argmax(x, 1), lambda r: [f32(r, 3, 4)], [((0,), 0), ((1,), -1), ((-1,), 0)])
case("argmin", lambda x: lax.argmin(x, 0), lambda r: [f32(r, 3, 4)], [((0,), -1), ((2,), 0)])
_MATMUL = (((1,), (0,)), ((), ()))
case("dot_general", lambda a, b: lax.dot_general(a, b, _MATMUL), lambda r: [f32(r, 2, 3), f32(r, 3, 4)],
     [((0, None), 0), ((None, 1), 1), ((1, -1), -1), ((-1, 0), 0)])
_BMM = (((2,), (1,)), ((0,), (0,)))
case("dot_general", lambda a, b: lax.dot_general(a, b, _BMM), lambda r: [f32(r, 2, 3, 4), f32(r, 2, 4, 5)],
     [((0, 0), 0), ((2, None), 1), ((None, -1), -1), ((1, 3), 2)], id="dot_general-batch-dims")

# -- gather / scatter ---------------------------------------------------------------------------------
_TAKE = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
case("gather", lambda x, i: lax.gather(x, i, _TAKE, (1, 6)),
     lambda r: [f32(r, 5, 6), r.integers(0, 5, (3, 1)).astype(np.int32)],
     [((0, None), 0), ((None, 0), 1), ((1, 1), -1), ((-1, -1), 0), ((1, None), -1)])
_WINDOW = lax.GatherDimensionNumbers(offset_dims=(0, 2), collapsed_slice_dims=(), start_index_map=(1, 0))
case("gather", lambda x, i: lax.gather(x, i, _WINDOW, (2, 3)),
     lambda r: [f32(r, 5, 6), r.integers(0, 4, (4, 2)).astype(np.int32)],
     [((0, None), 1), ((None, 0), 0), ((1, 0), -1), ((-1, 1), 2)], id="gather-windows")
_BATCHED_TAKE = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
                                           operand_batching_dims=(0,), start_indices_batching_dims=(0,))
case("gather", lambda x, i: lax.gather(x, i, _BATCHED_TAKE, (1, 1, 6)),
     lambda r: [f32(r, 2, 5, 6), r.integers(0, 5, (2, 3, 1)).astype(np.int32)],
     [((0, 0), 0), ((2, None), 1), ((None, 1), -1), ((1, -1), 2)], id="gather-batching-dims")

_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,))
_SCATTER_VARIANTS = [((0, None, None), 0), ((None, None, 0), 1), ((1, 0, 0), -1), ((None, 0, None), 0),
                     ((0, None, -1), 1), ((-1, -1, 1), -1)]


def _rows_gen(r):
    return [f32(r, 5, 4), r.permutation(5)[:3].reshape(3, 1).astype(np.int32), f32(r, 3, 4, lo=0.5, hi=2.0)]


for _i, _name in enumerate(("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")):
    case(_name, lambda x, i, u, _f=getattr(lax, _name): _f(x, i, u, _ROWS), _rows_gen,
         _SCATTER_VARIANTS if _name in ("scatter", "scatter_add") else _rot(_SCATTER_VARIANTS, _i, 3))
case("scatter_apply", lambda x, i: lax.scatter_apply(x, i, lambda v: v * 2.0 + 1.0, _ROWS, update_shape=(3, 4)),
     lambda r: _rows_gen(r)[:2], [((0, None), 0), ((None, 0), -1), ((1, 0), 1)])
_BATCHED_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(2,), inserted_window_dims=(1,),
                                            scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                            scatter_indices_batching_dims=(0,))
case("scatter_add", lambda x, i, u: lax.scatter_add(x, i, u, _BATCHED_ROWS),
     lambda r: [f32(r, 2, 5, 4), r.integers(0, 5, (2, 3, 1)).astype(np.int32), f32(r, 2, 3, 4)],
     [((0, 0, 0), 0), ((None, 1, None), 1), ((2, None, -1), -1), ((1, -1, 2), 0)], id="scatter_add-batching-dims")

# -- sort, windows, convolutions ----------------------------------------------------------------------
case("top_k", lambda x: lax.top_k(x, 2), lambda r: [f32(r, 3, 5)], [((0,), 0), ((1,), -1), ((-1,), 1)])
case("sort", lambda x: lax.sort(x, dimension=0), lambda r: [f32(r, 4, 3)], [((0,), 0), ((1,), -1), ((-1,), 1)])
case("sort", lambda k, v: lax.sort((k, v), dimension=1, num_keys=1),
     lambda r: [i32(r, 2, 5, lo=0, hi=3), f32(r, 2, 5)], [((0, 0), 0), ((None, 1), -1), ((-1, None), 1)],
     id="sort-key-value")
_RW = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (0, 1)))
case("reduce_window", lambda x: lax.reduce_window(x, 0.0, lax.add, **_RW), lambda r: [f32(r, 4, 5)],
     [((0,), 0), ((1,), -1), ((-1,), 1)])
case("reduce_window", lambda x, v: lax.reduce_window(x, v, lax.max, (2, 2), (1, 1), "VALID", base_dilation=(2, 1)),
     lambda r: [f32(r, 4, 5), np.float32(r.uniform(-1, 1))], [((0, 0), 0), ((None, 0), 1), ((1, 0), -1)],
     id="reduce_window-batched-init")
# the cumulative reductions: the reduced axis shifts past the batch dimension (before it, at it, after it)
_CUM_VARIANTS = [((0,), 0), ((1,), -1), ((-1,), 1), ((2,), 0)]
for _n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    case(_n, lambda x, _n=_n: getattr(lax, _n)(x, axis=1), lambda r: [f32(r, 3, 4)], _CUM_VARIANTS)
    case(_n, lambda x, _n=_n: getattr(lax, _n)(x, axis=0, reverse=True), lambda r: [f32(r, 3, 4)], _CUM_VARIANTS,
         id=f"{_n}-reverse")
case("cummax", lambda x: lax.cummax(x, axis=1), lambda r: [i32(r, 3, 4)], _CUM_VARIANTS[:2], id="cummax-int")
_NCHW = dict(window_strides=(1, 1), padding="SAME")
case("conv_general_dilated", lambda x, w: lax.conv_general_dilated(x, w, **_NCHW),
     lambda r: [f32(r, 2, 3, 5, 4), f32(r, 4, 3, 3, 2)],
     [((0, None), 0), ((None, 0), 1), ((1, -1), -1), ((-1, 2), 0)], tol=1e-4)
case("conv_general_dilated",
     lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 1)), rhs_dilation=(1, 2),
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2),
     lambda r: [f32(r, 2, 5, 6, 4), f32(r, 3, 2, 2, 6)],
     [((0, 0), 0), ((None, 3), -1), ((2, None), 1)], tol=1e-4, id="conv-feature-groups")
case("conv_general_dilated", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2),
     lambda r: [f32(r, 4, 3, 5, 4), f32(r, 6, 3, 2, 2)],
     [((0, 0), 0), ((None, 0), 1), ((1, None), -1)], tol=1e-4, id="conv-batch-groups")

# -- linear algebra -----------------------------------------------------------------------------------


def _spd(r, n=3):
    a = f32(r, n, n)
    return (a @ a.T + n * np.eye(n, dtype=np.float32)).astype(np.float32)


case("cholesky", lax.linalg.cholesky, lambda r: [_spd(r)], [((0,), 0), ((-1,), 1)], tol=1e-4)
case("lu", lax.linalg.lu, lambda r: [f32(r, 3, 3)], [((0,), 0), ((2,), -1)], tol=1e-4)
case("qr", lambda x: lax.linalg.qr(x, full_matrices=False), lambda r: [f32(r, 4, 3)], [((1,), 0), ((0,), 1)], tol=1e-4)
case("eigh", lax.linalg.eigh, lambda r: [_spd(r)], [((0,), 0), ((-1,), -1)], tol=1e-4)
case("svd", lambda x: lax.linalg.svd(x, full_matrices=False), lambda r: [f32(r, 4, 3)], [((0,), 0), ((1,), 1)],
     tol=1e-4)
case("eig", lax.linalg.eig, lambda r: [f32(r, 3, 3)], [((0,), 0), ((-1,), 1)], tol=1e-4)
case("schur", lax.linalg.schur, lambda r: [f32(r, 3, 3)], [((1,), 0), ((0,), -1)], tol=1e-4)
case("triangular_solve", lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda r: [np.tril(_spd(r)), f32(r, 3, 2)], [((0, 0), 0), ((None, 1), -1), ((2, None), 1)], tol=1e-4)

# -- Fourier transforms: the batch axis moves to the front of the transformed ones ---------------------
case("fft", lambda z: lax.fft(z, "fft", (4,)), lambda r: [(f32(r, 2, 4) + 1j * f32(r, 2, 4)).astype(np.complex64)],
     [((0,), 0), ((2,), 1), ((-1,), -1)], tol=1e-4, id="fft-fft")
case("fft", lambda x: lax.fft(x, "rfft", (3, 4)), lambda r: [f32(r, 3, 4)], [((1,), 0), ((2,), -1)], tol=1e-4,
     id="fft-rfft")
case("fft", lambda z: lax.fft(z, "irfft", (4,)), lambda r: [(f32(r, 2, 3) + 1j * f32(r, 2, 3)).astype(np.complex64)],
     [((0,), 0), ((1,), 2)], tol=1e-4, id="fft-irfft")

# -- misc ---------------------------------------------------------------------------------------------
case("sharding_constraint", lambda x: lax.with_sharding_constraint(x * 2, _ONE_DEVICE_ROWS),
     lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("shard_map", lambda x: kiln.shard_map(lambda b: lax.psum(b * 2, "i"), mesh=_ONE_DEVICE_ROWS.mesh,
                                          in_specs=kiln.P("i"), out_specs=kiln.P())(x),
     lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("pvary", lambda x: kiln.vmap(lambda v: lax.pcast(v, "b", to="varying") * 2, axis_name="b")(x),
     lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("name", lambda x: kiln.ad_checkpoint.checkpoint_name(x * 2, "n"), lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("xla_metadata_value", lambda x: set_xla_metadata(x * 2, tag="t"), lambda r: [f32(r, 3, 4)], UNARY_VARIANTS[:3])
case("xla_metadata_call", lambda x, y: xla_metadata_call(tag="t")(lambda u, v: knp.sin(u) @ v)(x, y),
     lambda r: [f32(r, 3, 4), f32(r, 4)], [((0, None), 0), ((1, 0), -1), ((None, 0), 0)])
case("optimization_barrier", lambda x, y: lax.optimization_barrier((x, y)), lambda r: [f32(r, 3, 2), f32(r, 2)],
     [((0, None), 0), ((1, 0), -1)])
case("reduce", lambda x: lax.reduce(x, 1.0, lambda u, v: u * v * 1.0, (1,)), lambda r: [f32(r, 3, 4)],
     [((0,), 0), ((2,), -1)], tol=1e-4)
case("reduce", lambda x, i: lax.reduce((x, i), (-np.inf, 0), lambda u, v: (lax.max(u[0], v[0]),
                                                                            lax.max(u[1], v[1])), (0,)),
     lambda r: [f32(r, 4, 3), i32(r, 4, 3)], [((1, None), 0), ((0, 1), -1)], id="reduce-variadic")
case("rng_bit_generator", lambda k: lax.rng_bit_generator(k, (2, 3)),
     lambda r: [r.integers(0, 2**31, (4,)).astype(np.uint32)], [((0,), 0), ((1,), 1)])

case("linear_solve", lambda m, b: lax.custom_linear_solve(lambda x: m @ x, b, lambda mv, r: knp.linalg.solve(m, r)),
     lambda r: [f32(r, 3, 3) + 4 * np.eye(3, dtype=np.float32), f32(r, 3)], [((0, 0), 0), ((None, 0), -1),
                                                                           ((2, None), 0)], tol=1e-4)

# An exported function: under vmap its module runs once per batch element.
_EXPORTED = kiln.export.export(kiln.jit(lambda x, m: (m @ x, knp.sin(x).sum())))(
    kiln.ShapeDtypeStruct((3,), np.float32), kiln.ShapeDtypeStruct((2, 3), np.float32))
case("call_exported", lambda x, m: _EXPORTED.call(x, m), lambda r: [f32(r, 3), f32(r, 2, 3)],
     [((0, None), 0), ((1, 0), -1), ((None, 2), 0)])

case("platform_index", lambda x: lax.platform_dependent(x, cpu=lambda v: v + 1, default=lambda v: v - 1),
     lambda r: [f32(r, 3)], [((0,), 0)])

# -- control flow and calls ---------------------------------------------------------------------------
case("cond", lambda p, x: lax.cond(p, lambda v: v * 2.0, lambda v: -v, x),
     lambda r: [np.bool_(r.uniform() > 0.5), f32(r, 3)], [((0, 0), 0), ((None, 1), -1), ((0, None), 1)])
case("while", lambda x, n: lax.while_loop(lambda c: c[1] < n, lambda c: (c[0] * 1.5, c[1] + 1), (x, 0))[0],
     lambda r: [f32(r, 3), np.int32(r.integers(0, 4))], [((0, 0), 0), ((1, None), -1), ((None, 0), 1)])
case("scan", lambda c, xs: lax.scan(lambda c, x: (c * x, c + x), c, xs),
     lambda r: [f32(r, 2), f32(r, 4, 2)], [((0, 0), 0), ((None, 1), 1), ((-1, -1), -1)])


@kiln.custom_jvp
def _softplus(x):
    return knp.log1p(knp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * kiln.nn.sigmoid(p[0])))


@kiln.custom_vjp
def _clip_grad(x, y):
    return x * y


_clip_grad.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (knp.clip(g * res[1], -1, 1), g * res[0]))

case("custom_jvp_call", lambda x: _softplus(x) * 2.0, lambda r: [f32(r, 3)], [((0,), 0), ((-1,), 1)])
case("custom_vjp_call", _clip_grad, lambda r: [f32(r, 2, 3), f32(r, 2, 3)], [((0, None), 0), ((1, -1), -1)])


@kiln.custom_batching.custom_vmap
def _cv_scale(x, y):
    return x * y


@_cv_scale.def_vmap
def _cv_scale_rule(axis_size, in_batched, x, y):  # the same values, batched by hand: x and y at axis 0
    x = x if in_batched[0] else knp.broadcast_to(x, (axis_size,) + x.shape)
    y = y if in_batched[1] else knp.broadcast_to(y, (axis_size,) + y.shape)
    return x * y, True


case("custom_vmap_call", lambda x, y: _cv_scale(x, y) + 1.0, lambda r: [f32(r, 2, 3), f32(r, 2, 3)],
     [((0, None), 0), ((1, -1), -1)])
case("remat", kiln.checkpoint(lambda x, y: knp.sin(x) @ y), lambda r: [f32(r, 2, 3), f32(r, 3, 2)],
     [((0, None), 0), ((None, 1), -1)])
case("linear_call", lambda m, x: kiln.custom_derivatives.linear_call(lambda r, v: r @ v, lambda r, c: r.T @ c, m, x),
     lambda r: [f32(r, 2, 3), f32(r, 3)], [((0, 0), 0), ((None, 1), -1), ((1, None), 0)])
case("jit_call", kiln.jit(lambda x, y: knp.tanh(x) * y + 1.0), lambda r: [f32(r, 2, 3), f32(r, 3)],
     [((0, None), 0), ((1, 0), -1)])


# -----------------------------------------------------------------------------------------------------

def _contains(closed, name: str) -> bool:
    """Whether ``name`` is a primitive of the IR (or of an IR nested in its parameters)."""
    from kiln.frontend.core.ir import ClosedIR
    for eqn in closed.ir.eqns:
        if eqn.prim.name == name:
            return True
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(sub, ClosedIR) and _contains(sub, name):
                    return True
    return False


def _examples(c: Case, seed: int):
    rng = np.random.default_rng(seed)
    return [c.gen(rng) for _ in range(B)]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_vmap_matches_loop(c: Case, vm):
    if c.prim in CPU_ONLY and kiln.devices()[0].platform != "cpu":
        pytest.skip(f"{c.prim} is LAPACK-only (CPU): kiln has no implementation for this backend")
    examples = _examples(c, 0)
    with vm.recording_batch_rules() as seen:
        for in_axes, out_axes in c.variants:
            vm.check_vmap(c.fn, examples, in_axes, out_axes, rtol=c.tol, atol=c.tol)
    if c.prim in NEVER_BATCHED:
        assert _contains(kiln.make_ir(c.fn)(*examples[0]), c.prim)
    else:
        assert c.prim in seen, f"the case for {c.prim} did not run its batching rule (ran: {sorted(seen)})"


def test_every_primitive_has_a_case():
    covered = {c.prim for c in CASES} | set(ELSEWHERE)
    missing = sorted(set(registry) - covered)
    assert not missing, f"primitives without a vmap case in tests/batching/test_prims.py: {missing}"


# XLA takes seconds to compile these decompositions; their batching rule is checked eagerly.
SLOW_TO_COMPILE = {"lu", "qr", "eigh", "svd"}
# LAPACK only (no portable implementation): checked on the CPU only, eagerly.
CPU_ONLY = {"eig", "schur"}
# The cases run as vmap(jit(f)): a jitted function is batched by batching its body, so a sample of
# the rules with the most logic is enough.
JIT_INSIDE = ["add", "select-scalar-predicate", "broadcast_in_dim", "reshape-keeps-prefix", "dynamic_slice",
              "dynamic_update_slice", "dot_general-batch-dims", "gather-windows", "scatter", "sort-key-value",
              "reduce_window-batched-init", "conv-feature-groups", "cond", "scan", "custom_vjp_call",
              "triangular_solve"]


def test_under_jit_in_one_compilation(vm):
    """Every case's first variant, all inside one kiln.jit, against the Python loop."""
    plans = []
    for c in CASES:
        if c.prim in SLOW_TO_COMPILE or c.prim in CPU_ONLY:
            continue
        (in_axes, out_axes), examples = c.variants[0], _examples(c, 1)
        plans.append((c, in_axes, out_axes, examples, vm.stack_args(examples, in_axes)))

    @kiln.jit
    def everything(all_args):
        return [kiln.vmap(c.fn, in_axes=in_axes, out_axes=out_axes)(*args)
                for (c, in_axes, out_axes, _, _), args in zip(plans, all_args)]

    outs = everything([p[4] for p in plans])
    for (c, in_axes, out_axes, examples, _), got in zip(plans, outs):
        want = vm.loop_reference(c.fn, examples, in_axes, out_axes)
        vm.assert_trees_close(got, want, rtol=c.tol, atol=c.tol)


def test_vmap_of_jit_in_one_compilation(vm):
    """vmap over one jitted function that runs the JIT_INSIDE cases (jit inside vmap), each mapped over
    its last in_axes variant."""
    plans = []
    by_id = {c.id: c for c in CASES}
    for c in (by_id[i] for i in JIT_INSIDE):
        (in_axes, out_axes), examples = c.variants[-1], _examples(c, 2)
        plans.append((c, in_axes, out_axes, examples))

    @kiln.jit
    def everything(all_args):
        return [c.fn(*args) for (c, *_), args in zip(plans, all_args)]

    all_in_axes = tuple(tuple(p[1]) for p in plans)
    all_out_axes = [p[2] for p in plans]
    outs = kiln.vmap(everything, in_axes=(all_in_axes,), out_axes=all_out_axes)(
        tuple(tuple(vm.stack_args(examples, in_axes)) for (_, in_axes, _, examples) in plans))
    for (c, in_axes, out_axes, examples), got in zip(plans, outs):
        want = vm.loop_reference(c.fn, examples, in_axes, out_axes)
        vm.assert_trees_close(got, want, rtol=c.tol, atol=c.tol)
