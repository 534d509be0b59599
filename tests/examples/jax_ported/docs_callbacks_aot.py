# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, F841, I001  (the pages' cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of three JAX documentation pages (jax-ml/jax cec06d116c): docs/external-callbacks.md,
# docs/debugging.md and docs/aot.md, one section per page, in the pages' order, ported to kiln by changing imports
# only. The imports stay at the top level, where the pages have them, so that tests/examples/ported.py can put
# JAX's back. Each cell (or run of cells that share a definition) is wrapped in a function that returns what the
# cell shows or computes (its prints are kept); the sizes the pages use (jnp.arange(5.0), jnp.arange(3.)) are
# parameters with the pages' values as defaults. The cells that show an error (`raises-exception`, or a traceback
# in aot.md's doctests) are functions that run the failing line: the tests check the exception. The ```python
# blocks that are not notebook cells (pure_callback raising under vmap, checkify, jax_debug_nans) are ported too.
# The io_callback cells draw from a module-level NumPy generator, as the page does; `io_callback_cell` seeds it
# again so the cells can run twice in one process. Left out: `%xmode minimal`; debugging.md's two
# `skip-execution` cells, which stop in the interactive debugger (`jax.debug.breakpoint()` reached; the
# breakpoint that is not reached is ported); aot.md's `>>>` prompts (the doctests' statements are kept as they
# are, in functions). The debug-nans cell sets the flag back to False after it.
# tests/examples/test_docs_callbacks_aot.py checks the cells against NumPy/SciPy, the math and what the pages
# print; test_docs_callbacks_aot_against_jax.py runs them under both libraries.

# =========================================== docs/external-callbacks.md ===========================================
import kiln as jax

# Why callbacks?

def why_print_cell():
  @jax.jit
  def f(x):
    y = x + 1
    print("intermediate value: {}".format(y))
    return y * 2

  result = f(2)
  return result


def why_debug_print_cell():
  @jax.jit
  def f(x):
    y = x + 1
    jax.debug.print("intermediate value: {}", y)
    return y * 2

  result = f(2)
  return result


# Exploring pure_callback

import kiln as jax
import kiln.numpy as jnp
import numpy as np

def f_host(x):
  # call a numpy (not jax.numpy) operation:
  return np.sin(x).astype(x.dtype)

def f_pure(x):  # the page's `f`
  result_shape = jax.ShapeDtypeStruct.like(x)
  return jax.pure_callback(f_host, result_shape, x, vmap_method='sequential')

def pure_callback_cell(n=5):
  x = jnp.arange(float(n))
  return f_pure(x)

def pure_callback_jit_cell(n=5):
  x = jnp.arange(float(n))
  return jax.jit(f_pure)(x)

def pure_callback_scan_cell(n=5):
  def body_fun(_, x):
    return _, f_pure(x)
  return jax.lax.scan(body_fun, None, jnp.arange(float(n)))[1]

def pure_callback_vmap_cell(n=5):
  x = jnp.arange(float(n))
  return jax.vmap(f_pure)(x)

def pure_callback_grad_cell(n=5):
  # raises-exception
  x = jnp.arange(float(n))
  jax.grad(f_pure)(x)


def print_something():
  print('printing something')
  return np.int32(0)

def f1_cell():
  @jax.jit
  def f1():
    return jax.pure_callback(print_something, np.int32(0))
  return f1()

def f2_cell():
  @jax.jit
  def f2():
    jax.pure_callback(print_something, np.int32(0))
    return 1.0
  return f2()


# pure_callback and exceptions (a ```python block)

def raise_via_callback(x):
  def _raise(x):
    raise ValueError(f"value of x is {x}")
  return jax.pure_callback(_raise, x, x)

def raise_if_negative(x):
  return jax.lax.cond(x < 0, raise_via_callback, lambda x: x, x)

def raise_loop_cell(n=4):
  x_batch = jnp.arange(n)
  return [raise_if_negative(x) for x in x_batch]  # does not raise

