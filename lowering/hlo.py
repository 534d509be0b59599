"""The module builder's small value helpers: how emission rules write StableHLO.

Two levels:

- **raw** ``ir.Value``\\ s: :func:`op` (any operation without regions), :func:`compare`,
  :func:`build_region` (a region's block and its ``stablehlo.return``), :func:`while_values`, and the
  attributes StableHLO wants (:func:`i64_attr`, :func:`i32_attr`, :func:`i64_array`, :func:`i64_pairs`,
  XLA's frontend attributes: :func:`frontend_attributes`, :func:`add_frontend_attributes`), and
  :func:`enclosing` (the module around the insertion point, where a rule adds functions);
- :class:`V`, an ``ir.Value`` with its static shape and NumPy dtype whose Python operators emit
  StableHLO, and the functions on ``V``\\ s below it: constants and broadcasts, iota, select, convert,
  reshapes and slices, reductions, dots, loops, sorts, and helpers for stacks of matrices (the leading
  dimensions of every operand are batch dimensions).

A rule that works on ``V``\\ s wraps its operands (:meth:`V.of`, :func:`wrap_inputs`) and returns ``.v``;
:func:`out_type` is the type of an equation's output, for rules that emit one operation with :func:`op`.
Helpers emit at the current insertion point, in the order they are called; one that would be the
identity (a broadcast, convert or reshape to what its operand already is) emits nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo
from kiln.frontend.core import dtypes

from .types import element_type, ranked_type, scalar_type, tensor_type

# == Raw values and attributes =================================================================


def op(name: str, operands: Sequence[ir.Value], result_types, **attributes) -> ir.Value:
    """Create an operation (``stablehlo.*``, ``chlo.*``) with one result (or several: pass a list)."""
    many = isinstance(result_types, (list, tuple))
    created = ir.Operation.create(name, results=list(result_types) if many else [result_types],
                                  operands=list(operands), attributes=attributes)
    return list(created.results) if many else created.result


def sdy_sharding(dims: Sequence[Sequence[str]]) -> ir.Attribute:
    """Shardy's layout attribute over the module's ``@mesh``: per dimension, the mesh axes splitting it."""
    text = ", ".join("{" + ", ".join(f'"{a}"' for a in names) + "}" for names in dims)
    return ir.Attribute.parse(f"#sdy.sharding<@mesh, [{text}]>")


def i64_attr(value: int) -> ir.IntegerAttr:
    """A 64-bit integer attribute (``dimension``, ``iota_dimension``, ...)."""
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def i32_attr(value: int) -> ir.IntegerAttr:
    """A 32-bit integer attribute (``api_version``, ``mhlo.num_replicas``, ...)."""
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(value))


def i64_array(values) -> ir.DenseI64ArrayAttr:
    """A ``array<i64: ...>`` attribute (dimensions, sizes, strides, permutations)."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def frontend_attributes(pairs: Sequence[tuple[str, str]]) -> ir.DictAttr:
    """XLA's frontend attributes ``{key = "value", ...}`` from ``(key, value)`` string pairs (XLA metadata)."""
    return ir.DictAttr.get({k: ir.StringAttr.get(v) for k, v in pairs})


def add_frontend_attributes(operation: ir.Operation, attributes: ir.DictAttr) -> None:
    """Add ``attributes`` (see :func:`frontend_attributes`) to ``operation``'s ``mhlo.frontend_attributes`` (XLA's
    ``frontend_attributes={...}``); a key the operation has already keeps its value, as in JAX."""
    own = operation.attributes
    if _FRONTEND_ATTRIBUTES in own:
        merged = {a.name: a.attr for a in attributes}
        merged.update({a.name: a.attr for a in ir.DictAttr(own[_FRONTEND_ATTRIBUTES])})
        attributes = ir.DictAttr.get(merged)
    own[_FRONTEND_ATTRIBUTES] = attributes


_FRONTEND_ATTRIBUTES = "mhlo.frontend_attributes"


