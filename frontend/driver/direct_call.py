"""The last signature of a jitted function whose arguments are kiln arrays, Python scalars and NumPy arrays
(copied to the device at each call), launched without jaxlib's C++ dispatch.

jaxlib's C++ ``pjit`` path checks a signature in C++, but a kiln array is a Python wrapper around a jaxlib
array, so every argument and every result costs a Python callback there (flatten, unflatten), and the
signature includes every jit-key config flag registered in the process (JAX's too, when JAX is loaded). For
the calls where latency matters most (small functions of a few arrays: ``f(x, y)``, eager ``kiln.numpy``
ops) a check of each argument's (aval, device, committed, sharding) against the last call's, by identity
first, then one launch of the executable, is cheaper; static options (``axis=0``) match by type and value
(:class:`StaticOptionsCall`). Pytrees of Python's containers holding arrays (a training step's parameters,
keyword arguments included) are flattened by jaxlib's C++ pytree code with the arrays as leaves
(:class:`PytreeCall`); donated arguments too (their cached host views dropped first, as the Python path does).
Anything else (registered pytree classes, Python scalars inside containers, host callbacks, arrays laid out
otherwise than the program takes them) takes the other paths.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from kiln import runtime

from ..core import dtypes, tree_util
from ..core.config import config, dispatch_epoch
from .array import Array, held_on
from .dispatch import to_buffer

# Python scalars the path takes: converted as the other paths convert them (kiln.dtypes: a weak float,
# int or complex, a strong bool).
_SCALARS = frozenset({bool, int, float, complex})

_new_object = object.__new__
_flat_of, _aux_of, _buf_of = operator.attrgetter("_flat"), operator.itemgetter(1), operator.attrgetter("_buf")


class LaunchFailed(runtime.KilnRuntimeError):
    """A direct launch raised (e.g. on a deleted argument). ``run`` raises it, rather than returning None as for a
    call that does not match, so that the caller goes straight to its Python path, which explains the error
    without launching again: every failed launch has PJRT log an error line."""


class DirectCall:
    """One compiled signature: per argument, the ``Array._flat`` aux tuple it takes (or a :class:`ScalarSlot`),
    and what to launch. ``run(args)`` is the call.

    The plain signatures (one or two arrays in, one array out, no constants: ``f(x, y)``, every eager
    ``kiln.numpy`` op on arrays) are also matched inline, arguments by identity, by the two entry points that
    call them (``JittedFunction.__call__`` and ``eager_jit``'s wrapper, the same lines in both): a Python call
    costs a tenth of a microsecond on a path of under one microsecond. Their fallback is ``run`` of each
    of the function's recent signatures (``_Signatures.run_direct`` in jit.py)."""

    __slots__ = ("auxes", "epoch", "start", "finish", "prefix", "out_auxes", "single", "arity", "aux0", "aux1",
                 "out_aux", "donated")

    def __init__(self, auxes: tuple, executable: Any, prefix: list, out_auxes: tuple, single: bool,
                 donated: tuple[int, ...] = ()) -> None:
        self.auxes = auxes            # per argument: (aval, device, committed, sharding), or a ScalarSlot
        self.epoch = dispatch_epoch.current   # the flags that change programs, as they were
        self.start, self.finish = executable.launcher()  # the launch is finish(start(buffers))
        self.prefix = prefix          # buffers passed ahead of the arguments (the program's constants)
        out_auxes = _reuse_argument_auxes(out_auxes, auxes)
        self.out_auxes = out_auxes    # per output: its aux tuple
        self.single = single          # the function returns one array (else a tuple of them)
        self.donated = donated        # the positions of the arguments whose buffers the program takes over
        plain = (single and not prefix and not donated and len(auxes) in (1, 2)
                 and all(type(a) is tuple for a in auxes))
        # For the inline match of a plain signature: its arity (-1, which no call has, when it is not plain),
        # argument and output auxes.
        self.arity = len(auxes) if plain else -1
        self.aux0 = auxes[0] if plain else None
        self.aux1 = auxes[1] if plain and len(auxes) == 2 else None
        self.out_aux = out_auxes[0] if single else None

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        """The result of the call on ``args`` (and keyword arguments ``kwargs``), or None when they do not match
        this signature; :class:`LaunchFailed` when the launch raised."""
        auxes = self.auxes
        if kwargs or len(args) != len(auxes) or dispatch_epoch.current is not self.epoch:
            return None
        if self.arity == 1:  # a plain signature of one array (eager ops with options: knp.sum(x, 0))
            flat = args[0]._flat if type(args[0]) is Array else _NO_FLAT
            if flat[1] is not self.aux0 and flat[1] != self.aux0:
                return None
            bufs = [flat[0][0]]
        else:
            bufs = self.prefix[:]
            for a, aux in zip(args, auxes):
                if type(a) is Array:
                    flat = a._flat
                    if flat[1] is not aux and flat[1] != aux:
                        return None
                    bufs.append(a._buf)
                elif type(aux) in _SLOTS and type(a) is aux.type:
                    buf = aux.buffer(a)
                    if buf is None:
                        return None
                    bufs.append(buf)
                else:
                    return None
            for i in self.donated:
                args[i]._npy = None  # a cached host view pins the buffer, and XLA silently skips donating a pinned one
        try:
            outs = self.finish(self.start(bufs))
        except Exception:  # e.g. a deleted argument
            raise LaunchFailed from None
        if self.single:  # Array._from_flat(aux, (buf,)), inlined: a call costs a tenth of a microsecond
            buf, aux = outs[0], self.out_aux
            out = _new_object(Array)
            out._buf = buf
            out.aval, out._device, out._committed, out._sharding = aux
            out._npy = None
            out._flat = ((buf,), aux)
            return out
        return _arrays_of(outs, self.out_auxes)


def _arrays_of(bufs: list, auxes: tuple) -> tuple:
    """A kiln array of each output buffer: ``Array._from_flat(aux, (buf,))`` inlined (a call per output costs
    a tenth of a microsecond)."""
    arrays = []
    for buf, aux in zip(bufs, auxes):
        out = _new_object(Array)
        out._buf = buf
        out.aval, out._device, out._committed, out._sharding = aux
        out._npy = None
        out._flat = ((buf,), aux)
        arrays.append(out)
    return tuple(arrays)


def _reuse_argument_auxes(out_auxes: tuple, auxes: tuple) -> tuple:
    """``out_auxes`` with each aux tuple equal to an argument's replaced by that argument's own tuple: the one at
    the same position when equal (a training step's new parameters, in the order of the old), else the first
    equal one. A result passed back as the next call's argument (``params = step(params, batch)``, ``x = f(x)``)
    then matches the signature by identity: an equal tuple that is another object costs a Python
    ``ShapedArray.__eq__`` per argument per call."""
    try:
        first: dict = {}
        for aux in auxes:
            if type(aux) is tuple:
                first.setdefault(aux, aux)
        return tuple([auxes[j] if j < len(auxes) and type(auxes[j]) is tuple and auxes[j] == aux
                      else first.get(aux, aux) for j, aux in enumerate(out_auxes)])
    except TypeError:  # an unhashable sharding: the outputs keep their tuples
        return out_auxes


# What run() reads from an argument that is no kiln array: an aux tuple no signature has.
_NO_FLAT = ((None,), object())


class ArrayAndScalarCall(DirectCall):
    """A signature of one array and one Python scalar, one array out (eager ``x * 2.0``, ``x > 0``,
    ``2.0 - x``): :meth:`DirectCall.run` with its loop unrolled (half a microsecond less per call)."""

    __slots__ = ("array_at",)

    def __init__(self, auxes: tuple, executable: Any, prefix: list, out_auxes: tuple, single: bool,
                 donated: tuple[int, ...] = ()) -> None:
        super().__init__(auxes, executable, prefix, out_auxes, single, donated)  # (never donated: direct_call)
        self.array_at = 0 if type(auxes[0]) is tuple else 1  # the array's position

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        if kwargs or len(args) != 2 or dispatch_epoch.current is not self.epoch:
            return None
        at = self.array_at
        a, value = args[at], args[1 - at]
        slot = self.auxes[1 - at]
        if type(a) is not Array or type(value) is not slot.type:
            return None
        aux = a._flat[1]
        if aux is not self.auxes[at] and aux != self.auxes[at]:
            return None
        buf = slot.buffer(value)
        if buf is None:
            return None
        try:
            out = self.finish(self.start([a._buf, buf] if at == 0 else [buf, a._buf]))[0]
        except Exception:  # e.g. a deleted argument
            raise LaunchFailed from None
        aux = self.out_aux  # Array._from_flat(aux, (out,)), inlined (as in DirectCall.run)
        array = _new_object(Array)
        array._buf = out
        array.aval, array._device, array._committed, array._sharding = aux
        array._npy = None
        array._flat = ((out,), aux)
        return array


class PytreeCall(DirectCall):
    """A signature whose arguments are pytrees of Python's containers (tuple, list, dict, namedtuple, None)
    holding kiln arrays, keyword arguments included, and whose result is one such pytree: a training step
    ``step(params, batch)``, eager ``kiln.numpy.concatenate([x, y])``. The arguments are flattened by jaxlib's
    C++ pytree code with only those containers as nodes (a kiln array is a leaf there, not a node with a
    Python callback as on the C++ dispatch path), their structure compared with the recorded one, and each
    leaf's aux tuple with the recorded one (by identity first), as :meth:`DirectCall.run` does."""

    __slots__ = ("flatten", "treedef", "aux_list", "kept", "out_treedef", "positional_leaves")

    def __init__(self, flatten: Any, treedef: Any, leaf_auxes: tuple, kept: list | None, executable: Any,
                 prefix: list, out_treedef: Any, out_auxes: tuple, donated: tuple[int, ...] = ()) -> None:
        super().__init__(leaf_auxes, executable, prefix, out_auxes, single=False, donated=donated)
        self.flatten = flatten        # runtime.fastpath.container_flattener()
        self.treedef = treedef        # of (args, kwargs)
        self.aux_list = list(leaf_auxes)
        self.kept = kept              # per buffer (prefix, then leaves): whether the executable takes it (None: all)
        self.out_treedef = out_treedef
        # The number of arguments when each is an array passed by position (only the result is a pytree:
        # ``eigh(a)``'s namedtuple), else -1: such a call is matched without flattening (half a microsecond).
        plain = flatten((tuple(object() for _ in leaf_auxes), {}))[1]
        self.positional_leaves = len(leaf_auxes) if treedef == plain else -1

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        if dispatch_epoch.current is not self.epoch:
            return None
        try:
            if not kwargs and len(args) == self.positional_leaves:
                leaves = args  # (an argument that is a container has no _flat: no match, below)
            else:
                leaves, treedef = self.flatten((args, kwargs or {}))
                if treedef != self.treedef:
                    return None
            # Every leaf's aux tuple as recorded (by identity first: list equality): a leaf that is no kiln array
            # has no _flat and raises. C-level maps: a Python loop costs a tenth of a microsecond per leaf.
            if list(map(_aux_of, map(_flat_of, leaves))) != self.aux_list:
                return None
        except Exception:  # e.g. dict keys that do not sort, a leaf of another type: the other paths explain it
            return None
        bufs = self.prefix + list(map(_buf_of, leaves))
        if self.kept is not None:
            bufs = [b for b, k in zip(bufs, self.kept) if k]
        for i in self.donated:
            leaves[i]._npy = None  # (see DirectCall.run)
        try:
            outs = self.finish(self.start(bufs))
        except Exception:  # e.g. a deleted argument
            raise LaunchFailed from None
        return self.out_treedef.unflatten(_arrays_of(outs, self.out_auxes))


class StaticOptionsCall:
    """A signature with static options (eager ``knp.sum(x, axis=0)``, ``knp.round(x, 2)``, a jitted function's
    ``static_argnums``): the call matches when its options equal the recorded ones, by type and value as the
    cache key compares them (``axis=1`` is not ``axis=True``); the other arguments are matched and launched
    by ``inner`` (a :class:`DirectCall` of the signature without the options)."""

    __slots__ = ("inner", "arity", "n_args", "positional", "keywords", "dynamic")

    def __init__(self, inner: DirectCall, options: tuple, n_args: int) -> None:
        self.inner = inner
        self.arity = -1  # never matched inline: the inline match does not look at options
        self.n_args = n_args  # positional arguments, options included
        self.positional = tuple((i, v) for i, v in options if isinstance(i, int))  # ascending positions
        self.keywords = {k: v for k, v in options if not isinstance(k, int)}
        # The positions of the other (dynamic) positional arguments when some options are positional: a slice
        # when they come first (``round(x, 2)``, ``swapaxes(x, 0, 1)``), else a tuple of positions.
        taken = {i for i, _ in self.positional}
        dynamic = tuple(i for i in range(n_args) if i not in taken)
        self.dynamic = (None if not taken else slice(0, len(dynamic)) if dynamic == tuple(range(len(dynamic)))
                        else dynamic)

    def _options_match(self, args: tuple, kwargs: dict | None) -> bool:
        """Whether the call's options are the recorded ones (by type and value)."""
        try:
            if self.keywords:
                for name, value in self.keywords.items():
                    given = kwargs.get(name, _MISSING)
                    if type(given) is not type(value) or not given == value:
                        return False
            for i, value in self.positional:
                given = args[i]
                if type(given) is not type(value) or not given == value:
                    return False
        except Exception:  # an option whose == raises: the other paths decide
            return False
        return True

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        keywords = self.keywords
        if len(args) != self.n_args or len(kwargs or ()) < len(keywords) or not self._options_match(args, kwargs):
            return None
        dynamic = self.dynamic
        if dynamic is not None:
            args = args[dynamic] if type(dynamic) is slice else tuple([args[i] for i in dynamic])
        if kwargs:  # (every keyword option matched: those left are the dynamic ones, if any)
            kwargs = {k: v for k, v in kwargs.items() if k not in keywords} if len(kwargs) > len(keywords) else None
        return self.inner.run(args, kwargs)


class OneArrayOptionsCall(StaticOptionsCall):
    """A :class:`StaticOptionsCall` whose one dynamic argument is an array passed by position, of a plain signature
    (eager ``knp.round(x, 2)``, ``knp.swapaxes(x, 0, 1)``, ``knp.sum(x, axis=0)``): matched and launched here,
    without the inner signature's :meth:`DirectCall.run` (a tenth of a microsecond less per call)."""

    __slots__ = ("array_at",)

    def __init__(self, inner: DirectCall, options: tuple, n_args: int) -> None:
        super().__init__(inner, options, n_args)
        taken = {i for i, _ in self.positional}
        self.array_at = next(i for i in range(n_args) if i not in taken)

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        if len(args) != self.n_args or len(kwargs or ()) != len(self.keywords) or not self._options_match(args, kwargs):
            return None
        a, inner = args[self.array_at], self.inner
        if type(a) is not Array or dispatch_epoch.current is not inner.epoch:
            return None
        aux = a._flat[1]
        if aux is not inner.aux0 and aux != inner.aux0:
            return None
        try:
            buf = inner.finish(inner.start([a._buf]))[0]
        except Exception:  # e.g. a deleted argument
            raise LaunchFailed from None
        aux = inner.out_aux  # Array._from_flat(aux, (buf,)), inlined (as in DirectCall.run)
        out = _new_object(Array)
        out._buf = buf
        out.aval, out._device, out._committed, out._sharding = aux
        out._npy = None
        out._flat = ((buf,), aux)
        return out


_MISSING = object()


class HostArraySlot:
    """An argument position that took a NumPy array (``x + np.ones(4)``, a batch from a NumPy data loader): its
    dtype and shape. Every call copies the array to the device, as the other paths do: the caller may change it
    right after the call, while the program still runs."""

    __slots__ = ("dtype", "shape", "device")
    type = np.ndarray  # (the argument type, as ScalarSlot.type)

    def __init__(self, value: np.ndarray, device: Any) -> None:
        self.dtype, self.shape, self.device = value.dtype, value.shape, device

    def buffer(self, value: np.ndarray) -> Any:
        if value.dtype != self.dtype or value.shape != self.shape:
            return None
        return to_buffer(value, self.device)  # (a copy, in the dtype the program takes; the guard, if any, checks it)


class ScalarSlot:
    """An argument position that took a Python scalar (``f(x, 0.5)``, eager ``x * 2``): the scalar's type,
    and the device buffers of the values seen there, so that a repeated value is not transferred again."""

    __slots__ = ("type", "device", "bounds", "buffers")
    LIMIT = 64  # values remembered per position (a loop over many values starts over)

    def __init__(self, value: Any, dtype: Any, device: Any, beside_inexact: bool) -> None:
        self.type = type(value)
        self.device = device
        self.bounds = None
        if self.type is int:
            # Beside integer arrays only the ints every integer dtype holds: kiln.numpy checks larger ones
            # against the arrays' dtype, on the other paths (they raise IntegerOverflowError there).
            info = np.iinfo(dtype)
            self.bounds = range(int(info.min), int(info.max) + 1) if beside_inexact else range(0, 128)
        self.buffers: dict[Any, Any] = {}

    def buffer(self, value: Any) -> Any:
        buf = self.buffers.get(value)
        if buf is None or runtime.transfer_guard.host_to_device_watched():
            if self.bounds is not None and value not in self.bounds:
                return None  # out of the argument's int range: the other paths raise kiln's overflow error
            if len(self.buffers) >= self.LIMIT:
                self.buffers.clear()
            buf = self.buffers[value] = to_buffer(value, self.device)  # the guard, if any, checks this one
        return buf


_SLOTS = (ScalarSlot, HostArraySlot)  # the argument positions that take other values than kiln arrays


def direct_call(args: Sequence[Any], in_avals: Sequence[Any], kept: Sequence[bool], const_buffers: list,
                executable: Any, out: Any, device: Any, donated: Sequence[bool] = ()) -> DirectCall | None:
    """The direct launch of a signature just run, or None when it is not one this path takes: every argument a
    single-device kiln array on ``device`` or a Python scalar, each passed to the executable, the result one
    array or a tuple of arrays on it, no host callbacks (their errors and ordering are handled on the other
    paths). ``device`` None: a program over a mesh, whose arguments the caller checked are laid out as it takes
    them (arrays only: a scalar would need a layout). ``donated``: per argument, whether the program takes over
    its buffer (an array's only)."""
    if config._python_dispatch or executable.host_callbacks or len(kept) != len(args) or not all(kept):
        return None
    if not all(held_on(a, device) or (type(a) in _SCALARS or type(a) is np.ndarray) and device is not None
               for a in args):
        return None
    beside_inexact = all(dtypes.is_inexact(aval.dtype) for a, aval in zip(args, in_avals) if type(a) not in _SCALARS)
    slots = [a._flat[1] if type(a) is Array else HostArraySlot(a, device) if type(a) is np.ndarray
             else ScalarSlot(a, aval.dtype, device, beside_inexact) for a, aval in zip(args, in_avals)]
    if type(out) is Array:
        outs, single = [out], True
    elif type(out) is tuple and all(type(o) is Array for o in out):
        outs, single = list(out), False
    else:
        return None
    if any(o._device is not device for o in outs):
        return None
    given = _donated_positions(args, donated)
    if given is None:
        return None
    signature = (tuple(slots), executable, list(const_buffers), tuple(o._flat[1] for o in outs), single, given)
    mixed = (single and not const_buffers and not given and len(slots) == 2
             and {type(s) for s in slots} == {tuple, ScalarSlot})
    return (ArrayAndScalarCall if mixed else DirectCall)(*signature)


def _donated_positions(leaves: Sequence[Any], donated: Sequence[bool]) -> tuple[int, ...] | None:
    """The positions of the donated ``leaves`` (kiln arrays), or None when one is not an array."""
    positions = tuple(i for i, d in enumerate(donated) if d)
    if any(type(leaves[i]) is not Array for i in positions):
        return None
    return positions


def pytree_call(args: tuple, kwargs: dict, in_tree: Any, leaves: Sequence[Any], kept: Sequence[bool],
                const_buffers: list, executable: Any, out_tree: Any, out: Any, device: Any,
                donated: Sequence[bool] = ()) -> PytreeCall | None:
    """The direct launch of a signature just run whose arguments ``args``, ``kwargs`` (flattened by kiln:
    ``in_tree``, ``leaves``) and result ``out`` (``out_tree``) are pytrees of Python's containers holding
    single-device kiln arrays on ``device``, or None when it is not one (another pytree type, a scalar among
    the leaves, host callbacks). ``device`` None: a program over a mesh (see :func:`direct_call`).
    ``kept`` says, for each of ``const_buffers`` and then each leaf, whether the executable takes it; ``donated``,
    for each leaf, whether the program takes over its buffer."""
    flatten = runtime.fastpath.container_flattener()
    if (flatten is None or config._python_dispatch or executable.host_callbacks
            or len(kept) != len(const_buffers) + len(leaves)):
        return None
    if not (tree_util.has_only_containers(in_tree) and tree_util.has_only_containers(out_tree)):
        return None
    if not all(held_on(a, device) for a in leaves):
        return None
    try:
        in_leaves, treedef = flatten((args, kwargs))
        out_leaves, out_treedef = flatten(out)
    except Exception:
        return None
    # jaxlib's containers must be exactly kiln's nodes here, in kiln's order: the same leaves, one by one.
    if len(in_leaves) != len(leaves) or any(a is not b for a, b in zip(in_leaves, leaves)):
        return None
    out_kiln = tree_util.tree_leaves(out)
    if len(out_leaves) != len(out_kiln) or any(a is not b for a, b in zip(out_leaves, out_kiln)):
        return None
    if len(out_leaves) != len(executable.out_avals) or not all(
            type(o) is Array and o._device is device for o in out_leaves):
        return None
    mask = None if all(kept) else [bool(k) for k in kept]
    given = _donated_positions(leaves, donated)
    if given is None:
        return None
    return PytreeCall(flatten, treedef, tuple(a._flat[1] for a in leaves), mask, executable, list(const_buffers),
                      out_treedef, tuple(o._flat[1] for o in out_leaves), given)


def with_options(call: DirectCall | None, options: tuple, n_args: int) -> DirectCall | StaticOptionsCall | None:
    """``call`` (of a signature's dynamic arguments), matched only when the static options equal ``options``
    (``((position or name, value), ...)``; ``n_args`` positional arguments, options included)."""
    if call is None or not options:
        return call
    n_positional = sum(isinstance(i, int) for i, _ in options)
    one_array = call.arity == 1 and n_args - n_positional == 1  # (the array by position, every keyword an option)
    return (OneArrayOptionsCall if one_array else StaticOptionsCall)(call, options, n_args)
