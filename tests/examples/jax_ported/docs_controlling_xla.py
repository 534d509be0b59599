# ruff: noqa: E111, E114, E302, E305, E402, F811, F841, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code blocks of JAX's docs page docs/new_docs/201/controlling-xla.md ("Controlling XLA from JAX", jax-ml/jax
# cec06d116c), in order, ported to kiln by changing imports only. The imports stay at the top level, at column 0,
# so that tests/examples/ported.py can put JAX's back; each block is a function that returns what it computes or
# prints (its prints are kept). The page's `f` is the module's; the blocks that rebind it (`f = jax.jit(...)`,
# `f = xla_metadata_call2(...)`) do so locally.
# One change beyond the imports: the blocks that import `xla_metadata_call`, `xla_metadata_call2` and
# `must_fuse_call` from jax.experimental.xla_metadata (an API of JAX 0.11 that JAX 0.10.2, the JAX installed here,
# lacks) take them from the module, imported at the top (`xla_metadata.xla_metadata_call`), so that loading the
# JAX side of the port does not fail: under JAX 0.10.2 those blocks raise AttributeError where the page's import
# would raise ImportError. The same holds for `jax.CompilerEffortLevel` (JAX 0.11).
# The `XLA_FLAGS='--flag1=value1 --flag2=value2' python3 source.py` block is `xla_flags_cell`: it runs a script in
# a new process with XLA_FLAGS set. The error block (`not_a_real_flag`) raises, as on the page.
# tests/examples/test_docs_controlling_xla.py checks the blocks against the page's outputs and prose;
# test_docs_controlling_xla_against_jax.py runs them under kiln and JAX 0.10.2.

import kiln as jax
import kiln.numpy as jnp
from kiln.experimental import xla_metadata

# ------------------------------------------------ Per function: jit's compiler_options ---------------------------

def f(x):
  return jnp.sqrt(x ** 2) + 1.

def compiler_options_cell():
  f_opt = jax.jit(f, compiler_options={
      "xla_embed_ir_in_executable": True,
      "xla_gpu_auto_spmd_partitioning_memory_budget_ratio": 0.5,
  })

  return f_opt(1.0)

def effort_level_cell():
  g = jax.jit(f, compiler_options={"optimization_level": jax.CompilerEffortLevel.O3})
  return g

def not_a_real_flag_cell():
  """Raises (the page: `JaxRuntimeError: INVALID_ARGUMENT: No such compile option: 'not_a_real_flag'`)."""
  jax.jit(f, compiler_options={"not_a_real_flag": 1})(1.0)

def aot_cell():
  compiled = jax.jit(f).lower(1.0).compile(
      compiler_options={"xla_embed_ir_in_executable": True})
  return compiled

# ------------------------------------------------ Process-wide: the XLA_FLAGS environment variable ----------------

import os
import subprocess
import sys

def xla_flags_cell(source_py, flags, cwd=None):
  """`XLA_FLAGS='--flag1=value1 --flag2=value2' python3 source.py`: the finished process."""
  return subprocess.run([sys.executable, source_py], env={**os.environ, "XLA_FLAGS": " ".join(flags)}, cwd=cwd,
                        capture_output=True, text=True, timeout=300)

# ------------------------------------------------ Tagging a function: xla_metadata_call ---------------------------

def xla_metadata_call_cell():
  xla_metadata_call = xla_metadata.xla_metadata_call  # (the page: from jax.experimental.xla_metadata import ...)

  @xla_metadata_call(tag="my_block")
  def block(x):
    y = jnp.sin(x)
    return y * jnp.cos(x)

  @jax.jit
  def f(x):
    return block(x) + 1.

  print(f.lower(1.0).as_text("hlo"))
  return f

# ------------------------------------------------ Metadata survives transformations -------------------------------

def grad_cell():
  xla_metadata_call = xla_metadata.xla_metadata_call

  @xla_metadata_call(tag="my_block")
  def block(x):
    return jnp.sin(x)

  print(jax.jit(jax.grad(block)).lower(1.0).as_text("hlo"))
  return block

def xla_metadata_call2_cell():
  xla_metadata_call2 = xla_metadata.xla_metadata_call2  # (the page: from jax.experimental.xla_metadata import ...)

  fs = []
  f = xla_metadata_call2(jnp.sin, {"tag": "x"})                             # tag fwd + bwd (default)
  fs.append(f)
  f = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata='drop')         # tag fwd only
  fs.append(f)
  f = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata={"tag": "y"})   # retag bwd
  fs.append(f)
  return fs

def must_fuse_call_cell():
  """The prose's `must_fuse_call` (no block on the page): the wrapper it makes."""
  return xla_metadata.must_fuse_call("1")

# ------------------------------------------------ Tagging one operation in place: set_xla_metadata ---------------

from kiln.experimental.xla_metadata import set_xla_metadata

def g(x):
  y = jnp.sin(x)
  z = jnp.cos(x)
  return set_xla_metadata(y * z, breakpoint=True)

def set_xla_metadata_cell():
  print(jax.jit(g).lower(1.0).as_text("hlo"))
