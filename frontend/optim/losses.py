"""Loss functions with optax's names and conventions (``optax.losses``): each returns the loss per example
(no mean over the batch), so training code writes ``optax.l2_loss(pred, y).mean()`` as it does with optax."""
from __future__ import annotations

import warnings

from .. import lax, nn
from .. import numpy as jnp
from ..batching.api import vmap
from ..control.api import scan
from .projections import projection_simplex

__all__ = [
    "squared_error", "l2_loss", "huber_loss", "log_cosh", "cosine_similarity", "cosine_distance",
    "sigmoid_binary_cross_entropy", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
    "safe_softmax_cross_entropy", "hinge_loss", "kl_divergence", "kl_divergence_with_log_targets",
    "sigmoid_focal_loss", "smooth_labels", "poly_loss_cross_entropy", "generalized_kl_divergence",
    "convex_kl_divergence", "ctc_loss_with_forward_probs", "ctc_loss", "ntxent", "triplet_margin_loss",
    "dice_loss", "binary_dice_loss", "multiclass_generalized_dice_loss", "multiclass_hinge_loss",
    "multiclass_perceptron_loss", "perceptron_loss", "sparsemax_loss", "multiclass_sparsemax_loss",
    "make_fenchel_young_loss", "ranking_softmax_loss",
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


def sigmoid_focal_loss(logits, labels, *, alpha=None, gamma=2.0):
    """Focal loss: sigmoid cross-entropy scaled by ``(1 - p_t) ** gamma`` and, if ``alpha`` is given, by
    ``alpha`` for positives and ``1 - alpha`` for negatives; labels may be soft (in [0, 1])."""
    logits = _floating(logits, "logits", "sigmoid_focal_loss")
    labels = jnp.asarray(labels).astype(logits.dtype)
    ce_loss = sigmoid_binary_cross_entropy(logits, labels)
    # log(1 - p_t) = log((1 - y) p + y (1 - p)) taken in log space, so that the weight stays finite and
    # differentiable for extreme logits and gamma < 2 (optax's formulation)
    log_p, log_q = nn.log_sigmoid(logits), nn.log_sigmoid(-logits)
    a, b = jnp.stack([log_p, log_q], axis=-1), jnp.stack([1 - labels, labels], axis=-1)
    log_one_minus_p_t = nn.logsumexp(a, axis=-1, b=b)
    loss = ce_loss * jnp.exp(gamma * log_one_minus_p_t)
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def smooth_labels(labels, alpha, *, axis=-1, where=None):
    """``(1 - alpha) * labels + alpha / num_categories``: one-hot labels mixed with the uniform distribution
    over ``axis`` (over the ``where`` entries only, if given)."""
    labels = _floating(labels, "labels", "smooth_labels")
    if where is None:
        num_categories = jnp.size(labels, axis)
    else:
        num_categories = jnp.sum(where, axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / num_categories


def poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """PolyLoss (Poly-1): softmax cross-entropy plus ``epsilon * (1 - p_t)``."""
    logits = _floating(logits, "logits", "poly_loss_cross_entropy")
    labels = _floating(labels, "labels", "poly_loss_cross_entropy")
    p = nn.softmax(logits, axis=axis, where=where)
    one_minus_pt = jnp.sum(labels * (1 - p), axis=axis, where=where)
    cross_entropy = softmax_cross_entropy(logits, labels, axis=axis, where=where)
    return cross_entropy + epsilon * one_minus_pt


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """KL divergence extended to unnormalised distributions: ``kl_divergence + sum(predictions - targets)``
    (the Bregman divergence of ``x log x - x``)."""
    x = kl_divergence(log_predictions, targets, axis=axis, where=where)
    y = jnp.sum(jnp.exp(log_predictions) - targets, axis=axis, where=where)
    return x + y


def convex_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """Deprecated name of :func:`generalized_kl_divergence` (optax warns, and so does kiln)."""
    warnings.warn("The function convex_kl_divergence is deprecated. Please use generalized_kl_divergence instead.",
                  DeprecationWarning, stacklevel=2)
    return generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)


def _check_ctc_inputs(logits, logit_paddings, labels, label_paddings, blank_id):
    fn = "optim.ctc_loss"
    logits = _floating(logits, "logits", "ctc_loss")
    logit_paddings, labels, label_paddings = map(jnp.asarray, (logit_paddings, labels, label_paddings))
    if logits.ndim != 3:
        raise ValueError(f"{fn}: logits must have shape (batch, time, classes), got shape {logits.shape}")
    if labels.ndim != 2:
        raise ValueError(f"{fn}: labels must have shape (batch, max_label_length), got shape {labels.shape}")
    if label_paddings.shape != labels.shape:
        raise ValueError(f"{fn}: label_paddings {label_paddings.shape} must have the shape of labels {labels.shape} "
                         f"(1.0 where a label is padding)")
    if logit_paddings.shape != logits.shape[:2]:
        raise ValueError(f"{fn}: logit_paddings {logit_paddings.shape} must have shape (batch, time) = "
                         f"{logits.shape[:2]}, the leading axes of logits {logits.shape}")
    if labels.shape[0] != logits.shape[0]:
        raise ValueError(f"{fn}: labels have batch size {labels.shape[0]} but logits have {logits.shape[0]}")
    if not 0 <= blank_id < logits.shape[2]:
        raise ValueError(f"{fn}: blank_id={blank_id} must index a class of logits (0 <= blank_id < "
                         f"{logits.shape[2]})")
    return logits, logit_paddings, labels, label_paddings


def _add_to_phi(phi, score):
    # log-space addition into every state but the first (the one before any label)
    return jnp.concatenate([phi[:, :1], jnp.logaddexp(phi[:, 1:], score)], axis=-1)


def ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings, *, blank_id=0, log_epsilon=-1e5):
    """CTC loss per sequence, and the log forward probabilities of the blank and label states.

    ``logits`` (B, T, K), ``logit_paddings`` (B, T), ``labels`` and right-padded ``label_paddings`` (B, N);
    paddings are 1.0 where padded. Returns ``(loss (B,), logalpha_blank (T, B, N+1), logalpha_label (T, B, N))``.
    """
    logits, logit_paddings, labels, label_paddings = _check_ctc_inputs(
        logits, logit_paddings, labels, label_paddings, blank_id)
    batch, _, num_classes = logits.shape
    max_label_len = labels.shape[1]

    logprobs = nn.log_softmax(logits)
    label_lens = max_label_len - jnp.sum(label_paddings, axis=1).astype(jnp.int32)
    # repeat[b, n] is 1.0 where label n + 1 repeats label n: a blank must separate them
    repeat = jnp.pad((labels[:, :-1] == labels[:, 1:]).astype(jnp.float32), ((0, 0), (0, 1)))

    logprobs_phi = jnp.transpose(logprobs[:, :, blank_id:blank_id + 1], (1, 0, 2))  # (T, B, 1)
    one_hot = nn.one_hot(labels, num_classes=num_classes)  # (B, N, K)
    logprobs_emit = jnp.transpose(jnp.einsum("btk,bnk->btn", logprobs, one_hot), (1, 0, 2))  # (T, B, N)

    phi_init = (jnp.ones((batch, max_label_len + 1)) * log_epsilon).at[:, 0].set(0.0)
    emit_init = jnp.ones((batch, max_label_len)) * log_epsilon

    def step(carry, x):
        prev_phi, prev_emit = carry
        logprob_emit, logprob_phi, pad = x
        # label -> blank epsilon transition, closed where the next label repeats
        eps_phi = _add_to_phi(prev_phi, prev_emit + log_epsilon * repeat)
        next_emit = jnp.logaddexp(eps_phi[:, :-1] + logprob_emit, prev_emit + logprob_emit)
        next_phi = _add_to_phi(eps_phi + logprob_phi, prev_emit + logprob_phi + log_epsilon * (1.0 - repeat))
        # padded frames leave the state unchanged
        pad = pad.reshape((batch, 1))
        next_emit = pad * prev_emit + (1.0 - pad) * next_emit
        next_phi = pad * prev_phi + (1.0 - pad) * next_phi
        return (next_phi, next_emit), (next_phi, next_emit)

    xs = (logprobs_emit, logprobs_phi, logit_paddings.transpose((1, 0)))
    _, (logalpha_phi, logalpha_emit) = scan(step, (phi_init, emit_init), xs)

    # the last frame still takes its final label -> blank epsilon transition
    logalpha_phi_last = _add_to_phi(logalpha_phi[-1], logalpha_emit[-1])
    logalpha_phi = logalpha_phi.at[-1].set(logalpha_phi_last)

    select_len = nn.one_hot(label_lens, num_classes=max_label_len + 1)  # (B, N+1)
    per_seq_loss = -jnp.einsum("bn,bn->b", logalpha_phi_last, select_len)
    return per_seq_loss, logalpha_phi, logalpha_emit


