"""kiln.optim's losses (optax.losses' names) against NumPy/SciPy, and the flatten / apply_if_finite wrappers."""
import numpy as np
import pytest
from scipy.special import expit, log_softmax, logsumexp

import kiln
import kiln.numpy as jnp
from kiln import optim

RNG = np.random.default_rng(0)
PRED = RNG.standard_normal((4, 5)).astype(np.float32)
TARG = RNG.standard_normal((4, 5)).astype(np.float32)
PROBS = np.exp(log_softmax(RNG.standard_normal((4, 5)), axis=-1)).astype(np.float32)
INT_LABELS = np.array([0, 4, 2, 1], np.int32)


def _np_huber(e, delta):
    a = np.abs(e)
    return np.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


def _np_cosine(a, b):
    return np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


CASES = [
    ("squared_error", lambda: optim.squared_error(PRED, TARG), lambda: (PRED - TARG) ** 2),
    ("squared_error no targets", lambda: optim.squared_error(PRED), lambda: PRED ** 2),
    ("l2_loss", lambda: optim.l2_loss(PRED, TARG), lambda: 0.5 * (PRED - TARG) ** 2),
    ("huber_loss", lambda: optim.huber_loss(3 * PRED, TARG, delta=1.5), lambda: _np_huber(3 * PRED - TARG, 1.5)),
    ("log_cosh", lambda: optim.log_cosh(30 * PRED, TARG),
     lambda: np.log(np.cosh((30 * PRED - TARG).astype(np.float64)))),
    ("cosine_similarity", lambda: optim.cosine_similarity(PRED, TARG), lambda: _np_cosine(PRED, TARG)),
    ("cosine_distance", lambda: optim.cosine_distance(PRED, TARG), lambda: 1 - _np_cosine(PRED, TARG)),
    ("sigmoid_binary_cross_entropy", lambda: optim.sigmoid_binary_cross_entropy(PRED, PROBS),
     lambda: -PROBS * np.log(expit(PRED)) - (1 - PROBS) * np.log(1 - expit(PRED))),
    ("softmax_cross_entropy", lambda: optim.softmax_cross_entropy(PRED, PROBS),
     lambda: -np.sum(PROBS * log_softmax(PRED, -1), -1)),
    ("softmax_cross_entropy axis 0", lambda: optim.softmax_cross_entropy(PRED, PROBS, axis=0),
     lambda: -np.sum(PROBS * log_softmax(PRED, 0), 0)),
    ("softmax_cross_entropy_with_integer_labels",
     lambda: optim.softmax_cross_entropy_with_integer_labels(PRED, INT_LABELS),
     lambda: logsumexp(PRED, -1) - PRED[np.arange(4), INT_LABELS]),
    ("softmax_cross_entropy_with_integer_labels axis 0",
     lambda: optim.softmax_cross_entropy_with_integer_labels(PRED.T, INT_LABELS, axis=0),
     lambda: logsumexp(PRED, -1) - PRED[np.arange(4), INT_LABELS]),
    ("safe_softmax_cross_entropy", lambda: optim.safe_softmax_cross_entropy(PRED, PROBS),
     lambda: -np.sum(PROBS * log_softmax(PRED, -1), -1)),
    ("hinge_loss", lambda: optim.hinge_loss(PRED, np.sign(TARG)), lambda: np.maximum(0, 1 - PRED * np.sign(TARG))),
    ("kl_divergence", lambda: optim.kl_divergence(log_softmax(PRED, -1), PROBS),
     lambda: np.sum(PROBS * (np.log(PROBS) - log_softmax(PRED, -1)), -1)),
    ("kl_divergence_with_log_targets", lambda: optim.kl_divergence_with_log_targets(log_softmax(PRED, -1),
                                                                                    np.log(PROBS)),
     lambda: np.sum(PROBS * (np.log(PROBS) - log_softmax(PRED, -1)), -1)),
]


