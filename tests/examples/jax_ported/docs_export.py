# ruff: noqa: B007, E111, E114, E302, E305, E402, E731, F811, F841, I001  (the page's cells: two-space indents, unused loop variables, redefinitions, imports between cells)
# Copyright 2024 The JAX Authors.
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
# The code cells of JAX's documentation page docs/export/export.md ("Exporting and serializing staged-out
# computations", jax-ml/jax cec06d116c), in the page's order, ported to kiln by changing imports only. The
# imports stay at the top level, where the page has them, so that tests/examples/ported.py can put JAX's back. The
# page is a doctest: each `>>>` block (or run of blocks that share a definition) is a function that returns what the
# block shows; the lines the page shows raising (`Traceback (most recent call last)`) are functions of their own
# that run the failing line: the tests check the exception. The page's inputs (1., 0.1, jnp.arange(8 * 4), ...) are
# parameters with the page's values as defaults.
#
# Changed beyond the imports, because the page imports JAX's private modules (jax._src), which kiln does not have:
# `core` is the public `jax.extend.core` (its Primitive is the class the page's private `core.Primitive` names);
# `mlir` is a stand-in with the two functions the page calls: the public `jax.interpreters.mlir.register_lowering`,
# and `custom_call` (the page's private `mlir.custom_call`) built with the public `jax.extend.mlir` StableHLO
# dialect; `config` is a stand-in whose `jax_export_calling_convention_version(v)` is the page's private flag
# context, through the public `jax.config.update`. The page's doctests have `np` and `jnp` in their namespace
# (JAX's conftest): `jnp` is imported at the top.
#
# The device-polymorphic cells need 4 to 8 devices (`jax.local_devices()[2:6]`, a mesh of all devices, 8 on the
# page): tests/multidevice/test_docs_export.py runs them on 8 CPU devices; the others run on one. Left out: the page's
# non-Python blocks (the pseudo-code of the module calling convention, shell commands) and the developer section's
# `my_lowering_rule` sketch (not runnable: its parameter list is `...`). The lengths the page marks
# `doctest: +SKIP` (9220, 9282) are returned, not checked against the page's numbers.
# tests/examples/test_docs_export.py checks the cells against NumPy, finite differences and round trips;
# test_docs_export_against_jax.py runs them under both libraries.

import re
import contextlib
import numpy as np
import kiln as jax
import kiln.numpy as jnp
from kiln import export
from typing import Callable

# =================================================== Introduction ===================================================

def f(x): return 2 * x * x

def intro_cells(y=1.):
  """The exported f, the @main line the page prints, the serialized bytes, the rehydrated Exported, callee(y)."""
  exported: export.Exported = export.export(jax.jit(f))(
     jax.ShapeDtypeStruct((), np.float32))

  # You can inspect the Exported object
  main_line = re.search(r".*@main.*", exported.mlir_module()).group(0)
  print(main_line)

  # And you can serialize the Exported to a bytearray.
  serialized: bytearray = exported.serialize()

  # The serialized function can later be rehydrated and called from
  # another JAX computation, possibly in another process.
  rehydrated_exp: export.Exported = export.deserialize(serialized)

  def callee(y):
   return 3. * rehydrated_exp.call(y * 4.)

  return exported, main_line, serialized, rehydrated_exp, callee(y)


# =========================================== Support for reverse-mode AD ============================================

def vjp_cells(x=0.1):
  """The blob, the rehydrated f, and rehydrated_f(x) with its first three derivatives."""
  def f(x): return 7 * x * x * x

  # Serialize 3 levels of VJP along with the primal function
  blob: bytearray = export.export(jax.jit(f))(1.).serialize(vjp_order=3)
  rehydrated_f: Callable = export.deserialize(blob).call

  return blob, rehydrated_f, [
      rehydrated_f(x),  # 7 * 0.1^3
      jax.grad(rehydrated_f)(x),  # 7*3 * 0.1^2
      jax.grad(jax.grad(rehydrated_f))(x),  # 7*3*2 * 0.1
      jax.grad(jax.grad(jax.grad(rehydrated_f)))(x),  # 7*3*2
  ]

def vjp_fourth_order_cell(rehydrated_f, x=0.1):
  # Traceback (most recent call last): ValueError: No VJP is available
  jax.grad(jax.grad(jax.grad(jax.grad(rehydrated_f))))(x)


# ==================================== Compatibility guarantees for custom calls =====================================

from kiln import lax
from kiln.extend import core  # the page: from jax._src import core
from kiln.interpreters import mlir as _public_mlir
from kiln.extend.mlir import ir
from kiln.extend.mlir.dialects import stablehlo as hlo

