# ruff: noqa: E111, E114, E302, E305, E402, B007, F401, F821, I001  (the page's blocks as they are: two-space indents, imports between blocks, the unused `grad`, its sketches' undefined `np`)
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
# The Python code blocks of JAX's docs/new_docs/201/control-flow.md ("Control flow and logical operators with
# `jit`", jax-ml/jax 549f98493e), in order, ported to kiln by changing imports only. The imports stay at the top
# level, at column 0, where the page has them (tests/examples/ported.py puts JAX's back); so do the page's
# definitions that later blocks use (`example_fun`, `cumsum_step`, `python_check_positive_even`,
# `jax_check_positive_even`). Every block whose top-level code runs something (prints, calls, traces) is a function,
# `..._block`, whose body is the block's lines and which returns what the block shows or computes (its last
# expression, the page's notebook output, is returned; its prints are kept); where the block's output is printed
# only, the block also returns the function it defines (`f`, `g`, `good_example_jit`) so that the tests can call it
# on other inputs. The page redefines `f` and `g` from block to block: each block defines its own, as the page does.
# A name that a block reads from an earlier one (`x` of the array block) is that block's parameter. Blocks that raise
# on the page raise here. The four ```python "python equivalent" sketches (`cond`, `while_loop`, `fori_loop`, `scan`)
# are kept as they are, at the top level (they shadow no name the blocks use: those go through `lax.`); the page's
# `scan` sketch uses `np` without importing it, and the tests supply NumPy as `np`.
# Left out: `%xmode minimal` (IPython). tests/examples/test_docs_control_flow_201.py checks the blocks against NumPy,
# Python loops, central differences and the page's claims; test_docs_control_flow_201_against_jax.py runs them under
# kiln and JAX. (The older page docs/control-flow.md is docs_control_flow.py, checked in test_docs_basics.py and
# test_common_gotchas.py.)

from kiln import grad, jit
import kiln.numpy as jnp

def unrolled_loop_block():
  @jit
  def f(x):
    for i in range(3):
      x = 2 * x
    return x

  print(f(3))
  return f

def shape_loop_block():
  @jit
  def g(x):
    y = 0.
    for i in range(x.shape[0]):
      y = y + x[i]
    return y

  print(g(jnp.array([1., 2., 3.])))
  return g

def traced_if_block():
  @jit
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  # This will fail!
  f(2)

def traced_and_block():
  @jit
  def g(x):
    return (x > 0) and (x < 3)

  # This will fail!
  g(2)

def static_if_block():
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  f = jit(f, static_argnames='x')

  print(f(2.))
  return f

def static_loop_block():
  def f(x, n):
    y = 0.
    for i in range(n):
      y = y + x[i]
    return y

  f = jit(f, static_argnames='n')

  return f(jnp.array([2., 3., 4.]), 2), f

# ------------------------------------------------ functions with argument-value dependent shapes -------------------

def example_fun(length, val):
  return jnp.ones((length,)) * val

def example_fun_block():
  # un-jit'd works fine
  print(example_fun(5, 4))

def bad_example_jit_block():
  bad_example_jit = jit(example_fun)
  # this will fail:
  bad_example_jit(10, 4)

def good_example_jit_block():
  # static_argnames tells JAX to recompile on changes at these argument positions:
  good_example_jit = jit(example_fun, static_argnames='length')
  # first compile
  print(good_example_jit(10, 4))
  # recompiles
  print(good_example_jit(5, 4))
  return good_example_jit

def print_in_jit_block():
  @jit
  def f(x):
    print(x)
    y = 2 * x
    print(y)
    return y
  return f(2), f

# ------------------------------------------------ Structured control flow primitives -------------------------------

def cond(pred, true_fun, false_fun, operand):
  if pred:
    return true_fun(operand)
  else:
    return false_fun(operand)

from kiln import lax

def cond_block():
  operand = jnp.array([0.])
  print(lax.cond(True, lambda x: x+1, lambda x: x-1, operand))
  # --> array([1.], dtype=float32)
  print(lax.cond(False, lambda x: x+1, lambda x: x-1, operand))
  # --> array([-1.], dtype=float32)

def while_loop(cond_fun, body_fun, init_val):
  val = init_val
  while cond_fun(val):
    val = body_fun(val)
  return val

def while_loop_block():
  init_val = 0
  cond_fun = lambda x: x < 10
  body_fun = lambda x: x + 1
  return lax.while_loop(cond_fun, body_fun, init_val)
  # --> array(10, dtype=int32)

def fori_loop(start, stop, body_fun, init_val):
  val = init_val
  for i in range(start, stop):
    val = body_fun(i, val)
  return val

def fori_loop_block():
  init_val = 0
  start = 0
  stop = 10
  body_fun = lambda i, x: x + i
  return lax.fori_loop(start, stop, body_fun, init_val)
  # --> array(45, dtype=int32)

def scan(f, init, xs):
  carry = init
  ys = []
  for x in xs:
    carry, y = f(carry, x)
    ys.append(y)
  return carry, np.stack(ys)

def cumsum_step(carry, x):
  new_carry = carry + x
  return new_carry, new_carry   # (next state, this step's output)

def scan_block():
  final, cumulative = lax.scan(cumsum_step, 0.0, jnp.arange(1., 5.))
  print(final)
  print(cumulative)
  return final, cumulative

# ------------------------------------------------ Logical operators ------------------------------------------------

def python_check_positive_even(x):
  is_even = x % 2 == 0
  # `and` short-circuits, so when `is_even` is `False`, `x > 0` is not evaluated.
  return is_even and (x > 0)

@jit
def jax_check_positive_even(x):
  is_even = x % 2 == 0
  # `logical_and` does not short circuit, so `x > 0` is always evaluated.
  return jnp.logical_and(is_even, x > 0)

def positive_even_scalar_block():
  print(python_check_positive_even(24))
  print(jax_check_positive_even(24))

def positive_even_array_block():
  x = jnp.array([-1, 2, 5])
  print(jax_check_positive_even(x))
  return x

def python_positive_even_array_block(x):
  print(python_check_positive_even(x))
