# ruff: noqa: E111, E114, E302, E305, F841, I001  (the page's blocks as they are: two-space indents, unused results)
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
# The Python code blocks of JAX's docs/buffer_donation.md ("Buffer donation", jax-ml/jax cec06d116c), in order,
# ported to kiln by changing imports only. The page's blocks are ```python sketches that are not executed and import
# nothing: the imports they use (`jax`, `np`, and `List`, `Array` of `add_ones`'s annotation) are added at the top
# level, as JAX would spell them (tests/examples/ported.py puts JAX's back). The page's definitions (`add`,
# `add_ones`) are at the top level. Every block that runs something is a function, `..._block`, whose body is the
# block's lines and which returns what the block makes (`return` added). Names a block reads without defining them
# are its parameters: the pmap blocks' `update_fn`, `params` and `state` (the page leaves them undefined: the tests
# pass a function and arrays), and `x` and `y` of the blocks that reuse the ones the page's `add` block made. The
# page's blocks are separate sketches: run in its order, the reuse block's `y` and the warning blocks' `y` would be
# the one the `add` block already donated, so the tests pass fresh arrays, and also run them in the page's order
# to see what that does. The `# >> ...` comments are the page's (its expected errors and warnings). Left out:
# nothing. tests/examples/test_docs_buffer_donation.py checks the blocks against NumPy and the page's claims
# (which buffers are deleted, the error, the warnings); test_docs_buffer_donation_against_jax.py runs them under
# kiln and JAX.
from __future__ import annotations

from typing import List

import numpy as np

import kiln as jax
from kiln import Array

def pmap_donation_block(update_fn, params, state):
  params, state = jax.pmap(update_fn, donate_argnums=(0, 1))(params, state)
  return params, state

def add(x, y):
  return x + y

def add_block():
  x = jax.device_put(np.ones((2, 3)))
  y = jax.device_put(np.ones((2, 3)))
  # Execute `add` with donation of the buffer for `y`. The result has
  # the same shape and type as `y`, so it will share its buffer.
  z = jax.jit(add, donate_argnums=(1,))(x, y)
  return x, y, z

def pmap_keywords_block(update_fn, params, state):
  params, state = jax.pmap(update_fn, donate_argnums=(0, 1))(params=params, state=state)
  return params, state

def add_ones(xs: List[Array]):
  return [x + 1 for x in xs]

def add_ones_block():
  xs = [jax.device_put(np.ones((2, 3))), jax.device_put(np.ones((3, 4)))]
  # Execute `add_ones` with donation of all the buffers for `xs`.
  # The outputs have the same shape and type as the elements of `xs`,
  # so they will share those buffers.
  z = jax.jit(add_ones, donate_argnums=0)(xs)
  return xs, z

def reuse_donated_block(x, y):
  # Donate the buffer for `y`
  z = jax.jit(add, donate_argnums=(1,))(x, y)
  w = y + 1  # Reuses `y` whose buffer was donated above
  # >> RuntimeError: Invalid argument: CopyToHostAsync() called on invalid buffer

def donate_both_block(x, y):
  # Execute `add` with donation of the buffers for both `x` and `y`.
  # One of those buffers will be used for the result, but the other will
  # not be used.
  z = jax.jit(add, donate_argnums=(0, 1))(x, y)
  # >> UserWarning: Some donated buffers were not usable: f32[2,3]{1,0}
  return z

def shape_mismatch_block(x):
  y = jax.device_put(np.ones((1, 3)))  # `y` has different shape than the output
  # Execute `add` with donation of the buffer for `y`.
  z = jax.jit(add, donate_argnums=(1,))(x, y)
  # >> UserWarning: Some donated buffers were not usable: f32[1,3]{1,0}
  return y, z
