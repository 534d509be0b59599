"""``kiln.export``: a jitted function as a self-contained, serializable StableHLO artifact (as ``jax.export``).

``export(kiln.jit(f))(*specs)`` traces and lowers ``f`` for the given shapes/dtypes into an :class:`Exported`:
the module (constants written into it, unused arguments dropped, as recorded in ``module_kept_var_idx``) as a
portable StableHLO artifact, plus the argument and result structure. ``Exported.serialize()`` writes JAX's
flatbuffer format, so ``jax.export.deserialize`` reads kiln's bytes and ``kiln.export.deserialize`` reads JAX's
(single-device modules without effects or symbolic shapes). ``Exported.call(*args)`` compiles the module with
kiln's runtime (once per device) and runs it.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import re
import zlib
from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

from kiln import lowering, runtime

from ..core import tree_util
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.config import config, no_execution_error
from ..core.errors import KilnError
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, current_builder, eval_ir
from . import dispatch, spmd
from . import export_format as fmt
from .array import Array
from .eager_jit import jitted_of
from .jit import JittedFunction


class ExportError(KilnError, ValueError):
    """Exporting, serializing, deserializing or calling an exported function failed."""


class ExportDerivativeError(ExportError, NotImplementedError):
    """Differentiating an exported function that has no VJP (or in forward mode)."""


# Calling convention versions JAX 0.10 writes and reads (9 and 10); kiln writes the export_calling_convention_version
# flag's (default 10, JAX's default).
CALLING_CONVENTION_VERSION = 10
MIN_CALLING_CONVENTION_VERSION = 9
# JAX writes serialization_version 3 into the flatbuffer (older readers accept only 2 and 3).
_SERIALIZATION_VERSION = 3

_FLOAT0 = np.dtype([("float0", np.void, 0)])


def _platform_of(device: runtime.Device) -> str:
    return "cuda" if device.platform == "gpu" else device.platform


class DisabledSafetyCheck:
    """A safety check to skip (as ``jax.export.DisabledSafetyCheck``): ``platform()`` lets an exported function
    run on a platform it was not exported for; ``custom_call(target)`` lets a module call a custom-call target
    that has no compatibility guarantee."""

    def __init__(self, impl: str) -> None:
        self._impl = impl

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        return self._impl[len("custom_call:"):] if self._impl.startswith("custom_call:") else None

    def __eq__(self, other) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)

    def __repr__(self) -> str:
        return f"DisabledSafetyCheck({self._impl})"


@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
    """A function lowered to StableHLO for fixed argument shapes (as ``jax.export.Exported``).

    Attributes: ``fun_name``; ``in_tree`` / ``out_tree`` (the pytree structure of ``(args, kwargs)`` and of
    the result); ``in_avals`` / ``out_avals`` (flat tuples of ``ShapedArray``); ``in_shardings_hlo`` /
    ``out_shardings_hlo`` (None per leaf: one-device modules); ``nr_devices``; ``platforms``;
    ``mlir_module_serialized`` (the portable StableHLO artifact); ``calling_convention_version``;
    ``module_kept_var_idx`` (the flat arguments the module takes; the others are unused);
    ``uses_global_constants`` (the module needs shape refinement: JAX's multi-platform exports; False for kiln's).
    """

    fun_name: str
    in_tree: Any
    in_avals: tuple[ShapedArray, ...]
    out_tree: Any
    out_avals: tuple[ShapedArray, ...]
    in_shardings_hlo: tuple[Any, ...]
    out_shardings_hlo: tuple[Any, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple[Any, ...]
    unordered_effects: tuple[Any, ...]
    disabled_safety_checks: tuple[Any, ...]
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    _get_vjp: Callable[[Exported], Exported] | None = dataclasses.field(default=None, repr=False)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)  # "text", "vjp", an executable per device

    def mlir_module(self) -> str:
        """The StableHLO module as MLIR text (read back from ``mlir_module_serialized``)."""
        text = self._cache.get("text")
        if text is None:
            text = self._cache.setdefault("text", _checked_module(self))
        return text

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals}, out_avals={self.out_avals})"

    def in_shardings_jax(self, mesh: Any = None) -> tuple[None, ...]:
        """The arguments' shardings on ``mesh``: None for each (kiln exports one-device modules)."""
        return (None,) * len(self.in_avals)

    def out_shardings_jax(self, mesh: Any = None) -> tuple[None, ...]:
        """The results' shardings on ``mesh``: None for each (kiln exports one-device modules)."""
        return (None,) * len(self.out_avals)

    def has_vjp(self) -> bool:
        """Whether :meth:`vjp` can make the exported VJP: kiln records one when every argument and result is
        floating or complex (a deserialized ``Exported`` has one when it was serialized with ``vjp_order``)."""
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP: a function of the flat arguments followed by one cotangent per flat result,
        returning one cotangent per flat argument (JAX's convention). ``kiln.grad`` through :meth:`call` uses it."""
        if self._get_vjp is None:
            raise ExportError(
                f"kiln.export: {self.fun_name!r} has no VJP: kiln records one when every argument and result is "
                "floating or complex, and a deserialized Exported has one only when serialized with "
                "serialize(vjp_order=1) (or more); export the derivative as a function of its own instead")
        vjp = self._cache.get("vjp")
        if vjp is None:
            vjp = self._cache.setdefault("vjp", self._get_vjp(self))
        return vjp

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The bytes of this ``Exported`` in JAX's flatbuffer format (``jax.export.deserialize`` reads them); a
        ``bytearray``, as JAX's. ``vjp_order=k`` also stores k orders of VJP functions (for ``grad`` of ``call``
        after deserializing)."""
        return bytearray(fmt.encode(_exported_table(self, vjp_order)))

    def call(self, *args, **kwargs) -> Any:
        """Run the exported function on arrays of the exported shapes and dtypes (pytrees as when exported)."""
        return _call(self, args, kwargs)


# -- export ----------------------------------------------------------------------------------------
def export(fun_jit: Any, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """``export(kiln.jit(f))(*args, **kwargs)`` is an :class:`Exported` of ``f`` for the shapes and dtypes of
    the arguments (arrays or ``kiln.ShapeDtypeStruct``; static arguments as values).

    ``platforms``: a sequence of 'cpu', 'cuda', 'rocm', 'tpu' (default: the default backend's). For one
    platform the module is lowered for it; for several it is portable StableHLO whose ``@main`` takes the
    platform's index in ``platforms`` first (JAX's calling convention; ``call`` passes it).
    """
    fun_jit = jitted_of(fun_jit) or fun_jit  # kiln.numpy.cos, as JAX's jitted jnp.cos
    if not isinstance(fun_jit, JittedFunction):
        raise ExportError(f"kiln.export.export: the function to export must be the result of kiln.jit, got "
                          f"{fun_jit!r:.80}; wrap it: kiln.export.export(kiln.jit(f))")
    if platforms is not None:
        if isinstance(platforms, str):
            platforms = (platforms,)
        platforms = tuple(platforms)
        bad = [p for p in platforms if p not in ("cpu", "cuda", "rocm", "tpu")]
        if bad or not platforms:
            raise ExportError(f"kiln.export.export: platforms={platforms!r}: expected one of 'cpu', 'cuda', "
                              "'rocm', 'tpu'")
        if len(set(platforms)) != len(platforms):
            raise ExportError(f"kiln.export.export: platforms={platforms!r} names a platform twice")

    def do_export(*args, **kwargs) -> Exported:
        version = _calling_convention_version(fun_jit.__name__)
        for leaf in tree_util.tree_leaves((args, kwargs)):
            if isinstance(leaf, Tracer):
                raise ExportError(f"kiln.export.export({fun_jit.__name__}): an argument is a traced value (inside "
                                  "jit/grad/vmap); pass kiln.ShapeDtypeStruct(x.shape, x.dtype) instead")
            _check_static_shape(fun_jit.__name__, leaf)
        traced = fun_jit.trace(*args, **kwargs)
        entry = traced.entry
        if isinstance(entry.device, spmd.MeshPlacement):
            raise ExportError(f"kiln.export.export({fun_jit.__name__}): the function runs over a device mesh; kiln "
                              "exports one-device programs only (drop the shardings to export it)")
        targets = platforms if platforms is not None else (_platform_of(dispatch.default_device()),)
        # One platform: lowered for it (its custom calls, e.g. LAPACK on CPU). Several: portable StableHLO only,
        # with JAX's leading platform-index parameter (the module is the same on each).
        device = _device_for(targets[0]) if len(targets) == 1 else None
        ir = entry.closed.ir
        consts = [np.asarray(c) for c in entry.closed.consts]
        lowered = dispatch.lower_ir(ir, keep_unused=fun_jit.keep_unused, device=device, embedded_consts=consts,
                                    platform_index_param=len(targets) > 1)
        if getattr(lowered, "host_callbacks", None) or getattr(lowered, "ordered_effects", False):
            raise ExportError(f"kiln.export.export({fun_jit.__name__}): the function calls back into Python "
                              "(kiln.debug.print, debug.callback, pure_callback, io_callback, or the bounds checks of "
                              "index_checks); a serialized module cannot hold Python functions (as in JAX). "
                              "Export the function without its callbacks (and with index_checks off)")
        _check_custom_calls(fun_jit.__name__, lowered.module, disabled_checks)
        kept = lowered.kept_inputs[len(ir.constvars):]
        # Weak types kept, as JAX's Exported (exp.call(1.) is weakly typed); its serialized form has none.
        in_avals, out_avals = tuple(ir.in_avals), tuple(ir.out_avals)
        return Exported(
            fun_name=fun_jit.__name__, in_tree=_in_tree(fun_jit, args, kwargs), in_avals=in_avals,
            out_tree=entry.out_tree, out_avals=out_avals, in_shardings_hlo=(None,) * len(in_avals),
            out_shardings_hlo=(None,) * len(out_avals), nr_devices=1, platforms=targets,
            ordered_effects=(), unordered_effects=(), disabled_safety_checks=tuple(disabled_checks),
            mlir_module_serialized=runtime.portable.serialize_module(lowered.module),
            calling_convention_version=version,
            module_kept_var_idx=tuple(i for i, k in enumerate(kept) if k), uses_global_constants=False,
            _get_vjp=_vjp_maker(entry.closed, platforms) if _differentiable(in_avals + out_avals) else None)
    return do_export


def _calling_convention_version(name: str) -> int:
    """The version ``export`` records: the ``export_calling_convention_version`` flag, checked (as JAX's) at export
    time, so that a bad setting fails before any tracing."""
    version = config.export_calling_convention_version
    if not MIN_CALLING_CONVENTION_VERSION <= version <= CALLING_CONVENTION_VERSION:
        raise ExportError(
            f"kiln.export.export({name}): the requested export calling convention version {version} is outside "
            f"the range of supported versions [{MIN_CALLING_CONVENTION_VERSION}..{CALLING_CONVENTION_VERSION}]; "
            f"set kiln.config.update('jax_export_calling_convention_version', {CALLING_CONVENTION_VERSION}) (or "
            "KILN_EXPORT_CALLING_CONVENTION_VERSION)")
    return version


# Custom-call targets whose behaviour is kept stable across jaxlib versions (JAX's list of them: LAPACK, cuSOLVER and
# hipSOLVER kernels, sharding markers, TPU linear algebra): a module calling any other target may not run
# where it is deserialized, unless its export disabled the check (DisabledSafetyCheck.custom_call(target)).
_STABLE_TARGET_PATTERN = re.compile(r"lapack_[sdcz]\w+_ffi|(cusolver|hipsolver)_\w+_ffi|cusparse_gtsv2_ffi|"
                                    r"(cu|hip)_(lu_pivots_to_permutation|threefry2x32_ffi)")
_STABLE_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK", "stablehlo.dynamic_approx_top_k",
    "tpu_custom_call", "AllocateBuffer", "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "shape_assertion"})


def _check_custom_calls(name: str, module: Any, disabled_checks: Sequence[DisabledSafetyCheck]) -> None:
    """Refuse a module calling a custom-call target without a compatibility guarantee (as JAX's export)."""
    allowed = {c.is_custom_call() for c in disabled_checks} - {None}
    if "ALL" in allowed:
        return
    bad = [(target, where) for target, where in lowering.custom_calls(module)
           if target not in allowed and target not in _STABLE_TARGETS and not _STABLE_TARGET_PATTERN.fullmatch(target)]
    if bad:
        listed = "\n".join(f"  {target} at {where}" for target, where in bad[:5])
        raise ExportError(
            f"kiln.export.export({name}): cannot serialize code with custom calls whose targets have no "
            f"compatibility guarantees:\n{listed}\nA deserialized module may not run with another jaxlib. If you "
            f"know it will, export with disabled_checks=[kiln.export.DisabledSafetyCheck.custom_call("
            f"{bad[0][0]!r})]")


def _differentiable(avals: tuple) -> bool:
    return all(np.issubdtype(a.dtype, np.inexact) or a.dtype.name in fmt.FLOAT_NARROW for a in avals)


def _vjp_maker(closed: Any, platforms: Sequence[str] | None) -> Callable[[Exported], Exported]:
    """Exports, on demand, the VJP of the traced function ``closed`` (flat arguments to flat results)."""
    def make(primal: Exported) -> Exported:
        vjp = _ad_hooks.get("vjp")
        if vjp is None:  # kiln.frontend.ad registers it (it sits above this floor)
            raise ExportError("kiln.export: differentiation is not loaded (import kiln)")
        n = len(primal.in_avals)

        def fun(*args):
            return eval_ir(closed.ir, closed.consts, list(args))

        def vjp_fun(*args):
            _, pullback = vjp(fun, *args[:n])
            return tuple(pullback(list(args[n:])))
        vjp_fun.__name__ = vjp_fun.__qualname__ = f"{primal.fun_name}_vjp"
        specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in primal.in_avals + primal.out_avals]
        return export(JittedFunction(vjp_fun), platforms=platforms or primal.platforms)(*specs)
    return make


# Filled by kiln.frontend.ad (a floor above this one): "vjp" (kiln.vjp) and "custom_vjp" (kiln.custom_vjp).
_ad_hooks: dict[str, Any] = {}


def _in_tree(fun_jit: JittedFunction, args: tuple, kwargs: dict) -> Any:
    """The pytree structure of the dynamic ``(args, kwargs)`` (static arguments taken out)."""
    dyn_args, dyn_kwargs, _ = fun_jit._split(args, kwargs)
    return tree_util.tree_structure((dyn_args, dyn_kwargs))


def _check_static_shape(name: str, leaf: Any) -> None:
    shape = getattr(leaf, "shape", None)
    if shape is not None and any(not isinstance(d, (int, np.integer)) for d in shape):
        raise ExportError(f"kiln.export.export({name}): argument shape {tuple(shape)} is not a tuple of integers; "
                          "symbolic shapes (jax.export.symbolic_shape) are not supported by kiln: export once "
                          "per concrete shape")


def _device_for(platform: str) -> runtime.Device | None:
    """A device of ``platform`` to lower for (its custom calls become available), or None when this machine
    has none (the module is then portable StableHLO only)."""
    for name in (platform, "gpu" if platform in ("cuda", "rocm") else platform):
        try:
            return runtime.get_backend(name).devices()[0]
        except Exception:
            continue
    return None


# -- calling ---------------------------------------------------------------------------------------
def _call(exp: Exported, args: tuple, kwargs: dict) -> Any:
    where = f"kiln.export: calling the exported {exp.fun_name!r}"
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    if tree != exp.in_tree:
        raise ExportError(f"{where}: the arguments have the structure {tree} but the function was exported for "
                          f"{exp.in_tree}; pass (args, kwargs) with the exported structure")
    names = [tree_util.keystr(path) for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]]
    for name, leaf, want in zip(names, leaves, exp.in_avals):
        try:
            got = leaf.aval if isinstance(leaf, (Array, Tracer)) else abstractify(leaf)
        except TypeError:
            raise ExportError(f"{where}: argument {_arg_name(name)} is a {type(leaf).__name__}, not an array") from None
        if got.shape != want.shape or got.dtype != want.dtype:
            raise ExportError(f"{where}: argument {_arg_name(name)} is {got.str_short()} but the function was "
                              f"exported for {want.str_short()}; export it again for these shapes/dtypes")
    if current_builder() is not None or any(isinstance(x, Tracer) for x in leaves):
        # Inside jit/vmap/grad: one equation whose lowering inlines the module's functions.
        params = dict(module=_ModuleText(exp.mlir_module()), kept=exp.module_kept_var_idx, platforms=exp.platforms,
                      out_avals=exp.out_avals, name=exp.fun_name, platform_check=_checks_platform(exp))
        if exp.has_vjp() and "custom_vjp" in _ad_hooks:
            outs = _with_vjp(exp, params)(*leaves)
        else:
            outs = call_exported_p.bind(*leaves, **params)
        return tree_util.tree_unflatten(exp.out_tree, list(outs))
    if any(type(x) is Array and x._committed and x._device is None for x in leaves):
        # An array laid out over several devices: the module runs inside one jitted program, which XLA's SPMD
        # partitioner places over the arrays' devices, as JAX's call does outside jit.
        jitted = exp._cache.get("jit")
        if jitted is None:
            jitted = exp._cache.setdefault("jit", JittedFunction(lambda a, k: _call(exp, a, k)))
        return jitted(args, kwargs)
    if config.no_execution:
        raise no_execution_error(f"the exported function {exp.fun_name}")
    device, committed = dispatch.pick_device(leaves)
    platform = _platform_of(device)
    if platform not in exp.platforms and _checks_platform(exp):
        raise ExportError(f"{where}: it was exported for platforms {exp.platforms} but runs on {platform} "
                          f"({device}); export it for {platform!r} (platforms=[{platform!r}])")
    exe = exp._cache.get(device)
    if exe is None:
        text = exp.mlir_module()
        out_types = [(a.shape, a.dtype) for a in exp.out_avals]
        exe = exp._cache.setdefault(device, runtime.compile(text, device, out_types, text=text))
    buffers = []
    if len(exp.platforms) > 1:  # JAX's convention: the platform index comes first
        # (a platform it was not exported for, with the platform check disabled: the first, as JAX's)
        index = exp.platforms.index(platform) if platform in exp.platforms else 0
        buffers.append(runtime.put(np.asarray(index, np.int32), device))
    kept = set(exp.module_kept_var_idx)
    buffers += [dispatch.to_buffer(x, device) for i, x in enumerate(leaves) if i in kept]
    outs = exe.execute(buffers)
    return tree_util.tree_unflatten(exp.out_tree, [Array(b, a, device, committed)
                                                   for b, a in zip(outs, exp.out_avals)])


