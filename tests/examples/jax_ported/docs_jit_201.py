# ruff: noqa: E111, E114, E302, E305, E402, F841, I001  (the page's blocks as they are: two-space indents, imports between blocks, unused results)
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
# The Python code blocks of JAX's docs/new_docs/201/jit.md ("Just-in-time compilation", jax-ml/jax cec06d116c), in
# order, ported to kiln by changing imports only. The imports stay at the top level, where the page has them
# (tests/examples/ported.py puts JAX's back); so do the page's definitions that later blocks use (`selu`,
# `log2_if_rank_2`, `f`, `g`, `loop_body`, the caching section's loops, `sin_inplace`, `add`, `add_ones`). Every
# block whose top-level code runs something is a function, `..._block`, whose body is the block's lines and which
# returns what the block shows or computes (its last expression; its prints are kept). The page defines
# `CustomClass` five times, each in the block that uses it: those blocks define it in their function, and return
# it where a later block reads it. A name that a block reads from an earlier one (`x` of the SELU block, `c` of the
# stale-`self` block, `CustomClass` of the pytree block) is that block's parameter; so are the names the page's
# ```python sketches of buffer donation leave undefined (`update_fn`, `params`, `state`) and the `x`, `y` that the
# "donated means gone" sketch reads from the sketch before it.
# Left out: `%xmode minimal` (IPython). The `%timeit`/`%time` lines run their statement once instead. The page's
# sizes are parameters with the page's values as defaults: the SELU input's length (1000000), the caching loops'
# trip count (20: each iteration of the partial and lambda loops compiles), the matmul's side (1000).
# tests/examples/test_docs_jit_201.py checks the blocks against NumPy and the page's claims (what is traced and
# when it is traced again, the errors, the in-place and donated buffers); test_docs_jit_201_against_jax.py runs
# them under kiln and JAX. (The older page docs/jit-compilation.md is docs_jit_compilation.py.)

# ------------------------------------------------ What compilation buys ------------------------------------------

import kiln as jax
import kiln.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

def selu_block(n=1000000):
  x = jnp.arange(n)
  # (the page: %timeit selu(x).block_until_ready())
  return x, selu(x).block_until_ready()

def selu_jit_block(x):
  selu_jit = jax.jit(selu)

  # Warm up: the first call traces and compiles.
  selu_jit(x).block_until_ready()

  # (the page: %timeit selu_jit(x).block_until_ready())
  return selu_jit, selu_jit(x).block_until_ready()

# ------------------------------------------------ What the compiled function captures ----------------------------

def log2_if_rank_2(x):
  if x.ndim == 2:
    return jnp.log(x) / jnp.log(2.0)
  else:
    return x

def log2_if_rank_2_jaxpr_block():
  return jax.jit(log2_if_rank_2).trace(jnp.array([1, 2, 3])).jaxpr

# ------------------------------------------------ Why can't we just jit everything? ------------------------------

# Condition on the value of x.

def f(x):
  if x > 0:
    return x
  else:
    return 2 * x

def f_jit_block():
  return jax.jit(f)(10)  # Raises an error

# While loop conditioned on x and n.

