"""Tracing: running a Python function on :class:`Tracer` s to record kiln IR.

There is one tracer type. A :class:`Builder` records the equations of one function being traced;
builders nest (``jit`` inside ``grad`` inside ``jit``...) on a per-thread stack, and every
primitive applied while a builder is active is recorded in the innermost one. Values from outside
it (arrays, tracers of enclosing builders) become its constvars.

A builder whose inputs are known (eager ``grad`` of concrete values, say) can compute the concrete
value of any of its tracers on demand, by running the slice of the IR that produces it; that is
how a Python ``if x < 3`` works under eager ``grad`` while ``jit`` raises
:class:`TracerBoolConversionError`.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import dtypes, leaks, tree_util
from . import refs as _refs
from .array_methods import ArrayMethods
from .avals import ShapedArray
from .config import config
from .errors import (
    ConcretizationTypeError,
    KilnTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from .ir import INLINE_CONSTANT_SIZE, IR, Atom, ClosedIR, Eqn, Literal, Var
from .source_info import at as _at
from .source_info import current as _current_source

# The active builders, innermost last. A context variable, changed only inside a copied context
# (``Context.run``): leaving that context restores the outer stack in C, so no exception, not even
# a KeyboardInterrupt between two Python lines, can leave a builder pushed. Each thread has its own.
_stack: contextvars.ContextVar[tuple] = contextvars.ContextVar("kiln_trace_stack", default=())
# Inside kiln.ensure_compile_time_eval(): operations on concrete values run eagerly even under a trace.
# The active builders (a tuple, empty outside any trace): a bound C method, for hot paths that only ask
# whether anything is being traced.
active_traces = _stack.get
_compile_time_eval: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_compile_time_eval", default=False)


class _EagerHooks:
    """What runs a primitive outside any trace. The driver floor installs it (``install_eager``): the core
    floor cannot import the driver, which sits above it."""

    @staticmethod
    def apply(prim, args, params):
        raise RuntimeError("kiln: no eager execution installed (kiln.frontend.driver was not imported); "
                           "import kiln first")

    put = apply


_eager = _EagerHooks()


def install_eager(apply: Callable[[Any, Sequence[Any], dict], Any], put: Callable[..., Any]) -> None:
    """Install eager execution: ``apply(prim, args, params)`` runs a primitive on concrete values, and
    ``put(value, device, committed)`` places a literal on a device (as an Array)."""
    _eager.apply = apply
    _eager.put = put


def current_builder() -> Builder | None:
    stack = _stack.get()
    return stack[-1] if stack else None


def _run_with_stack(stack: tuple, fun: Callable, args: Sequence[Any]) -> Any:
    _stack.set(stack)
    return fun(*args)


def calls_kept() -> bool:
    """Whether a library function that runs as one compiled program when called eagerly (kiln.numpy's, as JAX
    jits its jax.numpy functions) should record one ``jit_call`` equation here rather than be inlined: every
    active trace is an eager transformation's (see ``Builder.keeps_calls``), so the call still runs as one
    compiled program, with XLA's rounding of the whole function, as JAX's eager ``grad(jnp.arctan)`` does.
    Under a staging trace (jit, make_jaxpr, control flow bodies) the function is inlined, as JAX's
    ``jit(inline=True)`` functions are."""
    stack = _stack.get()
    if not stack:
        return False
    for builder in stack:
        if not builder.keeps_calls:
            return False
    return True


def run_traced(builder: Builder, fun: Callable, *args: Any) -> Any:
    """``fun(*args)`` with ``builder`` as the innermost active trace."""
    return contextvars.copy_context().run(_run_with_stack, _stack.get() + (builder,), fun, args)


def run_untraced(fun: Callable, *args: Any) -> Any:
    """``fun(*args)`` with no active trace: primitives run eagerly."""
    return contextvars.copy_context().run(_run_with_stack, (), fun, args)


class Tracer(ArrayMethods):
    """A value inside a function being traced: an abstract value bound to an IR variable."""

    __slots__ = ("builder", "ir_var")
    __array_priority__ = 100

    def __init__(self, builder: Builder, var: Var):
        self.builder = builder
        self.ir_var = var

    @property
    def aval(self) -> ShapedArray:
        return self.ir_var.aval

    # -- conversions to Python values: need a concrete value ------------------------------
    # bool(), int() and __index__ of a value being differentiated give its value, as in JAX: they are piecewise
    # constant, so as constants to the derivative they are exact (float() and NumPy conversions are not: they raise).
    def __bool__(self) -> bool:
        return bool(self.builder.concrete_value(self, TracerBoolConversionError, "bool()", piecewise_constant=True))

    def __int__(self) -> int:
        return int(self.builder.concrete_value(self, TracerIntegerConversionError, "int()", piecewise_constant=True))

    def __index__(self) -> int:
        value = self.builder.concrete_value(self, TracerIntegerConversionError, "__index__()",
                                            piecewise_constant=True)
        return int(np.asarray(value).__index__())

    def __float__(self) -> float:
        return float(self.builder.concrete_value(self, ConcretizationTypeError, "float()"))

    def __complex__(self) -> complex:
        return complex(self.builder.concrete_value(self, ConcretizationTypeError, "complex()"))

    def __array__(self, dtype=None, copy=None):
        # Under eager grad, a value with no derivative (integer indices, say) converts, as in JAX.
        self.builder.check_no_derivative(self, TracerArrayConversionError, "a NumPy conversion")
        value = self.builder._evaluate(self.ir_var)
        if value is not None:
            return np.asarray(value, dtype=dtype)
        raise TracerArrayConversionError(
            f"kiln: cannot convert a traced array {self.aval.str_short()} to a NumPy array "
            f"{self.builder.where()}. NumPy functions cannot run on traced values: use "
            "kiln.numpy instead of numpy inside transformed functions.")

    def __dlpack__(self, *args, **kwargs):
        raise TracerArrayConversionError(
            f"kiln: a traced array {self.aval.str_short()} has no memory to share over DLPack "
            f"{self.builder.where()}; export arrays outside of transformed functions.")

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()} (arrays are not hashable; "
                        "if you meant it as a static argument, pass a Python value instead)")

    def __repr__(self) -> str:
        # As JAX prints its tracers (what print(x) shows inside a transformed function): JitTracer(~float32[]),
        # VmapTracer(aval=float32[], batched=float32[3]), GradTracer(primal=2.0, typeof(tangent)=f32[]).
        b = self.builder
        kind = b.kind
        if kind == "vmap" and b.batch is not None:
            size, dims = b.batch
            aval = self.aval
            d = dims.get(self.ir_var, 0)
            batched = aval.update(shape=aval.shape[:d] + (size,) + aval.shape[d:])
            return f"VmapTracer(aval={aval}, batched={batched})"
        if kind in ("grad", "jvp"):
            primal = self._primal_text()
            aval = self.aval
            tangent = aval.str_short() if dtypes.is_inexact(aval.dtype) else f"float0[{','.join(map(str, aval.shape))}]"
            name = "GradTracer" if kind == "grad" else "JVPTracer"
            return f"{name}(primal={primal}, typeof(tangent)={tangent})"
        return f"JitTracer({self.aval})"

    def _primal_text(self) -> str:
        """The primal value as JAX shows it in a GradTracer: its value when known, the enclosing trace's tracer
        for an input of this trace, else an abstract stand-in."""
        b = self.builder
        known = b.known.get(self.ir_var) if b.known is not None else None
        if isinstance(known, Tracer):
            return repr(known)
        try:
            value = b._evaluate(self.ir_var)
        except Exception:  # printing must never fail
            value = None
        if value is None:
            return f"JitTracer({self.aval})"
        return str(np.asarray(value))

    def item(self):
        return np.asarray(self.builder.concrete_value(self, ConcretizationTypeError, ".item()")).item()

    def tolist(self):
        return np.asarray(self.builder.concrete_value(self, ConcretizationTypeError, ".tolist()")).tolist()


_BATCHED_BOOL_FIX = ("Under vmap, Python control flow (if/while/and/or) cannot branch on a value that differs "
                     "between batch elements: use kiln.numpy.where, kiln.lax.select or kiln.lax.cond (vmap runs "
                     "both branches of a cond and selects).")


class VaryingInput:
    """The hint a ``shard_map`` gives each input of its body trace: the mesh axes it varies along, the mesh's
    axis names in order, and whether the shard_map checks them (``check_vma``: then transposes in the body are
    typed, ad/varying_transpose.py). Traces opened inside a body (loop and branch bodies, jit, vmap, grad...)
    give their inputs the same hints, from the values of the body they stand for (core/varying.py)."""
    __slots__ = ("axes", "mesh_axes", "typed")

    def __init__(self, axes: frozenset, mesh_axes: tuple[str, ...], typed: bool = False) -> None:
        self.axes = frozenset(axes)
        self.mesh_axes = tuple(mesh_axes)
        self.typed = bool(typed)


class Builder:
    """Records the IR of one function being traced."""

    def __init__(self, fun_name: str = "a function", known_inputs: bool = False,
                 tangent_flows: Callable[[Eqn], bool] | None = None, keeps_calls: bool = False,
                 kind: str = "jit", known_constants: bool = False):
        self.fun_name = fun_name
        # What traces, for the reprs of its tracers (as JAX names them): "jit" (staging), "grad", "jvp", "vmap"
        # (then ``batch`` is (the batch size, {input var: its batch axis})).
        self.kind = kind
        self.batch: tuple[int, dict[Var, int]] | None = None
        # The trace of an eager transformation (grad, vjp, jvp, vmap), whose IR is transformed and then evaluated
        # equation by equation rather than compiled as one program: library functions that run as one compiled
        # program when called eagerly keep that call boundary here (see calls_kept).
        self.keeps_calls = keeps_calls
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.arg_names: list[str] = []
        self.constvars: list[Var] = []
        self.const_values: list[Any] = []
        self._const_index: dict[int, Var] = {}
        # Concrete values of variables, when the inputs were concrete (None: abstract trace).
        self.known: dict[Var, Any] | None = {} if known_inputs or known_constants else None
        # Only the concrete arrays the function closes over are known (eager vmap): a value computed from them
        # alone converts to Python (``if table.sum() > 0``), as in JAX; a tracer of an enclosing trace (an eager
        # grad's, carrying a derivative) is not taken as known.
        self.known_constants_only = known_constants and not known_inputs
        # What the caller knows of an input besides its type (jit: the layout of an argument over a mesh).
        self.input_hints: dict[Var, Any] = {}
        self.finished = False
        # Under eager grad/vjp/jvp (set by trace_to_ir's ``tangent_flows``): the variables that carry a
        # derivative of the inputs, found as equations are recorded (``_derivative_vars``). Converting one to
        # a Python or NumPy value would silently drop its derivative, so that raises, as in JAX.
        self.tangent_flows = tangent_flows
        self._carrying: set[Var] = set()
        self._carrying_upto = 0
        # The trace of a custom derivative rule run for a differentiated call (custom_jvp's jvp, custom_vjp's
        # fwd): per input, how many differentiations enclosing the one that runs the rule its value carries a
        # derivative of. Only those with one or more carry a derivative here, so that a custom function the rule
        # calls (f_jvp returning f(x)) runs its own rule for them, one order of differentiation lower, as JAX's
        # nested JVP traces do. None: the inputs carry as tangent_flows says.
        self.input_depths: dict[Var, int] | None = None
        # The inputs and captured constants whose known value carries a derivative of an enclosing
        # differentiation (a grad inside a grad), with its depth; found as they are added (_outer_depths).
        self._outer: dict[Var, int] = {}
        self._outer_upto = (0, 0)
        # The value each mutable array reference has at this point of the trace, for the refs this trace wrote
        # or holds (see refs.py); in the order of their first write.
        self.ref_values: dict[Any, Any] = {}
        # A shard_map body's trace, or one opened inside a body, whose inputs all carry VaryingInput hints: the
        # mesh's axis names and whether the shard_map checks varying axes. None elsewhere.
        self.varying: tuple[tuple[str, ...], bool] | None = None

    # -- building ---------------------------------------------------------------------------
    def new_arg(self, aval: ShapedArray, name: str = "", value: Any = None, hint: Any = None) -> Tracer:
        var = Var(aval)
        self.invars.append(var)
        self.arg_names.append(name)
        if self.known is not None and value is not None:
            self.known[var] = value
        if hint is not None:
            self.input_hints[var] = hint
        return Tracer(self, var)

    def atom(self, x: Any) -> Atom:
        """The IR atom for an argument of a primitive applied inside this trace."""
        if isinstance(x, Tracer):
            if x.builder is self:
                return x.ir_var
            if x.builder.finished or x.builder not in _stack.get():
                raise UnexpectedTracerError(
                    f"kiln: a traced value {x.aval.str_short()} created while tracing "
                    f"{x.builder.fun_name} was used after that trace ended (now tracing "
                    f"{self.fun_name}). This happens when a traced value escapes a transformed "
                    "function, e.g. stored in a global or an object attribute. Return it "
                    "from the function instead.")
            return self._capture(x, x.aval)
        if isinstance(x, Literal):
            return x
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            dtype, weak = dtypes.dtype_of_value(x)
            return Literal(x, ShapedArray((), dtype, weak))
        aval = abstractify(x)
        if aval.ndim == 0 and isinstance(x, (np.ndarray, np.generic)):
            return Literal(np.asarray(x, aval.dtype), aval)
        if type(x) is np.ndarray and aval.size <= INLINE_CONSTANT_SIZE:  # a small table: written inline
            return Literal(x, aval)
        return self._capture(x, aval)

    def _capture(self, value: Any, aval: ShapedArray) -> Var:
        var = self._const_index.get(id(value))
        if var is None:
            var = Var(aval)
            self._const_index[id(value)] = var
            self.constvars.append(var)
            self.const_values.append(value)
            if self.known is not None and not (self.known_constants_only and isinstance(value, Tracer)):
                self.known[var] = value
        return var

    def capture_ref(self, ref: Any) -> Tracer:
        """A constant standing for the value of ``ref``, a ref that lives outside every trace: the ref itself is
        the constant's value (``jit`` reads it at each call; ``trace_to_ir`` reads it once for the other traces)."""
        var = self._capture(ref, ref._value.aval)
        if self.known is not None:
            self.known[var] = ref._value
        return Tracer(self, var)

    def emit(self, prim, inputs: list[Atom], params: dict, out_avals: list[ShapedArray]) -> list[Tracer]:
        outs = [Var(a) for a in out_avals]
        # Frames 1-3 up are this method, tracing.bind and Primitive.bind (its only way in): start at the
        # caller of Primitive.bind.
        self.eqns.append(Eqn(prim, inputs, outs, params, _current_source(4)))
        return [Tracer(self, v) for v in outs]

    def finish(self, outs: Sequence[Any]) -> ClosedIR:
        """Close the trace: the IR with outputs ``outs`` and its constvars' values."""
        out_atoms = [self.atom(x) for x in outs]
        self.finished = True
        ir = IR(self.constvars, self.invars, self.eqns, out_atoms)
        return ClosedIR(ir, self.const_values)

    # -- concrete values on demand ----------------------------------------------------------
    def where(self) -> str:
        return f"while tracing {self.fun_name}"

    def _needed_by(self, var: Var) -> set[Var]:
        """``var`` and the variables it is computed from."""
        needed = {var}
        for eqn in reversed(self.eqns):
            if any(o in needed for o in eqn.outputs):
                needed.update(a for a in eqn.inputs if isinstance(a, Var))
        return needed

    def _inputs_of(self, var: Var) -> list[str]:
        """Names of the function arguments that ``var`` depends on."""
        needed = self._needed_by(var)
        return [name for v, name in zip(self.invars, self.arg_names) if v in needed and name]

    def _derivative_vars(self) -> set[Var]:
        """The variables so far that depend on an input through equations that pass derivatives on (inexact
        values only: an integer or boolean result has no derivative)."""
        carrying = self._carrying
        if self._carrying_upto == 0:
            carrying.update(v for v in self.invars if dtypes.is_inexact(v.aval.dtype)
                            and (self.input_depths is None or self.input_depths.get(v, 0) > 0))
        for eqn in self.eqns[self._carrying_upto:]:
            if self.tangent_flows(eqn) and any(type(a) is Var and a in carrying for a in eqn.inputs):
                carrying.update(o for o in eqn.outputs if dtypes.is_inexact(o.aval.dtype))
        self._carrying_upto = len(self.eqns)
        return carrying

    def carries_derivative(self, tracer: Tracer) -> bool:
        """Whether ``tracer``, a value of this trace, carries a derivative of the differentiated inputs (see
        __init__); always False in a trace without ``tangent_flows``."""
        return self.tangent_flows is not None and tracer.ir_var in self._derivative_vars()

    def derivative_depth(self, tracer: Tracer) -> int:
        """How many nested differentiations ``tracer``, a value of this trace, carries a derivative of: 1 under
        one grad, 2 where an enclosing grad differentiates the inputs too (grad(grad(f))), 0 if none."""
        if not self.carries_derivative(tracer):
            return 0
        outer = self.input_depths if self.input_depths is not None else self._outer_depths()
        if not outer:
            return 1
        # The inputs (and constants) it depends on through equations that pass derivatives on.
        needed = {tracer.ir_var}
        for eqn in reversed(self.eqns):
            if self.tangent_flows(eqn) and any(o in needed for o in eqn.outputs):
                needed.update(a for a in eqn.inputs if type(a) is Var)
        deepest = max((d for v, d in outer.items() if v in needed), default=0)
        # A rule's trace: its inputs' depths already leave out the differentiation that runs the rule.
        return max(deepest, 1) if self.input_depths is not None else 1 + deepest

    def _outer_depths(self) -> dict[Var, int]:
        n_in, n_const = self._outer_upto
        if self.known is not None and (n_in, n_const) != (len(self.invars), len(self.constvars)):
            for v in self.invars[n_in:] + self.constvars[n_const:]:
                value = self.known.get(v)
                depth = value.builder.derivative_depth(value) if isinstance(value, Tracer) else 0
                if depth:
                    self._outer[v] = depth
            self._outer_upto = (len(self.invars), len(self.constvars))
        return self._outer

    def check_no_derivative(self, tracer: Tracer, error: type, what: str) -> None:
        """Raise ``error`` if ``tracer`` carries a derivative of the differentiated inputs (see __init__)."""
        if not self.carries_derivative(tracer):
            return
        names = self._inputs_of(tracer.ir_var)
        of = f" {', '.join(names)}" if names else ""
        # (JAX's .item() gives the value, a constant to its derivative, silently: the derivative is then wrong)
        jax_does = "JAX silently drops its derivative here" if what == ".item()" else "JAX raises here too"
        raise error(f"kiln: {what} of the traced value {tracer.aval.str_short()} {self.where()}: it depends on the "
                    f"differentiated argument{of}, and as a Python or NumPy value it would be a constant to the "
                    f"derivative ({jax_does}). Keep the computation in kiln.numpy, or wrap the value in "
                    "kiln.lax.stop_gradient(...) if it is meant to be a constant.")

    def concrete_value(self, tracer: Tracer, error: type, what: str, piecewise_constant: bool = False) -> Any:
        """``tracer``'s value where this trace knows it (eager grad), else ``error``; also ``error`` when it carries a
        derivative, unless the conversion is ``piecewise_constant`` (its derivative is zero wherever it has one)."""
        if not piecewise_constant:
            self.check_no_derivative(tracer, error, what)
        value = self._evaluate(tracer.ir_var)
        if value is not None:
            return value
        names = self._inputs_of(tracer.ir_var)
        depends = (f"It depends on argument{'s' if len(names) > 1 else ''} {', '.join(names)}. "
                   if names else "")
        static = ", ".join(names) or "that argument"
        if self.kind == "vmap" and not self._needed_by(tracer.ir_var).isdisjoint(self.invars):
            # (vmap's inputs are its mapped arguments: the value differs between batch elements)
            fix = (_BATCHED_BOOL_FIX if error is TracerBoolConversionError else
                   "Under vmap, a value that decides shapes or Python-level behaviour cannot differ between batch "
                   "elements: pass it unmapped (in_axes=None) or compute it outside the function.")
        elif error is TracerBoolConversionError:
            fix = ("Python control flow (if/while/and/or) on traced values is not allowed under jit: use "
                   f"kiln.lax.cond, kiln.lax.while_loop or kiln.numpy.where, or mark {static} as static "
                   "with static_argnums/static_argnames.")
        else:
            fix = (f"Values that decide shapes or Python-level behaviour must be static: mark {static} "
                   "with static_argnums/static_argnames, or compute it with NumPy outside the function.")
        raise error(f"kiln: {what} needs a concrete value, but got a traced array "
                    f"{tracer.aval.str_short()} {self.where()}. {depends}{fix}")

    def outside_value(self, x: Any) -> Any:
        """``x`` (a value of this finished trace) computed where the trace was called from, from the values its
        inputs are known to have there (None if one is not known): an eager grad's trace discharges what it wrote
        to a ref created outside it this way."""
        if not isinstance(x, Tracer) or x.builder is not self:
            return x
        if self.known is None:
            return None
        computed = self._compute(x.ir_var, lambda value: value, _evaluate_eqns)
        return None if computed is None else computed[x.ir_var]

    def _evaluate(self, var: Var) -> Any:
        """The concrete value of ``var`` if the inputs it depends on are known, else None."""
        if isinstance(var, Literal):
            return var.val
        if self.known is None:
            return None
        if var in self.known:
            return concrete(self.known[var])
        env = self._compute(var, concrete, lambda eqns, env: run_untraced(_evaluate_eqns, eqns, env))
        if env is None:
            return None
        for v, value in env.items():
            self.known.setdefault(v, value)
        return env[var]

    def _compute(self, var: Var, read: Callable[[Any], Any], run: Callable[[list, dict], None]) -> dict | None:
        """The values of ``var`` and of what it is computed from: the equations that produce it run (by ``run``)
        on the known values of its inputs (each as ``read`` gives it); None when one of them is not known."""
        producers, needed = [], {var}
        for eqn in reversed(self.eqns):
            if any(o in needed for o in eqn.outputs):
                producers.append(eqn)
                needed.update(a for a in eqn.inputs if isinstance(a, Var))
        env: dict[Var, Any] = {}
        for v in needed:
            if v in self.known:
                value = read(self.known[v])
                if value is None:
                    return None
                env[v] = value
            elif not any(v in e.outputs for e in producers):
                return None  # an input whose value is not known
        run(producers[::-1], env)
        return env


