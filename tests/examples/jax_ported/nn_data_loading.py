# ruff: noqa: E111, E114, E302, E305, E402, E501, F841, I001  (the notebook's cells: two-space indents, imports between cells, its long line, its unused `preds`)
# Copyright 2018 The JAX Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# The code cells of JAX's notebook docs/notebooks/Neural_Network_and_Data_Loading.md ("Training a simple neural
# network, with PyTorch data loading", jax-ml/jax cec06d116c), in order, ported to kiln by changing imports only.
# The imports stay at the top level, where the notebook has them, so that tests/examples/ported.py can put JAX's
# back. The notebook's top-level definitions stay top-level; the cells that print are functions that return what
# they print (their prints are kept).
# Substituted (there is no network here, and neither torch nor torchvision is installed): `!pip install torch
# torchvision`, and the `from torch.utils.data import DataLoader, default_collate` / `from torchvision.datasets
# import MNIST` of the data-loading cell. In their place, below that cell's other imports, are minimal stand-ins:
# `MNIST`, a small synthetic dataset with MNIST's shapes and dtypes (28x28 uint8 images whose class shows in a
# per-class template, int64 labels; `train_data`/`train_labels` and `test_data`/`test_labels` tensors with a
# `.numpy()`, items as (image, label) with the `transform` applied), and `DataLoader`/`default_collate` doing what
# torch's do for these items (batches in order, the fields stacked into arrays: the labels as int64). The cells
# that use them are the notebook's, unchanged. The dataset is small (`MNIST_SIZES`: 256 training and 128 test
# images instead of 60000 and 10000) and the training loop's `num_epochs` is a parameter (the notebook's 8 is the
# default); the hyperparameters are the notebook's.
# tests/examples/test_nn_data_loading.py checks the cells against a NumPy model of the network, float64 finite
# differences and the notebook's claims; test_nn_data_loading_against_jax.py runs them under kiln and JAX.

import kiln.numpy as jnp
from kiln import grad, jit, vmap
from kiln import random

# ------------------------------------------------ Hyperparameters -------------------------------------------------

# A helper function to randomly initialize weights and biases
# for a dense neural network layer
def random_layer_params(m, n, key, scale=1e-2):
  w_key, b_key = random.split(key)
  return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))

# Initialize all layers for a fully-connected neural network with sizes "sizes"
def init_network_params(sizes, key):
  keys = random.split(key, len(sizes))
  return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]

layer_sizes = [784, 512, 512, 10]
step_size = 0.01
num_epochs = 8
batch_size = 128
n_targets = 10
params = init_network_params(layer_sizes, random.key(0))

# ------------------------------------------------ Auto-batching predictions ---------------------------------------

from kiln.scipy.special import logsumexp

def relu(x):
  return jnp.maximum(0, x)

def predict(params, image):
  # per-example predictions
  activations = image
  for w, b in params[:-1]:
    outputs = jnp.dot(w, activations) + b
    activations = relu(outputs)

  final_w, final_b = params[-1]
  logits = jnp.dot(final_w, activations) + final_b
  return logits - logsumexp(logits)

def single_example_cell():
  # This works on single examples
  random_flattened_image = random.normal(random.key(1), (28 * 28,))
  preds = predict(params, random_flattened_image)
  print(preds.shape)
  return random_flattened_image, preds

def batch_fails_cell():
  # Doesn't work with a batch
  random_flattened_images = random.normal(random.key(1), (10, 28 * 28))
  try:
    preds = predict(params, random_flattened_images)
  except TypeError:
    print('Invalid shapes!')
  return random_flattened_images

# Let's upgrade it to handle batches using `vmap`

# Make a batched version of the `predict` function
batched_predict = vmap(predict, in_axes=(None, 0))

def batched_predict_cell(random_flattened_images):
  # `batched_predict` has the same call signature as `predict`
  batched_preds = batched_predict(params, random_flattened_images)
  print(batched_preds.shape)
  return batched_preds

# ------------------------------------------------ Utility and loss functions --------------------------------------

def one_hot(x, k, dtype=jnp.float32):
  """Create a one-hot encoding of x of size k."""
  return jnp.array(x[:, None] == jnp.arange(k), dtype)

def accuracy(params, images, targets):
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
  return jnp.mean(predicted_class == target_class)

def loss(params, images, targets):
  preds = batched_predict(params, images)
  return -jnp.mean(preds * targets)

@jit
def update(params, x, y):
  grads = grad(loss)(params, x, y)
  return [(w - step_size * dw, b - step_size * db)
          for (w, b), (dw, db) in zip(params, grads)]

# ------------------------------------------------ Data loading with PyTorch ---------------------------------------

import numpy as np
from kiln.tree_util import tree_map