def ctc_loss(logits, logit_paddings, labels, label_paddings, *, blank_id=0, log_epsilon=-1e5):
    """CTC loss per sequence (shape (B,)); see :func:`ctc_loss_with_forward_probs` for the arguments."""
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings, blank_id=blank_id,
                                       log_epsilon=log_epsilon)[0]


def ntxent(embeddings, labels, temperature=0.07):
    """NT-Xent (SimCLR's contrastive loss), a scalar averaged over the positive pairs: ``embeddings`` (B, F),
    ``labels`` (B,) where equal labels mark positive pairs."""
    embeddings = _floating(embeddings, "embeddings", "ntxent")
    labels = jnp.asarray(labels)
    if embeddings.ndim != 2 or labels.ndim != 1 or labels.shape[0] != embeddings.shape[0]:
        raise ValueError(f"optim.ntxent: embeddings must have shape (batch, features) and labels (batch,), got "
                         f"{embeddings.shape} and {labels.shape}")
    xcs = cosine_similarity(embeddings[None, :, :], embeddings[:, None, :],
                            epsilon=jnp.finfo(embeddings.dtype).eps) / temperature
    same = labels[:, None] == labels[None, :]
    diffs = ~same
    matches = same & ~jnp.eye(same.shape[0], dtype=bool)  # an embedding is not its own positive

    xcs_diffs = jnp.where(diffs, xcs, -jnp.inf)
    xcs_matches = jnp.where(matches, xcs, -jnp.inf)
    # shift by the row maximum for stability (a constant: no gradient through it)
    xcs_max = jnp.max(jnp.concatenate((xcs_diffs, xcs_matches), axis=-1), axis=1, keepdims=True)
    shift_diffs = xcs_diffs - lax.stop_gradient(xcs_max)
    shift_matches = xcs_matches - lax.stop_gradient(xcs_max)

    denom = jnp.sum(jnp.exp(shift_diffs), axis=1, keepdims=True)
    denom += jnp.exp(shift_matches)
    log_softm = shift_matches - jnp.log(denom)
    return -jnp.where(matches, log_softm, 0.0).sum() / matches.sum()


