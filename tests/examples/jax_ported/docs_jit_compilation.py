# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs page docs/jit-compilation.md ("Just-in-time compilation", jax-ml/jax cec06d116c), one
# after the other, ported to kiln by changing imports only. The imports stay at the top level, at column 0, where the
# page has them, so that tests/examples/ported.py can put JAX's back. The page's top-level functions stay top-level
# (later cells use them); each cell's statements are a function that returns what the cell prints or shows (its
# prints are kept). Cells that raise on the page raise here. Left out: the `%xmode minimal` cell and the %timeit
# lines (the cells that time a computation run it once, with block_until_ready, and return it); the SELU input's
# length (the page's 1000000) is a parameter. tests/examples/test_docs_basics.py checks the cells against NumPy and
# the page's jaxprs; test_docs_basics_against_jax.py runs them under kiln and JAX.

# ------------------------------------------------ How JAX transformations work -------------------------------------

import kiln as jax
import kiln.numpy as jnp

global_list = []

def log2(x):
  global_list.append(x)
  ln_x = jnp.log(x)
  ln_2 = jnp.log(2.0)
  return ln_x / ln_2

def make_jaxpr_cell():
  jaxpr = jax.make_jaxpr(log2)(3.0)
  print(jaxpr)
  return jaxpr

def log2_with_print(x):
  print("printed x:", x)
  ln_x = jnp.log(x)
  ln_2 = jnp.log(2.0)
  return ln_x / ln_2

def make_jaxpr_with_print_cell():
  jaxpr = jax.make_jaxpr(log2_with_print)(3.)
  print(jaxpr)
  return jaxpr

def log2_if_rank_2(x):
  if x.ndim == 2:
    ln_x = jnp.log(x)
    ln_2 = jnp.log(2.0)
    return ln_x / ln_2
  else:
    return x

def make_jaxpr_if_rank_2_cell():
  jaxpr = jax.make_jaxpr(log2_if_rank_2)(jax.numpy.array([1, 2, 3]))
  print(jaxpr)
  return jaxpr

# ------------------------------------------------ JIT compiling a function -----------------------------------------

import kiln as jax
import kiln.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

def selu_cell(n=1000000):
  x = jnp.arange(n)
  # the page times this with %timeit; here it runs once
  return x, selu(x).block_until_ready()

def selu_jit_cell(x):
  selu_jit = jax.jit(selu)

  # Pre-compile the function before timing...
  selu_jit(x).block_until_ready()

  # the page times this with %timeit; here it runs once more
  return selu_jit, selu_jit(x).block_until_ready()

# ------------------------------------------------ Why can't we just JIT everything? --------------------------------

# Condition on value of x.

def f(x):
  if x > 0:
    return x
  else:
    return 2 * x

def f_jit_cell():
  return jax.jit(f)(10)  # Raises an error

# While loop conditioned on x and n.

def g(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i

def g_jit_cell():
  return jax.jit(g)(10, 20)  # Raises an error

# While loop conditioned on x and n with a jitted body.

@jax.jit
def loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted(x, n):
  i = 0
  while i < n:
    i = loop_body(i)
  return x + i

def g_inner_jitted_cell():
  return g_inner_jitted(10, 20)

# ------------------------------------------------ Marking arguments as static --------------------------------------

def f_jit_correct_cell():
  f_jit_correct = jax.jit(f, static_argnums=0)
  out = f_jit_correct(10)
  print(out)
  return f_jit_correct, out

def g_jit_correct_cell():
  g_jit_correct = jax.jit(g, static_argnames=['n'])
  out = g_jit_correct(10, 20)
  print(out)
  return g_jit_correct, out

@jax.jit(static_argnames=['n'])
def g_jit_decorated(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i

def g_jit_decorated_cell():
  out = g_jit_decorated(10, 20)
  print(out)
  return out

# ------------------------------------------------ JIT and caching --------------------------------------------------

from functools import partial

def unjitted_loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted_partial(x, n):
  i = 0
  while i < n:
    # Don't do this! each time the partial returns
    # a function with different hash
    i = jax.jit(partial(unjitted_loop_body))(i)
  return x + i

def g_inner_jitted_lambda(x, n):
  i = 0
  while i < n:
    # Don't do this!, lambda will also return
    # a function with a different hash
    i = jax.jit(lambda x: unjitted_loop_body(x))(i)
  return x + i

def g_inner_jitted_normal(x, n):
  i = 0
  while i < n:
    # this is OK, since JAX can find the
    # cached, compiled function
    i = jax.jit(unjitted_loop_body)(i)
  return x + i

def caching_cell():
  # the page times each of these with %timeit; here each runs once
  print("jit called in a loop with partials:")
  a = g_inner_jitted_partial(10, 20).block_until_ready()

  print("jit called in a loop with lambdas:")
  b = g_inner_jitted_lambda(10, 20).block_until_ready()

  print("jit called in a loop with caching:")
  c = g_inner_jitted_normal(10, 20).block_until_ready()
  return a, b, c
