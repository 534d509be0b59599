"""JAX's notebook "Generalized convolutions in JAX" under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/convolutions.py; the JAX side is the same source with JAX's imports put
back. NumPy/SciPy oracles are in test_convolutions.py; this only checks that the two libraries agree, cell by cell:
the same printed lines, the same shapes and dtypes, the same numbers (to 1e-5) and the same PRNG draws.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

jax_lib = pytest.importorskip("jax")
from ported import load  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("convolutions"), load("convolutions", "jax")


def _run(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


def _same(kiln_tree, jax_tree, rtol=1e-5, atol=1e-6):
    a, b = kiln.tree_util.tree_leaves(kiln_tree), jax_lib.tree_util.tree_leaves(jax_tree)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert isinstance(x, np.ndarray) == isinstance(y, np.ndarray)  # a NumPy array where JAX's is one
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def cells(both):
    """Each library's 2-D cells, run once on its own kernel and image: ({name: (result, printed)}, ...)."""
    runs = []
    for module in both:
        kernel, kernel_printed = _run(module.edge_kernel)
        img, img_printed = _run(module.synthetic_image)
        dn, dn_printed = _run(module.dimension_numbers, img, kernel)
        run = {"edge_kernel": (kernel, kernel_printed), "synthetic_image": (img, img_printed),
               "dimension_numbers": (dn, dn_printed)}
        for name in ("lax_conv", "lax_conv_with_general_padding"):
            run[name] = _run(getattr(module, name), img, kernel)
        for name in ("same_padding", "valid_padding", "same_padding_stride_2", "rhs_dilation", "lhs_dilation",
                     "transposed_conv"):
            run[name] = _run(getattr(module, name), img, kernel, dn)
        runs.append(run)
    return runs


# The smoothing cells (no prints, no host arrays) run eagerly under kiln, as the notebook runs them, and jitted under
# JAX: JAX's eager operations compile one by one (3 s of this file's 6); its jitted numbers are its eager ones here.

def test_smoothing_1d_matches_jax(both):
    k, j = both
    (kx, ky, ks), (jx, jy, js) = k.smoothing_1d(), jax_lib.jit(j.smoothing_1d)()
    _same((kx, ky, ks), (jx, jy, js))
    # the same normal draws from random.key(1701), up to the last bit of sin
    np.testing.assert_allclose(np.asarray(ky) - np.sin(np.asarray(kx)), np.asarray(jy) - np.sin(np.asarray(jx)),
                               rtol=0, atol=1e-6)


def test_smoothing_nd_matches_jax(both):
    k, j = both
    face = np.random.RandomState(0).randint(0, 256, (23, 32, 3)).astype(np.uint8)
    _same(k.smoothing_nd(face), jax_lib.jit(j.smoothing_nd)(face), atol=1e-4)


def test_2d_cells_match_jax(cells):
    kc, jc = cells
    assert kc.keys() == jc.keys()
    for name in kc:
        (kr, kp), (jr, jp) = kc[name], jc[name]
        assert kp == jp, name
        if name == "dimension_numbers":
            assert type(kr).__name__ == type(jr).__name__ == "ConvDimensionNumbers"
            assert tuple(kr) == tuple(jr) and kr._fields == jr._fields
            continue
        _same(kr, jr, atol=0)  # small integers: exact in both
        if isinstance(kr, tuple):  # (out, its first channel as a NumPy array)
            assert type(kr[1]) is type(jr[1]) is np.ndarray


@pytest.mark.parametrize("cell", ["conv_1d", "conv_3d"])
def test_1d_and_3d_cells_match_jax(both, cell):
    (kr, kp), (jr, jp) = (_run(getattr(module, cell)) for module in both)
    assert kp == jp
    *kvals, kdn, kout = kr
    *jvals, jdn, jout = jr
    assert tuple(kdn) == tuple(jdn) and type(kdn).__name__ == type(jdn).__name__
    _same(kvals, jvals)
    _same(kout, jout, atol=1e-5)
