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
# The code blocks of JAX's design document docs/jep/17111-shmap-transpose.md ("Efficient transposition of
# replication-inducing collectives", jax-ml/jax), in order, ported to kiln by changing imports only, where they are
# code that runs under JAX 0.10.2. The page proposed the design that `jax.shard_map` with `check_vma=True` (the
# default) now has; its "currently we get" transposes are what `check_vma=False` still gives.
# How the page's notation became code (the minimum): `shmap` is `jax.shard_map` (the page's name for it). Its
# examples "suppress the mesh argument ... inferred from context": the caller sets the mesh in context
# (`jax.set_mesh`), and the specs are passed by keyword (jax.shard_map takes no positional specs). Each example is a
# function of `shmap`, so that a test can pass `partial(jax.shard_map, check_vma=False)` for the page's "currently"
# behaviour. `predict` (the loss example's model) and `g` are undefined on the page: a linear model, and a linear
# map of a f32[3,4] block (2x; the page annotates g as f32[3,4] -> f32[], but then its `t(g)(psum(zbar * y, 'i'))`
# would not type-check). `t`, the page's notation for the function transpose, is `jax.linear_transpose` (at the
# cotangent's type: g keeps its operand's). `¿f1_transpose?` is `f1_transpose_efficient`, and each `t(...) = ...`
# formula is a named function. `pbroadcast` is JAX's `pvary` today, spelled `jax.lax.pcast(x, axis_name,
# to='varying')` (`jax.lax.pbroadcast` now names another collective: a broadcast from one device);
# `all_gather_invariant` is `all_gather(..., to='invarying')`. Two blocks have an unbalanced `)`, dropped. The table
# of device variance types is a function applying each collective as its Example column does (tiled, at the sizes
# the column shows: f32[16] over 8 devices scatters to f32[2]), and another takes its Transpose column (the
# transpose of each collective, taken inside a body).
# Left out: the `P(sum='i')` strawperson (a proposal, not an API); the blocks annotated with types such as
# `x:f32[3,4]{i}` (not Python; the tests check kiln.typeof against the table); `pscatter` (no public API in JAX
# 0.10.2). tests/multidevice/test_jep_shmap_transpose.py checks the blocks against NumPy (8 CPU devices);
# tests/examples/test_jep_shmap_transpose_against_jax.py runs them under kiln and JAX 0.10.2.

from functools import partial

import kiln as jax
import kiln.numpy as jnp
from kiln import lax
from kiln import shard_map as shmap
from kiln.lax import all_gather, psum, psum_scatter
from kiln.sharding import Mesh, PartitionSpec as P

# ------------------------------------------------ Motivation ------------------------------------------------

def predict(params, inputs):  # (the page leaves it undefined: a linear model)
  return jnp.dot(inputs, params)

def loss_cell():
  devices = jax.devices()  # 8 devices

  @partial(shmap, mesh=Mesh(devices, ('batch',)),
           in_specs=(P(None, None), P('batch', None)),
           out_specs=P())
  def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    local_loss = jnp.mean(jnp.sum(predictions - targets, -1))
    global_loss = lax.pmean(local_loss, 'batch')  # (the page has a `)` too many here)
    return global_loss
  return loss

def mesh_cell():
  """The examples' mesh, "inferred from context": 8 devices along 'i' (as the loss example's)."""
  return Mesh(jax.devices(), ('i',))

def g(x):  # (the page leaves g undefined: a linear map of a f32[3,4] block)
  return 2. * x

def t(f):
  """The page's `t` (function transpose) of a linear map of a block to a block of the same type, such as `g`."""
  return lambda ct: jax.linear_transpose(f, ct)(ct)[0]

# ------- Problem: efficient transpose of `psum` or `all_gather` depends on whether cotangents are invariant -------

def example1_cells(shmap=shmap):
  # Example 1: shmap involving psum and unmapped output with inefficient transpose
  f1 = shmap(lambda x: psum(g(x), 'i'),
             in_specs=P('i'), out_specs=P())

  # An efficient "transpose" of Example 1 (but don't transpose this again!)
  f1_transpose_efficient = shmap(t(g), in_specs=P(), out_specs=P('i'))

  # The transpose we currently get for Example 1 (which is fine to transpose again)
  f1_transpose_current = shmap(lambda ybar: t(g)(psum(ybar / 8, 'i')),
                               in_specs=P(), out_specs=P('i'))
  return f1, f1_transpose_efficient, f1_transpose_current

def example2_cells(shmap=shmap):
  # Example 2: shmap involving psum and *mapped* output with efficient transpose
  f2 = shmap(lambda x, y: psum(g(x), 'i') * y,
            in_specs=(P('i'), P('i')), out_specs=P('i'))

  # The transpose we currently get for Example 2 is efficient
  f2_transpose_current = shmap(lambda y, zbar: t(g)(psum(zbar * y, 'i')),
                               in_specs=(P('i'), P('i')), out_specs=P('i'))
  return f2, f2_transpose_current

def example3_cells(shmap=shmap):
  # Example 3: cursed identity
  cursed_identity = shmap(lambda x: x, in_specs=P(), out_specs=P())

  # Currently we get these inefficient transposes
  t_cursed_identity = shmap(lambda x: psum(x / 8, 'i'), in_specs=P(), out_specs=P())
  t_t_cursed_identity = shmap(lambda x: psum(psum(x / 8 / 8, 'i'), 'i'), in_specs=P(), out_specs=P())
  return cursed_identity, t_cursed_identity, t_t_cursed_identity