def enclosing(operation: ir.Operation, name: str) -> tuple[ir.Operation, ir.Operation]:
    """The ancestor of ``operation`` called ``name`` (e.g. the ``builtin.module``) and its child on the way down to
    ``operation`` (the function being built: a rule inserts functions of its own before it)."""
    child, parent = operation, operation.parent
    while parent is not None and parent.name != name:
        child, parent = parent, parent.parent
    if parent is None:
        from .module import LoweringError  # (module.py imports this file)
        raise LoweringError(f"kiln: no enclosing {name} of {operation.name}")
    return parent, child


def i64_pairs(pairs) -> ir.DenseIntElementsAttr:
    """A ``tensor<Nx2xi64>`` attribute of (low, high) pairs (``padding`` of windowed ops)."""
    array = np.asarray(pairs, np.int64).reshape(len(pairs), 2)
    return ir.DenseIntElementsAttr.get(array, type=ir.RankedTensorType.get(
        [len(pairs), 2], ir.IntegerType.get_signless(64)))


def real_dtype(dtype) -> np.dtype:
    """The dtype of the real and imaginary parts of ``dtype`` (``dtype`` itself when it is not complex)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float64) if dtype == np.complex128 else (
        np.dtype(np.float32) if dtype == np.complex64 else dtype)


def compare_type(dtype: np.dtype) -> str:
    """The ``compare_type`` of ``stablehlo.compare`` for operands of ``dtype``."""
    kind = dtypes.kind(dtype)
    if kind in "fc":
        return "FLOAT"
    if kind in "ub":
        return "UNSIGNED"
    return "SIGNED"


def compare(x: ir.Value, y: ir.Value, direction: str, dtype: np.dtype) -> ir.Value:
    """``stablehlo.compare`` of two values of ``dtype`` (result: i1 of the same shape)."""
    return hlo.CompareOp(x, y, hlo.ComparisonDirectionAttr.get(direction),
                         compare_type=hlo.ComparisonTypeAttr.get(compare_type(np.dtype(dtype)))).result


def build_region(region: ir.Region, arg_types: Sequence[ir.Type], body: Callable) -> None:
    """Give ``region`` (of an operation just created) its block: arguments of ``arg_types``, then the
    operations ``body(*arguments)`` emits, then ``stablehlo.return`` of what it returns (a value or a
    sequence of values)."""
    block = region.blocks.append(*arg_types)
    with ir.InsertionPoint(block):
        out = body(*block.arguments)
        ir.Operation.create("stablehlo.return", operands=[out] if isinstance(out, ir.Value) else list(out))


def while_values(init: Sequence[ir.Value], cond: Callable, body: Callable) -> list[ir.Value]:
    """``stablehlo.while`` carrying ``init``: ``cond(*carry)`` returns the i1 predicate, ``body(*carry)``
    the next carry (raw values; see :func:`while_loop` for ``V``\\ s)."""
    types = [v.type for v in init]
    loop = ir.Operation.create("stablehlo.while", results=types, operands=list(init), regions=2)
    build_region(loop.regions[0], types, cond)
    build_region(loop.regions[1], types, body)
    return list(loop.results)


# == V: a value with its shape and dtype ========================================================


class V:
    """An ``ir.Value`` with its static shape and NumPy dtype; arithmetic emits StableHLO.

    ``+ - * / %`` and ``& |`` (a Python number as the other operand becomes a constant of this dtype),
    unary ``-``, and comparisons ``< <= > >=`` / :meth:`eq` / :meth:`ne` (boolean results).
    """

    __slots__ = ("v", "shape", "dtype")

    def __init__(self, v: ir.Value, shape: Sequence[int], dtype) -> None:
        self.v, self.shape, self.dtype = v, tuple(shape), np.dtype(dtype)

    @classmethod
    def of(cls, v: ir.Value, aval) -> V:
        """The value ``v`` of the abstract value ``aval`` (anything with ``shape`` and ``dtype``)."""
        return cls(v, aval.shape, aval.dtype)

    @property
    def type(self) -> ir.RankedTensorType:
        """The MLIR type, ``tensor<...>``."""
        return ranked_type(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    def _other(self, o) -> V:
        return o if isinstance(o, V) else full(o, self.shape, self.dtype)

    def _bin(self, name: str, o, swap: bool = False) -> V:
        o = self._other(o)
        a, b = (o, self) if swap else (self, o)
        return V(op(f"stablehlo.{name}", [a.v, b.v], self.type), self.shape, self.dtype)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("subtract", o)
    def __rsub__(self, o): return self._bin("subtract", o, True)
    def __mul__(self, o): return self._bin("multiply", o)
    def __rmul__(self, o): return self._bin("multiply", o, True)
    def __truediv__(self, o): return self._bin("divide", o)
    def __rtruediv__(self, o): return self._bin("divide", o, True)
    def __mod__(self, o): return self._bin("remainder", o)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __neg__(self): return self._unary("negate")

    def _unary(self, name: str) -> V:
        return V(op(f"stablehlo.{name}", [self.v], self.type), self.shape, self.dtype)

    def compare(self, o, direction: str) -> V:
        """``stablehlo.compare`` with ``direction`` (EQ, NE, LT, LE, GT, GE): a boolean ``V``."""
        o = self._other(o)
        return V(compare(self.v, o.v, direction, self.dtype), self.shape, np.bool_)

    def __lt__(self, o): return self.compare(o, "LT")
    def __le__(self, o): return self.compare(o, "LE")
    def __gt__(self, o): return self.compare(o, "GT")
    def __ge__(self, o): return self.compare(o, "GE")
    def eq(self, o) -> V: return self.compare(o, "EQ")
    def ne(self, o) -> V: return self.compare(o, "NE")
    __hash__ = None  # type: ignore[assignment]


# -- an equation's operands and result ------------------------------------------------------------

def wrap_inputs(eqn, values: Sequence[ir.Value]) -> list[V]:
    """An equation's operands as ``V``\\ s (shapes and dtypes from its input avals)."""
    return [V.of(v, a.aval) for v, a in zip(values, eqn.inputs)]


