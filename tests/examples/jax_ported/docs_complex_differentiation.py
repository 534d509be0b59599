# ruff: noqa: E111, E114, E302, E305, E402, F821, I001  (the page's cells as they are: two-space indents, imports between cells, the first cell's undefined u and v)
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
# The code cells of JAX's docs/complex-differentiation.md ("Complex numbers and differentiation", jax-ml/jax
# cec06d116c), in order, ported to kiln by changing imports only. The imports stay at the top level, where the page
# has them (tests/examples/ported.py puts JAX's back); so do the page's definitions: the first cell's `f` and `g`
# (kept as they are: the page leaves `u` and `v` undefined there, so they are never called) and the two `check`
# functions. The page defines `check` twice (the JVP check, then the VJP check) and runs each in the cell after it:
# the first is also kept as `check_jvp`, and `check_jvp_block` binds it as a default argument, as the page's order
# does. Every cell whose top-level code runs something is a function, `..._block`, whose body is the cell's lines
# and which returns what the cell shows (the notebook's output: `return` added to the last expression); its prints
# are kept. The page redefines `f` (and `z`) cell after cell: each of those `f` is local to its block. Left out:
# nothing (the page has no IPython magics). tests/examples/test_docs_complex_differentiation.py checks the blocks
# against the page's definitions of the JVP, the VJP and the holomorphic gradient evaluated with float64 central
# differences; test_docs_complex_differentiation_against_jax.py runs them under kiln and JAX.

import kiln.numpy as jnp

def f(z):
  x, y = jnp.real(z), jnp.imag(z)
  return u(x, y) + v(x, y) * 1j

def g(x, y):
  return (u(x, y), v(x, y))

# ------------------------------------------------ JVPs --------------------------------------------------------

from kiln import random, grad, jvp

def check(seed):
  key = random.key(seed)

  # random coeffs for u and v
  key, subkey = random.split(key)
  a, b, c, d = random.uniform(subkey, (4,))

  def fun(z):
    x, y = jnp.real(z), jnp.imag(z)
    return u(x, y) + v(x, y) * 1j

  def u(x, y):
    return a * x + b * y

  def v(x, y):
    return c * x + d * y

  # primal point
  key, subkey = random.split(key)
  x, y = random.uniform(subkey, (2,))
  z = x + y * 1j

  # tangent vector
  key, subkey = random.split(key)
  c, d = random.uniform(subkey, (2,))
  z_dot = c + d * 1j

  # check jvp
  _, ans = jvp(fun, (z,), (z_dot,))
  expected = (grad(u, 0)(x, y) * c +
              grad(u, 1)(x, y) * d +
              grad(v, 0)(x, y) * c * 1j+
              grad(v, 1)(x, y) * d * 1j)
  print(jnp.allclose(ans, expected))

check_jvp = check  # (the page redefines `check` for the VJPs below)

def check_jvp_block(check=check_jvp):
  check(0)
  check(1)
  check(2)

# ------------------------------------------------ VJPs --------------------------------------------------------

from kiln import vjp

def check(seed):
  key = random.key(seed)

  # random coeffs for u and v
  key, subkey = random.split(key)
  a, b, c, d = random.uniform(subkey, (4,))

  def fun(z):
    x, y = jnp.real(z), jnp.imag(z)
    return u(x, y) + v(x, y) * 1j

  def u(x, y):
    return a * x + b * y

  def v(x, y):
    return c * x + d * y

  # primal point
  key, subkey = random.split(key)
  x, y = random.uniform(subkey, (2,))
  z = x + y * 1j

  # cotangent vector
  key, subkey = random.split(key)
  c, d = random.uniform(subkey, (2,))
  z_bar = jnp.array(c + d * 1j)  # for dtype control

  # check vjp
  _, fun_vjp = vjp(fun, z)
  ans, = fun_vjp(z_bar)
  expected = (grad(u, 0)(x, y) * c +
              grad(v, 0)(x, y) * (-d) +
              grad(u, 1)(x, y) * c * (-1j) +
              grad(v, 1)(x, y) * (-d) * (-1j))
  assert jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5)

def check_vjp_block():
  check(0)
  check(1)
  check(2)

# ------------------------------------------------ grad, holomorphic=True -----------------------------------------

def grad_real_output_block():
  def f(z):
    x, y = jnp.real(z), jnp.imag(z)
    return x**2 + y**2

  z = 3. + 4j
  return grad(f)(z)

def grad_holomorphic_block():
  def f(z):
    return jnp.sin(z)

  z = 3. + 4j
  return grad(f, holomorphic=True)(z)

def grad_not_holomorphic_block():
  def f(z):
    return jnp.conjugate(z)

  z = 3. + 4j
  return grad(f, holomorphic=True)(z)  # f is not actually holomorphic!

def cholesky_block():
  A = jnp.array([[5.,    2.+3j,    5j],
                [2.-3j,   7.,  1.+7j],
                [-5j,  1.-7j,    12.]])

  def f(X):
      L = jnp.linalg.cholesky(X)
      return jnp.sum((L - jnp.sin(L))**2)

  return grad(f, holomorphic=True)(A)
