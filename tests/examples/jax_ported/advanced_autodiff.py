# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, I001  (the pages' cells: two-space indents, lambdas, redefinitions, imports between cells)
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
# The code cells of JAX's "Advanced automatic differentiation" pages (jax-ml/jax cec06d116c), one after the other,
# ported to kiln by changing imports only. docs/advanced_autodiff.md is, since 8c0c43c027 split the single page
# docs/advanced-autodiff.md, a table of contents; the sections ported here are its pages' current text:
# docs/higher-order.md from "Higher-order derivative applications" on (stop_gradient and the TD(0) update, the
# straight-through estimator, per-example gradients, Hessian-vector products with grad-of-grad, jacfwd/jacrev and
# Hessians) and all of docs/jacobian-vector-products.md (jvp, vjp, vector-valued gradients, Hessian-vector products
# three ways, vmapped Jacobian-matrix and matrix-Jacobian products, jacfwd/jacrev written with vmap, jit of a vjp
# through Python control flow). Their code is the old page's but for the spelling (jax.grad for grad, ...),
# `jnp.asarray` around the vjp's tuple in `loop_mjp` and `jax.hessian` in the timing cell.
# The imports stay at the top level, where they are in the pages, so that tests/examples/ported.py can put JAX's back.
# The pages' top-level statements are wrapped in one function per cell or section that returns what the cell shows
# (its prints are kept), and the state they thread from cell to cell (the PRNG key, W and b, the vjp's y) is passed
# in and returned, so the tests can call the cells in order (see `run`), at other points or in float64. Where a cell
# redefines a function (`td_loss`, `hvp`), the earlier definition is also kept under a second name (`td_loss_naive`,
# `hvp_grad_of_grad`), and the cell that calls the naive `td_loss` binds it as a default argument, as the pages' order
# does. jacobian-vector-products.md's first cell repeats higher-order.md's model (sigmoid, predict, inputs, the
# draws of W and b from key(0)) word for word: it is defined once here. Where a cell builds 128 rows or a 30x40
# matrix, that size is a parameter with the pages' value as default.
# Left out: higher-order.md's "Taking gradients (part 2)" (the Hessian of x.x) and the MAML sketch of "Higher-order
# derivative applications" (not a code cell: its loss_fn, params and data are undefined); the %timeit lines (the
# cells that time them run each computation once instead); complex-differentiation.md; and the custom-derivative
# pages of the table of contents: notebooks/Custom_derivative_rules_for_Python_code.md (ported on its own; the old
# single page's custom_jvp/custom_vjp sections were a copy of it) and hijax_custom_derivatives.md (a page of its own).
# tests/examples/test_advanced_autodiff.py checks it against NumPy, finite differences and Python loops;
# test_advanced_autodiff_against_jax.py runs it under both libraries.

import kiln as jax
import kiln.numpy as jnp

# ---------------------------- Higher-order derivative applications (docs/higher-order.md) ----------------------------
# Stopping gradients

# Value function and initial parameters
value_fn = lambda theta, state: jnp.dot(theta, state)
theta = jnp.array([0.1, -0.1, 0.])

# An example transition.
s_tm1 = jnp.array([1., 2., -1.])
r_t = jnp.array(1.)
s_t = jnp.array([2., 1., 0.])


def td_loss(theta, s_tm1, r_t, s_t):
  v_tm1 = value_fn(theta, s_tm1)
  target = r_t + value_fn(theta, s_t)
  return -0.5 * ((target - v_tm1) ** 2)

td_loss_naive = td_loss

def naive_td_update_cell(theta=theta, s_tm1=s_tm1, r_t=r_t, s_t=s_t, td_loss=td_loss):
  td_update = jax.grad(td_loss)
  delta_theta = td_update(theta, s_tm1, r_t, s_t)

  return delta_theta


def td_loss(theta, s_tm1, r_t, s_t):
  v_tm1 = value_fn(theta, s_tm1)
  target = r_t + value_fn(theta, s_t)
  return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)

def td_update_cell(theta=theta, s_tm1=s_tm1, r_t=r_t, s_t=s_t):
  td_update = jax.grad(td_loss)
  delta_theta = td_update(theta, s_tm1, r_t, s_t)

  return delta_theta


def original_calculation_cell(theta=theta, s_tm1=s_tm1, r_t=r_t, s_t=s_t):
  s_grad = jax.grad(value_fn)(theta, s_tm1)
  delta_theta_original_calculation = (r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)) * s_grad

  return delta_theta_original_calculation # [1.2, 2.4, -1.2], same as `delta_theta`


# Straight-through estimator using `stop_gradient`

def straight_through_cell():
  # returns f and straight_through_f too (a later cell's `f` would shadow a top-level one), then what it prints
  def f(x):
    return jnp.round(x)  # non-differentiable

  def straight_through_f(x):
    # Create an exactly-zero expression with Sterbenz lemma that has
    # an exactly-one gradient.
    zero = x - jax.lax.stop_gradient(x)
    return zero + jax.lax.stop_gradient(f(x))

  print("f(x): ", f(3.2))
  print("straight_through_f(x):", straight_through_f(3.2))

  print("grad(f)(x):", jax.grad(f)(3.2))
  print("grad(straight_through_f)(x):", jax.grad(straight_through_f)(3.2))
  return (f, straight_through_f, f(3.2), straight_through_f(3.2), jax.grad(f)(3.2),
          jax.grad(straight_through_f)(3.2))


