"""kiln.test_util: check derivatives against finite differences (as ``jax.test_util``). PYTEST_DONT_REWRITE"""
from kiln.frontend.test_util import check_grads as check_grads
from kiln.frontend.test_util import check_jvp as check_jvp
from kiln.frontend.test_util import check_vjp as check_vjp

__all__ = ["check_grads", "check_jvp", "check_vjp"]
