# ruff: noqa: E111, E114, E302, E305, E402, I001  (the page's cells: two-space indents, imports at the top)
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
# The code cells of JAX's docs/new_docs/301/vjp-objects.md ("First-class VJPs", jax-ml/jax cec06d116c), one after
# the other, ported to kiln by changing imports only. The page's functions (`fwd_and_bwd`, `layer`, `two_layers`,
# `g`) are defined at the top level as on the page; the cells that compute
# are functions that take the values earlier cells made (`W1`, `x0`, `f_vjp`, ...) and return what they print or
# make (their prints are kept). The cell that catches the ValueError returns it. `run` calls everything in the
# page's order. Nothing is left out or substituted.
# JAX 0.10.2 (the version installed here) predates `saveable_args`, `NotSaveable` and `structured_residuals`: the
# cells from "Marking arguments not saveable" on raise a TypeError there.
# tests/examples/test_docs_vjp_objects.py checks the cells against NumPy (the layers' gradients), the page's comments
# and prose; test_docs_vjp_objects_against_jax.py runs the cells JAX 0.10.2 has under both libraries.

import kiln as jax
import kiln.numpy as jnp
from kiln import grad, jit

# ------------------------------------- Splitting the forward and backward passes -------------------------------------

def fwd_and_bwd(f):
  def fwd(*args):
    return jax.vjp(f, *args)
  def bwd(f_vjp, y_bar):
    return f_vjp(y_bar)
  return jit(fwd), jit(bwd)


def layer(W, x):
  return jnp.tanh(x @ W)

def pipeline_cell():
  fwd, bwd = fwd_and_bwd(layer)

  W1, W2 = jnp.ones((3, 3)), 2. * jnp.ones((3, 3))
  x0 = jnp.ones((2, 3))

  # forward through two layers, then backward, on our own schedule:
  x1, res1 = fwd(W1, x0)
  x2, res2 = fwd(W2, x1)
  dW2, dx1 = bwd(res2, jnp.ones_like(x2))
  dW1, dx0 = bwd(res1, dx1)
  return dict(fwd=fwd, bwd=bwd, W1=W1, W2=W2, x0=x0, x1=x1, res1=res1, x2=x2, res2=res2, dW2=dW2, dx1=dx1,
              dW1=dW1, dx0=dx0)


def two_layers(W1, W2, x):
  return jnp.sum(layer(W2, layer(W1, x)))

def grad_ref_cell(W1, W2, x0, dW1, dW2):
  dW1_ref, dW2_ref = grad(two_layers, argnums=(0, 1))(W1, W2, x0)
  close = jnp.allclose(dW1, dW1_ref), jnp.allclose(dW2, dW2_ref)
  print(*close)
  return dW1_ref, dW2_ref, close


def prepackaged_cell(W1, x0):
  fwd, bwd = jax.fwd_and_bwd(layer, argnums=(0, 1))

  y, residuals = fwd(W1, x0)
  dW1, dx0 = bwd(residuals, jnp.ones_like(y))
  print(dW1.shape, dx0.shape)
  return fwd, bwd, y, residuals, dW1, dx0

# ------------------------------------------- What the VJP object saves -------------------------------------------

def args_res_cell(W1, x0):
  y, f_vjp = jax.vjp(layer, W1, x0)
  print(f_vjp.args_res)
  return y, f_vjp

# ---------------------------------- Marking arguments not saveable: `saveable_args` -----------------------------------

def saveable_cell(W1, x0):
  y, f_vjp = jax.vjp(layer, W1, x0, saveable_args=(False, True))
  print(f_vjp.args_res)
  return y, f_vjp


def leaves_cell(f_vjp):
  n = len(jax.tree.leaves(f_vjp))
  print(n)  # 3, not 4: W1 isn't part of the saved state
  return n

# ----------------------------------------- Restoring before the backward pass -----------------------------------------

def forgot_cell(f_vjp, y):
  try:
    f_vjp(jnp.ones_like(y))
  except ValueError as e:
    print(e)
    return e  # what the cell caught


def restore_cell(f_vjp, y, W1):
  f_vjp.args_res[0] = W1
  # or: f_vjp = f_vjp.replace(args_res=[W1, f_vjp.args_res[1]])
  dW1, dx0 = f_vjp(jnp.ones_like(y))
  print(dW1.shape, dx0.shape)
  return dW1, dx0


def light_pipeline_cell(W1, W2, x0, dW1_ref, dW2_ref):
  def fwd_light(W, x):
    return jax.vjp(layer, W, x, saveable_args=(False, True))

  def bwd_light(f_vjp, W, y_bar):
    f_vjp.args_res[0] = W
    return f_vjp(y_bar)

  fwd_light, bwd_light = jit(fwd_light), jit(bwd_light)

  x1, res1 = fwd_light(W1, x0)
  x2, res2 = fwd_light(W2, x1)
  dW2, dx1 = bwd_light(res2, W2, jnp.ones_like(x2))
  dW1, dx0 = bwd_light(res1, W1, dx1)
  close = jnp.allclose(dW1, dW1_ref), jnp.allclose(dW2, dW2_ref)
  print(*close)
  return dict(fwd_light=fwd_light, bwd_light=bwd_light, x1=x1, res1=res1, x2=x2, res2=res2, dW2=dW2, dx1=dx1,
              dW1=dW1, dx0=dx0, close=close)

# --------------------------------------------------- The fine print ---------------------------------------------------

def g(d):
  return d['bye'] @ d['hi']

def fine_print_cell():
  d = {'hi': jnp.ones((4, 5)), 'bye': jnp.ones((3, 4))}
  _, g_vjp = jax.vjp(g, d, saveable_args=((True, False),))
  saved = list(g_vjp.args_res)  # (what args_res held before the restore, for the tests)
  g_vjp.args_res = [d]  # restore with the original dict
  d_grad, = g_vjp(jnp.ones((3, 5)))
  shapes = jax.tree.map(jnp.shape, d_grad)
  print(shapes)
  return d, saved, d_grad, shapes

# ----------------------------------------------------------------------------------------------------------------------

def run_split():
  """The cells of "Splitting the forward and backward passes" and "What the VJP object saves" (all in JAX 0.10.2)."""
  out = pipeline_cell()
  out["dW1_ref"], out["dW2_ref"], out["close"] = grad_ref_cell(out["W1"], out["W2"], out["x0"], out["dW1"],
                                                               out["dW2"])
  out["prepackaged"] = prepackaged_cell(out["W1"], out["x0"])
  out["args_res"] = args_res_cell(out["W1"], out["x0"])
  return out


def run_saveable(split):
  """The cells from "Marking arguments not saveable" on, given `run_split`'s values."""
  W1, W2, x0 = split["W1"], split["W2"], split["x0"]
  out = {}
  y, f_vjp = out["saveable"] = saveable_cell(W1, x0)
  out["saved_args_res"] = list(f_vjp.args_res)
  out["leaves"] = leaves_cell(f_vjp)
  out["forgot"] = forgot_cell(f_vjp, y)
  out["restore"] = restore_cell(f_vjp, y, W1)
  out["light"] = light_pipeline_cell(W1, W2, x0, split["dW1_ref"], split["dW2_ref"])
  out["fine_print"] = fine_print_cell()
  return out


def run():
  """The page's cells in order: a dict of what they return."""
  out = run_split()
  out.update(run_saveable(out))
  return out
