# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, F841, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
# Copyright 2025 The JAX Authors.
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
# The code cells of JAX's docs/array_refs.md ("`Ref`: mutable arrays for data plumbing and memory control",
# jax-ml/jax cec06d116c), all of them, in order, ported to kiln by changing imports only. The imports stay at the
# top level, at column 0, where the page has them (its repeated `import jax` of the `foreach` section included), so
# that tests/examples/ported.py can put JAX's back. The cells that only define API stubs (`array_ref`, `freeze`,
# `get`, `swap`, `Index`/`Indexer`) and the `foreach` decorator are top-level code, as on the page; every other
# cell is a function, `..._cell()`, whose body is the cell's code and which returns its locals (what it defines
# and computes); its prints are kept. The page's cells read names that earlier cells defined (`stash_grads`, the
# `f` of the VJP section, `take`, `x`, `grad_ref`, `predict`, `W`, the microbatch section's names): the cells
# that define those make them module globals (a `global` line, the one addition), so that running the cells in
# the page's order gives every cell what it gets on the page. The cells that show an error keep their
# `try/except` and `print(e)`; each except clause also records the exception in the cell's `raised` dict
# (`raised['err1'] = e`: the other addition), so the tests can check its type and message (an entry is missing
# where nothing was raised). The refs the cells mutate are module state, so each cell runs once, in order
# (tests/examples/test_array_refs.py's fixture). Left out: nothing.
# tests/examples/test_array_refs.py checks it against NumPy loops and float64 finite differences;
# test_array_refs_against_jax.py runs it under kiln and JAX.

import kiln as jax
import kiln.numpy as jnp

# ---------------------------------------------------- intro ----------------------------------------------------

def intro_cell():
  x_ref = jax.new_ref(jnp.zeros(3))  # new array ref, with initial value [0., 0., 0.]

  @jax.jit
  def f():
    x_ref[1] += 1.  # indexed add-update

  print(x_ref)  # Ref([0., 0., 0.])
  f()
  f()
  print(x_ref)  # Ref([0., 2., 0.])
  return locals()


def grad_cell():
  def g(x):
    x_ref = jax.new_ref(0.)
    x_ref[...] = jnp.sin(x)
    return x_ref[...]

  print(jax.grad(g)(1.0))  # 0.54
  return locals()


def not_an_array_cell():
  raised = {}
  x_ref = jax.new_ref(1.0)
  try:
    jnp.sin(x_ref)  # error! can't do math on refs
  except Exception as e:
    print(e)
    raised['sin'] = e
  return locals()


# ----------------------------------------------------- API -----------------------------------------------------

from kiln import Array, Ref

def array_ref(init_val: Array) -> Ref:
  """Introduce a new reference with given initial value."""


def freeze(ref: Ref) -> Array:
  """Invalidate given reference and produce its final value."""


import types
Index = int | slice | Array | types.EllipsisType
Indexer = Index | tuple[Index, ...]

def get(ref: Ref, idx: Indexer) -> Array:
  """Returns `ref[idx]` for NumPy-style indexer `idx`."""

def swap(ref: Ref, idx: Indexer, val: Array) -> Array:
  """Performs `newval, ref[idx] = ref[idx], val` and returns `newval`."""


def indexing_cell():
  x_ref = jax.new_ref(jnp.arange(12.).reshape(3, 4))

  # int indexing
  row = x_ref[0]
  x_ref[1] = row

  # tuple indexing
  val = x_ref[1, 2]
  x_ref[2, 3] = val

  # slice indexing
  col = x_ref[:, 1]
  x_ref[0, :3] = col

  # advanced int array indexing
  vals = x_ref[jnp.array([0, 0, 1]), jnp.array([1, 2, 3])]
  x_ref[jnp.array([1, 2, 1]), jnp.array([0, 0, 1])] = vals
  return locals()


# ------------------------------------------- Pure and impure functions -------------------------------------------

def impure_cell():
  # takes ref as an argument => impure
  @jax.jit
  def impure1(x_ref, y_ref):
    x_ref[...] = y_ref[...]

  # closes over ref => impure
  y_ref = jax.new_ref(0)

  @jax.jit
  def impure2(x):
    y_ref[...] = x
  return locals()


def pure_cell():
  # internal refs => still pure
  @jax.jit
  def pure1(x):
    ref = jax.new_ref(x)
    ref[...] = ref[...] + ref[...]
    return ref[...]
  return locals()


# -------------------------------------------------- Restrictions --------------------------------------------------

