# ruff: noqa: E111, E114, E302, E305, E402, E702, E731, F401, F811, F841, I001  (the page's cells: two-space indents, redefinitions, imports between cells, lambdas, unused names, its unused numpy import)
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
# The 70 code cells of JAX's docs/new_docs/201/shard-map.md ("Manual parallelism with `shard_map`", jax-ml/jax
# cec06d116c), ported to kiln by changing imports only. The imports are written once at the top (the page repeats
# `import jax`, `import jax.numpy as jnp` and `from jax import lax` before some sections, and imports NamedSharding
# in its pipeline cell), one per line, so that tests/examples/ported.py can put JAX's back. The page's top-level
# statements are wrapped in one function per cell group (its comment names the cells, counted from 1) that returns
# what the cells display or compute; their prints are kept. The mesh a group sets in context with `jax.set_mesh`
# is left set, as on the page; the caller resets it (`jax.set_mesh(None)`). The state the page threads through the
# neural-network section (`params`, `batch`) is passed in and returned; the network's sizes are init_cell's
# parameters, the page's values by default (the tests run them: on 2 CPU cores the page takes ~10 s under kiln).
# Beside what the cells compute, the functions return the shard_mapped functions the prose talks about (the tests
# count their collectives), and vma_cells also calls the last cell's `f` (the tests check its values).
# Left out: the `python`-only reference snippets (`f_shmapped_ref`, `psum_ref`, ...: not code cells; the tests
# write them in NumPy) and the images. The cells that raise on the page (the out_specs bug, the scan with an
# unvarying carry) keep their `try/except` and return the exception, or None where nothing was raised.

from functools import partial

import kiln as jax
import kiln.numpy as jnp
from kiln import lax
from kiln.sharding import NamedSharding
from kiln.tree_util import tree_map, tree_all

import numpy as np


# ------------------------------------------------ Overview (cells 1-2) ------------------------------------------------

def config_cell():
  """Cell 1: JAX accepts it before its backends start only (the tests call it first in a fresh process)."""
  jax.config.update('jax_num_cpu_devices', 8)  # Use 8 CPU devices

Explicit = jax.sharding.AxisType.Explicit
Auto = jax.sharding.AxisType.Auto


# ------------------------------------ So, let's see a shard_map! (cells 3-7) ------------------------------------

def allclose(a, b):
  return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

def toy_matmul_cells():
  mesh = jax.make_mesh((4, 2), ('x', 'y'))
  jax.set_mesh(mesh)

  a = jax.device_put(jnp.arange( 8 * 16.).reshape(8, 16), jax.P('x', 'y'))
  b = jax.device_put(jnp.arange(16 *  4.).reshape(16, 4), jax.P('y', None))

  @jax.shard_map(in_specs=(jax.P('x', 'y'), jax.P('y', None)), out_specs=jax.P('x', None))
  def matmul_basic(a_block, b_block):
    # a_block: f32[2, 8]
    # b_block: f32[8, 4]
    c_partialsum = jnp.dot(a_block, b_block)
    c_block = jax.lax.psum(c_partialsum, 'y')
    # c_block: f32[2, 4]
    return c_block

  c = matmul_basic(a, b)   # c: f32[8, 4]

  ok = allclose(c, jnp.dot(a, b, out_sharding=jax.P('x', None)))

  jax.debug.visualize_array_sharding(c)

  a = jax.device_put(a, jax.P('x', 'y'))
  b = jax.device_put(b, jax.P('y', None))

  @jax.jit
  def matmul_reference(a, b):
    return jnp.dot(a, b, out_sharding=jax.P('x', None))

  c_ref = matmul_reference(a, b)
  ok_ref = allclose(c_ref, jnp.dot(a, b, out_sharding=jax.P('x', None)))

  print('a blocks:'); jax.debug.visualize_array_sharding(a)
  print('b blocks:'); jax.debug.visualize_array_sharding(b)
  print('c blocks:'); jax.debug.visualize_array_sharding(c)
  return dict(a=a, b=b, c=c, ok=ok, c_ref=c_ref, ok_ref=ok_ref, matmul_basic=matmul_basic)


