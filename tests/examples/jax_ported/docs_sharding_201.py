# ruff: noqa: E111, E114, E302, E305, E402, I001  (the page's blocks: two-space indents, imports between blocks)
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
# The Python blocks of the last section, "Device-local layout", of JAX's docs/new_docs/201/sharding.md ("Distributed
# arrays and automatic parallelization", jax-ml/jax), in order, ported to kiln by changing imports only.
# The page's 36 code cells before that section are, character for character, the 36 code cells of JAX's older
# docs/parallel.md (the pages differ only in their prose's links and this last section): they are ported in
# parallel.py and tested on 8 CPU devices in tests/multidevice/test_parallel_docs.py (NumPy oracles) and
# tests/examples/test_parallel_docs_against_jax.py; this file does not repeat them.
# The section's five ```python blocks are shown on the page with an accelerator's output and are "illustrative
# rather than executed in place": on the CPU, XLA chooses the row-major layout for every array, so the block that
# reads back the layouts Layout.AUTO inferred fails its last assert (under JAX too), and the committed column-major
# array is refused (kiln: NotImplementedError, README "kiln.experimental.layout"; JAX's CPU client places it, and
# then the compiled function refuses it with a message other than the block's `'does not match'`). The tests check
# what each library does on the CPU.
# Layout: the first block's imports (one per line, so that tests/examples/ported.py can put JAX's back) and its
# definitions, `init_fn` and `apply_fn`, are at the top level, and so are the last block's import and its `f`.
# The blocks that run something are functions, `..._block`, whose bodies are the blocks' lines and which return
# what they compute; a name a block reads from an earlier one (`duck`, `apply_exe`, ...) is its parameter. Two
# blocks are split at a line: the one that compiles `apply_fn` into apply_compile_block and its three asserts,
# apply_formats_block; the one that defines `test` into layout_test_block (`test` and `dev`) and one function per
# pair of arrays it tries (uncommitted_block, committed_matching_block, committed_mismatched_block).

import kiln as jax
import kiln.numpy as jnp
from kiln.experimental.layout import Layout, Format
from kiln.sharding import SingleDeviceSharding
import numpy as np

def init_fn(x, y):
  return x * 2, y * 3

def apply_fn(x, y):
  return x[0, :], y[:, 0]


def apply_compile_block():
  shape = (4 * 128, 8 * 128)
  duck = jax.ShapeDtypeStruct(shape, jnp.float32)

  # Compile the `apply` function with layouts inferred automatically
  apply_exe = jax.jit(
      apply_fn,
      in_shardings=Format(Layout.AUTO),
      out_shardings=Format(Layout.AUTO),
  ).trace(duck, duck).lower().compile()

  # Read back the inferred input layout
  arg_formats, kwarg_formats = apply_exe.input_formats
  return shape, duck, apply_exe, arg_formats, kwarg_formats

def apply_formats_block(arg_formats, kwarg_formats):
  assert len(kwarg_formats) == 0
  assert arg_formats[0].layout.major_to_minor == (0, 1)
  assert arg_formats[1].layout.major_to_minor == (1, 0)


def init_exe_block(duck, arg_formats):
  init_exe = jax.jit(init_fn, out_shardings=arg_formats).trace(
      duck, duck).lower().compile()

  assert init_exe.output_formats == arg_formats
  return init_exe


def layout_test_block(apply_exe):
  def test(x, y, msg):
    print(f'-- {msg}:')
    print('x major_to_minor =', x.format.layout.major_to_minor)
    print('y major_to_minor =', y.format.layout.major_to_minor)
    try:
      apply_exe(x, y)
      print('-> `apply` called successfully')
    except ValueError as e:
      assert 'does not match' in str(e)
      print('-> error: mismatched input layouts')
    print()

  dev = jax.devices()[0]
  return test, dev

def uncommitted_block(test, shape, init_exe):
  x1 = y1 = jnp.ones(shape)
  test(x1, y1, 'uncommitted with mismatched layout')

  x2, y2 = init_exe(x1, y1)
  test(x2, y2, 'uncommitted with matching layout')
  return x1, y1, x2, y2

def committed_matching_block(test, shape, dev):
  x3 = jnp.ones(shape)
  y3 = jax.device_put(np.ones(shape), Format(Layout(major_to_minor=(1, 0)),
                                             SingleDeviceSharding(dev)))
  test(x3, y3, 'committed with matching layout')
  return x3, y3

def committed_mismatched_block(test, shape, dev):
  x4 = jnp.ones(shape)
  y4 = jax.device_put(np.ones(shape), Format(Layout(major_to_minor=(0, 1)),
                                             SingleDeviceSharding(dev)))
  test(x4, y4, 'committed with mismatched layout')
  return x4, y4


from kiln.experimental.layout import with_layout_constraint

@jax.jit
def f(x):
  y = x.T
  # Enforce a specific layout on `y`
  y = with_layout_constraint(y, Layout(major_to_minor=(0, 1)))
  return y * 2
