# ruff: noqa: E111, E114, E302, E305, E402, E701, E704, E731, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs/new_docs/301/cookbook.md ("The Autodiff Cookbook with JVP and VJP", jax-ml/jax
# cec06d116c), all 31 of them, in order, ported to kiln by changing imports only. The imports stay at the top level,
# at column 0, where the page has them, so that tests/examples/ported.py can put JAX's back. The first cell's
# `key = random.key(0)` is top-level code, as on the page; every other cell is a function, `..._cell()`, whose body
# is the cell's code. The page is a notebook whose cells share one namespace: the key threaded from split to split,
# `W`, `b`, `f` (redefined from section to section), `y`, `u`, `v`, `J`, `z`, `t`, ...: each cell function makes the
# names it assigns module globals (a `global` line, the one addition), so that running the cells in the page's
# order (`run`) gives every cell what it gets on the page. Where a cell prints or displays a value, the function
# returns it (a value printed and returned is computed once); where it rebinds a name it printed (`J`, `loop_vs`),
# it also returns the earlier value.
# Left out: the %timeit lines (the cells that time them run each computation once instead, and print the titles).
# Sizes are the page's unless a test asks for fewer (`run(shape=..., num_covecs=..., num_vecs=...)`): the
# Hessian-vector products' 30x40 matrices (whose Hessian has 1.4 million entries) and the 128 rows of the
# matrix-Jacobian products (128 eager jvp/vjp calls), which take most of the time on CPU.
# tests/examples/test_docs_cookbook_301.py checks it against NumPy closed forms, float64 finite differences and
# Python loops; test_docs_cookbook_301_against_jax.py runs it under both libraries.

import kiln.numpy as jnp
from kiln import grad, jit, vmap
from kiln import random

key = random.key(0)

# --------------------------------------------- Setup: a running example ---------------------------------------------

def setup_cell():
    global sigmoid, predict, inputs, targets, loss, key, W_key, b_key, W, b
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

    # Initialize random model coefficients
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())
    return W, b

# ---------------------------------------- Jacobians and Hessians using `jacfwd` and `jacrev` ------------------------

from kiln import jacfwd, jacrev

def jacobians_cell():
    global f, J
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    J = jacfwd(f)(W)
    print("jacfwd result, with shape", J.shape)
    print(J)
    J_fwd = J  # (for the tests: J is rebound next)

    J = jacrev(f)(W)
    print("jacrev result, with shape", J.shape)
    print(J)
    return J_fwd, J


def jacobians_dict_cell():
    global predict_dict, J_dict
    def predict_dict(params, inputs):
        return predict(params['W'], params['b'], inputs)

    J_dict = jacrev(predict_dict)({'W': W, 'b': b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)
    return J_dict


def hessian_cell():
    global hessian, H
    def hessian(f):
        return jacfwd(jacrev(f))

    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)
    return H

# ---------------------------------------------------- Stopping gradients ---------------------------------------------

from kiln import lax

def td_loss_cell():
  global value_fn, td_loss, theta, s_prev, r, s
  def value_fn(theta, state):
    return jnp.dot(theta, state)

  def td_loss(theta, s_prev, r, s):
    v_prev = value_fn(theta, s_prev)
    target = r + value_fn(theta, s)
    return -0.5 * (lax.stop_gradient(target) - v_prev) ** 2

  theta = jnp.array([0.1, -0.1, 0.])
  s_prev, r, s = jnp.array([1., 2., -1.]), 1., jnp.array([2., 1., 0.])
  g = grad(td_loss)(theta, s_prev, r, s)
  print(g)
  return g


def straight_through_cell():
  global straight_through_round
  def straight_through_round(x):
    return x + lax.stop_gradient(jnp.round(x) - x)

  rounded = straight_through_round(1.7)
  print(rounded)        # rounds like round
  g = grad(straight_through_round)(1.7)
  print(g)  # differentiates like the identity
  return rounded, g

# ------------------------------------- Jacobian-Vector products (JVPs, aka forward-mode autodiff) --------------------

from kiln import jvp

def jvp_cell():
    global f, key, subkey, v, y, u
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jvp(f, (W,), (v,))
    return v, y, u