def example4_cells(shmap=shmap):
  # Example 4: all_gather to an unmapped output
  f4 = shmap(lambda x: all_gather(x, 'i'), in_specs=P('i'), out_specs=P())

  # Currently we get this inefficient transpose
  t_f4 = shmap(lambda ybar: psum_scatter(ybar / 8, 'i'), in_specs=P(), out_specs=P('i'))
  return f4, t_f4

def example5_cells(shmap=shmap):
  # Example 5: all_gather to a mapped output
  f5 = shmap(lambda x, y: all_gather(x, 'i') * y,
             in_specs=(P('i'), P('i')), out_specs=P('i'))

  # Currently we get this efficient transpose
  t_f5 = shmap(lambda y, zbar: psum_scatter(zbar * y, 'i'),
               in_specs=(P('i'), P('i')), out_specs=P('i'))
  return f5, t_f5

# ------------------------------------------------ Solutions ------------------------------------------------

def f4_better_cell(shmap=shmap):
  # Why didn't we just write it like this?
  f4_better = shmap(lambda x: x, in_specs=P('i'), out_specs=P('i'))
  return f4_better

# The page's `pbroadcast` (JAX's pvary today)
def pbroadcast(x, axis_name):
  return lax.pcast(x, axis_name, to='varying')

def full_solution_cells(shmap=shmap):
  # Example 1 transpose using device variance types (go ahead and transpose this again!)
  t_f1 = shmap(lambda ybar: t(g)(pbroadcast(ybar, 'i')),
               in_specs=P(), out_specs=P('i'))

  # Example 2 rewritten with explicit pbroadcast
  f2 = shmap(lambda x, y: pbroadcast(psum(g(x), 'i'), 'i') * y,
             in_specs=(P('i'), P('i')), out_specs=P('i'))

  # Example 2 transpose using device variance types
  t_f2_0 = shmap(lambda y, zbar: t(g)(pbroadcast(psum(zbar * y, 'i'), 'i')),
                 in_specs=(P('i'), P('i')), out_specs=P('i'))

  # Example 3 transpose using device variance types
  t_cursed_identity = shmap(lambda x: x, in_specs=P(), out_specs=P())
  t_t_cursed_identity = shmap(lambda x: x, in_specs=P(), out_specs=P())

  # Example 4 rewritten with explicit all_reduce_invariant (the page's all_gather_invariant)
  f4 = shmap(lambda x: all_gather(x, 'i', to='invarying'), in_specs=P('i'), out_specs=P())
  return t_f1, f2, t_f2_0, t_cursed_identity, t_t_cursed_identity, f4

def device_variance_table_cells(mesh_ij):
  """The table's Example column, on the examples' mesh in context ('i', 8 devices) and, for psum's row, on
  `mesh_ij` (axes 'i' and 'j'): what each collective returns, and jax.typeof of its operand and result."""
  types, values = [], []

  @partial(shmap, mesh=mesh_ij, in_specs=P(('i', 'j')), out_specs=P('j'))
  def psum_row(x):                  # x:f32[3]{i,j}
    y = psum(x, axis_name='i')     # y:f32[3]{j}
    types.append((str(jax.typeof(x)), str(jax.typeof(y))))
    return y

  @partial(shmap, in_specs=(P(), P('i'), P('i')), out_specs=P('i'))
  def rows(x3, x16, x2):            # x3:f32[3], x16:f32[16]{i}, x2:f32[2]{i}
    outs = [pbroadcast(x3, 'i'),
            lax.all_to_all(x16, 'i', 0, 0, tiled=True),
            lax.axis_index('i'),
            psum_scatter(x16, 'i', tiled=True),
            all_gather(x2, 'i', tiled=True),
            all_gather(x2, 'i', tiled=True, to='invarying')]  # all_gather_invariant
    operands = [x3, x16, None, x16, x2, x2]
    types.extend((None if a is None else str(jax.typeof(a)), str(jax.typeof(b))) for a, b in zip(operands, outs))
    return tuple(o.reshape(1, -1) for o in outs)

  def run(x_ij, x3, x16, x2):
    with jax.set_mesh(mesh_ij):  # (JAX wants shard_map's mesh to be the one in context)
      values.append(psum_row(x_ij))
    values.append(rows(x3, x16, x2))
    return types, values
  return run

def table_transposes_cell(shmap=shmap):
  """The table's Transpose column: inside a body, the transpose of each collective at its operand (x, varying
  along 'i'; w, invariant), applied to a cotangent of the result's shape."""
  def transpose(f, x, ct):
    return jax.linear_transpose(f, x)(ct)[0]

  @partial(shmap, in_specs=(P('i'), P(), P('i'), P()), out_specs=P('i'))
  def body(x, w, ct_varying, ct_invariant):  # x:f32[2]{i}, w:f32[2], the cotangents f32[16]
    outs = [transpose(lambda v: psum(v, 'i'), x, ct_invariant[:2]),          # psum: pbroadcast
            transpose(lambda v: pbroadcast(v, 'i'), w, ct_varying[:2]),      # pbroadcast: psum
            transpose(lambda v: all_gather(v, 'i', tiled=True), x, ct_varying),  # all_gather: psum_scatter
            transpose(lambda v: psum_scatter(v, 'i', tiled=True), ct_varying, x),  # psum_scatter: all_gather
            transpose(lambda v: all_gather(v, 'i', tiled=True, to='invarying'), x, ct_invariant)]  # pscatter
    return tuple(o.reshape(1, -1) for o in outs)
  return body
