# ruff: noqa: E111, E114, E302, E305, E402, B007, F821, F841, I001  (the page's blocks as they are; its sketches' undefined types)
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
# The Python code blocks of JAX's docs/new_docs/101/state.md ("Stateful computations", jax-ml/jax), in order, ported
# to kiln by changing imports only. The imports stay at the top level, where the page has them (tests/examples/
# ported.py puts JAX's back); so do the page's definitions (the classes, `update`, `loss_fn`, `optimizer_step`,
# `normalize`, `scale_into`). Every block whose top-level code runs something (prints, creates refs, traces) is a
# function, `..._block`, whose body is the block's lines and which returns what the block shows or computes (its
# last expression, the page's notebook output, is returned; its prints are kept). A name that a block reads from an
# earlier one (`counter` of the CounterV2 block, `x_ref` of the indexing block) is that block's parameter. The two
# ```python sketches (`StatefulClass`, `stateless_method`) are kept as they are: the page leaves `State` and
# `Output` undefined, so this file's annotations are not evaluated (`from __future__ import annotations`).
# Left out: `%xmode minimal` (IPython). tests/examples/test_docs_state_101.py checks the blocks against NumPy and
# the page's claims; test_docs_state_101_against_jax.py runs them under kiln and JAX. (The older page
# docs/stateful-computations.md is stateful_computations.py; array_refs.md is array_refs.py.)
from __future__ import annotations

# ------------------------------------------------ The problem with untraceable state -----------------------------

import kiln as jax
import kiln.numpy as jnp

class Counter:
  """A simple counter."""

  def __init__(self):
    self.n = 0

  def count(self) -> int:
    """Increments the counter and returns the new value."""
    self.n += 1
    return self.n

def counter_block():
  counter = Counter()

  for _ in range(3):
    print(counter.count())
  return counter

def counter_jaxpr_block():
  counter = Counter()
  return jax.jit(counter.count).trace().jaxpr, counter

# ------------------------------------------------ Threading state through pure functions -------------------------

CounterState = int

class CounterV2:

  def count(self, n: CounterState) -> tuple[int, CounterState]:
    # You could just return n+1 once, but here we separate its role as
    # the output and as the counter state for didactic purposes.
    return n + 1, n + 1

  def reset(self) -> CounterState:
    return 0

def counter_v2_block():
  counter = CounterV2()
  state = counter.reset()

  for _ in range(3):
    value, state = counter.count(state)
    print(value)
  return counter, state

def counter_v2_jaxpr_block(counter):
  return jax.jit(counter.count).trace(0).jaxpr

class StatefulClass:

  state: State

  def stateful_method(*args, **kwargs) -> Output:
    ...

def stateless_method(state: State, *args, **kwargs) -> tuple[Output, State]:
  ...

def update(params, opt_state, batch):
  """One training step: consume state, produce new state."""
  grads = jax.grad(loss_fn)(params, batch)
  new_params, new_opt_state = optimizer_step(params, grads, opt_state)
  return new_params, new_opt_state

def loss_fn(params, batch):
  x, y = batch
  return jnp.mean((params['w'] * x + params['b'] - y) ** 2)

def optimizer_step(params, grads, opt_state, lr=0.1, decay=0.9):
  # gradient descent with momentum: the momentum is optimizer state
  new_opt_state = jax.tree.map(
      lambda m, g: decay * m + g, opt_state, grads)
  new_params = jax.tree.map(
      lambda p, m: p - lr * m, params, new_opt_state)
  return new_params, new_opt_state

def training_block():
  params = {'w': jnp.float32(1.0), 'b': jnp.float32(0.0)}
  opt_state = jax.tree.map(jnp.zeros_like, params)
  batch = (jnp.array([1.0, 2.0, 3.0]), jnp.array([3.0, 5.0, 7.0]))

  for step in range(100):
    params, opt_state = update(params, opt_state, batch)

  print(jax.tree.map(lambda x: round(float(x), 2), params))  # fits y = 2x + 1
  return params, opt_state

# ------------------------------------------------ Refs: mutable arrays -------------------------------------------

def new_ref_block():
  x_ref = jax.new_ref(jnp.zeros(3))  # new array ref, with initial value [0., 0., 0.]

  @jax.jit
  def f():
    x_ref[1] += 1.  # indexed add-update

  print(x_ref)  # Ref([0., 0., 0.])
  f()
  f()
  print(x_ref)  # Ref([0., 2., 0.])
  return x_ref, f

def g(x):
  x_ref = jax.new_ref(0.)
  x_ref[...] = jnp.sin(x)
  return x_ref[...]

def grad_block():
  print(jax.grad(g)(1.0))  # 0.54

def math_on_a_ref_block():
  x_ref = jax.new_ref(1.0)
  jnp.sin(x_ref)  # error! can't do math on refs

def indexing_block():
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
  return x_ref, row, val, col, vals

def freeze_block(x_ref):
  final = jax.freeze(x_ref)
  return final

# ------------------------------------------------ Refs and purity ------------------------------------------------

def normalize(x):        # pure: refs used internally only
  acc = jax.new_ref(0.0)
  acc[...] = jnp.sum(x)  # (a real program would do something less trivial)
  return x / acc[...]

def normalize_grad_block():
  return jax.grad(lambda x: normalize(x).sum())(jnp.arange(1.0, 4.0))

def scale_into(x, out_ref):   # impure: takes a ref argument
  out_ref[...] = 2.0 * x

def scale_into_block():
  xs = jnp.arange(3.0)
  out_ref = jax.new_ref(jnp.zeros(3))
  jax.vmap(scale_into)(xs, out_ref)   # each instance writes its own entry
  print(out_ref[...])
  return out_ref

def write_shared_block():
  r = jax.new_ref(0.0)

  def write_shared(x):
    r[...] = x    # every batch member writes the same ref!

  jax.vmap(write_shared)(jnp.arange(3.0))