# ------------------------------------- Vector-Jacobian products (VJPs, aka reverse-mode autodiff) --------------------

from kiln import vjp

def vjp_cell():
    global f, y, vjp_fun, key, subkey, u, v
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)
    return u, y, v

# ---------------------------------------- `jax.linearize`: one forward pass, many JVPs -------------------------------

from kiln import linearize

def linearize_cell():
    global f, y, f_jvp
    f = lambda W: predict(W, b, inputs)

    y, f_jvp = linearize(f, W)
    print(y)
    return y


def linearize_apply_cell():
    global key, k1, k2, v1, v2
    key, k1, k2 = random.split(key, 3)
    v1, v2 = random.normal(k1, W.shape), random.normal(k2, W.shape)
    t1 = f_jvp(v1)
    print(t1)
    t2 = f_jvp(v2)
    print(t2)
    return v1, v2, t1, t2


from kiln import linear_transpose, vjp

def linear_transpose_cell():
    global f_vjp, y2, f_vjp_ref, u
    f_vjp = linear_transpose(f_jvp, W)      # transpose of the linearization...

    y2, f_vjp_ref = vjp(f, W)               # ...is exactly what vjp computes

    u = jnp.ones_like(y)
    close = jnp.allclose(f_vjp(u)[0], f_vjp_ref(u)[0])
    print(close)
    return f_vjp(u)[0], f_vjp_ref(u)[0], close

# ------------------------------------------------ Vector-valued gradients with VJPs ----------------------------------

from kiln import vjp

def vgrad_cell():
  global vgrad
  def vgrad(f, x):
    y, vjp_fn = vjp(f, x)
    return vjp_fn(jnp.ones(y.shape))[0]

  out = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))
  print(out)
  return out

# ---------------------------------- Hessian-vector products using both forward- and reverse-mode ---------------------

from kiln import jvp, grad

def hvp_def_cell():
  global hvp
  # forward-over-reverse
  def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def hvp_cell(shape=(30, 40)):
  global f, key, subkey1, subkey2, X, V, ans1, ans2
  def f(X):
    return jnp.sum(jnp.tanh(X)**2)

  key, subkey1, subkey2 = random.split(key, 3)
  X = random.normal(subkey1, shape)  # (the page's (30, 40), unless a test asks for a smaller shape)
  V = random.normal(subkey2, shape)

  ans1 = hvp(f, (X,), (V,))
  ans2 = jnp.tensordot(hessian(f)(X), V, 2)

  close = jnp.allclose(ans1, ans2, 1e-4, 1e-4)
  print(close)
  return X, V, ans1, ans2, close


def hvp_revfwd_def_cell():
  global hvp_revfwd
  # reverse-over-forward
  def hvp_revfwd(f, primals, tangents):
    g = lambda primals: jvp(f, primals, tangents)[1]
    return grad(g)(primals)


def hvp_timing_cell():
  global hvp_revrev
  # reverse-over-reverse, only works for single arguments
  def hvp_revrev(f, primals, tangents):
    x, = primals
    v, = tangents
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


  # (the %timeit lines left out: each computation runs once)
  print("Forward over reverse")
  fwdrev = hvp(f, (X,), (V,))
  print("Reverse over forward")
  revfwd = hvp_revfwd(f, (X,), (V,))
  print("Reverse over reverse")
  revrev = hvp_revrev(f, (X,), (V,))

  print("Naive full Hessian materialization")
  naive = jnp.tensordot(hessian(f)(X), V, 2)
  return fwdrev, revfwd, revrev, naive

# --------------------------------------- Jacobian-Matrix and Matrix-Jacobian products --------------------------------

def mjp_cell(num_covecs=128):
    global f, loop_mjp, vmap_mjp, key, U, loop_vs, vmap_vs
    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

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

    key = random.key(0)
    # (num_covecs = 128: the page's, unless a test asks for fewer)
    U = random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    print('Non-vmapped Matrix-Jacobian product')

    print('\nVmapped Matrix-Jacobian product')
    vmap_vs = vmap_mjp(f, W, M=U)

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Matrix-Jacobian Products should be identical'
    return U, loop_vs, vmap_vs