class mlir:
  """The page's `mlir` (JAX's private jax._src.interpreters.mlir): the two functions the cell calls."""
  register_lowering = staticmethod(_public_mlir.register_lowering)

  @staticmethod
  def custom_call(call_target_name, *, operands, result_types):
    # api_version 2 and an empty backend_config: the private helper's defaults, which the page's module shows
    return hlo.CustomCallOp(result_types, operands, call_target_name=ir.StringAttr.get(call_target_name),
                            api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
                            backend_config=ir.StringAttr.get(""))

# Define a new primitive backed by a custom call
new_prim = core.Primitive("new_prim")
_ = new_prim.def_abstract_eval(lambda x: x)
_ = mlir.register_lowering(new_prim, lambda ctx, o: mlir.custom_call("my_new_prim", operands=[o], result_types=[o.type]).results)  # noqa: E501

def custom_call_print_cell(x=1.):
  ir_module = jax.jit(new_prim.bind).lower(x).compiler_ir()
  print(ir_module)
  return ir_module

def custom_call_export_cell(x=1.):
  # If we try to export, we get an error
  # Traceback (most recent call last): ValueError: Cannot serialize code with custom calls whose targets have no
  # compatibility guarantees: my_new_bind
  export.export(jax.jit(new_prim.bind))(x)

def custom_call_disabled_check_cell(x=1.):
  # We can avoid the error if we pass a `DisabledSafetyCheck.custom_call`
  exp = export.export(
     jax.jit(new_prim.bind),
     disabled_checks=[export.DisabledSafetyCheck.custom_call("my_new_prim")])(x)
  return exp


# ===================================== Cross-platform and multi-platform export =====================================

def default_platform_cell():
  return export.default_export_platform()

def tpu_export_cell(x=1.):
  # You can specify the export platform, e.g., `tpu`, `cpu`, `cuda`, `rocm`
  # even if the current machine does not have that accelerator.
  exp = export.export(jax.jit(lax.cos), platforms=['tpu'])(x)
  return exp

def tpu_call_cell(exp, x=1.):
  # But you will get an error if you try to compile `exp`
  # on a machine that does not have TPUs.
  # Traceback (most recent call last): ValueError: Function 'cos' was lowered for platforms '('tpu',)' but it is
  # used on '('cpu',)'.
  exp.call(x)

def disabled_platform_check_cells(x=1.):
  """exp_unsafe.call(x) and exp_multi.call(x), with the two Exported."""
  # We can avoid the error if we pass a `DisabledSafetyCheck.platform`
  # parameter to `export`, e.g., because you have reasons to believe
  # that the code lowered will run adequately on the current
  # compilation platform (which is the case for `cos` in this
  # example):
  exp_unsafe = export.export(jax.jit(lax.cos),
     platforms=['tpu'],
     disabled_checks=[export.DisabledSafetyCheck.platform()])(x)

  unsafe_res = exp_unsafe.call(x)

  # and similarly with multi-platform lowering
  exp_multi = export.export(jax.jit(lax.cos),
     platforms=['tpu', 'cpu', 'cuda'])(x)
  multi_res = exp_multi.call(x)
  return exp_unsafe, unsafe_res, exp_multi, multi_res

def largish_cells(n=1000, x=1.):
  """The two module sizes (the page's +SKIP 9220 and 9282), the two Exported, and each one's call(x)."""
  # A largish function
  def f(x):
    for i in range(n):
      x = jnp.cos(x)
    return x

  exp_single = export.export(jax.jit(f))(x)
  single_size = len(exp_single.mlir_module_serialized)

  exp_multi = export.export(jax.jit(f),
                            platforms=["cpu", "tpu", "cuda"])(x)
  multi_size = len(exp_multi.mlir_module_serialized)
  return single_size, multi_size, exp_single, exp_multi, exp_single.call(x), exp_multi.call(x)


# ============================================ Device-polymorphic export =============================================

from kiln.sharding import AbstractMesh, Mesh, NamedSharding
from kiln.sharding import PartitionSpec as P

def abstract_mesh_export_cells(n=32):
  """exp (exported over an AbstractMesh of 4 devices), its nr_devices and in_shardings_jax(export_mesh)."""
  # Use an AbstractMesh for exporting
  export_mesh = AbstractMesh((4,), ("a",))

  def f(x):
    return x.T

  exp = export.export(jax.jit(f))(
     jax.ShapeDtypeStruct((n,), dtype=np.int32,
                          sharding=NamedSharding(export_mesh, P("a"))))

  # `exp` knows for how many devices it was exported.
  # and it knows the shardings for the inputs. These will be applied
  # when the exported is called.
  return exp, exp.nr_devices, exp.in_shardings_jax(export_mesh)