def triplet_margin_loss(anchors, positives, negatives, axis=-1, norm_degree=2, margin=1.0, eps=1e-6):
    """``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` with ``d`` the ``norm_degree``-norm
    distance along ``axis`` (``eps`` added under the root)."""
    anchors = _floating(anchors, "anchors", "triplet_margin_loss")
    positives = _floating(positives, "positives", "triplet_margin_loss")
    negatives = _floating(negatives, "negatives", "triplet_margin_loss")

    def distance(other):
        return jnp.power(jnp.power(anchors - other, norm_degree).sum(axis) + eps, 1 / norm_degree)
    return jnp.maximum(distance(positives) - distance(negatives) + margin, 0)


def _reduce_classes(loss, reduction: str, fn: str):
    if reduction == "mean":
        return jnp.mean(loss, axis=-1)
    if reduction == "sum":
        return jnp.sum(loss, axis=-1)
    if reduction == "none":
        return loss
    raise ValueError(f"optim.{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def dice_loss(predictions, targets, *, class_weights=None, smooth=1.0, alpha=0.5, beta=0.5, apply_softmax=True,
              reduction="mean", ignore_background=False, axis=None):
    """Soft Dice (Tversky, for ``alpha != beta``) loss per class, reduced over classes by ``reduction``.

    ``predictions`` are logits (softmax over the last axis, or sigmoid if it has size 1) or, with
    ``apply_softmax=False``, probabilities; ``targets`` one-hot. Sums over ``axis`` (default: all axes but
    the first and the last).
    """
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim - 1:
        predictions = predictions[..., None]
    if targets.ndim == predictions.ndim - 1:
        targets = targets[..., None]
    if predictions.shape != targets.shape:
        raise ValueError(f"optim.dice_loss: predictions {predictions.shape} and targets {targets.shape} must have "
                         f"the same shape [..., num_classes] (or differ by a trailing class axis of size 1)")
    if not apply_softmax:
        sums = jnp.sum(predictions, axis=-1)
        if not jnp.allclose(sums, 1.0, rtol=1e-5):
            raise ValueError(f"optim.dice_loss: with apply_softmax=False, predictions must be probabilities that "
                             f"sum to 1 over the last axis; their sums range over [{float(jnp.min(sums)):.6f}, "
                             f"{float(jnp.max(sums)):.6f}]. Pass logits with apply_softmax=True instead")
    probs = predictions
    if apply_softmax:
        probs = nn.sigmoid(predictions) if predictions.shape[-1] == 1 else nn.softmax(predictions, axis=-1)
    axis = tuple(range(1, probs.ndim - 1)) if axis is None else axis

    intersection = jnp.sum(probs * targets, axis=axis)
    pred_sum = jnp.sum(probs, axis=axis)
    target_sum = jnp.sum(targets, axis=axis)
    # alpha weighs false positives, beta false negatives
    denominator = (intersection + alpha * (pred_sum - intersection) + beta * (target_sum - intersection) + smooth)
    loss = 1.0 - (intersection + smooth) / denominator
    if class_weights is not None:
        class_weights = jnp.asarray(class_weights)
        if class_weights.ndim != 1:
            raise ValueError(f"optim.dice_loss: class_weights must be a vector (num_classes,), got shape "
                             f"{class_weights.shape}")
        loss = loss * class_weights
    if ignore_background and probs.shape[-1] > 1:
        loss = loss[..., 1:]
    return _reduce_classes(loss, reduction, "dice_loss")