def materialize(x: Any) -> Any:
    """A Literal as a user-visible value: a tracer of the current trace, or an Array when eager."""
    if not isinstance(x, Literal):
        return x
    builder = current_builder()
    if builder is not None:
        return Tracer(builder, x)  # a tracer whose "variable" is the literal itself
    return _eager.put(x, None, committed=False)


def device_put_eager(value: Any) -> Any:
    """``value`` (a NumPy array) placed on the default device as an uncommitted kiln Array."""
    return _eager.put(value, None, committed=False)


def concrete(value: Any) -> Any:
    """A concrete value for ``value`` (itself unless it is a tracer), or None if it has none."""
    if isinstance(value, Tracer):
        return value.builder._evaluate(value.ir_var)
    return value


def _evaluate_eqns(eqns: Sequence[Eqn], env: dict) -> None:
    for eqn in eqns:
        args = [a if isinstance(a, Literal) else env[a] for a in eqn.inputs]
        with _at(eqn.source):
            outs = eqn.prim.bind(*args, **eqn.params)
        outs = outs if eqn.prim.multiple_results else [outs]
        env.update(zip(eqn.outputs, outs))


def abstractify(x: Any) -> ShapedArray:
    """The abstract value of an argument (Array, tracer, NumPy value or Python scalar)."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        dtype, weak = dtypes.dtype_of_value(x)
        return ShapedArray((), dtype, weak)
    raise TypeError(f"kiln: value of type {type(x).__name__} is not a valid array: {_short_repr(x)}{ref_hint(x)}")


def ref_hint(x: Any) -> str:
    """For a message about a value that is no array: how to get one from a mutable array reference."""
    return "; a Ref is no array: read its value first (ref[...])" if isinstance(x, _refs.Ref) else ""


_ARRAY_LEAF_TYPES = (Tracer, bool, int, float, complex, np.ndarray, np.generic)


def check_output_leaves(where: str, fun_name: str, out: Any, leaves: Sequence[Any], has_aux: bool = False) -> None:
    """Check that the flattened output ``leaves`` of ``fun_name`` (its output ``out``) are arrays or scalars, for
    the transformation ``where`` (``"kiln.vmap"``). The message names the output by its path; with ``has_aux``
    ``out`` is ``(output, aux)``. A type check per leaf on the success path; the naming is done on the error path."""
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, _ARRAY_LEAF_TYPES):
            try:
                abstractify(leaf)  # (a kiln Array, a key array: anything with an aval)
            except TypeError:
                raise _non_array_output(where, fun_name, out, leaves, i, has_aux) from None


def _non_array_output(where: str, fun_name: str, out: Any, leaves: Sequence[Any], i: int, has_aux: bool) -> TypeError:
    leaf = leaves[i]
    paths = tree_util.user_paths(out)
    label = f"output leaf {i}"
    if len(paths) == len(leaves):
        path = paths[i]
        if has_aux and path:
            label = ("auxiliary output" if path[0].idx == 1 else "output") + tree_util.keystr(path[1:])
            label = label if len(path) > 1 else f"the {label}"
        else:
            label = f"output{tree_util.keystr(path)}" if path else "the output"
    return KilnTypeError(f"{where}: {label} of {fun_name} is {a_type(leaf)} ({_short_repr(leaf)}), not an array; the "
                         "function must return arrays, scalars or pytrees of them")


def non_array_argument(where: str, label: str, value: Any, fix: str = "") -> TypeError:
    """The error of an argument of a transformed function that is not an array: ``label`` names it
    (``"argument 0['w']"``)."""
    return KilnTypeError(f"{where}: {label} is {a_type(value)} ({_short_repr(value)}), not an array; "
                         f"{fix or 'pass arrays, scalars or pytrees of them'}")


def a_type(value: Any) -> str:
    """``"a str"``, ``"an object"``: the type of ``value`` with its article, for messages."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _short_repr(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def bind(prim, args: Sequence[Any], params: dict) -> Any:
    """Apply ``prim``: record it in the innermost trace, or run it eagerly if none is active."""
    stack = _stack.get()
    if not stack or (_compile_time_eval.get() and not any(isinstance(x, Tracer) for x in args)):
        return _eager.apply(prim, args, params)
    builder = stack[-1]
    atoms = [builder.atom(x) for x in args]
    out_avals = prim.out_avals([a.aval for a in atoms], params)
    outs = builder.emit(prim, atoms, params, out_avals)
    return outs if prim.multiple_results else outs[0]


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """``with kiln.ensure_compile_time_eval(): ...`` computes operations whose operands are all concrete
    (not traced) eagerly, even inside ``jit``: their results are concrete arrays usable where Python needs
    values (shapes, ``if``). Operations on traced values are traced as usual."""
    token = _compile_time_eval.set(True)
    try:
        yield
    finally:
        _compile_time_eval.reset(token)