def g(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i

def g_jit_block():
  return jax.jit(g)(10, 20)  # Raises an error

@jax.jit
def loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted(x, n):
  i = 0
  while i < n:
    i = loop_body(i)
  return x + i

def g_inner_jitted_block():
  return g_inner_jitted(10, 20)

# ------------------------------------------------ Marking arguments as static ------------------------------------

def f_jit_correct_block():
  f_jit_correct = jax.jit(f, static_argnums=0)
  print(f_jit_correct(10))
  return f_jit_correct

def g_jit_correct_block():
  g_jit_correct = jax.jit(g, static_argnames=['n'])
  print(g_jit_correct(10, 20))
  return g_jit_correct

@jax.jit(static_argnames=['n'])
def g_jit_decorated(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i

def g_jit_decorated_block():
  print(g_jit_decorated(10, 20))

# ------------------------------------------------ JIT and caching ------------------------------------------------

from functools import partial

def unjitted_loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted_partial(x, n):
  i = 0
  while i < n:
    # Don't do this! A fresh `partial` has a different hash each time,
    # so this recompiles on every iteration.
    i = jax.jit(partial(unjitted_loop_body))(i)
  return x + i

def g_inner_jitted_lambda(x, n):
  i = 0
  while i < n:
    # Don't do this either! Same problem: a fresh lambda every iteration.
    i = jax.jit(lambda x: unjitted_loop_body(x))(i)
  return x + i

def g_inner_jitted_normal(x, n):
  i = 0
  while i < n:
    # This is OK: `jax.jit` sees the same function object each time,
    # and finds the cached executable.
    i = jax.jit(unjitted_loop_body)(i)
  return x + i

def caching_block(n=20):
  # (the page times each call with %timeit)
  print("jit called in a loop with partials:")
  a = g_inner_jitted_partial(10, n).block_until_ready()

  print("jit called in a loop with lambdas:")
  b = g_inner_jitted_lambda(10, n).block_until_ready()

  print("jit called in a loop with caching:")
  c = g_inner_jitted_normal(10, n).block_until_ready()
  return a, b, c

def explain_cache_misses_block():
  jax.config.update("jax_explain_cache_misses", True)

  @jax.jit
  def double(x):
    return 2 * x

  _ = double(jnp.arange(3))    # cache miss: never seen this function before
  _ = double(jnp.arange(3))    # cache hit: silent
  _ = double(jnp.arange(3.0))  # cache miss: x's JAX type changed
  return double

def explain_cache_misses_off_block():
  jax.config.update("jax_explain_cache_misses", False)

# ------------------------------------------------ Using `jit` with methods ----------------------------------------

def method_error_block():
  class CustomClass:
    def __init__(self, x: jax.Array, mul: bool):
      self.x = x
      self.mul = mul

    @jax.jit  # <---- How to do this correctly?
    def calc(self, y):
      if self.mul:
        return self.x * y
      return y

  c = CustomClass(2, True)
  c.calc(3)

# Strategy 1: a jitted helper function

def helper_function_block():
  class CustomClass:
    def __init__(self, x: jax.Array, mul: bool):
      self.x = x
      self.mul = mul

    def calc(self, y):
      return _calc(self.mul, self.x, y)

  @jax.jit(static_argnums=0)
  def _calc(mul, x, y):
    if mul:
      return x * y
    return y

  c = CustomClass(2, True)
  print(c.calc(3))
  return c, _calc

# Strategy 2: marking `self` as static

def static_self_block():
  class CustomClass:
    def __init__(self, x: jax.Array, mul: bool):
      self.x = x
      self.mul = mul

    # WARNING: broken, as we'll see below. Don't copy & paste!
    @jax.jit(static_argnums=0)
    def calc(self, y):
      if self.mul:
        return self.x * y
      return y

  c = CustomClass(2, True)
  print(c.calc(3))
  return c

def stale_static_self_block(c):
  c.mul = False
  print(c.calc(3))  # Should print 3... but the cache doesn't know mul changed

def hashable_self_block():
  class CustomClass:
    def __init__(self, x: jax.Array, mul: bool):
      self.x = x
      self.mul = mul

    @jax.jit(static_argnums=0)
    def calc(self, y):
      if self.mul:
        return self.x * y
      return y

    def __hash__(self):
      return hash((self.x, self.mul))

    def __eq__(self, other):
      return (isinstance(other, CustomClass) and
              (self.x, self.mul) == (other.x, other.mul))
  return CustomClass

# Strategy 3: registering the class as a pytree

from kiln import tree_util

def pytree_self_block():
  class CustomClass:
    def __init__(self, x: jax.Array, mul: bool):
      self.x = x
      self.mul = mul

    @jax.jit
    def calc(self, y):
      if self.mul:
        return self.x * y
      return y

    def _tree_flatten(self):
      children = (self.x,)          # arrays / dynamic values
      aux_data = {'mul': self.mul}  # static values
      return (children, aux_data)

    @classmethod
    def _tree_unflatten(cls, aux_data, children):
      return cls(*children, **aux_data)

  tree_util.register_pytree_node(CustomClass,
                                 CustomClass._tree_flatten,
                                 CustomClass._tree_unflatten)
  return CustomClass

def pytree_self_calls_block(CustomClass):
  c = CustomClass(2, True)
  print(c.calc(3))

  c.mul = False                        # mutation is detected
  print(c.calc(3))

  c = CustomClass(jnp.array(2), True)  # non-hashable x is supported
  print(c.calc(3))
  return c

# ------------------------------------------------ In-place updates with refs -------------------------------------

@jax.jit
def sin_inplace(x_ref):
  x_ref[...] = jnp.sin(x_ref[...])

def sin_inplace_block():
  x_ref = jax.new_ref(jnp.arange(3.0))
  print(x_ref.unsafe_buffer_pointer(), x_ref)
  sin_inplace(x_ref)
  print(x_ref.unsafe_buffer_pointer(), x_ref)
  return x_ref

# ------------------------------------------------ Buffer donation (```python sketches) ---------------------------

def donate_update_block(update_fn, params, state):
  params, state = jax.jit(update_fn, donate_argnums=(0, 1))(params, state)
  return params, state

def add(x, y):
  return x + y

def donate_add_block():
  x = jax.device_put(np.ones((2, 3)))
  y = jax.device_put(np.ones((2, 3)))
  # Execute `add` with donation of the buffer for `y`. The result has
  # the same shape and type as `y`, so it will share its buffer.
  z = jax.jit(add, donate_argnums=(1,))(x, y)
  return x, y, z

def donated_means_gone_block(x, y):
  z = jax.jit(add, donate_argnums=(1,))(x, y)
  w = y + 1  # Reuses `y`, whose buffer was donated above
  # >> RuntimeError: Invalid argument: CopyToHostAsync() called on invalid buffer

def keyword_donation_block(update_fn, params, state):
  params, state = jax.jit(update_fn, donate_argnums=(0, 1))(params=params, state=state)
  return params, state

def add_ones(xs: list[jax.Array]):
  return [x + 1 for x in xs]

def pytree_donation_block():
  xs = [jax.device_put(np.ones((2, 3))), jax.device_put(np.ones((3, 4)))]
  # Donates the buffers of both arrays in `xs`.
  z = jax.jit(add_ones, donate_argnums=0)(xs)
  return xs, z

# ------------------------------------------------ Asynchronous dispatch ------------------------------------------

import numpy as np
from kiln import random

def async_dispatch_block(n=1000):
  x = random.uniform(random.key(0), (n, n))
  return x, jnp.dot(x, x) + 3.0

def time_dispatch_block(x):
  # (the page: %time jnp.dot(x, x))
  return jnp.dot(x, x)

def time_block_until_ready_block(x):
  # (the page: %time jnp.dot(x, x).block_until_ready())
  return jnp.dot(x, x).block_until_ready()
