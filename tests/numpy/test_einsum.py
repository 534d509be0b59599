"""kiln.numpy.einsum against numpy.einsum: explicit and implicit outputs, ellipsis broadcasting, diagonals and
traces, sums over single labels, size-1 broadcasting, several operands with the greedy order, the interleaved
form, dtypes, 0-d and size-0 operands; the contraction plan (one dot_general per pairwise step); errors."""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.core import dtypes

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(6)

# (subscripts, operand shapes)
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,kj", [(3, 4), (5, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iii->i", [(3, 3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("ijij->ij", [(2, 3, 2, 3)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("a,a,a->a", [(4,), (4,), (4,)]),
    ("ab,ab,ab->", [(2, 3), (2, 3), (2, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kb", [(2, 3, 4), (2, 4, 5)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,de,ea->b", [(2, 3, 4), (4, 5), (5, 6), (6, 2)]),
    ("ab,bc,cd,de,ef->af", [(2, 8), (8, 3), (3, 9), (9, 2), (2, 4)]),
    ("ab,cd,bc->ad", [(3, 4), (5, 2), (4, 5)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("...->", [(2, 3)]),
    ("...i,i", [(2, 3, 4), (4,)]),
    ("i...i", [(3, 2, 3)]),
    ("ij...,jk...->ik...", [(2, 3, 4), (3, 5, 1)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk", [(2, 1), (3, 4)]),
    ("ij,jk->ik", [(2, 3), (1, 4)]),
    ("ab,b->a", [(1, 3), (3,)]),
    (",ij->ij", [(), (2, 3)]),
    (",->", [(), ()]),
    ("ij,jk->ik", [(3, 0), (0, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ba,Ac", [(2, 3), (1, 4)]),
    ("ij->i", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
]


def _operands(shapes, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return [rng.normal(size=s).astype(dtype) for s in shapes]
    return [rng.integers(-3, 4, size=s).astype(dtype) for s in shapes]


def _check(out, expected, where, dtype=None, tol=None):
    tol = tol or dict(rtol=2e-5, atol=2e-5)
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), (where, type(out))
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    want = np.dtype(dtype) if dtype is not None else dtypes.canonicalize_dtype(expected.dtype)
    assert out.dtype == want, (where, out.dtype, want)
    np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected.astype(np.float64), err_msg=str(where),
                               **tol)


def test_einsum_against_numpy():
    ops = [_operands(shapes) for _, shapes in CASES]
    outs = kiln.jit(lambda ops: [knp.einsum(s, *o) for (s, _), o in zip(CASES, ops)])(ops)
    for (s, shapes), o, args in zip(CASES, outs, ops):
        # "...->" sums the ellipsis dimensions (as JAX); NumPy insists on "..." in an explicit output
        expected = args[0].sum() if s == "...->" else np.einsum(s, *args)
        _check(o, expected, (s, shapes))


def test_einsum_left_to_right_matches_greedy():
    picked = [c for c in CASES if len(c[1]) >= 3]
    ops = [_operands(shapes) for _, shapes in picked]
    outs = kiln.jit(lambda ops: [knp.einsum(s, *o, optimize=False) for (s, _), o in zip(picked, ops)])(ops)
    for (s, _), o, args in zip(picked, outs, ops):
        _check(o, np.einsum(s, *args), (s, "optimize=False"))


def test_einsum_dtypes_eager_and_interleaved():
    a, b = _operands([(3, 4), (4, 2)], np.int32)
    _check(knp.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->ik", a, b), "int32", dtype=np.int32)
    x = _operands([(3, 4)])[0]
    _check(knp.einsum("ij,jk->ik", a, x.T), a @ x.T, "int32 x float32", dtype=np.float32)
    p, q = rng.random((3, 4)) > 0.5, rng.random((4, 2)) > 0.5
    _check(knp.einsum("ij,jk->ik", p, q), np.einsum("ij,jk->ik", p, q), "bool", dtype=np.bool_)
    _check(knp.einsum("ij->j", p), np.any(p, axis=0), "bool sum", dtype=np.bool_)
    _check(knp.einsum("ij,jk", a, b, preferred_element_type=np.float32), (a @ b).astype(np.float32),
           "preferred_element_type", dtype=np.float32)
    _check(knp.einsum(x, [0, 1], x, [2, 1], [0, 2]), np.einsum(x, [0, 1], x, [2, 1], [0, 2]), "interleaved")
    _check(knp.einsum(x, [Ellipsis, 1], x, [Ellipsis, 1]), np.einsum(x, [Ellipsis, 1], x, [Ellipsis, 1]),
           "interleaved implicit")
    with kiln.config.override("enable_x64", True):
        y, z = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
        out = kiln.jit(lambda y, z: knp.einsum("bij,jk->bki", y, z))(y, z)
        _check(out, np.einsum("bij,jk->bki", y, z), "float64", tol=dict(rtol=1e-12, atol=1e-12))


def _prims(fn, *args):
    return [e.prim.name for e in kiln.make_ir(fn)(*args).ir.eqns]


def test_einsum_plan_one_dot_general_per_pair():
    a, b, c, d = _operands([(2, 30), (30, 40), (40, 3), (3, 5)])
    prims = _prims(lambda a, b, c, d: knp.einsum("ab,bc,cd,de->ae", a, b, c, d), a, b, c, d)
    assert prims.count("dot_general") == 3, prims
    assert "transpose" not in prims, prims
    # batch dimensions: shared kept labels go through dot_general's batch dims, not a broadcast
    x, y = _operands([(4, 2, 3), (4, 3, 5)])
    prims = _prims(lambda x, y: knp.einsum("bij,bjk->bik", x, y), x, y)
    assert prims == ["dot_general"], prims
    # a trace and a sum happen before any contraction, on the operand alone
    prims = _prims(lambda x: knp.einsum("iij->", x), _operands([(3, 3, 2)])[0])
    assert "dot_general" not in prims and "reduce_sum" in prims, prims


def test_einsum_path_greedy():
    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    path, text = knp.einsum_path("ij,jk,kl->il", a, b, c)
    assert path == [(0, 1), (0, 1)]  # ij,jk -> ik (8 elements) before jk,kl -> jl (15)
    assert "Complete contraction:  ij,jk,kl->il" in text
    # cd,bc -> db (200 elements) first; the outer product ab,cd (2e5) and ab,bc -> ac (1000) are bigger.
    a, b, c = np.ones((10, 2)), np.ones((100, 100)), np.ones((2, 100))
    path, _ = knp.einsum_path("ab,cd,bc->ad", a, b, c)
    assert path == [(1, 2), (0, 1)], path
    path, _ = knp.einsum_path("ab,cd,bc->ad", a, b, c, optimize=False)
    assert path == [(0, 1), (0, 1)]


def test_einsum_errors():
    x, y = _operands([(3, 4), (4, 5)])
    with pytest.raises(ValueError, match="kiln.numpy.einsum: subscripts 'ij,jk' name 2 operand\\(s\\) but 3 were "
                                         "given"):
        knp.einsum("ij,jk", x, y, y)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: operand 1 has 2 dimension\\(s\\) but its subscripts 'j' "
                                         "name 1"):
        knp.einsum("ij,j", x, y)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: operand 0 has 2 dimension\\(s\\) but its subscripts "
                                         "'ijk...' name 3"):
        knp.einsum("ijk...", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: size of label 'j' in operand 1 \\(3\\) does not match its "
                                         "size in operand 0 \\(4\\)"):
        knp.einsum("ij,jk", x, x.T[:3])
    with pytest.raises(ValueError, match="kiln.numpy.einsum: output label 'z' of subscripts 'ij,jk->iz' does not "
                                         "appear in any operand"):
        knp.einsum("ij,jk->iz", x, y)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: output label 'i' appears more than once"):
        knp.einsum("ij,jk->ii", x, y)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: subscripts 'ij->i->j' contain more than one '->'"):
        knp.einsum("ij->i->j", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: invalid '.' in operand 0"):
        knp.einsum("i..j", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: operand 0 of subscripts '.*' has more than one ellipsis"):
        knp.einsum("...i...", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: label 'i' is repeated in operand 0 with different sizes "
                                         "\\(3 and 4\\)"):
        knp.einsum("ii", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: invalid '-' or '>'"):
        knp.einsum("ij-jk", x)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: needs at least one operand"):
        knp.einsum("ij")
    with pytest.raises(TypeError, match="kiln.numpy.einsum: operand 1 is not an array"):
        knp.einsum("ij,jk", x, [[1.0]])
    with pytest.raises(ValueError, match="kiln.numpy.einsum: sublist labels must be ints"):
        knp.einsum(x, [0, "a"])
    with pytest.raises(NotImplementedError, match="kiln.numpy.einsum: an explicit path takes pairs"):
        knp.einsum("ij,jk", x, y, optimize=["einsum_path", (0,)])


def test_any_character_is_a_label_as_in_jax():
    # JAX's parser (opt_einsum's) takes any character but ',', '-', '>', '.' and spaces: JAX's training cookbook
    # writes "bsd,3dkh->bs3kh"
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4), dtype=np.float32), rng.standard_normal((3, 4, 5), dtype=np.float32)
    want = np.einsum("bd,tdk->btk", a, b)
    for subscripts in ("bd,3dk->b3k", "b_,3_k->b3k", "bé,3ék->b3k"):
        np.testing.assert_allclose(knp.einsum(subscripts, a, b), want, rtol=1e-5)
    # implicit output: the labels used once, in sorted order ('3' < 'b' < 'k'), as NumPy sorts them
    np.testing.assert_allclose(knp.einsum("bd,3dk", a, b), np.einsum("bd,tdk->tbk", a, b), rtol=1e-5)
