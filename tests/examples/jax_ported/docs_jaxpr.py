# ruff: noqa: E111, E114, E302, E305, B011, E402, F811, I001  (the page's cells: two-space indents, imports between cells and again, assert False)
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
# The code cells of JAX's docs page docs/jaxpr.md ("JAX internals: The jaxpr language", jax-ml/jax cec06d116c), in
# order, ported to kiln by changing imports only. The imports stay at the top level, at column 0, where the page has
# them, so that tests/examples/ported.py can put JAX's back. The page's functions (func1 ... func12 and the helpers
# they call) stay top-level, as on the page; each cell's `print(make_jaxpr(...)(...))` line is the body of a
# function `<func>_cell` (the page prints at the top level: here nothing runs or prints at import). Nothing is left
# out: the other code blocks of the page are grammars and signatures, not Python.
# tests/examples/test_docs_jaxpr.py checks the cells against NumPy and the page's claims about the jaxprs (the
# binders, constvars and invars, the primitives and the operands and parameters of cond, while, scan and jit);
# test_docs_jaxpr_against_jax.py compares kiln's printed jaxprs with JAX 0.10.2's.

# ------------------------------------------------ jax.core.ClosedJaxpr --------------------------------------------

from kiln import make_jaxpr
import kiln.numpy as jnp

def func1(first, second):
   temp = first + jnp.sin(second) * 3.
   return jnp.sum(temp)

def func1_cell():
  print(make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8)))

def func2(inner, first, second):
  temp = first + inner(second) * 3.
  return jnp.sum(temp)

def inner(second):
  if second.shape[0] > 4:
    return jnp.sin(second)
  else:
    assert False

def func3(first, second):
  return func2(inner, first, second)

def func3_cell():
  print(make_jaxpr(func3)(jnp.zeros(8), jnp.ones(8)))

# ------------------------------------------------ Handling pytrees ------------------------------------------------

def func4(arg):  # The `arg` is a pair.
  temp = arg[0] + jnp.sin(arg[1]) * 3.
  return jnp.sum(temp)

def func4_cell():
  print(make_jaxpr(func4)((jnp.zeros(8), jnp.ones(8))))

# ------------------------------------------------ cond primitive (conditionals) -----------------------------------

from kiln import lax

def one_of_three(index, arg):
  return lax.switch(index, [lambda x: x + 1.,
                            lambda x: x - 2.,
                            lambda x: x + 3.],
                    arg)

def one_of_three_cell():
  print(make_jaxpr(one_of_three)(1, 5.))

from kiln import lax

def func7(arg):
  return lax.cond(arg >= 0.,
                  lambda xtrue: xtrue + 3.,
                  lambda xfalse: xfalse - 3.,
                  arg)

def func7_cell():
  print(make_jaxpr(func7)(5.))

def func8(arg1, arg2):  # Where `arg2` is a pair.
  return lax.cond(arg1 >= 0.,
                  lambda xtrue: xtrue[0],
                  lambda xfalse: jnp.array([1]) + xfalse[1],
                  arg2)

def func8_cell():
  print(make_jaxpr(func8)(5., (jnp.zeros(1), 2.)))

# ------------------------------------------------ while primitive -------------------------------------------------

import numpy as np

def func10(arg, n):
  ones = jnp.ones(arg.shape)  # A constant.
  return lax.fori_loop(0, n,
                       lambda i, carry: carry + ones * 3. + arg,
                       arg + ones)

def func10_cell():
  print(make_jaxpr(func10)(np.ones(16), 5))

# ------------------------------------------------ scan primitive --------------------------------------------------

def func11(arr, extra):
  ones = jnp.ones(arr.shape)  #  A constant
  def body(carry, aelems):
    # carry: running dot-product of the two arrays
    # aelems: a pair with corresponding elements from the two arrays
    ae1, ae2 = aelems
    return (carry + ae1 * ae2 + extra, carry)
  return lax.scan(body, 0., (arr, ones))

def func11_cell():
  print(make_jaxpr(func11)(np.ones(16), 5.))

# ------------------------------------------------ (p)jit primitive ------------------------------------------------

from kiln import jit

def func12(arg):
  @jit
  def inner(x):
    return x + arg * jnp.ones(1)  # Include a constant in the inner function.
  return arg + inner(arg - 2.)

def func12_cell():
  print(make_jaxpr(func12)(1.))