def multiclass_generalized_dice_loss(predictions, targets, *, smooth=1.0, apply_softmax=True,
                                     ignore_background=False):
    """Generalised Dice loss: dice_loss with class weights ``1 / frequency**2`` (normalised to mean 1), averaged
    to a scalar over batch and classes."""
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.shape != targets.shape:
        raise ValueError(f"optim.multiclass_generalized_dice_loss: predictions {predictions.shape} and targets "
                         f"{targets.shape} must have the same shape [..., num_classes]")
    class_frequencies = jnp.sum(targets, axis=tuple(range(targets.ndim - 1)))
    class_weights = 1.0 / (class_frequencies ** 2 + 1e-7)  # epsilon: classes absent from the batch
    class_weights = class_weights / jnp.sum(class_weights) * len(class_weights)
    return jnp.mean(dice_loss(predictions, targets, class_weights=class_weights, smooth=smooth,
                              apply_softmax=apply_softmax, reduction="none", ignore_background=ignore_background))


def binary_dice_loss(predictions, targets, *, smooth=1.0, apply_sigmoid=True):
    """Dice loss of binary segmentation: ``predictions`` logits (or probabilities) of shape [...] or [..., 1]."""
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim and predictions.shape[-1] != 1:
        predictions, targets = predictions[..., None], targets[..., None]
    return dice_loss(predictions, targets, smooth=smooth, apply_softmax=apply_sigmoid, reduction="mean")


_dot_last_dim = jnp.vectorize(jnp.dot, signature="(n),(n)->()")


def _integer_one_hot(scores, labels, fn: str):
    scores, labels = jnp.asarray(scores), jnp.asarray(labels)
    if scores.ndim < 1 or labels.shape != scores.shape[:-1]:
        raise ValueError(f"optim.{fn}: labels {labels.shape} must be integer classes with the shape of scores "
                         f"{scores.shape} less its last (class) axis")
    return scores, nn.one_hot(labels, scores.shape[-1])


def multiclass_hinge_loss(scores, labels):
    """``max_k(scores_k + 1 - [k == label]) - scores_label`` over the last axis."""
    scores, one_hot = _integer_one_hot(scores, labels, "multiclass_hinge_loss")
    return jnp.max(scores + 1.0 - one_hot, axis=-1) - _dot_last_dim(scores, one_hot)


