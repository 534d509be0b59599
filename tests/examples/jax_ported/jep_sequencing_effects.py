# ruff: noqa: E111, E114, E302, E305, E704, I001  (the page's blocks: two-space indents, one-line defs)
# Copyright 2022 The JAX Authors.
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
# The code blocks of JAX's design document docs/jep/10657-sequencing-effects.md ("Sequencing side-effects in JAX",
# jax-ml/jax cec06d116c), in order, ported to kiln by changing imports only, one function per block returning what
# the block computes; the blocks call their functions and print as on the page (the tests capture stdout). The page
# is a design sketch: most of its blocks use a hypothetical API. Where a block is runnable once a name is filled in,
# the minimum is substituted:
# - `jax.print(s)`, the page's imagined print that "works inside of JIT-ted JAX functions", is JAX's
#   `jax.debug.print(s, ordered=ordered)`: `ordered` is the block function's parameter (True: the ordered effect the
#   page designs; False: the unordered print it starts from). `jax.print` itself exists in neither library (the
#   tests check that calling the page's own `jax.print` block raises AttributeError in both).
# - `@jax.jit(device=<device 0>)` / `<device 1>` (not Python): `jax.jit(device=device0)` / `device1`, the block
#   function's parameters (JAX 0.10.2 still has jit's `device=`, deprecated).
# - `log_value`, undefined on the page ("If `log` is mutating a global list"): an ordered `io_callback` that appends
#   its argument to the module's list `log`.
# Left out (not runnable under JAX 0.10.2, checked by running them): the token-threading sketches
# `token = jax.print(token, "hello")` (a print that takes and returns a token: no such API) and
# `compiler_token = new_compiler_token()` (undefined; the tests check instead that the lowered StableHLO threads a
# `!stablehlo.token` from one ordered callback to the next); the dispatch sketches `_execute(compiled_computation,
# *args)` (three versions: a compiled function has no `.execute`, and `get_runtime_token`, `update_runtime_token`,
# `runtime_token`, `update_output_token` are undefined: internal bookkeeping the tests check by its effect, ordered
# prints in call order across calls and devices); the two `return new_runtime_token()` blocks and
# `block_until_ready((t0, t1))` (`new_runtime_token` is undefined: `jax.effects_barrier()` is the API that blocks on
# the output tokens); `def effects_barrier(): output_token.block_until_ready()` (`output_token` is undefined: the
# tests call the library's `jax.effects_barrier()`).
# tests/examples/test_jep_sequencing_effects.py checks the blocks and the page's ordering claims (also inside loops,
# conds and vmap, across repeated and asynchronously dispatched calls, and per thread);
# test_jep_sequencing_effects_against_jax.py runs them under kiln and JAX 0.10.2.

import kiln as jax
from kiln.experimental import io_callback

# ----------------------------------------------------------- Background -----------------------------------------------

def background_block():
  def f():
    print("hello")
    return 2
  def g():
    print("world")
    return 3
  f()
  g()
  return f, g

def two_devices_block(device0, device1):
  @jax.jit(device=device0)
  def f():
    return 2

  @jax.jit(device=device1)
  def g():
    return 3
  return f(), g()

def two_devices_print_block(device0, device1, ordered):
  @jax.jit(device=device0)
  def f():
    jax.debug.print("hello", ordered=ordered)
    return 2

  @jax.jit(device=device1)
  def g():
    jax.debug.print("world", ordered=ordered)
    return 3
  return f(), g()

def page_print_block():
  """The page's block as written, with its hypothetical `jax.print` (called by the tests: AttributeError)."""
  @jax.jit
  def f(x):
    jax.print("hello")
    jax.print("world")
    return x
  return f

def compiler_reorder_block(ordered):
  @jax.jit
  def f(x):
    jax.debug.print("hello", ordered=ordered)
    jax.debug.print("world", ordered=ordered)
    return x
  return f

# ----------------------------------------------------------- Motivation -----------------------------------------------

log = []

def log_value(v):  # (not on the page: the global-list logger it describes, as an ordered effect)
  io_callback(log.append, None, v, ordered=True)

def log_block():
  @jax.jit
  def f(x, y):
    log_value(x)
    log_value(y)
  f(1, 2)
  return f

# ------------------------------------------------------ Blocking on output tokens ------------------------------------

def output_token_block(ordered):
  @jax.jit
  def f():
    jax.debug.print("hello world", ordered=ordered)
    return
  f() # Executed asynchronously
  return f

def same_device_block(ordered):
  @jax.jit
  def f():
    jax.debug.print("hello", ordered=ordered)

  @jax.jit
  def g():
    jax.debug.print("world", ordered=ordered)

  f()
  g()
  return f, g

def two_devices_output_block(device0, device1, ordered):
  @jax.jit(device=device0)
  def f():
    jax.debug.print("hello", ordered=ordered)

  @jax.jit(device=device1)
  def g():
    jax.debug.print("world", ordered=ordered)

  f()
  g()
  return f, g
