"""Batching rule of ``lax/ffi.py``: ``ffi_call`` follows its ``vmap_method``, as ``pure_callback`` does
(``rules_callbacks.py``'s helpers): ``sequential`` / ``sequential_unrolled`` call the handler once per batch
element; ``expand_dims``, ``broadcast_all`` and ``legacy_vectorized`` call it once on the whole batch (the
batch axis first, made the most major axis of the layouts); without one, vmap raises (as JAX)."""
from __future__ import annotations

from ..lax import ffi
from .core import batch_rules
from .rules_callbacks import VECTORIZED, VmapMethodError, sequential, vectorized_args


def _with_batch_axis(layout: tuple[int, ...]) -> tuple[int, ...]:
    """A minor-to-major layout with a new leading (most major) axis 0."""
    return tuple(n + 1 for n in layout) + (0,)


def _ffi_batch(ctx, args, dims, **params):
    vmap_method = params["vmap_method"]
    if vmap_method in ("sequential", "sequential_unrolled"):
        return sequential(ffi.ffi_call_p, ctx, args, dims, vmap_method == "sequential_unrolled", **params)
    if vmap_method not in VECTORIZED:
        raise VmapMethodError(
            f"kiln.vmap: vmap of the FFI call to {params['target_name']!r} needs its vmap_method: pass vmap_method= "
            "one of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all' or 'legacy_vectorized' to "
            f"kiln.ffi.ffi_call (got vmap_method={vmap_method!r})")
    new = vectorized_args(ctx, args, dims, vmap_method)
    in_layouts = tuple(lay if d is None and vmap_method == "legacy_vectorized" else _with_batch_axis(lay)
                       for lay, d in zip(params["input_layouts"], dims))
    params = dict(params, input_layouts=in_layouts,
                  output_layouts=tuple(_with_batch_axis(lay) for lay in params["output_layouts"]),
                  result_avals=tuple(a.update(shape=(ctx.size, *a.shape)) for a in params["result_avals"]))
    outs = ffi.ffi_call_p.bind(*new, **params)
    return list(outs), [0] * len(outs)


batch_rules[ffi.ffi_call_p] = _ffi_batch
