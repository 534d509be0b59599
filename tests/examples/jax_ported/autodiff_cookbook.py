# ruff: noqa: E111, E114, E302, E305, E402, F811, F821, I001  (the notebook's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs/notebooks/autodiff_cookbook.md (jax-ml/jax e1375a7dc1), one after the other, ported to
# kiln by changing imports only. The imports stay at the top level, where they are in the notebook, so that
# tests/examples/ported.py can put JAX's back. The notebook's top-level statements are wrapped in one function per
# cell or section that returns what the cell prints (its prints are kept), and the state the notebook threads from
# cell to cell (the PRNG key, W and b) is passed in and returned, so the tests can call the cells in order (see
# `run`), at other points or in float64. The notebook defines `check` twice (jvp, then vjp): each also returns
# (ans, expected, its draws), is kept as `check_jvp`/`check_vjp`, and the cell that calls it binds it as a default
# argument, as the notebook's order does. Where a cell loops or builds 128 rows or a 30x40 matrix, that size is a
# parameter with the notebook's value as default. Left out: the %timeit lines (the cells that time them run each
# computation once instead); no plots. tests/examples/test_autodiff_cookbook.py checks it against NumPy and finite
# differences; test_autodiff_cookbook_against_jax.py runs it under both libraries.

import kiln.numpy as jnp
from kiln import grad, jit, vmap
from kiln import random

key = random.key(0)

# ------------------------------------------------ Gradients ------------------------------------------------
# Starting with `grad`

def grad_tanh_cells():
    grad_tanh = grad(jnp.tanh)
    print(grad_tanh(2.0))
    d2, d3 = grad(grad(jnp.tanh))(2.0), grad(grad(grad(jnp.tanh)))(2.0)
    print(d2)
    print(d3)
    return grad_tanh(2.0), d2, d3


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

def init_params(key):
    # Initialize random model coefficients
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())
    return key, W, b


def argnums_cell(W, b):
    # Differentiate `loss` with respect to the first positional argument:
    W_grad = grad(loss, argnums=0)(W, b)
    print('W_grad', W_grad)
    W_grad0 = W_grad

    # Since argnums=0 is the default, this does the same thing:
    W_grad = grad(loss)(W, b)
    print('W_grad', W_grad)
    W_grad_default = W_grad

    # But we can choose different values too, and drop the keyword:
    b_grad = grad(loss, 1)(W, b)
    print('b_grad', b_grad)
    b_grad1 = b_grad

    # Including tuple values
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    print('W_grad', W_grad)
    print('b_grad', b_grad)
    return W_grad0, W_grad_default, b_grad1, (W_grad, b_grad)


# Differentiating with respect to nested lists, tuples, and dicts

def loss2(params_dict):
    preds = predict(params_dict['W'], params_dict['b'], inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

def dict_cell(W, b):
    g = grad(loss2)({'W': W, 'b': b})
    print(g)
    return g


# Evaluate a function and its gradient using `value_and_grad`

from kiln import value_and_grad

def value_and_grad_cell(W, b):
    loss_value, Wb_grad = value_and_grad(loss, (0, 1))(W, b)
    print('loss value', loss_value)
    print('loss value', loss(W, b))
    return loss_value, Wb_grad, loss(W, b)


# Checking against numerical differences

def numerical_differences_cell(W, b, key):
    # Set a step size for finite differences calculations
    eps = 1e-4

    # Check b_grad with scalar finite differences
    b_grad_numerical = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
    print('b_grad_numerical', b_grad_numerical)
    b_grad_autodiff = grad(loss, 1)(W, b)
    print('b_grad_autodiff', b_grad_autodiff)

    # Check W_grad with finite differences in a random direction
    key, subkey = random.split(key)
    vec = random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    W_grad_numerical = (loss(W + eps / 2. * unitvec, b) - loss(W - eps / 2. * unitvec, b)) / eps
    print('W_dirderiv_numerical', W_grad_numerical)
    W_dirderiv_autodiff = jnp.vdot(grad(loss)(W, b), unitvec)
    print('W_dirderiv_autodiff', W_dirderiv_autodiff)
    return key, unitvec, b_grad_numerical, b_grad_autodiff, W_grad_numerical, W_dirderiv_autodiff


from kiln.test_util import check_grads

def check_grads_cell(W, b):
    check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives


# Hessian-vector products with `grad`-of-`grad` (redefined twice below, as in the notebook; the same formula is
# `hvp_revrev` further down)

def hvp(f, x, v):
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


# Jacobians and Hessians using `jacfwd` and `jacrev`

from kiln import jacfwd, jacrev

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
    J_dict = jacrev(predict_dict)({'W': W, 'b': b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)
    return J_dict


def hessian(f):
    return jacfwd(jacrev(f))

def hessian_cell(W, b):
    f = lambda W: predict(W, b, inputs)
    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)
    return H


# -------------------------------- How it's made: two foundational autodiff functions --------------------------------
# Jacobian-Vector products (JVPs, aka forward-mode autodiff)

from kiln import jvp

def jvp_cell(W, b, key):
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jvp(f, (W,), (v,))
    return key, v, y, u


# Vector-Jacobian products (VJPs, aka reverse-mode autodiff)

from kiln import vjp

def vjp_cell(W, b, key):
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)
    return key, u, y, v