# ------------------------------- Rank-reducing vs rank-preserving maps (cells 8-9) -------------------------------

def check_vmap_cell():
  def check_vmap(f, xs):
    ans = jax.vmap(f, in_axes=(0,), out_axes=0)(xs)
    expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
    print(allclose(ans, expected))
    return ans, expected  # (the tests read what the cell compared)

  return check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))

def check_shmap_cell():
  mesh = jax.make_mesh((4,), ('i',), (Auto,))  # mesh.shape['i'] = 4
  jax.set_mesh(mesh)

  def check_shmap(f, y):
    ans = jax.shard_map(f, in_specs=jax.P('i'), out_specs=jax.P('i'))(y)
    expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape['i'])])
    print(allclose(ans, expected))
    return ans, expected  # (the tests read what the cell compared)

  return check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))


# ------------------------------------ in_specs and out_specs (cells 10-14) ------------------------------------

def specs_cells():
  out = {}
  mesh = jax.make_mesh((4, 2), ('i', 'j'))
  jax.set_mesh(mesh)

  @jax.shard_map(in_specs=jax.P('i', None), out_specs=jax.P('i', 'j'))
  def f1(x_block):
    print(x_block.shape)  # prints (3, 12)
    return x_block

  x1 = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), jax.P('i', None))
  y = out['y1'] = f1(x1)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P('i', 'j'))
  def f2(x_block):
    print(x_block.shape)
    return x_block

  x = jnp.arange(12 * 12).reshape(12, 12)
  x_ = jnp.tile(x, (1, mesh.shape['j']))  # x_ has shape (12, 24)
  x_ = jax.device_put(x, jax.P('i', 'j'))
  y = out['y2'] = f2(x_)  # prints (3,12), and f1(x) == f2(x_)

  zs = out['untiled'] = []
  auto_mesh = jax.make_mesh((4, 2), ('i', 'j'), (Auto, Auto))
  with jax.set_mesh(auto_mesh):
    x = jnp.array([[3.]])

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=jax.P('i', 'j'))()
    print(z)  # prints the same as jnp.tile(x, (4, 2))
    zs.append(z)

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=jax.P('i', None))()
    print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))
    zs.append(z)

    z = jax.shard_map(lambda: x, in_specs=(), out_specs=jax.P(None, None))()
    print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x
    zs.append(z)
  out['mesh'], out['mesh_after_with'] = mesh, jax.sharding.get_mesh()  # (the tests: `with` put `mesh` back)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P('i', None))
  def f3(x_block):
    return jax.lax.psum(x_block, 'j')

  x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), jax.P('i', 'j'))
  y3 = out['y3'] = f3(x)
  print(y3.shape)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P(None, 'j'))
  def f4(x_block):
    return jax.lax.psum(x_block, 'i')

  x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), jax.P('i', 'j'))
  y4 = out['y4'] = f4(x)
  print(y4.shape)  # (3,12)


  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P(None, None))
  def f5(x_block):
    return jax.lax.psum(x_block, ('i', 'j'))

  y5 = out['y5'] = f5(x)
  print(y5.shape)  # (3,6)
  return out


# ------------------------------------ check_vma (cells 15-22) ------------------------------------