# -- stand-ins for torch.utils.data's DataLoader and default_collate and torchvision.datasets' MNIST (see the top) --

MNIST_SIZES = {True: 256, False: 128}  # images in the synthetic training and test sets

class _Tensor(np.ndarray):
  """An array with torch's `.numpy()`, as the dataset's tensors have."""
  def numpy(self):
    return np.asarray(self)

def _synthetic_mnist(n, seed):
  """n 28x28 uint8 images (a per-class template plus noise) and their int64 labels."""
  templates = np.random.RandomState(1234).randint(0, 256, size=(10, 28, 28))
  rng = np.random.RandomState(seed)
  labels = rng.randint(0, 10, size=n).astype(np.int64)
  images = (0.6 * templates[labels] + 0.4 * rng.randint(0, 256, size=(n, 28, 28))).astype(np.uint8)
  return images.view(_Tensor), labels.view(_Tensor)

class MNIST:
  """torchvision.datasets.MNIST's interface over the synthetic data (nothing is downloaded)."""
  def __init__(self, root, train=True, download=False, transform=None):
    self.train, self.transform = train, transform
    self.data, self.targets = _synthetic_mnist(MNIST_SIZES[train], seed=0 if train else 1)
  train_data = test_data = property(lambda self: self.data)
  train_labels = test_labels = property(lambda self: self.targets)
  def __len__(self):
    return len(self.data)
  def __getitem__(self, i):
    image = np.asarray(self.data[i])  # (torchvision's is a PIL image: np.array(pic) gives these uint8 pixels)
    return (image if self.transform is None else self.transform(image)), int(self.targets[i])

def default_collate(batch):
  """A list of (image, label) samples as [images stacked, labels as int64]: what torch's makes of them."""
  images, labels = zip(*batch)
  return [np.stack(images), np.array(labels, dtype=np.int64)]

class DataLoader:
  """The dataset's samples in order, `batch_size` at a time (the last batch may be smaller), collated."""
  def __init__(self, dataset, batch_size=1, collate_fn=default_collate):
    self.dataset, self.batch_size, self.collate_fn = dataset, batch_size, collate_fn
  def __iter__(self):
    for start in range(0, len(self.dataset), self.batch_size):
      stop = min(start + self.batch_size, len(self.dataset))
      yield self.collate_fn([self.dataset[i] for i in range(start, stop)])

# -- the notebook's cells again --

def numpy_collate(batch):
  """
  Collate function specifies how to combine a list of data samples into a batch.
  default_collate creates pytorch tensors, then tree_map converts them into numpy arrays.
  """
  return tree_map(np.asarray, default_collate(batch))

def flatten_and_cast(pic):
  """Convert PIL image to flat (1-dimensional) numpy array."""
  return np.ravel(np.array(pic, dtype=jnp.float32))

def dataset_cell():
  # Define our dataset, using torch datasets
  mnist_dataset = MNIST('/tmp/mnist/', download=True, transform=flatten_and_cast)
  # Create pytorch data loader with custom collate function
  training_generator = DataLoader(mnist_dataset, batch_size=batch_size, collate_fn=numpy_collate)
  return mnist_dataset, training_generator

def full_datasets_cell(mnist_dataset):
  # Get the full train dataset (for checking accuracy while training)
  train_images = np.array(mnist_dataset.train_data).reshape(len(mnist_dataset.train_data), -1)
  train_labels = one_hot(np.array(mnist_dataset.train_labels), n_targets)

  # Get full test dataset
  mnist_dataset_test = MNIST('/tmp/mnist/', download=True, train=False)
  test_images = jnp.array(mnist_dataset_test.test_data.numpy().reshape(len(mnist_dataset_test.test_data), -1), dtype=jnp.float32)
  test_labels = one_hot(np.array(mnist_dataset_test.test_labels), n_targets)
  return train_images, train_labels, test_images, test_labels

# ------------------------------------------------ Training loop ---------------------------------------------------

import time

def training_loop_cell(params, training_generator, train_images, train_labels, test_images, test_labels,
                       num_epochs=num_epochs):
  """The notebook's loop (it updates the global `params`; here they come in and go out); returns the final params
  and each epoch's (train accuracy, test accuracy)."""
  history = []
  for epoch in range(num_epochs):
    start_time = time.time()
    for x, y in training_generator:
      y = one_hot(y, n_targets)
      params = update(params, x, y)
    epoch_time = time.time() - start_time

    train_acc = accuracy(params, train_images, train_labels)
    test_acc = accuracy(params, test_images, test_labels)
    print("Epoch {} in {:0.2f} sec".format(epoch, epoch_time))
    print("Training set accuracy {}".format(train_acc))
    print("Test set accuracy {}".format(test_acc))
    history.append((train_acc, test_acc))
  return params, history