@pytest.mark.parametrize("name,got,want", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_numpy(name, got, want):
    np.testing.assert_allclose(np.asarray(got()), want(), rtol=2e-5, atol=2e-6)


def test_losses_under_jit_and_grad():
    """Per-example losses compose with jit and grad; d/dlogits of softmax CE is softmax - labels."""
    f = kiln.jit(lambda z, y: optim.softmax_cross_entropy(z, y).mean())
    np.testing.assert_allclose(float(f(PRED, PROBS)), np.mean(-np.sum(PROBS * log_softmax(PRED, -1), -1)), rtol=1e-5)
    g = kiln.grad(lambda z: optim.softmax_cross_entropy_with_integer_labels(z, INT_LABELS).sum())(PRED)
    want = np.exp(log_softmax(PRED, -1)) - np.eye(5, dtype=np.float32)[INT_LABELS]
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    g = kiln.grad(lambda p: optim.huber_loss(p, TARG, delta=0.5).sum())(PRED)
    np.testing.assert_allclose(np.asarray(g), np.clip(PRED - TARG, -0.5, 0.5), rtol=1e-5, atol=1e-6)


def test_kl_divergence_zero_targets_count_as_zero():
    targets = np.array([[0.0, 0.5, 0.5]], np.float32)
    logp = np.log(np.array([[0.2, 0.4, 0.4]], np.float32))
    np.testing.assert_allclose(np.asarray(optim.kl_divergence(logp, targets)), [np.log(0.5 / 0.4)], rtol=1e-6)
    g = kiln.grad(lambda t: optim.kl_divergence(logp, t).sum())(targets)
    assert np.all(np.isfinite(np.asarray(g)))


def test_safe_softmax_cross_entropy_with_minus_inf_logits():
    logits = np.array([[-np.inf, 1.0, 2.0]], np.float32)
    labels = np.array([[0.0, 0.5, 0.5]], np.float32)
    assert np.isnan(np.asarray(optim.softmax_cross_entropy(logits, labels))).all()
    np.testing.assert_allclose(np.asarray(optim.safe_softmax_cross_entropy(logits, labels)),
                               -np.sum(labels[:, 1:] * log_softmax(logits[:, 1:], -1), -1), rtol=1e-6)


def test_softmax_cross_entropy_where_masks_classes():
    where = np.array([[True, True, False, True, True]])  # same ndim as the logits: a class mask
    got = optim.softmax_cross_entropy_with_integer_labels(PRED, np.array([0, 1, 3, 4], np.int32), where=where)
    kept = PRED[:, where[0]]
    want = logsumexp(kept, -1) - PRED[np.arange(4), [0, 1, 3, 4]]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    rows = np.array([True, False, True, True])  # one fewer axis: a mask of examples (optax expands it)
    got = optim.softmax_cross_entropy_with_integer_labels(PRED, INT_LABELS, where=rows)
    want = np.where(rows, logsumexp(PRED, -1) - PRED[np.arange(4), INT_LABELS], 0.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_losses_namespace_and_top_level_names():
    import kiln.optim as optax
    assert optax.losses.l2_loss is optax.l2_loss
    assert optax.schedules.linear_schedule is optax.linear_schedule
    from kiln.optim.losses import softmax_cross_entropy  # noqa: F401


@pytest.mark.parametrize("call,msg", [
    (lambda: optim.l2_loss(np.arange(3), np.arange(3)), "predictions must be a floating-point array, got int32"),
    (lambda: optim.squared_error(PRED, TARG[:2]), "predictions (4, 5) and targets (2, 5) must have the same shape"),
    (lambda: optim.softmax_cross_entropy_with_integer_labels(PRED, PROBS[:, 0]), "labels must be integers"),
    (lambda: optim.softmax_cross_entropy_with_integer_labels(PRED, INT_LABELS, axis=(0, 1)), "axis must be an int"),
])
def test_loss_errors(call, msg):
    with pytest.raises((TypeError, ValueError), match=None) as info:
        call()
    assert msg in str(info.value)


# -- wrappers -------------------------------------------------------------------------------------

PARAMS = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(3)]


def _train(opt, grads, jit=True):
    params = {k: jnp.asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    update = kiln.jit(opt.update) if jit else opt.update
    for g in grads:
        u, state = update(g, state, params)
        params = optim.apply_updates(params, u)
    return params, state


def test_flatten_gives_the_same_updates_as_the_inner_transform():
    want, _ = _train(optim.adamw(0.1, weight_decay=0.01), GRADS)
    got, state = _train(optim.flatten(optim.adamw(0.1, weight_decay=0.01)), GRADS)
    for k in PARAMS:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6)
    assert state[0].mu.shape == (8,)  # the inner state holds one vector of all 3*2 + 2 parameters


def test_apply_if_finite_skips_non_finite_updates_then_gives_up():
    bad = {k: np.full(v.shape, np.nan, np.float32) for k, v in PARAMS.items()}
    opt = optim.apply_if_finite(optim.sgd(0.1), max_consecutive_errors=2)
    params, state = _train(opt, [GRADS[0], bad, bad])
    want, _ = _train(optim.sgd(0.1), [GRADS[0]])
    for k in PARAMS:  # the two bad updates were skipped
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(want[k]), rtol=1e-6)
    assert int(state.notfinite_count) == 2 and int(state.total_notfinite) == 2 and not bool(state.last_finite)
    params, state = _train(opt, [GRADS[0], bad, bad, bad])  # the third in a row goes through
    assert np.isnan(np.asarray(params["w"])).all() and int(state.notfinite_count) == 3
    _, state = _train(opt, [bad, GRADS[1]])
    assert int(state.notfinite_count) == 0 and int(state.total_notfinite) == 1 and bool(state.last_finite)


def test_wrappers_reject_non_transforms():
    with pytest.raises(TypeError, match="optim.flatten: expected a GradientTransformation"):
        optim.flatten(lambda g: g)
    with pytest.raises(TypeError, match="optim.apply_if_finite: expected a GradientTransformation"):
        optim.apply_if_finite(object(), 3)
