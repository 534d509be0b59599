# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the notebook's cells: two-space indents, redefinitions, imports between cells)
# Copyright 2021 The JAX Authors.
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
# The code cells of JAX's docs notebook docs/notebooks/thinking_in_jax.md, ported to kiln by changing imports only.
# Part 1 is "How to think in JAX" as it stood until July 2025 (jax-ml/jax 8061b583e2: NumPy vs jax.numpy,
# immutability and .at, the lax/jnp layering, jit, tracing and jaxprs, static arguments, static vs traced
# operations). Part 2 is the cells the page's current version ("Quickstart: How to think in JAX", jax-ml/jax
# cec06d116c) adds: jax.Array, devices and sharding, grad, jacobian and a hessian, vmap, pseudorandom numbers and
# print/jax.debug.print under jit (its other cells are part 1's, unchanged). The imports stay at the top level,
# at column 0, where the notebook has them, so that tests/examples/ported.py can put JAX's back. Each code cell
# is a function that returns what the cell shows (its prints are kept); what the notebook threads from cell to
# cell (x, y, the jitted f, the key) is passed in and returned. Cells that raise in the notebook raise here.
# The jitted functions a cell defines stay inside the cell, so each call of the cell traces afresh (and prints
# what the notebook prints while tracing). Left out: the matplotlib plots (the plot cells return the data) and
# the %timeit lines (the cells that time them run each computation once, with block_until_ready). Where a cell
# prints an expression, the port computes it once, prints it and returns it.
# tests/examples/test_thinking_in_jax.py checks it against NumPy and closed forms, the printed text and the errors;
# test_thinking_in_jax_against_jax.py runs it under kiln and JAX.

# ============================================== Part 1 (8061b583e2) ===============================================
# ---------------------------------------------- JAX vs. NumPy -----------------------------------------------------

import numpy as np

def numpy_plot_cell():
  x_np = np.linspace(0, 10, 1000)
  y_np = 2 * np.sin(x_np) * np.cos(x_np)
  return x_np, y_np

import kiln.numpy as jnp

def jnp_plot_cell():
  x_jnp = jnp.linspace(0, 10, 1000)
  y_jnp = 2 * jnp.sin(x_jnp) * jnp.cos(x_jnp)
  return x_jnp, y_jnp

def type_np_cell(x_np):
  return type(x_np)

def type_jnp_cell(x_jnp):
  # kiln: kiln.Array where JAX shows jaxlib._jax.ArrayImpl (README, "Differences from JAX": Arrays are kiln.Array).
  return type(x_jnp)

def numpy_mutable_cell():
  # NumPy: mutable arrays
  x = np.arange(10)
  x[0] = 10
  print(x)
  return x

def jax_immutable_cell():
  # JAX: immutable arrays
  x = jnp.arange(10)
  x[0] = 10  # raises TypeError (the notebook's output)

def at_set_cell(x):
  y = x.at[0].set(10)
  print(x)
  print(y)
  return y

# ------------------------------------ NumPy, lax & XLA: JAX API layering -------------------------------------------

import kiln.numpy as jnp

def jnp_add_cell():
  return jnp.add(1, 1.0)  # jax.numpy API implicitly promotes mixed types.

from kiln import lax

def lax_add_cell():
  return lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.

def lax_add_promoted_cell():
  return lax.add(jnp.float32(1), 1.0)

def convolve_cell():
  x = jnp.array([1, 2, 1])
  y = jnp.ones(10)
  return x, y, jnp.convolve(x, y)

from kiln import lax

def conv_general_dilated_cell(x, y):
  result = lax.conv_general_dilated(
      x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
      y.reshape(1, 1, 10),
      window_strides=(1,),
      padding=[(len(y) - 1, len(y) - 1)])  # equivalent of padding='full' in NumPy
  return result[0, 0]

# ---------------------------------------------- To JIT or not to JIT ----------------------------------------------

import kiln.numpy as jnp

def norm(X):
  X = X - X.mean(0)
  return X / X.std(0)

from kiln import jit
norm_compiled = jit(norm)

def norm_cell(shape=(10000, 10)):
  np.random.seed(1701)
  X = jnp.array(np.random.rand(*shape))
  return X, np.allclose(norm(X), norm_compiled(X), atol=1E-6)

def timeit_cell(X):
  # The notebook times these two with %timeit; here each runs once.
  return norm(X).block_until_ready(), norm_compiled(X).block_until_ready()

def get_negatives(x):
  return x[x < 0]

def get_negatives_cell():
  x = jnp.array(np.random.randn(10))
  return x, get_negatives(x)

def jit_get_negatives_cell(x):
  return jit(get_negatives)(x)  # raises NonConcreteBooleanIndexError (the notebook's output)

