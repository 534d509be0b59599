# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the notebook's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs/notebooks/autodiff_remat.md and of docs/gradient-checkpointing.md (jax-ml/jax
# cec06d116c), ported to kiln by changing imports only. The two pages are the same tutorial with the same cells;
# gradient-checkpointing.md adds a section on the offloading policies and runs the scan-over-layers cells (with
# its small `params`), which autodiff_remat.md only shows as text: this module has the cells of both, in order
# (of the two spellings of one cell, autodiff_remat.md's `f_grad_bad1`/`_z`). The imports stay at the top
# level, where the pages have them, so that tests/examples/ported.py can put JAX's back. Each cell (or group of
# cells) is a function that runs what the cell runs, its prints kept (print_saved_residuals prints the
# listings), and returns what it defines or computes; the tests call them in the pages' order. The pages
# redefine `f`, `g`, `layer`, `net`, `params`, `W1`... from section to section: the first sections' values are
# bound as default arguments of the cells that use them (as the pages' order does), the later sections define
# theirs inside their functions, and the one redefinition the page relies on through a global (`predict`, which
# `loss` calls) is a cell with `global predict`. Changed beyond the imports: `print_fwd_bwd` prints the forward
# and backward jaxprs one after the other instead of in a `rich` table (rich is no dependency of kiln or JAX;
# the table holds only str() of the two and its headings) and returns (fwd, bwd, the leaves of the vjp
# function); the pages leave `g` and `h` of "Fundamentals" undefined (their `g` is the two-argument layer
# above), so they are parameters of that section's function; `scan_over_layers_cells` redefines `layer` under
# `jax.checkpoint` after `net`, which calls it, as the page's last cell does (checkpoint_layer=False stops
# before that cell); the two offloading cells (excerpts of JAX's test methods, `self` and all) return their `f`
# (and the sharded input), and their imports, which the page leaves out (functools, math, numpy, lax,
# NamedSharding, P), are at the top; for its `jtu` (JAX's private jax._src.test_util) the port has a stand-in
# whose create_mesh is that module's through the public API (make_mesh with Auto axes), of `mesh_shape`
# devices (the page's 2 unless a test asks for 1), on a `shape` input (the page's (256, 128) unless a test asks
# for less). Left out: nothing else; the pages time nothing and plot nothing.
# tests/examples/test_autodiff_remat.py checks it against NumPy and finite differences;
# test_autodiff_remat_against_jax.py runs it under both libraries.

import kiln as jax
import kiln.numpy as jnp

import functools
import math
import numpy as np
from kiln import lax
from kiln.sharding import NamedSharding, PartitionSpec as P

# ------------------------------------------------ Summary ------------------------------------------------

def g(W, x):
  y = jnp.dot(W, x)
  return jnp.sin(y)

def f(W1, W2, W3, x):
  x = g(W1, x)
  x = g(W2, x)
  x = g(W3, x)
  return x

W1 = jnp.ones((5, 4))
W2 = jnp.ones((6, 5))
W3 = jnp.ones((7, 6))
x = jnp.ones(4)

# Inspect the 'residual' values to be saved on the forward pass
# if we were to evaluate `jax.grad(f)(W1, W2, W3, x)`
from kiln.ad_checkpoint import print_saved_residuals

def residuals_cell(W1=W1, W2=W2, W3=W3, x=x):
  jax.ad_checkpoint.print_saved_residuals(f, W1, W2, W3, x)


def f2(W1, W2, W3, x):
  x = jax.checkpoint(g)(W1, x)
  x = jax.checkpoint(g)(W2, x)
  x = jax.checkpoint(g)(W3, x)
  return x

def f2_residuals_cell(W1=W1, W2=W2, W3=W3, x=x):
  jax.ad_checkpoint.print_saved_residuals(f2, W1, W2, W3, x)


f3 = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

def f3_residuals_cell(W1=W1, W2=W2, W3=W3, x=x):
  jax.ad_checkpoint.print_saved_residuals(f3, W1, W2, W3, x)


from kiln.ad_checkpoint import checkpoint_name

def f4(W1, W2, W3, x):
  x = checkpoint_name(g(W1, x), name='a')
  x = checkpoint_name(g(W2, x), name='b')
  x = checkpoint_name(g(W3, x), name='c')
  return x

f4 = jax.checkpoint(f4, policy=jax.checkpoint_policies.save_only_these_names('a'))

def f4_residuals_cell(W1=W1, W2=W2, W3=W3, x=x):
  jax.ad_checkpoint.print_saved_residuals(f4, W1, W2, W3, x)


from kiln.tree_util import tree_flatten, tree_unflatten

def print_fwd_bwd(f, *args, **kwargs):
  args, in_tree = tree_flatten((args, kwargs))

  def f_(*args):
    args, kwargs = tree_unflatten(in_tree, args)
    return f(*args, **kwargs)

  fwd = jax.make_jaxpr(lambda *args: jax.vjp(f_, *args))(*args).jaxpr

  y, f_vjp = jax.vjp(f_, *args)
  res, in_tree = tree_flatten(f_vjp)

  def g_(*args):
    *res, y = args
    f_vjp = tree_unflatten(in_tree, res)
    return f_vjp(y)

  bwd = jax.make_jaxpr(g_)(*res, y).jaxpr

  # (the page puts the two in a rich table headed "forward computation:" / "backward computation:")
  print("forward computation:")
  print(fwd)
  print("backward computation:")
  print(bwd)
  return fwd, bwd, res