def restrictions_cell():
  raised = {}
  x_ref = jax.new_ref(0.)

  # can't return refs
  @jax.jit
  def err1(x_ref):
    x_ref[...] = 5.
    return x_ref  # error!
  try:
    err1(x_ref)
  except Exception as e:
    print(e)
    raised['err1'] = e

  # can't pass a ref as an argument more than once
  @jax.jit
  def err2(x_ref, y_ref):
    ...
  try:
    err2(x_ref, x_ref)  # error!
  except Exception as e:
    print(e)
    raised['err2'] = e

  # can't pass and close over the same ref
  @jax.jit
  def err3(y_ref):
    y_ref[...] = x_ref[...]
  try:
    err3(x_ref)  # error!
  except Exception as e:
    print(e)
    raised['err3'] = e

  # can only freeze in creation scope
  @jax.jit
  def err4(x_ref):
    jax.freeze(x_ref)
  try:
    err4(x_ref)  # error!
  except Exception as e:
    print(e)
    raised['err4'] = e
  return locals()


def vmap_ref_args_cell():
  # vmap over ref args is okay
  def dist(x, y, out_ref):
    assert x.ndim == y.ndim == 1
    assert out_ref.ndim == 0
    out_ref[...] = jnp.sum((x - y) ** 2)

  vecs = jnp.arange(12.).reshape(3, 4)
  out_ref = jax.new_ref(jnp.zeros((3, 3)))
  jax.vmap(jax.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)  # ok!
  print(out_ref)
  return locals()


def vmap_closed_over_cell():
  raised = {}
  # vmap with a closed-over ref is not
  x_ref = jax.new_ref(0.)

  def err5(x):
    x_ref[...] = x

  try:
    jax.vmap(err5)(jnp.arange(3.))  # error!
  except Exception as e:
    print(e)
    raised['err5'] = e
  return locals()


# -------------------------------------- `Ref`s and automatic differentiation --------------------------------------

def grad_pure_cell():
  @jax.jit
  def pure2(x):
    ref = jax.new_ref(x)
    ref[...] = ref[...] + ref[...]
    return ref[...]

  print(jax.grad(pure2)(3.0))  # 2.0
  return locals()


def plumbing_cell():
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
  return locals()


def stash_grads_cell():
  global stash_grads
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
  return locals()


def stash_grads_use_cell():
  # Now, use `stash_grads` to stash intermediate gradients:

  def f(x, grads_ref):
    x = stash_grads(grads_ref, x)
    x = jnp.sin(x)
    return x

  grads_ref = jax.new_ref(0.)
  jax.grad(f)(1., grads_ref)
  print(grads_ref)  # Ref(0.54), the gradient at the stash point: cos(1.)
  return locals()


# Differentiating with respect to `Ref` arguments

def vjp_ref_arg_cell():
  global f
  def f(x_ref):
    return x_ref[...] ** 2

  x_ref = jax.new_ref(2.)
  y, f_vjp = jax.vjp(f, x_ref)

  x_grad_ref = jax.new_ref(0.)
  f_vjp.with_refs(x_grad_ref)(1.0)  # bind the gradient ref, then apply the VJP
  print(x_grad_ref)  # Ref(4.)
  return locals()


def vjp_ref_arg_without_with_refs_cell():
  raised = {}
  _, f_vjp = jax.vjp(f, jax.new_ref(2.))
  try:
    f_vjp(1.0)  # error! no ref bound for the ref-typed argument's gradient
  except Exception as e:
    print(e)  # ... gradient must be accumulated into a ref ... `with_refs` ...
    raised['f_vjp'] = e
  return locals()


def accumulate_cell():
  x_grad_ref = jax.new_ref(100.)
  _, f_vjp = jax.vjp(f, jax.new_ref(2.))
  f_vjp.with_refs(x_grad_ref)(1.0)
  print(x_grad_ref)  # Ref(104.), i.e. 100. + 4.: accumulated, not set
  return locals()


def inplace_update_cell():
  def g(x_ref):
    x_ref[...] = jnp.sin(x_ref[...])
    return x_ref[...] ** 2

  x_ref = jax.new_ref(2.)
  _, g_vjp = jax.vjp(g, x_ref)  # runs g, so x_ref is updated in-place here
  g_grad_ref = jax.new_ref(0.)
  g_vjp.with_refs(g_grad_ref)(1.0)
  print(g_grad_ref)  # Ref(-0.757), i.e. 2*sin(2)*cos(2)
  return locals()


# Gradient refs for value arguments

def value_arg_cell():
  _, sin_vjp = jax.vjp(jnp.sin, 1.0)
  x_bar, = sin_vjp(1.0)  # the usual way: gradient returned as a value
  print(x_bar)  # 0.54

  grad_ref = jax.new_ref(0.)
  _, sin_vjp = jax.vjp(jnp.sin, 1.0)
  sin_vjp.with_refs(grad_ref)(1.0)  # gradient accumulated into grad_ref
  print(grad_ref)  # Ref(0.54)
  return locals()


