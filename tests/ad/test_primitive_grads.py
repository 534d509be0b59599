"""Every differentiable primitive through ``check_grads`` (forward and reverse mode, to second order,
eagerly; first order under ``kiln.jit``).

``CASES`` maps each primitive name to functions that exercise it; ``test_every_differentiable_primitive_
has_a_case`` walks the primitive registry and fails when a primitive that is not declared
non-differentiable has no entry here.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pytest
from check_grads import check_grads
from kiln.frontend.ad.jvp import non_differentiable
from kiln.frontend.core.primitive import registry

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.experimental import checkify  # registers check
from kiln.experimental.xla_metadata import set_xla_metadata, xla_metadata_call, xla_metadata_call2

# with_sharding_constraint's cases: rows laid out over a one-device mesh (any session has one device).
_ONE_DEVICE_ROWS = kiln.sharding.NamedSharding(kiln.make_mesh((1,), ("i",)), kiln.P("i"))


class Case(NamedTuple):
    fn: Callable
    args: tuple
    order: int = 2
    modes: tuple = ("fwd", "rev")
    eps: float = 1e-4
    tol: float = 1e-5
    jit: bool = False  # also check first order under kiln.jit (see JIT_FAMILIES)


def c(fn, *args, **kw) -> Case:
    return Case(fn, args, **kw)


R = np.random.default_rng(42)


def a(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def spd(n):
    m = a(n, n)
    return m @ m.T + n * np.eye(n)


def sym(n):
    m = a(n, n)
    return m + m.T + np.diag(np.arange(n) * 2.0)  # well-separated eigenvalues


NONSYM = a(3, 3) + np.diag([0.0, 2.0, 4.0])  # nonsymmetric, well-separated real eigenvalues
IDX = np.array([[2], [0], [5], [2]], np.int32)  # a repeated index and one out of bounds (for a length-4 axis)
X34, U43 = a(4, 3), a(4, 3)
GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
UNIQUE = np.array([[3], [0], [1]], np.int32)


def _conv(lhs, rhs, **kw):
    return lax.conv_general_dilated(lhs, rhs, **kw)


def _custom_jvp_fn():
    @kiln.custom_jvp
    def f(x):
        return knp.sin(x) * x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * (knp.cos(x) * x + knp.sin(x))
    return f


def _custom_vjp_fn():
    @kiln.custom_vjp
    def f(x, y):
        return knp.sin(x) * y

    def fwd(x, y):
        return f(x, y), (x, y)

    def bwd(res, ct):
        x, y = res
        return ct * knp.cos(x) * y, ct * knp.sin(x)
    f.defvjp(fwd, bwd)
    return f



CUSTOM_VMAP = kiln.custom_batching.custom_vmap(lambda x, y: knp.sin(x) * y)  # differentiated through its body
CUSTOM_VMAP.def_vmap(lambda axis_size, in_batched, x, y: (x, True))

CUSTOM_JVP = _custom_jvp_fn()
CUSTOM_VJP = _custom_vjp_fn()


def _cond(x, y):
    return lax.cond(knp.sum(x) > 0, lambda a, b: knp.sin(a) * b, lambda a, b: a - b, x, y)


def _while(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, knp.sin(c[1]) * 1.5), (0, x))[1]


def _scan(x, ys):
    def body(carry, y):
        carry = knp.sin(carry) * y + carry
        return carry, carry * y
    return lax.scan(body, x, ys)


CASES: dict[str, list[Case]] = {
    # -- elementwise (foundation) --
    "neg": [c(lax.neg, a(3))],
    "abs": [c(lax.abs, np.array([-1.5, 0.7, 2.0])), c(lax.abs, np.array([0.3 + 0.4j, -1.0 + 2.0j]))],
    # (fixed points: a draw here would shift the shared generator's draws of every later case)
    "square": [c(lax.square, np.array([-1.3, 0.4, 2.1])), c(lax.square, np.array([0.3 + 0.4j, -1.0 + 2.0j]))],
    "exp": [c(lax.exp, a(3))],
    "log": [c(lax.log, a(3, lo=0.5, hi=2))],
    "log1p": [c(lax.log1p, a(3, lo=-0.5, hi=2))],
    "expm1": [c(lax.expm1, a(3))],
    "sin": [c(lax.sin, a(3)), c(lax.sin, a(2) + 1j * a(2))],
    "cos": [c(lax.cos, a(3))],
    "tan": [c(lax.tan, a(3))],
    "tanh": [c(lax.tanh, a(3))],
    "logistic": [c(lax.logistic, a(3, lo=-3, hi=3))],
    "sqrt": [c(lax.sqrt, a(3, lo=0.5, hi=2))],
    "rsqrt": [c(lax.rsqrt, a(3, lo=0.5, hi=2))],
    "cbrt": [c(lax.cbrt, np.array([-2.0, 0.5, 3.0]))],
    "add": [c(lax.add, a(3), a(3))],
    "sub": [c(lax.sub, a(3), a(3))],
    "mul": [c(lax.mul, a(3), a(3)), c(lax.mul, a(2) + 1j * a(2), a(2) + 1j * a(2))],
    "div": [c(lax.div, a(3), a(3, lo=0.5, hi=2))],
    "rem": [c(lax.rem, np.array([1.3, 2.7, -1.1]), np.array([0.5, 1.0, 0.7]))],
    "pow": [c(lax.pow, a(3, lo=0.5, hi=2), a(3))],
    "max": [c(lax.max, a(3), a(3))],
    "min": [c(lax.min, a(3), a(3))],
    # (x below, inside and above its bounds, none at one: finite differences cannot see a kink)
    "clamp": [c(lax.clamp, np.array([-1.0, -0.5, 0.2]), np.array([-1.5, 0.1, 1.4]), np.array([0.5, 0.6, 0.9]))],
    "atan2": [c(lax.atan2, a(3), a(3, lo=0.5, hi=1))],
    "select": [c(lambda x, y: lax.select(np.array([True, False, True]), x, y), a(3), a(3))],
    "convert_element_type": [c(lambda x: lax.convert_element_type(x, np.complex128), a(3)),
                             c(lambda x: lax.convert_element_type(lax.convert_element_type(x, np.float32),
                                                                  np.float64), a(3), eps=1e-1, tol=1e-5)],
    # -- elementwise (special) --
    "asin": [c(lax.asin, a(3, lo=-0.8, hi=0.8))],
    "acos": [c(lax.acos, a(3, lo=-0.8, hi=0.8))],
    "atan": [c(lax.atan, a(3))],
    "sinh": [c(lax.sinh, a(3))],
    "cosh": [c(lax.cosh, a(3))],
    "asinh": [c(lax.asinh, a(3))],
    "acosh": [c(lax.acosh, a(3, lo=1.2, hi=3))],
    "atanh": [c(lax.atanh, a(3, lo=-0.8, hi=0.8))],
    "erf": [c(lax.erf, a(3))],
    "erfc": [c(lax.erfc, a(3))],
    "erf_inv": [c(lax.erf_inv, a(3, lo=-0.8, hi=0.8))],
    "lgamma": [c(lax.lgamma, a(3, lo=0.5, hi=4))],
    "digamma": [c(lax.digamma, np.array([0.6, 1.7, 4.0, 25.0, -0.5, -2.3]), tol=1e-4)],
    "nextafter": [c(lambda x, y: lax.nextafter(x, y), a(3), a(3), order=1)],
    "real": [c(lax.real, a(3) + 1j * a(3))],
    "imag": [c(lax.imag, a(3) + 1j * a(3))],
    "complex": [c(lax.complex, a(3), a(3))],
    "conj": [c(lax.conj, a(3) + 1j * a(3))],
    "integer_pow": [c(lambda x: lax.integer_pow(x, 3), a(3)), c(lambda x: lax.integer_pow(x, -2), a(3, lo=0.5, hi=2)),
                    c(lambda x: lax.integer_pow(x, 0), a(3), order=1)],
    # -- structural --
    "broadcast_in_dim": [c(lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)), a(2, 4))],
    "reshape": [c(lambda x: lax.reshape(x, (6,)), a(2, 3))],
    "transpose": [c(lambda x: lax.transpose(x, (1, 0)), a(2, 3))],
    "rev": [c(lambda x: lax.rev(x, (1,)), a(2, 3))],
    "slice": [c(lambda x: lax.slice(x, (0, 1), (2, 5), (1, 2)), a(2, 5))],
    "pad": [c(lambda x, v: lax.pad(x, v, ((1, -1, 1), (0, 2, 0))), a(3, 2), np.array(0.5))],
    "concatenate": [c(lambda x, y: lax.concatenate([x, y], 1), a(2, 2), a(2, 3))],
    "dynamic_slice": [c(lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(3)), (2, 2)), a(3, 4))],
    "dynamic_update_slice": [c(lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(1), np.int32(0))),
                               a(3, 4), a(2, 2))],
    # -- reductions --
    "reduce_sum": [c(lambda x: lax.reduce_sum(x, (0,)), a(3, 2))],
    "reduce_max": [c(lambda x: lax.reduce_max(x, (1,)), a(3, 4))],
    "reduce_min": [c(lambda x: lax.reduce_min(x, (0, 1)), a(3, 4))],
    "reduce_prod": [c(lambda x: lax.reduce_prod(x, (1,)), a(2, 3)),
                    c(lambda x: lax.reduce_prod(x, (0,)), np.array([[0.0, 1.5], [2.0, 0.0], [0.5, 3.0]]))],
    "dot_general": [c(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), a(2, 3, 4), a(2, 4, 2))],
    # -- indexing --
    "gather": [c(lambda x: lax.gather(x, IDX, GDN, (1, 3)), X34),
               c(lambda x: lax.gather(x, np.array([[0, 1], [2, 0]], np.int32),
                                      lax.GatherDimensionNumbers((1,), (0,), (0, 1)), (1, 2)), X34)],
    "scatter_add": [c(lambda x, u: lax.scatter_add(x, IDX, u, SDN), X34, a(4, 3))],
    "scatter": [c(lambda x, u: lax.scatter(x, IDX, u, SDN), X34, a(4, 3)),
                c(lambda x, u: lax.scatter(x, UNIQUE, u, SDN, unique_indices=True), X34, a(3, 3))],
    "scatter_mul": [c(lambda x, u: lax.scatter_mul(x, UNIQUE, u, SDN, unique_indices=True), X34, a(3, 3)),
                    c(lambda x: lax.scatter_mul(x, IDX, U43, SDN), X34)],
    "scatter_min": [c(lambda x, u: lax.scatter_min(x, IDX, u, SDN), X34, a(4, 3))],
    "scatter_max": [c(lambda x, u: lax.scatter_max(x, IDX, u, SDN), X34, a(4, 3)),
                    # ties between the operand and an update average their tangents
                    c(lambda x, u: lax.scatter_max(x, np.array([[1]], np.int32), u * 0 + x[1:2], SDN), X34,
                      a(1, 3), order=1)],
    # -- sorting --
    "top_k": [c(lambda x: lax.top_k(x, 2)[0], a(3, 5), jit=True)],
    "sort": [c(lambda x: lax.sort(x, dimension=0), a(4, 3)),
             c(lambda k, v: lax.sort((k, v), dimension=1, num_keys=1), a(2, 5), a(2, 5))],
    # -- windowed --
    "reduce_window": [
        c(lambda x: lax.reduce_window_sum(x, (2, 3), (1, 2), ((1, 0), (1, 2)), (2, 1), (1, 2)), a(3, 5)),
        c(lambda x: lax.reduce_window_max(x, (2, 2), (2, 1), "SAME"), a(4, 5)),
        c(lambda x: lax.reduce_window_min(x, (3,), (1,), ((1, 1),), (1,), (2,)), a(6)),
        c(lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID"), a(3, 3), order=1),
    ],
    # cumulative reductions: cumsum is linear; the others differentiate JAX's prefix scan (odd and even lengths)
    "cumsum": [c(lambda x: lax.cumsum(x, axis=1), a(3, 5), jit=True), c(lambda x: lax.cumsum(x, reverse=True), a(8))],
    "cumprod": [c(lambda x: lax.cumprod(x, axis=1, reverse=True), a(3, 5, lo=0.5, hi=1.5), jit=True),
                c(lambda x: lax.cumprod(x), a(8)), c(lambda x: lax.cumprod(x), a(5) + 1j * a(5), order=1)],
    "cummax": [c(lambda x: lax.cummax(x, axis=0), a(7, 2), jit=True), c(lambda x: lax.cummax(x, reverse=True), a(8))],
    "cummin": [c(lambda x: lax.cummin(x, axis=0), a(7, 2), jit=True), c(lambda x: lax.cummin(x, reverse=True), a(8))],
    "cumlogsumexp": [c(lambda x: lax.cumlogsumexp(x, axis=1), a(3, 5), jit=True),
                     c(lambda x: lax.cumlogsumexp(x, reverse=True), a(8, lo=-3.0, hi=3.0))],
    # -- convolution --
    "conv_general_dilated": [
        c(lambda x, k: _conv(x, k, window_strides=(1, 1), padding="SAME"), a(1, 2, 4, 4), a(3, 2, 3, 3)),
        c(lambda x, k: _conv(x, k, window_strides=(2, 1), padding=((1, 0), (2, 1)), lhs_dilation=(1, 2),
                             rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC")),
          a(2, 5, 4, 2), a(2, 2, 2, 3)),
        c(lambda x, k: _conv(x, k, window_strides=(1,), padding="VALID", feature_group_count=2),
          a(2, 4, 5), a(6, 2, 2)),
        c(lambda x, k: _conv(x, k, window_strides=(2,), padding=((1, 1),), batch_group_count=2),
          a(4, 3, 6), a(4, 3, 3)),
    ],
    # -- linear algebra --
    "cholesky": [c(lambda m: lax.linalg.cholesky(m), spd(3))],
    "triangular_solve": [c(lambda m, b: lax.linalg.triangular_solve(m, b, left_side=True, lower=True),
                           spd(3), a(3, 2))],
    "lu": [c(lambda m: lax.linalg.lu(m)[0], a(3, 3) + 3 * np.eye(3))],
    "qr": [c(lambda m: lax.linalg.qr(m, full_matrices=False), a(4, 3))],
    # eigenvectors and singular vectors are defined up to sign: check sign-invariant products
    "eigh": [c(lambda m: (lambda v, w: (w, v * v))(*lax.linalg.eigh(m)), sym(3), tol=1e-4)],
    "eig": [c(lambda m: (lambda w: (knp.real(w), knp.imag(w)))(*lax.linalg.eig(
                m, compute_left_eigenvectors=False, compute_right_eigenvectors=False)), NONSYM, tol=1e-4),
            c(lambda m: (lambda w, vl, vr: (knp.real(w), knp.abs(vl), knp.real(vr), knp.imag(vr)))(
                *lax.linalg.eig(m, enable_eigvec_derivs=True)), NONSYM, tol=1e-4)],
    "svd": [c(lambda m: (lambda u, s, vh: (s, knp.einsum("ik,k,kj->ij", u, s * s, vh)))(
        *lax.linalg.svd(m, full_matrices=False)), a(4, 3), tol=1e-4)],
    # -- Fourier transforms (linear: FFT/IFFT transpose to themselves, RFFT/IRFFT to each other) --
    "fft": [c(lambda z: lax.fft(z, "fft", (5,)), a(2, 5) + 1j * a(2, 5), order=1, jit=True),
            c(lambda z: lax.fft(z, lax.FftType.IFFT, (3, 4)), a(3, 4) + 1j * a(3, 4), order=1),
            c(lambda x: lax.fft(x, "rfft", (6,)), a(2, 6), jit=True),
            c(lambda x: lax.fft(x, "rfft", (3, 5)), a(3, 5), order=1),
            c(lambda z: lax.fft(z, "irfft", (6,)), a(2, 4) + 1j * a(2, 4), jit=True),
            c(lambda z: lax.fft(z, "irfft", (2, 5)), a(2, 3) + 1j * a(2, 3), order=1),
            c(lambda x: knp.abs(lax.fft(lax.fft(x, "rfft", (4,)) * x[:3], "irfft", (4,))), a(4) + 2)],
    # -- misc --
    "reduce_precision": [c(lambda x: lax.reduce_precision(x, 11, 52), a(3, 2))],
    "pvary": [c(lambda x: kiln.vmap(lambda v: lax.pcast(v, "b", to="varying") * v, axis_name="b")(x), a(3, 2))],
    "name": [c(lambda x: knp.sin(kiln.ad_checkpoint.checkpoint_name(x * x, "sq")), a(3, 2))],
    "xla_metadata_value": [c(lambda x: knp.sin(set_xla_metadata(x * x, tag="sq")), a(3, 2))],
    "xla_metadata_call": [c(lambda x, y: xla_metadata_call(tag="b")(lambda u, v: knp.sin(u) * v + u * u)(x, y),
                            a(3, 2), a(2)),
                          c(lambda x: xla_metadata_call2(lambda u: knp.exp(u).sum() * u, {"t": 1},
                                                         ad_metadata="drop")(x), a(3), jit=True)],
    "sharding_constraint": [c(lambda x: lax.with_sharding_constraint(x * x, _ONE_DEVICE_ROWS), a(3, 2), jit=True)],
    "shard_map": [c(lambda x, w: kiln.shard_map(lambda b, v: lax.psum(knp.sin(b) * v, "i"), mesh=_ONE_DEVICE_ROWS.mesh,
                                                in_specs=(kiln.P("i"), kiln.P()), out_specs=kiln.P())(x, w),
                    a(3, 2), a(2), jit=True)],
    "optimization_barrier": [c(lambda x, y: (lambda p: p[0] * p[1])(lax.optimization_barrier((x, y))), a(3), a(3),
                               jit=True)],
    "reduce": [c(lambda x: lax.reduce(x, 1.0, lambda u, v: u * v * 1.0, (1,)), a(2, 5), jit=True),
               c(lambda x: lax.reduce((x, x * x), (0.0, 0.0), lambda u, v: (u[0] + v[0], u[1] + v[1] * 1.0), (0,)),
                 a(3, 2), order=1)],
    "linear_solve": [c(lambda m, b: lax.custom_linear_solve(lambda x: m @ x, b, lambda mv, r: knp.linalg.solve(m, r),
                                                          lambda vm, r: knp.linalg.solve(m.T, r)),
                       a(3, 3) + 3 * np.eye(3), a(3), jit=True)],
    # -- calls, control flow, custom rules --
    "jit_call": [c(kiln.jit(lambda x, y: knp.sin(x) * y), a(3), a(3))],
    "remat": [c(kiln.checkpoint(lambda x, y: knp.sin(knp.sin(x)) * y), a(3), a(3))],
    "custom_jvp_call": [c(CUSTOM_JVP, a(3))],
    "custom_vjp_call": [c(CUSTOM_VJP, a(3), a(3), modes=("rev",))],
    "custom_vmap_call": [c(CUSTOM_VMAP, a(3), a(3))],
    "linear_call": [c(lambda x, y: kiln.custom_derivatives.linear_call(
        lambda r, v: r * v[0] + knp.sin(r) * v[1], lambda r, ct: (r * ct, knp.sin(r) * ct),
        np.array([0.3, -1.2, 2.0]), (x, y)) * x, np.array([0.5, -0.7, 1.1]), np.array([-0.2, 0.9, 0.4]), jit=True)],
    "custom_vjp_lin": [c(CUSTOM_VJP, a(3), a(3), modes=("rev",))],
    "cond": [c(_cond, a(3, lo=0.1), a(3)), c(_cond, a(3, lo=-1, hi=-0.1), a(3))],
    "while": [c(_while, a(3), modes=("fwd",))],
    "scan": [c(_scan, a(2), a(3, 2))],
    "psum": [c(kiln.vmap(lambda x: x * lax.psum(x, "i"), axis_name="i"), a(3, 2))],
    "all_gather": [c(kiln.vmap(lambda x: x * lax.all_gather(x, "i"), axis_name="i"), a(3)),
                   c(kiln.vmap(lambda x: x * lax.all_gather(x, "i", tiled=True), axis_name="i"), a(3, 1))],
    "ppermute": [c(kiln.vmap(lambda x: x * lax.ppermute(x, "i", [(0, 1), (1, 2)]), axis_name="i"), a(3, 2))],
    "all_to_all": [c(kiln.vmap(lambda x: x * lax.all_to_all(x, "i", 0, 1), axis_name="i"), a(3, 3, 3))],
    "psum_scatter": [c(kiln.vmap(lambda x: lax.psum_scatter(x * x, "i", tiled=True), axis_name="i"), a(3, 6))],
    # A debug callback passes derivatives through untouched (it runs on the primals).
    "debug_callback": [c(lambda x: (kiln.debug.callback(lambda v: None, x), knp.sin(x))[1], a(3))],
    "inspect_sharding": [c(lambda x: (kiln.debug.inspect_array_sharding(knp.asarray(x), callback=lambda s: None),
                                      knp.sin(x))[1], a(3))],
    # checkify's check: no results of its own; it runs on the primal values (tests/checkify checks what it does)
    "check": [c(lambda x: (checkify.debug_check(knp.all(x < 10), "x is small"), knp.sin(x))[1], a(3))],
}


# Primitives whose derivative is not implemented: differentiating them must raise a clear error.
_EXPORTED_INT = kiln.export.export(kiln.jit(lambda x: (x * 2, x.astype(knp.int32))))(X34)
UNSUPPORTED: dict[str, tuple[Callable, tuple, str]] = {
    "scatter_apply": (lambda x: lax.scatter_apply(x, UNIQUE, knp.sin, SDN, update_shape=(3, 3)), (X34,),
                      "scatter_apply.*not implemented"),
    "schur": (lambda x: lax.linalg.schur(x)[0], (X34[:3],), "schur is not differentiable"),
    # An exported function differentiates through its exported VJP (tests/frontend/test_export.py); one with an
    # integer result has none.
    "call_exported": (lambda x: _EXPORTED_INT.call(x)[0], (X34,), "cannot differentiate the exported"),
}


# Host callbacks that are not differentiable by design (as in JAX): differentiating them raises JAX's ValueError.
NOT_DIFFERENTIABLE = {
    "pure_callback": (lambda x: kiln.pure_callback(np.sin, kiln.ShapeDtypeStruct((3,), np.float32), x),
                      "pure callbacks do not support JVP.*kiln.custom_jvp"),
    "io_callback": (lambda x: kiln.experimental.io_callback(np.sin, kiln.ShapeDtypeStruct((3,), np.float32), x),
                    "IO callbacks do not support JVP"),
    # (raised while differentiating, before anything is compiled: the target need not exist)
    "ffi_call": (lambda x: kiln.ffi.ffi_call("some_target", kiln.ShapeDtypeStruct((3,), np.float32))(x),
                 "the FFI call to 'some_target' cannot be differentiated.*kiln.custom_jvp"),
}


@pytest.mark.parametrize("name", sorted(NOT_DIFFERENTIABLE))
def test_callbacks_are_not_differentiable(name: str):
    fn, match = NOT_DIFFERENTIABLE[name]
    with pytest.raises(ValueError, match=match):
        kiln.grad(lambda x: knp.sum(fn(x)))(np.ones(3, np.float32))


def _cases():
    for name, cases in sorted(CASES.items()):
        for i, case in enumerate(cases):
            yield pytest.param(name, case, id=f"{name}-{i}")


def test_every_differentiable_primitive_has_a_case():
    missing = sorted(n for n, p in registry.items()
                     if p not in non_differentiable and n not in CASES and n not in UNSUPPORTED
                     and n not in NOT_DIFFERENTIABLE)
    assert not missing, f"differentiable primitives without a check_grads case in {__file__}: {missing}"


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_derivatives_raise(name: str):
    fn, args, match = UNSUPPORTED[name]
    with pytest.raises(NotImplementedError, match=match):
        kiln.grad(lambda *a: knp.sum(fn(*a)))(*args)


# LAPACK only (no portable implementation): checked on the CPU only.
CPU_ONLY = {"eig"}


def _skip_unless_supported(name: str) -> None:
    if name in CPU_ONLY and kiln.devices()[0].platform != "cpu":
        pytest.skip(f"{name} is LAPACK-only (CPU): kiln has no implementation for this backend")


@pytest.mark.parametrize("name,case", list(_cases()))
def test_check_grads(name: str, case: Case):
    _skip_unless_supported(name)
    check_grads(case.fn, case.args, order=case.order, modes=case.modes, eps=case.eps, atol=case.tol,
                rtol=case.tol)


# Rules are traced to IR in eager mode too; jit adds lowering and compilation of what they emit. Check
# under jit the families whose rules emit more than elementwise arithmetic.
JIT_FAMILIES = {"pow", "max", "pad", "dynamic_update_slice", "reduce_prod", "dot_general", "gather", "scatter_add",
                "scatter", "scatter_mul", "scatter_max", "sort", "reduce_window", "conv_general_dilated", "cholesky",
                "qr", "eigh", "eig", "svd", "jit_call", "remat", "custom_vjp_call", "cond", "while", "scan"}


@pytest.mark.parametrize("name,case", [p for p in _cases() if p.values[0] in JIT_FAMILIES or p.values[1].jit])
def test_check_grads_jit(name: str, case: Case):
    _skip_unless_supported(name)
    check_grads(case.fn, case.args, order=1, modes=case.modes, eps=case.eps, atol=case.tol, rtol=case.tol,
                jit=True)


def _div_operands(n=4096):
    r = np.random.default_rng(11)
    x, t, tx = (r.standard_normal(n).astype(np.float32) for _ in range(3))
    y = (r.uniform(0.25, 4.0, n) * r.choice([-1, 1], n)).astype(np.float32)
    return x, y, t, tx


@pytest.mark.parametrize("jit", [False, True])
def test_div_denominator_derivative_rounds_as_jax(jit: bool):
    # JAX's rule, -t * x * y**-2 with y**-2 = 1 / (y * y), evaluated in NumPy float32 in the same order: every
    # op is a correctly rounded IEEE op, so kiln must agree bit for bit (the old -t * ((x / y) / y) differed
    # in the last place on about 40% of these inputs).
    if jit and kiln.devices()[0].platform != "cpu":
        pytest.skip("compiled bit-exactness is checked on the CPU (another backend's compiler may fuse ops)")
    x, y, t, tx = _div_operands()
    inv_y2 = np.float32(1) / (y * y)
    wrap = kiln.jit if jit else (lambda f: f)
    _, jvp_y = wrap(lambda x, y, t: kiln.jvp(lambda y: lax.div(x, y), (y,), (t,)))(x, y, t)
    np.testing.assert_array_equal(np.asarray(jvp_y), ((-t) * x) * inv_y2)
    if not jit:  # (compiled, the backend may fuse the sum with a product into one FMA, for JAX as for kiln)
        _, jvp_xy = kiln.jvp(lax.div, (x, y), (tx, t))
        np.testing.assert_array_equal(np.asarray(jvp_xy), tx / y + ((-t) * x) * inv_y2)
    grad_y = wrap(kiln.vmap(kiln.grad(lax.div, argnums=1)))(x, y)
    np.testing.assert_array_equal(np.asarray(grad_y), -(x * inv_y2))
    # and it is the derivative: central differences in float64
    x64, y64, h = x.astype(np.float64), y.astype(np.float64), 1e-6
    fd = (x64 / (y64 + h) - x64 / (y64 - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(grad_y), fd, rtol=1e-5, atol=1e-6)


def test_derivatives_in_jaxs_order_of_operations():
    # Eagerly every primitive rounds on its own, so these are JAX's float32 numbers exactly when the rule is JAX's
    # formula op for op (tanh's (t + t*y)(1 - y) and t*(1 - y*y) differ by up to 1e-4 relative for |x| in [3, 5]).
    # Forward mode with a unit tangent, element by element (a vmap compiles one program, where XLA may fuse a
    # multiply and an add).
    x = np.array([-4.3, -0.7, 0.3, 0.95, 3.7], np.float32)
    f32, one = np.float32, np.float32(1)

    def grads(fn, xs):
        return np.array([kiln.jvp(fn, (v,), (one,))[1] for v in xs])
    y = np.asarray(lax.tanh(x))
    np.testing.assert_array_equal(grads(lax.tanh, x), (one + y) * (one - y))
    y = np.asarray(lax.cbrt(x))
    np.testing.assert_array_equal(grads(lax.cbrt, x), f32(1 / 3) * (one / (y * y)))
    np.testing.assert_array_equal(grads(lax.atan, x), one / (one + x * x))
    u = x[1:4]
    np.testing.assert_array_equal(grads(lax.atanh, u), (one / (one + u)) * (one / (one - u)))
    # integer_pow: y * x**(y - 1), not the product rule through its multiplies
    np.testing.assert_array_equal(grads(lambda v: lax.integer_pow(v, 3), x), f32(3) * (x * x))
    np.testing.assert_array_equal(grads(lambda v: lax.integer_pow(v, 5), x), f32(5) * ((x * x) * (x * x)))
    np.testing.assert_array_equal(grads(lambda v: lax.integer_pow(v, -2), x), f32(-2) * (one / (x * x * x)))
    # square: t * (2 * x), one term, where the product rule of x * x gives two (t*x + t*x): beside another term
    # the sum then rounds twice, (cos + g*x) + g*x, where JAX's cos + g*(2*x) rounds once
    third = f32(1 / 3)
    back = np.array([kiln.grad(lambda v: lax.square(v) * third + lax.sin(v))(v) for v in x])
    np.testing.assert_array_equal(back, np.asarray(lax.cos(x)) + third * (f32(2) * x))
    np.testing.assert_array_equal(grads(lax.square, x), one * (f32(2) * x))


def test_complex_part_derivatives_as_jax():
    z = np.complex64(3 + 4j)
    # conj is transposed as conj: the zero imaginary part of the cotangent keeps its sign (1-0j, as JAX)
    g = kiln.grad(knp.conjugate, holomorphic=True)(z)
    assert g == 1 and np.signbit(np.imag(np.asarray(g)))
    assert kiln.vjp(knp.conj, z)[1](np.complex64(1 + 2j))[0] == np.complex64(1 - 2j)
    # what reaches a complex input through real/imag is strongly typed, even from a weak cotangent
    for part, expected in ((knp.real, 1 + 0j), (knp.imag, -1j)):
        g = kiln.grad(part)(3.0 + 4j)
        assert g == expected and g.dtype == np.complex64 and not g.weak_type