def _checks_platform(exp: Exported) -> bool:
    """Whether calling ``exp`` on a platform it was not exported for is an error (unless it was exported with
    ``DisabledSafetyCheck.platform()``: it then runs the module as lowered for its first platform, as JAX)."""
    return DisabledSafetyCheck.platform() not in exp.disabled_safety_checks


class _ModuleText(str):
    """A module's MLIR text as an equation parameter: compared and hashed as the text, printed short."""

    def __repr__(self) -> str:
        return f"<StableHLO module of {len(self)} characters>"


def _with_vjp(exp: Exported, params: dict) -> Callable:
    """The flat call as a ``custom_vjp`` whose backward pass calls the exported VJP (JAX's scheme: the
    arguments are the residuals)."""
    def flat(*args):
        return tuple(call_exported_p.bind(*args, **params))
    flat.__name__ = flat.__qualname__ = f"Exported.call of {exp.fun_name!r}"  # named in kiln's error messages
    flat = _ad_hooks["custom_vjp"](flat)

    def fwd(*args):
        return flat(*args), args

    def bwd(args, cts):
        return tuple(exp.vjp().call(*args, *cts))
    flat.defvjp(fwd, bwd)
    return flat


def _call_exported_shape(*avals, module, kept, platforms, out_avals, name, platform_check=True):
    return list(out_avals)