def vma_cells():
  out = {}
  mesh = jax.make_mesh((2,), ('i',))
  jax.set_mesh(mesh)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f(x):
    print(x)
    return 2 * x

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  out['double_varying'] = f(x)

  @jax.shard_map(in_specs=jax.P(), out_specs=jax.P())
  def f(x):
    print(x)
    return 2 * x

  x = jnp.arange(6.)
  out['double_invariant'] = f(x)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P())
  def f(x):
    y = jax.lax.psum(x, 'i')
    print(y)
    return y

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  out['psum'] = f(x)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P())
  def f(x):
    print(jax.typeof(x))  # f32[3]{V:i}
    y = jax.lax.psum(x, 'i')
    print(jax.typeof(y))  # f32[3]
    return y

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  out['psum_typed'] = f(x)

  mesh = jax.make_mesh((4, 2), ('i', 'j'))
  jax.set_mesh(mesh)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P('i'))
  def f(x):
    print(jax.typeof(x))  # f32[2,2]{V:(i,j)}
    y = jax.lax.psum(x, 'j')
    assert jax.typeof(y).manual_axis_type.varying == {'i'}
    print(jax.typeof(y))  # f32[2,2]{V:i}
    return y

  x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('i', 'j'))
  out['psum_j'] = f(x)

  mesh = jax.make_mesh((2,), ('i',))
  jax.set_mesh(mesh)

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  out['out_specs_bug'] = None
  try:
    y = jax.shard_map(lambda x: x, in_specs=jax.P('i'), out_specs=jax.P())(x)
  except Exception as e:
    print(e)
    out['out_specs_bug'] = e

  @jax.shard_map(in_specs=jax.P(), out_specs=None)
  def f(x):
    print(jax.typeof(x))  # f32[6]
    y = jax.lax.pcast(x, 'i', to='varying')
    print(jax.typeof(y))  # f32[6]{V:i}

  x = jnp.arange(6.)
  out['pcast'] = f(x)

  @jax.shard_map(in_specs=(jax.P('i'), jax.P()), out_specs=jax.P('i'))
  def f(x, y):
    return x * y

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  y = jnp.arange(3.)
  out['jaxpr'] = jax.jit(f).trace(x, y).jaxpr
  print(out['jaxpr'])
  out['mul'] = f(x, y)  # (not on the page: the tests check what f computes too)
  return out


# ------------------------------------ pcast in a scan (cells 23-24) ------------------------------------