def out_type(eqn) -> ir.RankedTensorType:
    """The type of an equation's (first) output."""
    return tensor_type(eqn.outputs[0].aval)


def op_rule(name: str) -> Callable:
    """The emission rule of a primitive that is the one operation ``name`` (``stablehlo.add``,
    ``chlo.erf``, ...) of its operands, with the equation's output type."""
    def rule(ctx, eqn, *args):
        return op(name, args, out_type(eqn))
    return rule


def _on_values(fn: Callable, signature: Sequence[tuple[tuple[int, ...], np.dtype]]) -> Callable:
    """``fn`` on ``V``\\ s of ``signature`` ((shape, dtype) pairs) as a region body on raw values."""
    def body(*args):
        out = fn(*[V(a, s, d) for a, (s, d) in zip(args, signature)])
        return [o.v for o in ([out] if isinstance(out, V) else out)]
    return body


# -- constants, broadcasts, elementwise ------------------------------------------------------------

def const(value, dtype) -> V:
    """A ``stablehlo.constant`` holding ``value`` (any shape) as ``dtype``."""
    arr = np.array(value, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    attr = ir.DenseElementsAttr.get(arr, type=ranked_type(arr.shape, arr.dtype))
    return V(ir.Operation.create("stablehlo.constant", results=[ranked_type(arr.shape, arr.dtype)],
                                 attributes={"value": attr}).result, arr.shape, arr.dtype)


def full(value, shape: Sequence[int], dtype) -> V:
    """A scalar constant broadcast to ``shape`` (the scalar itself when ``shape`` is ``()``)."""
    return bcast(const(value, dtype), shape, ())


def bcast(x: V, shape: Sequence[int], dims: Sequence[int]) -> V:
    """``broadcast_in_dim``: operand dimension i becomes result dimension ``dims[i]`` (nothing is
    emitted when that is the identity)."""
    shape = tuple(shape)
    if shape == x.shape and tuple(dims) == tuple(range(x.ndim)):
        return x
    return V(op("stablehlo.broadcast_in_dim", [x.v], ranked_type(shape, x.dtype),
                broadcast_dimensions=i64_array(dims)), shape, x.dtype)


def iota(shape: Sequence[int], dim: int, dtype=np.int32) -> V:
    """``stablehlo.iota``: 0, 1, 2, ... along dimension ``dim`` (negative counts from the end)."""
    shape = tuple(shape)
    dim = dim % len(shape)
    return V(op("stablehlo.iota", [], ranked_type(shape, dtype), iota_dimension=i64_attr(dim)), shape, dtype)


def select(pred: V, a, b) -> V:
    """``stablehlo.select``: ``a`` where ``pred``, else ``b`` (one of them may be a Python number)."""
    ref = a if isinstance(a, V) else b
    a = a if isinstance(a, V) else full(a, ref.shape, ref.dtype)
    b = b if isinstance(b, V) else full(b, ref.shape, ref.dtype)
    if pred.shape != a.shape and pred.shape != ():
        raise AssertionError("select shapes")
    return V(op("stablehlo.select", [pred.v, a.v, b.v], a.type), a.shape, a.dtype)


def unary(name: str, x: V) -> V:
    """The elementwise ``stablehlo.<name>`` of ``x`` (same type)."""
    return x._unary(name)


def sqrt(x: V) -> V:
    """``stablehlo.sqrt``."""
    return unary("sqrt", x)


def absv(x: V) -> V:
    """``stablehlo.abs`` (of a real ``x``: the result has its type)."""
    return unary("abs", x)


def logical_not(x: V) -> V:
    """``stablehlo.not`` (of booleans: logical not)."""
    return unary("not", x)


def maximum(a: V, b) -> V:
    """``stablehlo.maximum``."""
    return a._bin("maximum", b)


def convert(x: V, dtype) -> V:
    """``stablehlo.convert`` to ``dtype`` (nothing is emitted when ``x`` has it already)."""
    if x.dtype == np.dtype(dtype):
        return x
    return V(op("stablehlo.convert", [x.v], ranked_type(x.shape, dtype)), x.shape, dtype)


def real(x: V) -> V:
    """``stablehlo.real`` of a complex ``x``."""
    rt = real_dtype(x.dtype)
    return V(op("stablehlo.real", [x.v], ranked_type(x.shape, rt)), x.shape, rt)


def imag(x: V) -> V:
    """``stablehlo.imag`` of a complex ``x``."""
    rt = real_dtype(x.dtype)
    return V(op("stablehlo.imag", [x.v], ranked_type(x.shape, rt)), x.shape, rt)


def conj(x: V) -> V:
    """The complex conjugate (``x`` itself when it is real)."""
    if x.dtype.kind != "c":
        return x
    re, im = real(x), imag(x)
    return V(op("stablehlo.complex", [re.v, (-im).v], x.type), x.shape, x.dtype)


# -- shapes and slices -------------------------------------------------------------------------------

def reshape(x: V, shape: Sequence[int]) -> V:
    """``stablehlo.reshape`` (nothing is emitted when the shape is unchanged)."""
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return V(op("stablehlo.reshape", [x.v], ranked_type(shape, x.dtype)), shape, x.dtype)


def transpose(x: V, perm: Sequence[int]) -> V:
    """``stablehlo.transpose``: result dimension i is operand dimension ``perm[i]``."""
    shape = tuple(x.shape[p] for p in perm)
    return V(op("stablehlo.transpose", [x.v], ranked_type(shape, x.dtype), permutation=i64_array(perm)),
             shape, x.dtype)


def mT(x: V) -> V:
    """Swap the last two dimensions."""
    nd = x.ndim
    return transpose(x, list(range(nd - 2)) + [nd - 1, nd - 2])


def slice_(x: V, start: Sequence[int], limit: Sequence[int]) -> V:
    """``stablehlo.slice`` from ``start`` to ``limit`` (static, stride 1)."""
    shape = tuple(l - s for s, l in zip(start, limit))
    return V(op("stablehlo.slice", [x.v], ranked_type(shape, x.dtype), start_indices=i64_array(start),
                limit_indices=i64_array(limit), strides=i64_array([1] * x.ndim)), shape, x.dtype)


def _index(i) -> V:
    return i if isinstance(i, V) else const(i, np.int32)


def dyn_slice(x: V, starts: Sequence, sizes: Sequence[int]) -> V:
    """``stablehlo.dynamic_slice`` of ``sizes`` at ``starts`` (scalar ``V``\\ s, or ints: i32 constants)."""
    starts = [_index(s).v for s in starts]
    return V(op("stablehlo.dynamic_slice", [x.v, *starts], ranked_type(sizes, x.dtype),
                slice_sizes=i64_array(sizes)), sizes, x.dtype)


def dyn_update(x: V, update: V, starts: Sequence) -> V:
    """``stablehlo.dynamic_update_slice``: ``x`` with ``update`` written at ``starts`` (as :func:`dyn_slice`)."""
    starts = [_index(s).v for s in starts]
    return V(op("stablehlo.dynamic_update_slice", [x.v, update.v, *starts], x.type), x.shape, x.dtype)


def concat(xs: Sequence[V], dim: int) -> V:
    """``stablehlo.concatenate`` along ``dim``."""
    dim = dim % xs[0].ndim
    shape = list(xs[0].shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    return V(op("stablehlo.concatenate", [x.v for x in xs], ranked_type(shape, xs[0].dtype),
                dimension=i64_attr(dim)), shape, xs[0].dtype)


# -- reductions ----------------------------------------------------------------------------------------

_ON_BOOLEANS = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}


def monoid(kind: str, dtype) -> str:
    """The StableHLO op that combines values of ``dtype`` for the monoid ``kind`` (add, multiply,
    maximum, minimum, and, or): ``kind`` itself, except on booleans (add and maximum are ``or``,
    multiply and minimum are ``and``)."""
    return _ON_BOOLEANS.get(kind, kind) if np.dtype(dtype) == np.bool_ else kind


def identity(kind: str, dtype):
    """The identity of the monoid ``kind`` (add, multiply, maximum, minimum, and, or) on ``dtype``."""
    dtype = np.dtype(dtype)
    if kind in ("add", "or"):
        return 0
    if kind == "multiply":
        return 1
    if kind == "and":
        return dtypes.highest(dtype) if dtypes.kind(dtype) in "bu" else -1
    return dtypes.lowest(dtype) if kind == "maximum" else dtypes.highest(dtype)


def reduce_general(operands: Sequence[V], inits: Sequence[V], axes: Sequence[int], body: Callable) -> list[V]:
    """``stablehlo.reduce`` of ``operands`` (one shape) over ``axes`` from the scalars ``inits``;
    ``body(*accumulators, *elements)`` (scalar ``V``\\ s) returns the new accumulators."""
    axes = [a % operands[0].ndim for a in axes]
    shape = tuple(d for i, d in enumerate(operands[0].shape) if i not in axes)
    red = ir.Operation.create("stablehlo.reduce", results=[ranked_type(shape, i.dtype) for i in inits],
                              operands=[x.v for x in [*operands, *inits]], attributes={"dimensions": i64_array(axes)},
                              regions=1)
    signature = [((), i.dtype) for i in inits] * 2
    build_region(red.regions[0], [scalar_type(d) for _, d in signature], _on_values(body, signature))
    return [V(r, shape, i.dtype) for r, i in zip(red.results, inits)]


def reduce(x: V, axes: Sequence[int], kind: str) -> V:
    """Reduce ``x`` over ``axes`` with the StableHLO op ``kind`` (add, multiply, maximum, minimum, and,
    or), starting from its :func:`identity`."""
    (out,) = reduce_general([x], [const(identity(kind, x.dtype), x.dtype)], axes,
                            lambda acc, el: [acc._bin(kind, el)])
    return out


def rsum(x: V, axis: int = -1) -> V:
    """The sum over ``axis``."""
    return reduce(x, [axis], "add")


# -- products --------------------------------------------------------------------------------------------

def precision_names(precision: str | Sequence[Any]) -> tuple[str, str]:
    """The (lhs, rhs) precision names of a dot or convolution's ``precision``: one name (``"HIGHEST"``) for both
    operands, or one per operand (names, or anything whose ``str`` is one, such as ``lax.Precision`` members)."""
    lhs, rhs = (precision, precision) if isinstance(precision, str) else precision
    return str(lhs), str(rhs)


def precision_config(precision: str | Sequence[Any]) -> ir.ArrayAttr:
    """StableHLO's ``precision_config`` of a dot or convolution (``precision`` as :func:`precision_names` reads
    it)."""
    return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p) for p in precision_names(precision)])