# An exported module called inside a trace: ``module`` is its checked MLIR text, ``kept`` the arguments its
# @main takes, ``platforms`` the platforms it was exported for (several: @main takes the platform index first).
call_exported_p = Primitive("call_exported", _call_exported_shape, multiple_results=True)


def _checked_module(exp: Exported) -> str:
    """The module's text, once its ``@main`` is checked against the recorded arguments and results."""
    try:
        text, ins, outs = runtime.portable.read_module(exp.mlir_module_serialized, refine=exp.uses_global_constants)
    except runtime.portable.PortableArtifactError as e:
        raise ExportError(f"kiln.export: the module of {exp.fun_name!r} cannot be read: {e}") from None
    context = runtime.mlir_context()
    want_ins = lowering.type_strings([exp.in_avals[i] for i in exp.module_kept_var_idx], context)
    if len(exp.platforms) > 1:
        want_ins = ["tensor<i32>"] + want_ins  # JAX's platform index argument
    want_outs = lowering.type_strings(exp.out_avals, context)
    if ins != want_ins or outs != want_outs:
        raise ExportError(
            f"kiln.export: the module of {exp.fun_name!r} does not match its recorded signature: @main takes "
            f"({', '.join(ins)}) and returns ({', '.join(outs)}), but the Exported records arguments "
            f"({', '.join(want_ins)}) and results ({', '.join(want_outs)}). The serialized data is corrupted, or "
            "the module uses a calling convention kiln does not support (tokens, symbolic shapes).")
    return text


