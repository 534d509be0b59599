"""Every public name of optax (the release kiln.optim follows) is in kiln.optim, at the top level and in each
public submodule, where optax is installed (``nox -s against_jax``): a missing name is a bug."""
import importlib

import pytest

optax = pytest.importorskip("optax")

from kiln import optim  # noqa: E402

SUBMODULES = ["assignment", "contrib", "experimental", "losses", "microbatching", "perturbations", "projections",
              "schedules", "second_order", "transforms", "tree", "tree_utils"]
# optax names that kiln.optim leaves out on purpose, with the reason
LEFT_OUT: dict[str, str] = {}


def _public(module) -> set[str]:
    """Public names, without the modules a module merely imports (optax.tree_utils' functools, typing)."""
    def wanted(n: str) -> bool:
        value = getattr(module, n)
        return type(value).__name__ != "module" or value.__name__.startswith(("optax.", "kiln."))
    return {n for n in dir(module) if not n.startswith("_") and wanted(n)}


def test_optax_release_is_the_one_kiln_follows():
    assert optax.__version__ == "0.2.8"


def test_every_top_level_name():
    missing = sorted(_public(optax) - _public(optim) - set(LEFT_OUT))
    assert not missing, f"kiln.optim lacks optax's {missing}"


@pytest.mark.parametrize("name", SUBMODULES)
def test_every_name_of_each_submodule(name):
    ours = importlib.import_module(f"kiln.optim.{name}")
    missing = sorted(n for n in _public(getattr(optax, name)) - _public(ours) if f"{name}.{n}" not in LEFT_OUT)
    assert not missing, f"kiln.optim.{name} lacks optax.{name}'s {missing}"