def trace_to_ir(fun: Callable, in_avals: Sequence[ShapedArray], *, name: str = "",
                arg_names: Sequence[str] = (), known_values: Sequence[Any] | None = None,
                input_hints: Sequence[Any] | None = None,
                tangent_flows: Callable[[Eqn], bool] | None = None,
                keeps_calls: bool = False, kind: str = "jit",
                batch: tuple[int, Sequence[int]] | None = None,
                known_constants: bool = False,
                derivative_depths: Sequence[int] | None = None, ref_writes: list | None = None,
                ref_constants: bool = False, outer_values: Sequence[Any] | None = None) -> tuple[ClosedIR, Any]:
    """Trace ``fun(*tracers)`` into a ClosedIR; returns it and the raw Python output (flat list).

    ``fun`` takes one tracer per aval and returns a flat list of outputs. ``input_hints``: per input, what
    the caller knows of it besides its type (see :func:`trace_origin`), or None. ``tangent_flows``: the
    inputs are being differentiated, and this says which equations pass a derivative from their inputs to
    their outputs; values that carry one do not convert to Python or NumPy values (:meth:`Builder.check_no_derivative`).
    ``keeps_calls``: the trace of an eager transformation (see :func:`calls_kept`). ``kind`` and ``batch`` (the
    batch size and each input's batch axis, for "vmap") only change how its tracers print (``Builder.kind``).
    ``known_constants``: the concrete arrays ``fun`` closes over are known (see ``Builder.known_constants_only``).
    ``derivative_depths``: a custom derivative rule's trace (with ``tangent_flows``); see ``Builder.input_depths``.
    Mutable array references (refs.py): ``fun`` may write a ref created outside it only where the caller handles
    it: ``ref_writes``, a list, collects those refs (the caller traces again, threading them); otherwise such a
    write raises. ``ref_constants``: refs read from outside every trace stay constants of the IR (jit reads them at
    each call); otherwise their values in the trace around this one (or outside any trace) are.
    ``outer_values`` (default ``known_values``): per input, the value of the enclosing trace it stands for; inside a
    ``shard_map`` body they give the inputs the mesh axes those values vary along (when ``input_hints`` is None).
    """
    if input_hints is None:
        outer = known_values if outer_values is None else outer_values
        if outer is not None:
            input_hints = _varying_hints(outer)
    builder = Builder(name or getattr(fun, "__name__", "a function"), known_inputs=known_values is not None,
                      tangent_flows=tangent_flows, keeps_calls=keeps_calls, kind=kind,
                      known_constants=known_constants)
    names = list(arg_names) or [""] * len(in_avals)
    values = list(known_values) if known_values is not None else [None] * len(in_avals)
    hints = list(input_hints) if input_hints is not None else [None] * len(in_avals)
    tracers = [builder.new_arg(a, n, v, h) for a, n, v, h in zip(in_avals, names, values, hints)]
    if hints and all(isinstance(h, VaryingInput) for h in hints):
        builder.varying = (hints[0].mesh_axes, hints[0].typed)
    if batch is not None:
        builder.batch = (batch[0], {t.ir_var: d for t, d in zip(tracers, batch[1])})
    if derivative_depths is not None:
        builder.input_depths = {t.ir_var: d for t, d in zip(tracers, derivative_depths) if d}
    discharged: list = []  # (ref, value of this trace) written once it has ended

    def trace():
        outs = fun(*tracers)
        escaping = _refs.escaping(builder)
        if escaping:
            if ref_writes is not None:
                ref_writes.extend(escaping)
            elif builder.tangent_flows is not None and builder.known is not None:
                # an eager differentiation: the values written must be constants to it, and are computed after
                for ref in escaping:
                    value = builder.ref_values[ref]
                    if isinstance(value, Tracer) and value.builder is builder and builder.carries_derivative(value):
                        raise _refs.differentiated_write(builder.fun_name)
                    discharged.append((ref, value))
            else:
                raise _refs.unsupported_write(builder.fun_name, kind)
            for ref in escaping:
                del builder.ref_values[ref]
        return builder.finish(outs), outs
    closed, outs = run_traced(builder, trace)
    if not ref_constants and any(isinstance(c, _refs.Ref) for c in closed.consts):
        # the refs it read, as the trace around it has them (there, a constant of its own, or a value): read
        # before its own writes below land, which the function made after reading them
        closed = ClosedIR(closed.ir, [_refs.read(c) if isinstance(c, _refs.Ref) else c for c in closed.consts])
    for ref, value in discharged:
        outside = builder.outside_value(value)
        if outside is None:
            raise _refs.unsupported_write(builder.fun_name, kind)
        _refs.write(ref, outside)
    if config.check_tracer_leaks:
        leaks.check(builder, builder.fun_name, (tracers, outs))
    return closed, outs


