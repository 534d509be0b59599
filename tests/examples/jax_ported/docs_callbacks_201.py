# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, F841, I001  (the page's blocks: two-space indents, redefinitions, imports between blocks, a lambda)
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
# The Python code blocks of JAX's docs/new_docs/201/callbacks.md ("External callbacks", jax-ml/jax cec06d116c), in
# order, ported to kiln by changing imports only. The imports stay at the top level, where the page has them
# (tests/examples/ported.py puts JAX's back); so do the page's definitions that run nothing (`f_host`,
# `print_something`, `raise_via_callback`, `raise_if_negative`, the io_callback host function and its jitted
# callers, `log_value`, `host_fn`, `jv`), and the page's module-level `global_rng`, which the io_callback blocks
# draw from in the page's order (the tests seed it again before they run them). Every block that runs something is
# a function, `..._block`, whose body is the block's lines and which returns what the block shows (its last
# expression, the notebook's output: `return` added, and the `;` that hides it on the page dropped); its prints are
# kept. The page redefines `f` block after block: each `f` is local to its block; a block that uses a name of an
# earlier one (`f`, `x`, `x_batch`, `mesh`, `j1`, `z`) takes it as a parameter, and the block that defines it returns
# it. The page rebinds `jv` to its custom_jvp (`jv = jax.custom_jvp(jv)`): that block takes the plain `jv` as its
# parameter and returns the custom one, so the blocks before it see the plain one whenever they run. The blocks that
# raise on the page (`raises-exception`) run the failing line: the tests check the exception. The ```python block
# (pure_callback raising under vmap) is ported too, as two functions (the loop that does not raise, and the vmap that
# does). The page's first `remove-cell` (`jax_num_cpu_devices`, 8 CPU devices for the sharding section) is
# `config_block`: JAX takes it before its backends start only, so the sharding blocks run in a fresh interpreter
# that calls it first. Left out: `%xmode minimal` (IPython). The older page docs/external-callbacks.md is in
# docs_callbacks_aot.py. tests/examples/test_docs_callbacks_201.py checks the blocks against NumPy/SciPy and the
# page's claims; test_docs_callbacks_201_against_jax.py runs them under kiln and JAX.

import kiln as jax

def config_block():
  jax.config.update('jax_num_cpu_devices', 8)  # simulate 8 devices, for the sharding section

# ------------------------------------------------ Why callbacks? -------------------------------------------------

import kiln as jax

def why_print_block():
  @jax.jit
  def f(x):
    y = x + 1
    print("intermediate value: {}".format(y))
    return y * 2

  result = f(2)
  return result

def why_debug_print_block():
  @jax.jit
  def f(x):
    y = x + 1
    jax.debug.print("intermediate value: {}", y)
    return y * 2

  result = f(2)
  return result

# ------------------------------------------------ Exploring `pure_callback` --------------------------------------

import kiln as jax
import kiln.numpy as jnp
import numpy as np

def f_host(x):
  # call a numpy (not jax.numpy) operation:
  return np.sin(x).astype(x.dtype)

def pure_callback_block():
  def f(x):
    result_shape = jax.ShapeDtypeStruct.like(x)
    return jax.pure_callback(f_host, result_shape, x, vmap_method='sequential')

  x = jnp.arange(5.0)
  return f(x), f, x

def pure_callback_jit_block(f, x):
  return jax.jit(f)(x)

def pure_callback_scan_block(f):
  def body_fun(_, x):
    return _, f(x)
  return jax.lax.scan(body_fun, None, jnp.arange(5.0))[1]

def pure_callback_vmap_block(f, x):
  return jax.vmap(f)(x)

def pure_callback_grad_block(f, x):
  # raises-exception
  jax.grad(f)(x)

def print_something():
  print('printing something')
  return np.int32(0)

def f1_block():
  @jax.jit
  def f1():
    return jax.pure_callback(print_something, np.int32(0))
  return f1()

def f2_block():
  @jax.jit
  def f2():
    jax.pure_callback(print_something, np.int32(0))
    return 1.0
  return f2()

# `pure_callback` and exceptions (a ```python block)

import kiln as jax
import kiln.numpy as jnp

def raise_via_callback(x):
  def _raise(x):
    raise ValueError(f"value of x is {x}")
  return jax.pure_callback(_raise, x, x)

def raise_if_negative(x):
  return jax.lax.cond(x < 0, raise_via_callback, lambda x: x, x)

def raise_loop_block():
  x_batch = jnp.arange(4)

  return [raise_if_negative(x) for x in x_batch], x_batch  # does not raise

def raise_vmap_block(x_batch):
  jax.vmap(raise_if_negative)(x_batch)  # ValueError: value of x is 0

# ------------------------------------------------ Exploring `io_callback` ----------------------------------------

from kiln.experimental import io_callback
from functools import partial

global_rng = np.random.default_rng(0)

