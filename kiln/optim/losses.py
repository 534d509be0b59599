"""kiln.optim.losses: optax.losses' loss functions (per-example losses; take the mean yourself)."""
from kiln.frontend.optim.losses import binary_dice_loss as binary_dice_loss
from kiln.frontend.optim.losses import convex_kl_divergence as convex_kl_divergence
from kiln.frontend.optim.losses import cosine_distance as cosine_distance
from kiln.frontend.optim.losses import cosine_similarity as cosine_similarity
from kiln.frontend.optim.losses import ctc_loss as ctc_loss
from kiln.frontend.optim.losses import ctc_loss_with_forward_probs as ctc_loss_with_forward_probs
from kiln.frontend.optim.losses import dice_loss as dice_loss
from kiln.frontend.optim.losses import generalized_kl_divergence as generalized_kl_divergence
from kiln.frontend.optim.losses import hinge_loss as hinge_loss
from kiln.frontend.optim.losses import huber_loss as huber_loss
from kiln.frontend.optim.losses import kl_divergence as kl_divergence
from kiln.frontend.optim.losses import kl_divergence_with_log_targets as kl_divergence_with_log_targets
from kiln.frontend.optim.losses import l2_loss as l2_loss
from kiln.frontend.optim.losses import log_cosh as log_cosh
from kiln.frontend.optim.losses import make_fenchel_young_loss as make_fenchel_young_loss
from kiln.frontend.optim.losses import multiclass_generalized_dice_loss as multiclass_generalized_dice_loss
from kiln.frontend.optim.losses import multiclass_hinge_loss as multiclass_hinge_loss
from kiln.frontend.optim.losses import multiclass_perceptron_loss as multiclass_perceptron_loss
from kiln.frontend.optim.losses import multiclass_sparsemax_loss as multiclass_sparsemax_loss
from kiln.frontend.optim.losses import ntxent as ntxent
from kiln.frontend.optim.losses import perceptron_loss as perceptron_loss
from kiln.frontend.optim.losses import poly_loss_cross_entropy as poly_loss_cross_entropy
from kiln.frontend.optim.losses import ranking_softmax_loss as ranking_softmax_loss
from kiln.frontend.optim.losses import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from kiln.frontend.optim.losses import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from kiln.frontend.optim.losses import sigmoid_focal_loss as sigmoid_focal_loss
from kiln.frontend.optim.losses import smooth_labels as smooth_labels
from kiln.frontend.optim.losses import softmax_cross_entropy as softmax_cross_entropy
from kiln.frontend.optim.losses import (
    softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels,
)
from kiln.frontend.optim.losses import sparsemax_loss as sparsemax_loss
from kiln.frontend.optim.losses import squared_error as squared_error
from kiln.frontend.optim.losses import triplet_margin_loss as triplet_margin_loss

__all__ = [
    "binary_dice_loss", "convex_kl_divergence", "cosine_distance", "cosine_similarity", "ctc_loss",
    "ctc_loss_with_forward_probs", "dice_loss", "generalized_kl_divergence", "hinge_loss", "huber_loss",
    "kl_divergence", "kl_divergence_with_log_targets", "l2_loss", "log_cosh", "make_fenchel_young_loss",
    "multiclass_generalized_dice_loss", "multiclass_hinge_loss", "multiclass_perceptron_loss",
    "multiclass_sparsemax_loss", "ntxent", "perceptron_loss", "poly_loss_cross_entropy", "ranking_softmax_loss",
    "safe_softmax_cross_entropy", "sigmoid_binary_cross_entropy", "sigmoid_focal_loss", "smooth_labels",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "sparsemax_loss", "squared_error",
    "triplet_margin_loss"
]