def scan_vma_cells():
  out = {}
  mesh = jax.make_mesh((2,), ('i',))
  jax.set_mesh(mesh)

  @jax.shard_map(in_specs=(jax.P('i'), jax.P()), out_specs=jax.P('i'))
  def f(x, y):
    def body(carry, _):
      c1, c2 = carry
      return (c2, c1), ()  # swap the carry
    (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
    return x_, y_

  x = jnp.arange(6.)
  y = jnp.arange(3.)

  out['error'] = None
  try:
    out['unfixed'] = f(x, y)
  except Exception as e:
    print(e)
    out['error'] = e

  mesh = jax.make_mesh((2,), ('i',))
  jax.set_mesh(mesh)

  @jax.shard_map(in_specs=(jax.P('i'), jax.P()), out_specs=jax.P('i'))
  def f(x, y):
    def body(carry, _):
      c1, c2 = carry
      return (c2, c1), ()  # swap the carry

    y = jax.lax.pcast(y, 'i', to='varying')  # apply pcast to fix the error
    (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
    return x_, y_

  x = jax.device_put(jnp.arange(6.), jax.P('i'))
  y = jnp.arange(3.)

  out['fixed'] = f(x, y)
  return out


# ------------------------------------ unreduced and reduced (cell 25) ------------------------------------

def unreduced_reduced_cell():
  mesh = jax.make_mesh((2,), ('i',))
  jax.set_mesh(mesh)

  x_sharded = jax.device_put(jnp.arange(8.), jax.P('i'))
  x_replicated = jnp.arange(4.)
  x_unreduced = jnp.einsum('i,i->', x_sharded, x_sharded,
                           out_sharding=jax.P(unreduced={'i'}))
  x_reduced = jax.reshard(x_replicated, jax.P(reduced={'i'}))

  @jax.shard_map(in_specs=(jax.P('i'), jax.P(), jax.P(unreduced={'i'}),
                           jax.P(reduced={'i'})),
                 out_specs=jax.P('i'))
  def f(a, b, c, d):
    print(jax.typeof(a))  # f32[4]{V:i}
    print(jax.typeof(b))  # f32[4]
    print(jax.typeof(c))  # f32[]{U:i}
    print(jax.typeof(d))  # f32[4]{R:i}
    return a

  _ = f(x_sharded, x_replicated, x_unreduced, x_reduced)
  return _


# ------------------------------------ Collectives tutorial (cells 26-37) ------------------------------------

def collectives_cells():
  out = {}
  mesh1d = jax.make_mesh((4,), ('i',), (Auto,))
  jax.set_mesh(mesh1d)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P(None))
  def f1(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum(x_block, 'i')
    print('AFTER:\n', y_block)
    return y_block

  x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
  y = out['f1'] = f1(x)
  print('FINAL RESULT:\n', y)

  mesh2d = jax.make_mesh((2, 2), ('i', 'j'), (Auto, Auto))
  jax.set_mesh(mesh2d)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P(None, 'j'))
  def f2(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum(x_block, 'i')
    print('AFTER:\n', y_block)
    return y_block

  y = out['f2'] = f2(jnp.arange(16).reshape(4, 4))
  print('FINAL RESULT:\n', y)

  @jax.shard_map(in_specs=jax.P('i', 'j'), out_specs=jax.P(None, None))
  def f3(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum(x_block, ('i', 'j'))
    print('AFTER:\n', y_block)
    return y_block

  y = out['f3'] = f3(jnp.arange(16).reshape(4, 4))
  print('FINAL RESULT:\n', y)

  jax.set_mesh(mesh1d)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f4(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.all_gather(x_block, 'i', tiled=True)
    print('AFTER:\n', y_block)
    return y_block

  x = jnp.array([3, 9, 5, 2])
  y = out['f4'] = f4(x)
  print('FINAL RESULT:\n', y)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f5(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.all_gather(x_block, 'i', tiled=False)
    print('AFTER:\n', y_block)
    return y_block

  y = out['f5'] = f5(x)
  print('FINAL RESULT:\n', y)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f6(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum_scatter(x_block, 'i', tiled=True)
    print('AFTER:\n', y_block)
    return y_block

  x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
  y = out['f6'] = f6(x)
  print('FINAL RESULT:\n', y)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f7(x_block):
    sz = jax.lax.axis_size('i')
    print('BEFORE:\n', x_block)
    y_block = jax.lax.ppermute(x_block, 'i', [(i, (i + 1) % sz) for i in range(sz)])
    print('AFTER:\n', y_block)
    return y_block

  y = out['f7'] = f7(jnp.arange(8))
  print('FINAL RESULT:\n', y)

  def psum_scatter(x, axis_name, *, tiled=False):
    size = jax.lax.axis_size(axis_name)
    idx = jax.lax.axis_index(axis_name)  # function instance index along axis_name
    if tiled:
      x = x.reshape(size, -1, *x.shape[1:])  # split leading axis
    shift = partial(jax.lax.ppermute, axis_name=axis_name,
                    perm=[(i, (i - 1) % size) for i in range(size)])
    for i in range(1, size):
      update = shift(x[(idx + i) % size])
      x = x.at[(idx + i + 1) % size].add(update)
    return x[idx]

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f8(x_block):
    print('BEFORE:\n', x_block)
    y_block = psum_scatter(x_block, 'i', tiled=True)
    print('AFTER:\n', y_block)
    return y_block

  x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
  y = out['f8'] = f8(x)
  print('FINAL RESULT:\n', y)

  @jax.shard_map(in_specs=jax.P('i'), out_specs=jax.P('i'))
  def f9(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.all_to_all(x_block, 'i', split_axis=0, concat_axis=0,
                                 tiled=True)
    print('AFTER:\n', y_block)
    return y_block

  x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
  y = out['f9'] = f9(x)
  print('FINAL RESULT:\n', y)
  out['fns'] = dict(f1=f1, f2=f2, f3=f3, f4=f4, f5=f5, f6=f6, f7=f7, f8=f8, f9=f9)  # (for the tests' jaxprs)
  return out


# ---------------------------------- Toy examples: matrix multiplies (cells 38-53) ----------------------------------

def matmul_cells():
  out = {}
  mesh = jax.make_mesh((4,), ('i',), (Auto,))
  jax.set_mesh(mesh)

  def device_put(x, pspec):
    return jax.device_put(x, pspec)

  # Example 1: all-gather on one side
  lhs_spec = jax.P('i', None)
  lhs = device_put(jax.random.normal(jax.random.key(0), (8, 8)), lhs_spec)

  rhs_spec = jax.P('i', None)
  rhs = device_put(jax.random.normal(jax.random.key(1), (8, 4)), rhs_spec)
  out['lhs'], out['rhs'] = lhs, rhs

  @jax.jit
  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_allgather(lhs_block, rhs_block):
    rhs = jax.lax.all_gather(rhs_block, 'i', tiled=True)
    return lhs_block @ rhs

  o = out['allgather'] = matmul_allgather(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))

  @jax.jit
  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_allgather_overlapped(lhs_block, rhs_block):
    size = jax.lax.axis_size('i')
    idx = jax.lax.axis_index('i')
    shift = partial(jax.lax.ppermute, axis_name='i',
                    perm=[(i, (i + 1) % size) for i in range(size)])

    B = lhs_block.shape[1] // size
    lhs_blocks = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)

    out_block = lhs_blocks(idx) @ rhs_block
    for i in range(1, size):
      rhs_block = shift(rhs_block)
      out_block += lhs_blocks((idx - i) % size) @ rhs_block
    return out_block

  o = out['allgather_overlapped'] = matmul_allgather_overlapped(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))

  @jax.jit
  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_allgather_overlapped_bidi(lhs_block, rhs_block):
    size = jax.lax.axis_size('i')
    idx = jax.lax.axis_index('i')
    shift_up = partial(jax.lax.ppermute, axis_name='i',
                       perm=[(i, (i + 1) % size) for i in range(size)])
    shift_dn = partial(jax.lax.ppermute, axis_name='i',
                       perm=[(i, (i - 1) % size) for i in range(size)])

    B = lhs_block.shape[1] // size // 2  # half-size blocks
    lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2*i+hi) * B, B, 1)

    def block_matmul(rhs_lo, rhs_hi, i_lo, i_hi):
      lhs_lo = jnp.pad(lhs_blocks(i_lo, 0), [(0, 0), (0, B)])
      lhs_hi = jnp.pad(lhs_blocks(i_hi, 1), [(0, 0), (B, 0)])
      rhs_lo = jnp.pad(rhs_lo, [(0, B), (0, 0)])
      rhs_hi = jnp.pad(rhs_hi, [(B, 0), (0, 0)])
      return (lhs_lo + lhs_hi) @ (rhs_lo + rhs_hi)

    rhs_block_lo, rhs_block_hi = jnp.split(rhs_block, 2, axis=0)
    out_block = block_matmul(rhs_block_lo, rhs_block_hi, idx, idx)
    for i in range(1, size):
      rhs_block_lo = shift_up(rhs_block_lo)
      rhs_block_hi = shift_dn(rhs_block_hi)
      out_block += block_matmul(rhs_block_lo, rhs_block_hi,
                                (idx - i) % size, (idx + i) % size)
    return out_block

  o = out['allgather_overlapped_bidi'] = matmul_allgather_overlapped_bidi(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))

  # Example 2: psum_scatter the result
  lhs_spec = jax.P(None, 'i')
  lhs = device_put(lhs, lhs_spec)

  rhs_spec = jax.P('i', None)
  rhs = device_put(rhs, rhs_spec)
  out['lhs2'], out['rhs2'] = lhs, rhs

  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_psumscatter(lhs_block, rhs_block):
    out_summand = lhs_block @ rhs_block
    return jax.lax.psum_scatter(out_summand, 'i', tiled=True)

  o = out['psumscatter'] = matmul_psumscatter(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))

  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_psumscatter_overlapped(lhs_block, rhs_block):
    size = jax.lax.axis_size('i')
    idx = jax.lax.axis_index('i')
    shift = partial(jax.lax.ppermute, axis_name='i',
                    perm=[(i, (i - 1) % size) for i in range(size)])
    lhs_block = lhs_block.reshape(size, -1, lhs_block.shape[1])  # split 1st axis

    out_summand = lhs_block[(idx + 1) % size] @ rhs_block
    for i in range(1, size):
      out_summand = shift(out_summand)
      out_summand += lhs_block[(idx + i + 1) % size] @ rhs_block
    return out_summand

  o = out['psumscatter_overlapped'] = matmul_psumscatter_overlapped(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))

  @jax.shard_map(in_specs=(lhs_spec, rhs_spec),
                 out_specs=rhs_spec)
  def matmul_psumscatter_overlapped_bidi(lhs_block, rhs_block):
    size = jax.lax.axis_size('i')
    idx = jax.lax.axis_index('i')
    shift_up = partial(jax.lax.ppermute, axis_name='i',
                       perm=[(i, (i + 1) % size) for i in range(size)])
    shift_dn = partial(jax.lax.ppermute, axis_name='i',
                       perm=[(i, (i - 1) % size) for i in range(size)])

    B = lhs_block.shape[0] // size // 2  # half-size blocks
    lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2*i+hi) * B, B, 0)

    out_summand_lo = lhs_blocks((idx - 1) % size, 0) @ rhs_block
    out_summand_hi = lhs_blocks((idx + 1) % size, 1) @ rhs_block
    for i in range(1, size):
      out_summand_lo = shift_up(out_summand_lo)
      out_summand_hi = shift_dn(out_summand_hi)
      out_summand_lo += lhs_blocks((idx - i - 1) % size, 0) @ rhs_block
      out_summand_hi += lhs_blocks((idx + i + 1) % size, 1) @ rhs_block
    return jnp.concatenate([out_summand_lo, out_summand_hi])

  o = out['psumscatter_overlapped_bidi'] = matmul_psumscatter_overlapped_bidi(lhs, rhs)
  print(jnp.allclose(o, lhs @ rhs, atol=1e-3, rtol=1e-3))
  out['fns'] = dict(allgather=matmul_allgather, allgather_overlapped=matmul_allgather_overlapped,
                    allgather_overlapped_bidi=matmul_allgather_overlapped_bidi, psumscatter=matmul_psumscatter,
                    psumscatter_overlapped=matmul_psumscatter_overlapped,
                    psumscatter_overlapped_bidi=matmul_psumscatter_overlapped_bidi)  # (for the tests' jaxprs)
  return out