def host_side_random_like(x):
  """Generate a random array like x using the global_rng state"""
  # We have two side-effects here:
  # - printing the shape and dtype
  # - calling global_rng, thus updating its state
  print(f'generating {x.dtype}{list(x.shape)}')
  return global_rng.uniform(size=x.shape).astype(x.dtype)

@jax.jit
def numpy_random_like(x):
  return io_callback(host_side_random_like, x, x)

def io_callback_block():
  x = jnp.zeros(5)
  return numpy_random_like(x), x

def io_callback_vmap_block(x):
  return jax.vmap(numpy_random_like)(x)

@jax.jit
def numpy_random_like_ordered(x):
  return io_callback(host_side_random_like, x, x, ordered=True)

def io_callback_ordered_vmap_block(x):
  # raises-exception
  jax.vmap(numpy_random_like_ordered)(x)

def io_callback_scan_block():
  def body_fun(_, x):
    return _, numpy_random_like_ordered(x)
  return jax.lax.scan(body_fun, None, jnp.arange(5.0))[1]

def io_callback_grad_block(x):
  # raises-exception
  jax.grad(numpy_random_like)(x)

def io_callback_unused_grad_block():
  @jax.jit
  def f(x):
    io_callback(lambda: print('hello'), None)
    return x

  return jax.grad(f)(1.0)

# ------------------------------------------------ Exploring `debug.callback` -------------------------------------

from kiln import debug

def log_value(x):
  # This could be an actual logging call; we'll use
  # print() for demonstration
  print("log:", x)

def debug_callback_block():
  @jax.jit
  def f(x):
    debug.callback(log_value, x)
    return x

  return f(1.0), f

def debug_callback_vmap_block(f):
  x = jnp.arange(5.0)
  return jax.vmap(f)(x)

def debug_callback_grad_block(f):
  return jax.grad(f)(1.0)

# ------------------------------------------------ Callbacks and sharding -----------------------------------------

def host_fn(x):
  print(f"callback received shape {x.shape}")
  return np.asarray(x) * 2

def sharding_block():
  def f(x):
    return jax.pure_callback(host_fn, jax.ShapeDtypeStruct.like(x), x)

  mesh = jax.make_mesh((8,), ('i',))

  with jax.set_mesh(mesh):
    x = jax.device_put(jnp.arange(8.0), jax.P('i'))
    out = jax.jit(f)(x)  # one callback, with the full gathered array
  return out, f, mesh, x

def shard_map_block(f, mesh, x):
  with jax.set_mesh(mesh):
    out = jax.shard_map(f, in_specs=jax.P('i'), out_specs=jax.P('i'))(x)  # one callback per device
  return out

# ------------------------------------------------ Example: `pure_callback` with `custom_jvp` ---------------------

import kiln as jax
import kiln.numpy as jnp
import scipy.special

def jv(v, z):
  v, z = jnp.asarray(v), jnp.asarray(z)

  # Require the order v to be integer type: this simplifies
  # the JVP rule below.
  assert jnp.issubdtype(v.dtype, jnp.integer)

  # Promote the input to inexact (float/complex).
  # Note that jnp.result_type() accounts for the enable_x64 flag.
  z = z.astype(jnp.result_type(float, z.dtype))

  # Wrap scipy function to return the expected dtype.
  _scipy_jv = lambda v, z: scipy.special.jv(v, z).astype(z.dtype)

  # Define the expected shape & dtype of output.
  result_shape_dtype = jax.ShapeDtypeStruct(
      shape=jnp.broadcast_shapes(v.shape, z.shape),
      dtype=z.dtype)

  # Use vmap_method="broadcast_all" because scipy.special.jv handles broadcasted inputs.
  return jax.pure_callback(_scipy_jv, result_shape_dtype, v, z, vmap_method="broadcast_all")

from functools import partial

def jv_setup_block():
  j1 = partial(jv, 1)
  z = jnp.arange(5.0)
  return j1, z

def jv_print_block(j1, z):
  print(j1(z))

def jv_jit_block(j1, z):
  print(jax.jit(j1)(z))

def jv_vmap_block(j1, z):
  print(jax.vmap(j1)(z))

def jv_grad_block(j1, z):
  # raises-exception
  jax.grad(j1)(z)

def custom_jvp_block(jv):
  jv = jax.custom_jvp(jv)

  @jv.defjvp
  def _jv_jvp(primals, tangents):
    v, z = primals
    _, z_dot = tangents  # Note: v_dot is always 0 because v is integer.
    jv_minus_1, jv_plus_1 = jv(v - 1, z), jv(v + 1, z)
    djv_dz = jnp.where(v == 0, -jv_plus_1, 0.5 * (jv_minus_1 - jv_plus_1))
    return jv(v, z), z_dot * djv_dz
  return jv

def custom_grad_block(jv):
  j1 = partial(jv, 1)
  print(jax.grad(j1)(2.0))
  return j1

def hessian_block(j1):
  return jax.hessian(j1)(2.0)
