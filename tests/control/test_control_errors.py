"""Every error path of the control-flow functions, with its message; after each error the same code
works with good input (nothing cached in a bad state)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

X = np.ones(3, np.float32)


def test_branches_with_different_structures():
    f = kiln.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: (x, x), x))
    with pytest.raises(TypeError, match=r"kiln\.lax\.cond: branches must return the same structure, but "
                                        r"false_fun \(<lambda>\) returned PyTreeDef\(\(\*, \*\)\) and "
                                        r"true_fun \(<lambda>\) returned PyTreeDef\(\*\)"):
        f(True, X)
    good = kiln.jit(lambda p, x: lax.cond(p, lambda x: (x, x), lambda x: (x, -x), x))
    np.testing.assert_array_equal(np.asarray(good(False, X)[1]), -X)


def test_branches_with_different_shapes_or_dtypes():
    with pytest.raises(TypeError, match=r"same shapes and dtypes, but false_fun \(<lambda>\) returned \(f32\[2\]\) "
                                        r"and true_fun \(<lambda>\) returned \(f32\[3\]\)"):
        kiln.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: x[:2], x))(True, X)

    def as_int(x):
        return x.astype(knp.int32)

    with pytest.raises(TypeError, match=r"false_fun \(as_int\) returned \(i32\[3\]\) and true_fun \(<lambda>\) "
                                        r"returned \(f32\[3\]\)"):
        kiln.jit(lambda p, x: lax.cond(p, lambda x: x, as_int, x))(True, X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.switch: branches must return the same shapes and dtypes, but "
                                        r"branches\[0\] \(<lambda>\) returned \(f32\[3\]\) and branches\[2\] "
                                        r"\(<lambda>\) returned \(f32\[\]\)"):
        kiln.jit(lambda i, x: lax.switch(i, [lambda x: x, lambda x: x, lambda x: x.sum()], x))(1, X)
    # A traced predicate outside jit (under grad) checks the branches too.
    with pytest.raises(TypeError, match=r"kiln\.lax\.cond: branches must return the same shapes"):
        kiln.grad(lambda x: lax.cond(x > 0, lambda x: x, lambda x: knp.stack([x, x]), x))(1.0)
    np.testing.assert_array_equal(np.asarray(kiln.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: x * 2, x))
                                             (False, X)), X * 2)


def test_carry_type_changes_in_the_body():
    with pytest.raises(TypeError, match=r"kiln\.lax\.while_loop: the carry's type changed in body_fun \(<lambda>\): "
                                        r"before \(f32\[\]\), after \(f32\[2\]\)"):
        lax.while_loop(lambda c: c < 3, lambda c: knp.stack([c, c]), knp.float32(0))
    with pytest.raises(TypeError, match=r"before \(i32\[\]\), after \(f32\[\]\)"):
        lax.while_loop(lambda c: c < 3, lambda c: (c + 1).astype(knp.float32), knp.int32(0))

    def step(c, x):
        return c.astype(knp.int32), x

    with pytest.raises(TypeError, match=r"kiln\.lax\.scan\(step\): the carry's type changed in the body: before "
                                        r"\(f32\[\]\), after \(i32\[\]\)"):
        lax.scan(step, knp.float32(0), X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.fori_loop: the carry's type changed in body_fun \(<lambda>\): "
                                        r"before \(f32\[\], f32\[3\]\), after \(f32\[\], f32\[1\]\)"):
        lax.fori_loop(0, 3, lambda i, c: (c[0], c[1][:1]), (knp.float32(0), X))
    with pytest.raises(TypeError, match=r"kiln\.lax\.while_loop: body_fun must return a value with the structure"):
        lax.while_loop(lambda c: c[0] < 3, lambda c: c[0] + 1, (0, 1.0))
    with pytest.raises(TypeError, match=r"kiln\.lax\.scan\(<lambda>\): the body must return a carry with the "
                                        r"structure of init PyTreeDef\(\*\), got PyTreeDef\(\(\*, \*\)\)"):
        lax.scan(lambda c, x: ((c, c), x), 0.0, X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.fori_loop: body_fun \(<lambda>\) must return a value with the "
                                        r"structure of init_val"):
        lax.fori_loop(0, 3, lambda i, c: (c, c), 1.0)
    # The same loops with good bodies.
    assert float(lax.while_loop(lambda c: c < 3, lambda c: c + 1, knp.float32(0))) == 3.0
    assert float(lax.scan(lambda c, x: (c + x, x), knp.float32(0), X)[0]) == 3.0
    assert float(lax.fori_loop(0, 3, lambda i, c: (c[0] + 1, c[1]), (knp.float32(0), X))[0]) == 3.0


def test_predicate_must_be_a_boolean_scalar():
    with pytest.raises(TypeError, match=r"kiln\.lax\.while_loop: cond_fun \(<lambda>\) must return a boolean scalar, "
                                        r"got \(f32\[\]\)"):
        lax.while_loop(lambda c: c, lambda c: c + 1, 0.0)
    with pytest.raises(TypeError, match=r"cond_fun \(<lambda>\) must return a boolean scalar, got \(bool\[2\]\)"):
        kiln.jit(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c + 1, x))(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match=r"kiln\.lax\.cond: the predicate must be a scalar, got an array of shape "
                                        r"\(2,\); use kiln\.numpy\.where"):
        lax.cond(knp.array([True, False]), lambda x: x, lambda x: x, X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.cond: the predicate must be a boolean \(or integer\) scalar, "
                                        r"got float32"):
        kiln.jit(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))(1.0)
    with pytest.raises(TypeError, match=r"kiln\.lax\.switch: the index must be an integer scalar, got f32\[\]"):
        lax.switch(1.0, [lambda: 1.0, lambda: 2.0])
    assert float(lax.while_loop(lambda c: c < 3.0, lambda c: c + 1, 0.0)) == 3.0
    assert float(kiln.jit(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))(True)) == 1.0


def test_scan_xs_errors():
    with pytest.raises(TypeError, match=r"kiln\.lax\.scan\(<lambda>\): xs leaves have mismatched leading sizes "
                                        r"\[3, 4\] \(shapes \(3,\), \(4, 2\)\)"):
        lax.scan(lambda c, x: (c, x), 0.0, (X, np.ones((4, 2), np.float32)))
    with pytest.raises(TypeError, match=r"length=4 does not match the leading sizes of xs \[3\]"):
        lax.scan(lambda c, x: (c, x), 0.0, X, length=4)
    with pytest.raises(TypeError, match=r"xs is None \(or has no arrays\), so pass length="):
        lax.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(TypeError, match=r"every leaf of xs needs a leading axis to scan over, got a 0-d value"):
        lax.scan(lambda c, x: (c, x), 0.0, np.float32(1.0))
    with pytest.raises(TypeError, match=r"unroll must be a bool or a positive int, got 0"):
        lax.scan(lambda c, x: (c, x), 0.0, X, unroll=0)
    assert float(lax.scan(lambda c, x: (c + x[0] + x[1].sum(), x), 0.0, (X, np.ones((3, 2), np.float32)))[0]) == 9.0


def test_scan_body_must_return_a_pair():
    def body(c, x):
        return c + x

    with pytest.raises(TypeError, match=r"kiln\.lax\.scan\(body\): the body must return a pair \(carry, y\), got an "
                                        r"array f32\[\]; return \(carry, None\)"):
        lax.scan(body, 0.0, X)
    with pytest.raises(TypeError, match=r"must return a pair \(carry, y\), got a tuple of 3"):
        lax.scan(lambda c, x: (c, x, x), 0.0, X)
    assert float(lax.scan(lambda c, x: (body(c, x), None), 0.0, X)[0]) == 3.0


def test_switch_and_cond_argument_errors():
    with pytest.raises(TypeError, match=r"kiln\.lax\.switch: branches must be a non-empty sequence of callables"):
        lax.switch(0, [], X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.switch: branches must be a non-empty sequence of callables"):
        lax.switch(0, [lambda x: x, 3], X)
    with pytest.raises(TypeError, match=r"kiln\.lax\.cond: true_fun and false_fun must be callables"):
        lax.cond(True, X, lambda x: x, X)
    assert float(lax.switch(0, [lambda x: x.sum()], X)) == 3.0


def test_loop_argument_errors():
    with pytest.raises(TypeError, match=r"kiln\.lax\.fori_loop: lower and upper must be integer scalars, got f32\[\]"):
        lax.fori_loop(0.0, 3, lambda i, c: c, 1.0)
    with pytest.raises(TypeError, match=r"kiln\.lax\.fori_loop: unroll= needs static \(Python int\) bounds"):
        kiln.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 1.0, unroll=2))(3)
    with pytest.raises(TypeError, match=r"kiln\.lax\.while_loop: max_steps must be >= 0, got -1"):
        lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0, max_steps=-1)
    with pytest.raises(TypeError, match=r"kiln\.lax\.map: batch_size must be a non-negative int, got -2"):
        lax.map(lambda x: x, np.ones(5, np.float32), batch_size=-2)
    with pytest.raises(TypeError, match=r"kiln\.lax\.associative_scan: all leaves need the same size along axis 0, "
                                        r"got \[3, 4\]"):
        lax.associative_scan(lambda a, b: (a[0] + b[0], a[1] + b[1]), (X, np.ones(4, np.float32)))
    with pytest.raises(ValueError, match=r"kiln\.lax\.select_n: needs at least one case"):
        lax.select_n(True)
    with pytest.raises(ValueError, match=r"kiln\.lax\.select_n: a boolean selector picks between 2 cases, got 3"):
        lax.select_n(True, X, X, X)
    with pytest.raises(ValueError, match=r"kiln\.numpy\.select: condlist has 1 entries but choicelist has 2"):
        knp.select([X > 0], [X, X])
    with pytest.raises(ValueError, match=r"kiln\.numpy\.piecewise: with 1 condition\(s\) funclist needs 1 or 2 "
                                         r"entries, got 3"):
        knp.piecewise(X, [X > 0], [1, 2, 3])
    assert int(kiln.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))(4)) == 6
    assert int(lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0, max_steps=5)) == 3
