"""Mutable array references (JAX's ``jax.Ref``): ``kiln.new_ref(x)``, read with ``ref[idx]``, written with
``ref[idx] = v``.

kiln's IR has no mutable values: a ref is discharged while Python traces. Outside any trace a ref holds a
concrete array, and a write replaces it. Inside a trace, the value a ref has at this point of the trace is a
traced value the innermost trace keeps for it (``Builder.ref_values``): a write records a new one, a read returns
it. A ref that no trace has a value for yet is read from where it lives: the innermost trace captures the
ref itself as one of its constants (:meth:`Builder.capture_ref`). ``jit`` keeps such a constant and reads the
ref anew at each call (or, called inside another trace, in that trace); every other trace reads it when it
ends, in the trace around it (``trace_to_ir``).

What a trace writes to a ref created outside it (an *escaping* write) must leave the trace as an output and
be written where the ref lives: ``trace_to_ir`` hands those refs to callers that take them (``jit``, loops and
branches, which thread them as carries and results) and raises for the others. A ref created inside a trace
lives and dies there: its writes are just values of that trace.
"""
from __future__ import annotations

from typing import Any

from . import tracing  # (tracing imports this module too: each reads the other's names at call time only)
from .avals import ShapedArray
from .errors import KilnError


class RefError(KilnError, ValueError):
    """A misuse of a mutable array reference: returned from a jitted function, passed twice, used where kiln does
    not support it yet."""


class AbstractRef:
    """The type of a ref (``kiln.typeof(ref)``): ``Ref{float32[3]}``, as JAX prints it."""

    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)

    def __eq__(self, other: Any) -> bool:
        return type(other) is AbstractRef and other.inner_aval == self.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))

    def __repr__(self) -> str:
        return f"Ref{{{self.inner_aval.dtype.name}{list(self.inner_aval.shape)}}}".replace(" ", "")


class Ref:
    """A mutable array reference (``jax.Ref``): ``ref[...]`` reads its whole value, ``ref[idx]`` part of it,
    ``ref[idx] = v`` writes. It is no array: read it before computing with it (``jnp.sin(ref[...])``)."""

    __slots__ = ("_value", "_home", "_passed", "_invalidated", "_owned", "__weakref__")

    def __init__(self, value: Any, home: Any, passed: bool = False):
        self._value = value  # outside any trace: the concrete array (None while a trace holds the value)
        self._home = home    # the Builder of the trace it was created in, or None (created outside any trace)
        self._passed = passed  # a stand-in, in a trace (jit, vmap), for a ref passed to it as an argument
        self._invalidated: str | None = None  # the function that invalidated it (kiln.freeze, kiln.free_ref)
        self._owned = True  # outside any trace: no array but the ref holds its buffer (see ``owned``)

    # -- reading and writing -------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        return indexing.get(read(self), index)

    def __setitem__(self, index: Any, update: Any) -> None:
        write(self, indexing.set(read(self), index, update), owned=True)

    # -- what it holds -------------------------------------------------------------------------------
    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(_aval_of(read(self)))

    shape = property(lambda self: _aval_of(read(self)).shape)
    dtype = property(lambda self: _aval_of(read(self)).dtype)
    ndim = property(lambda self: _aval_of(read(self)).ndim)
    size = property(lambda self: _aval_of(read(self)).size)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d Ref")
        return shape[0]

    def __iter__(self):
        # Rows of its value now (without this, Python would index 0, 1, 2, ... and never stop: an index past the
        # end is clamped, not an IndexError).
        return iter(read(self))

    def unsafe_buffer_pointer(self) -> int:
        return read(self).unsafe_buffer_pointer()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("kiln: a Ref is not an array; read its value first: np.asarray(ref[...])")

    def __bool__(self) -> bool:
        raise TypeError("kiln: the truth value of a Ref is ambiguous; read its value first: bool(ref[...])")

    def __repr__(self) -> str:
        if self._invalidated is not None:
            return f"Ref(<invalidated by {self._invalidated}>)"
        value = read(self)
        text = repr(value)
        if type(value).__name__ == "Array" and text.startswith("Array("):
            return "Ref(" + text[len("Array("):]
        return f"Ref({text})"

    __hash__ = object.__hash__  # identity: a ref is one mutable object, never equal to another


def _aval_of(value: Any) -> ShapedArray:
    return tracing.abstractify(value)


class _Indexing:
    """How a ref's value is indexed, updated and copied: ``get(value, index)`` (a new array outside any trace),
    ``set(value, index, update) -> new value`` (a buffer of its own outside any trace) and ``copy(value)``,
    installed by kiln's numpy floor (frontend/refs.py), which has the array operations."""

    get: Any = None
    set: Any = None
    copy: Any = None


indexing = _Indexing()


def read(ref: Ref) -> Any:
    """The value ``ref`` has at this point of the innermost trace (or outside any trace, its array)."""
    if ref._invalidated is not None:
        raise RefError(f"kiln: this Ref was invalidated by {ref._invalidated} and cannot be read or written any "
                       "more; keep using the array kiln.freeze returned, or create a new ref (kiln.new_ref)")
    stack = tracing._stack.get()
    for builder in reversed(stack):
        value = builder.ref_values.get(ref)
        if value is not None:
            return value
        if ref._home is builder:
            break
    if ref._home is not None and ref._home not in stack:
        raise RefError("kiln: a Ref created inside a traced function (jit, grad, a loop body, ...) was used after "
                       "that trace ended; create it outside, or return its value (ref[...]) instead")
    if not stack:
        return ref._value
    return stack[-1].capture_ref(ref)


