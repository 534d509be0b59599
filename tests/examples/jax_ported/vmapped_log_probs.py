# ruff: noqa: E111, E302, E305, F841, I001  (the notebook's code cells as they are: two-space indents, blank lines, unused names)
# Copyright 2018 The JAX Authors.
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
# The code cells of JAX's docs/notebooks/vmapped_log_probs.md ("Autobatching for Bayesian inference", jax-ml/jax
# cec06d116c), one after the other, ported to kiln by changing imports only. The cells that compute and show a
# value are wrapped in functions that return it (the definitions and the NumPy data stay at module level, as in the
# notebook); the "Self-contained variational inference example" section, which redefines `log_joint` and
# `batched_log_joint`, is one function, `variational_inference(num_steps)`, so that its definitions do not shadow
# the first section's, and it returns what the section defines and computes. Its loop runs `num_steps` steps
# (the notebook: 1000). Left out: matplotlib (the import and the last cell, the plot of the fit).
# tests/examples/test_vmapped_log_probs.py checks it against NumPy/SciPy, test_vmapped_log_probs_against_jax.py
# runs it under both libraries.

import types

import kiln as jax

import kiln.numpy as jnp
import kiln.scipy as jsp
from kiln import random

import numpy as np
import scipy as sp

# ## Generate a fake binary classification dataset

np.random.seed(10009)

num_features = 10
num_points = 100

true_beta = np.random.randn(num_features).astype(jnp.float32)
all_x = np.random.randn(num_points, num_features).astype(jnp.float32)
y = (np.random.rand(num_points) < sp.special.expit(all_x.dot(true_beta))).astype(jnp.int32)

def show_y():
  return y

# ## Write the log-joint function for the model
# ### Non-batched

def log_joint(beta):
    result = 0.
    # Note that no `axis` parameter is provided to `jnp.sum`.
    result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.))
    result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
    return result

def log_joint_example():
  return log_joint(np.random.randn(num_features))

def unbatched_log_joint_error():
  # This doesn't work, because we didn't write `log_prob()` to handle batching.
  try:
    batch_size = 10
    batched_test_beta = np.random.randn(batch_size, num_features)

    log_joint(np.random.randn(batch_size, num_features))
  except ValueError as e:
    print("Caught expected exception " + str(e))

# ### Manually batched

def batched_log_joint(beta):
    result = 0.
    # Here (and below) `sum` needs an `axis` parameter. At best, forgetting to set axis
    # or setting it incorrectly yields an error; at worst, it silently changes the
    # semantics of the model.
    result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.),
                           axis=-1)
    # Note the multiple transposes. Getting this right is not rocket science,
    # but it's also not totally mindless. (I didn't get it right on the first
    # try.)
    result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta.T).T)),
                           axis=-1)
    return result

def batched_log_joint_example():
  global batched_test_beta
  batch_size = 10
  batched_test_beta = np.random.randn(batch_size, num_features)

  return batched_log_joint(batched_test_beta)

# ### Autobatched with vmap

def vmap_batched_log_joint_example():
  global vmap_batched_log_joint
  vmap_batched_log_joint = jax.vmap(log_joint)
  return vmap_batched_log_joint(batched_test_beta)

# ## Self-contained variational inference example

def variational_inference(num_steps=1000):
  # ### Set up the (batched) log-joint function

  @jax.jit
  def log_joint(beta):
      result = 0.
      # Note that no `axis` parameter is provided to `jnp.sum`.
      result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=10.))
      result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
      return result

  batched_log_joint = jax.jit(jax.vmap(log_joint))

  # ### Define the ELBO and its gradient

  def elbo(beta_loc, beta_log_scale, epsilon):
      beta_sample = beta_loc + jnp.exp(beta_log_scale) * epsilon
      return jnp.mean(batched_log_joint(beta_sample), 0) + jnp.sum(beta_log_scale - 0.5 * np.log(2*np.pi))

  elbo = jax.jit(elbo)
  elbo_val_and_grad = jax.jit(jax.value_and_grad(elbo, argnums=(0, 1)))

  # ### Optimize the ELBO using SGD

  def normal_sample(key, shape):
      """Convenience function for quasi-stateful RNG."""
      new_key, sub_key = random.split(key)
      return new_key, random.normal(sub_key, shape)

  normal_sample = jax.jit(normal_sample, static_argnums=(1,))

  key = random.key(10003)

  beta_loc = jnp.zeros(num_features, jnp.float32)
  beta_log_scale = jnp.zeros(num_features, jnp.float32)

  step_size = 0.01
  batch_size = 128
  epsilon_shape = (batch_size, num_features)
  for i in range(num_steps):
      key, epsilon = normal_sample(key, epsilon_shape)
      elbo_val, (beta_loc_grad, beta_log_scale_grad) = elbo_val_and_grad(
          beta_loc, beta_log_scale, epsilon)
      beta_loc += step_size * beta_loc_grad
      beta_log_scale += step_size * beta_log_scale_grad
      if i % 10 == 0:
          print('{}\t{}'.format(i, elbo_val))

  return types.SimpleNamespace(log_joint=log_joint, batched_log_joint=batched_log_joint, elbo=elbo,
                               elbo_val_and_grad=elbo_val_and_grad, normal_sample=normal_sample, key=key,
                               beta_loc=beta_loc, beta_log_scale=beta_log_scale)
