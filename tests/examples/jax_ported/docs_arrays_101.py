# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's blocks as they are: two-space indents, imports between blocks, the sketch's re-import)
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
# The Python code blocks of JAX's docs/new_docs/101/arrays.md ("Arrays and `jax.numpy`", jax-ml/jax), in order,
# ported to kiln by changing imports only. The imports stay at the top level, at column 0, where the page has them
# (tests/examples/ported.py puts JAX's back; the `from jax import lax` of its block and the `import jax` of the x64
# sketch too). Every block whose top-level code runs something is a function, `..._block`, whose body is the block's
# lines and which returns what the block shows or computes (its last expression, the page's notebook output; its
# prints are kept); a block that defines a name a later block reads returns it after what it shows (the arrays `x`,
# `y` of the first block, the `x` of the indexing section), and a name a block reads from an earlier one is that
# block's parameter. Blocks that raise on the page (`x[0] = 10`, `jnp.sum([1, 2, 3])`, `lax.add(1, 1.0)`) raise
# here. The two ```python sketches are kept: the x64 switch as `enable_x64_sketch` (its `jax.config.update` line;
# it turns 64-bit mode on for the whole process, so the tests call it where the flag is restored afterwards), and
# the page's simplified `sin` as it is (a top-level function, which reads `lax` from the later import).
# Left out: `%xmode minimal` (IPython). tests/examples/test_docs_arrays_101.py checks the blocks against NumPy and
# the page's claims; test_docs_arrays_101_against_jax.py runs them under kiln and JAX 0.10.2.

# ------------------------------------------------ From NumPy to JAX ----------------------------------------------

import kiln as jax
import kiln.numpy as jnp
import numpy as np

def numpy_like_block():
  x = jnp.arange(9.0).reshape(3, 3)
  y = jnp.ones(3)

  print(x @ y)
  print(x.sum(axis=0))
  print(x[1, :2])
  return x, y

def isinstance_block(x):
  return isinstance(x, jax.Array)

def typeof_block(x):
  print(jax.typeof(x))

# ------------------------------------------------ JAX arrays are immutable ---------------------------------------

def numpy_mutation_block():
  x_np = np.arange(10)
  x_np[0] = 10
  print(x_np)
  return x_np

def immutable_block():
  x = jnp.arange(10)
  x[0] = 10

def at_set_block(x):
  y = x.at[0].set(10)
  print(x)  # unchanged
  print(y)
  return y

def at_family_block(x):
  print(x.at[3].add(100))
  print(x.at[:3].max(5))

# ------------------------------------------------ Default dtypes and precision -----------------------------------

def default_dtypes_block():
  print(np.array([1.0, 2.0]).dtype)
  print(jnp.array([1.0, 2.0]).dtype)

import kiln as jax
def enable_x64_sketch():
  jax.config.update("jax_enable_x64", True)

def promotion_block():
  return (jnp.arange(3) + 1.5).dtype

# ------------------------------------------------ Indexing differences -------------------------------------------

def clamped_read_block():
  x = jnp.arange(10)
  return x[11], x  # clamped to x[9]

def dropped_write_block(x):
  return x.at[11].set(99)  # update is dropped

def list_argument_block():
  return jnp.sum([1, 2, 3])

def explicit_array_block():
  return jnp.sum(jnp.array([1, 2, 3]))

# ------------------------------------------------ Arrays live on devices -----------------------------------------

def sharding_block(x):
  return x.sharding

# ------------------------------------------------ Under the hood: `jax.numpy`, `jax.lax`, and XLA ----------------

def sin(x):
  x = jnp.asarray(x)                            # accept built-in Python numbers
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = x.astype(float)                         # promote integers to floating point
  return lax.sin(x)

def jnp_add_block():
  return jnp.add(1, 1.0)

from kiln import lax
def lax_add_block():
  return lax.add(1, 1.0)