def write(ref: Ref, value: Any, owned: bool = False) -> None:
    """Give ``ref`` the value ``value`` from this point of the innermost trace on. ``owned``: outside any trace,
    ``value`` is a buffer no array holds (a program's output, a copy); else it may be one the caller holds (a value
    that a transformation evaluated and wrote back may be an array it was given), copied before it is donated."""
    stack = tracing._stack.get()
    if ref._invalidated is not None or (ref._home is not None and ref._home not in stack):
        read(ref)  # (raises: invalidated, or used after its trace ended)
    if stack:
        stack[-1].ref_values[ref] = value
        return
    if isinstance(value, tracing.Tracer):
        raise RefError("kiln: a traced value was written to a Ref outside the trace it belongs to")
    ref._value, ref._owned = value, owned


def owned(ref: Ref) -> Any:
    """``ref``'s value, for a program that donates it (jit updates a ref in place): outside any trace a buffer only
    the ref holds, copied once if it may be shared (see ``write``), so that no array the user holds is donated."""
    value = read(ref)
    if ref._owned or tracing._stack.get():
        return value
    ref._value, ref._owned = indexing.copy(value), True
    return ref._value


def new_ref(init: Any) -> Ref:
    """A new ref holding ``init`` (a kiln array or a traced value; outside any trace, one no other array holds)."""
    if isinstance(init, Ref):
        raise RefError("kiln.new_ref: the initial value is a Ref; refs of refs are not supported (as in JAX): pass "
                       "its value, ref[...]")
    builder = tracing.current_builder()
    ref = Ref(None, builder)
    if builder is not None:
        builder.ref_values[ref] = init
    else:
        ref._value = init
    return ref


def stand_in(value: Any) -> Ref:
    """A ref of the innermost trace, holding ``value``, that stands for a ref passed to the traced function as an
    argument (jit, vmap): kept past the trace, it raises when used, and it cannot be frozen there."""
    builder = tracing.current_builder()
    ref = Ref(None, builder, passed=True)
    builder.ref_values[ref] = value
    return ref


def invalidate(ref: Ref, fname: str) -> None:
    """``fname`` (``kiln.freeze``, ``kiln.free_ref``) ends ``ref``: only where it was created (as in JAX, so that
    no trace ends a ref that its caller still holds), and any use afterwards raises."""
    read(ref)  # (raises if already invalidated, or used after its trace ended)
    if ref._passed or ref._home is not tracing.current_builder():
        where = "passed to this traced function as an argument" if ref._passed else "created outside this " \
            "traced function (closed over)"
        raise RefError(f"{fname}: the Ref was {where}; a ref can only be frozen or freed in the scope that created "
                       "it (as in JAX: jit, vmap and loop bodies cannot end their caller's refs). Read its value "
                       "with ref[...] instead, or call it where the ref was created")
    ref._invalidated = fname


def seed(refs: list[Ref], values: list[Any]) -> None:
    """In the innermost trace (a loop body or a branch that threads ``refs``), let ``refs`` have ``values``."""
    builder = tracing.current_builder()
    for ref, value in zip(refs, values):
        builder.ref_values[ref] = value


def take(refs: list[Ref]) -> list[Any]:
    """The values ``refs`` have at the end of the innermost trace, which then no longer holds them (it returns
    them, and its caller writes them where the refs live)."""
    builder = tracing.current_builder()
    return [builder.ref_values.pop(ref) for ref in refs]


def escaping(builder: Any) -> list[Ref]:
    """The refs ``builder``'s trace wrote that were created outside it, in the order of their first write."""
    return [r for r in builder.ref_values if r._home is not builder]


# What each kind of trace is called in messages (trace_to_ir's ``kind``).
_KIND_NAMES = {"jit": "this trace", "vmap": "kiln.vmap", "grad": "differentiation (grad, vjp, jvp)",
               "jvp": "differentiation (grad, vjp, jvp)"}


def differentiated_write(fun_name: str) -> RefError:
    """The error for a differentiated value written to a ref created outside the differentiated function."""
    return RefError(f"kiln: {fun_name} writes a value that depends on the differentiated inputs to a Ref created "
                    "outside the differentiated function, as JAX refuses too: write a constant of the derivative "
                    "(kiln.lax.stop_gradient(value)), or return the value instead")


def unsupported_write(fun_name: str, kind: str) -> RefError:
    """The error for a trace (of ``fun_name``, of kind ``kind``) that wrote a ref created outside it, where
    kiln cannot thread the write out."""
    return RefError(f"kiln: {fun_name} writes to a Ref created outside it, inside {_KIND_NAMES.get(kind, kind)}, "
                    "where kiln cannot carry the write out yet. Writes to refs created outside work at the top "
                    "level and inside kiln.jit, lax.scan, fori_loop, while_loop and cond; elsewhere, create the ref "
                    "inside the function, or return the value and write it outside")
