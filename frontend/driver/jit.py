"""``kiln.jit``: trace once per signature, compile to one executable, dispatch fast.

The cache key is everything that changes the program and nothing else: the pytree structure of
the arguments, their abstract values, the static arguments (by hash and equality), the config
flags that affect tracing, and the target device.
"""
from __future__ import annotations

import collections
import collections.abc
import dataclasses
import functools
import inspect
import itertools
import threading
import time
import warnings
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from kiln import runtime

from ..core import caches, consumption, dtypes, passes, refs, source_info, tree_util
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.call import call_p
from ..core.config import config, dispatch_epoch, no_execution_error, no_tracing_error
from ..core.errors import KilnError
from ..core.ir import INLINE_CONSTANT_SIZE, IR, ClosedIR
from ..core.tracing import Tracer, a_type, abstractify, active_traces, calls_kept, current_builder, eval_ir, trace_to_ir
from ..core.varying import nested_hints
from . import dispatch, nan_check, retrace, spmd, stale, trace_mutations
from .array import Array, held_on
from .direct_call import DirectCall, LaunchFailed, direct_call, pytree_call, with_options
from .layout import Format, formats_of, resolve_format
from .sharding import SingleDeviceSharding, flatten_shardings, resolve_spec, shardings_per_leaf

_new_object = object.__new__


class JitError(KilnError, TypeError):
    """Bad arguments to a jitted function or to ``jit`` itself."""


class _RefArguments(Exception):
    """Raised by ``_entry`` for arguments that include mutable array references (taken by ``_call_with_refs``)."""


class JitArgumentError(JitError, ValueError):
    """Bad static or donated argument options (out of range, unhashable). A ``ValueError`` as in JAX
    (and a :class:`JitError`, a ``TypeError``, as kiln raised before)."""


# XLA's options for one compilation (``jax.stages.CompilerOptions``): the names of XLA's DebugOptions fields
# (``"xla_backend_optimization_level"``, ``"xla_disable_hlo_passes"``, ...) or of ExecutableBuildOptions' fields
# (``"optimization_level"``, ...) to values XLA reads for them. JAX's alias says ``str | bool``; ints and floats
# are taken too (as JAX's are), and kiln.CompilerEffortLevel members for the two effort levels.
CompilerOptions = dict[str, str | bool | int | float]
_OPTION_VALUE_TYPES = (str, bool, int, float)


def _compiler_option_items(where: str, options: Any) -> tuple[tuple[str, Any], ...]:
    """``options`` (a CompilerOptions or None) as sorted ``(name, value)`` pairs, NumPy scalars made Python ones.
    Only the types are checked here: XLA checks the names and the values when it compiles."""
    if options is None:
        return ()
    if not isinstance(options, collections.abc.Mapping):
        raise JitError(f"{where}: compiler_options must be a dict of XLA option names to values, e.g. "
                       f"{{'xla_backend_optimization_level': 0}}; got a {type(options).__name__} ({options!r:.80})")
    items = []
    for name, value in options.items():
        if not isinstance(name, str):
            raise JitError(f"{where}: compiler_options has the key {name!r}, a {type(name).__name__}; the keys are "
                           "XLA's option names, as strs (e.g. 'xla_backend_optimization_level')")
        if isinstance(value, np.generic):
            value = value.item()  # (np.bool_ as a bool: jaxlib would pass it to XLA as the int 1)
        elif isinstance(value, runtime.executable.CompilerEffortLevel):
            value = value.value  # (XLA's number: the same key as the int; a member's name is read when compiling)
        if not isinstance(value, _OPTION_VALUE_TYPES) and not (name == "fdo_profile" and isinstance(value, bytes)):
            raise JitError(f"{where}: compiler_options[{name!r}] is a {type(value).__name__} ({value!r:.60}); "
                           "XLA's options take a str, bool, int or float (a list of names, e.g. passes to disable, "
                           "is one comma-separated str)")
        items.append((name, value))
    return tuple(sorted(items))


def _options_key(items: tuple[tuple[str, Any], ...]) -> tuple:
    """``items`` with each value's type: True == 1 in Python, but XLA reads them differently."""
    return tuple((name, type(value), value) for name, value in items)


def _as_tuple(x: int | str | Sequence | None, kind: type, where: str = "kiln.jit", what: str = "") -> tuple:
    if x is None:
        return ()
    if isinstance(x, kind):
        return (x,)
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise JitError(f"{where}: {what} must be {'an int' if kind is int else 'a str'} or a sequence of them, "
                       f"got {type(x).__name__} {x!r:.60}")
    return tuple(x)


@dataclass
class _Entry:
    """One traced and (lazily) compiled signature."""

    closed: ClosedIR              # the traced IR with its constants
    out_tree: Any
    device: runtime.Device
    committed: bool
    donated: list[bool]           # per dynamic leaf
    arg_names: list[str]
    compiled: dispatch.CompiledIR | None = None   # published last, when const_buffers is set too
    const_buffers: list | None = None
    call_ir: ClosedIR | None = None  # constvars turned into leading invars, for nested calls
    consumed_keys: tuple[int, ...] = ()  # debug_key_reuse: the argument leaves (users' leaves) it consumes
    # Mutable array references (core/refs.py): the leaf positions of the arguments that are refs (the outputs
    # end with their final values, in this order), the refs it closes over and writes (weakly held; the outputs
    # end with their final values after those), and whether some constants are refs (read at each call).
    ref_args: tuple[int, ...] = ()
    ref_outs: tuple = ()
    ref_consts: bool = False


# A function keeps at most this many traced signatures (least recently used go first): a function
# called with ever new shapes must not keep every executable it ever made.
SIGNATURES_PER_FUNCTION = 512
# Plain signatures per function kept for the direct launch (see _Signatures.recent).
RECENT_DIRECT_CALLS = 4


class _Once:
    """Compute each key's value once, however many threads ask for it at the same time.

    Only GIL-atomic dict operations, no lock: a ``KeyboardInterrupt`` between any two lines must not
    leave a lock held (the next call would wait forever). The thread that claims a key computes and
    publishes its value; the others poll until ``lookup()`` finds it or the claim goes away. A thread
    that meets its own claim (a recursive call) computes again rather than wait for itself.
    """

    def __init__(self) -> None:
        self._claims: dict[Any, tuple[threading.Event, int]] = {}

    def get(self, key: Any, lookup: Callable[[], Any], compute: Callable[[], Any]) -> Any:
        me = threading.get_ident()
        claim = (threading.Event(), me)
        try:
            while True:
                value = lookup()
                if value is not None:
                    return value
                holder = self._claims.setdefault(key, claim)
                if holder is claim or holder[1] == me:
                    return compute()
                holder[0].wait(0.05)
        finally:
            if self._claims.get(key) is claim:
                self._claims.pop(key, None)
                claim[0].set()


class _Signatures:
    """The traced (and compiled) signatures of one function under one set of jit options, shared by
    every ``jit`` of that function (as JAX's caches are) and freed with the function. Least recently
    used signatures go first beyond :data:`SIGNATURES_PER_FUNCTION`."""

    def __init__(self) -> None:
        self.entries: collections.OrderedDict[Any, _Entry] = collections.OrderedDict()
        self.once = _Once()  # one trace, and one compile, per signature across threads
        self.history = retrace.TraceHistory()  # for the warning when the function keeps retracing
        self.baked: tuple[stale.Baked, ...] = ()  # globals/closure values the last trace read
        self.stale_warned: set[str] = set()
        # The plain signatures last recorded for the direct launch (direct_call.py), most recently used first;
        # ``direct`` is the first, matched inline. A few are kept, not one: a function called alternately with
        # two signatures (``x * y`` and ``x * 2.0``) would otherwise leave one of them on the C++ path, whose
        # hits never record a direct launch again.
        self.direct: DirectCall | None = None
        self.recent: list[DirectCall] = []
        self.capacity = SIGNATURES_PER_FUNCTION

    def get(self, key: Any) -> _Entry | None:
        entry = self.entries.get(key)
        if entry is not None:
            try:
                self.entries.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile
                pass
        return entry

    def put(self, key: Any, entry: _Entry) -> None:
        self.entries[key] = entry
        while len(self.entries) > self.capacity:
            try:
                self.entries.popitem(last=False)
            except KeyError:
                break

    def clear(self) -> None:
        self.entries.clear()
        self.baked, self.history = (), retrace.TraceHistory()
        self.stale_warned.clear()
        self.direct, self.recent = None, []

    def remember(self, direct: DirectCall | None) -> None:
        """Record ``direct`` (a signature just run) as the first one to try."""
        if direct is not None:
            self.recent = [direct] + self.recent[:RECENT_DIRECT_CALLS - 1]
            self.direct = direct

    def run_direct(self, args: tuple, kwargs: dict) -> Any:
        """The result of the first of the other recent signatures the call matches (it becomes the first), or
        None. The callers have tried ``direct`` (always ``recent[0]``) already."""
        for direct in itertools.islice(self.recent, 1, None):
            out = direct.run(args, kwargs)
            if out is not None:
                self.recent = [direct] + [d for d in self.recent if d is not direct]
                self.direct = direct
                return out
        return None


# fun -> {jit options -> _Signatures}: the trace cache belongs to the function, held weakly.
_signatures_of: "weakref.WeakKeyDictionary[Any, dict[Any, _Signatures]]" = weakref.WeakKeyDictionary()