def raise_vmap_cell(n=4):
  x_batch = jnp.arange(n)
  return jax.vmap(raise_if_negative)(x_batch)  # ValueError: value of x is 0


# Exploring io_callback

from kiln.experimental import io_callback
from functools import partial

global_rng = np.random.default_rng(0)

def host_side_random_like(x):
  """Generate a random array like x using the global_rng state"""
  # We have two side-effects here:
  # - printing the shape and dtype
  # - calling global_rng, thus updating its state
  print(f'generating {x.dtype}{list(x.shape)}')
  return global_rng.uniform(size=x.shape).astype(x.dtype)

@jax.jit
def numpy_random_like(x):
  return io_callback(host_side_random_like, x, x)

def io_callback_cell(n=5, seed=0):
  global global_rng
  global_rng = np.random.default_rng(seed)
  x = jnp.zeros(n)
  return numpy_random_like(x)

def io_callback_vmap_cell(n=5):
  x = jnp.zeros(n)
  return jax.vmap(numpy_random_like)(x)

@jax.jit
def numpy_random_like_ordered(x):
  return io_callback(host_side_random_like, x, x, ordered=True)

def io_callback_ordered_vmap_cell(n=5):
  # raises-exception
  x = jnp.zeros(n)
  jax.vmap(numpy_random_like_ordered)(x)

def io_callback_scan_cell(n=5):
  def body_fun(_, x):
    return _, numpy_random_like_ordered(x)
  return jax.lax.scan(body_fun, None, jnp.arange(float(n)))[1]

def io_callback_grad_cell(n=5):
  # raises-exception
  x = jnp.zeros(n)
  jax.grad(numpy_random_like)(x)

def io_callback_unused_grad_cell():
  @jax.jit
  def f(x):
    io_callback(lambda: print('hello'), None)
    return x

  return jax.grad(f)(1.0)


# Exploring debug.callback

from kiln import debug

def log_value(x):
  # This could be an actual logging call; we'll use
  # print() for demonstration
  print("log:", x)

@jax.jit
def f_logged(x):  # the page's `f`
  debug.callback(log_value, x)
  return x

def debug_callback_cell():
  return f_logged(1.0)

def debug_callback_vmap_cell(n=5):
  x = jnp.arange(float(n))
  return jax.vmap(f_logged)(x)

def debug_callback_grad_cell():
  return jax.grad(f_logged)(1.0)


# Example: pure_callback with custom_jvp

import kiln as jax
import kiln.numpy as jnp
import scipy.special

def jv(v, z):
  v, z = jnp.asarray(v), jnp.asarray(z)

  # Require the order v to be integer type: this simplifies
  # the JVP rule below.
  assert jnp.issubdtype(v.dtype, jnp.integer)

  # Promote the input to inexact (float/complex).
  # Note that jnp.result_type() accounts for the enable_x64 flag.
  z = z.astype(jnp.result_type(float, z.dtype))

  # Wrap scipy function to return the expected dtype.
  _scipy_jv = lambda v, z: scipy.special.jv(v, z).astype(z.dtype)

  # Define the expected shape & dtype of output.
  result_shape_dtype = jax.ShapeDtypeStruct(
      shape=jnp.broadcast_shapes(v.shape, z.shape),
      dtype=z.dtype)

  # Use vmap_method="broadcast_all" because scipy.special.jv handles broadcasted inputs.
  return jax.pure_callback(_scipy_jv, result_shape_dtype, v, z, vmap_method="broadcast_all")

jv_plain = jv  # the cells below rebind `jv` to its custom_jvp

def jv_cells(n=5):
  """print(j1(z)), under jit, under vmap; each printed and returned."""
  j1 = partial(jv_plain, 1)
  z = jnp.arange(float(n))
  print(j1(z))
  print(jax.jit(j1)(z))
  print(jax.vmap(j1)(z))
  return j1(z), jax.jit(j1)(z), jax.vmap(j1)(z)

def jv_grad_cell(n=5):
  # raises-exception
  j1 = partial(jv_plain, 1)
  z = jnp.arange(float(n))
  jax.grad(j1)(z)