def _arg_name(path: str) -> str:
    """``[0][1]['w']`` (a path into (args, kwargs)) as ``args[1]['w']``."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]"):
        return "kwargs" + path[3:]
    return path


# -- serialization -------------------------------------------------------------------------------
def _tree_table(name: str, treedef: Any) -> fmt.Table:
    data = treedef.node_data()
    children = treedef.children()
    fields: dict[int, tuple[str, Any]] = {}
    if data is None:
        kind = fmt.TreeKind.leaf
    elif data[0] is type(None):
        kind = fmt.TreeKind.none
    elif data[0] is tuple:
        kind = fmt.TreeKind.tuple
    elif data[0] is list:
        kind = fmt.TreeKind.list
    elif data[0] is dict:
        kind = fmt.TreeKind.dict
        keys = list(data[1])
        bad = [k for k in keys if not isinstance(k, str)]
        if bad:
            raise ExportError(f"kiln.export: cannot serialize {name}: a dict with the non-string key {bad[0]!r}; "
                              "only string keys can be serialized (as in JAX)")
        fields[2] = ("o", fmt.Vector(keys))
    elif data[0] in _serializers:
        kind = fmt.TreeKind.custom
        serialized_name, serialize_auxdata = _serializers[data[0]]
        aux = serialize_auxdata(data[1])
        if not isinstance(aux, (bytes, bytearray)):
            raise ExportError(f"kiln.export: the serialize_auxdata registered for {data[0].__name__} returned a "
                              f"{type(aux).__name__}; it must return bytes")
        fields[3] = ("o", serialized_name)
        fields[4] = ("o", fmt.Scalars("B", bytes(aux)))
    else:
        raise ExportError(f"kiln.export: cannot serialize {name}: it contains a {data[0].__name__} node, which is "
                          "not registered for serialization; register it with "
                          "kiln.export.register_pytree_node_serialization (or register_namedtuple_serialization), or "
                          "use tuples, lists, dicts with string keys and None")
    fields[0] = ("b", kind)
    if children:
        fields[1] = ("o", fmt.Vector([_tree_table(name, c) for c in children]))
    return fmt.Table(fields)


def _aval_table(aval: ShapedArray) -> fmt.Table:
    dtype = np.dtype(aval.dtype)
    kind = fmt.DTYPE_KINDS.get("float0" if dtype == _FLOAT0 else dtype.name)
    if kind is None:
        raise ExportError(f"kiln.export: cannot serialize an array of dtype {dtype}")
    return fmt.Table({0: ("b", 0), 1: ("o", fmt.Vector([str(d) for d in aval.shape])), 2: ("b", kind),
                      3: ("b", fmt.MEMORY_SPACE_DEVICE)})


def _exported_table(exp: Exported, vjp_order: int) -> fmt.Table:
    if not isinstance(vjp_order, int) or vjp_order < 0:
        raise ExportError(f"kiln.export: serialize(vjp_order={vjp_order!r}): expected an int >= 0")
    if vjp_order > 0 and not exp.has_vjp():
        raise ExportError(f"kiln.export: serialize(vjp_order={vjp_order}): {exp.fun_name!r} has no VJP to store "
                          "(kiln records one when every argument and result is floating or complex)")
    table = _table(exp)
    if vjp_order > 0:
        table.fields[fmt.ExportedSlots.vjp] = ("o", _exported_table(exp.vjp(), vjp_order - 1))
    return table


def _table(exp: Exported) -> fmt.Table:
    s = fmt.ExportedSlots
    unique: dict[ShapedArray, int] = {}
    for a in exp.in_avals + exp.out_avals:
        unique.setdefault(a, len(unique))
    empty_sharding = fmt.Table({})  # a Sharding table with no field: unspecified
    table = fmt.Table({
        s.serialization_version: ("H", _SERIALIZATION_VERSION),
        s.function_name: ("o", exp.fun_name),
        s.in_tree: ("o", _tree_table("the arguments' structure", exp.in_tree)),
        s.in_avals: ("o", fmt.Vector([_aval_table(a) for a in exp.in_avals])),
        s.out_tree: ("o", _tree_table("the result's structure", exp.out_tree)),
        s.out_avals: ("o", fmt.Vector([_aval_table(a) for a in exp.out_avals])),
        s.in_shardings: ("o", fmt.Vector([empty_sharding] * len(exp.in_avals))),
        s.out_shardings: ("o", fmt.Vector([empty_sharding] * len(exp.out_avals))),
        s.platforms: ("o", fmt.Vector(list(exp.platforms))),
        s.ordered_effects: ("o", fmt.Vector([])),
        s.unordered_effects: ("o", fmt.Vector([])),
        s.disabled_checks: ("o", fmt.Vector([_check_table(c) for c in exp.disabled_safety_checks])),
        s.mlir_module_serialized: ("o", fmt.Scalars("B", exp.mlir_module_serialized)),
        s.calling_convention_version: ("H", exp.calling_convention_version),
        s.module_kept_var_idx: ("o", fmt.Scalars("H", exp.module_kept_var_idx)),
        s.uses_global_constants: ("?", exp.uses_global_constants),
        s.nr_devices: ("I", exp.nr_devices),
        s.unique_avals: ("o", fmt.Vector([_aval_table(a) for a in unique])),
        s.unique_abstract_meshes: ("o", fmt.Vector([])),
        s.unique_named_shardings: ("o", fmt.Vector([])),
        s.in_avals_idxs: ("o", fmt.Scalars("I", [unique[a] for a in exp.in_avals])),
        s.out_avals_idxs: ("o", fmt.Scalars("I", [unique[a] for a in exp.out_avals])),
        s.in_shardings_idxs: ("o", fmt.Scalars("I", [0] * len(exp.in_avals))),
        s.out_shardings_idxs: ("o", fmt.Scalars("I", [0] * len(exp.out_avals))),
        s.kiln_module_crc32: ("I", zlib.crc32(exp.mlir_module_serialized)),
    })
    return table


def deserialize(blob: bytes | bytearray) -> Exported:
    """The :class:`Exported` serialized in ``blob`` (by kiln's or JAX's ``Exported.serialize()``)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ExportError(f"kiln.export.deserialize: expected the bytes of Exported.serialize(), got "
                          f"{type(blob).__name__}")
    try:
        return _deserialize(fmt.decode(bytes(blob)))
    except fmt.FormatError as e:
        raise ExportError(f"kiln.export.deserialize: the {len(blob)} bytes are not a serialized Exported ({e}); "
                          "they are corrupted or truncated, or were not written by Exported.serialize()") from None