def concrete_mesh_cells(exp, n=32):
  """(Needs 6 devices.) exp2 (exported over a concrete mesh), arg, res1 = exp.call(arg), the first 2 shards of
  res1, res2 (exp called on another mesh), the first 2 shards of res2."""
  def f(x):
    return x.T

  # You can also use a concrete set of devices for exporting
  concrete_devices = jax.local_devices()[:4]
  concrete_mesh = Mesh(concrete_devices, ("a",))
  exp2 = export.export(jax.jit(f))(
     jax.ShapeDtypeStruct((n,), dtype=np.int32,
                          sharding=NamedSharding(concrete_mesh, P("a"))))

  # When you call an Exported, you must use a concrete set of devices
  arg = jax.device_put(jnp.arange(n),
                       NamedSharding(concrete_mesh, P("a")))

  res1 = exp.call(arg)
  # Check out the first 2 shards of the result
  shards1 = [f"device={s.device} index={s.index}" for s in res1.addressable_shards[:2]]

  # We can call `exp` with some other 4 devices and another
  # mesh with a different shape, as long as the number of devices is
  # the same.
  other_mesh = Mesh(np.array(jax.local_devices()[2:6]).reshape((2, 2)), ("b", "c"))
  res2 = exp.call(jax.device_put(arg,
                                 NamedSharding(other_mesh, P("b"))))

  # Check out the first 2 shards of the result. Notice that the output is
  # sharded similarly; this means that the input was resharded according to the
  # exp.in_shardings.
  shards2 = [f"device={s.device} index={s.index}" for s in res2.addressable_shards[:2]]
  return exp2, arg, res1, shards1, res2, shards2

def all_devices_export_cell(per_device=4):
  """An Exported of f over a mesh of all local devices (the page's next two cells start so)."""
  export_devices = jax.local_devices()
  export_mesh = Mesh(np.array(export_devices), ("a",))
  def f(x):
    return x.T

  exp = export.export(jax.jit(f))(
     jax.ShapeDtypeStruct((per_device * len(export_devices),), dtype=np.int32,
                          sharding=NamedSharding(export_mesh, P("a"))))
  return exp

def wrong_device_count_cell(exp, per_device=4):
  # Traceback (most recent call last): ValueError: Exported module f was lowered for 8 devices and is called in a
  # context with 1 devices. This is disallowed because: the module was lowered for more than 1 device.
  arg = jnp.arange(per_device * len(jax.local_devices()))
  exp.call(arg)

def calling_mesh_cell(exp, per_device=4):
  """The arg sharded for a mesh of the devices in reverse order, and exp.call of it."""
  export_devices = jax.local_devices()
  # Prepare the mesh for calling `exp`.
  calling_mesh = Mesh(np.array(export_devices[::-1]), ("a",))

  # Shard the arg according to what `exp` expects.
  arg = jnp.arange(per_device * len(export_devices))
  sharded_arg = jax.device_put(arg, exp.in_shardings_jax(calling_mesh)[0])
  res = exp.call(sharded_arg)
  return sharded_arg, res

def one_device_export_cells(n=4):
  """arg, exp (exported for 1 device), exp.in_avals, exp.nr_devices."""
  def f(x):
    return jnp.cos(x)

  arg = jnp.arange(n)
  exp = export.export(jax.jit(f))(arg)
  return arg, exp, exp.in_avals, exp.nr_devices

def one_device_sharded_call_cell(arg, exp):
  """(Needs 4 devices.) The sharded arg and exp.call of it."""
  # Prepare the mesh for calling `exp`.
  calling_mesh = Mesh(jax.local_devices()[:4], ("b",))

  # Shard the arg according to what `exp` expects.
  sharded_arg = jax.device_put(arg,
                               NamedSharding(calling_mesh, P("b")))
  res = exp.call(sharded_arg)
  return sharded_arg, res


# =========================================== Calling convention versions ============================================

def calling_convention_cell(x=1.):
  exp: export.Exported = export.export(jnp.cos)(x)
  return exp, exp.calling_convention_version

def supported_versions_cell():
  return (export.minimum_supported_calling_convention_version, export.maximum_supported_calling_convention_version)

class config:
  """The page's `config` (JAX's private jax._src.config): its flag context, through the public config.update."""
  @staticmethod
  @contextlib.contextmanager
  def jax_export_calling_convention_version(version):
    old = jax.config.jax_export_calling_convention_version
    jax.config.update("jax_export_calling_convention_version", version)
    try:
      yield
    finally:
      jax.config.update("jax_export_calling_convention_version", old)

def calling_convention_flag_cell(version=10, x=1.):
  with config.jax_export_calling_convention_version(version):
   exp = export.export(jnp.cos)(x)
   return exp, exp.calling_convention_version