jv = jax.custom_jvp(jv)

@jv.defjvp
def _jv_jvp(primals, tangents):
  v, z = primals
  _, z_dot = tangents  # Note: v_dot is always 0 because v is integer.
  jv_minus_1, jv_plus_1 = jv(v - 1, z), jv(v + 1, z)
  djv_dz = jnp.where(v == 0, -jv_plus_1, 0.5 * (jv_minus_1 - jv_plus_1))
  return jv(v, z), z_dot * djv_dz

def jv_custom_grad_cell(z=2.0):
  j1 = partial(jv, 1)
  print(jax.grad(j1)(z))
  return jax.grad(j1)(z)

def jv_hessian_cell(z=2.0):
  j1 = partial(jv, 1)
  return jax.hessian(j1)(z)


# ================================================ docs/debugging.md ================================================
import kiln as jax
import kiln.numpy as jnp

# jax.debug.print for simple inspection

def print_under_jit_cell(x=2.):
  @jax.jit
  def f(x):
    print("print(x) ->", x)
    y = jnp.sin(x)
    print("print(y) ->", y)
    return y

  result = f(x)
  return result

def debug_print_under_jit_cell(x=2.):
  @jax.jit
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {x}", x=x)
    y = jnp.sin(x)
    jax.debug.print("jax.debug.print(y) -> {y}", y=y)
    return y

  result = f(x)
  return result

def f_printing(x):  # the page's `f` of the vmap and lax.map cells
  jax.debug.print("jax.debug.print(x) -> {}", x)
  y = jnp.sin(x)
  jax.debug.print("jax.debug.print(y) -> {}", y)
  return y

def debug_print_vmap_cell(n=3):
  xs = jnp.arange(float(n))

  result = jax.vmap(f_printing)(xs)
  return result

def debug_print_lax_map_cell(n=3):
  xs = jnp.arange(float(n))
  result = jax.lax.map(f_printing, xs)
  return result

def debug_print_grad_cell(x=1.):
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {}", x)
    return x ** 2

  result = jax.grad(f)(x)
  return result

def debug_print_ordered_cell(x=1, y=2):
  @jax.jit
  def f(x, y):
    jax.debug.print("jax.debug.print(x) -> {}", x, ordered=True)
    jax.debug.print("jax.debug.print(y) -> {}", y, ordered=True)
    return x + y

  return f(x, y)


# jax.debug.breakpoint for pdb-like debugging (the cell that stops, `skip-execution`, is left out)

def breakpoint_if_nonfinite(x):
  is_finite = jnp.isfinite(x).all()
  def true_fn(x):
    pass
  def false_fn(x):
    jax.debug.breakpoint()
  jax.lax.cond(is_finite, true_fn, false_fn, x)

@jax.jit
def f_checked(x, y):  # the page's `f`
  z = x / y
  breakpoint_if_nonfinite(z)
  return z

def breakpoint_not_reached_cell(x=2., y=1.):
  return f_checked(x, y)  # ==> No breakpoint


# jax.debug.callback for more control during debugging

import logging

def log_value_warning(x):  # the page's `log_value`
  logging.warning(f'Logged value: {x}')

@jax.jit
def f_warned(x):  # the page's `f`
  jax.debug.callback(log_value_warning, x)
  return x

def logging_callback_cell():
  return f_warned(1.0)

def logging_callback_vmap_cell(n=5):
  x = jnp.arange(float(n))
  return jax.vmap(f_warned)(x)

def logging_callback_grad_cell():
  return jax.grad(f_warned)(1.0)


# Functional error checks with jax.experimental.checkify (```python blocks)

from kiln.experimental import checkify
import kiln as jax
import kiln.numpy as jnp

def f_index(x, i):  # the page's `f`
  checkify.check(i >= 0, "index needs to be non-negative!")
  y = x[i]
  z = jnp.sin(y)
  return z

