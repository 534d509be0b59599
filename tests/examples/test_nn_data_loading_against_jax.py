"""JAX's notebook docs/notebooks/Neural_Network_and_Data_Loading.md under kiln and under JAX gives the same results
(the against_jax session).

The kiln side is tests/examples/jax_ported/nn_data_loading.py (MNIST and torch's DataLoader replaced by a small
synthetic dataset and a plain-Python loader); the JAX side is the same source with JAX's imports put back. The
NumPy and finite-difference oracles are in test_nn_data_loading.py; this checks that the two libraries agree cell
by cell: the initial parameters and random images (bit for bit: the same Threefry draws), the predictions, the
batched predictions and the accuracy/loss (to float32 rounding), the parameters after each update and after the
training loop, the accuracies it prints (identical text but for the epochs' timings), and the exception class of
the cell that calls predict on a batch.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, quiet  # noqa: E402

EPOCHS = 2


@pytest.fixture(scope="module")
def both():
    return load("nn_data_loading"), load("nn_data_loading", "jax")


def test_initial_parameters(both):
    k, j = both
    assert_same(k.params, j.params, rtol=0)


def test_prediction_cells(both):
    k, j = both
    (kr, kout), (jr, jout) = quiet(k.single_example_cell), quiet(j.single_example_cell)
    assert kout == jout == "(10,)\n"
    assert_same(kr[0], jr[0], rtol=0)  # the random image
    assert_same(kr[1], jr[1], rtol=1e-5, atol=1e-6)
    (kimgs, kout), (jimgs, jout) = quiet(k.batch_fails_cell), quiet(j.batch_fails_cell)
    assert kout == jout == "Invalid shapes!\n"
    assert_same(kimgs, jimgs, rtol=0)
    (kb, kout), (jb, jout) = quiet(k.batched_predict_cell, kimgs), quiet(j.batched_predict_cell, jimgs)
    assert kout == jout == "(10, 10)\n"
    assert_same(kb, jb, rtol=1e-5, atol=1e-6)


def test_predict_on_a_batch_raises_the_same_class(both):
    k, j = both
    errors = []
    for nb in (k, j):
        with pytest.raises(Exception) as e:  # noqa: PT011  (compared below)
            nb.predict(nb.params, np.ones((10, 784), np.float32))
        errors.append(e.value)
    assert_same_exception(*errors)


def test_utilities_loss_and_update(both):
    k, j = both
    kds, kgen = k.dataset_cell()
    jds, jgen = j.dataset_cell()
    kfull, jfull = k.full_datasets_cell(kds), j.full_datasets_cell(jds)
    assert_same(kfull, jfull, rtol=0)  # the images (a NumPy uint8 array, a float32 Array) and the one-hot labels
    (kx, ky), (jx, jy) = next(iter(kgen)), next(iter(jgen))
    assert_same([kx, ky], [jx, jy], rtol=0)  # the loader's NumPy batch
    assert_same(k.one_hot(ky, 10), j.one_hot(jy, 10), rtol=0)
    assert_same(k.accuracy(k.params, kfull[0], kfull[1]), j.accuracy(j.params, jfull[0], jfull[1]), rtol=0)
    assert_same(k.loss(k.params, kfull[2], kfull[3]), j.loss(j.params, jfull[2], jfull[3]), rtol=1e-5)
    assert_same(k.update(k.params, kx, k.one_hot(ky, 10)), j.update(j.params, jx, j.one_hot(jy, 10)),
                rtol=1e-5, atol=1e-7)


def test_training_loop(both):
    k, j = both
    runs = []
    for nb in both:
        ds, gen = nb.dataset_cell()
        runs.append(quiet(nb.training_loop_cell, nb.params, gen, *nb.full_datasets_cell(ds), num_epochs=EPOCHS))
    ((kparams, khist), kout), ((jparams, jhist), jout) = runs
    assert_same(kparams, jparams, rtol=1e-4, atol=1e-6)
    assert_same(khist, jhist, rtol=0)
    def untimed(text):
        return re.sub(r"in \d+\.\d\d sec", "in <t> sec", text)
    assert untimed(kout) == untimed(jout) and kout.count("Epoch") == EPOCHS
