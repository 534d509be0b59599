# ruff: noqa: E111, E114, E302, E305, E402, E731, I001  (the page's blocks: two-space indents, imports between blocks, lambdas)
# Copyright 2023 The JAX Authors.
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
# The code blocks of JAX's design document docs/jep/14273-shard-map.md ("`shmap` (`shard_map`) for simple
# per-device code", jax-ml/jax cec06d116c), in order, ported to kiln by changing imports only, one function per block
# (or group of blocks) returning what the blocks compute; their prints are kept. The imports are written once at the
# top, one per line, so that tests/examples/ported.py can put JAX's back; `pmap`, which the page calls bare, is
# imported from the library.
# Where the blocks are not runnable as written (the minimum substituted): `f`, the function of the rank-reducing
# and rank-preserving blocks, is undefined on the page: here a function of a row or a block with an f32[3,7] result,
# as the page says, with integer values (the page's `==` is exact then). The page's `pmap(...)(xs) == stack(...)`
# compares the two sides; its `shard_map(...)(y) \n == \n concatenate(...)` is not Python: each block returns both
# sides. `x_ = jnp.tile(x, (1, mesh.axis_size['j']))`: a Mesh has no `axis_size` (JAX 0.10.2 neither):
# `mesh.shape['j']`. The TL;DR mesh is `tldr_cell`'s argument, the page's `jax.make_mesh((4, 2), ('i', 'j'))` by
# default (under JAX 0.10.2 its axes are Explicit, and the page's arguments, not laid out over it, are refused: the
# tests also pass an Auto mesh). The rank-reducing block's `in_axes=[0]` (a list) is refused by pmap, JAX's and kiln's
# (`rank_reducing_cell`'s argument: the tests also pass `(0,)`).
# Left out: the API specification block (a signature with `...` and an undefined `PyTree`; the tests check its
# block-shape formula against the bodies' shapes) and the "realistic example" (a transformer layer with undefined
# helpers, parameters and modules, not runnable; it also has an indentation error).
# tests/multidevice/test_jep_shard_map.py checks the blocks against NumPy (8 CPU devices);
# tests/examples/test_jep_shard_map_against_jax.py runs them under kiln and JAX 0.10.2.

from functools import partial

import numpy as np

import kiln as jax
import kiln.numpy as jnp
from kiln import pmap
from kiln.sharding import Mesh, PartitionSpec as P
from kiln.experimental.shard_map import shard_map

# ------------------------------------- So, let's see `shmap`! (TL;DR example) -------------------------------------

def tldr_cell(mesh=None):
  if mesh is None:
    mesh = jax.make_mesh((4, 2), ('i', 'j'))

  a = jnp.arange( 8 * 16.).reshape(8, 16)
  b = jnp.arange(16 * 32.).reshape(16, 32)

  @partial(shard_map, mesh=mesh, in_specs=(P('i', 'j'), P('j', None)),
           out_specs=P('i', None))
  def matmul_basic(a_block, b_block):
    # a_block: f32[2, 8]
    # b_block: f32[8, 32]
    z_partialsum = jnp.dot(a_block, b_block)
    z_block = jax.lax.psum(z_partialsum, 'j')
    return z_block

  c = matmul_basic(a, b)  # c: f32[8, 32]
  return dict(mesh=mesh, a=a, b=b, c=c, matmul_basic=matmul_basic)

def reduce_scatter_cell(mesh, a, b):
  @partial(shard_map, mesh=mesh, in_specs=(P('i', 'j'), P('j', None)),
           out_specs=P('i', 'j'))
  def matmul_reduce_scatter(a_block, b_block):
    # c_partialsum: f32[8/X, 32]
    c_partialsum = jnp.matmul(a_block, b_block)
    # c_block: f32[8/X, 32/Y]
    c_block = jax.lax.psum_scatter(c_partialsum, 'j', scatter_dimension=1, tiled=True)
    return c_block

  c = matmul_reduce_scatter(a, b)
  return dict(c=c, matmul_reduce_scatter=matmul_reduce_scatter)

# ------------------------------ Rank-reducing vs rank-preserving maps over array axes ------------------------------

def f(x):  # (undefined on the page: a row f32[5] or a block f32[2,5] to f32[3,7], integer-valued)
  return jnp.sum(x) + jnp.arange(21.).reshape(3, 7) * jnp.max(x)

def rank_reducing_cell(xs, in_axes=[0]):  # noqa: B006  (the page's in_axes; xs: f32[8,5])
  lhs = pmap(f, in_axes=in_axes, out_axes=0)(xs)
  rhs = jnp.stack([f(x) for x in xs])
  return lhs, rhs, lhs == rhs

def rank_preserving_cell(y):  # y: f32[8,5]
  devices = np.array(jax.devices()[:4])
  m = Mesh(devices, ('i',))  # mesh.shape['i'] = 4

  lhs = shard_map(f, m, in_specs=P('i'), out_specs=P('i'))(y)
  rhs = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, 4)])
  return lhs, rhs

# ------------------ Controlling how each input is split (unconcatenated) and tiled with `in_specs` ------------------

def in_specs_cells(mesh):
  """The f1 and f2 blocks; `mesh` is the TL;DR block's (the page's f2 block tiles by its axis 'j')."""
  devices = np.array(jax.devices())
  m = Mesh(devices.reshape(4, 2), ('i', 'j'))

  @partial(shard_map, mesh=m, in_specs=P('i', None), out_specs=P('i', 'j'))
  def f1(x_block):
    print(x_block.shape)
    return x_block

  x1 = np.arange(12 * 12).reshape(12, 12)
  y = f1(x1)  # prints (3,12)
  y1 = y

  @partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P('i', 'j'))
  def f2(x_block):
    print(x_block.shape)
    return x_block

  x = np.arange(12 * 12).reshape(12, 12)
  x_ = jnp.tile(x, (1, mesh.shape['j']))  # x_ has shape (12, 24)  (the page: mesh.axis_size['j'])
  y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)
  return dict(m=m, f1=f1, f2=f2, x1=x1, y1=y1, x=x, x_=x_, y2=y)

# ------------ Controlling how each output assembled by concatenation, block transposition, and untiling ------------

def untiling_cells(m):
  zs = []
  x = jnp.array([[3.]])

  z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P('i', 'j'))()
  print(z)  # prints the same as jnp.tile(x, (4, 2))
  zs.append(z)

  z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P('i', None))()
  print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))
  zs.append(z)

  z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P(None, None))()
  print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x
  zs.append(z)
  return zs

def psum_untiling_cells(m):
  @partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P('i', None))
  def f3(x_block):
    return jax.lax.psum(x_block, 'j')

  x = np.arange(12 * 12).reshape(12, 12)
  y3 = f3(x)
  print(y3.shape)  # (12,6)

  @partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P(None, 'j'))
  def f4(x_block):
    return jax.lax.psum(x_block, 'i')

  x = np.arange(12 * 12).reshape(12, 12)
  y4 = f4(x)
  print(y4.shape)  # (3,12)


  @partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P(None, None))
  def f5(x_block):
    return jax.lax.psum(x_block, ('i', 'j'))

  y5 = f5(x)
  print(y5.shape)  # (3,6)
  return dict(x=x, f3=f3, y3=y3, f4=f4, y4=y4, f5=f5, y5=y5)
