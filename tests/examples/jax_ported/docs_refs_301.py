# ruff: noqa: E111, E114, E302, E305, E402, F811, F841, I001  (the page's blocks as they are: two-space indents, repeated imports)
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
# The Python code blocks of JAX's docs/new_docs/301/refs.md ("Autodiff with refs", jax-ml/jax), in order, ported to
# kiln by changing imports only. The imports stay at the top level, at column 0, where the page has them (the
# `foreach` section's repeated imports included), so that tests/examples/ported.py can put JAX's back; so do the
# page's definitions that later blocks use or that the page only defines (`pure2`, `err6`, `foo`, `stash_grads` and
# its rules, the VJP section's `f(x_ref)` and `g`, `take`, `predict`, the microbatch constants, `mubatch_loss`,
# `process_batch`, `foreach`). Every block whose top-level code runs something (prints, creates refs, traces) is a
# function, `..._block`, whose body is the block's lines and which returns what the block shows or computes (its
# prints are kept). A name that a block reads from an earlier block's values (`x` and `grad_ref` of the `take`
# blocks, `W` and `x` of the `DontWant` blocks, `Ws`, `xs_batch` and `grads` of the microbatch blocks) is that
# block's parameter. The stash block's `f(x, grads_ref)` stays inside its block function: the page redefines `f` in
# the next section (`f(x_ref)`, the top-level one). The block that shows an error keeps its `try/except` and
# `print(e)` and returns the VJP function, so that the tests can call it again for the exception itself.
# Left out: nothing. tests/examples/test_docs_refs_301.py checks the blocks against NumPy, float64 central
# differences and the page's claims; test_docs_refs_301_against_jax.py runs them under kiln and JAX. (The older page
# docs/array_refs.md, which has most of these blocks, is array_refs.py; new_docs/101/state.md is docs_state_101.py.)

import kiln as jax
import kiln.numpy as jnp

# ------------------------------------------------ `Ref`s and automatic differentiation ---------------------------

@jax.jit
def pure2(x):
  ref = jax.new_ref(x)
  ref[...] = ref[...] + ref[...]
  return ref[...]

def grad_pure2_block():
  print(jax.grad(pure2)(3.0))  # 2.0

# error
def err6(x, some_plumbing_ref):
  y = x + x
  some_plumbing_ref[...] += y
  return y

# fine
def foo(x, some_plumbing_ref):
  y = x + x
  some_plumbing_ref[...] += jax.lax.stop_gradient(y)
  return y

# First, define the helper `stash_grads`:

@jax.custom_vjp
def stash_grads(grads_ref, x):
  return x

def stash_grads_fwd(grads_ref, x):
  return x, grads_ref

def stash_grads_bwd(grads_ref, g):
  grads_ref[...] = g
  return None, g

stash_grads.defvjp(stash_grads_fwd, stash_grads_bwd)

def stash_grads_use_block():
  # Now, use `stash_grads` to stash intermediate gradients:

  def f(x, grads_ref):
    x = stash_grads(grads_ref, x)
    x = jnp.sin(x)
    return x

  grads_ref = jax.new_ref(0.)
  jax.grad(f)(1., grads_ref)
  print(grads_ref)  # Ref(0.54), the gradient at the stash point: cos(1.)
  return f, grads_ref

# ------------------------------------------------ Differentiating with respect to `Ref` arguments ----------------

def f(x_ref):
  return x_ref[...] ** 2

def vjp_ref_arg_block():
  x_ref = jax.new_ref(2.)
  y, f_vjp = jax.vjp(f, x_ref)

  x_grad_ref = jax.new_ref(0.)
  f_vjp.with_refs(x_grad_ref)(1.0)  # bind the gradient ref, then apply the VJP
  print(x_grad_ref)  # Ref(4.)
  return x_ref, y, x_grad_ref

def vjp_without_with_refs_block():
  _, f_vjp = jax.vjp(f, jax.new_ref(2.))
  try:
    f_vjp(1.0)  # error! no ref bound for the ref-typed argument's gradient
  except Exception as e:
    print(e)  # ... gradient must be accumulated into a ref ... `with_refs` ...
  return f_vjp

def accumulate_block():
  x_grad_ref = jax.new_ref(100.)
  _, f_vjp = jax.vjp(f, jax.new_ref(2.))
  f_vjp.with_refs(x_grad_ref)(1.0)
  print(x_grad_ref)  # Ref(104.), i.e. 100. + 4.: accumulated, not set
  return x_grad_ref

def g(x_ref):
  x_ref[...] = jnp.sin(x_ref[...])
  return x_ref[...] ** 2

def inplace_update_block():
  x_ref = jax.new_ref(2.)
  _, g_vjp = jax.vjp(g, x_ref)  # runs g, so x_ref is updated in-place here
  g_grad_ref = jax.new_ref(0.)
  g_vjp.with_refs(g_grad_ref)(1.0)
  print(g_grad_ref)  # Ref(-0.757), i.e. 2*sin(2)*cos(2)
  return x_ref, g_grad_ref

# ------------------------------------------------ Gradient refs for value arguments ------------------------------