def _read_aval(t: fmt.TableReader) -> ShapedArray:
    if t.scalar(0, "b") != 0:
        raise ExportError("kiln.export.deserialize: the function takes or returns a token (ordered effects); "
                          "kiln cannot call such modules")
    dims = t.strings(1)
    try:
        shape = tuple(int(d) for d in dims)
    except ValueError:
        raise ExportError(f"kiln.export.deserialize: the function was exported with the symbolic shape "
                          f"({', '.join(dims)}); kiln supports concrete shapes only") from None
    kind = t.scalar(2, "b")
    name = fmt.KIND_NAMES.get(kind)
    if name is None or name.startswith("key<"):
        raise ExportError(f"kiln.export.deserialize: unsupported dtype {name or kind} in the exported signature")
    if name == "float0":
        dtype = _FLOAT0
    else:
        dtype = np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)
    return ShapedArray(shape, dtype)


def _read_tree(t: fmt.TableReader, depth: int = 0) -> Any:
    """A pytree of the serialized structure whose leaves are the placeholder ``_LEAF``."""
    if depth > 100:
        raise fmt.FormatError("pytree nested too deeply")
    kind = t.scalar(0, "b")
    children = [_read_tree(c, depth + 1) for c in t.tables(1)]
    if kind == fmt.TreeKind.leaf:
        return _LEAF
    if kind == fmt.TreeKind.none:
        return None
    if kind == fmt.TreeKind.tuple:
        return tuple(children)
    if kind == fmt.TreeKind.list:
        return list(children)
    if kind == fmt.TreeKind.dict:
        keys = t.strings(2)
        if len(keys) != len(children):
            raise fmt.FormatError("dict node with mismatched keys")
        return dict(zip(keys, children))
    if kind == fmt.TreeKind.custom:
        serialized_name = t.string(3)
        if serialized_name not in _deserializers:
            raise ExportError(f"kiln.export.deserialize: the exported structure contains the pytree node "
                              f"{serialized_name!r}, which is not registered here; register its type with "
                              f"kiln.export.register_pytree_node_serialization(..., serialized_name="
                              f"{serialized_name!r}) (or register_namedtuple_serialization) before deserializing")
        _, deserialize_auxdata, from_children = _deserializers[serialized_name]
        return from_children(deserialize_auxdata(t.bytes(4)), children)
    raise fmt.FormatError(f"unknown pytree node kind {kind}")