# ------------------------------------ Toy examples: neural networks (cells 54-70) ------------------------------------

def predict(params, inputs):
  for W, b in params:
    outputs = jnp.dot(inputs, W) + b
    inputs = jax.nn.relu(outputs)
  return outputs

def loss(params, batch):
  inputs, targets = batch
  predictions = predict(params, inputs)
  return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))

def init_layer(key, n_in, n_out):
  k1, k2 = jax.random.split(key)
  W = jax.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
  b = jax.random.normal(k2, (n_out,))
  return W, b

def init(key, layer_sizes, batch_size):
  key, *keys = jax.random.split(key, len(layer_sizes))
  params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

  key, *keys = jax.random.split(key, 3)
  inputs = jax.random.normal(keys[0], (batch_size, layer_sizes[0]))
  targets = jax.random.normal(keys[1], (batch_size, layer_sizes[-1]))

  return params, (inputs, targets)

def init_cell(layer_sizes=(784, 128, 128, 128, 128, 128, 8), batch_size=32):
  layer_sizes = list(layer_sizes)  # (the page: [784, 128, 128, 128, 128, 128, 8] and 32, this function's defaults)

  params, batch = init(jax.random.key(0), layer_sizes, batch_size)
  return params, batch

def data_parallel_cells(params, batch):
  out = {}
  mesh = jax.make_mesh((8,), ('batch',))
  jax.set_mesh(mesh)

  # replicate initial params on all devices, shard data batch over devices
  batch = jax.device_put(batch, jax.P('batch'))
  params = jax.device_put(params, jax.P())

  # adapt the loss function to sum the losses across devices
  @jax.shard_map(out_specs=jax.P())
  def loss_dp(params, local_batch):
    inputs, targets = local_batch
    predictions = predict(params, inputs)  # use reference 'predict`
    local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
    return jax.lax.pmean(local_loss, 'batch')

  out['loss'], out['loss_dp'] = jax.jit(loss)(params, batch), jax.jit(loss_dp)(params, batch)
  print(out['loss'])
  print(out['loss_dp'])

  def allclose(a, b):
    return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

  out['grad'] = jax.jit(jax.grad(loss_dp))(params, batch)
  print(allclose(jax.jit(jax.grad(loss))(params, batch),
                 out['grad']))
  out['loss_dp_fn'] = loss_dp  # (for the tests' jaxprs)
  return out, params, batch

