"""JAX's notebook docs/notebooks/Neural_Network_and_Data_Loading.md, ported to kiln by changing imports
(tests/examples/jax_ported/nn_data_loading.py; MNIST and torch's DataLoader replaced by a small synthetic dataset of
MNIST's shapes and a plain-Python loader), checked against oracles that do not involve JAX or kiln's own results.

Oracles: a NumPy Threefry-2x32 (threefry_oracle.py) for the initial parameters and the random images; a float64
NumPy model of the network (dense layers, ReLU, log-softmax) for the predictions, the accuracy and the loss;
float64 central differences of that NumPy loss for entries of the gradient that `update` steps along; a Python
loop over the examples for `vmap`; np.eye for one_hot; what the cells print. The training loop runs a few epochs
(3, not 8) over the 256 synthetic images: the loss falls and the accuracy it prints is the NumPy model's.
The notebook's cells run once (a module fixture).
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import threefry_oracle
from ported import load

import kiln

EPOCHS = 3


def _run(fn, *args, **kwargs):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args, **kwargs)
    return res, buf.getvalue().splitlines()


def _f64(params):
    return [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]


def _np_predict(params, images):
    """The notebook's predict on each row of ``images`` (float64): ReLU layers, then log-softmax of the logits."""
    x = np.asarray(images, np.float64)
    for w, b in params[:-1]:
        x = np.maximum(0, x @ w.T + b)
    logits = x @ params[-1][0].T + params[-1][1]
    top = logits.max(axis=1, keepdims=True)
    return logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))


def _np_loss(params, images, targets):
    return -np.mean(_np_predict(params, images) * targets)


def _np_one_hot(labels):
    return np.eye(10, dtype=np.float32)[np.asarray(labels)]


def _key_of(key) -> np.ndarray:
    return np.asarray(kiln.random.key_data(key))


@pytest.fixture(scope="module")
def nb():
    return load("nn_data_loading")


@pytest.fixture(scope="module")
def cells(nb):
    out = {"single": _run(nb.single_example_cell), "batch_fails": _run(nb.batch_fails_cell)}
    out["batched"] = _run(nb.batched_predict_cell, out["batch_fails"][0])
    out["dataset"] = nb.dataset_cell()
    out["full"] = nb.full_datasets_cell(out["dataset"][0])
    init = nb.params
    out["train"] = _run(nb.training_loop_cell, init, out["dataset"][1], *out["full"], num_epochs=EPOCHS)
    return out


def test_initial_parameters_are_the_threefry_normals(nb):
    # init_network_params: one key per layer from split(key(0), 4), each split into the weights' and biases' keys
    keys = threefry_oracle.split(np.array([0, 0], np.uint32), 4)
    assert [(w.shape, b.shape) for w, b in nb.params] == [((512, 784), (512,)), ((512, 512), (512,)),
                                                          ((10, 512), (10,))]
    for (w, b), (m, n), key in zip(nb.params, zip(nb.layer_sizes[:-1], nb.layer_sizes[1:]), keys):
        assert w.dtype == b.dtype == np.float32 and not w.weak_type
        w_key, b_key = threefry_oracle.split(key)
        np.testing.assert_allclose(np.asarray(w), 1e-2 * threefry_oracle.normal(w_key, n * m).reshape(n, m),
                                   rtol=1e-5, atol=2e-7)
        np.testing.assert_allclose(np.asarray(b), 1e-2 * threefry_oracle.normal(b_key, n), rtol=1e-5, atol=2e-7)


def test_predict_on_one_image(nb, cells):
    (image, preds), printed = cells["single"]
    assert printed == ["(10,)"]
    np.testing.assert_allclose(np.asarray(image), threefry_oracle.normal(np.array([0, 1], np.uint32), 784),
                               rtol=1e-5, atol=2e-5)  # key(1)'s data is (0, 1); XLA's float32 erfinv
    assert preds.shape == (10,) and preds.dtype == np.float32
    np.testing.assert_allclose(np.asarray(preds), _np_predict(_f64(nb.params), np.asarray(image)[None])[0],
                               rtol=1e-5, atol=1e-6)
    assert np.exp(np.asarray(preds, np.float64)).sum() == pytest.approx(1, abs=1e-5)  # log-probabilities


def test_predict_refuses_a_batch(nb, cells):
    images, printed = cells["batch_fails"]
    assert printed == ["Invalid shapes!"]  # the TypeError the cell catches
    np.testing.assert_allclose(np.asarray(images).ravel(), threefry_oracle.normal(np.array([0, 1], np.uint32), 7840),
                               rtol=1e-5, atol=2e-5)
    with pytest.raises(TypeError) as e:
        nb.predict(nb.params, images)
    # what went wrong: the shapes that do not line up, in the dot of the first layer
    assert "dot" in str(e.value) and "(512, 784)" in str(e.value) and "(10, 784)" in str(e.value), str(e.value)


def test_vmap_batches_predict(nb, cells):
    images, _ = cells["batch_fails"]
    batched, printed = cells["batched"]
    assert printed == ["(10, 10)"] and batched.shape == (10, 10) and batched.dtype == np.float32
    loop = np.stack([np.asarray(nb.predict(nb.params, img)) for img in np.asarray(images)])
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(batched), _np_predict(_f64(nb.params), images), rtol=1e-5, atol=1e-6)


