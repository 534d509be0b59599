# ruff: noqa: E111, E114, E302, E305, E402, F401, F811, I001  (the pages' cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs page docs/key-concepts.md ("Key concepts", jax-ml/jax ad42672919), in order, then the
# Python code of docs/default_dtypes.md ("Default dtypes and the X64 flag", jax-ml/jax dafebd0d7f), ported to kiln
# by changing imports only. The imports stay at the top level, at column 0, where the pages have them, so that
# tests/examples/ported.py can put JAX's back. Each cell that runs something is a function, `..._block`, whose body
# is the cell's lines (indented) and which returns what the cell shows or computes (the value of its last line, the
# notebook's output; the functions and inputs later cells use), its prints kept. The page defines `selu` three times:
# the first two (plain, then `@jax.jit`) stay inside their cells; the third, a definition only, is top-level, and
# the jaxpr cell reads it, as does the page. The NamedTuple `Params` is top-level too, where the page defines it.
# The cell that raises on the page (`lax.add(1, 1.0)`, tagged raises-exception) raises here. The inputs the
# convolution cell takes from the one before (`x`, `y`) are its parameters.
# default_dtypes.md: its doctest (`>>> jnp.arange(5)` ...) is a cell returning the three arrays it shows; its
# ```-fenced, `+SKIP`ped `jnp.arange(5, dtype='float64')` (the warning of a truncated 64-bit dtype) is a cell too;
# its x64 cell calls `jax.config.update('jax_enable_x64', True)` as the page does, and so leaves the flag on: the
# tests turn it off again. Left out: the ```bash `JAX_ENABLE_X64=1 python main.py` (the tests run a fresh
# interpreter with the environment variable instead). tests/examples/test_docs_key_concepts.py checks the cells
# against NumPy and the pages' claims (and the claims of default_dtypes.md's prose and tables);
# test_docs_key_concepts_against_jax.py runs them under kiln and JAX 0.10.2. (The API layering cells are the same as
# thinking_in_jax.py's "NumPy, lax & XLA" cells; the SELU of docs_jit_compilation.py is the same function.)

# ============================================== docs/key-concepts.md ==============================================
# ---------------------------------------------- Transformations ---------------------------------------------------

import kiln as jax
import kiln.numpy as jnp

def selu_jit_block():
  def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

  selu_jit = jax.jit(selu)
  print(selu_jit(1.0))
  return selu_jit

def selu_decorator_block():
  @jax.jit
  def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
  return selu

# ---------------------------------------------- Tracing -----------------------------------------------------------

def tracing_block():
  @jax.jit
  def f(x):
    print(x)
    return x + 1

  x = jnp.arange(5)
  result = f(x)
  return f, result

# ---------------------------------------------- Jaxprs ------------------------------------------------------------

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

def make_jaxpr_block():
  x = jnp.arange(5.0)
  return jax.make_jaxpr(selu)(x)

# ---------------------------------------------- Pytrees -----------------------------------------------------------

def list_params_block():
  # (nested) list of parameters
  params = [1, 2, (jnp.arange(3), jnp.ones(2))]

  print(jax.tree.structure(params))
  print(jax.tree.leaves(params))
  return params

def dict_params_block():
  # Dictionary of parameters
  params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}

  print(jax.tree.structure(params))
  print(jax.tree.leaves(params))
  return params

# Named tuple of parameters
from typing import NamedTuple

class Params(NamedTuple):
  a: int
  b: float

def namedtuple_params_block():
  params = Params(1, 5.0)
  print(jax.tree.structure(params))
  print(jax.tree.leaves(params))
  return params

# ---------------------------------------------- JAX API layering: NumPy, lax & XLA --------------------------------

import kiln.numpy as jnp

def jnp_add_block():
  return jnp.add(1, 1.0)  # jax.numpy API implicitly promotes mixed types.

from kiln import lax

def lax_add_block():
  return lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.

def lax_add_promoted_block():
  return lax.add(jnp.float32(1), 1.0)

def convolve_block():
  x = jnp.array([1, 2, 1])
  y = jnp.ones(10)
  return x, y, jnp.convolve(x, y)

from kiln import lax

def conv_general_dilated_block(x, y):
  result = lax.conv_general_dilated(
      x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
      y.reshape(1, 1, 10),
      window_strides=(1,),
      padding=[(len(y) - 1, len(y) - 1)])  # equivalent of padding='full' in NumPy
  return result[0, 0]

# ============================================== docs/default_dtypes.md ============================================
# ---------------------------------------------- Default setting: 32-bits everywhere -------------------------------

import kiln.numpy as jnp

def default_dtypes_block():
  return jnp.arange(5), jnp.zeros(5), jnp.ones(5, dtype=int)

def truncated_float64_block():
  return jnp.arange(5, dtype='float64')  # doctest: +SKIP

# ---------------------------------------------- The X64 flag: enabling 64-bit values ------------------------------

import kiln as jax
import kiln.numpy as jnp

def x64_block():
  jax.config.update('jax_enable_x64', True)

  print(repr(jnp.arange(5)))
  print(repr(jnp.zeros(5)))
  print(repr(jnp.ones(5, dtype=int)))
