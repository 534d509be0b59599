# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells, lambdas)
# Copyright 2021 The JAX Authors.
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
# The code cells of JAX's docs/parallel.md ("Distributed arrays and automatic parallelization", jax-ml/jax
# cec06d116c), ported to kiln by changing imports only. The imports stay at the top level, where the page has them,
# so that tests/examples/ported.py can put JAX's back; the page's class cells stay at the top level too. Its other
# top-level statements are wrapped in one function per cell (a few short neighbours share one), in the page's
# order, that returns what the cell computes (its prints are kept); the values the page threads from cell to cell
# (`x`, `y`, the mesh in context) are passed in and returned. Each function sets the mesh in context as the page
# does at that point; the caller resets it (`jax.set_mesh(None)`). Cells that raise keep their `try/except` and
# return the error (None where nothing was raised).
# Changed besides imports: the page's `from jax.sharding import auto_axes, explicit_axes` becomes a lookup of
# `jax.sharding.auto_axes` / `jax.sharding.explicit_axes` in the three cells that use them, so that this module
# loads under kiln, which has neither (README "Differences from JAX": kiln's avals carry no sharding and all of
# its mesh axes behave as Auto); under kiln those cells raise AttributeError when they run.
# Also kiln lacks (the cells are kept; under kiln they raise): `jax.typeof(x).sharding` (AttributeError) and
# unreduced axes (`jax.P(..., unreduced={'Y'})`: NotImplementedError).

from __future__ import annotations
import enum

import kiln as jax
import kiln.numpy as jnp
jax.config.update('jax_num_cpu_devices', 8)


# -------------------------------------------------- a quick example --------------------------------------------------

def quick_example_cells():
  out = {}
  jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # explicit mode by default

  x = jnp.arange(8 * 4.).reshape(8, 4)
  x = jax.device_put(x, jax.P('X', 'Y'))
  print(jax.typeof(x))  # f32[8@X, 4@Y]
  out['x'], out['x_type'] = x, jax.typeof(x)

  jax.debug.visualize_array_sharding(x)

  y = jnp.sin(x).T
  print(jax.typeof(y))  # f32[4@Y, 8@X]
  out['y'], out['y_type'] = y, jax.typeof(y)
  return out


# ----------------------------------- A `Mesh` is a grid of devices with named axes -----------------------------------

class AbstractMesh:
  axis_sizes: tuple[int, ...]
  axis_names: tuple[str, ...]
  axis_types: tuple[AxisType, ...]

class AxisType(enum.Enum):
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

# A concrete mesh additionally includes physical device objects with e.g.
# precise coordinates:

import numpy as np

class Mesh:
  devices: np.ndarray[jax.Device]
  axis_names: tuple[str, ...]
  axis_types: tuple[AxisType, ...]

  @property
  def axis_sizes(self) -> tuple[int, ...]:
    return self.devices.shape

def make_mesh_cell():
  mesh = jax.make_mesh((4, 2), ('X', 'Y'))
  print(mesh)
  return mesh

def set_mesh_cell(mesh):
  jax.set_mesh(mesh)

def abstract_mesh_cell(x):
  @jax.jit
  def f(x):
    abstract_mesh = jax.sharding.AbstractMesh((8,), ('A',), (jax.sharding.AxisType.Explicit,))
    with jax.sharding.use_abstract_mesh(abstract_mesh):
      y = jax.reshard(x, jax.P('A', None))
      return y * 2

  z = f(x)
  print(jax.typeof(z))  # f32[8@A, 4]
  return z, jax.typeof(z)


# ------------------------- A `Sharding` describes how array values are laid out over a `Mesh` -------------------------

def sharding_cell(x):
  print(x.sharding)
  jax.debug.visualize_array_sharding(x)

def x_shards_cell(x):
  for s in x.addressable_shards:
    print(s.device, s.data, sep='\n', end='\n\n')

def device_put_yx_cell(x):
  y = jax.device_put(x, jax.P('Y', 'X'))
  print(y.sharding)
  jax.debug.visualize_array_sharding(y)
  return y

def device_put_x_none_cell(x):
  y = jax.device_put(x, jax.P('X', None))
  print(y.sharding)
  jax.debug.visualize_array_sharding(y)
  return y

def y_shards_cell(y):
  for s in y.addressable_shards:
    print(s.device, s.data, sep='\n', end='\n\n')

def device_put_tuple_cell(x):
  y = jax.device_put(x, jax.P(('X', 'Y')))
  print(y.sharding)
  jax.debug.visualize_array_sharding(y)
  return y

def unreduced_cell(x):
  y = jax.device_put(x, jax.P('X', None, unreduced={'Y'}))
  print(y.sharding)
  return y

# (the page's next cell, the shards of the unreduced `y`, is `y_shards_cell` again)

def mesh2_cell(x, y):
  mesh2 = jax.make_mesh((8,), ('A',))
  z = jax.device_put(x, jax.NamedSharding(mesh2, jax.P('A', None)))
  print(z.sharding)
  print(y.sharding)
  return z


# --------------------------- Explicit sharding mode makes sharding queryable at trace-time ---------------------------

def typeof_sharding_cell(x):
  print(jax.typeof(x).sharding)

def jit_typeof_sharding_cell(x):
  jax.jit(lambda x: print(jax.typeof(x).sharding))(x)

def propagation_cell():
  arg0 = jax.device_put(np.arange(4).reshape(4, 1), jax.P("X", None))
  arg1 = jax.device_put(np.arange(8).reshape(1, 8), jax.P(None, "Y"))

  result = arg0 + arg1

  print(f"{jax.typeof(arg0)=!s}")
  print(f"{jax.typeof(arg1)=!s}")
  print(f"{jax.typeof(result)=!s}")
  return arg0, arg1, result