def fsdp_cells(params, batch):
  out = {}
  # shard data batch *and params* over devices
  mesh = jax.make_mesh((4,), ('batch',))
  jax.set_mesh(mesh)
  batch = jax.device_put(batch, jax.P('batch'))
  params = jax.device_put(params, jax.P('batch'))

  # adapt the prediction function to gather weights just before their use,
  # and to re-gather them on the backward pass (rather than saving them)
  @partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
  def predict_fsdp(params_frag, inputs):
    for W_frag, b_frag in params_frag:
      W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
      b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
      outputs = jnp.dot(inputs, W) + b
      inputs = jax.nn.relu(outputs)
    return outputs

  @jax.shard_map(out_specs=jax.P())
  def loss_fsdp(local_params, local_batch):
    inputs, targets = local_batch
    predictions = predict_fsdp(local_params, inputs)
    local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
    return jax.lax.pmean(local_loss, 'batch')

  repl_params = jax.device_put(params, jax.P())
  repl_batch = jax.device_put(batch, jax.P())
  out['loss'], out['loss_fsdp'] = jax.jit(loss)(repl_params, repl_batch), jax.jit(loss_fsdp)(params, batch)
  print(out['loss'])
  print(out['loss_fsdp'])

  out['grad'] = jax.jit(jax.grad(loss_fsdp))(params, batch)
  print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
                 out['grad']))
  out['loss_fsdp_fn'] = loss_fsdp  # (for the tests' jaxprs)
  return out, params, batch

