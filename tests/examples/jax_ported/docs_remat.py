# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, F841, I001  (the page's cells: two-space indents, imports between cells, lambdas, its unused `z`)
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
# The code cells of JAX's docs/new_docs/301/remat.md ("Gradient checkpointing with `jax.checkpoint`
# (`jax.remat`)", jax-ml/jax), in order, ported to kiln by changing imports only. The imports stay at the top level
# where the page has them (tests/examples/ported.py puts JAX's back); so do the first section's definitions (`g`,
# `f`, `W1`..., `f2`, `f4`, `print_fwd_bwd`), which later cells use. Each later cell (or group of cells) is a
# function that runs the page's code as it is and returns what it defines or computes, its prints kept
# (print_saved_residuals prints the listings): the page redefines `f`, `g`, `layer`, `sin`, `W1`, `x`... from
# section to section, so those sections define theirs inside their functions. Changed beyond the imports:
# `print_fwd_bwd` prints the forward and backward jaxprs one after the other instead of in a `rich` table (rich is
# no dependency of kiln or JAX; the table holds only str() of the two and its headings, and the page's
# `_renderable_repr` patch of rich's Jupyter renderer is left out) and returns (fwd, bwd, the leaves of the vjp
# function); the page leaves `g` and `h` of "`jax.checkpoint` fundamentals" undefined (its `g` above takes two
# arguments), so they are parameters of that section's function; `scan_over_layers_cells` redefines `layer` under
# `jax.checkpoint` after `net`, which calls it, as the page's last cell does (checkpoint_layer=False stops before
# that cell). Nothing else is left out; the page times nothing and plots nothing. The two `custom_remat` cells call
# `jax.custom_remat` (and `jax.checkpoint_policies.SaveOnlyTheseNames`), which kiln lacks, as JAX 0.10.2 (it keeps
# its custom_remat private): they raise AttributeError there.
# tests/examples/test_docs_remat.py checks the cells against NumPy, closed forms and float64 finite differences;
# test_docs_remat_against_jax.py runs them under kiln and JAX.

import kiln as jax

jax.config.update('jax_remat3', True)

import kiln.numpy as jnp

# ------------------------------------------------ Seeing what's saved ---------------------------------------------

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
# if you were to evaluate `jax.grad(f)(W1, W2, W3, x)`
from kiln.ad_checkpoint import print_saved_residuals

def residuals_cell():
  print_saved_residuals(f, W1, W2, W3, x)


def f2(W1, W2, W3, x):
  x = jax.checkpoint(g)(W1, x)
  x = jax.checkpoint(g)(W2, x)
  x = jax.checkpoint(g)(W3, x)
  return x

def f2_residuals_cell():
  print_saved_residuals(f2, W1, W2, W3, x)


from kiln.ad_checkpoint import checkpoint_name

def f4(W1, W2, W3, x):
  x = checkpoint_name(g(W1, x), name='a')
  x = checkpoint_name(g(W2, x), name='b')
  x = checkpoint_name(g(W3, x), name='c')
  return x

f4 = jax.checkpoint(f4, policy=jax.checkpoint_policies.save_only_these_names('a'))

def f4_residuals_cell():
  print_saved_residuals(f4, W1, W2, W3, x)


from kiln.tree_util import tree_flatten, tree_unflatten

def print_fwd_bwd(f, *args, **kwargs):
  args, in_tree = tree_flatten((args, kwargs))

  def f_(*args):
    args, kwargs = tree_unflatten(in_tree, args)
    return f(*args, **kwargs)

  fwd = jax.jit(lambda *args: jax.vjp(f_, *args)).trace(*args).jaxpr.jaxpr

  y, f_vjp = jax.vjp(f_, *args)
  res, in_tree = tree_flatten(f_vjp)

  def g_(*args):
    *res, y = args
    f_vjp = tree_unflatten(in_tree, res)
    return f_vjp(y)

  bwd = jax.jit(g_).trace(*res, y).jaxpr.jaxpr

  # (the page puts the two in a rich table headed "forward computation:" / "backward computation:")
  print("forward computation:")
  print(fwd)
  print("backward computation:")
  print(bwd)
  return fwd, bwd, res


def fwd_bwd_cells():
  # Without using `jax.checkpoint`:
  plain = print_fwd_bwd(f, W1, W2, W3, x)
  # Using `jax.checkpoint` with a save-only-these-names policy:
  named = print_fwd_bwd(f4, W1, W2, W3, x)
  return plain, named


# ------------------------------------------------ `jax.checkpoint` fundamentals -----------------------------------
# (the page's `g` and `h` are any two stages: parameters here)

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

  def f_grad_bad(x):
    _ = f(x)                  # step 1
    _, f_vjp = jax.vjp(f, x)  # step 2
    x_bar, = f_vjp(1.0)       # step 3
    return x_bar

  def f_grad_bad2(x):
    y, g_vjp = jax.vjp(g, x)  # step 1
    z = h(y)                  # step 2
    _, h_vjp = jax.vjp(h, y)  # step 3
    y_bar, = h_vjp(1.0)       # step 4
    x_bar, = g_vjp(y_bar)     # step 5
    return x_bar

  return dict(sin_vjp=sin_vjp, sin_vjp2=sin_vjp2, f=f, f_vjp=f_vjp, f_vjp_checkpoint=f_vjp_checkpoint,
              f_checkpoint=f_checkpoint, f_checkpoint_grad=f_checkpoint_grad, f_grad_bad=f_grad_bad,
              f_grad_bad2=f_grad_bad2)


