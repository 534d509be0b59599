# ruff: noqa: E111, E114, E302, E305, E402, F821, I001  (the page's blocks as they are: two-space indents, imports between blocks, its sketches' undefined `vmap` and `f`)
# Copyright 2026 The JAX Authors.
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
# The Python code blocks of JAX's docs/new_docs/101/pytrees.md ("Pytrees", jax-ml/jax), in order, ported to kiln by
# changing imports only. The imports stay at the top level, at column 0, where the page has them (tests/examples/
# ported.py puts JAX's back); so do the page's definitions that later blocks use (`example_trees`, `list_of_lists`,
# `another_list_of_lists`, `loss`, `init_mlp_params`, `forward`, `loss_fn`, `LEARNING_RATE`, `update`, `ATuple`,
# the classes `Special`, `RegisteredSpecial`, `MyOtherContainer`, `MyDataclassContainer`, the flatten/unflatten
# functions and the `register_pytree_node` call, `tree_transpose`). Every block whose top-level code runs something
# is a function, `..._block`, whose body is the block's lines and which returns what the block shows or computes
# (its last expression, the page's notebook output; its prints are kept). The page's `params` and `x` are names of
# several blocks (the flatten block's dict, the grad block's dict and matrix, the MLP's list of layers and its
# inputs): each stays inside its block, and the MLP's `params`, which later blocks read, is the init block's return
# value and their parameter. The init and training blocks draw from NumPy's unseeded global generator, as the page
# does (the tests seed it). Blocks that raise on the page (tree.map over `Special` leaves, unsortable dict keys)
# raise here. The ```python sketches of in_axes pytrees are kept as functions of the names they leave undefined
# (`vmap`, `f`), returning the mapped functions they build (the prefix sketch's two lines as a list).
# Left out: `%xmode minimal` (IPython). tests/examples/test_docs_pytrees_101.py checks the blocks against NumPy
# (float64 backpropagation for the MLP), closed forms, Python loops for vmap and the page's claims;
# test_docs_pytrees_101_against_jax.py runs them under kiln and JAX 0.10.2. (The older page docs/pytrees.md is
# docs_pytrees.py, custom_pytrees.md docs_custom_pytrees.py.)

# ------------------------------------------------ What is a pytree? ----------------------------------------------

import kiln as jax
import kiln.numpy as jnp

example_trees = [
    [1, 'a', object()],
    (1, (2, 3), ()),
    [1, {'k1': 2, 'k2': (3, 4)}, 5],
    {'a': 2, 'b': (2, 3)},
    jnp.array([1, 2, 3]),
]

def leaves_block():
  # Print how many leaves the pytrees have.
  for pytree in example_trees:
    leaves = jax.tree.leaves(pytree)
    print(f"{repr(pytree):<45} has {len(leaves)} leaves: {leaves}")

def flatten_block():
  params = {'W': jnp.zeros((2, 3)), 'b': jnp.zeros(3)}

  leaves, treedef = jax.tree.flatten(params)
  print(leaves)
  print(treedef)
  print(jax.tree.unflatten(treedef, leaves))
  return params, leaves, treedef

# ------------------------------------------------ Common pytree functions ----------------------------------------

list_of_lists = [
    [1, 2, 3],
    [1, 2],
    [1, 2, 3, 4]
]

def tree_map_block():
  return jax.tree.map(lambda x: x * 2, list_of_lists)

another_list_of_lists = list_of_lists

def tree_map_two_trees_block():
  return jax.tree.map(lambda x, y: x + y, list_of_lists, another_list_of_lists)

# ------------------------------------------------ Pytrees and JAX transformations --------------------------------

def loss(params, x):
  pred = jnp.dot(x, params['W']) + params['b']
  return jnp.sum(pred ** 2)

def grad_of_dict_block():
  params = {'W': jnp.ones(3), 'b': 0.5}
  x = jnp.array([[1., 2., 3.],
                 [4., 5., 6.]])

  return jax.grad(loss)(params, x)

import numpy as np

def init_mlp_params(layer_widths):
  params = []
  for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
    params.append(
        dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
             biases=np.ones(shape=(n_out,)))
    )
  return params

def init_block():
  params = init_mlp_params([1, 128, 128, 1])
  return params

def shapes_block(params):
  return jax.tree.map(lambda x: x.shape, params)

def forward(params, x):
  *hidden, last = params
  for layer in hidden:
    x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
  return x @ last['weights'] + last['biases']

