# ruff: noqa: E111, E114, E302, E305, E402, I001  (the page's cells as they are: two-space indents, imports between cells)
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
# The code cells of JAX's docs/automatic-differentiation.md ("Automatic differentiation", jax-ml/jax cec06d116c), in
# order, ported to kiln by changing imports only. The imports stay at the top level, where the page has them
# (tests/examples/ported.py puts JAX's back); so do the page's definitions: `f` and its derivatives `dfdx` ...
# `d4fdx`, the logistic regression's `sigmoid`, `predict`, toy data `inputs`/`targets`, `loss` and `loss2`, and the
# PRNG key the setup cell makes. Every cell whose top-level code runs something (prints, draws, checks) is a
# function, `..._block`, whose body is the cell's lines and which returns what the cell shows or computes (its prints
# are kept; `return` added). The state the page threads from cell to cell (the PRNG `key`, the parameters `W` and
# `b`) is that block's parameter, and a block that changes it returns it: `init_block(key)` holds the setup cell's
# last lines (the draws of W and b) and returns `(key, W, b)`; `numerical_differences_block(W, b, key)` returns the
# key it split (see `run`, the page's order). Left out: nothing (the page has no IPython magics).
# tests/examples/test_docs_automatic_differentiation.py checks the blocks against closed forms, float64 NumPy and
# central differences; test_docs_automatic_differentiation_against_jax.py runs them under kiln and JAX.

# ------------------------------------------------ 1. Taking gradients with `jax.grad` ----------------------------

import kiln as jax
import kiln.numpy as jnp
from kiln import grad

def grad_tanh_block():
  grad_tanh = grad(jnp.tanh)
  print(grad_tanh(2.0))
  return grad_tanh

def higher_order_tanh_block():
  print(grad(grad(jnp.tanh))(2.0))
  print(grad(grad(grad(jnp.tanh)))(2.0))

f = lambda x: x**3 + 2*x**2 - 3*x + 1

dfdx = jax.grad(f)

d2fdx = jax.grad(dfdx)
d3fdx = jax.grad(d2fdx)
d4fdx = jax.grad(d3fdx)

def polynomial_derivatives_block():
  print(dfdx(1.))
  print(d2fdx(1.))
  print(d3fdx(1.))
  print(d4fdx(1.))

# ------------------------------------------------ 2. Computing gradients in a linear logistic regression -------

key = jax.random.key(0)

def sigmoid(x):
  return 0.5 * (jnp.tanh(x / 2) + 1)

# Outputs probability of a label being true.
def predict(W, b, inputs):
  return sigmoid(jnp.dot(inputs, W) + b)

# Build a toy dataset.
inputs = jnp.array([[0.52, 1.12,  0.77],
                    [0.88, -1.08, 0.15],
                    [0.52, 0.06, -1.30],
                    [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])

# Training loss is the negative log-likelihood of the training examples.
def loss(W, b):
  preds = predict(W, b, inputs)
  label_probs = preds * targets + (1 - preds) * (1 - targets)
  return -jnp.sum(jnp.log(label_probs))

def init_block(key):
  # Initialize random model coefficients
  key, W_key, b_key = jax.random.split(key, 3)
  W = jax.random.normal(W_key, (3,))
  b = jax.random.normal(b_key, ())
  return key, W, b

def argnums_block(W, b):
  # Differentiate `loss` with respect to the first positional argument:
  W_grad = grad(loss, argnums=0)(W, b)
  print(f'{W_grad=}')

  # Since argnums=0 is the default, this does the same thing:
  W_grad = grad(loss)(W, b)
  print(f'{W_grad=}')

  # But you can choose different values too, and drop the keyword:
  b_grad = grad(loss, 1)(W, b)
  print(f'{b_grad=}')

  # Including tuple values
  W_grad, b_grad = grad(loss, (0, 1))(W, b)
  print(f'{W_grad=}')
  print(f'{b_grad=}')
  return W_grad, b_grad

# ------------------------------------------------ 3. Differentiating with respect to nested lists, tuples, and dicts

def loss2(params_dict):
    preds = predict(params_dict['W'], params_dict['b'], inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

def loss2_block(W, b):
  print(grad(loss2)({'W': W, 'b': b}))
  return grad(loss2)({'W': W, 'b': b})

# ------------------------------------------------ 4. Evaluating a function and its gradient using `jax.value_and_grad`

def value_and_grad_block(W, b):
  loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
  print('loss value', loss_value)
  print('loss value', loss(W, b))
  return loss_value, Wb_grad

# ------------------------------------------------ 5. Checking against numerical differences ----------------------

def numerical_differences_block(W, b, key):
  # Set a step size for finite differences calculations
  eps = 1e-4

  # Check b_grad with scalar finite differences
  b_grad_numerical = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
  print('b_grad_numerical', b_grad_numerical)
  print('b_grad_autodiff', grad(loss, 1)(W, b))

  # Check W_grad with finite differences in a random direction
  key, subkey = jax.random.split(key)
  vec = jax.random.normal(subkey, W.shape)
  unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
  W_grad_numerical = (loss(W + eps / 2. * unitvec, b) - loss(W - eps / 2. * unitvec, b)) / eps
  print('W_dirderiv_numerical', W_grad_numerical)
  print('W_dirderiv_autodiff', jnp.vdot(grad(loss)(W, b), unitvec))
  return key, unitvec, b_grad_numerical, W_grad_numerical

from kiln.test_util import check_grads

def check_grads_block(W, b):
  return check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives


def run():
  """The page's cells in its order, the PRNG key and W, b threaded from cell to cell: {block: what it returns}."""
  out = {"grad_tanh": grad_tanh_block(), "higher_order_tanh": higher_order_tanh_block(),
         "polynomial_derivatives": polynomial_derivatives_block()}
  k, W, b = init_block(key)
  out["init"] = k, W, b
  out["argnums"] = argnums_block(W, b)
  out["loss2"] = loss2_block(W, b)
  out["value_and_grad"] = value_and_grad_block(W, b)
  out["numerical_differences"] = numerical_differences_block(W, b, k)
  out["check_grads"] = check_grads_block(W, b)
  return out