def value_arg_block():
  _, sin_vjp = jax.vjp(jnp.sin, 1.0)
  x_bar, = sin_vjp(1.0)  # the usual way: gradient returned as a value
  print(x_bar)  # 0.54

  grad_ref = jax.new_ref(0.)
  _, sin_vjp = jax.vjp(jnp.sin, 1.0)
  sin_vjp.with_refs(grad_ref)(1.0)  # gradient accumulated into grad_ref
  print(grad_ref)  # Ref(0.54)
  return x_bar, grad_ref

@jax.jit
def take(x, i):
  return x[i]

def take_block():
  x = jnp.arange(10.)

  _, take_vjp = jax.vjp(take, x, 3)
  x_bar, _ = take_vjp(1.0)
  print(x_bar)  # [0., 0., 0., 1., 0., 0., 0., 0., 0., 0.]
  return x, x_bar, _

def sparse_accumulate_block(x):
  grad_ref = jax.new_ref(jnp.zeros(10))

  for i in [3, 5, 3]:
    _, take_vjp = jax.vjp(take, x, i)
    take_vjp.with_refs(grad_ref, jax.ad.GradValue())(1.0)  # no gradient ref for i

  print(grad_ref)  # Ref([0., 0., 0., 2., 0., 1., 0., 0., 0., 0.])
  return grad_ref

def take_vjp_jaxpr_block(x, grad_ref):
  @jax.make_jaxpr
  def take_vjp_jaxpr():
    _, take_vjp = jax.vjp(take, x, 3)
    take_vjp.with_refs(grad_ref, jax.ad.GradValue())(1.0)

  print(take_vjp_jaxpr())
  return take_vjp_jaxpr

# ------------------------------------------------ `DontWant`: skipping unneeded gradients ------------------------

def predict(W, x):
  return W @ x

def dont_want_block():
  W = jnp.ones((4, 4))
  x = jnp.ones(4)

  _, f_vjp = jax.vjp(predict, W, x)
  W_bar, x_bar = f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4))
  print(W_bar[0])  # [1., 1., 1., 1.]
  print(x_bar)  # DidntWant()
  return W, x, W_bar, x_bar

def dont_want_dots_block(W, x):
  _, f_vjp = jax.vjp(predict, W, x)
  both = jax.make_jaxpr(lambda: f_vjp(jnp.ones(4)))()
  only_W = jax.make_jaxpr(
      lambda: f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4)))()

  print(str(both).count('dot_general'))    # 2, one dot for each gradient
  print(str(only_W).count('dot_general'))  # 1, the dot for x_bar is skipped
  return f_vjp, both, only_W

# ------------------------------------------------ Example: gradient accumulation over microbatches ---------------

NUM_LAYERS = 3
NUM_MUBATCHES = 5
MUBATCH_SIZE = 7

def mubatch_loss(Ws, xs):
  # inner loop over layers
  act, _ = jax.lax.scan(lambda x, W: (jnp.dot(x, W), None), xs, Ws)
  return jnp.mean(act)

def process_batch(Ws, xs_batch):
  grad_acc = jax.new_ref(jnp.zeros_like(Ws))

  def process_mubatch(_, xs):
    loss, f_vjp = jax.vjp(lambda Ws: mubatch_loss(Ws, xs), Ws)
    f_vjp.with_refs(grad_acc)(jnp.ones_like(loss))  # accumulate in-place
    return (), loss

  xs_mubatches = xs_batch.reshape(NUM_MUBATCHES, MUBATCH_SIZE, -1)
  # outer loop over microbatches
  (), losses = jax.lax.scan(process_mubatch, (), xs_mubatches)
  return jax.freeze(grad_acc), losses

def microbatches_block():
  Ws = jnp.ones((NUM_LAYERS, 4, 4))
  xs_batch = jnp.ones((NUM_MUBATCHES * MUBATCH_SIZE, 4))
  grads, losses = process_batch(Ws, xs_batch)
  return Ws, xs_batch, grads, losses

def microbatches_check_block(Ws, xs_batch, grads):
  xs_mubatches = xs_batch.reshape(NUM_MUBATCHES, MUBATCH_SIZE, -1)
  grads_expected = jax.grad(
      lambda Ws: sum(mubatch_loss(Ws, xs) for xs in xs_mubatches))(Ws)
  print(jnp.allclose(grads, grads_expected, atol=1e-3, rtol=1e-3))  # True
  return grads_expected

# ------------------------------------------------ `foreach`, a new way to write `scan` ---------------------------

import kiln as jax
import kiln.numpy as jnp
from kiln.lax import scan

def foreach(*args):
  def decorator(body):
    return scan(lambda _, elts: (None, body(*elts)), None, args)[1]
  return decorator

def foreach_block():
  r = jax.new_ref(0)
  xs = jnp.arange(10)

  @foreach(xs)
  def ys(x):
    r[...] += x
    return x * 2

  print(r)   # Ref(45, dtype=int32)
  print(ys)  # [ 0  2  4  6  8 10 12 14 16 18]
  return r, xs, ys