# Per-example gradients

def per_example_gradients_cells(theta=theta, s_tm1=s_tm1, r_t=r_t, s_t=s_t):
  """The section's five cells; the vmapped and jitted functions and the five results."""
  perex_grads = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))

  # Test it:
  batched_s_tm1 = jnp.stack([s_tm1, s_tm1])
  batched_r_t = jnp.stack([r_t, r_t])
  batched_s_t = jnp.stack([s_t, s_t])

  first = perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

  dtdloss_dtheta = jax.grad(td_loss)

  single = dtdloss_dtheta(theta, s_tm1, r_t, s_t)

  almost_perex_grads = jax.vmap(dtdloss_dtheta)

  batched_theta = jnp.stack([theta, theta])
  almost = almost_perex_grads(batched_theta, batched_s_tm1, batched_r_t, batched_s_t)

  inefficient_perex_grads = jax.vmap(dtdloss_dtheta, in_axes=(None, 0, 0, 0))

  inefficient = inefficient_perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

  perex_grads = jax.jit(inefficient_perex_grads)

  jitted = perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)

  # the page times these two with %timeit; here each runs once
  timed = (inefficient_perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t).block_until_ready(),
           perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t).block_until_ready())
  return (dtdloss_dtheta, almost_perex_grads, inefficient_perex_grads, perex_grads,
          (first, single, almost, inefficient, jitted, *timed))


# Hessian-vector products with `jax.grad`-of-`jax.grad`

def hvp(f, x, v):
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)

hvp_grad_of_grad = hvp


# Jacobians and Hessians using `jax.jacfwd` and `jax.jacrev`

from kiln import jacfwd, jacrev

# Define a sigmoid function.
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

# Initialize random model coefficients
key = jax.random.key(0)

def init_params(key):
    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())
    return key, W, b

def jacobians_cell(W, b):
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    J = jacfwd(f)(W)
    print("jacfwd result, with shape", J.shape)
    print(J)
    J_fwd = J

    J = jacrev(f)(W)
    print("jacrev result, with shape", J.shape)
    print(J)
    return J_fwd, J


def predict_dict(params, inputs):
    return predict(params['W'], params['b'], inputs)

def jacobians_dict_cell(W, b):
    J_dict = jax.jacrev(predict_dict)({'W': W, 'b': b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)
    return J_dict


def hessian(f):
    return jax.jacfwd(jax.jacrev(f))

def hessian_cell(W, b):
    f = lambda W: predict(W, b, inputs)
    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)
    return H


# -------------------- Forward- and reverse-mode autodiff in JAX (docs/jacobian-vector-products.md) --------------------
# JVPs in JAX code (the cell's model setup is the one above)

def jvp_cell(W, b, key):
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = jax.random.split(key)
    v = jax.random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jax.jvp(f, (W,), (v,))
    return key, v, y, u


# VJPs in JAX code

from kiln import vjp

def vjp_cell(W, b, key):
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = jax.random.split(key)
    u = jax.random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)
    return key, u, y, v


# Vector-valued gradients with VJPs

def vgrad(f, x):
  y, vjp_fn = jax.vjp(f, x)
  return vjp_fn(jnp.ones(y.shape))[0]

def vgrad_cell():
  out = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))
  print(out)
  return out


# Hessian-vector products using both forward- and reverse-mode

def hvp(f, x, v):
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)


# forward-over-reverse
def hvp(f, primals, tangents):
  return jax.jvp(jax.grad(f), primals, tangents)[1]


def hvp_cell(key, shape=(30, 40)):
  # `shape` is the page's (30, 40) unless a test asks for less
  def f(X):
    return jnp.sum(jnp.tanh(X)**2)

  key, subkey1, subkey2 = jax.random.split(key, 3)
  X = jax.random.normal(subkey1, shape)
  V = jax.random.normal(subkey2, shape)

  def hessian(f):
      return jax.jacfwd(jax.jacrev(f))

  ans1 = hvp(f, (X,), (V,))
  ans2 = jnp.tensordot(hessian(f)(X), V, 2)

  close = jnp.allclose(ans1, ans2, 1e-4, 1e-4)
  print(close)
  return key, f, X, V, ans1, ans2, close


# Reverse-over-forward
def hvp_revfwd(f, primals, tangents):
  g = lambda primals: jax.jvp(f, primals, tangents)[1]
  return jax.grad(g)(primals)


# Reverse-over-reverse, only works for single arguments
def hvp_revrev(f, primals, tangents):
  x, = primals
  v, = tangents
  return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)


