# ruff: noqa: E111, E114, E302, E305, E402, F811, F841, I001  (the page's blocks: two-space indents, imports between blocks)
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
# The Python code blocks of JAX's docs/new_docs/201/debugging.md ("Debugging runtime values", jax-ml/jax), in order,
# ported to kiln by changing imports only. The imports stay at the top level, where the page has them
# (tests/examples/ported.py puts JAX's back). Every block is a function, `..._block`, whose body is the block's lines
# and which returns what the block computes (the notebook's output: `return` added to the last expression, and the
# `;` that hides it on the page dropped); its prints are kept. The page redefines `f` block after block: each `f` is
# local to its block; a block that uses the `f` of an earlier one (the lax.map block, the debug.callback blocks, the
# debug_nans blocks) takes it as a parameter. The page's `jax_debug_nans` and `jax_disable_jit` updates change the
# flags for the whole process, as on the page: the debug_nans blocks set it back in the page's own last block, and
# the tests set both back whatever happens. The ```python block of `jax_disable_jit` (not executed on the page: it
# "Enters PDB breakpoint!") is ported as it is; the tests drive Python's `breakpoint()` there with pdb commands on a
# given stdin; its `import jax` stays at the top level, before it. Left out: nothing (the page has no `%xmode`
# cell). The older page docs/debugging.md is in docs_callbacks_aot.py. tests/examples/test_docs_debugging_201.py
# checks the blocks against NumPy and the page's claims; test_docs_debugging_201_against_jax.py runs them under kiln
# and JAX.

# ------------------------------------------------ `jax.debug.print` for simple inspection ------------------------

import kiln as jax
import kiln.numpy as jnp

def print_block():
  @jax.jit
  def f(x):
    print("print(x) ->", x)
    y = jnp.sin(x)
    print("print(y) ->", y)
    return y

  result = f(2.)
  return result

def debug_print_block():
  @jax.jit
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {x}", x=x)
    y = jnp.sin(x)
    jax.debug.print("jax.debug.print(y) -> {y}", y=y)
    return y

  result = f(2.)
  return result

def vmap_block():
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {}", x)
    y = jnp.sin(x)
    jax.debug.print("jax.debug.print(y) -> {}", y)
    return y

  xs = jnp.arange(3.)

  result = jax.vmap(f)(xs)
  return result, f, xs

def lax_map_block(f, xs):
  result = jax.lax.map(f, xs)
  return result

def grad_block():
  def f(x):
    jax.debug.print("jax.debug.print(x) -> {}", x)
    return x ** 2

  result = jax.grad(f)(1.)
  return result

def ordered_block():
  @jax.jit
  def f(x, y):
    jax.debug.print("jax.debug.print(x) -> {}", x, ordered=True)
    jax.debug.print("jax.debug.print(y) -> {}", y, ordered=True)
    return x + y

  return f(1, 2)

# ------------------------------------------------ Sharp bits of `jax.debug.print` --------------------------------

def print_grad_block():
  @jax.custom_vjp
  def print_grad(x):
    return x

  def print_grad_fwd(x):
    return x, None

  def print_grad_bwd(_, x_grad):
    jax.debug.print("x_grad: {}", x_grad)
    return (x_grad,)

  print_grad.defvjp(print_grad_fwd, print_grad_bwd)

  def f(x):
    x = print_grad(x)
    return x * 2.

  return jax.grad(f)(1.), f

def effects_barrier_block():
  @jax.jit
  def f(x):
    jax.debug.print("x: {}", x)
    return x

  f(2.).block_until_ready()
  jax.effects_barrier()
  return f

# ------------------------------------------------ `jax.debug.callback` for more control during debugging ---------

import logging

def log_value(x):
  logging.warning(f'Logged value: {x}')

def callback_block():
  @jax.jit
  def f(x):
    jax.debug.callback(log_value, x)
    return x

  return f(1.0), f

def callback_vmap_block(f):
  x = jnp.arange(5.0)
  return jax.vmap(f)(x)

def callback_grad_block(f):
  return jax.grad(f)(1.0)

# ------------------------------------------------ `jax_debug_nans` -----------------------------------------------

import traceback

def debug_nans_block():
  jax.config.update("jax_debug_nans", True)

  def f(x):
    w = 3 * jnp.square(x)
    return jnp.log(-w)

  # The stack trace is very long, so only print a couple of lines.
  try:
    f(5.)
  except FloatingPointError as e:
    print(traceback.format_exc(limit=2))
  return f

def debug_nans_jit_block(f):
  jax.jit(f)(5.)

def debug_nans_off_block(f):
  with jax.debug_nans(False):
    print(jax.jit(f)(5.))

def debug_nans_reset_block():
  jax.config.update("jax_debug_nans", False)  # back off for the rest of this page

# ------------------------------------------------ `jax_disable_jit` ----------------------------------------------

import kiln as jax

def disable_jit_block():
  jax.config.update("jax_disable_jit", True)

  def f(x):
    y = jnp.log(x)
    if jnp.isnan(y):
      breakpoint()
    return y

  return jax.jit(f)(-2.)  # ==> Enters PDB breakpoint!
