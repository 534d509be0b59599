# ruff: noqa: E111, E114, E302, E305, E402, E701, E704, F811, F821, F841, I001  (the page's cells: two-space indents, imports between cells, the page's undefined `Array` annotation, its unused `key`)
# Copyright 2023 The JAX Authors.
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
# The code blocks of JAX's design document docs/jep/9263-typed-keys.md ("JEP 9263: Typed keys & pluggable RNGs",
# jax-ml/jax), one after the other, ported to kiln by changing imports only. Each block is a function that
# returns what its doctest shows (or, for the blocks without output, the values it makes); the typed key the
# page's first blocks share is passed in and returned (see `run`). The block the page shows raising
# (`key = key + 1`, a TypeError) returns the exception instead of stopping.
# Imports the page leaves implicit are written out where its blocks first need them: `jax`, `jnp`, and `random`
# (the red/green blocks of "Safe PRNG key use" write `random.PRNGKey`, i.e. `from jax import random`). The
# `ensure_typed_key_array` block annotates with `Array`, which the page never imports: `from __future__ import
# annotations` keeps the annotation unevaluated, so the block runs as written (in JAX 0.10.2 too).
# Nothing is left out: every block runs in JAX 0.10.2. tests/examples/test_jep_random_pages.py checks the blocks
# against a NumPy Threefry-2x32 (threefry_oracle.py) and the page's printed outputs;
# test_jep_random_pages_against_jax.py runs them under kiln and JAX.
from __future__ import annotations

# ------------------------------------------------ Overview --------------------------------------------------------

import kiln as jax
import kiln.numpy as jnp

def prngkey_cell():
  key = jax.random.PRNGKey(0)
  return key, key.shape, key.dtype

def key_cell():
  key = jax.random.key(0)
  return key, key.shape, key.dtype

def key_arr_cell():
  key_arr = jax.vmap(jax.random.key)(jnp.arange(4))
  return key_arr, key_arr.shape

def split_and_draw_cell(key):
  # split
  new_key, subkey = jax.random.split(key)

  # random number generation
  data = jax.random.uniform(key, shape=(5,))
  return new_key, subkey, data

def key_arithmetic_cell(key):
  """The page shows this raising a TypeError (doctest +SKIP): the exception, or None if nothing raised."""
  try:
    key = key + 1  # doctest: +SKIP
  except Exception as e:
    return e

def key_data_cell(key):
  return jax.random.key_data(key)

# ------------------------------------------------ Detecting new-style typed keys ----------------------------------

def detecting_cell():
  typed_key = jax.random.key(0)
  typed = jax.dtypes.issubdtype(typed_key.dtype, jax.dtypes.prng_key)
  raw_key = jax.random.PRNGKey(0)
  raw = jax.dtypes.issubdtype(raw_key.dtype, jax.dtypes.prng_key)
  return typed, raw

# ------------------------------------------------ Notes for JAX library authors -----------------------------------

from kiln import dtypes

def ensure_typed_key_array(key: Array) -> Array:
  if dtypes.issubdtype(key.dtype, dtypes.prng_key):
    return key
  else:
    raise TypeError("New-style typed JAX PRNG keys required")

# ------------------------------------------------ Customizing PRNG implementations --------------------------------

def impls_cell():
  key = jax.random.key(0, impl='threefry2x32')  # this is the default impl
  fry = key, jax.random.uniform(key, shape=(3,))

  key = jax.random.key(0, impl='rbg')
  rbg = key, jax.random.uniform(key, shape=(3,))
  return fry, rbg

# ------------------------------------------------ Safe PRNG key use -----------------------------------------------

from kiln import random

# Key buffer indexing

def indexing_incorrect_cell():
  # Incorrect
  key = random.PRNGKey(999)
  new_key = random.PRNGKey(key[1])  # identical to the original key!
  return key, new_key

def indexing_correct_cell():
  # Correct
  key = random.PRNGKey(999)
  key, new_key = random.split(key)
  return key, new_key

# Key arithmetic

def arithmetic_incorrect_cell():
  # Incorrect
  key = random.PRNGKey(0)
  batched_keys = key + jnp.arange(10, dtype=key.dtype)[:, None]
  return batched_keys

def arithmetic_correct_cell():
  # Correct
  key = random.PRNGKey(0)
  batched_keys = random.split(key, 10)
  return batched_keys

# Inadvertent transposing of key buffers

def transposing_incorrect_cell():
  # Incorrect
  keys = random.split(random.PRNGKey(0))
  data = jax.vmap(random.uniform, in_axes=1)(keys)
  return keys, data

def transposing_correct_cell():
  # Correct
  keys = random.split(random.PRNGKey(0))
  data = jax.vmap(random.uniform, in_axes=0)(keys)
  return keys, data

# Key reuse

def reuse_incorrect_cell():
  # Incorrect
  key = random.PRNGKey(0)
  x = random.uniform(key, (100,))
  y = random.uniform(key, (100,))  # Identical values!
  return x, y

def reuse_correct_cell():
  # Correct
  key = random.PRNGKey(0)
  key1, key2 = random.split(random.key(0))
  x = random.uniform(key1, (100,))
  y = random.uniform(key2, (100,))
  return key1, key2, x, y

# ------------------------------------------------ PRNG dtypes ------------------------------------------------------

def prng_key_is_extended_cell():
  return jax.dtypes.issubdtype(jax.dtypes.prng_key, jax.dtypes.extended)

def key_dtype_cell():
  key = jax.random.key(0)
  return jax.dtypes.issubdtype(key.dtype, jax.dtypes.extended), jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)

# ------------------------------------------------------------------------------------------------------------------

def run():
  """The page's blocks in order, threading the typed key of its Overview; a dict of what they return."""
  out = {"prngkey": prngkey_cell()}
  out["key"] = key_cell()
  key = out["key"][0]
  out["key_arr"] = key_arr_cell()
  out["split_and_draw"] = split_and_draw_cell(key)
  out["key_arithmetic"] = key_arithmetic_cell(key)  # (raises: `key` stays the typed key(0))
  out["key_data"] = key_data_cell(key)
  out["detecting"] = detecting_cell()
  out["ensure_typed"] = ensure_typed_key_array(key)
  out["impls"] = impls_cell()
  out.update(indexing_incorrect=indexing_incorrect_cell(), indexing_correct=indexing_correct_cell(),
             arithmetic_incorrect=arithmetic_incorrect_cell(), arithmetic_correct=arithmetic_correct_cell(),
             transposing_incorrect=transposing_incorrect_cell(), transposing_correct=transposing_correct_cell(),
             reuse_incorrect=reuse_incorrect_cell(), reuse_correct=reuse_correct_cell(),
             prng_key_is_extended=prng_key_is_extended_cell(), key_dtype=key_dtype_cell())
  return out
