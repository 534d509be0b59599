# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs page docs/automatic-vectorization.md ("Automatic vectorization", jax-ml/jax
# cec06d116c), one after the other, ported to kiln by changing imports only. The imports and the page's top-level
# definitions (x, w, convolve, pairwise, ...) stay at the top level, where the page has them, so that
# tests/examples/ported.py can put JAX's imports back; each cell that shows a value is a function returning it
# (`xs_ws_cell` returns the stacked batch the later cells take). Nothing is left out. tests/examples/
# test_docs_basics.py checks the cells against np.convolve and Python loops; test_docs_basics_against_jax.py runs
# them under kiln and JAX.

# ------------------------------------------------ Manual vectorization ---------------------------------------------

import kiln as jax
import kiln.numpy as jnp

x = jnp.arange(5)
w = jnp.array([2., 3., 4.])

def convolve(x, w):
  output = []
  for i in range(1, len(x)-1):
    output.append(jnp.dot(x[i-1:i+2], w))
  return jnp.array(output)

def convolve_cell():
  return convolve(x, w)

def xs_ws_cell():
  xs = jnp.stack([x, x])
  ws = jnp.stack([w, w])
  return xs, ws

def manually_batched_convolve(xs, ws):
  output = []
  for i in range(xs.shape[0]):
    output.append(convolve(xs[i], ws[i]))
  return jnp.stack(output)

def manually_batched_convolve_cell(xs, ws):
  return manually_batched_convolve(xs, ws)

def manually_vectorized_convolve(xs, ws):
  output = []
  for i in range(1, xs.shape[-1] -1):
    output.append(jnp.sum(xs[:, i-1:i+2] * ws, axis=1))
  return jnp.stack(output, axis=1)

def manually_vectorized_convolve_cell(xs, ws):
  return manually_vectorized_convolve(xs, ws)

# ------------------------------------------------ Automatic vectorization ------------------------------------------

auto_batch_convolve = jax.vmap(convolve)

def auto_batch_convolve_cell(xs, ws):
  return auto_batch_convolve(xs, ws)

auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)

def auto_batch_convolve_v2_cell(xs, ws):
  xst = jnp.transpose(xs)
  wst = jnp.transpose(ws)

  return xst, wst, auto_batch_convolve_v2(xst, wst)

batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])

def batch_convolve_v3_cell(xs):
  return batch_convolve_v3(xs, w)

# ------------------------------------------------ Combining transformations ----------------------------------------

jitted_batch_convolve = jax.jit(auto_batch_convolve)

def jitted_batch_convolve_cell(xs, ws):
  return jitted_batch_convolve(xs, ws)

def pairwise(f, xs):
  return jax.vmap(lambda x: jax.vmap(lambda y: f(x, y))(xs))(xs)

# ------------------------------------------------------------------------------------------------------------------

def run():
  """The page's cells in order; a dict of what they show."""
  out = {"convolve": convolve_cell()}
  xs, ws = out["xs_ws"] = xs_ws_cell()
  out.update(manually_batched=manually_batched_convolve_cell(xs, ws),
             manually_vectorized=manually_vectorized_convolve_cell(xs, ws), auto=auto_batch_convolve_cell(xs, ws),
             auto_v2=auto_batch_convolve_v2_cell(xs, ws), v3=batch_convolve_v3_cell(xs),
             jitted=jitted_batch_convolve_cell(xs, ws))
  return out