def jmp_cell(num_vecs=128):
    global loop_jmp, vmap_jmp, S, loop_vs, vmap_vs
    def loop_jmp(f, W, M):
        # jvp immediately returns the primal and tangent values as a tuple,
        # so we'll compute and select the tangents in a list comprehension
        return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    # (num_vecs = 128: the page's, unless a test asks for fewer)
    S = random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    print('Non-vmapped Jacobian-Matrix product')
    vmap_vs = vmap_jmp(f, W, M=S)
    print('\nVmapped Jacobian-Matrix product')

    assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Jacobian-Matrix products should be identical'
    return S, loop_vs, vmap_vs

# ------------------------------------------- The implementation of `jacfwd` and `jacrev` -----------------------------

from kiln import jacrev as builtin_jacrev

def our_jacrev_cell():
    global our_jacrev
    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = vjp(f, x)
            # Use vmap to do a matrix-Jacobian product.
            # Here, the matrix is the Euclidean basis, so we get all
            # entries in the Jacobian at once.
            J, = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J
        return jacfun

    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), 'Incorrect reverse-mode Jacobian results!'
    return builtin_jacrev(f)(W), our_jacrev(f)(W)


from kiln import jacfwd as builtin_jacfwd

def our_jacfwd_cell():
    global our_jacfwd
    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: jvp(f, (x,), (s,))[1]
            Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
            return jnp.transpose(Jt)
        return jacfun

    assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), 'Incorrect forward-mode Jacobian results!'
    return builtin_jacfwd(f)(W), our_jacfwd(f)(W)


def control_flow_cell():
    global f, y, f_vjp
    def f(x):
        try:
            if x < 3:
                return 2 * x ** 3
            else:
                raise ValueError
        except ValueError:
            return jnp.pi * x

    y, f_vjp = vjp(f, 4.)
    g = jit(f_vjp)(1.)
    print(g)
    return y, g

# ------------------------------------------- Complex numbers and differentiation -------------------------------------

def complex_jvp_cell():
  global u, v, fun, z, x, y, J, t, t_out, t_pair
  def u(x, y): return x**2 + jnp.sin(y)
  def v(x, y): return x * y

  def fun(z):  # not holomorphic!
    x, y = jnp.real(z), jnp.imag(z)
    return u(x, y) + v(x, y) * 1j

  z = 1.5 + 0.5j
  x, y = jnp.real(z), jnp.imag(z)
  J = jnp.array([[grad(u, 0)(x, y), grad(u, 1)(x, y)],
                 [grad(v, 0)(x, y), grad(v, 1)(x, y)]])

  t = 0.7 - 0.3j
  _, t_out = jvp(fun, (z,), (t,))
  t_pair = J @ jnp.array([jnp.real(t), jnp.imag(t)])
  close = jnp.allclose(t_out, t_pair[0] + t_pair[1] * 1j)
  print(close)
  return J, t_out, t_pair, close


def complex_vjp_cell():
  global w, fun_vjp, w_out
  w = -0.2 + 1.1j

  _, fun_vjp = vjp(fun, z)
  w_out, = fun_vjp(w)

  bilinear = jnp.allclose(jnp.real(w * t_out), jnp.real(w_out * t))
  print(bilinear)       # True
  sesquilinear = jnp.allclose(jnp.real(jnp.conj(w) * t_out),
                              jnp.real(jnp.conj(w_out) * t))
  print(sesquilinear)                  # False!
  return w_out, bilinear, sesquilinear


def holomorphic_sin_cell():
  global t_out, sin_vjp, w_out
  _, t_out = jvp(jnp.sin, (z,), (t,))
  _, sin_vjp = vjp(jnp.sin, z)
  w_out, = sin_vjp(w)
  jvp_close = jnp.allclose(t_out, jnp.cos(z) * t)
  print(jvp_close)
  vjp_close = jnp.allclose(w_out, jnp.cos(z) * w)
  print(vjp_close)
  return t_out, w_out, jvp_close, vjp_close


