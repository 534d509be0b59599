# ruff: noqa: E111, E114, E302, E305, E402, F401, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs page docs/tracing.md ("Tracing", jax-ml/jax cec06d116c), in order, ported to kiln by
# changing imports only. The imports stay at the top level, at column 0, where the page has them, so that
# tests/examples/ported.py can put JAX's back. The page redefines `f` from cell to cell and draws its inputs from
# NumPy's global generator at the top level: here each cell is a function (its code as on the page, indented) that
# returns what it computes or shows (the value of its last line; the functions and inputs later cells use too), its
# prints kept. Cells that raise on the page (`f(1, True)` without static_argnums, the reshape by a traced size)
# raise here. A later cell's inputs from an earlier one (`x`, `y`, the static `f`, the `x = jnp.ones((2, 3))` of the
# reshape cell, which raises before it could return it) are its parameters. `divide`, a definition only on the
# page, is top-level; the calls the text makes of it (`jax.grad(divide)(3., 2.)`, jit with `static_argnums=1`) are
# in the tests. tests/examples/test_docs_tracing.py checks the cells against NumPy and the page's claims (the printed
# tracers, what is traced and what is static, which transformations give concrete tracers);
# test_docs_tracing_against_jax.py runs them under kiln and JAX 0.10.2.

from kiln import jit
import kiln.numpy as jnp
import numpy as np

def print_cell():
  @jit
  def f(x, y):
    print("Running f():")
    print(f"  x = {x}")
    print(f"  y = {y}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result

  x = np.random.randn(3, 4)
  y = np.random.randn(4)
  return f, x, y, f(x, y)

def second_call_cell(f):
  x2 = np.random.randn(3, 4)
  y2 = np.random.randn(4)
  return x2, y2, f(x2, y2)

from kiln import make_jaxpr

def make_jaxpr_cell(x, y):
  def f(x, y):
    return jnp.dot(x + 1, y + 1)

  return make_jaxpr(f)(x, y)

def traced_condition_cell():
  @jit
  def f(x, neg):
    return -x if neg else x

  return f(1, True)

from functools import partial

def static_argnums_cell():
  @jit(static_argnums=(1,))
  def f(x, neg):
    return -x if neg else x

  return f, f(1, True)

def static_recompile_cell(f):
  return f(1, False)

# ------------------------------------------------ Static vs traced operations -------------------------------------

import kiln.numpy as jnp
from kiln import jit

def reshape_traced_size_cell():
  @jit
  def f(x):
    return x.reshape(jnp.array(x.shape).prod())

  x = jnp.ones((2, 3))
  return f(x)

def print_static_and_traced_cell(x):
  @jit
  def f(x):
    print(f"x = {x}")
    print(f"x.shape = {x.shape}")
    print(f"jnp.array(x.shape).prod() = {jnp.array(x.shape).prod()}")
    # comment this out to avoid the error:
    # return x.reshape(jnp.array(x.shape).prod())

  return f(x)

from kiln import jit
import kiln.numpy as jnp
import numpy as np

def numpy_prod_cell(x):
  @jit
  def f(x):
    return x.reshape((np.prod(x.shape),))

  return f(x)

# ------------------------------------------------ Different kinds of JAX values -----------------------------------

def divide(x, y):
  return x / y if y >= 1. else 0.
