# ruff: noqa: E111, E114, E302, E305, E402, F841, I001  (the page's cells: two-space indents, imports between cells, names a cell keeps)
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
# The code cells of JAX's docs/new_docs/201/placement.md ("Data placement", jax-ml/jax), in order, ported to kiln by
# changing imports only. The imports are at the top level, one per line (tests/examples/ported.py puts JAX's back);
# the page's config cell, `jax.config.update('jax_num_cpu_devices', 8)`, is config_cell, which the tests call first
# in a fresh process (JAX takes it only before its backends start; kiln's tests start with KILN_NUM_CPU_DEVICES=8).
# The page's other cells are functions, `..._cell`, one per cell, whose bodies are the cell's lines and which return
# what the cell shows (its last expression, the notebook's output) or computes; their prints are kept. A name a cell
# reads from an earlier one (`full`, `mesh_a`, `xa`, `a`, ...) is its parameter. Two cells are split at a line:
# the cell tagged raises-exception that puts `a` and `b` on two one-device meshes is committed_scalars_cell (its
# first two lines, which the next cell's `a + c` needs) and add_across_meshes_cell (`a + b`, which raises); the cell
# that compiles `f` with a cross-mesh device_put inside raises in jit_cross_mesh_cell. The pipeline runs at the
# page's sizes (8 microbatches of 256 x 256, 4 stages of 2 devices: fast on the CPU).
# Left out: `%xmode minimal` (IPython). tests/multidevice/test_docs_placement_201.py checks the cells against NumPy
# and the page's claims on 8 CPU devices; tests/examples/test_docs_placement_201_against_jax.py runs them under kiln
# and JAX 0.10.2.

import kiln as jax
import kiln.numpy as jnp
import numpy as np
from kiln.sharding import NamedSharding


def config_cell():
  jax.config.update('jax_num_cpu_devices', 8)


# ------------------------------------------------ Data placement ------------------------------------------------

def full_mesh_cell():
  full = jax.make_mesh((8,), ('x',))
  return full

def submeshes_cell(full):
  mesh_a = jax.make_mesh((4,), ('x',), devices=full.devices[:4])
  mesh_b = jax.make_mesh((4,), ('x',), devices=full.devices[4:])

  m0 = jax.make_mesh((1,), ('x',), devices=full.devices[:1])
  m1 = jax.make_mesh((1,), ('x',), devices=full.devices[1:2])
  return mesh_a, mesh_b, m0, m1


# ---------------------------------------- Default placement, and commitment -----------------------------------------

def default_placement_cell():
  x = jnp.arange(4.0)
  print(x.committed)
  print(x.sharding)
  return x

def device_put_cell(mesh_a):
  data = np.arange(8.0)
  xa = jax.device_put(data, NamedSharding(mesh_a, jax.P('x')))
  print(xa.committed)
  print(jax.typeof(xa))
  return xa

def committed_scalars_cell(m0, m1):
  a = jax.device_put(1.0, NamedSharding(m0, jax.P()))
  b = jax.device_put(2.0, NamedSharding(m1, jax.P()))
  return a, b

def add_across_meshes_cell(a, b):
  return a + b  # committed to different meshes!

def uncommitted_follows_cell(a):
  c = jnp.float32(3.0)   # uncommitted
  print((a + c).sharding)  # runs on m0, where `a` is committed
  return c


# -------------------------------------------- Moving data between meshes --------------------------------------------

def move_cell(xa, mesh_b):
  xb = jax.device_put(xa, NamedSharding(mesh_b, jax.P('x')))
  print(xb.sharding.mesh == mesh_b)
  return xb

def reorder_cell(full):
  mesh_rev = jax.make_mesh((8,), ('x',), devices=full.devices[::-1])

  x = jax.device_put(np.arange(8.0), NamedSharding(full, jax.P('x')))
  y = jax.device_put(x, NamedSharding(mesh_rev, jax.P('x')))  # same devices, new order

  def data_by_device(arr):
    return [float(s.data[0]) for s in sorted(arr.addressable_shards,
                                             key=lambda s: s.device.id)]

  print(data_by_device(x))  # what each of devices 0, 1, ..., 7 holds
  print(data_by_device(y))
  return mesh_rev, x, y

def jit_cross_mesh_cell(xa, mesh_b):
  @jax.jit
  def f(x):
    return jax.device_put(x, NamedSharding(mesh_b, jax.P('x')))

  return f(xa)  # error: can't move to a different mesh inside jit!

def pipeline_cell(full):
  stage_meshes = [jax.make_mesh((2,), ('x',), devices=full.devices[2*i:2*i+2])
                  for i in range(4)]

  @jax.jit
  def stage(x):
    return jnp.sin(x) + 1.0   # stand-in for real per-stage computation

  microbatches = [np.full((256, 256), float(i)) for i in range(8)]

  results = []
  for mb in microbatches:
    for m in stage_meshes:
      mb = jax.device_put(mb, NamedSharding(m, jax.P('x')))
      mb = stage(mb)
    results.append(mb)

  print(results[-1].sharding.mesh == stage_meshes[-1])
  return stage_meshes, results