def checkify_jit_cell(n=5):
  jittable_f = checkify.checkify(f_index)

  err, z = jax.jit(jittable_f)(jnp.ones((n,)), -1)
  print(err.get())
  return err, z

def checkify_errors_cells(n=5):
  """The three `err.throw()` lines: the error each raises (None when it does not), and the err objects."""
  errors = checkify.user_checks | checkify.index_checks | checkify.float_checks
  checked_f = checkify.checkify(f_index, errors=errors)
  raised = []
  for args in [(jnp.ones((n,)), 100), (jnp.ones((n,)), -1), (jnp.array([jnp.inf, 1]), 0)]:
    err, z = checked_f(*args)
    try:
      err.throw()
      raised.append(None)
    except Exception as e:
      raised.append(e)
  return raised


# Throwing Python errors with JAX's debug flags (a ```python block; the flag is set back to False after it)

import kiln as jax

def debug_nans_cell(x=0., y=0.):
  jax.config.update("jax_debug_nans", True)
  try:
    def f(x, y):
      return x / y

    jax.jit(f)(x, y)  # ==> raises FloatingPointError exception!
  finally:
    jax.config.update("jax_debug_nans", False)


# ================================================== docs/aot.md ==================================================
import kiln as jax
import kiln.numpy as jnp

def f(x, y): return 2 * x + y

def aot_stages_cell(x=3, y=4):
  """The page's first example: what it prints and what its last two lines show."""
  traced = jax.jit(f).trace(x, y)

  # Print the specialized, staged-out representation (as Jaxpr IR)
  print(traced.jaxpr)

  lowered = traced.lower()

  # Print lowered HLO
  print(lowered.as_text())

  compiled = lowered.compile()

  # Query for cost analysis, print FLOP estimate
  flops = compiled.cost_analysis()['flops']

  # Execute the compiled function!
  return flops, compiled(x, y)

i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))

def aot_shape_dtype_cell(x=3, y=4):
  return jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x, y)

def aot_wrong_shape_cell(n=3):
  # Traceback (most recent call last): TypeError
  x_1d = y_1d = jnp.arange(n)
  jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_1d, y_1d)

def aot_wrong_dtype_cell():
  # Traceback (most recent call last): TypeError
  x_f = y_f = jnp.float32(72.)
  jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_f, y_f)


# Tracing with static arguments

def aot_static_cell(x=7, y=8, z=5):
  lowered_with_x = jax.jit(f, static_argnums=0).trace(x, y).lower()

  # Lowered HLO, specialized to the *value* of the first argument (7)
  print(lowered_with_x.as_text())

  return lowered_with_x.compile()(z)

def aot_static_hollow_cell():
  # Traceback (most recent call last): TypeError
  jax.jit(f, static_argnums=0).trace(i32_scalar, i32_scalar)

def aot_static_concrete_cell(x=10, z=5):
  return jax.jit(f, static_argnums=0).trace(x, i32_scalar).lower().compile()(z)


# AOT-compiled functions cannot be transformed

def g(x):
  assert x.shape == (3, 2)
  return x @ jnp.ones(2)

def make_z(*shape):
  return jnp.arange(np.prod(shape)).reshape(shape)

def aot_transform_cells(batch=4):
  """jax.vmap(g_jit)(zs), and the g_aot that the next cell transforms."""
  z, zs = make_z(3, 2), make_z(batch, 3, 2)

  g_jit = jax.jit(g)
  g_aot = jax.jit(g).trace(z).lower().compile()

  return jax.vmap(g_jit)(zs), g_aot, z, zs

def aot_vmap_compiled_cell(g_aot, zs):
  # Traceback (most recent call last): TypeError
  jax.vmap(g_aot)(zs)

def aot_grad_compiled_cell(g_aot, z):
  # "A similar error is raised when g_aot is involved in autodiff (e.g. jax.grad)": a scalar function of it
  jax.grad(lambda z: g_aot(z).sum())(z.astype(float))

def aot_jit_compiled_cell(g_aot, z):
  # "transformation by jax.jit is disallowed as well"
  jax.jit(g_aot)(z)
