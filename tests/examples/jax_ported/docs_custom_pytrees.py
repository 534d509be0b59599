# ruff: noqa: E111, E114, E302, E305, E402, F811, I001, UP004  (the page's cells: two-space indents, redefinitions, imports between cells, `class Special(object)`)
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
# The code cells of JAX's docs page docs/custom_pytrees.md ("Custom pytree nodes", jax-ml/jax cec06d116c), one after
# the other, ported to kiln by changing imports only. The imports, the classes and the registrations stay at the top
# level, where the page has them (so loading the module registers them, once per load, as running the page does),
# so that tests/examples/ported.py can put JAX's imports back; each cell that prints or shows a value is a function
# that returns it (its prints are kept). Cells that raise on the page raise here. The page defines `show_example`,
# `MyTree` and `tree_unflatten` twice: the first `show_example` is bound as a default argument of the cell that calls
# it (and kept as `show_example_methods`); the second `MyTree` and the first `tree_unflatten` (the page's "potential
# solutions") are made by cell functions that return them, so that the first, registered `MyTree` stays the one the
# cells above it see; as on the page, they are not registered (the tests register them). Left out: the
# remove-cell that hides the GPU warning (`_jnp.arange(10)`). tests/examples/test_docs_basics.py checks the cells
# against the page's printed values; test_docs_basics_against_jax.py runs them under kiln and JAX.

import kiln as jax

class Special(object):
  def __init__(self, x, y):
    self.x = x
    self.y = y

def special_leaves_cell():
  return jax.tree.leaves([
      Special(0, 1),
      Special(2, 4),
  ])

def special_tree_map_cell():
  return jax.tree.map(lambda x: x + 1,
    [
      Special(0, 1),
      Special(2, 4)
    ])  # raises on the page

from kiln.tree_util import register_pytree_node

class RegisteredSpecial(Special):
  def __repr__(self):
    return "RegisteredSpecial(x={}, y={})".format(self.x, self.y)

def special_flatten(v):
  """Specifies a flattening recipe.

  Params:
    v: The value of the registered type to flatten.
  Returns:
    A pair of an iterable with the children to be flattened recursively,
    and some opaque auxiliary data to pass back to the unflattening recipe.
    The auxiliary data is stored in the treedef for use during unflattening.
    The auxiliary data could be used, for example, for dictionary keys.
  """
  children = (v.x, v.y)
  aux_data = None
  return (children, aux_data)

def special_unflatten(aux_data, children):
  """Specifies an unflattening recipe.

  Params:
    aux_data: The opaque data that was specified during flattening of the
      current tree definition.
    children: The unflattened children

  Returns:
    A reconstructed object of the registered type, using the specified
    children and auxiliary data.
  """
  return RegisteredSpecial(*children)

# Global registration
register_pytree_node(
    RegisteredSpecial,
    special_flatten,    # Instruct JAX what are the children nodes.
    special_unflatten   # Instruct JAX how to pack back into a `RegisteredSpecial`.
)

def registered_tree_map_cell():
  return jax.tree.map(lambda x: x + 1,
    [
     RegisteredSpecial(0, 1),
     RegisteredSpecial(2, 4),
    ])

from kiln.tree_util import register_pytree_node_class

@register_pytree_node_class
class RegisteredSpecial2(Special):
  def __repr__(self):
    return "RegisteredSpecial2(x={}, y={})".format(self.x, self.y)

  def tree_flatten(self):
    children = (self.x, self.y)
    aux_data = None
    return (children, aux_data)

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    return cls(*children)