@caches.register
def _clear_all_signatures() -> None:
    for per_options in list(_signatures_of.values()):
        for sigs in list(per_options.values()):
            sigs.clear()
    runtime.fastpath.clear_all()


def _signatures_for(fun: Callable, options: tuple) -> _Signatures:
    """The shared signature cache of ``fun`` under ``options`` (a private one when ``fun`` cannot be
    weakly referenced or hashed)."""
    try:  # setdefault: atomic, so threads creating jit(f) at once share one cache
        per_options = _signatures_of.setdefault(fun, {})
        return per_options.setdefault(options, _Signatures())
    except TypeError:  # not weakly referenceable or not hashable (options with unhashable devices)
        return _Signatures()


class JittedFunction:
    """A function compiled with :func:`jit`. Call it like the original function."""

    def __init__(self, fun: Callable, *, static_argnums=None, static_argnames=None, donate_argnums=None,
                 donate_argnames=None, keep_unused: bool = False, device=None, backend: str | None = None,
                 in_shardings=None, out_shardings=None, inline: bool = False,
                 compiler_options: CompilerOptions | None = None, _max_signatures: int = 0):
        if not callable(fun):
            raise TypeError(f"kiln.jit: expected a function, got {type(fun).__name__}: {fun!r}")
        self.fun = fun
        self.__name__ = source_info.fun_name(fun)
        self.__qualname__ = getattr(fun, "__qualname__", self.__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        self._where = f"kiln.jit({self.__name__})"  # how error messages name the function
        self._params = _signature_params(fun)
        static_argnums = _as_tuple(static_argnums, int, self._where, "static_argnums")
        static_argnames = _as_tuple(static_argnames, str, self._where, "static_argnames")
        self.static_argnums, self.static_argnames = self._resolve(static_argnums, static_argnames, "static")
        donate_argnums = _as_tuple(donate_argnums, int, self._where, "donate_argnums")
        donate_argnames = _as_tuple(donate_argnames, str, self._where, "donate_argnames")
        self.donate_argnums, self.donate_argnames = self._resolve(donate_argnums, donate_argnames, "donate")
        both = set(self.static_argnums) & set(self.donate_argnums)
        if both:
            raise JitError(f"{self._where}: argument {sorted(both)} cannot be both static and donated")
        self.keep_unused = keep_unused
        self.in_shardings, self.out_shardings = _check_shardings(self.__name__, in_shardings, out_shardings)
        if device is None and backend is None:
            self.in_shardings, self.out_shardings, device = _one_device_shardings(
                self.__name__, self.in_shardings, self.out_shardings)
        self._in_prefix = _ShardingPrefix.of(self.in_shardings)
        self._out_prefix = _ShardingPrefix.of(self.out_shardings)
        # Resolved lazily so that jit(f, backend="gpu") can be created before backends load.
        self._device_spec = (backend, device)
        self._compiler_options = _compiler_option_items(self._where, compiler_options)
        self._signatures = _signatures_for(fun, (self.static_argnums, self.static_argnames, self.donate_argnums,
                                                 self.donate_argnames, keep_unused, self._device_spec,
                                                 self._in_prefix, self._out_prefix,
                                                 _options_key(self._compiler_options)))
        self._last_key: Any = None
        self._inline = bool(inline)  # (kiln's own library functions, eager_jit, are inline too)
        # jaxlib's C++ dispatch: repeated calls of a signature whose arguments are all kiln arrays (or
        # scalars) skip Python entirely, donation included (a training step). The Python path drops the
        # cached host view of a donated array first; on the C++ path such a view keeps XLA from reusing
        # that one buffer (it allocates a new one: same results).
        self._cpp = None
        # The mesh program (of those the C++ runs) that allows the fewest executions in flight: call_cpp keeps
        # that bound around each C++ call (XLA's CPU collectives abort when too many queue up; sharded.py)
        self._mesh_bound: runtime.SpmdExecutable | None = None
        if runtime.fastpath.available():
            self._cpp = runtime.fastpath.make_function(self.__name__, self._cpp_miss, self.static_argnums,
                                                       self.static_argnames, _max_signatures or 256)
        if _max_signatures:  # kiln's own eager programs: fewer signatures per function than a user's jit
            self._signatures.capacity = _max_signatures

    # -- argument bookkeeping --------------------------------------------------------------
    def _resolve(self, nums: tuple, names: tuple, what: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """Complete argnums from argnames and vice versa, using the function's signature (as JAX)."""
        params = self._params
        if params is None:
            return tuple(sorted(set(nums))), tuple(names)
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        nums_out = set()
        for n in nums:
            if not isinstance(n, int):
                raise JitError(f"{self._where}: {what}_argnums must be ints, got {n!r}")
            if n >= len(positional) and not has_varargs or n < -len(positional):
                raise JitArgumentError(f"{self._where}: {what}_argnums={n} is out of range: the function "
                               f"takes {len(positional)} positional argument(s) ({', '.join(positional)})")
            nums_out.add(n % len(positional) if n < 0 else n)
        names_out = set(names)
        all_names = {p.name for p in params}
        has_varkw = any(p.kind == p.VAR_KEYWORD for p in params)
        for name in names:
            if name not in all_names and not has_varkw:
                raise JitArgumentError(f"{self._where}: {what}_argnames={name!r} is not a parameter of the "
                                       f"function (its parameters: {', '.join(p.name for p in params)})")
            if name in positional:
                nums_out.add(positional.index(name))
        for n in nums_out:
            if n < len(positional):
                names_out.add(positional[n])
        return tuple(sorted(nums_out)), tuple(sorted(names_out))

    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, tuple]:
        """Separate static arguments (part of the cache key) from dynamic ones (traced)."""
        if not self.static_argnums and not self.static_argnames:
            return args, kwargs, ()
        static = []
        dyn_args = []
        for i, a in enumerate(args):
            if i in self.static_argnums:
                static.append((i, _hashable_static(self, a, f"position {i}", self._param_name(i))))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                static.append((k, _hashable_static(self, v, f"keyword {k!r}", k)))
            else:
                dyn_kwargs[k] = v
        return tuple(dyn_args), dyn_kwargs, tuple(static)

    def _param_name(self, i: int) -> str:
        if self._params is not None:
            positional = [p.name for p in self._params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if i < len(positional):
                return positional[i]
        return f"args[{i}]"

    def _merge(self, dyn_args: tuple, dyn_kwargs: dict, static: tuple) -> tuple[list, dict]:
        args, kwargs = list(dyn_args), dict(dyn_kwargs)
        for where, value in static:
            value = value.value if isinstance(value, _Static) else value
            if isinstance(where, int):
                args.insert(where, value)
            else:
                kwargs[where] = value
        return args, kwargs

    def _watched_for_side_effects(self, static: tuple) -> list:
        """The objects whose attributes a trace may rebind, to be warned about (trace_mutations.py): none for
        kiln's own functions or with ``stale_value_warnings`` off."""
        if not config.stale_value_warnings:
            return []
        code_of = retrace.unwrap_function(self.fun)
        if not inspect.isfunction(code_of):  # a callable object: its class's __call__ says whose it is
            code_of = type(code_of).__call__ if callable(code_of) else code_of
        if retrace.is_kiln_function(code_of):
            return []
        values = tuple(v.value if isinstance(v, _Static) else v for _, v in static)
        return trace_mutations.watched_objects(self.fun, values)

    def _leaf_names(self, dyn_args: tuple, dyn_kwargs: dict, static: tuple) -> list[str]:
        """Readable argument paths (``params['w'][0]``) of every dynamic leaf, for error messages."""
        names = []
        for path, _ in tree_util.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]:
            if path[0].idx == 0:  # positional
                head = self._dyn_arg_name(path[1].idx, static)
            else:
                head = str(path[1].key)
            names.append(head + tree_util.keystr(path[2:]))
        return names

    def _user_leaf_name(self, dyn_args: tuple, dyn_kwargs: dict, static: tuple, i: int) -> str:
        """The name of leaf ``i`` among the leaves users see (a key array is one), as :meth:`_leaf_names`'."""
        path = tree_util.user_leaves_with_path((dyn_args, dyn_kwargs))[i][0]
        head = self._dyn_arg_name(path[1].idx, static) if path[0].idx == 0 else str(path[1].key)
        return "argument " + head + tree_util.keystr(path[2:])

    def _static_name(self, where: int | str) -> str:
        return repr(self._param_name(where) if isinstance(where, int) else where)

    def _dyn_arg_name(self, i: int, static: tuple) -> str:
        """The parameter name of dynamic positional argument ``i`` (static arguments taken out)."""
        for s in sorted(w for w, _ in static if isinstance(w, int)):  # map back to the original position
            if s <= i:
                i += 1
        return self._param_name(i)

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        sigs = self._signatures
        if sigs.baked:
            stale.check(self.__name__, sigs.baked, sigs.stale_warned)
        direct = sigs.direct
        if direct is not None and not active_traces():  # inside a trace: recorded (below), even on concrete arrays
            # A plain signature matched inline, arguments by identity (direct_call.py); DirectCall.run otherwise.
            if not kwargs and len(args) == direct.arity and direct.epoch is dispatch_epoch.current:
                a = args[0]
                if type(a) is Array and a._flat[1] is direct.aux0:
                    if direct.arity == 1:
                        bufs = [a._buf]
                    else:
                        b = args[1]
                        bufs = [a._buf, b._buf] if type(b) is Array and b._flat[1] is direct.aux1 else None
                    if bufs is not None:
                        try:
                            buf = direct.finish(direct.start(bufs))[0]
                        except Exception:  # e.g. a deleted argument: the Python path explains it (launching no
                            return self._call(*args, **kwargs)  # more: each failed launch logs a PJRT error line)
                        if buf is not None:
                            # Array._from_flat(direct.out_aux, (buf,)), inlined
                            aux = direct.out_aux
                            out = _new_object(Array)
                            out._buf = buf
                            out.aval, out._device, out._committed, out._sharding = aux
                            out._npy = None
                            out._flat = ((buf,), aux)
                            return out
            try:
                out = direct.run(args, kwargs)  # the last signature, then the other recent ones
                if out is None:
                    out = sigs.run_direct(args, kwargs)
            except LaunchFailed:
                return self._call(*args, **kwargs)
            if out is not None:
                return out
        # disable_jit, debug_nans, debug_infs, an open set_xla_metadata; and inside a trace, where the call is
        # recorded, not run (jaxlib's C++ path, which knows nothing of kiln's traces, would run a signature it has seen)
        if config._jit_python_dispatch or active_traces():
            return self._call(*args, **kwargs)
        return call_cpp(self, args, kwargs)

    def _cpp_miss(self, *args, **kwargs):
        """The C++ path's miss: run in Python, and describe the signature for C++ when it can take it."""
        if config.disable_jit:
            return self.fun(*args, **kwargs), None
        dyn_args, dyn_kwargs, static = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        try:
            entry = self._entry(leaves, treedef, dyn_args, dyn_kwargs, static)
        except _RefArguments:  # (the C++ path cannot take refs: this signature stays in Python)
            return self._call_with_refs(leaves, treedef, dyn_args, dyn_kwargs, static), None
        if entry.ref_outs or entry.ref_consts:
            return self._run_with_refs(entry, leaves, ()), None
        if current_builder() is not None:
            return self._call_traced(entry, leaves), None
        out = self._execute(entry, leaves)
        record = self._fast_path(entry, leaves, out)
        if record is not None or any(type(x) is np.ndarray for x in leaves):
            # (NumPy arrays stay off the C++ path, which may alias their memory: the direct launch copies them)
            self._record_direct(len(args), dyn_args, dyn_kwargs, static, entry, treedef, leaves, out)
        return out, record

    def _record_direct(self, n_args: int, dyn_args: tuple, dyn_kwargs: dict, static: tuple, entry: _Entry,
                       in_tree: Any, leaves: list, out: Any) -> None:
        """Keep the signature just run (``n_args`` positional arguments, split by :meth:`_split`; the dynamic ones
        flattened to ``in_tree`` and ``leaves``) for the direct launch (direct_call.py): arrays and scalars each
        its own argument, or pytrees of Python's containers holding arrays; static options anywhere (direct_call
        checks the rest)."""
        compiled = entry.compiled
        kept = compiled.kept[len(entry.closed.ir.constvars):]
        device = entry.device
        if isinstance(device, spmd.MeshPlacement):
            if spmd.passed_buffers(leaves, device.in_shardings, kept) is None:
                return
            device = None  # (arrays over several devices have no device: the direct launch matches them so)
        call = None
        if not dyn_kwargs and len(leaves) == len(dyn_args):
            in_avals = [v.aval for v in entry.closed.ir.invars]
            call = direct_call(dyn_args, in_avals, kept, entry.const_buffers, compiled.executable, out, device,
                               entry.donated)
        if call is None:
            # (const_buffers holds the kept constants only: each of them is taken)
            kept_all = [True] * len(entry.const_buffers) + list(kept)
            call = pytree_call(dyn_args, dyn_kwargs, in_tree, leaves, kept_all, entry.const_buffers,
                               compiled.executable, entry.out_tree, out, device, entry.donated)
        options = tuple((where, value.value) for where, value in static)
        self._signatures.remember(with_options(call, options, n_args))

    def _fast_path(self, entry: _Entry, leaves: list, out: Any):
        """The C++ record for this signature, or None when an argument is one the C++ cannot take as it is
        (see :func:`_cpp_takes`)."""
        device = entry.device
        compiled = entry.compiled
        n_consts = len(entry.closed.ir.constvars)
        exe = compiled.executable
        arg_buffers = None
        if isinstance(device, spmd.MeshPlacement):
            arg_buffers = spmd.passed_buffers(leaves, device.in_shardings, compiled.kept[n_consts:])
            if arg_buffers is None:
                return None
        elif not all(_cpp_takes(x, device) for x in leaves):
            return None
        if exe.host_callbacks:  # launches order effects and explain callback errors in Python (as JAX's)
            return None
        out_leaves, out_treedef = runtime.fastpath.flatten(out)
        # The C++ unflattens the executable's outputs with this tree: it must see exactly those arrays
        # (a pytree type it does not know would look like one leaf).
        bufs = {id(a._buf) for a in tree_util.tree_leaves(out) if type(a) is Array}
        if len(out_leaves) != len(exe.out_avals) or not all(id(b) in bufs for b in out_leaves):
            return None
        if arg_buffers is not None and exe.max_in_flight is not None:
            # the C++ launches skip SpmdExecutable's own: call_cpp waits for their turn and accounts for them
            bound = self._mesh_bound
            if bound is None or exe.max_in_flight < bound.max_in_flight:
                self._mesh_bound = exe
        return runtime.fastpath.record(exe, out_treedef, entry.const_buffers, compiled.kept[n_consts:], arg_buffers)

    def _call(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        dyn_args, dyn_kwargs, static = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        try:
            entry = self._entry(leaves, treedef, dyn_args, dyn_kwargs, static)
        except _RefArguments:
            return self._call_with_refs(leaves, treedef, dyn_args, dyn_kwargs, static)
        if entry.consumed_keys:  # (debug_key_reuse)
            consumption.consume_arguments(self._where, (dyn_args, dyn_kwargs), entry.consumed_keys,
                                          lambda i: self._user_leaf_name(dyn_args, dyn_kwargs, static, i))
        if entry.ref_outs or entry.ref_consts:
            return self._run_with_refs(entry, leaves, ())
        if current_builder() is not None:
            return self._call_traced(entry, leaves)
        out = self._execute(entry, leaves)
        # No C++ dispatch in this process (jax imported first): the direct launch still is, for the calls the C++
        # path would take. Not for those that must stay in Python (an open set_xla_metadata, debug_nans, ...): the
        # launch's epoch does not tell one metadata context from another.
        if self._cpp is None and not config._jit_python_dispatch:
            self._record_direct(len(args), dyn_args, dyn_kwargs, static, entry, treedef, leaves, out)
        return out

    def _call_with_refs(self, leaves: list, treedef: Any, dyn_args: tuple, dyn_kwargs: dict, static: tuple) -> Any:
        """A call whose arguments include mutable array references: the function runs on their values, and what
        it leaves in them is written back (the program takes each ref's value and returns its final one)."""
        positions = tuple(i for i, x in enumerate(leaves) if isinstance(x, refs.Ref))
        passed = [leaves[i] for i in positions]
        names = self._leaf_names(dyn_args, dyn_kwargs, static)
        first: dict[int, int] = {}
        for i in positions:
            j = first.setdefault(id(leaves[i]), i)
            if j != i:
                raise refs.RefError(f"{self._where}: the same Ref is passed as argument {names[j]} and as argument "
                                    f"{names[i]}; a ref may be passed to a jitted function only once (as in JAX), "
                                    "so that two names never alias one mutable array")
        values = list(leaves)
        for i in positions:
            values[i] = refs.owned(leaves[i])  # (donated)
        entry = self._entry(values, treedef, dyn_args, dyn_kwargs, static, positions)
        closed_over = {id(w()) for w in entry.ref_outs} | {id(c) for c in entry.closed.consts
                                                           if isinstance(c, refs.Ref)}
        for i in positions:
            if id(leaves[i]) in closed_over:
                raise refs.RefError(f"{self._where}: a Ref is both closed over by the function and passed as argument "
                                    f"{names[i]} (as in JAX, this is not allowed: the two would alias one mutable "
                                    "array); pass it only as the argument")
        return self._run_with_refs(entry, values, passed)

    def _run_with_refs(self, entry: _Entry, leaves: list, passed: Sequence[Any]) -> Any:
        """Run (or, inside a trace, record) a signature that reads or writes mutable array references, and write
        the final values back: to the refs ``passed`` as arguments, then to those it closes over."""
        result = self._call_traced(entry, leaves) if current_builder() is not None else self._execute(entry, leaves)
        if not (entry.ref_args or entry.ref_outs):
            return result
        out, finals = result
        for ref, value in zip(list(passed) + [w() for w in entry.ref_outs], finals):
            if ref is not None:  # (a closed-over ref that went away)
                refs.write(ref, value, owned=True)  # (a program's outputs are buffers of their own)
        return out

    def _entry(self, leaves, treedef, dyn_args, dyn_kwargs, static, ref_args: tuple[int, ...] = ()) -> _Entry:
        try:
            avals = tuple([x.aval if type(x) is Array else abstractify(x) for x in leaves])
        except TypeError:
            if any(isinstance(x, refs.Ref) for x in leaves):
                raise _RefArguments from None
            raise self._bad_leaf_error(leaves, dyn_args, dyn_kwargs, static) from None
        explicit = self._explicit_device()
        placement = None
        if explicit is None:
            placement = spmd.placement_for(leaves, lambda: self._leaf_names(dyn_args, dyn_kwargs, static),
                                           self._leaf_in_shardings(dyn_args, static, len(leaves)),
                                           self._out_leaves(), f"{self._where}")
        try:
            device, committed = (placement, True) if placement is not None else dispatch.pick_device(
                leaves, None, explicit)
        except dispatch.DeviceMismatchError:
            names = self._leaf_names(dyn_args, dyn_kwargs, static)
            raise dispatch.device_mismatch(leaves, names, f"{self._where}") from None
        # Inside a shard_map body, the mesh axes each argument varies along (the derivatives taken inside follow them)
        vma = nested_hints(leaves)
        key = (treedef, avals, static, config.trace_key(), device, ref_args,
               None if vma is None else (tuple(h.axes for h in vma), vma[0].mesh_axes, vma[0].typed))
        entry = self._signatures.get(key)
        if entry is None:
            if config.no_tracing:
                raise no_tracing_error(self._where + _defined_at(self.fun), avals)
            # (not for kiln's own library functions, kiln.numpy's: their traces are no news to the user)
            if config.explain_cache_misses and not retrace.is_kiln_function(self.fun):
                if self._last_key is not None:
                    retrace.explain_miss(self.__name__, self._last_key, key)
                elif not self._signatures.entries:
                    retrace.explain_first_trace(self.fun, self.__name__)
            entry = self._trace_once(key, avals, treedef, dyn_args, dyn_kwargs, static, device, committed, ref_args,
                                     vma)
        self._last_key = key
        return entry

    def _trace_once(self, key, avals, treedef, dyn_args, dyn_kwargs, static, device, committed,
                    ref_args: tuple[int, ...] = (), vma: list | None = None) -> _Entry:
        """Trace a new signature; threads that meet it at the same time wait for one trace."""
        sigs = self._signatures

        def trace() -> _Entry:
            start = time.perf_counter()
            entry = self._trace(avals, treedef, dyn_args, dyn_kwargs, static, device, committed, ref_args, vma)
            sigs.put(key, entry)
            if config.stale_value_warnings:
                sigs.baked = stale.captured_values(self.fun, self._watched_for_side_effects(static))
            sigs.history.note(self.fun, key, entry.arg_names, self.__name__, self._static_name)
            retrace.note_fresh_function(self.fun, self.__name__)
            retrace.log_trace(self.__name__, time.perf_counter() - start)
            return entry
        return sigs.once.get(("trace", key), lambda: sigs.get(key), trace)

    def _leaf_in_shardings(self, dyn_args: tuple, static: tuple, n_leaves: int) -> list | None:
        """``in_shardings`` per input leaf: a pytree prefix of the tuple of (dynamic) positional arguments, as
        JAX's: one sharding for every leaf, or a tuple with an entry per positional argument, each a sharding
        (or None) for the whole argument or a pytree of them matching its structure. PartitionSpecs take the
        mesh in context."""
        prefix = self._in_prefix
        if prefix is None:
            return None
        where = f"{self._where}"
        leaves = [resolve_spec(s, f"{where}: in_shardings") for s in prefix.leaves]
        if prefix.is_leaf:
            return leaves * n_leaves
        if not isinstance(self.in_shardings, tuple):
            raise JitArgumentError(
                f"{where}: in_shardings must be one sharding (for all arguments) or a tuple with one entry per "
                f"positional argument, got a {type(self.in_shardings).__name__}; wrap it in a tuple: "
                "in_shardings=(shardings,) for a function of one argument")
        if len(self.in_shardings) != len(dyn_args):
            raise JitArgumentError(
                f"{where}: in_shardings has {len(self.in_shardings)} entries but the function was called with "
                f"{len(dyn_args)} positional arguments; in_shardings must be one sharding (for all arguments) or "
                "a tuple with one entry (a sharding, None, or a pytree of them) per positional argument")

        def name(path: tuple) -> str:
            return "argument " + self._dyn_arg_name(path[0].idx, static) + tree_util.keystr(path[1:])
        out = shardings_per_leaf(leaves, prefix.treedef, tuple(dyn_args), f"{where}: in_shardings", name)
        return out + [None] * (n_leaves - len(out))  # keyword arguments: as their values are laid out

    def _out_leaves(self) -> tuple | None:
        """The leaves of ``out_shardings`` (PartitionSpecs resolved), or None."""
        prefix = self._out_prefix
        if prefix is None:
            return None
        return tuple(resolve_spec(s, f"{self._where}: out_shardings") for s in prefix.leaves)

    def _out_shardings_per_leaf(self, out_leaves: tuple, out_tree: Any) -> tuple:
        """One sharding (or None) per output leaf: ``out_shardings`` is a pytree prefix of the output."""
        prefix = self._out_prefix
        n = out_tree.num_leaves
        if prefix.is_leaf:
            return out_leaves * n
        dummy = tree_util.tree_unflatten(out_tree, [0] * n)
        return tuple(shardings_per_leaf(out_leaves, prefix.treedef, dummy,
                                             f"{self._where}: out_shardings",
                                             lambda path: "output" + tree_util.keystr(path)))

    def _explicit_device(self) -> runtime.Device | None:
        backend, device = self._device_spec
        if backend is None and device is None:
            return None
        return dispatch.device_of(backend, device)

    def _bad_leaf_error(self, leaves, dyn_args, dyn_kwargs, static) -> JitError:
        names = self._leaf_names(dyn_args, dyn_kwargs, static)
        for name, leaf in zip(names, leaves):
            try:
                abstractify(leaf)
            except TypeError:
                head = name.split("[")[0].split(".")[0]
                return JitError(
                    f"{self._where}: argument {name} is {a_type(leaf)} ({leaf!r:.60}), "
                    "which is not a valid array type. Pass an array, a scalar or a pytree of them, or mark "
                    f"the argument static with static_argnames='{head}' (static values must be hashable).")
        return JitError(f"{self._where}: invalid argument")

    def _trace(self, avals, treedef, dyn_args, dyn_kwargs, static, device, committed,
               ref_args: tuple[int, ...] = (), vma: list | None = None) -> _Entry:
        out_tree_box, consumed_box, ref_outs_box = [], [], []

        def flat_fun(*tracers):
            leaves = list(tracers)
            builder = current_builder()
            proxies = []
            for i in ref_args:  # a ref argument: the function gets a ref of this trace whose value is this input
                proxies.append(refs.stand_in(leaves[i]))
                leaves[i] = proxies[-1]
            a, k = tree_util.tree_unflatten(treedef, leaves)
            inputs = (a, k)
            a, k = self._merge(a, k, static)
            watched = self._watched_for_side_effects(static)
            before = trace_mutations.snapshot(watched) if watched else None
            out = self.fun(*a, **k)
            if before:
                trace_mutations.warn_rebound(self.__name__, before, self._signatures.stale_warned)
            if config.debug_key_reuse:
                consumed_box.append(consumption.consumed_leaves(inputs))
            out_leaves, out_tree = tree_util.tree_flatten(out)
            for path_leaf in out_leaves:
                _check_output(self.__name__, path_leaf)
            # The final values of the ref arguments, then of the refs it closes over and wrote: outputs too, after
            # the function's own (the entry's output tree is then (outputs, [final values])).
            written = [r for r in refs.escaping(builder) if r not in proxies]
            ref_outs_box.append(tuple(weakref.ref(r) for r in written))
            finals = [builder.ref_values.pop(r) for r in proxies + written]
            out_tree_box.append(tree_util.tree_structure((out, finals)) if finals else out_tree)
            return out_leaves + finals

        names = self._leaf_names(dyn_args, dyn_kwargs, static)
        # for shard_map's in_specs; inside a shard_map body, the varying mesh axes
        hints = device.in_shardings if isinstance(device, spmd.MeshPlacement) else vma
        closed, _ = trace_to_ir(flat_fun, avals, name=self.__name__, arg_names=names, input_hints=hints,
                                ref_constants=True)
        donated = self._donated_leaves(dyn_args, dyn_kwargs, static, len(avals))
        for i in ref_args:  # a ref's buffer is always donated: the program updates it in place (as JAX's)
            donated[i] = True
        out_tree = out_tree_box[0]
        if self._explicit_device() is None:
            mesh = spmd.program_mesh(closed.ir)  # a sharding constraint or a shard_map: it runs over that mesh
            if mesh is not None and self._follows_program_mesh(device, mesh):
                device, committed = spmd.MeshPlacement(mesh, spmd.program_in_shardings(closed.ir, mesh),
                                                       self._out_leaves()), True
            elif mesh is not None and mesh.shape_tuple == device.mesh.shape_tuple and \
                    set(mesh.devices.flat) != set(device.devices):
                # The same axes over other devices, which the lowering (it compares axes) cannot tell apart. As
                # JAX: one compiled computation runs on one set of devices; moving data to another mesh is the
                # runtime's job, between computations.
                raise spmd.MeshMismatchError(
                    f"{self._where}: its inputs are laid out over {spmd.mesh_text(device.mesh)}, but inside it a "
                    f"device_put, reshard, sharding constraint or shard_map names {spmd.mesh_text(mesh)}; a "
                    "compiled computation runs over one mesh and cannot move values to another. Call "
                    "kiln.device_put(x, NamedSharding(other_mesh, spec)) outside jit, between computations.")
        if isinstance(device, spmd.MeshPlacement) and device.out_shardings is not None:
            device = dataclasses.replace(device, out_shardings=self._out_shardings_per_leaf(device.out_shardings,
                                                                                          out_tree))
        return _Entry(closed, out_tree, device, committed, donated, names,
                      consumed_keys=consumed_box[0] if consumed_box else (), ref_args=ref_args,
                      ref_outs=ref_outs_box[0], ref_consts=any(isinstance(c, refs.Ref) for c in closed.consts))

    def _follows_program_mesh(self, device: Any, mesh: spmd.Mesh) -> bool:
        """Whether a program that names ``mesh`` runs over it rather than where its inputs put it: always from
        one device; from another mesh of the same devices (a pmap's result fed to another pmap) when no
        in/out_shardings tie it there (its inputs are then re-laid out, without a copy where the layout agrees)."""
        if isinstance(device, runtime.Device):
            return True
        return (device.mesh != mesh and self.in_shardings is None and self.out_shardings is None
                and sorted(d.id for d in device.devices) == sorted(d.id for d in mesh.devices.flat))

    def _donated_leaves(self, dyn_args, dyn_kwargs, static, n: int) -> list[bool]:
        if not self.donate_argnums and not self.donate_argnames:
            return [False] * n
        static_positions = sorted(w for w, _ in static if isinstance(w, int))
        flags = []
        for i, a in enumerate(dyn_args):
            orig = i
            for s in static_positions:
                if s <= orig:
                    orig += 1
            flags += [orig in self.donate_argnums] * len(tree_util.tree_leaves(a))
        for k in sorted(dyn_kwargs):  # dict leaves flatten in sorted key order
            flags += [k in self.donate_argnames] * len(tree_util.tree_leaves(dyn_kwargs[k]))
        return flags

    def _compiled(self, entry: _Entry, lowered: Any = None, compiler_options: tuple | None = None
                  ) -> dispatch.CompiledIR:
        """The executable of ``entry``, compiled once however many threads ask (from ``lowered``, the module a
        :class:`Lowered` holds, rather than lowering again, when given; with ``compiler_options``, pairs, rather
        than the function's, when given)."""
        if entry.compiled is None:
            self._signatures.once.get(("compile", id(entry)), lambda: entry.compiled,
                                      functools.partial(self._compile, entry, lowered, compiler_options))
        return entry.compiled

    def _warn_unusable_donations(self, entry: _Entry, positions: Sequence[int]) -> None:
        """JAX's warning for donated arguments no output can reuse (same wording first, so that a filter written
        for JAX's warning also silences kiln's)."""
        if not positions:
            return
        n_consts = len(entry.closed.ir.constvars)
        invars = entry.closed.ir.invars
        which = ", ".join(f"{entry.arg_names[p - n_consts]} {invars[p - n_consts].aval.str_short()}"
                          for p in positions)
        warnings.warn(f"Some donated buffers were not usable: {which} ({self._where}: no output has the shape and "
                      "dtype of these arguments, so XLA cannot write an output into their buffers; donate only "
                      "arguments the function returns updated). See "
                      "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", UserWarning,
                      stacklevel=source_info.user_stacklevel())

    def _compile(self, entry: _Entry, lowered: Any = None, compiler_options: tuple | None = None
                 ) -> dispatch.CompiledIR:
        ir = _program_ir(entry.closed)
        donated = _donated_consts(entry) + entry.donated
        options = self._compiler_options if compiler_options is None else compiler_options
        if lowered is None:
            lowered = self._lower_program(ir, entry, donated)
        start = time.perf_counter()
        try:
            compiled = self._compile_program(ir, entry, donated, lowered, options)
        except runtime.executable.CompilerOptionError as e:  # XLA rejected an option: say whose
            raise type(e)(f"{self._where}: {e}") from e.__cause__
        if isinstance(entry.device, spmd.MeshPlacement):
            replicated = spmd.NamedSharding(entry.device.mesh, spmd.PartitionSpec())
            put = functools.partial(spmd.to_buffer, sharding=replicated)
        else:
            self._warn_unusable_donations(entry, compiled.lowered.unusable_donations)
            # Outputs carry the very aval objects of equal inputs of this signature: a loop feeding them back
            # in (a training step's params and optimizer state) then finds its signature by identity checks
            # rather than an aval comparison per leaf.
            same = {v.aval: v.aval for v in ir.invars if type(v.aval) is ShapedArray}
            outs = [same.get(a, a) if type(a) is ShapedArray else a for a in compiled.out_avals]
            if any(a is not b for a, b in zip(outs, compiled.out_avals)):
                compiled = dataclasses.replace(compiled, out_avals=outs)
            put = functools.partial(dispatch.to_buffer, device=entry.device)
        kept_consts = compiled.kept[:len(ir.constvars)]
        # Published together, compiled last: an interrupted compile leaves the entry untouched.
        # (a ref among the constants is read at each call: see _execute)
        entry.const_buffers = [c if isinstance(c, refs.Ref) else put(c)
                               for c, k in zip(entry.closed.consts, kept_consts) if k]
        entry.compiled = compiled
        retrace.log_compile(f"jit({self.__name__})", time.perf_counter() - start)
        return compiled

    def _lower_program(self, ir: IR, entry: _Entry, donated: list[bool]) -> Any:
        """The StableHLO module of ``ir`` (the program of ``entry``), its lowering timed (``log_compiles``)."""
        start = time.perf_counter()
        if isinstance(entry.device, spmd.MeshPlacement):
            lowered = spmd.lower_ir(ir, entry.device, donated=donated, keep_unused=self.keep_unused,
                                    n_consts=len(ir.constvars), debug_name=self.__name__)
        else:
            lowered = dispatch.lower_ir(ir, donated=donated, keep_unused=self.keep_unused, device=entry.device,
                                        debug_name=self.__name__)
        retrace.log_lowering(f"jit({self.__name__})", time.perf_counter() - start)
        return lowered

    def _compile_program(self, ir: IR, entry: _Entry, donated: list[bool], lowered: Any, options: tuple) -> Any:
        if isinstance(entry.device, spmd.MeshPlacement):
            return spmd.compile_ir(ir, entry.device, donated=donated, keep_unused=self.keep_unused,
                                   n_consts=len(ir.constvars), debug_name=self.__name__, lowered=lowered,
                                   compiler_options=options)
        return dispatch.compile_ir(ir, entry.device, donated=donated, keep_unused=self.keep_unused,
                                   debug_name=self.__name__, lowered=lowered, compiler_options=options)

    def _execute(self, entry: _Entry, leaves: list) -> Any:
        if config.no_execution:  # (the fast paths do not get here: setting it changed dispatch_epoch)
            raise no_execution_error(self._where)
        compiled = self._compiled(entry)
        if any(entry.donated):
            for leaf, donated in zip(leaves, entry.donated):
                if donated and type(leaf) is Array:
                    # A cached host view pins the buffer, and XLA silently skips donating a pinned buffer.
                    leaf._npy = None
        device = entry.device
        kept = compiled.kept[len(entry.closed.ir.constvars):]
        buffers = list(entry.const_buffers)
        if entry.ref_consts:  # the refs it closes over, as they are now
            written = {id(w()) for w in entry.ref_outs}
            buffers = [self._ref_buffer(b, device, id(b) in written) if isinstance(b, refs.Ref) else b
                       for b in buffers]
        try:
            if isinstance(device, spmd.MeshPlacement):
                passed = [spmd.to_buffer(leaf, s) if k else None
                          for leaf, s, k in zip(leaves, device.in_shardings, kept)]
            else:
                passed = [dispatch.to_buffer(leaf, device) if k else None for leaf, k in zip(leaves, kept)]
            buffers += [b for b, k in zip(passed, kept) if k]
            # Committed-ness is per call, not per entry: one signature serves committed and uncommitted inputs.
            committed = self._device_spec != (None, None) or any(
                type(leaf) is Array and leaf._committed for leaf in leaves)
            outs = compiled.run(buffers, committed)
        except runtime.DeletedBufferError:
            raise self._deleted_error(entry, leaves) from None
        if any(entry.donated):
            # A donated array that reached the program as a copy (moved to another device or re-laid out over a
            # mesh: a pmap's input) is deleted as JAX deletes it, so that donating frees its memory either way
            # (one that no output could take stays, as it does when passed as it is).
            n_consts = len(entry.closed.ir.constvars)
            unusable = {p - n_consts for p in compiled.lowered.unusable_donations}
            for i, (leaf, buf, donated) in enumerate(zip(leaves, passed, entry.donated)):
                if donated and i not in unusable and buf is not None and type(leaf) is Array and buf is not leaf._buf:
                    leaf.delete()
        # debug_nans/debug_infs: a NaN in an output is located by re-running op by op
        if config._debug_special and not entry.ref_consts:
            nan_check.check_jit(self.__name__, entry.closed.ir, entry.closed.consts, leaves, outs, any(entry.donated))
        return tree_util.tree_unflatten(entry.out_tree, outs)

    @staticmethod
    def _ref_buffer(ref: Any, device: Any, donated: bool) -> Any:
        """The buffer of a closed-over ref's value; ``donated`` where the program writes the ref (_donated_consts)."""
        value = refs.owned(ref) if donated else refs.read(ref)
        if donated and type(value) is Array:
            value._npy = None  # (a cached host view pins the buffer, and XLA silently skips donating a pinned one)
        if isinstance(device, spmd.MeshPlacement):
            return spmd.to_buffer(value, spmd.NamedSharding(device.mesh, spmd.PartitionSpec()))
        return dispatch.to_buffer(value, device)

    def _deleted_error(self, entry: _Entry, leaves: list) -> Exception:
        for name, leaf in zip(entry.arg_names, leaves):
            if type(leaf) is Array and leaf.is_deleted():
                return runtime.DeletedBufferError(
                    f"{self._where}: argument {name} refers to a deleted array: it was donated to an "
                    "earlier call (donate_argnums/donate_argnames) or deleted with .delete(). A donated array "
                    "cannot be used again; use the function's output instead.")
        for i, (name, leaf, donated) in enumerate(zip(entry.arg_names, leaves, entry.donated)):
            other = next((n for j, (n, x) in enumerate(zip(entry.arg_names, leaves)) if j != i and x is leaf), None)
            if donated and type(leaf) is Array and other is not None:
                return runtime.DeletedBufferError(
                    f"{self._where}: argument {name} is donated, but the same array is also passed as "
                    f"argument {other}; a donated buffer cannot be read by the same call. Pass a copy, or do not "
                    "donate it.")
        return runtime.DeletedBufferError(f"{self._where}: an argument was deleted or donated")

    def _call_traced(self, entry: _Entry, leaves: list) -> Any:
        """Inside another trace: record one ``jit_call`` equation instead of running."""
        if self._compiler_options:  # the equation joins the enclosing program, compiled without them (JAX raises too)
            raise JitArgumentError(
                f"{self._where}: compiler_options={dict(self._compiler_options)} apply to the program of a top-level "
                "call only, and this call is inside a trace (another jit, make_jaxpr, grad, vmap, a control-flow "
                "body), where it becomes part of the enclosing program. Pass compiler_options to the outermost "
                "kiln.jit instead, or call this function outside the transformation.")
        if entry.call_ir is None:
            ir = entry.closed.ir
            entry.call_ir = ClosedIR(IR([], ir.constvars + ir.invars, ir.eqns, ir.outvars), [])
        consts = entry.closed.consts
        if entry.ref_consts:  # (traced at the top level) the refs it reads, as the enclosing trace has them
            consts = [refs.read(c) if isinstance(c, refs.Ref) else c for c in consts]
        if self._inline and not calls_kept():  # staging: the body dissolves into the enclosing IR (JAX's inline)
            outs = eval_ir(entry.closed.ir, consts, leaves)
        elif self._inline:  # under an eager transformation: a call marked inline (see core/call.py)
            outs = call_p.bind(*consts, *leaves, ir=entry.call_ir, name=self.__name__, inline=True)
        else:
            outs = call_p.bind(*consts, *leaves, ir=entry.call_ir, name=self.__name__)
        return tree_util.tree_unflatten(entry.out_tree, outs)

    # -- ahead-of-time -------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> Traced:
        """Trace for these arguments (without compiling); ``.ir`` is the kiln IR."""
        dyn_args, dyn_kwargs, static = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        try:
            entry = self._entry(leaves, treedef, dyn_args, dyn_kwargs, static)
        except _RefArguments:
            raise refs.RefError(f"{self._where}.trace/.lower: an argument is a Ref; ahead-of-time tracing takes "
                                "arrays (pass ref[...], or kiln.ShapeDtypeStruct of its shape and dtype)") from None
        return Traced(self, entry, treedef)

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower for these arguments; ``.as_text()`` is the StableHLO module."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """The output's shapes and dtypes (``ShapeDtypeStruct`` leaves, as JAX's) without running anything."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        self._signatures.clear()
        if self._cpp is not None:
            self._cpp._clear_cache()

    def _cache_size(self) -> int:
        return len(self._signatures.entries)

    def _executables(self) -> list:
        """The executables this function holds (one per compiled signature)."""
        return [e.compiled.executable for e in list(self._signatures.entries.values()) if e.compiled is not None]

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<kiln.jit of {self.__qualname__}>"


@dataclass(frozen=True)
class ArgInfo:
    """One argument leaf of a traced signature (``jax.stages.ArgInfo``): its abstract value and whether it is
    donated."""
    _aval: ShapedArray
    donated: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self._aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self._aval.dtype


class _Stage:
    """What each stage (:class:`Traced`, :class:`Lowered`, :class:`Compiled`) tells of its signature, as
    ``jax.stages.Stage``: ``in_tree`` is the structure of (dynamic positional arguments, keyword arguments),
    ``out_tree`` the output's."""
    def __init__(self, jitted: JittedFunction, entry: _Entry, in_tree: Any):
        self.jitted, self.entry, self.in_tree = jitted, entry, in_tree  # in_tree: of (dynamic args, kwargs)

    @property
    def args_info(self) -> Any:
        """The arguments' :class:`ArgInfo` (abstract value, donated), in ``in_tree``'s structure."""
        return self.in_tree.unflatten([ArgInfo(a, d) for a, d in zip(self.entry.closed.ir.in_avals,
                                                                     self.entry.donated)])

    @property
    def in_avals(self) -> Any:
        """The arguments' abstract values, in ``in_tree``'s structure."""
        return self.in_tree.unflatten(list(self.entry.closed.ir.in_avals))

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The positions of the donated arguments among the flattened ones."""
        return tuple(i for i, d in enumerate(self.entry.donated) if d)

    @property
    def out_tree(self) -> Any:
        return self.entry.out_tree

    @property
    def out_info(self) -> Any:
        """The outputs as ``ShapeDtypeStruct``s (with their shardings once compiled), in ``out_tree``'s
        structure."""
        avals = self.entry.closed.ir.out_avals
        shardings = self._output_shardings_flat() or [None] * len(avals)
        return self.out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, sharding=s, weak_type=a.weak_type)
                                        for a, s in zip(avals, shardings)])

    def _output_shardings_flat(self) -> list | None:
        return None  # known once compiled


class Traced(_Stage):
    @property
    def fun_name(self) -> str:
        return self.jitted.__name__

    @property
    def out_avals(self) -> Any:
        """The outputs' abstract values, in ``out_tree``'s structure."""
        return self.out_tree.unflatten(list(self.entry.closed.ir.out_avals))

    @property
    def ir(self) -> ClosedIR:
        return self.entry.closed

    @property
    def jaxpr(self) -> ClosedIR:
        """The traced IR (JAX's ``Traced.jaxpr``, a ClosedJaxpr); the same as ``ir``."""
        return self.entry.closed

    def lower(self) -> Lowered:
        return Lowered(self.jitted, self.entry, self.in_tree)


class Lowered(_Stage):
    """A traced and lowered function: inspect its StableHLO, then compile it."""

    def __init__(self, jitted: JittedFunction, entry: _Entry, in_tree: Any):
        super().__init__(jitted, entry, in_tree)
        self._lowered = jitted._lower_program(_program_ir(entry.closed), entry, _donated_consts(entry) + entry.donated)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The StableHLO module as MLIR text; ``debug_info=True`` adds each operation's location
        (``loc("jit(f)/mul"("file.py":12:4))``: the primitive and the user's line that created it).
        ``dialect="hlo"``: the module as XLA's HLO text, before XLA's optimisations (as JAX's)."""
        if dialect == "hlo":
            return runtime.module_hlo_text(self._lowered.as_text(debug_info=debug_info), debug_info=debug_info)
        _check_dialect("as_text", dialect)
        return self._lowered.as_text(debug_info=debug_info)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The module itself: an MLIR ``ir.Module`` of the StableHLO (the default), or with ``dialect="hlo"``
        XLA's ``XlaComputation`` before its optimisations (``.as_hlo_text()``), as JAX's."""
        if dialect == "hlo":
            return runtime.module_hlo_computation(self._lowered.as_text())
        _check_dialect("compiler_ir", dialect)
        return self._lowered.module

    def cost_analysis(self) -> dict[str, float] | None:
        """XLA's cost estimates of the program before its optimisations (``flops``, ``bytes accessed``, ...), a
        dict as JAX's; None when the backend reports none. ``compile().cost_analysis()`` is the optimised
        program's."""
        device = self.entry.device
        return runtime.module_cost_analysis(self._lowered.as_text(), getattr(device, "devices", (device,))[0])

    @property
    def ir(self) -> ClosedIR:
        return self.entry.closed

    def compile(self, compiler_options: CompilerOptions | None = None) -> Compiled:
        """Compile the module for its signature. ``compiler_options``: XLA's options for this compilation, over
        those given to ``kiln.jit`` (a name given to both takes this value). Without any, the program is the one
        the jitted function calls (compiled once); with some, a program of its own."""
        jitted = self.jitted
        options = _compiler_option_items(f"{jitted._where}.lower(...).compile", compiler_options)
        entry = self.entry
        if options:
            options = tuple(sorted(dict(jitted._compiler_options + options).items()))
            if _options_key(options) != _options_key(jitted._compiler_options):
                # not the signature's entry: the function's own calls must not get this program
                entry = dataclasses.replace(entry, compiled=None, const_buffers=None, call_ir=None)
        jitted._compiled(entry, self._lowered, options or None)  # the module above, not a second lowering
        return Compiled(jitted, entry, self.in_tree)


def _check_dialect(method: str, dialect: str | None) -> None:
    if dialect not in (None, "stablehlo"):
        raise JitError(f"kiln: Lowered.{method}(dialect={dialect!r}): the dialects are 'stablehlo' (the "
                       "default) and 'hlo'")


class Compiled(_Stage):
    """A compiled function for one signature. Call it with the dynamic arguments of that signature: as in
    JAX, the static ones (``static_argnums``/``static_argnames``) were fixed when it was traced and are not
    passed again, and a weakly typed argument (a Python scalar) matches a strongly typed one of its dtype."""

    def __call__(self, *args, **kwargs):
        jitted, entry = self.jitted, self.entry
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        if any(isinstance(x, Tracer) for x in leaves):
            raise JitError(f"kiln: {jitted.__name__} was lowered and compiled for one signature and cannot be "
                           "transformed (vmap, grad, jit) or called inside a traced function; transform the function "
                           "and then lower and compile it, or call the kiln.jit function itself")
        want = entry.closed.ir.in_avals
        try:
            got = [x.aval if type(x) is Array else abstractify(x) for x in leaves]
        except TypeError:
            got = None
        if treedef != self.in_tree or got is None or any(
                (a.shape, a.dtype) != (w.shape, w.dtype) for a, w in zip(got, want)):
            static = " (without the static arguments)" if jitted.static_argnums or jitted.static_argnames else ""
            shown = "arguments of other types" if got is None else f"({', '.join(a.str_short() for a in got)})"
            if treedef != self.in_tree:
                shown = f"arguments {treedef} where it takes {self.in_tree}"
            raise JitError(f"kiln: {jitted.__name__} was compiled for arguments "
                           f"({', '.join(a.str_short() for a in want)}){static} but called with {shown}"
                           f"{self._mismatches(args, kwargs, got, want) if treedef == self.in_tree else ''}; call it "
                           "with arguments of those shapes and dtypes, or lower and compile again for these")
        if entry.ref_outs:  # it writes refs it closes over: their final values go back into them
            return jitted._run_with_refs(entry, leaves, ())
        return jitted._execute(entry, leaves)

    def _mismatches(self, args: tuple, kwargs: dict, got: list | None, want: list) -> str:
        """Each argument whose shape or dtype differs, by name (as JAX's "Argument 'x' compiled with ...")."""
        if got is None:
            return ""
        names = self.jitted._leaf_names(args, kwargs, tuple((i, None) for i in self.jitted.static_argnums))
        return "".join(f"; argument {name} was compiled for {w.str_short()} and called with {a.str_short()}"
                       for name, a, w in zip(names, got, want) if (a.shape, a.dtype) != (w.shape, w.dtype))

    def as_text(self) -> str:
        """The optimised HLO XLA compiled (as JAX's; ``Lowered.as_text()`` is the StableHLO)."""
        return self.entry.compiled.executable.hlo_text()

    def cost_analysis(self) -> dict[str, float] | None:
        """XLA's cost estimates of the compiled program (``flops``, ``bytes accessed``, ``transcendentals``,
        ...), a dict as JAX's; None when the backend reports none."""
        return self.entry.compiled.executable.cost_analysis()

    def memory_analysis(self) -> runtime.MemoryAnalysis | None:
        """The compiled program's memory per device (``argument_size_in_bytes``, ``output_size_in_bytes``,
        ``temp_size_in_bytes``, ``generated_code_size_in_bytes``, ...); None when the backend reports none."""
        return self.entry.compiled.executable.memory_analysis()

    def runtime_executable(self) -> Any:
        """kiln's executable of the program (JAX's: an object for debugging, of no promised type)."""
        return self.entry.compiled.executable

    @property
    def input_shardings(self) -> Any:
        """Each argument's sharding, in ``in_tree``'s structure."""
        placement = self.entry.device
        if isinstance(placement, spmd.MeshPlacement):
            return self.in_tree.unflatten(list(placement.in_shardings))
        return self.in_tree.unflatten([SingleDeviceSharding(placement)] * self.in_tree.num_leaves)

    @property
    def output_shardings(self) -> Any:
        """Each output's sharding, in ``out_tree``'s structure."""
        return self.out_tree.unflatten(self._output_shardings_flat())

    @property
    def input_formats(self) -> Any:
        """Each argument's format (XLA's default layout, kiln's only, with its sharding), in ``in_tree``'s
        structure."""
        shardings = self.in_tree.flatten_up_to(self.input_shardings)
        return self.in_tree.unflatten(formats_of(shardings, self.entry.closed.ir.in_avals))

    @property
    def output_formats(self) -> Any:
        """Each output's format (XLA's default layout with its sharding), in ``out_tree``'s structure."""
        return self.out_tree.unflatten(formats_of(self._output_shardings_flat(), self.entry.closed.ir.out_avals))

    def _output_shardings_flat(self) -> list | None:
        compiled = self.entry.compiled
        if isinstance(compiled, spmd.CompiledSPMD):
            return list(compiled.out_shardings)
        return [SingleDeviceSharding(self.entry.device)] * len(self.entry.closed.ir.out_avals)


# Python scalars the C++ path converts itself, with the same dtypes and weak types as kiln.dtypes (a bool is
# a strong bool; an int, float or complex is weak). Subclasses (IntEnum, ...) are left to the Python path.
_CPP_SCALARS = frozenset({bool, int, float, complex})


def _cpp_takes(x: Any, device) -> bool:
    """Whether jaxlib's C++ dispatch can take ``x`` as it is: a kiln array already on ``device``, a Python
    scalar or a NumPy scalar of a standard numeric dtype (converted in C++, canonicalised as kiln does).

    NumPy *arrays* stay on the Python path, which copies them: the C++ transfer may alias their memory
    (zero-copy on CPU) while the computation runs asynchronously, so changing the array right after the
    call could change the result (JAX's behaviour; tests/frontend/test_fast_dispatch.py checks kiln's).
    A Python int out of int32's range makes the C++ raise; the call then falls back to the Python path,
    which raises kiln's IntegerOverflowError."""
    t = type(x)
    if t is Array:
        return held_on(x, device)
    if isinstance(x, np.generic):
        return x.dtype.kind in "biufc"
    return t in _CPP_SCALARS


class _Static:
    """A static argument in the cache key: hashed and compared by value."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: Any, h: int):
        self.value, self._hash = value, h

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, _Static) or type(self.value) is not type(other.value):
            return False
        try:
            return bool(self.value == other.value)
        except Exception:
            return False


def _hashable_static(jitted: JittedFunction, value: Any, where: str, name: str) -> _Static:
    if isinstance(value, (Array, Tracer)):
        raise JitArgumentError(f"kiln.jit({jitted.__name__}): static argument {name!r} ({where}) is an array; "
                               "static arguments must be hashable Python values. Pass it as a normal (traced) "
                               "argument, or convert it with .item()/.tolist() if it really is a constant.")
    try:
        h = hash(value)
    except TypeError:
        hint = " Pass a tuple instead of a list." if isinstance(value, list) else (
            " Pass a tuple of items instead of a dict." if isinstance(value, dict) else "")
        raise JitArgumentError(f"kiln.jit({jitted.__name__}): static argument {name!r} ({where}) has unhashable type "
                       f"{type(value).__name__}; static arguments must be hashable.{hint} Or remove it "
                       "from static_argnums/static_argnames to trace it as an array.") from None
    return _Static(value, h)


def _defined_at(fun: Callable) -> str:
    """`` (defined at file:line)`` of a user's function, for messages; empty for kiln's own and other callables."""
    if retrace.is_kiln_function(fun):
        return ""
    code = getattr(retrace.unwrap_function(fun), "__code__", None)  # (None: a callable object, a partial)
    return "" if code is None else f" (defined at {code.co_filename}:{code.co_firstlineno})"


def _check_output(name: str, leaf: Any) -> None:
    if isinstance(leaf, (Tracer, Array)) or isinstance(leaf, dtypes.PY_SCALARS):
        return
    if isinstance(leaf, refs.Ref):
        raise refs.RefError(f"kiln.jit({name}): the function returned a mutable array reference (a Ref), but refs "
                            "cannot be returned from a jitted function (as in JAX): return its value, ref[...], or "
                            "write to a ref passed in")
    try:
        abstractify(leaf)
    except TypeError:
        raise JitError(f"kiln.jit({name}): the function returned {a_type(leaf)} ({leaf!r:.60}); "
                       "jitted functions must return arrays, scalars or pytrees of them") from None


def _signature_params(fun: Callable):
    try:
        return list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        device: runtime.Device | None = None, backend: str | None = None, in_shardings: Any = None,
        out_shardings: Any = None, inline: bool = False, compiler_options: CompilerOptions | None = None):
    """Compile ``fun`` with XLA: trace it once per argument signature, then call the executable.

    Parameters
    ----------
    fun : callable
        A pure function of arrays (and pytrees of arrays).
    static_argnums, static_argnames : int/str or sequence
        Arguments treated as compile-time constants: hashable Python values; a new value retraces.
    donate_argnums, donate_argnames : int/str or sequence
        Arguments whose device buffers the computation may reuse for outputs. They are invalid
        after the call.
    keep_unused : bool
        Keep arguments the function does not use as parameters of the compiled program.
    device, backend :
        Run on this device / the first device of this backend instead of following the inputs.
    in_shardings, out_shardings : kiln.sharding.NamedSharding, PartitionSpec, None, or a pytree of them
        Lay the inputs and the outputs out over a device mesh; XLA's SPMD partitioner splits the program.
        As in JAX, ``in_shardings`` is a pytree prefix of the tuple of positional arguments (one sharding for
        all of them, or a tuple with an entry per argument, itself a sharding or a pytree matching the
        argument, e.g. a dict of parameters) and ``out_shardings`` a pytree prefix of the output. None:
        inputs keep their own layouts, outputs get the partitioner's choice. A ``PartitionSpec`` takes the
        mesh in context (``kiln.set_mesh(mesh)``).
    inline : bool
        As JAX's: called inside a staging trace (another jit, make_jaxpr, a loop body), the function's equations
        go into the enclosing IR instead of one ``jit_call`` equation; under an eager grad/vjp its linear half
        runs primitive by primitive (JAX's jitted jax.numpy functions are ``inline=True``).
    compiler_options : dict
        XLA's options for this function's programs, as JAX's: the names of XLA's DebugOptions fields (e.g.
        ``{"xla_backend_optimization_level": 0}``, ``{"xla_disable_hlo_passes": "fusion"}``) or
        ``optimization_level``, ``exec_time_optimization_effort``, ``memory_fitting_level``,
        ``memory_fitting_effort``, with str, bool, int or float values. XLA checks them when it compiles (an
        unknown name or a value it cannot read raises then). Only for top-level calls: called inside another
        trace, the function raises.

    Returns
    -------
    JittedFunction
        Callable like ``fun``; also has ``.lower(*args)``, ``.trace(*args)``, ``.eval_shape``.
    """
    options = dict(static_argnums=static_argnums, static_argnames=static_argnames,
                   donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                   keep_unused=keep_unused, device=device, backend=backend, in_shardings=in_shardings,
                   out_shardings=out_shardings, inline=inline, compiler_options=compiler_options)
    if fun is None:
        return lambda f: JittedFunction(f, **options)
    return JittedFunction(fun, **options)


def _check_shardings(name: str, in_shardings: Any, out_shardings: Any) -> tuple[Any, Any]:
    """``in_shardings``/``out_shardings`` as jit keeps them: pytrees whose leaves are NamedShardings,
    PartitionSpecs or None (a top-level list becomes a tuple, as in JAX)."""
    def check(value: Any, what: str) -> Any:
        if isinstance(value, list):
            value = tuple(value)
        leaves, treedef = flatten_shardings(value)
        if any(isinstance(leaf, Format) for leaf in leaves):  # a layout (kiln's: the default) with a sharding
            leaves = [resolve_format(leaf, None, f"kiln.jit({name}): {what}") for leaf in leaves]
            value = tree_util.tree_unflatten(treedef, leaves)
        for leaf in leaves:
            if not (leaf is None or isinstance(leaf, (spmd.NamedSharding, spmd.PartitionSpec,
                                                      SingleDeviceSharding))):
                raise JitError(f"kiln.jit({name}): {what} must be a kiln.sharding.NamedSharding, a PartitionSpec "
                               "(with a mesh in context), a SingleDeviceSharding, None, or a pytree of them; got "
                               f"{leaf!r:.80}" + (f" in {value!r:.80}" if leaf is not value else ""))
        return value
    return check(in_shardings, "in_shardings"), check(out_shardings, "out_shardings")


def _one_device_shardings(name: str, in_shardings: Any, out_shardings: Any) -> tuple[Any, Any, Any]:
    """``(in_shardings, out_shardings, device)``: where the shardings given are SingleDeviceShardings of one
    device (JAX's, e.g. the formats of another compiled function's inputs), the function runs on that device, as
    ``jit(device=...)`` (its arguments go there, its results are committed there), with no shardings left."""
    leaves = flatten_shardings(in_shardings)[0] + flatten_shardings(out_shardings)[0]
    singles = [leaf for leaf in leaves if isinstance(leaf, SingleDeviceSharding)]
    if not singles:
        return in_shardings, out_shardings, None
    if len({s._device for s in singles}) > 1 or any(s._memory is not None for s in singles) or \
            any(isinstance(leaf, (spmd.NamedSharding, spmd.PartitionSpec)) for leaf in leaves):
        raise JitError(f"kiln.jit({name}): kiln takes SingleDeviceShardings in in_shardings/out_shardings only when "
                       "every sharding given is a SingleDeviceSharding of one device in its default memory (the "
                       f"function then runs on that device); got {[v for v in leaves if v is not None]!r:.160}. "
                       "Use NamedShardings over one mesh instead")
    return None, None, singles[0]._device


@dataclass(frozen=True)
class _ShardingPrefix:
    """A pytree of shardings, flattened (hashable: part of the jit cache's options)."""
    leaves: tuple
    treedef: Any

    @property
    def is_leaf(self) -> bool:
        return tree_util.treedef_is_leaf(self.treedef)

    @staticmethod
    def of(value: Any) -> _ShardingPrefix | None:
        if value is None:
            return None
        leaves, treedef = flatten_shardings(value)
        return _ShardingPrefix(tuple(leaves), treedef)


def make_ir(fun: Callable, *, static_argnums=None, static_argnames=None) -> Callable[..., ClosedIR]:
    """``make_ir(f)(*args)`` is the kiln IR of ``f`` for these arguments (as ``jax.make_jaxpr``)."""
    jitted = fun if isinstance(fun, JittedFunction) else JittedFunction(
        fun, static_argnums=static_argnums, static_argnames=static_argnames)

    def traced(*args, **kwargs) -> ClosedIR:
        return jitted.trace(*args, **kwargs).ir
    return traced


def _small_host_value(const: Any) -> np.ndarray | None:
    """The host value of a closed-over array of at most INLINE_CONSTANT_SIZE elements (read once, when the program
    is lowered), else None: larger ones stay parameters of the program, not constants XLA compiles in."""
    if type(const) is not Array or const.aval.size > INLINE_CONSTANT_SIZE:
        return None
    try:
        return np.asarray(const)
    except runtime.KilnRuntimeError:  # e.g. deleted: as a parameter, the launch explains it
        return None


def _donated_consts(entry: _Entry) -> list[bool]:
    """Which constants of ``entry``'s program are donated: the refs it closes over and writes, whose buffers it
    then updates in place (as JAX's; a ref owns its buffer: reading or writing a whole ref copies)."""
    written = {id(w()) for w in entry.ref_outs}
    return [isinstance(c, refs.Ref) and id(c) in written for c in entry.closed.consts]


def _program_ir(closed: ClosedIR) -> IR:
    """The IR a jitted function's program is lowered from: its small closed-over arrays read as constants, as JAX
    writes closed-over arrays into its modules (XLA folds them as JAX's, so the programs round alike)."""
    return passes.read_constants_inline(closed.ir, [_small_host_value(c) for c in closed.consts])


def call_cpp(jitted: JittedFunction, args: tuple, kwargs: dict) -> Any:
    """Call ``jitted`` through its C++ dispatch function, or its Python path where the C++ cannot take the
    call."""
    cpp = jitted._cpp
    if cpp is None:  # no C++ dispatch in this process (see kiln.runtime.fastpath)
        return jitted._call(*args, **kwargs)
    try:
        bound = jitted._mesh_bound
        if bound is None:
            return cpp(*args, **kwargs)
        bound.before_foreign_launch()
        out = cpp(*args, **kwargs)
        _after_cpp_launch(bound, out)
        return out
    except BaseException as e:
        if runtime.fastpath.raised_in_miss(e):
            # Tracing or compiling failed (or was interrupted) inside the C++ path's miss: the error
            # propagates once, and the C++ stops treating that signature as Python-only.
            cpp._clear_cache()
            raise
        if not isinstance(e, Exception) or isinstance(e, runtime.KilnRuntimeError):
            raise
        # A jaxlib error from the C++ path itself (e.g. a deleted argument): the Python path explains it.
    return jitted._call(*args, **kwargs)


def _after_cpp_launch(exe: runtime.SpmdExecutable, out: Any) -> None:
    """After a C++ launch of a function with a mesh program: account for the execution as that program's own
    launches do (its first output array stands for it; another signature's output too, at worst waiting early)."""
    for leaf in tree_util.tree_leaves(out):
        if type(leaf) is Array:
            exe.after_foreign_launch(leaf._buf)
            return


def explain_cache_misses(enabled: bool = True):
    """``with kiln.explain_cache_misses(): ...`` warns, whenever a jitted function is traced again,
    which part of its cache key changed (argument structure, shapes/dtypes, static arguments, config
    flags or device). Same as the ``explain_cache_misses`` config flag."""
    return config.override("explain_cache_misses", enabled)