def loss_fn(params, x, y):
  return jnp.mean((forward(params, x) - y) ** 2)

LEARNING_RATE = 0.0001

def update(params, x, y):
  # `grads` is a pytree with the same structure as `params`.
  grads = jax.grad(loss_fn)(params, x, y)
  # The SGD update is one tree.map over the two matching pytrees.
  return jax.tree.map(
      lambda p, g: p - LEARNING_RATE * g, params, grads
  )

def training_block(params):
  x = np.random.normal(size=(128, 1))
  y = x ** 2

  for _ in range(100):
    params = update(params, x, y)

  print(loss_fn(params, x, y))
  return params, x, y

def in_axes_sketch(vmap, f):
  return vmap(f, in_axes=(0, {"k1": 0, "k2": None}))

def in_axes_prefix_sketch(vmap, f):
  return [
  vmap(f, in_axes=(0, 0)),   # equivalent to (0, {"k1": 0, "k2": 0})
  vmap(f, in_axes=0),        # equivalent to (0, {"k1": 0, "k2": 0}) as well
  ]

# ------------------------------------------------ Explicit key paths ---------------------------------------------

import collections

ATuple = collections.namedtuple("ATuple", ('name',))

def key_paths_block():
  tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
  flattened, _ = jax.tree_util.tree_flatten_with_path(tree)

  for key_path, value in flattened:
    print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')
  return flattened

# ------------------------------------------------ Custom pytree nodes --------------------------------------------

class Special:
  def __init__(self, x, y):
    self.x = x
    self.y = y

def special_leaves_block():
  return jax.tree.leaves([Special(0, 1), Special(2, 4)])

def special_tree_map_block():
  return jax.tree.map(lambda x: x + 1, [Special(0, 1), Special(2, 4)])

from kiln.tree_util import register_pytree_node

class RegisteredSpecial(Special):
  def __repr__(self):
    return f"RegisteredSpecial(x={self.x}, y={self.y})"

def special_flatten(v):
  children = (v.x, v.y)  # the dynamic contents, traversed recursively
  aux_data = None        # static metadata, stored in the treedef
  return children, aux_data

def special_unflatten(aux_data, children):
  return RegisteredSpecial(*children)

register_pytree_node(RegisteredSpecial, special_flatten, special_unflatten)

def registered_tree_map_block():
  return jax.tree.map(lambda x: x + 1, [RegisteredSpecial(0, 1), RegisteredSpecial(2, 4)])

def registered_grad_block():
  return jax.grad(lambda s: s.x ** 2 + s.y)(RegisteredSpecial(3.0, 4.0))

from typing import NamedTuple, Any

class MyOtherContainer(NamedTuple):
  name: str
  a: Any
  b: Any

def namedtuple_leaves_block():
  return jax.tree.leaves([MyOtherContainer('Alice', 1, 2),
                          MyOtherContainer('Bob', 4, 5)])

from dataclasses import dataclass
import functools

@functools.partial(jax.tree_util.register_dataclass,
                   data_fields=['a', 'b'],
                   meta_fields=['name'])
@dataclass
class MyDataclassContainer:
  name: str
  a: Any
  b: Any

def dataclass_leaves_block():
  return jax.tree.leaves([
      MyDataclassContainer('apple', 5.3, 1.2),
      MyDataclassContainer('banana', jnp.zeros(4), -1.0),
  ])

# ------------------------------------------------ Common pytree gotchas ------------------------------------------

def nodes_for_leaves_block():
  a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]

  # Try to make another pytree with ones instead of zeros.
  shapes = jax.tree.map(lambda x: x.shape, a_tree)
  return jax.tree.map(jnp.ones, shapes)

def none_leaves_block():
  return jax.tree.leaves([None, None, None])

def none_is_leaf_block():
  return jax.tree.leaves([None, None, None], is_leaf=lambda x: x is None)

def unsortable_keys_block():
  return jax.tree.map(lambda x: x + 1, {1: 7, "y": 42})

# ------------------------------------------------ Common pytree patterns -----------------------------------------

def tree_transpose(list_of_trees):
  """Converts a list of trees of identical structure into a single tree of lists."""
  return jax.tree.map(lambda *xs: list(xs), *list_of_trees)

def tree_transpose_block():
  # Convert a dataset from row-major to column-major.
  episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
  return tree_transpose(episode_steps)