def fwd_bwd_cells(W1=W1, W2=W2, W3=W3, x=x):
  # no use of jax.checkpoint:
  plain = print_fwd_bwd(f, W1, W2, W3, x)
  # using jax.checkpoint with policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable:
  dots = print_fwd_bwd(f3, W1, W2, W3, x)
  return plain, dots


# ------------------------------------------ Let's think step by step ------------------------------------------
# Fundamentals of `jax.checkpoint` (the page's `g` and `h` are any two stages: parameters here)

def fundamentals_cells(g, h):
  def sin_vjp(x):
    y = jnp.sin(x)
    cos_x = jnp.cos(x)
    return y, lambda y_bar: cos_x * y_bar

  def sin_vjp2(x):
    y = jnp.sin(x)
    return y, lambda y_bar: jnp.cos(x) * y_bar

  def f(x):
    y = g(x)
    z = h(y)
    return z

  def f_vjp(x):
    y, g_vjp = jax.vjp(g, x)
    z, h_vjp = jax.vjp(h, y)
    def f_bwd(z_bar):
      y_bar, = h_vjp(z_bar)
      x_bar, = g_vjp(y_bar)
      return x_bar
    return z, f_bwd

  def f_vjp_checkpoint(x):
    y = g(x)
    z, h_vjp = jax.vjp(h, y)
    def f_bwd2(z_bar):
      y_bar, = h_vjp(z_bar)
      _, g_vjp = jax.vjp(g, x)
      x_bar, = g_vjp(y_bar)
      return x_bar
    return z, f_bwd2

  def f_checkpoint(x):
    y = jax.checkpoint(g)(x)
    z = h(y)
    return z

  def f_checkpoint_grad(x):
    y = g(x)                  # step 1
    _, h_vjp = jax.vjp(h)(y)  # step 2
    y_bar, = h_vjp(1.0)       # step 3
    _, g_vjp = jax.vjp(g, x)  # step 4
    x_bar, = g_vjp(y_bar)     # step 5
    return x_bar

  def f_grad_bad1(x):
    _ = f(x)                  # step 1
    _, f_vjp = jax.vjp(f, x)  # step 2
    x_bar, = f_vjp(1.0)       # step 3
    return x_bar

  def f_grad_bad2(x):
    y, g_vjp = jax.vjp(g, x)  # step 1
    _z = h(y)                 # step 2
    _, h_vjp = jax.vjp(h, y)  # step 3
    y_bar, = h_vjp(1.0)       # step 3
    x_bar, = g_vjp(y_bar)     # step 5
    return x_bar

  return dict(sin_vjp=sin_vjp, sin_vjp2=sin_vjp2, f=f, f_vjp=f_vjp, f_vjp_checkpoint=f_vjp_checkpoint,
              f_checkpoint=f_checkpoint, f_checkpoint_grad=f_checkpoint_grad, f_grad_bad1=f_grad_bad1,
              f_grad_bad2=f_grad_bad2)


# Custom policies for what's saveable

def loss(params, x, y):
  return jnp.sum((predict(params, x) - y)**2)

def predict(params, x):
  *Ws, Wlast = params
  for W in Ws:
    x = layer(W, x)
  x = jnp.dot(Wlast, x)
  return x

def layer(W, x):
  return jnp.sin(jnp.dot(W, x))

W1 = W2 = W3 = jnp.ones((4, 4))
params = [W1, W2, W3]
x = jnp.ones(4)
y = jnp.ones(4)

def loss_residuals_cell(params=params, x=x, y=y):
  print_saved_residuals(loss, params, x, y)