def dot_algorithm(lhs, rhs, acc, lhs_components: int, rhs_components: int, operations: int,
                  imprecise: bool) -> ir.Attribute:
    """StableHLO's ``algorithm`` attribute of a dot_general (the types as dtypes, or ``"tf32"``)."""
    def elem(t):
        return ir.FloatTF32Type.get() if isinstance(t, str) and t == "tf32" else element_type(t)
    return hlo.DotAlgorithm.get(elem(lhs), elem(rhs), elem(acc), lhs_components, rhs_components, operations,
                                imprecise)


def dot(x: V, y: V, contract: tuple[Sequence[int], Sequence[int]], batch: tuple[Sequence[int], Sequence[int]],
        *, precision: str | Sequence[Any] | None = "HIGHEST", dtype=None, algorithm: tuple | None = None) -> V:
    """``stablehlo.dot_general`` (at ``precision``, see :func:`precision_config`; None: no attribute), result
    dims batch, x free, y free, of ``dtype`` (default: ``x``'s); ``algorithm``: the arguments of
    :func:`dot_algorithm`, for its attribute."""
    (xc, yc), (xb, yb) = contract, batch
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(xb), rhs_batching_dimensions=list(yb),
                                     lhs_contracting_dimensions=list(xc), rhs_contracting_dimensions=list(yc))
    shape = tuple(x.shape[a] for a in xb) + tuple(d for i, d in enumerate(x.shape) if i not in xc and i not in xb) \
        + tuple(d for i, d in enumerate(y.shape) if i not in yc and i not in yb)
    attributes = {"dot_dimension_numbers": dn}
    if precision is not None:
        attributes["precision_config"] = precision_config(precision)
    if algorithm is not None:
        attributes["algorithm"] = dot_algorithm(*algorithm)
    return V(op("stablehlo.dot_general", [x.v, y.v], ranked_type(shape, dtype), **attributes), shape, dtype)


