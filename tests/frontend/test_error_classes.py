"""Bad input raises an instance of the class JAX raises for it, so that a ported program's ``except``
clause still catches it; kiln's own class and message stay (the message is checked too).

``TABLE`` holds, per case: the call (written once, over a namespace ``M`` that is kiln here and jax in
the optional comparison at the end), the built-in class JAX 0.10.2 raises (found by running it; a
constant here, so that the test needs no jax), kiln's class, and a piece of kiln's message. Where
kiln deliberately raises something else, ``kiln_base`` says what and ``why`` says why.
"""
from __future__ import annotations

import types
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def f32(*shape):
    return np.ones(shape, np.float32)


class Case(NamedTuple):
    name: str
    call: Callable[[Any], Any]
    jax_class: type            # the built-in class JAX raises
    kiln_class: type           # the class kiln raises (an instance of kiln_base)
    message: str               # a substring of kiln's message
    kiln_base: type | None = None  # where kiln deliberately differs from jax_class
    why: str = ""
    pending: str = ""          # kiln does not raise kiln_class yet (a strict xfail): why


E = kiln  # kiln's error classes
TABLE = [
    # -- kiln.numpy: elementwise broadcasting and products -------------------------------------
    Case("np.add shape mismatch", lambda M: M.np.add(f32(3), f32(4)), TypeError, E.BroadcastError,
         "could not be broadcast together with shapes (3,) (4,)"),
    Case("np.multiply shape mismatch", lambda M: M.np.multiply(f32(2, 3), f32(3, 2)), TypeError,
         E.BroadcastError, "kiln.numpy.multiply"),
    Case("np.maximum shape mismatch", lambda M: M.np.maximum(f32(3), f32(4)), TypeError, E.BroadcastError,
         "kiln.numpy.maximum"),
    Case("operator + shape mismatch", lambda M: M.np.ones(3) + M.np.ones(4), TypeError, E.BroadcastError,
         "could not be broadcast"),
    Case("np.where shape mismatch", lambda M: M.np.where(np.ones(3, bool), f32(3), f32(4)), ValueError,
         E.BroadcastError, "kiln.numpy.where"),
    Case("np.broadcast_arrays mismatch", lambda M: M.np.broadcast_arrays(f32(3), f32(4)), ValueError,
         E.BroadcastError, "could not be broadcast"),
    Case("np.broadcast_to incompatible", lambda M: M.np.broadcast_to(f32(3), (4,)), ValueError,
         E.BroadcastError, "cannot broadcast an array of shape (3,)"),
    Case("np.dot shape mismatch", lambda M: M.np.dot(f32(2, 3), f32(4, 5)), TypeError, E.ShapeError,
         "not aligned: 3 (dim 1) != 4 (dim 0)"),
    Case("np.dot 3-d shape mismatch", lambda M: M.np.dot(f32(2, 3, 4), f32(5, 6)), TypeError, E.ShapeError,
         "not aligned"),
    Case("np.matmul shape mismatch", lambda M: M.np.matmul(f32(2, 3), f32(4, 5)), TypeError, E.ShapeError,
         "kiln.numpy.matmul: shapes (2, 3) and (4, 5) are not aligned"),
    Case("operator @ shape mismatch", lambda M: M.np.ones((2, 3)) @ M.np.ones((4, 5)), TypeError, E.ShapeError,
         "not aligned"),
    Case("np.matmul batch mismatch", lambda M: M.np.matmul(f32(2, 3, 4), f32(3, 4, 5)), ValueError,
         E.BroadcastError, "could not be broadcast"),
    Case("np.matmul 0-d operand", lambda M: M.np.matmul(f32(3), 2.0), ValueError, ValueError,
         "must not be 0-d"),
    Case("np.vdot size mismatch", lambda M: M.np.vdot(f32(3), f32(4)), TypeError, E.ShapeError,
         "same number of elements"),
    Case("np.inner shape mismatch", lambda M: M.np.inner(f32(3), f32(4)), TypeError, E.ShapeError,
         "last dimensions 3 != 4"),
    Case("np.tensordot shape mismatch", lambda M: M.np.tensordot(f32(2, 3), f32(4, 5), axes=1), TypeError,
         E.ShapeError, "dim 1 of a (3) != dim 0 of b (4)"),
    Case("np.dot bad precision", lambda M: M.np.dot(f32(2), f32(2), precision="nope"), ValueError, ValueError,
         "precision='nope' is not a precision"),
    Case("np.einsum operand shape mismatch", lambda M: M.np.einsum("ij,jk->ik", f32(2, 3), f32(4, 5)),
         ValueError, ValueError, "kiln.numpy.einsum"),
    Case("np.einsum unknown output label", lambda M: M.np.einsum("ij,jk->il", f32(2, 3), f32(3, 5)), ValueError,
         ValueError, "kiln.numpy.einsum"),
    Case("np.einsum wrong operand count", lambda M: M.np.einsum("ij,jk->ik", f32(2, 3)), ValueError, ValueError,
         "kiln.numpy.einsum"),
    Case("np.einsum too many labels", lambda M: M.np.einsum("ijk->", f32(2, 3)), ValueError, ValueError,
         "kiln.numpy.einsum"),
    # -- kiln.numpy: shapes and axes ------------------------------------------------------------
    Case("np.reshape size mismatch", lambda M: M.np.reshape(f32(6), (4,)), ValueError, ValueError,
         "cannot reshape"),
    Case("np.reshape two -1", lambda M: M.np.reshape(f32(6), (-1, -1)), ValueError, ValueError,
         "kiln.numpy.reshape"),
    Case("np.concatenate shape mismatch", lambda M: M.np.concatenate([f32(2, 3), f32(2, 4)]), TypeError,
         E.ShapeError, "differ outside the concatenation axis 0"),
    Case("np.concatenate rank mismatch", lambda M: M.np.concatenate([f32(2, 3), f32(3)]), TypeError,
         E.ShapeError, "same number of dimensions"),
    Case("np.concatenate axis out of range", lambda M: M.np.concatenate([f32(2), f32(2)], axis=2), ValueError,
         E.AxisError, "axis 2 is out of bounds for an array of dimension 1"),
    Case("np.concatenate empty list", lambda M: M.np.concatenate([]), ValueError, ValueError,
         "need at least one array"),
    Case("np.stack shape mismatch", lambda M: M.np.stack([f32(2), f32(3)]), ValueError, ValueError,
         "must have the same shape"),
    Case("np.squeeze non-unit axis", lambda M: M.np.squeeze(f32(2, 3), axis=0), ValueError, ValueError,
         "kiln.numpy.squeeze"),
    Case("np.expand_dims axis out of range", lambda M: M.np.expand_dims(f32(2), 3), ValueError, E.AxisError,
         "out of bounds"),
    Case("np.transpose not a permutation", lambda M: M.np.transpose(f32(2, 3), (0, 0)), TypeError, E.ShapeError,
         "not a permutation"),
    Case("np.transpose axis out of range", lambda M: M.np.transpose(f32(2, 3), (0, 5)), ValueError, E.AxisError,
         "axis 5 is out of bounds"),
    Case("np.swapaxes out of range", lambda M: M.np.swapaxes(f32(2, 3), 0, 5), IndexError, E.AxisError,
         "axis 5 is out of bounds"),
    Case("np.moveaxis repeated axis", lambda M: M.np.moveaxis(f32(2, 3), (0, 0), (0, 1)), TypeError, ValueError,
         "repeated axis", kiln_base=ValueError,
         why="JAX's TypeError comes from its internal transpose; NumPy raises ValueError, and so do JAX's "
             "expand_dims/squeeze/sum for a repeated axis, which share kiln's check"),
    Case("np.split unequal", lambda M: M.np.split(f32(5), 2), ValueError, ValueError, "equal division"),
    Case("np.sum axis out of range", lambda M: M.np.sum(f32(2, 3), axis=5), ValueError, E.AxisError,
         "kiln.numpy.sum: axis 5 is out of bounds"),
    Case("np.sum repeated axis", lambda M: M.np.sum(f32(2, 3), axis=(0, 0)), ValueError, ValueError,
         "repeated axis"),
    Case("np.mean axis out of range", lambda M: M.np.mean(f32(3), axis=3), IndexError, E.AxisError,
         "kiln.numpy.mean: axis 3 is out of bounds"),
    Case("np.argmax axis out of range", lambda M: M.np.argmax(f32(2, 3), axis=2), IndexError, E.AxisError,
         "kiln.numpy.argmax: axis 2 is out of bounds"),
    Case("np.cumsum axis out of range", lambda M: M.np.cumsum(f32(2, 3), axis=2), ValueError, E.AxisError,
         "out of bounds"),
    Case("np.sort axis out of range", lambda M: M.np.sort(f32(2, 3), axis=2), ValueError, E.AxisError,
         "out of bounds"),
    Case("np.take axis out of range", lambda M: M.np.take(f32(2, 3), np.array([0]), axis=3), ValueError,
         E.AxisError, "out of bounds"),
    Case("np.pad unknown mode", lambda M: M.np.pad(f32(3), 1, mode="nope"), NotImplementedError,
         NotImplementedError, "nope"),
    Case("np.pad bad widths", lambda M: M.np.pad(f32(3), ((1, 1), (1, 1), (1, 1))), ValueError, ValueError,
         "kiln.numpy.pad"),
    Case("np.tile negative reps", lambda M: M.np.tile(f32(3), -1), Exception, ValueError, "non-negative",
         kiln_base=ValueError, why="JAX crashes in MLIR (an MLIRError); NumPy raises ValueError"),
    Case("np.arange zero step", lambda M: M.np.arange(0, 10, 0), ZeroDivisionError, ZeroDivisionError,
         "step must not be zero"),
    Case("np.zeros negative dimension", lambda M: M.np.zeros((-1,)), TypeError, E.NegativeDimensionError,
         "negative dimensions are not allowed"),
    Case("np.full negative dimension", lambda M: M.np.full((2, -1), 0.0), TypeError, E.NegativeDimensionError,
         "negative dimensions"),
    Case("np.eye negative dimension", lambda M: M.np.eye(-1), ValueError, E.NegativeDimensionError,
         "negative dimensions"),
    Case("np.tri negative dimension", lambda M: M.np.tri(-1), TypeError, E.NegativeDimensionError,
         "negative dimensions"),
    Case("np.zeros float dimension", lambda M: M.np.zeros((2.5,)), TypeError, TypeError, "integer"),
    # -- kiln.numpy: dtypes and values ----------------------------------------------------------
    Case("np.zeros unknown dtype", lambda M: M.np.zeros((2,), dtype="nope"), TypeError, TypeError, "nope"),
    Case("np.zeros object dtype", lambda M: M.np.zeros((2,), dtype=object), TypeError, TypeError, "object"),
    Case("np.asarray string", lambda M: M.np.asarray("abc"), TypeError, TypeError, "cannot make an array"),
    Case("np.asarray ragged list", lambda M: M.np.asarray([1.0, [2.0, 3.0]]), ValueError, ValueError,
         "cannot make an array"),
    Case("np.add string operand", lambda M: M.np.add(f32(3), "a"), TypeError, TypeError, "kiln.numpy.add"),
    Case("np.bitwise_and float", lambda M: M.np.bitwise_and(f32(3), f32(3)), TypeError, TypeError, "float32"),
    Case("np.left_shift float", lambda M: M.np.left_shift(f32(3), 1), TypeError, TypeError, "float32"),
    Case("np.floor complex", lambda M: M.np.floor(np.ones(3, np.complex64)), TypeError, TypeError, "complex"),
    Case("np.asarray 2**70", lambda M: M.np.asarray(2**70), OverflowError, E.IntegerOverflowError,
         "Python int 1180591620717411303424 is too large for any integer dtype kiln supports"),
    Case("np.array -2**70", lambda M: M.np.array(-(2**70)), OverflowError, E.IntegerOverflowError,
         "too large for any integer dtype kiln supports"),
    Case("np.asarray [1, 2**70]", lambda M: M.np.asarray([1, 2**70]), OverflowError, E.IntegerOverflowError,
         "too large for any integer dtype"),
    Case("np.add int32 array and 2**70", lambda M: M.np.add(np.ones(3, np.int32), 2**70), OverflowError,
         E.IntegerOverflowError, "kiln.numpy.add: Python int 1180591620717411303424"),
    Case("jit called with 2**70", lambda M: M.jit(lambda x: x + 1)(2**70), OverflowError,
         E.IntegerOverflowError, "too large"),
    # -- kiln.numpy.linalg ----------------------------------------------------------------------
    Case("linalg.inv non-square", lambda M: M.np.linalg.inv(f32(2, 3)), ValueError, E.MatrixShapeError,
         "must be square"),
    Case("linalg.det 1-d", lambda M: M.np.linalg.det(f32(3)), ValueError, E.MatrixShapeError,
         "at least two-dimensional"),
    Case("linalg.cholesky 1-d", lambda M: M.np.linalg.cholesky(f32(3)), TypeError, E.MatrixShapeError,
         "at least two-dimensional"),
    Case("linalg.eigh non-square", lambda M: M.np.linalg.eigh(f32(2, 3)), TypeError, E.MatrixShapeError,
         "must be square"),
    Case("linalg.svd 1-d", lambda M: M.np.linalg.svd(f32(3)), TypeError, E.MatrixShapeError,
         "at least two-dimensional"),
    Case("linalg.qr 1-d", lambda M: M.np.linalg.qr(f32(3)), TypeError, E.MatrixShapeError,
         "at least two-dimensional"),
    Case("linalg.matrix_power non-square", lambda M: M.np.linalg.matrix_power(f32(2, 3), 2), TypeError,
         E.MatrixShapeError, "must be square"),
    Case("linalg.solve shape mismatch", lambda M: M.np.linalg.solve(np.eye(3, dtype=np.float32), f32(4)),
         ValueError, ValueError, "kiln.numpy.linalg.solve"),
    Case("linalg.norm unknown ord", lambda M: M.np.linalg.norm(f32(2, 3), ord="nope"), ValueError, ValueError,
         "ord"),
    Case("linalg.norm axis out of range", lambda M: M.np.linalg.norm(f32(2, 3), axis=4), ValueError,
         E.AxisError, "out of bounds"),
    Case("linalg.qr unknown mode", lambda M: M.np.linalg.qr(f32(3, 3), mode="nope"), ValueError, ValueError,
         "mode"),
    # -- indexing -------------------------------------------------------------------------------
    Case("index: too many indices", lambda M: M.np.ones((2, 3))[0, 0, 0], IndexError, IndexError,
         "too many indices"),
    Case("index: string", lambda M: M.np.ones(3)["a"], TypeError, E.IndexTypeError, "unsupported index 'a'"),
    Case("index: float", lambda M: M.np.ones(3)[1.5], TypeError, E.IndexTypeError, "got a float index 1.5"),
    Case("index: float array", lambda M: M.np.ones(3)[np.array([1.0])], TypeError, E.IndexTypeError,
         "float index"),
    Case("index: float slice bound", lambda M: M.np.ones(3)[0.5:2], TypeError, E.IndexTypeError,
         "slice bounds must be integers"),
    Case("index: dict", lambda M: M.np.ones(3)[{}], IndexError, E.IndexTypeError, "unsupported index"),
    Case("index: .at[] float", lambda M: M.np.ones(3).at[1.5].set(2.0), TypeError, E.IndexTypeError,
         "float index"),
    Case("index: boolean mask of the wrong shape", lambda M: M.np.ones(3)[np.array([True, False])], IndexError,
         IndexError, "kiln.numpy.__getitem__"),
    Case("index: two ellipses", lambda M: M.np.ones((2, 3))[..., ...], IndexError, IndexError, "'...'"),
    Case("index: .at[].set value shape", lambda M: M.np.ones(3).at[:2].set(M.np.ones(3)), ValueError, ValueError,
         "kiln.numpy"),
    # -- kiln.lax ------------------------------------------------------------------------------
    Case("lax.add shape mismatch", lambda M: M.lax.add(f32(3), f32(4)), TypeError, E.ShapeError,
         "do not broadcast"),
    Case("lax.add dtype mismatch", lambda M: M.lax.add(f32(3), np.ones(3, np.int32)), TypeError, TypeError,
         "same dtype"),
    Case("lax.dot_general contracting mismatch",
         lambda M: M.lax.dot_general(f32(2, 3), f32(4, 5), (((1,), (0,)), ((), ()))), TypeError, E.ShapeError,
         "do not match on the paired dimensions 1 and 0"),
    Case("lax.dot_general batch mismatch",
         lambda M: M.lax.dot_general(f32(2, 3, 4), f32(3, 4, 5), (((2,), (1,)), ((0,), (0,)))), TypeError,
         E.ShapeError, "do not match"),
    Case("lax.dot_general dimension out of range",
         lambda M: M.lax.dot_general(f32(2, 3), f32(3, 4), (((5,), (0,)), ((), ()))), TypeError, E.ShapeError,
         "out of range"),
    Case("lax.dot shape mismatch", lambda M: M.lax.dot(f32(2, 3), f32(4, 5)), ValueError, ValueError,
         "kiln.lax.dot: operands must be 1-D or 2-D"),
    Case("lax.dot_general bad precision",
         lambda M: M.lax.dot_general(f32(2), f32(2), (((0,), (0,)), ((), ())), precision="nope"), ValueError,
         ValueError, "is not a precision"),
    Case("lax.batch_matmul rank mismatch", lambda M: M.lax.batch_matmul(f32(3, 4), f32(3, 4, 5)), ValueError,
         ValueError, "same number of dimensions"),
    Case("lax.reshape size mismatch", lambda M: M.lax.reshape(f32(6), (4,)), ValueError, ValueError,
         "cannot reshape"),
    Case("lax.reshape negative dimension", lambda M: M.lax.reshape(f32(6), (-1, 6)), TypeError,
         E.NegativeDimensionError, "negative dimensions"),
    Case("lax.slice out of bounds", lambda M: M.lax.slice(f32(3), (0,), (5,)), TypeError, E.ShapeError,
         "invalid slice 0:5:1"),
    Case("lax.slice strides length", lambda M: M.lax.slice(f32(3), (0,), (2,), (1, 1)), TypeError, E.ShapeError,
         "one entry per dimension"),
    Case("lax.dynamic_slice index count", lambda M: M.lax.dynamic_slice(f32(3, 3), (0,), (1, 1)), ValueError,
         ValueError, "start indices"),
    Case("lax.dynamic_slice size too big", lambda M: M.lax.dynamic_slice(f32(3), (0,), (5,)), TypeError,
         E.ShapeError, "must fit in the operand shape"),
    Case("lax.dynamic_update_slice too big", lambda M: M.lax.dynamic_update_slice(f32(3), f32(4), (0,)), TypeError,
         E.ShapeError, "does not fit"),
    Case("lax.broadcast_in_dim incompatible", lambda M: M.lax.broadcast_in_dim(f32(3), (4,), (0,)), TypeError,
         E.ShapeError, "cannot broadcast operand shape (3,)"),
    Case("lax.broadcast_in_dim dims length", lambda M: M.lax.broadcast_in_dim(f32(3), (3, 4), (0, 1)), TypeError,
         E.ShapeError, "one entry per operand dimension"),
    Case("lax.broadcast negative dimension", lambda M: M.lax.broadcast(f32(2), (-1,)), TypeError,
         E.NegativeDimensionError, "negative dimensions"),
    Case("lax.iota negative dimension", lambda M: M.lax.iota(np.int32, -1), TypeError, E.NegativeDimensionError,
         "negative dimensions"),
    Case("lax.concatenate shape mismatch", lambda M: M.lax.concatenate([f32(2, 3), f32(2, 4)], 0), TypeError,
         E.ShapeError, "differ outside dimension 0"),
    Case("lax.concatenate dimension out of range", lambda M: M.lax.concatenate([f32(2), f32(2)], 3), TypeError,
         E.ShapeError, "out of range"),
    Case("lax.transpose bad permutation", lambda M: M.lax.transpose(f32(2, 3), (0, 0)), TypeError, E.ShapeError,
         "not a permutation"),
    Case("lax.rev bad dimension", lambda M: M.lax.rev(f32(2), (3,)), TypeError, E.ShapeError,
         "not distinct axes"),
    Case("lax.select predicate shape", lambda M: M.lax.select(np.ones(2, bool), f32(3), f32(3)), TypeError,
         E.ShapeError, "predicate's shape (2,)"),
    Case("lax.select dtype mismatch", lambda M: M.lax.select(np.ones(3, bool), f32(3), np.ones(3, np.int32)),
         TypeError, TypeError, "kiln.lax.select"),
    Case("lax.clamp bound shape", lambda M: M.lax.clamp(f32(2), f32(3), f32(3)), TypeError, E.ShapeError,
         "must be a scalar or have x's shape"),
    Case("lax.reduce_window window rank", lambda M: M.lax.reduce_window(f32(3), 0.0, M.lax.add, (2, 2), (1,),
                                                                          "VALID"),
         TypeError, E.ShapeError, "one entry per dimension"),
    Case("lax.conv rank mismatch", lambda M: M.lax.conv(f32(1, 1, 4, 4), f32(1, 1, 3), (1, 1), "SAME"),
         TypeError, E.ShapeError, "same rank"),
    Case("lax.conv_general_dilated feature mismatch",
         lambda M: M.lax.conv_general_dilated(f32(1, 2, 4, 4), f32(1, 3, 3, 3), (1, 1), "SAME"), ValueError,
         ValueError, "features"),
    Case("lax.conv_general_dilated dimension string length",
         lambda M: M.lax.conv_general_dilated(f32(1, 1, 4, 4), f32(1, 1, 3, 3), (1, 1), "SAME",
                                              dimension_numbers=("NCHW", "OIHW", "NCHWX")),
         TypeError, E.ShapeError, "has 5 letters"),
    Case("lax.conv strides length", lambda M: M.lax.conv(f32(1, 1, 4, 4), f32(1, 1, 3, 3), (1,), "SAME"),
         ValueError, ValueError, "window_strides"),
    Case("lax.conv unknown padding", lambda M: M.lax.conv(f32(1, 1, 4, 4), f32(1, 1, 3, 3), (1, 1), "NOPE"),
         RuntimeError, ValueError, "unknown padding 'NOPE'", kiln_base=ValueError,
         why="a bad argument value is a ValueError (JAX's RuntimeError is incidental)"),
    Case("lax.convert_element_type bad dtype", lambda M: M.lax.convert_element_type(f32(3), "nope"), TypeError,
         TypeError, "nope"),
    Case("lax.bitwise_not float", lambda M: M.lax.bitwise_not(f32(3)), TypeError, TypeError, "float32"),
    Case("lax.sqrt int", lambda M: M.lax.sqrt(np.ones(3, np.int32)), TypeError, TypeError, "int32"),
    Case("lax.reduce_sum bad axis", lambda M: M.lax.reduce_sum(f32(3), (1,)), ValueError, ValueError,
         "not distinct axes"),
    Case("lax.sort dimension out of range", lambda M: M.lax.sort(f32(3), dimension=4), ValueError, ValueError,
         "out of"),
    Case("lax.top_k k too large", lambda M: M.lax.top_k(f32(3), 5), ValueError, ValueError, "k=5"),
    Case("lax.pad negative size", lambda M: M.lax.pad(f32(3), np.float32(0), [(-5, 0, 0)]), ValueError,
         ValueError, "negative size"),
    Case("lax.cond branch mismatch (traced predicate)",
         lambda M: M.jit(lambda p, x: M.lax.cond(p, lambda x: x, lambda x: x[:1], x))(True, f32(3)), TypeError,
         TypeError, "branches must return the same shapes"),
    Case("lax.scan carry mismatch", lambda M: M.lax.scan(lambda c, x: (c[:1], x), f32(3), f32(4)), TypeError,
         TypeError, "kiln.lax.scan"),
    Case("lax.fori_loop carry dtype change",
         lambda M: M.lax.fori_loop(0, 3, lambda i, c: c.astype(np.int32), f32(3)), TypeError, TypeError,
         "kiln.lax.fori_loop"),
    Case("lax.while_loop non-boolean condition", lambda M: M.lax.while_loop(lambda c: c, lambda c: c, f32(3)),
         TypeError, TypeError, "kiln.lax.while_loop"),
    # -- kiln.nn -------------------------------------------------------------------------------
    Case("nn.softmax axis out of range", lambda M: M.nn.softmax(f32(3), axis=3), ValueError, E.AxisError,
         "axis 3 is out of bounds"),
    Case("nn.logsumexp axis out of range", lambda M: M.nn.logsumexp(f32(3), axis=4), ValueError, E.AxisError,
         "out of bounds"),
    Case("nn.relu string", lambda M: M.nn.relu("a"), TypeError, TypeError, "kiln.nn.relu"),
    Case("nn.one_hot float num_classes", lambda M: M.nn.one_hot(np.array([0, 1]), 2.5), TypeError, TypeError,
         "num_classes"),
    Case("nn.one_hot negative num_classes", lambda M: M.nn.one_hot(np.array([0]), -1), TypeError,
         E.NegativeDimensionError, "num_classes must be non-negative"),
    # -- kiln.random ---------------------------------------------------------------------------
    Case("random.normal int dtype", lambda M: M.random.normal(M.random.PRNGKey(0), (2,), dtype=np.int32),
         ValueError, ValueError, "kiln.random.normal"),
    Case("random.uniform float key", lambda M: M.random.uniform(1.0, (2,)), TypeError, TypeError,
         "kiln.random.uniform"),
    Case("random.randint float dtype",
         lambda M: M.random.randint(M.random.PRNGKey(0), (2,), 0, 5, dtype=np.float32), TypeError, TypeError,
         "kiln.random.randint"),
    Case("random.choice too many without replacement",
         lambda M: M.random.choice(M.random.PRNGKey(0), 3, (5,), replace=False), ValueError, ValueError,
         "kiln.random.choice"),
    Case("random.PRNGKey float seed", lambda M: M.random.PRNGKey(1.5), TypeError, TypeError, "seed"),
    Case("random.split bad key data", lambda M: M.random.split(np.zeros(2, np.int32)), TypeError, TypeError,
         "uint32"),
    Case("random.normal shape not ints", lambda M: M.random.normal(M.random.PRNGKey(0), 2.5), TypeError,
         TypeError, "shape"),
    # -- transformations -----------------------------------------------------------------------
    Case("grad of an int input", lambda M: M.grad(lambda x: x * 2)(3), TypeError, TypeError, "kiln.grad"),
    Case("grad of a non-scalar output", lambda M: M.grad(lambda x: x * 2)(f32(3)), TypeError, TypeError,
         "scalar"),
    Case("grad of a tuple output", lambda M: M.grad(lambda x: (x.sum(), x))(f32(3)), TypeError, TypeError,
         "kiln.grad"),
    Case("grad of a complex output", lambda M: M.grad(lambda x: x.sum())(np.ones(3, np.complex64)), TypeError,
         TypeError, "complex"),
    Case("grad argnums out of range", lambda M: M.grad(lambda x: x.sum(), argnums=3)(f32(3)), TypeError,
         TypeError, "argnums 3 is out of range"),
    Case("jacfwd of an int input", lambda M: M.jacfwd(lambda x: x * 2)(np.ones(3, np.int32)), TypeError,
         TypeError, "kiln.jacfwd"),
    Case("vmap inconsistent sizes", lambda M: M.vmap(lambda a, b: a + b)(f32(3), f32(4)), ValueError,
         ValueError, "kiln.vmap"),
    Case("vmap in_axes out of range", lambda M: M.vmap(lambda a: a, in_axes=2)(f32(3)), ValueError, ValueError,
         "kiln.vmap"),
    Case("vmap in_axes wrong length", lambda M: M.vmap(lambda a, b: a, in_axes=(0,))(f32(3), f32(3)),
         ValueError, ValueError, "kiln.vmap"),
    Case("vmap scalar argument", lambda M: M.vmap(lambda a: a)(1.0), ValueError, ValueError, "kiln.vmap"),
    Case("vmap out_axes out of range", lambda M: M.vmap(lambda a: a, out_axes=3)(f32(3)), ValueError,
         ValueError, "kiln.vmap"),
    Case("jit of a non-callable", lambda M: M.jit(1), TypeError, TypeError, "expected a function"),
    Case("jit string argument", lambda M: M.jit(lambda x: x)("a"), TypeError, TypeError, "'a'"),
    Case("jit returning a string", lambda M: M.jit(lambda x: "a")(f32(3)), TypeError, TypeError, "str"),
    Case("jit missing argument", lambda M: M.jit(lambda x: x)(), TypeError, TypeError, "missing"),
    Case("jit bool() of a tracer", lambda M: M.jit(lambda x: 1 if x > 0 else 0)(1.0), TypeError,
         E.TracerBoolConversionError, "kiln.lax.cond"),
    Case("jit int() of a tracer", lambda M: M.jit(lambda x: M.np.zeros(int(x)))(1.0), TypeError,
         E.ConcretizationTypeError, "static_argnums"),
    Case("jit unhashable static argument", lambda M: M.jit(lambda x: x, static_argnums=0)(np.ones(3)),
         ValueError, ValueError, "unhashable"),
    Case("jit static_argnums out of range", lambda M: M.jit(lambda x: x, static_argnums=3)(f32(3)), ValueError,
         ValueError, "static_argnums=3 is out of range"),
    Case("jit unknown static_argnames", lambda M: M.jit(lambda x, neg: x, static_argnames=("nope",)), ValueError,
         ValueError, "static_argnames='nope' is not a parameter of the function (its parameters: x, neg)"),
    Case("jit array as a static argument",
         lambda M: M.jit(lambda x, neg: x, static_argnums=(1,))(1, M.np.array(True)), ValueError, ValueError,
         "static argument 'neg' (position 1) is an array"),
    Case("jit boolean mask of a tracer", lambda M: M.jit(lambda x: x[x < 0])(M.np.arange(3.0)), IndexError,
         kiln.errors.NonConcreteBooleanIndexError, "boolean"),
    # -- lax convolutions ---------------------------------------------------------------------------------------
    Case("conv dimension string with a bad letter",
         lambda M: M.lax.conv_general_dilated(f32(1, 6, 7, 2), f32(3, 3, 2, 4), (1, 1), "SAME",
                                              dimension_numbers=("NHWC", "HWIX", "NHWC")),
         TypeError, TypeError, "kernel dimension string 'HWIX' must name each of the 4 kernel dimensions once"),
    Case("conv zero window stride",
         lambda M: M.lax.conv_general_dilated(f32(1, 6, 7, 2), f32(3, 3, 2, 4), (0, 1), "SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
         ValueError, ValueError, "window_strides must be positive, got (0, 1)"),
]


def _kiln_ns():
    return types.SimpleNamespace(np=knp, lax=lax, nn=kiln.nn, random=kiln.random, jit=kiln.jit, grad=kiln.grad,
                                 vmap=kiln.vmap, jacfwd=kiln.jacfwd)


def _params(cases):
    out = []
    for c in cases:
        marks = [pytest.mark.xfail(reason=c.pending, strict=True)] if c.pending else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def test_table_is_consistent():
    names = [c.name for c in TABLE]
    assert len(names) == len(set(names))
    assert len(TABLE) >= 50
    for c in TABLE:
        # kiln's class is the JAX class, or the documented deviation
        assert issubclass(c.kiln_class, c.kiln_base or c.jax_class), c.name
        assert bool(c.kiln_base) == bool(c.why), c.name


@pytest.mark.parametrize("case", _params(TABLE))
def test_kiln_raises_jax_class(case):
    with pytest.raises(Exception) as info:
        case.call(_kiln_ns())
    exc = info.value
    assert isinstance(exc, case.kiln_base or case.jax_class), (
        f"{case.name}: kiln raised {type(exc).__name__}, JAX raises {case.jax_class.__name__}: {exc}")
    assert isinstance(exc, case.kiln_class), f"{case.name}: {type(exc).__mro__}"
    assert case.message in str(exc), f"{case.name}: {str(exc)!r} lacks {case.message!r}"


def test_new_error_classes_are_kiln_errors_and_builtin_classes():
    assert issubclass(kiln.ShapeError, kiln.KilnError) and issubclass(kiln.ShapeError, TypeError)
    assert issubclass(kiln.BroadcastError, TypeError) and issubclass(kiln.BroadcastError, ValueError)
    assert issubclass(kiln.NegativeDimensionError, TypeError) and issubclass(kiln.NegativeDimensionError, ValueError)
    assert issubclass(kiln.MatrixShapeError, np.linalg.LinAlgError) and issubclass(kiln.MatrixShapeError, TypeError)
    assert issubclass(kiln.AxisError, np.exceptions.AxisError) and issubclass(kiln.AxisError, IndexError)
    assert issubclass(kiln.IndexTypeError, TypeError) and issubclass(kiln.IndexTypeError, IndexError)
    assert issubclass(kiln.IntegerOverflowError, OverflowError)
    for cls in (kiln.ShapeError, kiln.AxisError, kiln.IndexTypeError, kiln.IntegerOverflowError):
        assert issubclass(cls, kiln.KilnError)
    # AxisError keeps a plain message (NumPy's AxisError formats its own from (axis, ndim) otherwise)
    assert str(kiln.AxisError("kiln.numpy.sum: axis 5 is out of bounds")) == "kiln.numpy.sum: axis 5 is out of bounds"


@pytest.mark.parametrize("case", _params([c for c in TABLE if c.jax_class is not Exception]))
def test_table_matches_jax(case):
    """The JAX classes written in the table are what JAX raises (only where jax is installed)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    ns = types.SimpleNamespace(np=jnp, lax=jax.lax, nn=jax.nn, random=jax.random, jit=jax.jit, grad=jax.grad,
                               vmap=jax.vmap, jacfwd=jax.jacfwd)
    if case.pending:
        pytest.skip("kiln side pending")
    with pytest.raises(case.jax_class):
        out = case.call(ns)
        jax.block_until_ready(out)


def test_runtime_errors_are_runtime_errors():
    # As JAX's jax.errors.JaxRuntimeError (jaxlib's XlaRuntimeError, a RuntimeError): every error of kiln's runtime
    assert issubclass(kiln.errors.JaxRuntimeError, RuntimeError)
    assert issubclass(kiln.runtime.CompileError, RuntimeError) and issubclass(kiln.runtime.BackendError, ValueError)
    with pytest.raises(RuntimeError):
        kiln.devices("no_such_backend")


def test_thread_guard_is_accepted():
    with kiln.thread_guard(True):  # one process: nothing to check, as in JAX
        assert float(kiln.jit(lambda x: x + 1)(1.0)) == 2.0