def grad_abs2_cell():
  global f
  def f(z):
    x, y = jnp.real(z), jnp.imag(z)
    return x**2 + y**2      # |z|^2, minimized at z = 0

  g = grad(f)(3. + 4j)
  print(g)   # 6 - 8j: conjugate of the steepest-ascent 6 + 8j
  return g


def descent_cell():
  global z
  z = 3. + 4j
  for _ in range(100):
    z = z - 0.05 * jnp.conj(grad(f)(z))   # with the conjugate: descends
  descended = f(z)
  print(descended)

  z = 3. + 4j
  for _ in range(100):
    z = z - 0.05 * grad(f)(z)             # without: the imaginary part grows!
  grown = f(z)
  print(grown)
  return descended, grown


def wirtinger_cell():
  global z, fx, fy, dfdz, dfdzbar, t_out
  z = 1.5 + 0.5j                # the point where we computed J above

  fx = J[0, 0] + J[1, 0] * 1j   # df/dx = du/dx + i dv/dx
  fy = J[0, 1] + J[1, 1] * 1j   # df/dy = du/dy + i dv/dy
  dfdz    = 0.5 * (fx - 1j * fy)
  dfdzbar = 0.5 * (fx + 1j * fy)

  _, t_out = jvp(fun, (z,), (t,))
  close = jnp.allclose(t_out, dfdz * t + dfdzbar * jnp.conj(t))
  print(close)
  return dfdz, dfdzbar, t_out, close

# ------------------------------------------ Holomorphic functions and `grad(f, holomorphic=True)` ---------------------

def holomorphic_grad_cell():
  g = grad(jnp.sin, holomorphic=True)(3. + 4j)
  print(g)
  c = jnp.cos(3. + 4j)
  print(c)
  return g, c


def not_holomorphic_cell():
  global f
  def f(z):
    return jnp.conjugate(z)   # not holomorphic!

  return grad(f, holomorphic=True)(3. + 4j)  # the cell displays this value


def cholesky_cell():
  global A, f
  A = jnp.array([[5.,    2.+3j,    5j],
                [2.-3j,   7.,  1.+7j],
                [-5j,  1.-7j,    12.]])

  def f(X):
      L = jnp.linalg.cholesky(X)
      return jnp.sum((L - jnp.sin(L))**2)

  return grad(f, holomorphic=True)(A)  # the cell displays this value

# ---------------------------------------------------------------------------------------------------------------------

# (label, cell) in the page's order.
CELLS = [
    ("setup", setup_cell), ("jacobians", jacobians_cell), ("jacobians_dict", jacobians_dict_cell),
    ("hessian", hessian_cell), ("td_loss", td_loss_cell), ("straight_through", straight_through_cell),
    ("jvp", jvp_cell), ("vjp", vjp_cell), ("linearize", linearize_cell), ("linearize_apply", linearize_apply_cell),
    ("linear_transpose", linear_transpose_cell), ("vgrad", vgrad_cell), ("hvp_def", hvp_def_cell),
    ("hvp", hvp_cell), ("hvp_revfwd_def", hvp_revfwd_def_cell), ("hvp_timing", hvp_timing_cell),
    ("mjp", mjp_cell), ("jmp", jmp_cell), ("our_jacrev", our_jacrev_cell), ("our_jacfwd", our_jacfwd_cell),
    ("control_flow", control_flow_cell), ("complex_jvp", complex_jvp_cell), ("complex_vjp", complex_vjp_cell),
    ("holomorphic_sin", holomorphic_sin_cell), ("grad_abs2", grad_abs2_cell), ("descent", descent_cell),
    ("wirtinger", wirtinger_cell), ("holomorphic_grad", holomorphic_grad_cell),
    ("not_holomorphic", not_holomorphic_cell), ("cholesky", cholesky_cell),
]

SIZED = {"hvp": "shape", "mjp": "num_covecs", "jmp": "num_vecs"}  # the cells whose sizes a test may reduce


def run(**sizes):
  """The page's cells in order, at the page's sizes or those given (`shape`, `num_covecs`, `num_vecs`):
  {label: what the cell returns}."""
  return {label: cell(**{k: v for k, v in sizes.items() if SIZED.get(label) == k}) for label, cell in CELLS}