def show_example(structured):
  flat, tree = structured.tree_flatten()
  unflattened = RegisteredSpecial2.tree_unflatten(tree, flat)
  print(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")

show_example_methods = show_example

def show_example_methods_cell(show_example=show_example):
  show_example(RegisteredSpecial2(1., 2.))

from typing import NamedTuple, Any

class MyOtherContainer(NamedTuple):
  name: str
  a: Any
  b: Any
  c: Any

def namedtuple_leaves_cell():
  # NamedTuple subclasses are handled as pytree nodes, so
  # this will work out-of-the-box.
  return jax.tree.leaves([
      MyOtherContainer('Alice', 1, 2, 3),
      MyOtherContainer('Bob', 4, 5, 6)
  ])

from dataclasses import dataclass
import kiln.numpy as jnp
import numpy as np
import functools

@functools.partial(jax.tree_util.register_dataclass,
                   data_fields=['a', 'b', 'c'],
                   meta_fields=['name'])
@dataclass
class MyDataclassContainer(object):
  name: str
  a: Any
  b: Any
  c: Any

def dataclass_leaves_cell():
  # MyDataclassContainer is now a pytree node.
  return jax.tree.leaves([
    MyDataclassContainer('apple', 5.3, 1.2, jnp.zeros([4])),
    MyDataclassContainer('banana', np.array([3, 4]), -1., 0.)
  ])

@jax.jit
def f(x: MyDataclassContainer | MyOtherContainer):
  return x.a + x.b

def jit_dataclass_cell():
  # Works fine! `mdc.name` is static.
  mdc = MyDataclassContainer('mdc', 1, 2, 3)
  y = f(mdc)
  return y

def jit_namedtuple_cell():
  moc = MyOtherContainer('moc', 1, 2, 3)
  y = f(moc)  # raises on the page
  return y

# ------------------------------------------------ Custom pytrees and initialization with unexpected values ----------

class MyTree:
  def __init__(self, a):
    self.a = jnp.asarray(a)

register_pytree_node(MyTree, lambda tree: ((tree.a,), None),
    lambda _, args: MyTree(*args))

tree = MyTree(jnp.arange(5.0))

def vmap_mytree_cell():
  # (JAX 0.10.2 no longer unflattens MyTree(object()) here and maps the tree, as kiln does: no error)
  return jax.vmap(lambda x: x)(tree)      # Error because object() is passed to `MyTree`.

def jacobian_mytree_cell():
  # (kiln: a TypeError, from MyTree(MyTree(...)); JAX 0.10.2: a ValueError, from MyTree(None) in its input check)
  return jax.jacobian(lambda x: x)(tree)  # Error because MyTree(...) is passed to `MyTree`.

# Potential solution 1 (a cell function, so that the registration above, whose unflatten looks `MyTree` up when it
# runs, keeps seeing the first class in the cells above, as it does on the page, which runs them before this one)

def solution_1_cell():
  class MyTree:
    def __init__(self, a):
      if not (type(a) is object or a is None or isinstance(a, MyTree)):
        a = jnp.asarray(a)
      self.a = a
  return MyTree

# Potential solution 2 (its `MyTree` is the page's current one, solution 1's)

def solution_2_cell(MyTree):
  def tree_unflatten(aux_data, children):
    del aux_data  # Unused in this class.
    obj = object.__new__(MyTree)
    obj.a = children[0]
    return obj
  return tree_unflatten

# ------------------------------------------------ Internal pytree handling -----------------------------------------

from kiln.tree_util import tree_flatten, tree_unflatten
import kiln.numpy as jnp

def flatten_unflatten_cell():
  # The structured value to be transformed
  value_structured = [1., (2., 3.)]

  # The leaves in value_flat correspond to the `*` markers in value_tree
  value_flat, value_tree = tree_flatten(value_structured)
  print(f"{value_flat=}\n{value_tree=}")

  # Transform the flat value list using an element-wise numeric transformer
  transformed_flat = list(map(lambda v: v * 2., value_flat))
  print(f"{transformed_flat=}")

  # Reconstruct the structured output, using the original
  transformed_structured = tree_unflatten(value_tree, transformed_flat)
  print(f"{transformed_structured=}")
  return value_flat, value_tree, transformed_flat, transformed_structured

from collections import namedtuple
Point = namedtuple('Point', ['x', 'y'])

example_containers = [
    (1., [2., 3.]),
    (1., {'b': 2., 'a': 3.}),
    1.,
    None,
    jnp.zeros(2),
    Point(1., 2.)
]
def show_example(structured):
  flat, tree = tree_flatten(structured)
  unflattened = tree_unflatten(tree, flat)
  print(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")

def show_examples_cell():
  for structured in example_containers:
    show_example(structured)
