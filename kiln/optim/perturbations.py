"""kiln.optim.perturbations: optax.perturbations' smoothing of functions by random perturbations."""
from kiln.frontend.optim.perturbations import Gumbel as Gumbel
from kiln.frontend.optim.perturbations import Normal as Normal
from kiln.frontend.optim.perturbations import make_perturbed_fun as make_perturbed_fun

__all__ = ["Gumbel", "Normal", "make_perturbed_fun"]