def matmul(x: V, y: V) -> V:
    """Batched ``x @ y`` for ``(..., m, k) @ (..., k, n)`` with equal batch dimensions."""
    nb = x.ndim - 2
    return dot(x, y, ([nb + 1], [nb]), (list(range(nb)), list(range(nb))))


def matvec(x: V, v: V) -> V:
    """Batched ``x @ v`` for ``(..., m, k)`` and ``(..., k)`` (the contraction of :func:`matmul`)."""
    return matmul(x, v)


def vecmat(v: V, x: V) -> V:
    """Batched ``v @ x`` for ``(..., m)`` and ``(..., m, n)``."""
    nb = x.ndim - 2
    return dot(v, x, ([nb], [nb]), (list(range(nb)), list(range(nb))))


# -- loops and sorts -------------------------------------------------------------------------------------

def while_loop(init: Sequence[V], cond: Callable[..., V], body: Callable[..., Sequence[V]]) -> list[V]:
    """``stablehlo.while`` over the carried values ``init`` (values from outside are not captured:
    everything the regions need is carried or created inside them)."""
    signature = [(x.shape, x.dtype) for x in init]
    results = while_values([x.v for x in init], _on_values(cond, signature), _on_values(body, signature))
    return [V(r, s, d) for r, (s, d) in zip(results, signature)]


