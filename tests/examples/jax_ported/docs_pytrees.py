# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
# Copyright 2024 The JAX Authors.
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
# The code cells of JAX's docs page docs/pytrees.md ("Pytrees", jax-ml/jax cec06d116c; the page
# docs/working-with-pytrees.md the brief names is this one), one after the other, ported to kiln by changing imports
# only. The imports and the page's top-level definitions stay at the top level, where the page has them, so that
# tests/examples/ported.py can put JAX's imports back; each cell that prints or shows a value is a function that
# returns it (its prints are kept), and the MLP parameters the page threads from cell to cell are passed in. The
# cell that raises on the page raises here. Left out: the `%xmode minimal` cell and the ```python (non-cell) vmap
# in_axes snippets of "Pytrees and JAX transformations"; the MLP's layer widths (the page's [1, 128, 128, 1]) are a
# parameter. The page defines `update` and never calls it; the tests call it. tests/examples/test_docs_basics.py
# checks the cells against the page's printed values and a NumPy MLP; test_docs_basics_against_jax.py runs them
# under kiln and JAX.

# ------------------------------------------------ What is a pytree? ------------------------------------------------

import kiln as jax
import kiln.numpy as jnp

example_trees = [
    [1, 'a', object()],
    (1, (2, 3), ()),
    [1, {'k1': 2, 'k2': (3, 4)}, 5],
    {'a': 2, 'b': (2, 3)},
    jnp.array([1, 2, 3]),
]

def leaves_cell():
  # Print how many leaves the pytrees have.
  all_leaves = []
  for pytree in example_trees:
    # This `jax.tree.leaves()` method extracts the flattened leaves from the pytrees.
    leaves = jax.tree.leaves(pytree)
    print(f"{repr(pytree):<45} has {len(leaves)} leaves: {leaves}")
    all_leaves.append(leaves)
  return all_leaves

# ------------------------------------------------ Common function: jax.tree.map ------------------------------------

list_of_lists = [
    [1, 2, 3],
    [1, 2],
    [1, 2, 3, 4]
]

def tree_map_cell():
  return jax.tree.map(lambda x: x*2, list_of_lists)

another_list_of_lists = list_of_lists

def tree_map_nary_cell():
  return jax.tree.map(lambda x, y: x+y, list_of_lists, another_list_of_lists)

# ------------------------------------------------ Example of jax.tree.map with ML model parameters -----------------

import numpy as np

def init_mlp_params(layer_widths):
  params = []
  for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
    params.append(
        dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
             biases=np.ones(shape=(n_out,))
            )
    )
  return params

def init_cell(layer_widths=(1, 128, 128, 1)):
  params = init_mlp_params(list(layer_widths))
  return params

def shapes_cell(params):
  return jax.tree.map(lambda x: x.shape, params)

# Define the forward pass.
def forward(params, x):
  *hidden, last = params
  for layer in hidden:
    x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
  return x @ last['weights'] + last['biases']

# Define the loss function.
def loss_fn(params, x, y):
  return jnp.mean((forward(params, x) - y) ** 2)

# Set the learning rate.
LEARNING_RATE = 0.0001

# Using the stochastic gradient descent, define the parameter update function.
# Apply `@jax.jit` for JIT compilation (speed).
@jax.jit
def update(params, x, y):
  # Calculate the gradients with `jax.grad`.
  grads = jax.grad(loss_fn)(params, x, y)
  # Note that `grads` is a pytree with the same structure as `params`.
  # `jax.grad` is one of many JAX functions that has
  # built-in support for pytrees.
  # This is useful - you can apply the SGD update using JAX pytree utilities.
  return jax.tree.map(
      lambda p, g: p - LEARNING_RATE * g, params, grads
  )

# ------------------------------------------------ Viewing the pytree definition of an object -----------------------

from kiln.tree_util import tree_structure

def tree_structure_cell():
  s = tree_structure(object)
  print(s)
  return s

# ------------------------------------------------ Explicit key paths -----------------------------------------------

import collections

ATuple = collections.namedtuple("ATuple", ('name'))

tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
flattened, _ = jax.tree_util.tree_flatten_with_path(tree)

def key_path_values_cell():
  for key_path, value in flattened:
    print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')
  return flattened

def key_paths_cell():
  for key_path, _ in flattened:
    print(f'Key path of tree{jax.tree_util.keystr(key_path)}: {repr(key_path)}')
  return [key_path for key_path, _ in flattened]

# ------------------------------------------------ Common pytree gotchas --------------------------------------------

def nodes_for_leaves_cell():
  a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]

  # Try to make another pytree with ones instead of zeros.
  shapes = jax.tree.map(lambda x: x.shape, a_tree)
  return jax.tree.map(jnp.ones, shapes)

def none_leaves_cell():
  return jax.tree.leaves([None, None, None])

def none_is_leaf_cell():
  return jax.tree.leaves([None, None, None], is_leaf=lambda x: x is None)

def unsortable_keys_cell():
  return jax.tree.map(lambda x: x + 1, {1: 7, "y": 42})  # raises on the page

# ------------------------------------------------ Common pytree patterns -------------------------------------------

def tree_transpose(list_of_trees):
  """
  Converts a list of trees of identical structure into a single tree of lists.
  """
  return jax.tree.map(lambda *xs: list(xs), *list_of_trees)

# Convert a dataset from row-major to column-major.
episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]

def tree_transpose_cell():
  return tree_transpose(episode_steps)

def jax_tree_transpose_cell():
  return jax.tree.transpose(
    outer_treedef = jax.tree.structure([0 for e in episode_steps]),
    inner_treedef = jax.tree.structure(episode_steps[0]),
    pytree_to_transpose = episode_steps
  )