loss_checkpoint = jax.checkpoint(loss, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

def loss_checkpoint_residuals_cell(params=params, x=x, y=y):
  print_saved_residuals(loss_checkpoint, params, x, y)


def named_predict_cell():
  global predict  # the notebook redefines `predict`, which `loss` calls
  def predict(params, x):
    *Ws, Wlast = params
    for i, W in enumerate(Ws):
      x = layer(W, x)
      x = checkpoint_name(x, name=f'layer{i}_output')
    x = jnp.dot(Wlast, x)
    return x
  return predict

def named_loss_residuals_cell(params=params, x=x, y=y):
  print_saved_residuals(loss, params, x, y)


loss_checkpoint2 = jax.checkpoint(loss, policy=jax.checkpoint_policies.save_any_names_but_these('layer1_output'))

def loss_checkpoint2_residuals_cell(params=params, x=x, y=y):
  print_saved_residuals(loss_checkpoint2, params, x, y)


# Custom policies for offload (gradient-checkpointing.md only)

from kiln import checkpoint

def checkpoint_offload_dot_with_no_batch_dims(self):
  policy = jax.checkpoint_policies.offload_dot_with_no_batch_dims(
      "device", "pinned_host")

  @functools.partial(checkpoint, policy=policy)
  def f(x):
    x = jnp.einsum('ij,jk->ik', x, x, precision=lax.Precision.HIGHEST)
    x = jnp.sin(x)
    x = jnp.einsum('ij,jk->ik', x, x, precision=lax.Precision.HIGHEST)
    x = jnp.sin(x)
    x = jnp.einsum('ij,jk->ik', x, x, precision=lax.Precision.HIGHEST)
    x = jnp.sin(x)
    x = jnp.sum(x)
    return x
  return f


from kiln import checkpoint
from kiln.ad_checkpoint import checkpoint_name

class jtu:
  """The page's `jtu` (JAX's private jax._src.test_util): its create_mesh, which makes a mesh with Auto axes."""
  @staticmethod
  def create_mesh(mesh_shape, axis_names):
    return jax.make_mesh(mesh_shape, axis_names, axis_types=(jax.sharding.AxisType.Auto,) * len(mesh_shape))

def checkpoint_names_saved_offloaded_recomputed(self, mesh_shape=(2,), shape=(256, 128)):
  # `mesh_shape` and `shape` are the page's (2,) and (256, 128) unless a test asks for less
  mesh = jtu.create_mesh(mesh_shape, ("x",))
  np_inp = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
  s = NamedSharding(mesh, P("x"))
  inp = jax.device_put(np_inp, s)

  policy = jax.checkpoint_policies.save_and_offload_only_these_names(
      names_which_can_be_saved=["y"], names_which_can_be_offloaded=["z"],
      offload_src='device', offload_dst='pinned_host')

  @functools.partial(checkpoint, policy=policy)
  def f(x):
    def g(ys, _):
      y, _ = ys
      y = checkpoint_name(jnp.sin(y), "y")
      z = checkpoint_name(jnp.sin(y), "z")
      z = z.T
      w = checkpoint_name(jnp.sin(z), "w")
      return (w.T, jnp.sum(w)), None
    _, scan_out = jax.lax.scan(g, (x, np.array(1, dtype=np.float32)), [np_inp])[0]
    return scan_out
  return f, inp


# Advanced: recursive `jax.checkpoint`

def chain_compose(funs):
  def f(x):
    for fun in funs:
      x = fun(x)
    return x
  return f

def chain_compose_8_cell():
  f = chain_compose([jnp.sin] * 8)
  print_saved_residuals(f, 3.)
  return f

def chain_compose_16_cell():
  f = chain_compose([jnp.sin] * 16)
  print_saved_residuals(f, 3.)
  return f


def recursive_checkpoint(funs):
  if len(funs) == 1:
    return funs[0]
  elif len(funs) == 2:
    f1, f2 = funs
    return lambda x: f1(f2(x))
  else:
    f1 = recursive_checkpoint(funs[:len(funs)//2])
    f2 = recursive_checkpoint(funs[len(funs)//2:])
    return lambda x: f1(jax.checkpoint(f2)(x))

def recursive_checkpoint_8_cell():
  f = recursive_checkpoint([jnp.sin] * 8)
  print_saved_residuals(f, 3.)
  return f

def recursive_checkpoint_16_cell():
  f = recursive_checkpoint([jnp.sin] * 16)
  print_saved_residuals(f, 3.)
  return f


def chain_fwd_bwd_cell():
  f = chain_compose([jnp.sin] * 8)
  return print_fwd_bwd(f, 3.)

def recursive_fwd_bwd_cell():
  f = recursive_checkpoint([jnp.sin] * 8)
  return print_fwd_bwd(f, 3.)


# ------------------------------------------------ Practical notes ------------------------------------------------

def loop_net_cell():
  LayerParam = tuple[jnp.ndarray, jnp.ndarray]  # Weights-bias pair for a layer.
  ParamsList = list[LayerParam]

  def net(params: ParamsList, x: jnp.ndarray):
    for W, b in params:
      x = jnp.maximum(jnp.dot(x, W) + b, 0.)
    return x
  return net


from functools import partial

def scan_over_layers_cells(checkpoint_layer=True):
  params = [(jnp.array([[0.5, 0.5], [1., 1.]]), jnp.array([0.5, 0.5])),
            (jnp.array([[0.5, 0.5], [1., 1.]]), jnp.array([0.5, 0.5]))]

  all_weights = jnp.stack([W for W, _ in params])
  all_biases = jnp.stack([b for _, b in params])

  def layer(x, W_b_pair):
    W, b = W_b_pair
    out = jnp.maximum(jnp.dot(x, W) + b, 0.)
    return out, None

  def net(all_weights, all_biases, x):
    x, _ = jax.lax.scan(layer, x, (all_weights, all_biases))
    return x

  if checkpoint_layer:  # the page's last cell: `layer` again, under jax.checkpoint (`net` calls this one now)
    @partial(jax.checkpoint,
             policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    def layer(x, W_b_pair):
      W, b = W_b_pair
      out = jnp.maximum(jnp.dot(x, W) + b, 0.)
      return out, None

  return params, all_weights, all_biases, layer, net
