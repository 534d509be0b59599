# ruff: noqa: E111, E114, E302, E305, E402, I001  (the page's blocks as they are: two-space indents, an import between blocks)
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
# The Python code blocks of JAX's docs/debugging/print_breakpoint.md ("Compiled prints and breakpoints", jax-ml/jax
# cec06d116c), in order, ported to kiln by changing imports only. The imports stay at the top level, where the page
# has them (tests/examples/ported.py puts JAX's back); one is added: the page's `breakpoint_if_nonfinite` calls
# `lax.cond` but no block imports `lax` (`from kiln import lax`, JAX's `from jax import lax`, is added before it).
# The page's top-level definitions (`f(w, b, x)` of "Unnecessary materialization", `breakpoint_if_nonfinite`) are
# at the top level. Every other block is a function, `..._block`, whose body is the block's lines and which returns
# what the block computes (`return` added to its last expression, and the `f` a later check calls again); its prints
# are kept, and so are the page's `# Prints: ...` comments (what it shows). The page redefines `f` block after block:
# each `f` is local to its block. The two `jax.debug.breakpoint()` blocks stop in the interactive debugger (JAX's
# `jdb`, reading `sys.stdin`): they are ported as they are, and the tests drive the debugger with commands on a fake
# `sys.stdin` (it quits at the end of its input, so nothing waits for a terminal). The `jax.pmap` block needs two
# devices: tests/multidevice/test_docs_print_breakpoint.py runs it on 8 CPU devices. Left out: the two
# "semantically equivalent" sketches: `def debug.print(fmt: str, ...)` (not Python: a dotted name after `def` is a
# syntax error) and `def callback(fun: Callable, ...)` (its annotations name the undefined `PyTree` and `Callable`;
# it calls `fun` and returns None: the tests state that of `jax.debug.callback` instead). The debugger GIF is an
# image. tests/examples/test_docs_print_breakpoint.py checks the blocks against NumPy and the page's claims;
# test_docs_print_breakpoint_against_jax.py runs them under kiln and JAX.

# ------------------------------------------------ Debugging with `jax.debug.print` ------------------------------

import kiln as jax
import kiln.numpy as jnp

def emoji_print_block():
  @jax.jit
  def f(x):
    jax.debug.print("🤯 {x} 🤯", x=x)
    y = jnp.sin(x)
    jax.debug.print("🤯 {y} 🤯", y=y)
    return y

  return f(2.)
  # Prints:
  # 🤯 2.0 🤯
  # 🤯 0.9092974662780762 🤯

def vmap_and_lax_map_block():
  xs = jnp.arange(3.)

  def f(x):
    jax.debug.print("x: {}", x)
    y = jnp.sin(x)
    jax.debug.print("y: {}", y)
    return y
  jax.vmap(f)(xs)
  # Prints: x: 0.0
  #         x: 1.0
  #         x: 2.0
  #         y: 0.0
  #         y: 0.841471
  #         y: 0.9092974
  return jax.lax.map(f, xs), f, xs
  # Prints: x: 0.0
  #         y: 0.0
  #         x: 1.0
  #         y: 0.841471
  #         x: 2.0
  #         y: 0.9092974

# ------------------------------------------------ More examples of `jax.debug.print` ----------------------------

def pmap_block():
  xs = jnp.arange(2.)

  def f(x):
    jax.debug.print("x: {}", x)
    return x
  return jax.pmap(f)(xs)
  # Prints: x: 0.0
  #         x: 1.0
  # OR
  # Prints: x: 1.0
  #         x: 0.0

def grad_block():
  def f(x):
    jax.debug.print("x: {}", x)
    return x * 2.

  return jax.grad(f)(1.), f
  # Prints: x: 1.0

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
  # Prints: x_grad: 2.0

# ------------------------------------------------ Sharp bits ----------------------------------------------------

def ordering_block():
  @jax.jit
  def f(x, y):
    jax.debug.print("x: {}", x)
    jax.debug.print("y: {}", y)
    return x + y

  return f(2., 3.)
  # Prints: x: 2.0
  #         y: 3.0
  # OR
  # Prints: y: 3.0
  #         x: 2.0

def asynchronous_block():
  @jax.jit
  def f(x):
    jax.debug.print("x: {}", x)
    return x
  return f(2.).block_until_ready()
  # <do something else>
  # Prints: x: 2.

def effects_barrier_block():
  @jax.jit
  def f(x):
    jax.debug.print("x: {}", x)
    return x
  f(2.).block_until_ready()
  jax.effects_barrier()
  # Prints: x: 2.
  # <do something else>
  return f

def f(w, b, x):
  logits = w.dot(x) + b
  jax.debug.print("logits: {}", logits)
  return jax.nn.relu(logits)

# ------------------------------------------------ Interactive inspection with `jax.debug.breakpoint()` ----------

def breakpoint_block():
  @jax.jit
  def f(x):
    y, z = jnp.sin(x), jnp.cos(x)
    jax.debug.breakpoint()
    return y * z
  return f(2.) # ==> Pauses during execution!

from kiln import lax

def breakpoint_if_nonfinite(x):
  is_finite = jnp.isfinite(x).all()
  def true_fn(x):
    pass
  def false_fn(x):
    jax.debug.breakpoint()
  lax.cond(is_finite, true_fn, false_fn, x)

def nonfinite_block():
  @jax.jit
  def f(x, y):
    z = x / y
    breakpoint_if_nonfinite(z)
    return z
  return f(2., 0.) # ==> Pauses during execution!
