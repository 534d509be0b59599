# ruff: noqa: E111, E114, E302, E305, E402, F811, I001, B007  (the page's cells: two-space indents, redefinitions, imports between cells, unused loop variables)
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
# The code cells of JAX's docs page docs/control-flow.md ("Control flow and logical operators with JIT", jax-ml/jax
# cec06d116c), one after the other, ported to kiln by changing imports only. tests/examples/test_common_gotchas.py
# already runs every one of these cells under kiln (its "Control flow" section, with the cells' code inlined in the
# tests) and checks their values and errors; this port exists so that the same cells can run under kiln and JAX
# side by side (test_docs_basics_against_jax.py) and their printed text be checked (test_docs_basics.py checks only
# what test_common_gotchas.py does not). The imports stay at the top level, at column 0, where the page has them, so
# that tests/examples/ported.py can put JAX's back. The page redefines `f` and `g` from cell to cell: each cell
# defines its own as the page does, inside the cell function, and returns what it prints or shows (its prints are
# kept). Cells that raise on the page raise here. Left out: the ```python (non-cell) equivalents of cond,
# while_loop and fori_loop.

from kiln import grad, jit
import kiln.numpy as jnp

def unrolled_loop_cell():
  @jit
  def f(x):
    for i in range(3):
      x = 2 * x
    return x

  out = f(3)
  print(out)
  return out

def shape_loop_cell():
  @jit
  def g(x):
    y = 0.
    for i in range(x.shape[0]):
      y = y + x[i]
    return y

  out = g(jnp.array([1., 2., 3.]))
  print(out)
  return out

def traced_if_cell():
  @jit
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  # This will fail!
  return f(2)

def traced_and_cell():
  @jit
  def g(x):
    return (x > 0) and (x < 3)

  # This will fail!
  return g(2)

def static_if_cell():
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  f = jit(f, static_argnames='x')

  out = f(2.)
  print(out)
  return f, out

def static_loop_cell():
  def f(x, n):
    y = 0.
    for i in range(n):
      y = y + x[i]
    return y

  f = jit(f, static_argnames='n')

  return f(jnp.array([2., 3., 4.]), 2)

def example_fun(length, val):
  return jnp.ones((length,)) * val

def example_fun_cell():
  # un-jit'd works fine
  out = example_fun(5, 4)
  print(out)
  return out

def bad_example_jit_cell():
  bad_example_jit = jit(example_fun)
  # this will fail:
  return bad_example_jit(10, 4)

def good_example_jit_cell():
  # static_argnames tells JAX to recompile on changes at these argument positions:
  good_example_jit = jit(example_fun, static_argnames='length')
  # first compile
  a = good_example_jit(10, 4)
  print(a)
  # recompiles
  b = good_example_jit(5, 4)
  print(b)
  return a, b

def print_in_jit_cell():
  @jit
  def f(x):
    print(x)
    y = 2 * x
    print(y)
    return y
  return f(2)

# ------------------------------------------------ Structured control flow primitives -------------------------------

from kiln import lax

def cond_cell():
  operand = jnp.array([0.])
  a = lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
  # --> array([1.], dtype=float32)
  b = lax.cond(False, lambda x: x+1, lambda x: x-1, operand)
  # --> array([-1.], dtype=float32)
  return a, b

def while_loop_cell():
  init_val = 0
  cond_fun = lambda x: x < 10
  body_fun = lambda x: x+1
  return lax.while_loop(cond_fun, body_fun, init_val)
  # --> array(10, dtype=int32)

def fori_loop_cell():
  init_val = 0
  start = 0
  stop = 10
  body_fun = lambda i,x: x+i
  return lax.fori_loop(start, stop, body_fun, init_val)
  # --> array(45, dtype=int32)

# ------------------------------------------------ Logical operators ------------------------------------------------

def python_check_positive_even(x):
  is_even = x % 2 == 0
  # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
  return is_even and (x > 0)

@jit
def jax_check_positive_even(x):
  is_even = x % 2 == 0
  # `logical_and` does not short circuit, so `x > 0` is always evaluated.
  return jnp.logical_and(is_even, x > 0)

def positive_even_scalar_cell():
  a = python_check_positive_even(24)
  print(a)
  b = jax_check_positive_even(24)
  print(b)
  return a, b

def positive_even_array_cell():
  x = jnp.array([-1, 2, 5])
  out = jax_check_positive_even(x)
  print(out)
  return x, out

def python_positive_even_array_cell(x):
  print(python_check_positive_even(x))  # raises on the page

# ------------------------------------------------ Python control flow + autodiff ----------------------------------

def grad_cell():
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  a = grad(f)(2.)
  print(a)  # ok!
  b = grad(f)(4.)
  print(b)  # ok!
  return a, b