def multiclass_perceptron_loss(scores, labels):
    """``max_k scores_k - scores_label`` over the last axis."""
    scores, one_hot = _integer_one_hot(scores, labels, "multiclass_perceptron_loss")
    return jnp.max(scores, axis=-1) - _dot_last_dim(scores, one_hot)


def perceptron_loss(predictor_outputs, targets):
    """``max(0, -outputs * targets)`` for targets in {-1, 1}, elementwise."""
    predictor_outputs, targets = jnp.asarray(predictor_outputs), jnp.asarray(targets)
    if predictor_outputs.shape != targets.shape:
        raise ValueError(f"optim.perceptron_loss: predictor_outputs {predictor_outputs.shape} and targets "
                         f"{targets.shape} must have the same shape (as in optax)")
    return jnp.maximum(0, -predictor_outputs * targets)


def sparsemax_loss(logits, labels):
    """Binary sparsemax loss: ``sparse_plus(-logits)`` for label 1, ``sparse_plus(logits)`` for label 0."""
    logits = jnp.asarray(logits)
    return nn.sparse_plus(jnp.where(labels, -logits, logits))


def _multiclass_sparsemax_loss(scores, label):
    proba = projection_simplex(scores)
    # the Fenchel conjugate of the Gini negentropy, shifted by scores[label]
    scores = (scores - scores[label]).at[label].set(0.0)
    return jnp.dot(proba, jnp.where(proba, scores, 0.0)) + 0.5 * (1.0 - jnp.dot(proba, proba))


def multiclass_sparsemax_loss(scores, labels):
    """Sparsemax loss of ``scores`` (B, K) against integer ``labels`` (B,)."""
    scores, labels = jnp.asarray(scores), jnp.asarray(labels)
    if scores.ndim != 2 or labels.shape != scores.shape[:1]:
        raise ValueError(f"optim.multiclass_sparsemax_loss: scores must have shape (batch, classes) and labels "
                         f"(batch,), got {scores.shape} and {labels.shape}")
    return vmap(_multiclass_sparsemax_loss)(scores, labels)


def make_fenchel_young_loss(max_fun):
    """The Fenchel-Young loss ``max_fun(scores) - <targets, scores>`` of a max function (e.g. logsumexp), over
    the last axis with any leading axes."""
    vdot_last_dim = jnp.vectorize(jnp.vdot, signature="(n),(n)->()")
    max_fun_last_dim = jnp.vectorize(max_fun, signature="(n)->()")

    def fenchel_young_loss(scores, targets, *args, **kwargs):
        return max_fun_last_dim(scores, *args, **kwargs) - vdot_last_dim(targets, scores)
    return fenchel_young_loss


def _safe_reduce(a, where=None, reduce_fn=None):
    output = reduce_fn(a, where=where) if reduce_fn is not None else a
    if reduce_fn is jnp.mean:
        # a mean over no valid list is nan: report 0 instead, unless the losses themselves had a nan
        input_valid = jnp.logical_not(jnp.any(jnp.isnan(a)))
        output = jnp.where(jnp.isnan(output) & input_valid, 0.0, output)
    if reduce_fn is None and where is not None:
        output = jnp.where(where, output, 0.0)  # so that sum(unreduced) == the sum-reduced loss
    return output


def ranking_softmax_loss(logits, labels, *, where=None, weights=None, reduce_fn=jnp.mean):
    """Listwise softmax cross-entropy of item ``logits`` against relevance ``labels`` over the last axis,
    reduced over lists by ``reduce_fn`` (None: per list); ``where`` masks items, ``weights`` scales labels."""
    logits = _floating(logits, "logits", "ranking_softmax_loss")
    labels = jnp.asarray(labels).astype(logits.dtype)
    if where is not None:
        labels = jnp.where(where, labels, jnp.zeros_like(labels))
        logits = jnp.where(where, logits, -jnp.ones_like(logits) * jnp.inf)
    if weights is not None:
        labels *= weights
    loss = -jnp.sum(labels * nn.log_softmax(logits, axis=-1), axis=-1, where=where)
    if where is not None:
        where = jnp.any(where, axis=-1)  # a list with no valid item takes no part in the reduction
    return _safe_reduce(loss, where=where, reduce_fn=reduce_fn)
