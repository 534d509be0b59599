"""JAX's docs page docs/buffer_donation.md ("Buffer donation": donate_argnums of jit and pmap, pytrees, the error of
a donated array used again, the warnings of unusable donations), ported to kiln by changing imports
(tests/examples/jax_ported/docs_buffer_donation.py), checked against oracles that do not involve JAX: NumPy for the
values (x + y, x + 1, the test's update function), and the page's claims: which arrays a call deletes (the donated
ones whose buffer an output can take), that the output shares the donated buffer (its address), the error when a
donated array is used again (its class and that the message says the array was donated), the UserWarning naming the
buffers that could not be used (the page writes them f32[2,3]{1,0} and f32[1,3]{1,0}), and that keyword arguments
of a pmap donate nothing.

The page's blocks are separate sketches: the tests give each block fresh arrays, and also run them in the page's
order, where the reuse block's call already meets the `y` the `add` block donated. The pmap blocks run on one
device (a leading axis of size 1) with an `update_fn` of the test's own. Where kiln differs: kiln's pmap takes
positional arguments only (README "Differences from JAX": pmap), so the page's keyword-argument pmap raises
(a strict xfail states JAX's behaviour).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from ported import load

import kiln


@pytest.fixture(scope="module")
def page():
    return load("docs_buffer_donation")


def _fresh(*shapes):
    return [kiln.device_put(np.ones(s)) for s in shapes]


def update_fn(params, state):
    return params * 2, state + 1


def _np_update(params, state):
    return params * 2, state + 1


def _check_values(got, want):
    for g, w in zip(got, want):
        assert isinstance(g, kiln.Array) and g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), w)


def test_pmap_donation_deletes_params_and_state(page):
    params, state = _fresh((1, 3), (1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both outputs can take a donated buffer: no warning
        new = page.pmap_donation_block(update_fn, params, state)
    _check_values(new, _np_update(np.ones((1, 3)), np.ones((1, 4))))
    assert params.is_deleted() and state.is_deleted()


def test_add_donates_y(page):
    x, y, z = page.add_block()
    _check_values([z], [np.ones((2, 3)) + np.ones((2, 3))])
    assert y.is_deleted() and not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.ones((2, 3)))  # x is untouched
    # "The result has the same shape and type as `y`, so it will share its buffer"
    x, y = _fresh((2, 3), (2, 3))
    address = y.unsafe_buffer_pointer()
    z = kiln.jit(page.add, donate_argnums=(1,))(x, y)
    assert z.unsafe_buffer_pointer() == address and y.is_deleted()


@pytest.mark.xfail(strict=True, reason="kiln.pmap takes positional arguments only (README 'Differences from JAX': "
                                       "pmap); JAX maps keyword arguments over their leading axis and, as the page "
                                       "says, donates none of their buffers")
def test_pmap_with_keyword_arguments_donates_nothing(page):
    params, state = _fresh((1, 3), (1, 4))
    new = page.pmap_keywords_block(update_fn, params, state)
    _check_values(new, _np_update(np.ones((1, 3)), np.ones((1, 4))))
    assert not params.is_deleted() and not state.is_deleted()


def test_pmap_with_keyword_arguments_is_refused_with_a_clear_error(page):
    params, state = _fresh((1, 3), (1, 4))
    with pytest.raises(ValueError, match=r"pass the arguments positionally \(got keyword arguments "
                                         r"\['params', 'state'\]\)"):
        page.pmap_keywords_block(update_fn, params, state)
    assert not params.is_deleted() and not state.is_deleted()


def test_a_donated_pytree_donates_all_its_buffers(page):
    xs, z = page.add_ones_block()
    assert type(z) is list
    _check_values(z, [np.ones((2, 3)) + 1, np.ones((3, 4)) + 1])
    assert all(x.is_deleted() for x in xs)


def test_using_a_donated_array_is_an_error(page):
    x, y = _fresh((2, 3), (2, 3))
    with pytest.raises(RuntimeError) as info:
        page.reuse_donated_block(x, y)
    # the page: "the buffer for `y` has become invalid after it was donated"
    assert "deleted" in str(info.value) and "donated" in str(info.value)
    assert y.is_deleted() and not x.is_deleted()


@pytest.fixture
def uncompiled():
    """The warnings come when a program is compiled (as JAX's, at lowering): start from empty caches, so that the
    page's `add` compiled by another test does not hide them."""
    kiln.clear_caches()


def test_donate_both_warns_that_one_is_unusable(page, uncompiled):
    x, y = _fresh((2, 3), (2, 3))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: .*f32\[2,3\]") as record:
        z = page.donate_both_block(x, y)
    assert len(record) == 1
    _check_values([z], [np.full((2, 3), 2.0)])
    # "One of those buffers will be used for the result, but the other will not be used."
    assert [x.is_deleted(), y.is_deleted()].count(True) == 1
    alive = y if x.is_deleted() else x
    np.testing.assert_array_equal(np.asarray(alive), np.ones((2, 3)))


def test_donation_of_another_shape_warns(page, uncompiled):
    (x,) = _fresh((2, 3))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: .*f32\[1,3\]") as record:
        y, z = page.shape_mismatch_block(x)
    assert len(record) == 1
    _check_values([z], [np.ones((2, 3)) + np.ones((1, 3))])
    assert not y.is_deleted() and not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), np.ones((1, 3)))


def test_the_blocks_in_the_pages_order(page):
    """Run one after the other on the `add` block's x and y: the reuse block's call already meets the donated y
    (an error naming it), and so does the donate-both block; the last block makes its own y."""
    x, y, _ = page.add_block()
    for block in (page.reuse_donated_block, page.donate_both_block):
        with pytest.raises(RuntimeError, match="argument y refers to a deleted array: it was donated"):
            block(x, y)
    assert not x.is_deleted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its warning, tested above)
        _, z = page.shape_mismatch_block(x)
    _check_values([z], [np.full((2, 3), 2.0)])