def fori_loop(n: int, init: Sequence[V], body: Callable[..., Sequence[V]]) -> list[V]:
    """``for i in range(n): carry = body(i, *carry)`` as a while loop (``i`` is an int32 scalar)."""
    if n == 0:
        return list(init)

    def cond(i, *_):
        return i < n

    def step(i, *carry):
        return [i + 1, *body(i, *carry)]

    return while_loop([const(0, np.int32), *init], cond, step)[1:]


def sort(operands: Sequence[V], dimension: int, is_stable: bool, less: Callable[..., V]) -> list[V]:
    """``stablehlo.sort`` of ``operands`` (one shape) along ``dimension``; the comparator
    ``less(a0, b0, a1, b1, ...)`` (scalar ``V``\\ s, two per operand) says whether a goes before b."""
    s = ir.Operation.create("stablehlo.sort", results=[x.type for x in operands], operands=[x.v for x in operands],
                            attributes={"dimension": i64_attr(dimension), "is_stable": ir.BoolAttr.get(is_stable)},
                            regions=1)
    signature = [((), x.dtype) for x in operands for _ in range(2)]
    build_region(s.regions[0], [scalar_type(d) for _, d in signature], _on_values(less, signature))
    return [V(r, x.shape, x.dtype) for r, x in zip(s.results, operands)]


