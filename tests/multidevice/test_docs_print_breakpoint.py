"""JAX's docs/debugging/print_breakpoint.md ported to kiln (tests/examples/jax_ported/docs_print_breakpoint.py): its
``jax.pmap`` block, which needs two devices, on 8 CPU devices, against NumPy and the page's claims ("When
``jax.pmap``-ed, ``jax.debug.print``s might be reordered": one line per device, in either order; "using
``ordered=True`` will raise an error under ``jax.pmap``"). The page's other blocks are checked on one device in
tests/examples/test_docs_print_breakpoint.py; compared with JAX in tests/examples/
test_docs_print_breakpoint_against_jax.py.
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp

PORT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "jax_ported" / "docs_print_breakpoint.py"


@pytest.fixture(scope="module")
def page():
    spec = importlib.util.spec_from_file_location("jax_ported_docs_print_breakpoint", PORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pmap_prints_one_line_per_device(page, capsys):
    res = page.pmap_block()
    kiln.effects_barrier()
    assert (res.dtype, res.shape) == (np.float32, (2,))
    np.testing.assert_array_equal(np.asarray(res), np.arange(2.0))
    assert sorted(capsys.readouterr().out.splitlines()) == ["x: 0.0", "x: 1.0"]
    assert len(res.sharding.device_set) == 2  # one element per device


def test_ordered_print_under_pmap_is_an_error():
    def f(x):
        kiln.debug.print("x: {}", x, ordered=True)
        return x
    with pytest.raises(ValueError, match="ordered=False"):
        kiln.pmap(f)(jnp.arange(2.0))