def take_cell():
  global take, x
  @jax.jit
  def take(x, i):
    return x[i]

  x = jnp.arange(10.)

  _, take_vjp = jax.vjp(take, x, 3)
  x_bar, _ = take_vjp(1.0)
  print(x_bar)  # [0., 0., 0., 1., 0., 0., 0., 0., 0., 0.]
  return locals()


def sparse_accumulate_cell():
  global grad_ref
  grad_ref = jax.new_ref(jnp.zeros(10))

  for i in [3, 5, 3]:
    _, take_vjp = jax.vjp(take, x, i)
    take_vjp.with_refs(grad_ref, jax.ad.GradValue())(1.0)  # no gradient ref for i

  print(grad_ref)  # Ref([0., 0., 0., 2., 0., 1., 0., 0., 0., 0.])
  return locals()


def take_vjp_jaxpr_cell():
  @jax.make_jaxpr
  def take_vjp_jaxpr():
    _, take_vjp = jax.vjp(take, x, 3)
    take_vjp.with_refs(grad_ref, jax.ad.GradValue())(1.0)

  print(take_vjp_jaxpr())
  return locals()


# `DontWant`: skipping unneeded gradients

def dont_want_cell():
  global predict, W, x
  def predict(W, x):
    return W @ x

  W = jnp.ones((4, 4))
  x = jnp.ones(4)

  _, f_vjp = jax.vjp(predict, W, x)
  W_bar, x_bar = f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4))
  print(W_bar[0])  # [1., 1., 1., 1.]
  print(x_bar)  # DidntWant()
  return locals()


def dont_want_dots_cell():
  _, f_vjp = jax.vjp(predict, W, x)
  both = jax.make_jaxpr(lambda: f_vjp(jnp.ones(4)))()
  only_W = jax.make_jaxpr(
      lambda: f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4)))()

  print(str(both).count('dot_general'))    # 2, one dot for each gradient
  print(str(only_W).count('dot_general'))  # 1, the dot for x_bar is skipped
  return locals()


# Example: gradient accumulation over microbatches

def microbatches_cell():
  global NUM_LAYERS, NUM_MUBATCHES, MUBATCH_SIZE, mubatch_loss, process_batch, Ws, xs_batch, grads, losses
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

  Ws = jnp.ones((NUM_LAYERS, 4, 4))
  xs_batch = jnp.ones((NUM_MUBATCHES * MUBATCH_SIZE, 4))
  grads, losses = process_batch(Ws, xs_batch)
  return locals()


def microbatches_check_cell():
  xs_mubatches = xs_batch.reshape(NUM_MUBATCHES, MUBATCH_SIZE, -1)
  grads_expected = jax.grad(
      lambda Ws: sum(mubatch_loss(Ws, xs) for xs in xs_mubatches))(Ws)
  print(jnp.allclose(grads, grads_expected, atol=1e-3, rtol=1e-3))  # True
  return locals()


# ---------------------------------------------- `Ref`s and performance ----------------------------------------------

def sin_inplace_cell():
  @jax.jit
  def sin_inplace(x_ref):
    x_ref[...] = jnp.sin(x_ref[...])

  x_ref = jax.new_ref(jnp.arange(3.))
  print(x_ref.unsafe_buffer_pointer(), x_ref)
  sin_inplace(x_ref)
  print(x_ref.unsafe_buffer_pointer(), x_ref)
  return locals()


# ---------------------------------------- `foreach`, a new way to write `scan` ----------------------------------------

import kiln as jax
import kiln.numpy as jnp
from kiln.lax import scan

def foreach(*args):
  def decorator(body):
    return scan(lambda _, elts: (None, body(*elts)), None, args)[1]
  return decorator


def foreach_cell():
  r = jax.new_ref(0)
  xs = jnp.arange(10)

  @foreach(xs)
  def ys(x):
    r[...] += x
    return x * 2

  print(r)   # Ref(45, dtype=int32)
  print(ys)  # [ 0  2  4  6  8 10 12 14 16 18]
  return locals()


# The cells in the page's order (the tests run them so, each once).
CELLS = [intro_cell, grad_cell, not_an_array_cell, indexing_cell, impure_cell, pure_cell, restrictions_cell,
         vmap_ref_args_cell, vmap_closed_over_cell, grad_pure_cell, plumbing_cell, stash_grads_cell,
         stash_grads_use_cell, vjp_ref_arg_cell, vjp_ref_arg_without_with_refs_cell, accumulate_cell,
         inplace_update_cell, value_arg_cell, take_cell, sparse_accumulate_cell, take_vjp_jaxpr_cell, dont_want_cell,
         dont_want_dots_cell, microbatches_cell, microbatches_check_cell, sin_inplace_cell, foreach_cell]