def hvp_timing_cell(f, X, V):
  # the page times these with %timeit; here each runs once and the results are returned
  print("Forward over reverse")
  fwdrev = hvp(f, (X,), (V,))
  print("Reverse over forward")
  revfwd = hvp_revfwd(f, (X,), (V,))
  print("Reverse over reverse")
  revrev = hvp_revrev(f, (X,), (V,))

  print("Naive full Hessian materialization")
  naive = jnp.tensordot(jax.hessian(f)(X), V, 2)
  return fwdrev, revfwd, revrev, naive


# Composing VJPs, JVPs, and `jax.vmap`: Jacobian-Matrix and Matrix-Jacobian products

# Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
# First, use a list comprehension to loop over rows in the matrix M.
def loop_mjp(f, x, M):
    y, vjp_fun = jax.vjp(f, x)
    return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

# Now, use vmap to build a computation that does a single fast matrix-matrix
# multiply, rather than an outer loop over vector-matrix multiplies.
def vmap_mjp(f, x, M):
    y, vjp_fun = jax.vjp(f, x)
    outs, = jax.vmap(vjp_fun)(M)
    return outs

def mjp_cell(W, b, y, num_covecs=128):
    # `y` is the vjp cell's; `num_covecs` is the page's 128 unless a test asks for less
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key = jax.random.key(0)
    U = jax.random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    print('Non-vmapped Matrix-Jacobian product')

    print('\nVmapped Matrix-Jacobian product')
    vmap_vs = vmap_mjp(f, W, M=U)

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Matrix-Jacobian Products should be identical'
    return key, f, U, loop_vs, vmap_vs


def loop_jmp(f, W, M):
    # jvp immediately returns the primal and tangent values as a tuple,
    # so we'll compute and select the tangents in a list comprehension
    return jnp.vstack([jax.jvp(f, (W,), (mi,))[1] for mi in M])

def vmap_jmp(f, W, M):
    _jvp = lambda s: jax.jvp(f, (W,), (s,))[1]
    return jax.vmap(_jvp)(M)

def jmp_cell(f, W, key, num_vecs=128):
    # `f` and `key` are the mjp cell's; `num_vecs` is the page's 128 unless a test asks for less
    S = jax.random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    print('Non-vmapped Jacobian-Matrix product')
    vmap_vs = vmap_jmp(f, W, M=S)
    print('\nVmapped Jacobian-Matrix product')

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Jacobian-Matrix products should be identical'
    return S, loop_vs, vmap_vs


# The implementation of `jax.jacfwd` and `jax.jacrev`

from kiln import jacrev as builtin_jacrev

def our_jacrev(f):
    def jacfun(x):
        y, vjp_fun = jax.vjp(f, x)
        # Use vmap to do a matrix-Jacobian product.
        # Here, the matrix is the Euclidean basis, so we get all
        # entries in the Jacobian at once.
        J, = jax.vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
        return J
    return jacfun

def our_jacrev_cell(f, W):
    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), 'Incorrect reverse-mode Jacobian results!'
    return builtin_jacrev(f)(W), our_jacrev(f)(W)


from kiln import jacfwd as builtin_jacfwd

def our_jacfwd(f):
    def jacfun(x):
        _jvp = lambda s: jax.jvp(f, (x,), (s,))[1]
        Jt = jax.vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
        return jnp.transpose(Jt)
    return jacfun

def our_jacfwd_cell(f, W):
    assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), 'Incorrect forward-mode Jacobian results!'
    return builtin_jacfwd(f)(W), our_jacfwd(f)(W)


def python_control_flow_cell():
    def f(x):
        try:
            if x < 3:
                return 2 * x ** 3
            else:
                raise ValueError
        except ValueError:
            return jnp.pi * x

    y, f_vjp = jax.vjp(f, 4.)
    out = jax.jit(f_vjp)(1.)
    print(out)
    return y, out


# ------------------------------------------------------------------------------------------------------------------

def run(key=key, shape=(30, 40), num_covecs=128, num_vecs=128):
    """The pages' cells in order, threading the key, W, b, y and f from cell to cell; a dict of what they return."""
    out = {"naive_td": naive_td_update_cell(), "td": td_update_cell(),
           "original": original_calculation_cell(), "straight_through": straight_through_cell()}
    *out["perex_fns"], out["perex"] = per_example_gradients_cells()
    key, W, b = init_params(key)
    out.update(W=W, b=b, jacobians=jacobians_cell(W, b), jacobians_dict=jacobians_dict_cell(W, b),
               hessian=hessian_cell(W, b))
    key, *out["jvp"] = jvp_cell(W, b, key)
    key, *out["vjp"] = vjp_cell(W, b, key)
    out["vgrad"] = vgrad_cell()
    key, hf, X, V, *out["hvp"] = hvp_cell(key, shape)
    out.update(X=X, V=V, hvp_timing=hvp_timing_cell(hf, X, V))
    key, f_W, *out["mjp"] = mjp_cell(W, b, out["vjp"][1], num_covecs)
    out["jmp"] = jmp_cell(f_W, W, key, num_vecs)
    out.update(our_jacrev=our_jacrev_cell(f_W, W), our_jacfwd=our_jacfwd_cell(f_W, W),
               control_flow=python_control_flow_cell())
    return out
