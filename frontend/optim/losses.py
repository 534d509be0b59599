"""Loss functions with optax's names and conventions (``optax.losses``): each returns the loss per example
(no mean over the batch), so training code writes ``optax.l2_loss(pred, y).mean()`` as it does with optax."""
from __future__ import annotations

from .. import nn
from .. import numpy as jnp

__all__ = [
    "squared_error", "l2_loss", "huber_loss", "log_cosh", "cosine_similarity", "cosine_distance",
    "sigmoid_binary_cross_entropy", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
    "safe_softmax_cross_entropy", "hinge_loss", "kl_divergence", "kl_divergence_with_log_targets",
]


def _floating(x, name: str, fn: str):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"optim.{fn}: {name} must be a floating-point array, got {x.dtype}; "
                        f"convert it with .astype(jnp.float32)")
    return x


def _errors(predictions, targets, fn: str, same_shape: bool = False):
    predictions = _floating(predictions, "predictions", fn)
    if targets is None:
        return predictions
    targets = jnp.asarray(targets)
    if same_shape and targets.shape != predictions.shape:
        raise ValueError(f"optim.{fn}: predictions {predictions.shape} and targets {targets.shape} must have the "
                         f"same shape (as in optax); reshape one of them")
    return predictions - targets


def squared_error(predictions, targets=None):
    """``(predictions - targets) ** 2`` elementwise (targets default to zeros)."""
    return _errors(predictions, targets, "squared_error", same_shape=True) ** 2


def l2_loss(predictions, targets=None):
    """Half the squared error, elementwise."""
    return 0.5 * _errors(predictions, targets, "l2_loss", same_shape=True) ** 2


def huber_loss(predictions, targets=None, *, delta=1.0):
    """Quadratic for ``|error| <= delta``, linear beyond it, elementwise."""
    abs_errors = jnp.abs(_errors(predictions, targets, "huber_loss"))
    quadratic = jnp.minimum(abs_errors, delta)
    return 0.5 * quadratic ** 2 + delta * (abs_errors - quadratic)


def log_cosh(predictions, targets=None):
    """``log(cosh(error))``, computed without overflow for large errors."""
    errors = _errors(predictions, targets, "log_cosh")
    return jnp.logaddexp(errors, -errors) - jnp.log(2.0).astype(errors.dtype)


def cosine_similarity(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """Cosine of the angle between the vectors along ``axis``; squared norms are clipped to ``epsilon``."""
    a = _floating(predictions, "predictions", "cosine_similarity")
    b = _floating(targets, "targets", "cosine_similarity")

    def unit(v):  # (optax's operations: square, clip)
        return v / jnp.sqrt(jnp.clip(jnp.sum(jnp.square(v), axis=axis, where=where, keepdims=True), epsilon))
    return jnp.sum(unit(a) * unit(b), axis=axis, where=where)


def cosine_distance(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """``1 - cosine_similarity``."""
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis, where=where)


def sigmoid_binary_cross_entropy(logits, labels):
    """Binary cross-entropy of ``sigmoid(logits)`` against ``labels`` in [0, 1], elementwise."""
    logits = _floating(logits, "logits", "sigmoid_binary_cross_entropy")
    labels = jnp.asarray(labels).astype(logits.dtype)
    return -labels * nn.log_sigmoid(logits) - (1.0 - labels) * nn.log_sigmoid(-logits)


def _where_like(where, logits, axis):
    if where is not None and jnp.ndim(where) != logits.ndim:
        where = jnp.expand_dims(where, axis)
    return where


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """Cross-entropy of ``softmax(logits)`` against the distributions ``labels``; reduces ``axis``."""
    logits = _floating(logits, "logits", "softmax_cross_entropy")
    where = _where_like(where, logits, axis)
    return -jnp.sum(labels * nn.log_softmax(logits, axis=axis, where=where), axis=axis, where=where)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """Cross-entropy of ``softmax(logits)`` against integer class ``labels`` (one fewer axis than logits)."""
    logits = _floating(logits, "logits", "softmax_cross_entropy_with_integer_labels")
    labels = jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(f"optim.softmax_cross_entropy_with_integer_labels: labels must be integers (class "
                        f"indices), got {labels.dtype}; for one-hot or soft labels use softmax_cross_entropy")
    if not isinstance(axis, int):
        raise TypeError(f"optim.softmax_cross_entropy_with_integer_labels: axis must be an int, got {axis!r}")
    axis = axis % logits.ndim
    where = _where_like(where, logits, axis)
    label_logits = jnp.take_along_axis(logits, jnp.expand_dims(labels, axis), axis=axis).squeeze(axis)
    loss = nn.logsumexp(logits, axis=axis, where=where) - label_logits
    return loss if where is None else jnp.where(jnp.any(where, axis=axis), loss, 0.0)


def safe_softmax_cross_entropy(logits, labels):
    """softmax_cross_entropy that gives 0 (not nan) where a label is 0 and its logit is -inf."""
    logits = _floating(logits, "logits", "safe_softmax_cross_entropy")
    log_probs = nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.where(labels != 0, labels * log_probs, 0.0), axis=-1)


def hinge_loss(predictor_outputs, targets):
    """``max(0, 1 - outputs * targets)`` for targets in {-1, 1}, elementwise."""
    return jnp.maximum(0, 1 - jnp.asarray(predictor_outputs) * targets)


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """``KL(targets || predictions)`` given log-predictions; terms with a zero target count as 0."""
    log_predictions = _floating(log_predictions, "log_predictions", "kl_divergence")
    targets = _floating(targets, "targets", "kl_divergence")
    log_targets = jnp.where(targets == 0, 0.0, jnp.log(jnp.where(targets == 0, 1.0, targets)))
    return jnp.sum(targets * (log_targets - log_predictions), axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """``KL(targets || predictions)`` given both as logarithms."""
    log_predictions = _floating(log_predictions, "log_predictions", "kl_divergence_with_log_targets")
    log_targets = _floating(log_targets, "log_targets", "kl_divergence_with_log_targets")
    return jnp.sum(jnp.exp(log_targets) * (log_targets - log_predictions), axis=axis, where=where)