# ------------------------------------------------ Policies: naming what's saveable --------------------------------

def policies_cells():
  def loss(params, x, y):
    return jnp.sum((predict(params, x) - y)**2)

  def predict(params, x):
    *Ws, Wlast = params
    for i, W in enumerate(Ws):
      x = layer(W, x)
      x = checkpoint_name(x, name=f'layer{i}_output')
    x = jnp.dot(Wlast, x)
    return x

  def layer(W, x):
    return jnp.sin(jnp.dot(W, x))

  W1 = W2 = W3 = jnp.ones((4, 4))
  params = [W1, W2, W3]
  x = jnp.ones(4)
  y = jnp.ones(4)

  print_saved_residuals(loss, params, x, y)

  loss_checkpoint = jax.checkpoint(
      loss, policy=jax.checkpoint_policies.save_any_names_but_these('layer1_output'))
  print_saved_residuals(loss_checkpoint, params, x, y)
  return dict(loss=loss, predict=predict, layer=layer, params=params, x=x, y=y, loss_checkpoint=loss_checkpoint)


# ------------------------------------------------ Offloading instead of recomputing -------------------------------

from functools import partial

def offload_cell():
  policy = jax.checkpoint_policies.save_and_offload_only_these_names(
      names_which_can_be_saved=['y'], names_which_can_be_offloaded=['z'],
      offload_src='device', offload_dst='pinned_host')

  @partial(jax.checkpoint, policy=policy)
  def f_offload(x):
    y = checkpoint_name(jnp.sin(x), 'y')   # saved on device
    z = checkpoint_name(jnp.sin(y), 'z')   # offloaded to pinned host memory
    w = checkpoint_name(jnp.sin(z), 'w')   # recomputed on the backward pass
    return jnp.sum(w)

  print(jax.grad(f_offload)(jnp.arange(4.)))
  print_saved_residuals(f_offload, jnp.arange(4.))
  return policy, f_offload


# ------------------------------------------------ Custom remat behavior with `custom_remat` ------------------------

def custom_remat_cell():
  sin = jax.custom_remat(jnp.sin,
                     lambda _, x: (jnp.sin(x), jnp.cos(x)),   # keep cos(x)
                     lambda cos_x, x: (jnp.sin(x), cos_x),    # rematerialize
                     lambda cos_x, g: (cos_x * g,))           # backward rule

  f = jax.remat(lambda x: sin(sin(x)))
  print(jax.grad(f)(1.0))
  print(jax.grad(jnp.sin)(jnp.sin(1.0)) * jnp.cos(1.0))  # chain rule, for reference
  return sin, f

def policy_aware_custom_remat_cell():
  SaveOnlyTheseNames = jax.checkpoint_policies.SaveOnlyTheseNames

  def sin_fwd(policy, x):
    if isinstance(policy, SaveOnlyTheseNames) and 'cos' in policy.saveable_names:
      return jnp.sin(x), jnp.cos(x)
    else:
      return jnp.sin(x), None

  def sin_rem(cos_x, x):
    if cos_x is None:
      cos_x = jnp.cos(x)
    return jnp.sin(x), cos_x

  def sin_bwd(cos_x, g):
    return cos_x * g,

  sin = jax.custom_remat(jnp.sin, sin_fwd, sin_rem, sin_bwd)

  save_cos = jax.checkpoint_policies.save_only_these_names('cos')
  f = jax.checkpoint(lambda x: sin(sin(x)), policy=save_cos)
  print(jax.grad(f)(3.0))
  f_save_cos = f

  f = jax.checkpoint(lambda x: sin(sin(x)),
                     policy=jax.checkpoint_policies.nothing_saveable)
  print(jax.grad(f)(3.0))
  return sin, f_save_cos, f


# ------------------------------------------------ Advanced: recursive `jax.checkpoint` ----------------------------

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


# ------------------------------------------------ Practical notes -------------------------------------------------

def loop_net_cell():
  LayerParam = tuple[jnp.ndarray, jnp.ndarray]  # Weights-bias pair for a layer.
  ParamsList = list[LayerParam]

  def net(params: ParamsList, x: jnp.ndarray):
    for W, b in params:
      x = jnp.maximum(jnp.dot(x, W) + b, 0.)
    return x
  return net


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
             policy=jax.checkpoint_policies.save_only_these_names('preactivation'))
    def layer(x, W_b_pair):
      W, b = W_b_pair
      pre = checkpoint_name(jnp.dot(x, W) + b, 'preactivation')
      out = jnp.maximum(pre, 0.)
      return out, None

  return params, all_weights, all_biases, layer, net
