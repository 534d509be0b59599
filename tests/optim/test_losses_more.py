"""kiln.optim's remaining optax losses, optax.assignment and optax.perturbations, against independent NumPy/SciPy
references (brute-force CTC over all alignments, sort-based sparsemax, scipy's linear_sum_assignment, the score
function estimator written out by hand), eagerly and under kiln.jit, with gradients checked by finite
differences where users differentiate the loss."""
import itertools
import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.special import expit, log_softmax, logsumexp, softmax

import kiln
import kiln.numpy as jnp
from kiln import optim
from kiln.optim import assignment, losses, perturbations

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 5)).astype(np.float32)
HARD = (RNG.random((6, 5)) > 0.5).astype(np.float32)
PROBS = softmax(RNG.standard_normal((6, 5)), axis=-1).astype(np.float32)
INT_LABELS = RNG.integers(0, 5, 6).astype(np.int32)
SEG = RNG.standard_normal((2, 4, 3, 3)).astype(np.float32)
SEG_T = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, (2, 4, 3))]


def _np(x):
    return np.asarray(x)


def _fd_grad(f, x, eps=1e-3):
    """Central finite differences of a scalar function of a float64 array."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _check_grad(loss, x, rtol=2e-2, atol=2e-3):
    """kiln.grad of sum(loss) against central differences of the same (float32) kiln loss; eps is large
    enough that float32 rounding stays well under the tolerance."""
    got = _np(kiln.grad(lambda x: jnp.sum(loss(x)))(x.astype(np.float32)))
    want = _fd_grad(lambda v: float(np.sum(_np(loss(v.astype(np.float32))), dtype=np.float64)), x, eps=1e-2)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------------------------------------
# Elementwise / per-example losses against NumPy formulas
# --------------------------------------------------------------------------------------------------------

def _np_focal(x, y, alpha=None, gamma=2.0):
    x, y = x.astype(np.float64), y.astype(np.float64)
    # -log(p), -log(1-p) and 1 - p without cancellation
    ce = y * np.logaddexp(0, -x) + (1 - y) * np.logaddexp(0, x)
    loss = ce * ((1 - y) * expit(x) + y * expit(-x)) ** gamma
    return loss if alpha is None else (alpha * y + (1 - alpha) * (1 - y)) * loss


def _np_sparsemax(z):
    """Sparsemax (Martins & Astudillo 2016) by sorting, one vector."""
    u = np.sort(z)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, z.size + 1)
    support = k[1 + k * u > css].max()
    tau = (css[support - 1] - 1) / support
    return np.maximum(z - tau, 0)


def _np_sparsemax_loss(z, y):
    z = z.astype(np.float64)
    p = _np_sparsemax(z)
    return p @ z - 0.5 * p @ p + 0.5 - z[y]


def _np_sparse_plus(z):
    return np.where(z <= -1, 0.0, np.where(z >= 1, z, (z + 1) ** 2 / 4))


def _np_dice(pred, targ, alpha=0.5, beta=0.5, smooth=1.0, weights=None, ignore_background=False, reduction="mean"):
    probs = expit(pred) if pred.shape[-1] == 1 else softmax(pred.astype(np.float64), axis=-1)
    axes = tuple(range(1, pred.ndim - 1))
    inter, ps, ts = (np.sum(probs * targ, axes), np.sum(probs, axes), np.sum(targ, axes))
    loss = 1 - (inter + smooth) / (inter + alpha * (ps - inter) + beta * (ts - inter) + smooth)
    if weights is not None:
        loss = loss * weights
    if ignore_background:
        loss = loss[..., 1:]
    return {"mean": loss.mean(-1), "sum": loss.sum(-1), "none": loss}[reduction]


def _np_ntxent(e, labels, t=0.07):
    e = e.astype(np.float64)
    u = e / np.linalg.norm(e, axis=1, keepdims=True)
    s = u @ u.T / t
    terms = []
    for i, j in itertools.permutations(range(len(labels)), 2):
        if labels[i] == labels[j]:
            neg = [k for k in range(len(labels)) if labels[k] != labels[i]]
            terms.append(-(s[i, j] - logsumexp(np.r_[s[i, j], s[i, neg]])))
    return np.mean(terms)


def _np_triplet(a, p, n, degree=2, margin=1.0, eps=1e-6):
    d = lambda o: (np.sum((a - o).astype(np.float64) ** degree, -1) + eps) ** (1 / degree)  # noqa: E731
    return np.maximum(d(p) - d(n) + margin, 0)


def _np_ranking(s, y, where=None, weights=None):
    s, y = s.astype(np.float64), y.astype(np.float64)
    if where is not None:
        y, s = np.where(where, y, 0), np.where(where, s, -np.inf)
    if weights is not None:
        y = y * weights
    with np.errstate(invalid="ignore"):
        terms = np.where(y != 0, y * log_softmax(s, -1), 0)
    return -terms.sum(-1)


POS = np.abs(X) + 0.1
TRIPLE = (X, X + 0.3 * RNG.standard_normal((6, 5)).astype(np.float32), RNG.standard_normal((6, 5)).astype(np.float32))
WHERE = RNG.random((6, 5)) > 0.3
WEIGHTS = np.abs(RNG.standard_normal((6, 5))).astype(np.float32)

CASES = [
    ("sigmoid_focal_loss", lambda: losses.sigmoid_focal_loss(X, HARD), lambda: _np_focal(X, HARD)),
    ("sigmoid_focal_loss soft alpha gamma", lambda: losses.sigmoid_focal_loss(X, PROBS, alpha=0.25, gamma=1.5),
     lambda: _np_focal(X, PROBS, 0.25, 1.5)),
    ("sigmoid_focal_loss gamma 0 is bce", lambda: losses.sigmoid_focal_loss(X, HARD, gamma=0.0),
     lambda: _np(optim.sigmoid_binary_cross_entropy(X, HARD))),
    ("smooth_labels", lambda: losses.smooth_labels(HARD, 0.1), lambda: 0.9 * HARD + 0.1 / 5),
    ("smooth_labels axis tuple", lambda: losses.smooth_labels(HARD, 0.2, axis=(0, 1)), lambda: 0.8 * HARD + 0.2 / 30),
    ("smooth_labels axis None", lambda: losses.smooth_labels(HARD, 0.2, axis=None), lambda: 0.8 * HARD + 0.2 / 30),
    ("smooth_labels where", lambda: losses.smooth_labels(HARD, 0.3, where=WHERE),
     lambda: 0.7 * HARD + 0.3 / WHERE.sum(-1, keepdims=True)),
    ("poly_loss_cross_entropy", lambda: losses.poly_loss_cross_entropy(X, PROBS),
     lambda: -np.sum(PROBS * log_softmax(X, -1), -1) + 2.0 * (1 - np.sum(PROBS * softmax(X, -1), -1))),
    ("poly_loss_cross_entropy epsilon -1 axis 0",
     lambda: losses.poly_loss_cross_entropy(X, PROBS, epsilon=-1.0, axis=0),
     lambda: -np.sum(PROBS * log_softmax(X, 0), 0) - (PROBS.sum(0) - np.sum(PROBS * softmax(X, 0), 0))),
    ("generalized_kl_divergence", lambda: losses.generalized_kl_divergence(np.log(POS), PROBS),
     lambda: np.sum(PROBS * (np.log(PROBS) - np.log(POS)) + POS - PROBS, -1)),
    ("ntxent", lambda: losses.ntxent(X, np.array([0, 0, 1, 1, 2, 2])), lambda: _np_ntxent(X, [0, 0, 1, 1, 2, 2])),
    ("ntxent triples", lambda: losses.ntxent(X, np.array([0, 1, 0, 1, 0, 1]), temperature=0.5),
     lambda: _np_ntxent(X, [0, 1, 0, 1, 0, 1], 0.5)),
    ("triplet_margin_loss", lambda: losses.triplet_margin_loss(*TRIPLE), lambda: _np_triplet(*TRIPLE)),
    ("triplet_margin_loss degree 4 margin 3", lambda: losses.triplet_margin_loss(*TRIPLE, norm_degree=4, margin=3.0),
     lambda: _np_triplet(*TRIPLE, degree=4, margin=3.0)),
    ("triplet_margin_loss axis 0", lambda: losses.triplet_margin_loss(*(t.T for t in TRIPLE), axis=0),
     lambda: _np_triplet(*TRIPLE)),
    ("dice_loss", lambda: losses.dice_loss(SEG, SEG_T), lambda: _np_dice(SEG, SEG_T)),
    ("dice_loss tversky sum no background",
     lambda: losses.dice_loss(SEG, SEG_T, alpha=0.3, beta=0.7, reduction="sum", ignore_background=True),
     lambda: _np_dice(SEG, SEG_T, 0.3, 0.7, reduction="sum", ignore_background=True)),
    ("dice_loss weights none", lambda: losses.dice_loss(SEG, SEG_T, class_weights=[1., 2., 3.], reduction="none"),
     lambda: _np_dice(SEG, SEG_T, weights=np.array([1., 2., 3.]), reduction="none")),
    ("dice_loss probabilities", lambda: losses.dice_loss(softmax(SEG, -1), SEG_T, apply_softmax=False, smooth=0.5),
     lambda: _np_dice(np.log(softmax(SEG, -1)), SEG_T, smooth=0.5)),
    ("binary_dice_loss", lambda: losses.binary_dice_loss(SEG[..., 0], SEG_T[..., 0]),
     lambda: _np_dice(SEG[..., :1], SEG_T[..., :1])),
    ("multiclass_generalized_dice_loss", lambda: losses.multiclass_generalized_dice_loss(SEG, SEG_T),
     lambda: np.mean(_np_dice(SEG, SEG_T, reduction="none", weights=(lambda w: w / w.sum() * 3)(
         1 / (SEG_T.sum((0, 1, 2)).astype(np.float64) ** 2 + 1e-7))))),
    ("multiclass_hinge_loss", lambda: losses.multiclass_hinge_loss(X, INT_LABELS),
     lambda: np.max(X + 1 - np.eye(5)[INT_LABELS], -1) - X[np.arange(6), INT_LABELS]),
    ("multiclass_perceptron_loss", lambda: losses.multiclass_perceptron_loss(X, INT_LABELS),
     lambda: np.max(X, -1) - X[np.arange(6), INT_LABELS]),
    ("perceptron_loss", lambda: losses.perceptron_loss(X, np.sign(PROBS - 0.2)),
     lambda: np.maximum(0, -X * np.sign(PROBS - 0.2))),
    ("sparsemax_loss", lambda: losses.sparsemax_loss(2 * X, HARD),
     lambda: _np_sparse_plus(np.where(HARD, -2 * X, 2 * X))),
    ("multiclass_sparsemax_loss", lambda: losses.multiclass_sparsemax_loss(X, INT_LABELS),
     lambda: [_np_sparsemax_loss(z, y) for z, y in zip(X, INT_LABELS)]),
    ("multiclass_sparsemax_loss peaked", lambda: losses.multiclass_sparsemax_loss(5 * X, INT_LABELS),
     lambda: [_np_sparsemax_loss(z, y) for z, y in zip(5 * X, INT_LABELS)]),
    ("make_fenchel_young_loss logsumexp is softmax ce",
     lambda: losses.make_fenchel_young_loss(kiln.nn.logsumexp)(X, PROBS),
     lambda: -np.sum(PROBS * log_softmax(X, -1), -1)),
    ("make_fenchel_young_loss leading axes", lambda: losses.make_fenchel_young_loss(kiln.nn.logsumexp)(
        X.reshape(2, 3, 5), PROBS.reshape(2, 3, 5)), lambda: -np.sum(PROBS * log_softmax(X, -1), -1).reshape(2, 3)),
    ("ranking_softmax_loss", lambda: losses.ranking_softmax_loss(X, HARD), lambda: _np_ranking(X, HARD).mean()),
    ("ranking_softmax_loss where weights sum",
     lambda: losses.ranking_softmax_loss(X, HARD, where=WHERE, weights=WEIGHTS, reduce_fn=jnp.sum),
     lambda: _np_ranking(X, HARD, WHERE, WEIGHTS).sum()),
    ("ranking_softmax_loss unreduced", lambda: losses.ranking_softmax_loss(X, HARD, where=WHERE, reduce_fn=None),
     lambda: _np_ranking(X, HARD, WHERE)),
]


@pytest.mark.parametrize("name,got,want", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_numpy(name, got, want):
    np.testing.assert_allclose(_np(got()), np.asarray(want(), np.float64), rtol=2e-5, atol=2e-6)


JIT_CASES = [
    (losses.sigmoid_focal_loss, (X, HARD), {"alpha": 0.3}),
    (losses.smooth_labels, (HARD, 0.1), {}),
    (losses.poly_loss_cross_entropy, (X, PROBS), {}),
    (losses.generalized_kl_divergence, (np.log(POS), PROBS), {}),
    (losses.ntxent, (X, np.array([0, 0, 1, 1, 2, 2])), {}),
    (losses.triplet_margin_loss, TRIPLE, {}),
    (losses.dice_loss, (SEG, SEG_T), {"alpha": 0.2}),
    (losses.binary_dice_loss, (SEG[..., 0], SEG_T[..., 0]), {}),
    (losses.multiclass_generalized_dice_loss, (SEG, SEG_T), {}),
    (losses.multiclass_hinge_loss, (X, INT_LABELS), {}),
    (losses.multiclass_perceptron_loss, (X, INT_LABELS), {}),
    (losses.perceptron_loss, (X, np.sign(PROBS - 0.2)), {}),
    (losses.sparsemax_loss, (X, HARD), {}),
    (losses.multiclass_sparsemax_loss, (X, INT_LABELS), {}),
    (losses.ranking_softmax_loss, (X, HARD), {"where": WHERE}),
]


@pytest.mark.parametrize("fn,args,kw", JIT_CASES, ids=[c[0].__name__ for c in JIT_CASES])
def test_jit_matches_eager(fn, args, kw):
    np.testing.assert_allclose(_np(kiln.jit(fn)(*args, **kw)), _np(fn(*args, **kw)),
                               rtol=1e-6, atol=1e-7)


def test_names_are_optax_losses_and_reach_the_top_level():
    for name in ["sigmoid_focal_loss", "smooth_labels", "ctc_loss", "ctc_loss_with_forward_probs", "ntxent",
                 "convex_kl_divergence", "generalized_kl_divergence"]:
        assert getattr(optim, name) is getattr(losses, name)
    assert assignment.hungarian_algorithm and perturbations.make_perturbed_fun


def test_convex_kl_divergence_is_deprecated_generalized_kl():
    with pytest.warns(DeprecationWarning, match="use generalized_kl_divergence"):
        got = losses.convex_kl_divergence(np.log(POS), PROBS)
    np.testing.assert_array_equal(_np(got), _np(losses.generalized_kl_divergence(np.log(POS), PROBS)))


def test_focal_loss_extreme_logits_stay_finite():
    # a hard label with a confident logit: 1 - p_t underflows, which must give 0 weight, not -inf/nan
    x = np.array([200.0, -200.0, 200.0, -200.0, 30.0], np.float32)
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0], np.float32)
    loss = _np(losses.sigmoid_focal_loss(x, y, gamma=0.5))
    np.testing.assert_allclose(loss, [0, 0, 200, 200, _np_focal(x[4:], y[4:], gamma=0.5)[0]], rtol=1e-6, atol=1e-30)
    g = _np(kiln.grad(lambda x: jnp.sum(losses.sigmoid_focal_loss(x, y, gamma=0.5)))(x))
    assert np.all(np.isfinite(g)), g


def test_ranking_softmax_loss_list_without_valid_items_gives_zero_not_nan():
    where = np.array([[True, True, False], [False, False, False]])
    s, y = np.array([[1., 2., 3.], [1., 2., 3.]], np.float32), np.array([[1., 0., 0.], [1., 0., 0.]], np.float32)
    got = _np(losses.ranking_softmax_loss(s, y, where=where))
    np.testing.assert_allclose(got, _np_ranking(s[:1], y[:1], where[:1]).mean(), rtol=1e-6)
    np.testing.assert_array_equal(_np(losses.ranking_softmax_loss(s, y, where=where, reduce_fn=None))[1], 0.0)


# --------------------------------------------------------------------------------------------------------
# Gradients by finite differences
# --------------------------------------------------------------------------------------------------------

GRAD_CASES = [
    ("sigmoid_focal_loss", lambda x: losses.sigmoid_focal_loss(x, PROBS, alpha=0.25, gamma=1.5), X),
    ("poly_loss_cross_entropy", lambda x: losses.poly_loss_cross_entropy(x, PROBS), X),
    ("generalized_kl_divergence", lambda x: losses.generalized_kl_divergence(x, PROBS), np.log(POS)),
    ("ntxent", lambda x: losses.ntxent(x, np.array([0, 0, 1, 1, 2, 2]), temperature=0.5), X),
    ("triplet_margin_loss", lambda x: losses.triplet_margin_loss(x, TRIPLE[1], TRIPLE[2], margin=3.0), X),
    ("dice_loss", lambda x: losses.dice_loss(x, SEG_T), SEG),
    ("multiclass_generalized_dice_loss", lambda x: losses.multiclass_generalized_dice_loss(x, SEG_T), SEG),
    ("ranking_softmax_loss", lambda x: losses.ranking_softmax_loss(x, HARD, where=WHERE), X),
]


@pytest.mark.parametrize("name,loss,x", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(name, loss, x):
    _check_grad(loss, x)


def test_sparsemax_gradient_is_sparsemax_minus_one_hot():
    # d/dz of the sparsemax loss is sparsemax(z) - e_y: exact, through the custom jvp of the projection
    g = _np(kiln.grad(lambda z: jnp.sum(losses.multiclass_sparsemax_loss(z, INT_LABELS)))(2 * X))
    want = np.stack([_np_sparsemax(z.astype(np.float64)) for z in 2 * X]) - np.eye(5)[INT_LABELS]
    np.testing.assert_allclose(g, want, atol=1e-6)
    g = _np(kiln.jit(kiln.grad(lambda z: jnp.sum(losses.multiclass_sparsemax_loss(z, INT_LABELS))))(2 * X))
    np.testing.assert_allclose(g, want, atol=1e-6)


def test_fenchel_young_gradient_is_argmax_minus_targets():
    loss = losses.make_fenchel_young_loss(kiln.nn.logsumexp)
    g = _np(kiln.grad(lambda s: jnp.sum(loss(s, PROBS)))(X))
    np.testing.assert_allclose(g, softmax(X.astype(np.float64), -1) - PROBS, atol=1e-6)


# --------------------------------------------------------------------------------------------------------
# CTC against a brute-force sum over all alignments
# --------------------------------------------------------------------------------------------------------

def _collapse(path, blank):
    out = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
    return tuple(out)


def _np_ctc(logits, labels, blank=0):
    """-log sum_{alignments a of labels} prod_t softmax(logits[t])[a_t], by enumerating all K**T paths."""
    logp = log_softmax(logits.astype(np.float64), -1)
    t, k = logp.shape
    probs = [logp[np.arange(t), list(p)].sum() for p in itertools.product(range(k), repeat=t)
             if _collapse(p, blank) == tuple(labels)]
    return -logsumexp(probs)


CTC_LOGITS = RNG.standard_normal((4, 5, 4)).astype(np.float32)
CTC_LABELS = np.array([[1, 2, 0], [3, 3, 0], [2, 1, 2], [1, 0, 0]], np.int32)
CTC_LABEL_PAD = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 0], [0, 1, 1]], np.float32)
CTC_LOGIT_PAD = np.zeros((4, 5), np.float32)
CTC_LOGIT_PAD[3, 3:] = 1.0  # the last sequence has 3 frames


def _ctc_want(blank=0, labels=CTC_LABELS):
    out = []
    for b in range(4):
        frames = int(round(5 - CTC_LOGIT_PAD[b].sum()))
        n = int(round(3 - CTC_LABEL_PAD[b].sum()))
        out.append(_np_ctc(CTC_LOGITS[b, :frames], labels[b, :n], blank))
    return np.array(out)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_ctc_loss_is_the_sum_over_alignments(jit):
    f = kiln.jit(losses.ctc_loss) if jit else losses.ctc_loss
    got = _np(f(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD))
    np.testing.assert_allclose(got, _ctc_want(), rtol=1e-5)


def test_ctc_loss_other_blank_id():
    labels = np.where(CTC_LABELS == 2, 0, CTC_LABELS)  # class 2 is now the blank, 0 a label
    got = _np(losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, labels, CTC_LABEL_PAD, blank_id=2))
    np.testing.assert_allclose(got, _ctc_want(blank=2, labels=labels), rtol=1e-5)


def test_ctc_forward_probs_shapes_and_final_state():
    loss, phi, emit = losses.ctc_loss_with_forward_probs(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD)
    assert phi.shape == (5, 4, 4) and emit.shape == (5, 4, 3) and loss.shape == (4,)
    lens = (3 - CTC_LABEL_PAD.sum(1)).astype(int)
    np.testing.assert_allclose(-_np(phi)[-1, np.arange(4), lens], _np(loss), rtol=1e-6)
    # after the first frame: blank-only state has log p(blank), the first label state log p(label 1)
    logp = log_softmax(CTC_LOGITS[:, 0].astype(np.float64), -1)
    np.testing.assert_allclose(_np(phi)[0, :, 0], logp[:, 0], rtol=1e-5)
    np.testing.assert_allclose(_np(emit)[0, :, 0], logp[np.arange(4), CTC_LABELS[:, 0]], rtol=1e-5)


def test_ctc_gradient_matches_finite_differences():
    x = CTC_LOGITS[:2]
    _check_grad(lambda x: losses.ctc_loss(x, CTC_LOGIT_PAD[:2], CTC_LABELS[:2], CTC_LABEL_PAD[:2]), x)


# --------------------------------------------------------------------------------------------------------
# Assignment against scipy.optimize.linear_sum_assignment
# --------------------------------------------------------------------------------------------------------

SHAPES = [(1, 1), (1, 4), (4, 1), (3, 3), (4, 3), (3, 5), (6, 6), (7, 4), (5, 8)]
SOLVERS = [assignment.hungarian_algorithm, assignment.base_hungarian_algorithm]


def _check_assignment(cost, i, j):
    i, j = np.asarray(i), np.asarray(j)
    k = min(cost.shape)
    assert i.shape == j.shape == (k,)
    assert len(set(i.tolist())) == k and len(set(j.tolist())) == k  # one column per row and vice versa
    ri, ci = linear_sum_assignment(cost)
    np.testing.assert_allclose(cost[i, j].sum(), cost[ri, ci].sum(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_assignment_is_optimal(solver, shape):
    for seed in range(3):
        cost = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        _check_assignment(cost, *solver(cost))


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
def test_assignment_ties_integers_jit_and_vmap(solver):
    rng = np.random.default_rng(5)
    costs = rng.integers(0, 3, (4, 5, 4)).astype(np.int32)  # many ties
    for cost in costs:
        _check_assignment(cost, *kiln.jit(solver)(cost))
    i, j = kiln.vmap(solver)(costs)
    for b, cost in enumerate(costs):
        _check_assignment(cost, i[b], j[b])


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.__name__)
def test_assignment_documented_example_and_empty(solver):
    cost = np.array([[90, 80, 75, 70], [35, 85, 55, 65], [125, 95, 90, 95], [45, 110, 95, 115], [50, 100, 90, 100]])
    i, j = solver(cost)
    assert cost[np.asarray(i), np.asarray(j)].sum() == 265
    for shape in [(0, 3), (3, 0), (0, 0)]:
        i, j = solver(np.zeros(shape, np.float32))
        assert i.shape == j.shape == (0,)


# --------------------------------------------------------------------------------------------------------
# Perturbations: the estimator written out with the same kiln.random draws, and its expectation
# --------------------------------------------------------------------------------------------------------

def _draws(key, n, shape, sampler):
    # make_perturbed_fun splits the key per sample, then per leaf (one leaf here)
    return np.stack([_np(sampler(kiln.random.split(k, 1)[0], shape, np.float32)) for k in kiln.random.split(key, n)])


@pytest.mark.parametrize("noise_name", ["Normal", "Gumbel"])
@pytest.mark.parametrize("use_baseline", [True, False])
def test_perturbed_fun_is_the_score_function_estimator(noise_name, use_baseline):
    noise = getattr(perturbations, noise_name)()
    sampler = {"Normal": kiln.random.normal, "Gumbel": kiln.random.gumbel}[noise_name]
    x, sigma, n = np.array([0.3, -0.2, 0.1], np.float32), 0.5, 64
    f_np = lambda v: np.sum(np.maximum(v, 0.0) ** 2, -1)  # noqa: E731
    fn = perturbations.make_perturbed_fun(lambda v: jnp.sum(jnp.maximum(v, 0.0) ** 2), n, sigma, noise, use_baseline)
    key = kiln.random.key(7)
    z = _draws(key, n, x.shape, sampler).astype(np.float64)
    fy = f_np(x + sigma * z)
    np.testing.assert_allclose(_np(fn(key, x)), fy.mean(), rtol=1e-5)
    # d/dx log_prob((y - x) / sigma): z / sigma (normal), (1 - exp(-z)) / sigma (Gumbel)
    score = z / sigma if noise_name == "Normal" else (1 - np.exp(-z)) / sigma
    weight = fy - f_np(x) if use_baseline else fy
    want = np.mean(weight[:, None] * score, 0)
    np.testing.assert_allclose(_np(kiln.grad(fn, argnums=1)(key, x)), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(kiln.jit(kiln.grad(fn, argnums=1))(key, x)), want, rtol=1e-4, atol=1e-5)


def test_perturbed_fun_smooths_a_step_function():
    # E[1(x + sigma z > 0)] for normal z is Phi(x / sigma), with derivative phi(x / sigma) / sigma
    from scipy.stats import norm
    x, sigma = np.array([0.05, -0.1], np.float32), 0.2
    fn = perturbations.make_perturbed_fun(lambda v: (v > 0).astype(jnp.float32), 20000, sigma,
                                          perturbations.Normal())
    np.testing.assert_allclose(_np(fn(kiln.random.PRNGKey(0), x)), norm.cdf(x / sigma), atol=0.02)
    jac = _np(kiln.jacrev(fn, argnums=1)(kiln.random.PRNGKey(0), x))
    np.testing.assert_allclose(np.diag(jac), norm.pdf(x / sigma) / sigma, rtol=0.1)


def test_perturbed_fun_on_a_pytree_and_noise_objects():
    fn = perturbations.make_perturbed_fun(lambda t: {"s": jnp.sum(t["a"]) * t["b"]}, 8, 0.1, perturbations.Gumbel())
    out = fn(kiln.random.key(1), {"a": np.ones(3, np.float32), "b": np.float32(2.0)})
    assert set(out) == {"s"} and np.isfinite(_np(out["s"]))
    z = np.linspace(-2, 2, 5).astype(np.float32)
    np.testing.assert_allclose(_np(perturbations.Normal().log_prob(z)), -0.5 * z ** 2)
    np.testing.assert_allclose(_np(perturbations.Gumbel().log_prob(z)), -z - np.exp(-z), rtol=1e-6)
    key = kiln.random.key(3)
    np.testing.assert_array_equal(_np(perturbations.Gumbel().sample(key, (4,))), _np(kiln.random.gumbel(key, (4,))))


# --------------------------------------------------------------------------------------------------------
# Errors: what, where, how to fix
# --------------------------------------------------------------------------------------------------------

ERRORS = [
    (lambda: losses.sigmoid_focal_loss(np.ones(3, np.int32), np.ones(3)), TypeError,
     r"sigmoid_focal_loss: logits must be a floating-point array, got int32"),
    (lambda: losses.smooth_labels(np.eye(3, dtype=np.int32), 0.1), TypeError, r"smooth_labels: labels must be a float"),
    (lambda: losses.poly_loss_cross_entropy(X, INT_LABELS), TypeError,
     r"poly_loss_cross_entropy: labels must be a float"),
    (lambda: losses.ctc_loss(X, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD), ValueError,
     r"ctc_loss: logits must have shape \(batch, time, classes\), got shape \(6, 5\)"),
    (lambda: losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS[0], CTC_LABEL_PAD), ValueError,
     r"ctc_loss: labels must have shape \(batch, max_label_length\)"),
    (lambda: losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD[:, :2]), ValueError,
     r"label_paddings \(4, 2\) must have the shape of labels \(4, 3\)"),
    (lambda: losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD.T, CTC_LABELS, CTC_LABEL_PAD), ValueError,
     r"logit_paddings \(5, 4\) must have shape \(batch, time\) = \(4, 5\)"),
    (lambda: losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS[:2], CTC_LABEL_PAD[:2]), ValueError,
     r"labels have batch size 2 but logits have 4"),
    (lambda: losses.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD, blank_id=4), ValueError,
     r"blank_id=4 must index a class of logits \(0 <= blank_id < 4\)"),
    (lambda: losses.ntxent(X, np.array([0, 1])), ValueError,
     r"ntxent: embeddings must have shape \(batch, features\) and labels \(batch,\), got \(6, 5\) and \(2,\)"),
    (lambda: losses.triplet_margin_loss(X, X, np.ones((6, 5), np.int32)), TypeError,
     r"triplet_margin_loss: negatives must be a floating-point"),
    (lambda: losses.dice_loss(SEG, SEG_T[..., :2]), ValueError, r"dice_loss: predictions \(2, 4, 3, 3\) and targets"),
    (lambda: losses.dice_loss(SEG, SEG_T, reduction="avg"), ValueError,
     r"dice_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda: losses.dice_loss(SEG, SEG_T, apply_softmax=False), ValueError,
     r"apply_softmax=False, predictions must be probabilities that sum to 1"),
    (lambda: losses.dice_loss(SEG, SEG_T, class_weights=np.ones((3, 1))), ValueError,
     r"class_weights must be a vector \(num_classes,\), got shape \(3, 1\)"),
    (lambda: losses.multiclass_generalized_dice_loss(SEG, SEG_T[..., :2]), ValueError,
     r"multiclass_generalized_dice_loss: predictions \(2, 4, 3, 3\) and targets \(2, 4, 3, 2\)"),
    (lambda: losses.multiclass_hinge_loss(X, INT_LABELS[:3]), ValueError,
     r"multiclass_hinge_loss: labels \(3,\) must be integer classes with the shape of scores \(6, 5\)"),
    (lambda: losses.multiclass_perceptron_loss(X, X), ValueError, r"multiclass_perceptron_loss: labels \(6, 5\)"),
    (lambda: losses.perceptron_loss(X, X[0]), ValueError,
     r"perceptron_loss: predictor_outputs \(6, 5\) and targets \(5,\) must have the same shape"),
    (lambda: losses.multiclass_sparsemax_loss(X[0], INT_LABELS[0]), ValueError,
     r"multiclass_sparsemax_loss: scores must have shape \(batch, classes\)"),
    (lambda: losses.ranking_softmax_loss(INT_LABELS, INT_LABELS), TypeError,
     r"ranking_softmax_loss: logits must be a floating-point"),
    (lambda: assignment.hungarian_algorithm(np.ones(3)), ValueError,
     r"hungarian_algorithm: cost_matrix must be a matrix \(n, m\), got shape \(3,\); vmap"),
    (lambda: assignment.base_hungarian_algorithm(np.ones((2, 2, 2))), ValueError,
     r"base_hungarian_algorithm: cost_matrix must be a matrix"),
    (lambda: assignment.hungarian_algorithm(np.ones((2, 2), bool)), TypeError,
     r"hungarian_algorithm: cost_matrix must hold real numbers \(float or int\), got bool"),
    (lambda: perturbations.make_perturbed_fun(jnp.sum, noise="gumbel"), TypeError,
     r"make_perturbed_fun: noise must have sample\(key, shape, dtype\) and log_prob\(z\) methods"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_clear_errors(call, exc, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match):
            call()