# ------------------------------------ JIT mechanics: tracing and static variables ---------------------------------

def tracing_cell():
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

  # KILN BUG: kiln's IR has two more equations than JAX's jaxpr: each `x + 1` is a `broadcast_in_dim 1.0:f32[]` to
  # the operand's shape and an `add` of the two (`c:f32[3,4] = broadcast_in_dim 1.0:f32[]`, `d:f32[3,4] = add a c`),
  # where JAX 0.10.2 prints `c:f32[3,4] = add a 1.0:f32[]` (the notebook, from an older JAX: `add a 1.0`).
  return make_jaxpr(f)(x, y)

def traced_if_cell():
  @jit
  def f(x, neg):
    return -x if neg else x

  return f(1, True)  # raises TracerBoolConversionError (the notebook's output)

from functools import partial

def static_argnums_cell():
  @partial(jit, static_argnums=(1,))
  def f(x, neg):
    return -x if neg else x

  return f, f(1, True)

def static_argnums_recompile_cell(f):
  return f(1, False)

# ---------------------------------------------- Static vs traced operations ---------------------------------------

import kiln.numpy as jnp
from kiln import jit

def traced_shape_cell():
  @jit
  def f(x):
    return x.reshape(jnp.array(x.shape).prod())

  x = jnp.ones((2, 3))
  return f(x)  # raises TypeError (the notebook's output)

def traced_shape_prints_cell(x):
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

def static_shape_cell(x):
  @jit
  def f(x):
    return x.reshape((np.prod(x.shape),))

  return f(x)

# ============================================== Part 2 (cec06d116c) ===============================================
# ---------------------------------------------- JAX arrays (jax.Array) ---------------------------------------------

import kiln as jax
import kiln.numpy as jnp

def array_cell():
  x = jnp.arange(5)
  return x, isinstance(x, jax.Array)

def devices_cell(x):
  return x.devices()

def sharding_cell(x):
  return x.sharding

# ---------------------------------------------- Taking derivatives with jax.grad ----------------------------------

from kiln import grad

def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

def grad_cell():
  x_small = jnp.arange(3.)
  derivative_fn = grad(sum_logistic)
  d = derivative_fn(x_small)
  print(d)
  return x_small, d

def first_finite_differences(f, x, eps=1E-3):
  return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                   for v in jnp.eye(len(x))])

def finite_differences_cell(x_small):
  fd = first_finite_differences(sum_logistic, x_small)
  print(fd)
  return fd

def grad_of_jit_cell():
  d3 = grad(jit(grad(jit(grad(sum_logistic)))))(1.0)
  print(d3)
  return d3

from kiln import jacobian

def jacobian_cell(x_small):
  J = jacobian(jnp.exp)(x_small)
  print(J)
  return J

from kiln import jacfwd, jacrev
def hessian(fun):
  return jit(jacfwd(jacrev(fun)))

def hessian_cell(x_small):
  H = hessian(sum_logistic)(x_small)
  print(H)
  return H

# ---------------------------------------------- Auto-vectorization with jax.vmap ----------------------------------

from kiln import random

key = random.key(1701)
key1, key2 = random.split(key)
mat = random.normal(key1, (150, 100))
batched_x = random.normal(key2, (10, 100))

def apply_matrix(x):
  return jnp.dot(mat, x)

def naively_batched_apply_matrix(v_batched):
  return jnp.stack([apply_matrix(v) for v in v_batched])

def naively_batched_cell():
  print('Naively batched')
  return naively_batched_apply_matrix(batched_x).block_until_ready()

import numpy as np

@jit
def batched_apply_matrix(batched_x):
  return jnp.dot(batched_x, mat.T)

def manually_batched_cell():
  np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                             batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
  print('Manually batched')
  return batched_apply_matrix(batched_x).block_until_ready()

from kiln import vmap

@jit
def vmap_batched_apply_matrix(batched_x):
  return vmap(apply_matrix)(batched_x)

def vmap_cell():
  np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                             vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
  print('Auto-vectorized with vmap')
  return vmap_batched_apply_matrix(batched_x).block_until_ready()

# ---------------------------------------------- Pseudorandom numbers ----------------------------------------------

from kiln import random

def key_cell():
  key = random.key(43)
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

# ---------------------------------------------- Debugging ---------------------------------------------------------

import kiln as jax
import kiln.numpy as jnp

def print_cell():
  @jax.jit
  def f(x):
    print("print(x) ->", x)
    y = jnp.sin(x)
    print("print(y) ->", y)
    return y

  result = f(2.)
  return result

def debug_print_cell():
  @jax.jit
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {x}", x=x)
    y = jnp.sin(x)
    jax.debug.print("jax.debug.print(y) -> {y}", y=y)
    return y

  result = f(2.)
  return result