def _varying_hints(outer: Sequence[Any]) -> list[VaryingInput] | None:
    """Inside a ``shard_map`` body: hints for the inputs of a trace opened there, from the values they stand for
    (None where one is unknown, and outside bodies)."""
    parent = current_builder()
    if parent is None or parent.varying is None or any(v is None for v in outer):
        return None
    from .varying import nested_hints  # (core/varying.py imports this module)
    return nested_hints(outer)


def trace_origin(x: Any) -> Any:
    """Where a traced value came from, when a trace knows: the concrete value it stands for (a transformation
    traced with known inputs), or the hint its trace's caller gave for it (jit: its layout); a non-traced value
    is its own origin. None when nothing is known (an intermediate value of an abstract trace)."""
    while isinstance(x, Tracer):
        b = x.builder
        hint = b.input_hints.get(x.ir_var)
        if hint is not None:
            return hint
        if b.known is None or x.ir_var not in b.known:
            return None
        x = b.known[x.ir_var]
    return x


def eval_ir(ir: IR, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluate ``ir`` by applying each equation: eagerly, or recorded into the active trace."""
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    env.update(zip(ir.invars, args))

    def read(a):
        return a if isinstance(a, Literal) else env[a]

    for eqn in ir.eqns:
        with _at(eqn.source):
            outs = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        env.update(zip(eqn.outputs, outs if eqn.prim.multiple_results else [outs]))
    return [materialize(read(a)) for a in ir.outvars]