def add_arrays_cell(arg0, arg1, result):
  @jax.jit
  def add_arrays(x, y):
    ans = x + y
    print(f"{jax.typeof(arg0)=!s}")
    print(f"{jax.typeof(arg1)=!s}")
    print(f"{jax.typeof(result)=!s}")
    return ans

  return add_arrays(arg0, arg1)

def random_normal_cell():
  x = jax.random.normal(jax.random.key(0), (8, 4),
                        out_sharding=jax.P('X', 'Y'))
  print(jax.typeof(x))
  return x

def sum_cell(x):
  y = x.sum(0)
  print(jax.typeof(y))
  return y

def all_reduce_cell(x):
  compile_txt = jax.jit(lambda x: x.sum(0)).lower(x).compile().as_text()
  print('all-reduce(' in compile_txt)
  return 'all-reduce(' in compile_txt


# ----------------------- Result shardings follow simple rules, or error and require annotation -----------------------

def dot_error_cell():
  out = {}
  x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P(None, 'X'))
  y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

  out['x'], out['y'], out['error'] = x, y, None
  try:
    out['dot'] = jnp.dot(x, y)
  except Exception as e:
    print("ERROR!")
    print(e)
    out['error'] = e
  return out

def dot_out_sharding_cell(x, y):
  z = jnp.dot(x, y, out_sharding=jax.P('X', None))

  print(jax.typeof(z))
  return z


# ------------------- With `@auto_axes` the compiler chooses shardings within the decorated function -------------------

# from jax.sharding import auto_axes, explicit_axes  (looked up in the cells that use them: kiln has neither)

def mismatched_add_cell():
  out = {}
  x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", None))
  y = jax.device_put(np.arange(16).reshape(4, 4), jax.P(None, "X"))

  out['x'], out['y'], out['error'] = x, y, None
  try:
    out['sum'] = x + y
  except Exception as e:
    print("ERROR!")
    print(e)
    out['error'] = e
  return out

def add2_cell(x, y):
  auto_axes = jax.sharding.auto_axes

  @auto_axes
  def add2(x, y):
    print("We're in auto-sharding mode here. This is the current mesh:\n"
          f"{jax.sharding.get_abstract_mesh()}")
    return x + y

  result = add2(x, y, out_sharding=jax.P("X", None))
  print(f"Result type: {jax.typeof(result)}")
  return result


# ----------------------- Auto sharding mode decides shardings automatically during compilation -----------------------

def auto_mesh_cell():
  Auto = jax.sharding.AxisType.Auto
  auto_mesh = jax.make_mesh((4, 2), ('X', 'Y'), (Auto, Auto))
  jax.set_mesh(auto_mesh)

  x = jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X'))
  y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

  z = jnp.dot(x, y)  # not an error!
  return x, y, z

def auto_sharding_print_cell(z):
  print(z.sharding)  # works at the top-level only (i.e. outside `jit`)

def with_sharding_constraint_cell(x, y):
  @jax.jit
  def f(x, y):
    z = jnp.dot(x, y)
    z = jax.lax.with_sharding_constraint(z, jax.P('X', None))
    return z

  z = f(x, y)
  print(z.sharding)
  return z

def explicit_axes_cell():
  explicit_axes = jax.sharding.explicit_axes

  @explicit_axes
  def explicit_g(y):
    print(f'mesh inside g: {jax.sharding.get_abstract_mesh()}')
    print(f'y.sharding inside g: {jax.typeof(y) = }')
    z = y * 2
    print(f'z.sharding inside g: {jax.typeof(z) = }', end='\n\n')
    return z

  @jax.jit
  def f(arr1):
    print(f'mesh inside f: {jax.sharding.get_abstract_mesh()}', end='\n\n')
    x = jnp.sin(arr1)
    z = explicit_g(x, in_sharding=jax.P("X", "Y"))
    return z + 1

  x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", "Y"))
  return x, f(x)


# ------------------------------- Concrete array shardings can mention `Auto` mesh axis -------------------------------

def compare_shardings_cell():
  jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # Explicit mode

  def compare_shardings(x):
    print(f"=== with mesh: {jax.sharding.get_abstract_mesh()} ===")
    print(f"Concrete value sharding: {x.sharding.spec}")
    print(f"Type-specified sharding: {jax.typeof(x).sharding.spec}\n")

  my_array = jnp.sin(jax.device_put(np.arange(8), jax.P("X")))
  compare_shardings(my_array)

  auto_axes = jax.sharding.auto_axes
  @auto_axes
  def check_in_auto_context(x):
    compare_shardings(x)
    return x

  return my_array, check_in_auto_context(my_array, out_sharding=jax.P("X"))


# ------------------- Manual mode lets you write explicit collectives with a per-device view of data -------------------

def shard_map_cell():
  mesh = jax.make_mesh((4, 2), ('X', 'Y'))
  jax.set_mesh(mesh)

  x = jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X'))
  y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

  @jax.shard_map(out_specs=jax.P('X', None))
  def matmul(x_shard, y_shard):
    z_summand = jnp.dot(x_shard, y_shard)
    return jax.lax.psum_scatter(z_summand, 'X', tiled=True)

  z = matmul(x, y)
  print(jax.typeof(z))

  z_ref = jnp.dot(x, y, out_sharding=jax.P('X', None))
  print(jnp.allclose(z_ref, z))
  return x, y, z, z_ref