def test_one_hot(nb):
    labels = np.array([3, 0, 9, 3], np.int64)
    out = nb.one_hot(labels, 10)
    assert out.dtype == np.float32 and out.shape == (4, 10)
    np.testing.assert_array_equal(np.asarray(out), _np_one_hot(labels))
    assert nb.one_hot(labels, 4, kiln.numpy.int32).dtype == np.int32  # its dtype argument; label 9 has no column
    np.testing.assert_array_equal(np.asarray(nb.one_hot(labels, 4, kiln.numpy.int32))[2], np.zeros(4))


def test_data_loader_gives_numpy_batches(nb, cells):
    dataset, loader = cells["dataset"]
    batches = list(loader)
    assert len(batches) == 2  # 256 images, 128 at a time
    for k, (x, y) in enumerate(batches):
        assert type(x) is np.ndarray and type(y) is np.ndarray  # numpy_collate: NumPy arrays, not kiln's
        assert (x.shape, x.dtype, y.shape, y.dtype) == ((128, 784), np.float32, (128,), np.int64)
        np.testing.assert_array_equal(x, np.asarray(dataset.data[128 * k:128 * (k + 1)], np.float32).reshape(128, -1))
        np.testing.assert_array_equal(y, np.asarray(dataset.targets[128 * k:128 * (k + 1)]))
    train_images, train_labels, test_images, test_labels = cells["full"]
    assert type(train_images) is np.ndarray and (train_images.shape, train_images.dtype) == ((256, 784), np.uint8)
    assert (test_images.shape, test_images.dtype) == ((128, 784), np.float32) and isinstance(test_images, kiln.Array)
    np.testing.assert_array_equal(np.asarray(train_labels), _np_one_hot(dataset.targets))
    assert test_labels.shape == (128, 10) and np.asarray(test_labels).sum(axis=1).tolist() == [1.0] * 128


def test_accuracy_and_loss_are_the_numpy_models(nb, cells):
    train_images, train_labels, test_images, test_labels = cells["full"]
    params = _f64(nb.params)
    want = np.mean(np.argmax(_np_predict(params, train_images), 1) == np.argmax(np.asarray(train_labels), 1))
    acc = nb.accuracy(nb.params, train_images, train_labels)  # uint8 images: promoted to float32 by the dots
    assert acc.dtype == np.float32 and float(acc) == pytest.approx(want, abs=1e-7)
    loss = nb.loss(nb.params, test_images, test_labels)
    assert loss.dtype == np.float32 and loss.shape == ()
    assert float(loss) == pytest.approx(_np_loss(params, test_images, np.asarray(test_labels)), rel=1e-5)


def test_update_steps_along_the_gradient_of_the_loss(nb, cells):
    """update(params, x, y) is params - step_size * grad(loss): the gradient's entries against float64 central
    differences of the NumPy loss, on the first batch the loader gives."""
    x, y = next(iter(cells["dataset"][1]))
    targets = _np_one_hot(y)
    new = nb.update(nb.params, x, nb.one_hot(y, 10))
    assert [(w.shape, w.dtype, b.shape) for w, b in new] == [(w.shape, w.dtype, b.shape) for w, b in nb.params]
    base = _f64(nb.params)
    eps, moved = 1e-5, 0
    for layer, index in [(2, (3, 17)), (2, None), (0, (100, 400)), (1, (7, 8)), (1, (30, 2))]:
        def bumped(delta, layer=layer, index=index):
            ps = [(w.copy(), b.copy()) for w, b in base]
            w, b = ps[layer]
            if index is None:
                b[4] += delta
            else:
                w[index] += delta
            return _np_loss(ps, x, targets)
        fd = (bumped(eps) - bumped(-eps)) / (2 * eps)
        w, b = nb.params[layer]
        old, stepped = (w, new[layer][0]) if index is not None else (b, new[layer][1])
        at = index if index is not None else 4
        g = (float(old[at]) - float(stepped[at])) / nb.step_size
        moved += abs(fd) > 1e-7  # (a weight into a unit the ReLU keeps at 0 for the whole batch has no gradient)
        # (float32 parameters: the step, 1e-2 * g, is taken off a weight of ~1e-2, so g keeps ~4 digits)
        assert g == pytest.approx(fd, rel=2e-3, abs=1e-6), (layer, index)
    assert moved >= 3


def test_training_lowers_the_loss_and_prints_the_numpy_accuracy(nb, cells):
    (params, history), printed = cells["train"]
    train_images, train_labels, test_images, test_labels = cells["full"]
    assert len(history) == EPOCHS and len(printed) == 3 * EPOCHS
    final = _f64(params)
    for epoch, (train_acc, test_acc) in enumerate(history):
        assert printed[3 * epoch].startswith(f"Epoch {epoch} in ") and printed[3 * epoch].endswith(" sec")
        assert printed[3 * epoch + 1] == f"Training set accuracy {train_acc}"
        assert printed[3 * epoch + 2] == f"Test set accuracy {test_acc}"
    want_train = np.mean(np.argmax(_np_predict(final, train_images), 1) == np.argmax(np.asarray(train_labels), 1))
    want_test = np.mean(np.argmax(_np_predict(final, test_images), 1) == np.argmax(np.asarray(test_labels), 1))
    assert float(history[-1][0]) == pytest.approx(want_train, abs=1e-7)
    assert float(history[-1][1]) == pytest.approx(want_test, abs=1e-7)
    before = _np_loss(_f64(nb.params), train_images, np.asarray(train_labels))
    after = _np_loss(final, train_images, np.asarray(train_labels))
    assert after < 0.5 * before, (before, after)
    assert float(history[-1][0]) > 0.5 and float(history[-1][1]) > 0.5  # chance is 0.1: the classes are learned
    assert float(history[-1][0]) > float(history[0][0])