def sort_along_last(keys: V, values: Sequence[V], descending: bool) -> list[V]:
    """Stable sort of ``keys`` and ``values`` (same shape) along the last dimension by ``keys``."""
    return sort([keys, *values], keys.ndim - 1, True, lambda a, b, *_: a > b if descending else a < b)


# == Stacks of matrices (leading dimensions of every operand are batch dimensions) ===============

def rows_iota(shape: Sequence[int]) -> V:
    """The row index of each entry of ``(..., m, n)``."""
    return iota(shape, len(shape) - 2)


def cols_iota(shape: Sequence[int]) -> V:
    """The column index of each entry of ``(..., m, n)``."""
    return iota(shape, len(shape) - 1)


def column(x: V, j) -> V:
    """Column ``j`` of a stack of matrices: ``(..., m, n) -> (..., m)``."""
    *b, m, _ = x.shape
    return reshape(dyn_slice(x, [0] * len(b) + [0, j], (*b, m, 1)), (*b, m))


def row(x: V, i) -> V:
    """Row ``i``: ``(..., m, n) -> (..., n)``."""
    *b, _, n = x.shape
    return reshape(dyn_slice(x, [0] * len(b) + [i, 0], (*b, 1, n)), (*b, n))


def element(v: V, i) -> V:
    """Entry ``i`` of a stack of vectors: ``(..., n) -> (...)``."""
    *b, _ = v.shape
    return reshape(dyn_slice(v, [0] * len(b) + [i], (*b, 1)), tuple(b))


def as_col(v: V, n: int) -> V:
    """``(..., m) -> (..., m, n)``, constant along the last dimension."""
    nb = v.ndim - 1
    return bcast(v, (*v.shape, n), list(range(nb + 1)))


def as_row(v: V, m: int) -> V:
    """``(..., n) -> (..., m, n)``, constant along rows."""
    nb = v.ndim - 1
    return bcast(v, (*v.shape[:-1], m, v.shape[-1]), list(range(nb)) + [nb + 1])


def over(v: V, shape: Sequence[int]) -> V:
    """Broadcast a batch-shaped value ``(...)`` to ``(..., *rest)``."""
    return bcast(v, shape, list(range(v.ndim)))


def outer(u: V, w: V) -> V:
    """Batched outer product: ``(..., m), (..., n) -> (..., m, n)``."""
    return as_col(u, w.shape[-1]) * as_row(w, u.shape[-1])


def diagonal(x: V) -> V:
    """The diagonal of square matrices: ``(..., n, n) -> (..., n)`` (exact: select and sum)."""
    return rsum(select(rows_iota(x.shape).eq(cols_iota(x.shape)), x, 0), -1)


def eye_like(batch: Sequence[int], m: int, n: int, dtype) -> V:
    """A stack of ``m x n`` identity matrices of ``dtype``: ``(*batch, m, n)``."""
    shape = (*batch, m, n)
    return convert(rows_iota(shape).eq(cols_iota(shape)), dtype)


def nan_where_not(ok: V, x: V) -> V:
    """``x`` where the batch flag ``ok`` holds, NaN elsewhere."""
    return select(over(ok, x.shape), x, np.nan)
