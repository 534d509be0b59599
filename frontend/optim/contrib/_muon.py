"""Muon (Jordan, 2024): momentum whose matrix leaves are orthogonalised by a Newton-Schulz iteration before
the step; ``muon`` sends the other leaves to AdamW."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

from ... import lax
from ... import numpy as jnp
from ...batching.api import vmap
from ...control.api import cond, fori_loop, scan
from ...core.tree_util import tree_map
from ..transforms import (
    EmptyState,
    GradientTransformation,
    MaskedNode,
    _bias_correction,
    _increment,
    _zeros_count,
    adamw,
    add_decayed_weights,
    chain,
    partition,
    scale_by_learning_rate,
)

__all__ = ["MuonDimensionNumbers", "MuonState", "scale_by_muon", "muon"]

_PRECONDITIONINGS = ("frobenius", "spectral", "aol", "schatten")
_STANDARD_COEFFS = (3.4445, -4.7750, 2.0315)
# one (a, b, c) per step: the coefficients of Ahn et al.'s Dion
_DION_COEFFS = ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
                (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012))
_PRESETS = {"standard": _STANDARD_COEFFS, "dion": _DION_COEFFS}


class MuonDimensionNumbers(NamedTuple):
    """Which axes of a leaf form the matrix that is orthogonalised: ``reduction_axis`` (the rows, the input
    side of ``x @ W``) and ``output_axis`` (the columns); each an int or a sequence of ints. The other axes are
    batch axes: each matrix along them is orthogonalised on its own."""
    reduction_axis: Sequence[int] | int = 0
    output_axis: Sequence[int] | int = 1


class MuonState(NamedTuple):
    count: Any
    mu: Any
    ns_coeffs: Any  # (3,) or (steps, 3)


def _is_dim_nums(x) -> bool:
    return isinstance(x, MuonDimensionNumbers)


def _axes(x, dim_nums: MuonDimensionNumbers):
    """The reduction and output axes as tuples of non-negative ints."""
    def norm(axes):
        return tuple(a % x.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    return norm(dim_nums.reduction_axis), norm(dim_nums.output_axis)


def _fans(x, dim_nums: MuonDimensionNumbers):
    red, out = _axes(x, dim_nums)
    return math.prod(x.shape[a] for a in red), math.prod(x.shape[a] for a in out)


def _as_matrices(x, dim_nums: MuonDimensionNumbers):
    """``(to, back)``: ``to`` reshapes ``x`` to ``(batch, reduction, output)``, ``back`` undoes it."""
    if x.ndim < 2:
        raise ValueError(f"muon: the orthogonalised leaves must have rank >= 2, got shape {x.shape}; give "
                         "MuonDimensionNumbers only to matrix-like leaves (None sends a leaf to Adam in muon).")
    red, out = _axes(x, dim_nums)
    if set(red) & set(out):
        raise ValueError(f"muon: the reduction axes {red} and output axes {out} overlap (from {dim_nums} on a "
                         f"leaf of shape {x.shape}); each axis must be in at most one of them.")
    batch = tuple(sorted(set(range(x.ndim)) - set(red) - set(out)))
    perm = batch + red + out
    inv = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))
    sizes = [tuple(x.shape[a] for a in axes) for axes in (batch, red, out)]
    flat = tuple(math.prod(s) for s in sizes)
    unflat = sizes[0] + sizes[1] + sizes[2]
    return (lambda y: y.transpose(perm).reshape(flat)), (lambda y: y.reshape(unflat).transpose(inv))


def _ns_step(x, coeffs):
    # f(X) = c0 X + (c1 A + c2 A A) X with A = X X^H (optax's grouping: (c2 * A) @ A)
    a = x @ x.T.conj()
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _aol_first_step(x, coeffs, eps=1e-8):
    # "almost orthogonal layer" rescaling of the rows by the root of A's absolute row sums (Boissin et al.)
    a = x @ x.T.conj()
    s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.abs(a).sum(axis=-1), min=eps)), -1)
    x, a = x * s, a * s * s.transpose(-1, -2)
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _schatten_first_step(x, coeffs, eps=1e-8):
    # rescaling by the root of ||X X^T||_F, the Schatten-4 norm squared (Grishina et al.)
    a = x @ x.T
    s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.linalg.norm(a, ord="fro", axis=(-2, -1)), min=eps)), (0, -1))
    x, a = x * s, a * s ** 2
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _first_step_then_plain(first):
    def step(i, x, coeffs):
        return cond(i == 0, lambda x: first(x, coeffs), lambda x: _ns_step(x, coeffs), x)
    return step


_ITERATIONS = {"frobenius": lambda i, x, c: _ns_step(x, c), "spectral": lambda i, x, c: _ns_step(x, c),
               "aol": _first_step_then_plain(_aol_first_step),
               "schatten": _first_step_then_plain(_schatten_first_step)}


def _check_preconditioning(preconditioning):
    if preconditioning not in _PRECONDITIONINGS:
        raise ValueError(f"muon: unknown preconditioning {preconditioning!r}; use one of {list(_PRECONDITIONINGS)}.")


def _orthogonalize(x, ns_coeffs, ns_steps=5, preconditioning="frobenius", eps=1e-8, dimension_numbers=None):
    """``x``'s matrices brought near ``U V^H`` (``x = U S V^H``) by Newton-Schulz iterations: ``ns_coeffs``
    (3,) for ``ns_steps`` steps, or (n, 3) for n steps."""
    if x.ndim != 2 and not _is_dim_nums(dimension_numbers):
        raise ValueError(f"muon: a leaf of shape {x.shape} is not a matrix; give it MuonDimensionNumbers "
                         "(weight_dimension_numbers) to say which axes form its matrices.")
    if x.ndim == 2:
        dimension_numbers = MuonDimensionNumbers(0, 1)
    if ns_coeffs.ndim > 2 or ns_coeffs.shape[-1] != 3:
        raise ValueError(f"muon: ns_coeffs must have shape (3,) or (n, 3), got {ns_coeffs.shape}.")
    _check_preconditioning(preconditioning)
    iteration = _ITERATIONS[preconditioning]

    def one(x):
        transposed = x.shape[0] > x.shape[1]
        if transposed:  # (f(X^T) = f(X)^T: iterate on the smaller Gram matrix)
            x = x.T
        if preconditioning == "frobenius":
            x = x / (jnp.linalg.norm(x, ord="fro") + eps)
        elif preconditioning == "spectral":
            x = x / (jnp.linalg.norm(x, ord=2) + eps)
        coeffs = ns_coeffs.astype(x.dtype)
        if coeffs.ndim == 1:
            x = fori_loop(0, ns_steps, lambda i, x: iteration(i, x, coeffs), x, unroll=True)
        else:
            def body(carry, c):
                i, x = carry
                return (i + 1, iteration(i, x, c)), None
            (_, x), _ = scan(body, (jnp.asarray(0, dtype=jnp.int32), x), coeffs)
        return x.T if transposed else x

    to, back = _as_matrices(x, dimension_numbers)
    return back(vmap(one)(to(x)))


def _resolve(weight_dimension_numbers, updates):
    # a callable is given the updates (only their shapes matter; the params may be absent)
    return weight_dimension_numbers(updates) if callable(weight_dimension_numbers) else weight_dimension_numbers


def _map_with_dims(fn, tree, dims):
    if dims is None:  # every leaf a plain matrix
        return tree_map(lambda x: fn(x, None), tree)
    return tree_map(fn, tree, dims, is_leaf=_is_dim_nums)


def _coeffs_array(ns_coeffs, ns_steps):
    c = jnp.asarray(ns_coeffs)
    if c.ndim > 2 or c.shape[-1] != 3:
        raise ValueError(f"muon: ns_coeffs must have shape (3,) or (n, 3) (one (a, b, c) per step), got "
                         f"{c.shape}.")
    if c.ndim == 2:
        if c.shape[0] > ns_steps:
            raise ValueError(f"muon: {c.shape[0]} rows of ns_coeffs but ns_steps={ns_steps}; with one row per "
                             "step, give at most ns_steps rows.")
        c = c[-ns_steps:]
    return c


def scale_by_muon(ns_coeffs=_STANDARD_COEFFS, ns_steps=5, beta=0.95, eps=1e-8, mu_dtype=None, *,
                  nesterov: bool = True, adaptive: bool = False, preconditioning: str = "frobenius",
                  weight_dimension_numbers=None) -> GradientTransformation:
    """Muon's rescaling: the (Nesterov) momentum, bias-corrected, of each leaf orthogonalised by Newton-Schulz
    (after a ``preconditioning`` rescaling: 'frobenius', 'spectral', 'aol' or 'schatten'). ``adaptive`` scales
    each result by ``<momentum, result>``. ``weight_dimension_numbers`` (a pytree of
    :class:`MuonDimensionNumbers` matching the params, or a callable returning one; None: every leaf a matrix)
    says which axes form the matrices."""
    _check_preconditioning(preconditioning)

    def init(params):
        return MuonState(_zeros_count(), tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params),
                         _coeffs_array(ns_coeffs, ns_steps))

    def update(updates, state, params=None):
        dims = _resolve(weight_dimension_numbers, updates)
        mu = tree_map(lambda g, m: (1 - beta) * g + beta * m, updates, state.mu)
        count = _increment(state.count)
        if nesterov:
            mu_hat = tree_map(lambda m, g: beta * m + (1 - beta) * g, _bias_correction(mu, beta, _increment(count)),
                              _bias_correction(updates, beta, count))
        else:
            mu_hat = _bias_correction(mu, beta, count)
        out = _map_with_dims(lambda x, d: _orthogonalize(x, state.ns_coeffs, ns_steps, preconditioning, eps, d),
                             mu_hat, dims)
        if adaptive:  # (the dual norm of the momentum under the spectral norm, Bernstein et al.)
            out = tree_map(lambda m, o: jnp.sum(m.conj() * o) * o, mu_hat, out)
        if mu_dtype is not None:
            mu = tree_map(lambda m: m.astype(mu_dtype), mu)
        return out, MuonState(count, mu, state.ns_coeffs)
    return GradientTransformation(init, update)


def _scale_by_shape(weight_dimension_numbers=None, consistent_rms=None) -> GradientTransformation:
    """Scales each orthogonalised leaf by ``sqrt(max(1, fan_out / fan_in))`` (Jordan's width scaling) or, with
    ``consistent_rms``, by ``sqrt(max(fan_in, fan_out)) * consistent_rms`` (Liu et al.'s AdamW-like RMS)."""
    def scaled(u, d):
        fan_in, fan_out = _fans(u, MuonDimensionNumbers(0, 1) if d is None else d)
        if consistent_rms is None:
            return jnp.sqrt(jnp.maximum(1, fan_out / fan_in)) * u
        return jnp.sqrt(jnp.maximum(fan_in, fan_out)) * consistent_rms * u

    def update(updates, state, params=None):
        return _map_with_dims(scaled, updates, _resolve(weight_dimension_numbers, updates)), state
    return GradientTransformation(lambda params: EmptyState(), update)


def _muon_labels(dim_nums):
    """``params -> labels``: 'muon' for the leaves to orthogonalise, 'adam' for the others."""
    if dim_nums is None:  # every matrix
        return lambda params: tree_map(lambda x: "muon" if x.ndim == 2 else "adam", params)

    def labels(params):
        def fill(d, sub):  # (the dimension numbers may be a prefix of the params)
            return tree_map(lambda _: "adam" if d is None else "muon", sub)
        return tree_map(fill, _resolve(dim_nums, params), params, is_leaf=lambda x: x is None or _is_dim_nums(x))
    return labels


def muon(learning_rate, ns_coeffs=_STANDARD_COEFFS, ns_steps=5, beta=0.95, eps=1e-8, weight_decay=0.0,
         weight_decay_mask=None, mu_dtype=None, *, nesterov: bool = True, adaptive: bool = False,
         preconditioning: str = "frobenius", adam_b1=0.9, adam_b2=0.999, adam_eps_root=0.0, adam_weight_decay=0.0,
         adam_learning_rate=None, muon_weight_dimension_numbers=None,
         consistent_rms=None) -> GradientTransformation:
    """Muon: :func:`scale_by_muon`, shape scaling, weight decay (``weight_decay * params``, masked by
    ``weight_decay_mask``) and the learning rate on the matrix leaves (those with
    ``muon_weight_dimension_numbers``, or every 2-D leaf when it is None); AdamW (``adam_*``, learning rate
    ``adam_learning_rate`` or ``learning_rate``) on the others. ``ns_coeffs`` may name a preset: 'standard' or
    'dion'."""
    if adam_learning_rate is None:
        adam_learning_rate = learning_rate
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _PRESETS:
            raise ValueError(f"muon: unknown ns_coeffs preset {ns_coeffs!r}; use one of {list(_PRESETS)} or give "
                             "the coefficients.")
        ns_coeffs = _PRESETS[ns_coeffs]
    labels = _muon_labels(muon_weight_dimension_numbers)
    dim_nums = MuonDimensionNumbers() if muon_weight_dimension_numbers is None else muon_weight_dimension_numbers

    def muon_dims(params):
        # the dimension numbers with the muon group's layout: MaskedNode where partition masks a leaf out
        mask = tree_map(lambda label: label == "muon", labels(params))

        def fill(d, sub):
            return tree_map(lambda m: d if m else MaskedNode(), sub)
        return tree_map(fill, _resolve(dim_nums, params), mask,
                        is_leaf=lambda x: x is None or _is_dim_nums(x) or isinstance(x, MaskedNode))

    matrices = chain(
        scale_by_muon(ns_coeffs, ns_steps, beta, eps, mu_dtype, nesterov=nesterov, adaptive=adaptive,
                      preconditioning=preconditioning, weight_dimension_numbers=muon_dims),
        _scale_by_shape(muon_dims, consistent_rms),
        add_decayed_weights(weight_decay, weight_decay_mask),
        scale_by_learning_rate(learning_rate))
    others = adamw(adam_learning_rate, b1=adam_b1, b2=adam_b2, eps=eps, eps_root=adam_eps_root,
                   weight_decay=adam_weight_decay, mu_dtype=mu_dtype, nesterov=nesterov)
    return partition({"muon": matrices, "adam": others}, labels)
