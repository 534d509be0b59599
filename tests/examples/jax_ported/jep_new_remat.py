# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's cells: two-space indents, imports between cells, the second `import jax`)
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
# The code blocks of JAX's design document docs/jep/11830-new-remat-checkpoint.md ("`jax.remat` /
# `jax.checkpoint` changes: what you need to know", jax-ml/jax), in order, ported to kiln by changing imports
# only. The page defines functions and shows no outputs: each block's definitions are kept at the top level as
# the page has them, and a `*_cell` function runs what the surrounding prose says happens.
# Filled in where the page leaves names undefined (the minimum): `jnp` (the blocks use it without importing it);
# `some_function` (any function of the constant: jnp.sin here) and the constant's size, 10_000 instead of the
# page's 10_000_000 (the point is that it is recomputed, not its size; a smaller float32 sum is a tighter check of
# its gradient); `g` and `h` of the `is_training` blocks (sin and cos), and the `...` of the static_argnums block
# (the same branches as the block before it). The page's `concrete=True` block raises under JAX 0.10.2 (the option
# was removed): its cell returns the exception. Two sentences of the prose are made into cells: the removed
# `jax_new_checkpoint` option ("execute jax.config.update('jax_new_checkpoint', False)", "no longer available":
# the cell returns the exception), and `static_argnums` with `jax.ensure_compile_time_eval()` ("If jax.numpy
# operations need to be performed on static arguments ..."). Left out: the environment variable and absl flag of
# the old option (no code runs them), and the overhead benchmark the page links to (a timing).
# tests/examples/test_jep_new_remat.py checks the cells against closed forms, NumPy and float64 finite
# differences; test_jep_new_remat_against_jax.py runs them under kiln and JAX 0.10.2.

import kiln as jax
import kiln.numpy as jnp
from kiln.ad_checkpoint import print_saved_residuals

# --------------------- How can I disable the change, and go back to the old behavior for now? -------------------

def new_checkpoint_option_cell():
  """The page's way 2, `jax.config.update('jax_new_checkpoint', False)`: the option is gone (the exception)."""
  try:
    jax.config.update('jax_new_checkpoint', False)
  except Exception as e:
    return e

# ------------------------------ User-customizable rematerialization policies -----------------------------------

from functools import partial
import kiln as jax

def apply_layer(W, x):
  return jnp.sin(jnp.dot(W, x))

@partial(jax.checkpoint, policy=jax.checkpoint_policies.checkpoint_dots)
def predict(params, x):
  for W in params[:-1]:
    x = apply_layer(W, x)
  return jnp.dot(params[-1], x)

def predict_residuals_cell(params, x):
  """What reverse mode saves of `predict` ("only the results of matrix multiplies are allowed to be saved")."""
  print_saved_residuals(predict, params, x)

# --------- Ability to rematerialize constants, not just operations with data dependence on arguments ----------

def some_function(v):  # (the page leaves it undefined)
  return jnp.sin(v)

@jax.checkpoint
def f(x):
  a = some_function(jnp.arange(10_000))  # `a` does not depend on `x`  (the page: 10_000_000)
  return a * x

def constant_residuals_cell(x):
  """What reverse mode saves of `f`: the new implementation recomputes `a` rather than saving it."""
  print_saved_residuals(f, x)

# ----------------------------------- The `concrete=True` option is removed. -------------------------------------

def g(x):  # (the page leaves g and h undefined)
  return jnp.sin(x)

def h(x):
  return jnp.cos(x)

def concrete_cell():
  """The page's OLD jax.checkpoint API: refused now (the exception)."""
  try:
    @partial(jax.checkpoint, concrete=True)  # OLD jax.checkpoint API
    def foo(x, is_training):
      if is_training:
        return g(x)
      else:
        return h(x)
  except Exception as e:
    return e

@partial(jax.checkpoint, static_argnums=(1,))  # NEW jax.checkpoint API
def foo(x, is_training):
  if is_training:
    return g(x)  # (the page: `...`; the branches of the block before)
  else:
    return h(x)

# (prose) "we can use `static_argnums` with `jax.ensure_compile_time_eval()`": jax.numpy on a static argument,
# computed while tracing, so that Python control flow can read it.
@partial(jax.checkpoint, static_argnums=(1,))
def scaled(x, n):
  with jax.ensure_compile_time_eval():
    total = jnp.arange(n).sum()
    big = total > 3
  if big:
    return x * total
  return -x
