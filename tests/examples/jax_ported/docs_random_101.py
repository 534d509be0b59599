# ruff: noqa: E111, E114, E302, E305, E402, E701, E704, B007, F811, I001  (the page's blocks as they are: two-space indents, one-line defs, imports between blocks)
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
# The Python code blocks of JAX's docs/new_docs/101/random.md ("Pseudorandom numbers", jax-ml/jax), in order, ported
# to kiln by changing imports only. The imports stay at the top level, at column 0, where the page has them (tests/
# examples/ported.py puts JAX's back); so do the page's NumPy functions `bar`, `baz` and `foo`. Every block that
# runs something is a function, `..._block`, whose body is the block's lines and which returns what the block shows
# or computes (its last expression, the page's notebook output, is returned; its prints are kept). A name that a
# block reads from an earlier one (`key` of the key block, `subkeys` of the sequential-equivalence block) is that
# block's parameter. The ```python sketch of a chained key (the loop the page says to avoid) reads `key` and
# `num_steps`, which the page leaves undefined: it is a function of them, `chained_split_sketch`, that returns the
# last key (its `...` kept). Nothing is left out (the page has no IPython magics or device-specific cells; its
# {note} about jax.random.PRNGKey, key_data and wrap_key_data has no code). tests/examples/test_docs_random_101.py
# checks the blocks against a NumPy Threefry-2x32 (tests/examples/threefry_oracle.py), NumPy's generator and the
# page's claims; test_docs_random_101_against_jax.py runs them under kiln and JAX. (The older page
# docs/random-numbers.md is docs_random_numbers.py.)

# ------------------------------------------------ Why not a global generator? ------------------------------------

import numpy as np

def numpy_global_block():
  np.random.seed(0)
  print(np.random.uniform())
  print(np.random.uniform())  # different: the hidden state advanced

def bar(): return np.random.uniform()
def baz(): return np.random.uniform()

def foo(): return bar() + 2 * baz()

def foo_block():
  np.random.seed(0)

  print(foo())

# ------------------------------------------------ Keys are values ------------------------------------------------

import kiln as jax
from kiln import random

def key_block():
  key = random.key(42)
  return key

def typeof_block(key):
  print(jax.typeof(key))

def same_key_block(key):
  print(random.normal(key))
  print(random.normal(key))  # same key, same value — necessarily

# ------------------------------------------------ Deriving new keys ----------------------------------------------

def split_block():
  key = random.key(42)
  key, subkey = random.split(key)
  print(random.normal(subkey))
  return key, subkey

def split_num_block():
  key = random.key(42)
  subkeys = random.split(key, num=4)
  return [float(random.normal(k)) for k in subkeys]

def fold_in_block():
  key = random.key(42)
  for step in range(3):
    step_key = random.fold_in(key, step)
    print(f"step {step}: {random.normal(step_key)}")

# Keep the key tree wide, not deep

def chained_split_sketch(key, num_steps):
  for step in range(num_steps):
    key, subkey = random.split(key)   # each key derived from the last: avoid!
    ...
  return key

# ------------------------------------------------ No sequential equivalence --------------------------------------

def no_sequential_equivalence_block():
  key = random.key(42)
  subkeys = random.split(key, 3)
  print("individually:", np.stack([random.normal(k) for k in subkeys]))

  key = random.key(42)
  print("all at once: ", random.normal(key, shape=(3,)))
  return subkeys

import kiln as jax

def vmap_block(subkeys):
  return jax.vmap(random.normal)(subkeys)
