# ruff: noqa: E111, E114, E302, E305, E701, I001  (the page's doctest statements as they are)
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
# The Python code blocks of JAX's docs/new_docs/201/aot.md ("Ahead-of-time lowering and compilation", jax-ml/jax
# cec06d116c), in order, ported to kiln by changing imports only. The page's blocks are doctests: their statements
# are kept as they are, less the `>>>`/`...` prompts. The imports stay at the top level (tests/examples/ported.py
# puts JAX's back); `jnp` and `np`, which the page uses without importing them (JAX's doctests run with both in
# their namespace), are imported at the top too. The page's definitions that later blocks use (`f`, `i32_scalar`,
# `g`, `make_z`) stay at the top level. Every block that runs something is a function, `..._block`, whose body is
# the block's statements and which returns what the doctest shows (the value of its bare expressions; its prints
# are kept) and what later blocks read. A name that a block reads from an earlier one (`compiled`; `x`, `y`;
# `g_aot`, `zs`) is that block's parameter. The blocks whose doctest shows a traceback raise.
# Nothing is left out. tests/examples/test_docs_aot_201.py checks the blocks against the arithmetic and the page's
# claims (the jaxpr, what the StableHLO contains, the cost and memory analyses, the errors);
# test_docs_aot_201_against_jax.py runs them under kiln and JAX. (The older page docs/aot.md is ported in
# docs_callbacks_aot.py.)

import kiln as jax
import kiln.numpy as jnp
import numpy as np

# ------------------------------------------------ The stages ------------------------------------------------------

def f(x, y): return 2 * x + y

def stages_block():
  x, y = 3, 4

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
  return traced, lowered, compiled, flops, compiled(x, y)

def memory_analysis_block(compiled):
  stats = compiled.memory_analysis()
  return stats.argument_size_in_bytes, stats.output_size_in_bytes, stats.temp_size_in_bytes

def eval_shape_block():
  return jax.jit(f).eval_shape(jax.ShapeDtypeStruct((), 'int32'),
                               jax.ShapeDtypeStruct((), 'int32'))

i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))

def shape_dtype_block(x, y):
  return jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x, y)

def wrong_shape_block():
  x_1d = y_1d = jnp.arange(3)
  jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_1d, y_1d)  # doctest: +IGNORE_EXCEPTION_DETAIL

def wrong_dtype_block():
  x_f = y_f = jnp.float32(72.)
  jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()(x_f, y_f)  # doctest: +IGNORE_EXCEPTION_DETAIL

# ------------------------------------------------ Tracing with static arguments ----------------------------------

def static_block():
  lowered_with_x = jax.jit(f, static_argnums=0).trace(7, 8).lower()

  # Lowered HLO, specialized to the *value* of the first argument (7)
  print(lowered_with_x.as_text())

  return lowered_with_x, lowered_with_x.compile()(5)

def static_hollow_block():
  jax.jit(f, static_argnums=0).trace(i32_scalar, i32_scalar)  # doctest: +SKIP

def static_concrete_block():
  return jax.jit(f, static_argnums=0).trace(10, i32_scalar).lower().compile()(5)

# ------------------------------------------------ AOT-compiled functions cannot be transformed -------------------

def g(x):
  assert x.shape == (3, 2)
  return x @ jnp.ones(2)

def make_z(*shape):
  return jnp.arange(np.prod(shape)).reshape(shape)

def transform_block():
  z, zs = make_z(3, 2), make_z(4, 3, 2)

  g_jit = jax.jit(g)
  g_aot = jax.jit(g).trace(z).lower().compile()

  return jax.vmap(g_jit)(zs), g_aot, z, zs

def vmap_compiled_block(g_aot, zs):
  jax.vmap(g_aot)(zs)  # doctest: +SKIP