# Vector-valued gradients with VJPs

from kiln import vjp

def vgrad(f, x):
  y, vjp_fn = vjp(f, x)
  return vjp_fn(jnp.ones(y.shape))[0]

def vgrad_cell():
  out = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))
  print(out)
  return out


# Hessian-vector products using both forward- and reverse-mode

def hvp(f, x, v):
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


from kiln import jvp, grad

# forward-over-reverse
def hvp(f, primals, tangents):
  return jvp(grad(f), primals, tangents)[1]


def hvp_cell(key, shape=(30, 40)):
  # `shape` is the notebook's (30, 40) unless a test asks for less
  def f(X):
    return jnp.sum(jnp.tanh(X)**2)

  key, subkey1, subkey2 = random.split(key, 3)
  X = random.normal(subkey1, shape)
  V = random.normal(subkey2, shape)

  ans1 = hvp(f, (X,), (V,))
  ans2 = jnp.tensordot(hessian(f)(X), V, 2)

  close = jnp.allclose(ans1, ans2, 1e-4, 1e-4)
  print(close)
  return key, f, X, V, ans1, ans2, close


# reverse-over-forward
def hvp_revfwd(f, primals, tangents):
  g = lambda primals: jvp(f, primals, tangents)[1]
  return grad(g)(primals)


# reverse-over-reverse, only works for single arguments
def hvp_revrev(f, primals, tangents):
  x, = primals
  v, = tangents
  return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


def hvp_timing_cell(f, X, V):
  # the notebook times these with %timeit; here each runs once and the results are returned
  print("Forward over reverse")
  fwdrev = hvp(f, (X,), (V,))
  print("Reverse over forward")
  revfwd = hvp_revfwd(f, (X,), (V,))
  print("Reverse over reverse")
  revrev = hvp_revrev(f, (X,), (V,))

  print("Naive full Hessian materialization")
  naive = jnp.tensordot(hessian(f)(X), V, 2)
  return fwdrev, revfwd, revrev, naive


# ----------------------------------------- Composing VJPs, JVPs, and `vmap` -----------------------------------------
# Jacobian-Matrix and Matrix-Jacobian products

# Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
# First, use a list comprehension to loop over rows in the matrix M.
def loop_mjp(f, x, M):
    y, vjp_fun = vjp(f, x)
    return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

# Now, use vmap to build a computation that does a single fast matrix-matrix
# multiply, rather than an outer loop over vector-matrix multiplies.
def vmap_mjp(f, x, M):
    y, vjp_fun = vjp(f, x)
    outs, = vmap(vjp_fun)(M)
    return outs

def mjp_cell(W, b, y, num_covecs=128):
    # `y` is the vjp cell's; `num_covecs` is the notebook's 128 unless a test asks for less
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key = random.key(0)
    U = random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    print('Non-vmapped Matrix-Jacobian product')

    print('\nVmapped Matrix-Jacobian product')
    vmap_vs = vmap_mjp(f, W, M=U)

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Matrix-Jacobian Products should be identical'
    return key, f, U, loop_vs, vmap_vs


def loop_jmp(f, W, M):
    # jvp immediately returns the primal and tangent values as a tuple,
    # so we'll compute and select the tangents in a list comprehension
    return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

def vmap_jmp(f, W, M):
    _jvp = lambda s: jvp(f, (W,), (s,))[1]
    return vmap(_jvp)(M)

def jmp_cell(f, W, key, num_vecs=128):
    # `f` and `key` are the mjp cell's; `num_vecs` is the notebook's 128 unless a test asks for less
    S = random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    print('Non-vmapped Jacobian-Matrix product')
    vmap_vs = vmap_jmp(f, W, M=S)
    print('\nVmapped Jacobian-Matrix product')

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Jacobian-Matrix products should be identical'
    return S, loop_vs, vmap_vs


# The implementation of `jacfwd` and `jacrev`

from kiln import jacrev as builtin_jacrev

def our_jacrev(f):
    def jacfun(x):
        y, vjp_fun = vjp(f, x)
        # Use vmap to do a matrix-Jacobian product.
        # Here, the matrix is the Euclidean basis, so we get all
        # entries in the Jacobian at once.
        J, = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
        return J
    return jacfun

def our_jacrev_cell(f, W):
    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), 'Incorrect reverse-mode Jacobian results!'
    return builtin_jacrev(f)(W), our_jacrev(f)(W)


from kiln import jacfwd as builtin_jacfwd

def our_jacfwd(f):
    def jacfun(x):
        _jvp = lambda s: jvp(f, (x,), (s,))[1]
        Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
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

    y, f_vjp = vjp(f, 4.)
    out = jit(f_vjp)(1.)
    print(out)
    return y, out


# --------------------------------------- Complex numbers and differentiation ----------------------------------------

def f(z):
  x, y = jnp.real(z), jnp.imag(z)
  return u(x, y) + v(x, y) * 1j

