# ruff: noqa: E111, E114, E302, E305, E402, E701, E704, F811, F821, I001  (the page's cells: two-space indents, imports between cells, the sketch's unimported annotation names)
# Copyright 2025 The JAX Authors.
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
# The code blocks of JAX's design document docs/jep/28845-stateful-rng.md ("JEP 28845: Stateful Randomness in
# JAX", jax-ml/jax), one after the other, ported to kiln by changing imports only. Each block that runs something
# is a function that returns what it shows (its prints are kept); the block the page shows raising returns the
# exception instead of stopping.
# Imports the page leaves implicit are written out: `jax`, `jnp`, `random` and `tree_util` (from jax),
# `dataclass` and `Sequence`. The sketch's annotations name `ArrayLike`, `DType` and `jax.core.Ref` (JAX 0.10.2 has
# no `jax.core.Ref`; its class is `jax.Ref`): `from __future__ import annotations` keeps them unevaluated, so the
# sketch runs as written.
# The page imports `stateful_rng` from jax.experimental.random over the sketch's function of that name; the
# sketch's is kept as `sketch_stateful_rng` first so that the tests can run it.
# Left out: the block that adds `split` to the sketch (`class StatefulPRNG: ... def split`): a fragment, its `...`
# standing for the rest of the class, and as written its children's counter is a plain array, not a Ref, so the
# sketch's `key` could not update it (JAX 0.10.2's StatefulPRNG.split wraps it in new_ref); the next block runs
# the real split of jax.experimental.random.
# The `rng.split(10).uniform()` of the prose (drawing from a split generator raises) is ported as a block.
# tests/examples/test_jep_random_pages.py checks the blocks against a NumPy Threefry-2x32 (threefry_oracle.py), NumPy
# and the page's printed outputs; test_jep_random_pages_against_jax.py runs them under kiln and JAX.
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import kiln as jax
import kiln.numpy as jnp
from kiln import random, tree_util

# ------------------------------------------------ API Design ------------------------------------------------------

def stateful_rng(seed: ArrayLike) -> StatefulPRNG:
  """Create a stateful PRNG Generator given an integer seed."""
  return StatefulPRNG(jax.random.key(seed), jax.new_ref(0))


@tree_util.register_dataclass
@dataclass(frozen=True)
class StatefulPRNG:
  """Stateful PRNG Generator class."""
  base_key: jax.Array
  counter: jax.core.Ref

  def key(self) -> jax.Array:
    """Generate a new jax PRNG key"""
    key = jax.random.fold_in(self.base_key, self.counter[...])
    jax.ref.addupdate(self.counter, ..., 1)  # increment counter
    return key

  def random(self, size: Sequence[int], dtype: DType = float):
    """Return random floats in the half-open interval [0, 1)"""
    return random.uniform(self.key(), shape=size, dtype=dtype)

  # uniform(), normal(), integers(), and others implemented similarly.

sketch_stateful_rng = stateful_rng  # (the next block imports jax.experimental.random's over this name)

from kiln.experimental.random import stateful_rng

def experimental_cell():
  rng = stateful_rng(1701)
  first = rng.random((5,))
  second = rng.random((5,))  # state is updated -> new random draws!
  return first, second

import numpy as np

def numpy_cell():
  rng = np.random.default_rng(1701)
  first = rng.random((5,))
  second = rng.random((5,))
  return first, second

# ------------------------------------------------ Interaction with vmap and shard_map -----------------------------

def unmapped_rng_under_vmap_cell():
  """The page shows this raising: (the generator, the exception, or None if nothing raised)."""
  rng = stateful_rng(0)

  def f(x):
    return x + rng.uniform()

  try:
    jax.vmap(f)(jnp.arange(10))
  except Exception as e:
    return rng, e
  return rng, None

def split_under_vmap_cell():
  rng = jax.experimental.random.stateful_rng(0)

  def f(x, rng):
    return x + rng.uniform()

  result = jax.vmap(f)(jnp.arange(5), rng.split(5))
  print(result)  # [0.07174575 1.0163325  2.0435536  3.4391735  4.534091  ]
  return rng, result

def draw_from_split_cell(rng):
  """The prose's `rng.split(10).uniform()`: an informative error (the exception, or None if nothing raised)."""
  try:
    rng.split(10).uniform()
  except Exception as e:
    return e

# ------------------------------------------------------------------------------------------------------------------

def run():
  """The page's blocks in order; a dict of what they return."""
  out = {"experimental": experimental_cell(), "numpy": numpy_cell(),
         "unmapped_rng_under_vmap": unmapped_rng_under_vmap_cell()}
  rng, out["split_under_vmap"] = split_under_vmap_cell()
  out["draw_from_split"] = draw_from_split_cell(rng)
  out["rng_after_split"] = rng
  return out
