"""kiln.optim.losses: optax.losses' loss functions (per-example losses; take the mean yourself)."""
from kiln.frontend.optim import cosine_distance as cosine_distance
from kiln.frontend.optim import cosine_similarity as cosine_similarity
from kiln.frontend.optim import hinge_loss as hinge_loss
from kiln.frontend.optim import huber_loss as huber_loss
from kiln.frontend.optim import kl_divergence as kl_divergence
from kiln.frontend.optim import kl_divergence_with_log_targets as kl_divergence_with_log_targets
from kiln.frontend.optim import l2_loss as l2_loss
from kiln.frontend.optim import log_cosh as log_cosh
from kiln.frontend.optim import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from kiln.frontend.optim import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from kiln.frontend.optim import softmax_cross_entropy as softmax_cross_entropy
from kiln.frontend.optim import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from kiln.frontend.optim import squared_error as squared_error

__all__ = [
    "cosine_distance", "cosine_similarity", "hinge_loss", "huber_loss", "kl_divergence",
    "kl_divergence_with_log_targets", "l2_loss", "log_cosh", "safe_softmax_cross_entropy",
    "sigmoid_binary_cross_entropy", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
    "squared_error",
]
