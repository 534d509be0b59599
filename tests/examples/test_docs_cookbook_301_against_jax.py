"""JAX's docs/new_docs/301/cookbook.md under kiln and under JAX (the against_jax session): the same values, dtypes,
weak types, containers and printed text, cell by cell.

The kiln side is tests/examples/jax_ported/docs_cookbook_301.py; the JAX side is the same source with JAX's imports
put back. The oracles are in test_docs_cookbook_301.py; this checks that the two libraries agree, at the same
reduced sizes: the key chain's draws (W, b, the tangents and covectors) bit for bit, every cell's results to float32
rounding (the Hessian-vector products and the complex Cholesky gradient, sums of many terms, to 1e-5), and every
printed line. No differences.
"""
from __future__ import annotations

import contextlib
import io

import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same  # noqa: E402

SIZES = dict(shape=(6, 5), num_covecs=8, num_vecs=7)  # (as test_docs_cookbook_301.py)
LOOSER = {"hvp", "hvp_timing", "cholesky", "descent"}  # (sums of many float32 terms; 100 descent steps)


def _run(lib):
    nb = load("docs_cookbook_301", lib)
    out = {}
    for label, cell in nb.CELLS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            size = nb.SIZED.get(label)
            out[label] = cell(**({size: SIZES[size]} if size else {})), buf.getvalue()
    return out


@pytest.fixture(scope="module")
def both():
    return _run("kiln"), _run("jax")


@pytest.mark.parametrize("label", [label for label, _ in load("docs_cookbook_301").CELLS])
def test_cell(both, label):
    kout, jout = both
    (kvalue, ktext), (jvalue, jtext) = kout[label], jout[label]
    rtol = 1e-5 if label in LOOSER else 1e-6
    assert_same(kvalue, jvalue, rtol, 1e-6, allow_empty=True)
    assert ktext == jtext


def test_draws_bit_for_bit(both):
    kout, jout = both
    assert_same(kout["setup"][0], jout["setup"][0], 0, 0)
    for label, pick in (("jvp", 0), ("vjp", 0), ("mjp", 0), ("jmp", 0)):
        assert_same(kout[label][0][pick], jout[label][0][pick], 0, 0)
    assert_same(kout["linearize_apply"][0][:2], jout["linearize_apply"][0][:2], 0, 0)
