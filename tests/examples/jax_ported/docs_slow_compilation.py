# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code blocks of JAX's docs page docs/debugging/slow_tracing_compilation.md ("Debugging slow JAX tracing and XLA
# compilation", jax-ml/jax cec06d116c; docs/new_docs/201/slow-compilation.md is the same text), in order, ported
# to kiln by changing imports only. The imports stay at the top level, at column 0, so that
# tests/examples/ported.py can put JAX's back. Each block is a function that returns what it defines or computes.
# Changes beyond the imports, the minimum to run the blocks:
# - the flags block takes the dump directory (the page's "/tmp/jax_ir") as a parameter;
# - the shell blocks (environment variables, `pprof`) are not Python: `env_cell` runs a script with the page's
#   variables set, as `JAX_LOG_COMPILES=1 ... python my_script.py` does;
# - the page's `def top_function(...):` (an elided signature) takes the arguments its body uses, `(x, y)`; each
#   BAD/GOOD block defines its functions inside a function that returns them, so that both versions of
#   `top_function` (and the two `add_multiply`) can live in one module; the blocks that show a statement on the
#   page's `params` (`params = jax.tree.map(quantize, params)`) take `params`;
# - the unrolled loop's 5000 iterations are a parameter (`iterations`, the page's 5000 the default): the tests run
#   fewer, to keep the trace short.
# tests/examples/test_docs_slow_compilation.py checks the blocks against the page's claims and NumPy;
# test_docs_slow_compilation_against_jax.py runs them under kiln and JAX 0.10.2.

# ------------------------------------------------ 1. Configuring Diagnostic Flags ---------------------------------

import kiln as jax

def flags_cell(dump_dir="/tmp/jax_ir"):
  jax.config.update("jax_log_compiles", True)
  jax.config.update("jax_explain_cache_misses", True)
  jax.config.update("jax_dump_ir_to", dump_dir)  # or "sponge"
  jax.config.update("jax_dump_ir_modes", "eqn_count_pprof")

import os
import subprocess
import sys

def env_cell(my_script_py, dump_dir="/tmp/jax_ir", cwd=None):
  """`JAX_LOG_COMPILES=1 JAX_EXPLAIN_CACHE_MISSES=1 JAX_DUMP_IR_TO=/tmp/jax_ir JAX_DUMP_IR_MODES=eqn_count_pprof
  python my_script.py`: the finished process."""
  env = {**os.environ, "JAX_LOG_COMPILES": "1", "JAX_EXPLAIN_CACHE_MISSES": "1", "JAX_DUMP_IR_TO": dump_dir,
         "JAX_DUMP_IR_MODES": "eqn_count_pprof"}
  return subprocess.run([sys.executable, my_script_py], env=env, cwd=cwd, capture_output=True, text=True,
                        timeout=300)

# ------------------------------------------------ 3. Common Gotchas That Trigger Cache Misses ---------------------

import kiln.numpy as jnp

# Gotcha: Dynamically Recreating Function Objects

def recreated_function_bad_cell():
  # ❌ BAD: Recreating function object on every call
  def top_function(x, y):
    # Creates a brand new function object with a new memory id on every call
    # to `top_function`.
    def custom_einsum(a, b):
      return jnp.einsum("...i,...i->...", a, b)

    return jax.jit(custom_einsum)(x, y)
  return top_function

def recreated_function_good_cell():
  # ✔️ GOOD: Reusing the same function handle
  def custom_einsum(a, b):
    return jnp.einsum("...i,...i->...", a, b)

  def top_function(x, y):
    return jax.jit(custom_einsum)(x, y)
  return top_function

# Gotcha: JIT Compiling a Lambda Instead of functools.partial

def lambda_bad_cell():
  # ❌ BAD: JIT compiling a freshly created lambda on every call
  def add_multiply(a, b, scale):
    return (a + b) * scale

  def top_function(x, y, scale_factor):
    # Creates a brand new lambda object with a new memory id on every pass!
    return jax.jit(lambda a, b: add_multiply(a, b, scale=scale_factor))(x, y)
  return top_function

def partial_good_cell():
  # ✔️ GOOD: Using functools.partial
  import functools

  def add_multiply(a, b, scale):
    return (a + b) * scale

  def top_function(x, y, scale_factor):
    # JAX correctly unwraps functools.partial and hits the tracing cache!
    return jax.jit(functools.partial(add_multiply, scale=scale_factor))(x, y)
  return top_function

# Gotcha: Eager Python Loops

# ❌ BAD: Eager op-by-op PyTree mapping
def quantize(x):
  scale = jnp.max(jnp.abs(x))
  return jnp.round(x * scale)

def eager_tree_map_bad_cell(params):
  # Eagerly dispatches jnp.max, jnp.abs, jnp.round for every weight tensor!
  params = jax.tree.map(quantize, params)
  return params

def eager_tree_map_good_cell(params):
  # ✔️ GOOD: Compiles a single fused XLA graph for the entire PyTree
  params = jax.jit(lambda p: jax.tree.map(quantize, p))(params)
  return params

# Gotcha: Python Control Flow (Loop Unrolling in JIT)

import kiln as jax
import kiln.numpy as jnp

def unrolled_loop_cell(iterations=5000):
  @jax.jit
  def unrolled_loop(x):
    # ❌ BAD: Unrolls 5,000 identical add equations into the Jaxpr!
    for _ in range(iterations):
      x = x + 1.0
    return x

  # Run with JAX_DUMP_IR_TO=/tmp/jax_ir JAX_DUMP_IR_MODES=eqn_count_pprof
  return unrolled_loop(jnp.zeros(10))