_LEAF = object()


def _structure(t: fmt.TableReader | None) -> Any:
    if t is None:
        raise fmt.FormatError("missing pytree structure")
    return tree_util.tree_structure(_read_tree(t), is_leaf=lambda x: x is _LEAF)


def _deserialize(root: fmt.TableReader) -> Exported:
    s = fmt.ExportedSlots
    name = root.string(s.function_name) or "<unnamed>"
    if root.tables(s.ordered_effects) or root.tables(s.unordered_effects):
        raise ExportError(f"kiln.export.deserialize: {name!r} was exported with effects (callbacks, ordered "
                          "effects); kiln cannot call such modules")
    version = root.scalar(s.calling_convention_version, "H")
    if not MIN_CALLING_CONVENTION_VERSION <= version <= CALLING_CONVENTION_VERSION:
        raise ExportError(f"kiln.export.deserialize: {name!r} uses calling convention version {version}; kiln reads "
                          f"versions {MIN_CALLING_CONVENTION_VERSION} to {CALLING_CONVENTION_VERSION}")
    unique = [_read_aval(t) for t in root.tables(s.unique_avals)]

    def avals(idx_slot: int, old_slot: int) -> tuple[ShapedArray, ...]:
        idxs = root.scalars(idx_slot, "I")
        if idxs:
            if max(idxs) >= len(unique):
                raise fmt.FormatError("aval index out of range")
            return tuple(unique[i] for i in idxs)
        return tuple(_read_aval(t) for t in root.tables(old_slot))
    in_avals = avals(s.in_avals_idxs, s.in_avals)
    out_avals = avals(s.out_avals_idxs, s.out_avals)
    nr_devices = root.scalar(s.nr_devices, "I") or root.scalar(s.nr_devices_short, "h")
    if nr_devices > 1:
        raise ExportError(f"kiln.export.deserialize: {name!r} was exported for {nr_devices} devices; kiln calls "
                          "one-device modules only")
    shardings = root.scalars(s.in_shardings_idxs, "I") + root.scalars(s.out_shardings_idxs, "I")
    if any(shardings) or any(t.table(2) is not None or t._field(1) is not None
                             for slot in (s.in_shardings, s.out_shardings) for t in root.tables(slot)):
        raise ExportError(f"kiln.export.deserialize: {name!r} was exported with shardings; kiln calls one-device "
                          "modules without shardings only")
    in_tree, out_tree = _structure(root.table(s.in_tree)), _structure(root.table(s.out_tree))
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise fmt.FormatError("the pytree structures do not match the number of arguments/results")
    module = root.bytes(s.mlir_module_serialized)
    if not module.startswith(b"ML\xefR"):
        raise fmt.FormatError("the module is not MLIR bytecode")
    crc = root.scalar(s.kiln_module_crc32, "I", None)  # written by kiln (JAX's bytes have none)
    if crc is not None and crc != zlib.crc32(module):
        raise fmt.FormatError("the module's bytes do not match their CRC-32 checksum")
    kept = tuple(root.scalars(s.module_kept_var_idx, "H"))
    if any(i >= len(in_avals) for i in kept):
        raise fmt.FormatError("kept argument index out of range")
    platforms = tuple(root.strings(s.platforms))
    vjp_table = root.table(s.vjp)
    return Exported(
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree, out_avals=out_avals,
        in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals), nr_devices=nr_devices,
        platforms=platforms, ordered_effects=(), unordered_effects=(),
        disabled_safety_checks=tuple(_read_check(t) for t in root.tables(s.disabled_checks)),
        mlir_module_serialized=module, calling_convention_version=version, module_kept_var_idx=kept,
        uses_global_constants=bool(root.scalar(s.uses_global_constants, "?", False)),
        _get_vjp=(lambda _: _deserialize(vjp_table)) if vjp_table is not None and _differentiable(
            in_avals + out_avals) else None)


