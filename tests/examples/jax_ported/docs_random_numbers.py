# ruff: noqa: E111, E114, E302, E305, E402, E701, E704, F811, I001  (the page's cells: two-space indents, one-line defs, imports between cells)
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
# The code cells of JAX's docs page docs/random-numbers.md ("Pseudorandom numbers", jax-ml/jax cec06d116c), one
# after the other, ported to kiln by changing imports only. The imports stay at the top level, at column 0, where the
# page has them, so that tests/examples/ported.py can put JAX's back. Each cell is a function that returns what it
# prints (its prints are kept); the key the page threads from cell to cell is passed in and returned (see `run`).
# The NumPy cells (the page's contrast with np.random's global state) are ported too; they use NumPy only. Nothing
# is left out. tests/examples/test_docs_basics.py checks the draws against a NumPy Threefry-2x32
# (tests/examples/threefry_oracle.py); test_docs_basics_against_jax.py runs the cells under kiln and JAX.

# ------------------------------------------------ Random numbers in NumPy ------------------------------------------

import numpy as np

def seed_cell():
  np.random.seed(0)

def numpy_stream_cell():
  a = np.random.random()
  print(a)
  b = np.random.random()
  print(b)
  c = np.random.random()
  print(c)
  return a, b, c

def print_truncated_random_state():
  """To avoid spamming the outputs, print only part of the state."""
  full_random_state = np.random.get_state()
  print(str(full_random_state)[:460], '...')

def print_state_cell():
  print_truncated_random_state()

def reseed_print_state_cell():
  np.random.seed(0)
  print_truncated_random_state()

def uniform_print_state_cell():
  _ = np.random.uniform()
  print_truncated_random_state()
  return _

def numpy_vector_cell():
  np.random.seed(0)
  u = np.random.uniform(size=3)
  print(u)
  return u

def sequential_equivalence_cell():
  np.random.seed(0)
  individually = np.stack([np.random.uniform() for _ in range(3)])
  print("individually:", individually)

  np.random.seed(0)
  all_at_once = np.random.uniform(size=3)
  print("all at once: ", all_at_once)
  return individually, all_at_once

# ------------------------------------------------ Random numbers in JAX --------------------------------------------

import numpy as np

def bar(): return np.random.uniform()
def baz(): return np.random.uniform()

def foo(): return bar() + 2 * baz()

def foo_cell():
  np.random.seed(0)
  out = foo()
  print(out)
  return out

# Explicit random state

from kiln import random

def key_cell():
  key = random.key(42)
  print(key)
  return key

def same_key_cell(key):
  a = random.normal(key)
  print(a)
  b = random.normal(key)
  print(b)
  return a, b

def split_loop_cell(key):
  vals = []
  for i in range(3):
    new_key, subkey = random.split(key)
    del key  # The old key is consumed by split() -- we must never use it again.

    val = random.normal(subkey)
    del subkey  # The subkey is consumed by normal().

    print(f"draw {i}: {val}")
    vals.append(val)
    key = new_key  # new_key is safe to use in the next iteration.
  return key, vals

def split_cell(key):
  key, subkey = random.split(key)
  return key, subkey

def split_43_cell(key):
  key, *forty_two_subkeys = random.split(key, num=43)
  return key, forty_two_subkeys

# Lack of sequential equivalence

def no_sequential_equivalence_cell():
  key = random.key(42)
  subkeys = random.split(key, 3)
  sequence = np.stack([random.normal(subkey) for subkey in subkeys])
  print("individually:", sequence)

  key = random.key(42)
  all_at_once = random.normal(key, shape=(3,))
  print("all at once: ", all_at_once)
  return key, subkeys, sequence, all_at_once

import kiln as jax

def vmap_cell(subkeys):
  vectorized = jax.vmap(random.normal)(subkeys)
  print("vectorized:", vectorized)
  return vectorized

# ------------------------------------------------------------------------------------------------------------------

def run():
  """The page's cells in order, threading its key from cell to cell; a dict of what they return."""
  seed_cell()
  out = {"numpy_stream": numpy_stream_cell()}
  print_state_cell()
  reseed_print_state_cell()
  out.update(uniform_print_state=uniform_print_state_cell(), numpy_vector=numpy_vector_cell(),
             numpy_sequential=sequential_equivalence_cell(), foo=foo_cell())
  key = out["key"] = key_cell()
  out["same_key"] = same_key_cell(key)
  key, out["split_loop"] = split_loop_cell(key)
  out["key_after_loop"] = key
  key, out["subkey"] = split_cell(key)
  key, out["forty_two_subkeys"] = split_43_cell(key)
  out["key_after_split_43"] = key
  key, subkeys, *out["no_sequential"] = no_sequential_equivalence_cell()
  out.update(subkeys=subkeys, vectorized=vmap_cell(subkeys))
  return out