def tp_cells(params, batch):
  mesh = jax.make_mesh((8,), ('feats',))
  jax.set_mesh(mesh)

  batch = jax.device_put(batch, jax.P(None, 'feats'))
  params = jax.device_put(params, jax.P('feats'))

  def predict_tp(params, inputs):
    for W, b in params:
      outputs = gemm_tp(inputs, W, b)
      inputs = jax.nn.relu(outputs)
    return outputs

  @jax.shard_map(in_specs=(jax.P(None, 'feats'), jax.P('feats', None), jax.P('feats')),
                 out_specs=jax.P(None, 'feats'))
  def gemm_tp(inputs, W, b):
    block_result = jnp.dot(inputs, W)
    return jax.lax.psum_scatter(block_result, 'feats',
                                scatter_dimension=1, tiled=True) + b

  def loss_tp(params, batch):
    inputs, targets = batch
    predictions = predict_tp(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))  # NOTE psum!

  # (the page defines loss_tp and does not call it: the tests do, through what this returns)
  return loss_tp, params, batch

def fsdp_tp_cells(params, batch):
  out = {}
  mesh = jax.make_mesh((4, 2), ('batch', 'feats'))
  jax.set_mesh(mesh)

  batch = jax.device_put(batch, jax.P('batch', 'feats'))
  params = jax.device_put(params, jax.P(('feats', 'batch')))

  # mostly same as previous predict_fsdp definition, except we call gemm_tp
  @partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
  def predict_fsdp_tp(params_frag, inputs):
    for W_frag, b_frag in params_frag:
      W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
      b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
      block_result = jnp.dot(inputs, W)
      outputs = jax.lax.psum_scatter(block_result, 'feats',
                                     scatter_dimension=1, tiled=True) + b
      inputs = jax.nn.relu(outputs)
    return outputs

  @jax.shard_map(in_specs=(jax.P(('feats', 'batch')), jax.P('batch', 'feats')),
                 out_specs=jax.P())
  def loss_fsdp_tp(local_params, local_batch):
    inputs, targets = local_batch
    predictions = predict_fsdp_tp(local_params, inputs)
    sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), 'feats')
    return jax.lax.pmean(jnp.mean(sq_err), 'batch')

  repl_params = jax.device_put(params, jax.P())
  repl_batch = jax.device_put(batch, jax.P())
  out['loss'], out['loss_fsdp_tp'] = jax.jit(loss)(repl_params, repl_batch), jax.jit(loss_fsdp_tp)(params, batch)
  print(out['loss'])
  print(out['loss_fsdp_tp'])

  out['grad'] = jax.jit(jax.grad(loss_fsdp_tp))(params, batch)
  print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
                 out['grad']))
  out['loss_fsdp_tp_fn'] = loss_fsdp_tp  # (for the tests' jaxprs)
  return out, params, batch