def _check_table(check: DisabledSafetyCheck) -> fmt.Table:
    target = check.is_custom_call()
    if target is not None:
        return fmt.Table({0: ("b", 1), 1: ("o", target)})
    return fmt.Table({0: ("b", 0 if check == DisabledSafetyCheck.platform() else 2)})


def _read_check(t: fmt.TableReader) -> DisabledSafetyCheck:
    kind = t.scalar(0, "b")
    if kind == 1:
        return DisabledSafetyCheck.custom_call(t.string(1) or "")
    if kind == 0:
        return DisabledSafetyCheck.platform()
    return DisabledSafetyCheck("shape_assertions")


# Custom pytree nodes that serialize: type -> (name, serialize_auxdata); name -> (type, deserialize_auxdata,
# from_children).
_serializers: dict[type, tuple[str, Callable[[Any], bytes]]] = {}
_deserializers: dict[str, tuple[type, Callable[[bytes], Any], Callable[[Any, Sequence], Any]]] = {}


def register_pytree_node_serialization(nodetype: type, *, serialized_name: str,
                                       serialize_auxdata: Callable[[Any], bytes],
                                       deserialize_auxdata: Callable[[bytes], Any],
                                       from_children: Callable[[Any, Sequence], Any] | None = None) -> type:
    """Let pytree nodes of ``nodetype`` appear in the signature of a serialized ``Exported`` (as JAX's):
    ``serialized_name`` identifies the type in the bytes, ``serialize_auxdata(aux) -> bytes`` and
    ``deserialize_auxdata(bytes) -> aux`` convert its static data, ``from_children(aux, children)`` builds a
    node (default: the unflatten function it was registered with in ``kiln.tree_util``). Returns ``nodetype``."""
    if nodetype in _serializers:
        raise ExportError(f"kiln.export.register_pytree_node_serialization: {nodetype.__name__} is already "
                          f"registered (as {_serializers[nodetype][0]!r})")
    if serialized_name in _deserializers:
        raise ExportError(f"kiln.export.register_pytree_node_serialization: the name {serialized_name!r} is already "
                          f"registered (for {_deserializers[serialized_name][0].__name__})")
    if from_children is None:
        node = tree_util._registry.get(nodetype)
        if node is None:
            raise ExportError(f"kiln.export.register_pytree_node_serialization: {nodetype.__name__} is not a "
                              "registered pytree node; call kiln.tree_util.register_pytree_node first, or pass "
                              "from_children")
        from_children = node.unflatten
    _serializers[nodetype] = (serialized_name, serialize_auxdata)
    _deserializers[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Let a ``collections.namedtuple`` class appear in the signature of a serialized ``Exported`` (its field
    names are stored, as JAX does). Returns ``nodetype``."""
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple) and hasattr(nodetype, "_fields")):
        raise ExportError("kiln.export.register_namedtuple_serialization: expected a namedtuple class, got "
                          f"{nodetype!r}; use register_pytree_node_serialization for other types")

    def from_children(fields: Any, children: Sequence) -> Any:
        return nodetype(**dict(zip(fields, children)))
    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name,
        serialize_auxdata=lambda aux: json.dumps(list(nodetype._fields)).encode("utf-8"),
        deserialize_auxdata=lambda data: json.loads(data.decode("utf-8")), from_children=from_children)


def _ordered_dict_keys(keys: Any) -> bytes:
    if not all(isinstance(k, str) for k in keys):
        raise ExportError(f"kiln.export: an OrderedDict in the signature has the keys {list(keys)!r:.80}; only string "
                          "keys can be serialized (as in JAX)")
    return json.dumps(list(keys)).encode("utf-8")


register_pytree_node_serialization(collections.OrderedDict, serialized_name="collections.OrderedDict",
                                   serialize_auxdata=_ordered_dict_keys,
                                   deserialize_auxdata=lambda data: tuple(json.loads(data.decode("utf-8"))))


def default_export_platform() -> str:
    """The platform ``export`` lowers for by default: the default device's ('cpu', 'cuda', 'rocm', 'tpu')."""
    return _platform_of(dispatch.default_device())


minimum_supported_calling_convention_version = MIN_CALLING_CONVENTION_VERSION
maximum_supported_calling_convention_version = CALLING_CONVENTION_VERSION


class SymbolicScope:
    """JAX's scope of symbolic dimensions and their constraints. kiln exports concrete shapes only, so a scope
    holds constraints that nothing can use: one with constraints is refused where it is used."""

    def __init__(self, constraints_str: Sequence[str] = ()) -> None:
        if isinstance(constraints_str, str):
            raise ValueError(f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}")
        self.constraints = tuple(constraints_str)

    def __repr__(self) -> str:
        return f"SymbolicScope({list(self.constraints)!r})"


def is_symbolic_dim(p: Any) -> bool:
    """Whether ``p`` is a symbolic dimension: never in kiln, whose shapes are all concrete."""
    return False


def _unsupported_symbolic(shape_spec: Any, why: str = "") -> ExportError:
    return ExportError(f"kiln.export.symbolic_shape({shape_spec!r}): symbolic (shape-polymorphic) export is not "
                       f"supported by kiln{why}; export once per concrete shape, e.g. with "
                       "kiln.ShapeDtypeStruct((8, 4), kiln.numpy.float32)")


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (), scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[int, ...]:
    """JAX's ``jax.export.symbolic_shape`` for the specs without symbols: integers, ``_`` (the dimension of
    ``like`` there) and a trailing ``...`` (the rest of ``like``), e.g. ``"_, 4"``. A dimension variable
    (``"b, 4"``) or a constraint is an ExportError: kiln exports concrete shapes only."""
    if constraints or (scope is not None and scope.constraints):
        raise _unsupported_symbolic(shape_spec, " (constraints name dimension variables)")
    like = None if like is None else tuple(like)
    if shape_spec is None:
        if like is None or any(d is None for d in like):
            raise ValueError("kiln.export.symbolic_shape(None) needs like= with every dimension known")
        return like
    if not isinstance(shape_spec, str):
        raise TypeError(f"kiln.export.symbolic_shape: expected a string spec, got {type(shape_spec).__name__}")
    spec = shape_spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    items = [d.strip() for d in spec.split(",")]
    if items and items[-1] == "":  # "4," (a trailing comma)
        items.pop()
    if "..." in items[:-1]:
        raise ValueError(f"kiln.export.symbolic_shape({shape_spec!r}): '...' may only be the last dimension")
    dims: list[int] = []
    for i, d in enumerate(items):
        if d in ("_", "..."):
            if like is None or len(like) < i + (d == "_"):
                raise ValueError(f"kiln.export.symbolic_shape({shape_spec!r}): {d!r} takes its size from like=, "
                                 f"which is {'missing' if like is None else f'{like} (too short)'}")
            taken = like[i:i + 1] if d == "_" else like[i:]
            if any(x is None for x in taken):
                raise ValueError(f"kiln.export.symbolic_shape({shape_spec!r}): like={like} has an unknown size "
                                 f"where {d!r} takes it")
            dims.extend(int(x) for x in taken)
        elif d.isdigit():
            dims.append(int(d))
        else:
            raise _unsupported_symbolic(shape_spec)
    if like is not None and len(dims) != len(like):
        raise ValueError(f"kiln.export.symbolic_shape({shape_spec!r}): {len(dims)} dimensions, but like= has "
                         f"{len(like)}")
    return tuple(dims)


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None) -> Any:
    """The ``kiln.ShapeDtypeStruct`` of each array in the pytree ``args``, its shape given by the spec at its
    position in ``shapes_specs`` (None: its own; one string for all; or a prefix pytree of them) as
    :func:`symbolic_shape` reads it, ``like`` the array's shape."""
    if scope is not None and constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    leaves, treedef = tree_util.tree_flatten(args)
    if isinstance(args, tuple) and isinstance(shapes_specs, list):
        shapes_specs = tuple(shapes_specs)  # JAX accepts a list of specs for the tuple of arguments
    try:
        specs = tree_util.tree_leaves(tree_util.tree_broadcast(shapes_specs, args, is_leaf=lambda x: x is None),
                                      is_leaf=lambda x: x is None)
    except (ValueError, TypeError) as e:
        raise ValueError(f"kiln.export.symbolic_args_specs: shapes_specs must be None, a string or a prefix of "
                         f"the arguments' structure: {e}") from None
    return treedef.unflatten([ShapeDtypeStruct(symbolic_shape(spec, constraints=constraints, scope=scope,
                                                              like=np.shape(x)), x.dtype)
                              for x, spec in zip(leaves, specs)])


__all__ = ["CALLING_CONVENTION_VERSION", "DisabledSafetyCheck", "Exported", "ExportError", "default_export_platform",
           "deserialize", "export", "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_shape", "symbolic_args_specs", "SymbolicScope",
           "is_symbolic_dim"]
