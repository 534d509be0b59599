# ruff: noqa: E111, E114, E302, E305, E402, I001  (the page's blocks: two-space indents, imports between blocks)
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
# The Python code blocks of JAX's docs/new_docs/201/precision.md ("Matmul precision", jax-ml/jax), in order, ported
# to kiln by changing imports only. The page shows code blocks, not notebook cells: each block is a function here
# that runs it and returns what it computes (the grad block's print kept); its imports stay at the top level
# (tests/examples/ported.py puts JAX's back). Filled in where the page leaves names undefined: `x` (any float32
# matrix, and `f` of the scoped block, any function of it) are parameters; `jax` is imported before the first
# block that uses it. Blocks that raise on the CPU backend, where the page says they are platform-dependent (its
# TF32 line; `F16_F16_F32` "on CPU fails with `The precision 'F16_F16_F32' is not supported by dot_general on
# CPU`"), return the exception at the line that raises instead of stopping: the lines of such a block are kept as
# they are, each one's value (or exception) collected by `_line`. The process-wide
# `jax.config.update('jax_default_matmul_precision', ...)` block changes the flag for the whole process, as on the
# page: the tests reset it. Left out: the bash block (`JAX_DEFAULT_MATMUL_PRECISION=highest python train.py`,
# no Python; tests/frontend/test_config_flags.py checks kiln's KILN_DEFAULT_MATMUL_PRECISION and the warning for
# JAX's variable). tests/examples/test_docs_precision.py checks the blocks against NumPy and the page's claims;
# test_docs_precision_against_jax.py runs them under kiln and JAX.

# ------------------------------------------------ Dot algorithms: saying exactly what you want -------------------

import kiln.numpy as jnp
from kiln import lax

def _line(fn):
  """What one line of a block computes, or the exception it raises (on CPU, the GPU-only algorithms)."""
  try:
    return fn()
  except ValueError as e:
    return e

def dot_algorithms_block(x):
  return [
    _line(lambda: jnp.dot(x, x, precision="F32_F32_F32")),                        # true float32
    _line(lambda: jnp.dot(x, x, precision="BF16_BF16_F32")),                      # bf16 inputs, f32 accumulation
    _line(lambda: jnp.dot(x, x, precision=lax.DotAlgorithmPreset.TF32_TF32_F32)), # TF32 tensor cores
  ]

def preferred_element_type_block():
  x16 = jnp.ones((4, 4), jnp.float16)
  return [
    _line(lambda: jnp.dot(x16, x16, precision="F16_F16_F32")),                # f16 result
    _line(lambda: jnp.dot(x16, x16, precision="F16_F16_F32",
            preferred_element_type=jnp.float32)),                             # keep the f32 accumulator
  ]


import kiln as jax

def loss(x, w):
  return jnp.sum(jnp.dot(x, w, precision='BF16_BF16_F32'))

def grad_jaxpr_block():
  x, w = jnp.ones((4, 8)), jnp.ones((8, 2))
  print(jax.jit(jax.grad(loss, argnums=1)).trace(x, w).jaxpr)
  return x, w

# ------------------------------------------------ `Precision`: the classic three levels --------------------------

def highest_block(x):
  return jnp.dot(x, x, precision='highest')   # give me real float32, whatever it costs

# ------------------------------------------------ Setting a default globally -------------------------------------

def global_default_block(f, x):
  # scoped:
  with jax.default_matmul_precision('highest'):
    result = f(x)

  # process-wide:
  jax.config.update('jax_default_matmul_precision', 'BF16_BF16_F32_X3')
  return result