def pipeline_cells(params, batch, batch_size=32):
  out = {}
  L = len(params) - 2        # num layers, excluding first and last
  N = batch_size             # batch size
  F = params[0][0].shape[1]  # num features

  # choose some pipeline parameters
  S = 2      # number of stages
  B = 8      # size of each microbatch
  assert L % S == 0, "S (number of stages) must divide L (number of inner layers)"

  # compute some useful quantities
  M, ragged = divmod(N, B)  # M is number of microbatches
  assert not ragged, "B (size of each microbatch) must divide total batch size"
  K, ragged = divmod(M, S)  # K is microbatches per stage
  assert not ragged, "S (number of stages) must divide number of microbatches"
  print(f'{S} stages, {L // S} layer(s) per stage, {L} pipelined layers total')
  print(f'{B} examples per microbatch, {M} microbatches total')

  mesh = jax.make_mesh((S,), ('stages',), (Auto,))

  def predict_pp(params, inputs):
    (W_first, b_first), inner_params, (W_last, b_last) = params
    inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
    inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]),
                          inner_params, inputs)
    outputs = jnp.dot(inputs, W_last) + b_last
    return outputs

  @jax.shard_map(in_specs=((jax.P(), jax.P('stages'), jax.P()), jax.P('stages')), out_specs=jax.P())
  def loss_pp(params, batch):
    inputs, targets = batch
    predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
    local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
    return jax.lax.pmean(local_loss, 'stages')

  def spmd_pipeline(fn, stage_params, inputs):
    stage = jax.lax.axis_index('stages')
    outputs = jnp.zeros_like(inputs) * jnp.nan
    state = jnp.zeros((L // S, B, F)) * jnp.nan
    for i in range(M+L-1):
      state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
      state = jax.vmap(fn)(stage_params, state)
      outputs = outputs.at[(i-L+1) % K].set(jnp.where(stage == S-1, state[-1], outputs[(i-L+1) % K]))
      state, inputs, outputs = shift(i, state, inputs, outputs)
    outputs = jax.lax.ppermute(outputs, 'stages', [(i, (i+1) % S) for i in range(S)])
    return outputs

  def shift(i, state, inputs, outputs):
    sh = lambda x, d: jax.lax.ppermute(x, 'stages', [(i, (i+d) % S) for i in range(S)])
    state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
    if (i % K) == (-1 % K):
      inputs = sh(inputs, +1)
    if ((i-L+1) % K) == (-1 % K):
      outputs = sh(outputs, +1)
    return state, inputs, outputs

  first_params, *inner_params, last_params = params

  Ws, bs = zip(*inner_params)
  params_stacked = jnp.stack(Ws), jnp.stack(bs)
  first_params = jax.device_put(first_params, NamedSharding(mesh, jax.P()))
  params_stacked = jax.device_put(params_stacked, NamedSharding(mesh, jax.P('stages')))
  last_params = jax.device_put(last_params, NamedSharding(mesh, jax.P()))
  params_ = first_params, params_stacked, last_params

  batch_ = jax.device_put(batch, NamedSharding(mesh, jax.P('stages')))

  jax.set_mesh(mesh)
  out['loss_pp'] = jax.jit(loss_pp)(params_, batch_)
  print(out['loss_pp'])

  _ = out['grad'] = jax.jit(jax.grad(loss_pp))(params_, batch_)   # don't crash
  out['params_'], out['batch_'] = params_, batch_
  return out