def g(x, y):
  return (u(x, y), v(x, y))


def check(seed):
  key = random.key(seed)

  # random coeffs for u and v
  key, subkey = random.split(key)
  a, b, c, d = random.uniform(subkey, (4,))

  def fun(z):
    x, y = jnp.real(z), jnp.imag(z)
    return u(x, y) + v(x, y) * 1j

  def u(x, y):
    return a * x + b * y

  def v(x, y):
    return c * x + d * y

  # primal point
  key, subkey = random.split(key)
  x, y = random.uniform(subkey, (2,))
  z = x + y * 1j

  # tangent vector
  key, subkey = random.split(key)
  c, d = random.uniform(subkey, (2,))
  z_dot = c + d * 1j

  # check jvp
  _, ans = jvp(fun, (z,), (z_dot,))
  expected = (grad(u, 0)(x, y) * c +
              grad(u, 1)(x, y) * d +
              grad(v, 0)(x, y) * c * 1j+
              grad(v, 1)(x, y) * d * 1j)
  print(jnp.allclose(ans, expected))
  return ans, expected, (a, b, c, d, x, y)

check_jvp = check

def check_jvp_cell(check=check):
  return check(0), check(1), check(2)


def check(seed):
  key = random.key(seed)

  # random coeffs for u and v
  key, subkey = random.split(key)
  a, b, c, d = random.uniform(subkey, (4,))

  def fun(z):
    x, y = jnp.real(z), jnp.imag(z)
    return u(x, y) + v(x, y) * 1j

  def u(x, y):
    return a * x + b * y

  def v(x, y):
    return c * x + d * y

  # primal point
  key, subkey = random.split(key)
  x, y = random.uniform(subkey, (2,))
  z = x + y * 1j

  # cotangent vector
  key, subkey = random.split(key)
  c, d = random.uniform(subkey, (2,))
  z_bar = jnp.array(c + d * 1j)  # for dtype control

  # check vjp
  _, fun_vjp = vjp(fun, z)
  ans, = fun_vjp(z_bar)
  expected = (grad(u, 0)(x, y) * c +
              grad(v, 0)(x, y) * (-d) +
              grad(u, 1)(x, y) * c * (-1j) +
              grad(v, 1)(x, y) * (-d) * (-1j))
  assert jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5)
  return ans, expected, (a, b, c, d, x, y)

check_vjp = check

def check_vjp_cell(check=check):
  return check(0), check(1), check(2)


def complex_to_real_grad_cell():
  def f(z):
    x, y = jnp.real(z), jnp.imag(z)
    return x**2 + y**2

  z = 3. + 4j
  return grad(f)(z)


def holomorphic_grad_cell():
  def f(z):
    return jnp.sin(z)

  z = 3. + 4j
  return grad(f, holomorphic=True)(z)


def non_holomorphic_grad_cell():
  def f(z):
    return jnp.conjugate(z)

  z = 3. + 4j
  return grad(f, holomorphic=True)(z)  # f is not actually holomorphic!


A = jnp.array([[5.,    2.+3j,    5j],
              [2.-3j,   7.,  1.+7j],
              [-5j,  1.-7j,    12.]])

def f(X):
    L = jnp.linalg.cholesky(X)
    return jnp.sum((L - jnp.sin(L))**2)

def cholesky_grad_cell(A=A):
    return grad(f, holomorphic=True)(A)


# ------------------------------------------------------------------------------------------------------------------

def run(key=key, shape=(30, 40), num_covecs=128, num_vecs=128):
    """The notebook's cells in order, threading its key, W, b, y and f from cell to cell; a dict of what they return."""
    out = {"grad_tanh": grad_tanh_cells()}
    key, W, b = init_params(key)
    out.update(W=W, b=b, argnums=argnums_cell(W, b), dict=dict_cell(W, b), value_and_grad=value_and_grad_cell(W, b))
    key, *out["numerical"] = numerical_differences_cell(W, b, key)
    check_grads_cell(W, b)
    out.update(jacobians=jacobians_cell(W, b), jacobians_dict=jacobians_dict_cell(W, b), hessian=hessian_cell(W, b))
    key, *out["jvp"] = jvp_cell(W, b, key)
    key, *out["vjp"] = vjp_cell(W, b, key)
    out["vgrad"] = vgrad_cell()
    key, hf, X, V, *out["hvp"] = hvp_cell(key, shape)
    out.update(X=X, V=V, hvp_timing=hvp_timing_cell(hf, X, V))
    key, f_W, *out["mjp"] = mjp_cell(W, b, out["vjp"][1], num_covecs)
    out["jmp"] = jmp_cell(f_W, W, key, num_vecs)
    out.update(our_jacrev=our_jacrev_cell(f_W, W), our_jacfwd=our_jacfwd_cell(f_W, W),
               control_flow=python_control_flow_cell(), check_jvp=check_jvp_cell(), check_vjp=check_vjp_cell(),
               complex_to_real=complex_to_real_grad_cell(), holomorphic=holomorphic_grad_cell(),
               non_holomorphic=non_holomorphic_grad_cell(), cholesky=cholesky_grad_cell())
    return out
