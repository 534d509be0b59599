# ruff: noqa: E111, E114, E302, E305, E402, E731, F811, F841, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
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
# The code cells of JAX's docs/new_docs/301/custom-derivatives.md ("Custom derivative rules with hijax primitives",
# jax-ml/jax cec06d116c), all 50 of them, in order, ported to kiln by changing imports only. The imports stay at the
# top level, at column 0, where the page has them, so that tests/examples/ported.py can put JAX's back. Every cell is
# a function, `..._cell()`, whose body is the cell's code; `CELLS` lists them in the page's order (a cell the page
# repeats word for word, `print(grad(log1pexp)(100.))`, is listed again under another label) and `run` calls them.
# The page's cells read names that earlier cells defined (`f`, `log1pexp`, `fixed_point`, `mul`, `x`, `grad_ref`,
# `f_vjp`, ...) and redefine some of them (`newton_sqrt` calls whichever `fixed_point` is defined when it runs): the
# cells that define those make them module globals (a `global` line, the one addition), so that running the cells in
# the page's order gives every cell what it gets on the page. Where a cell prints or displays a value, the function
# computes it once, prints it, and returns it (or returns its locals, where the tests need more of them).
# Changes beyond the imports and those returns:
# - the page imports `ValAccum`, `RefAccum`, `NullAccum`, `linearize_from_jvp` and `vjp_from_lin` from
#   jax.experimental.hijax, which JAX 0.10.2 (installed here) does not export: the two cells take them from the
#   module, imported at the top (`hijax.ValAccum`), so that loading the JAX side of the port does not fail (under
#   JAX 0.10.2 those cells raise AttributeError where the page's import would raise ImportError);
# - matplotlib: the gradient-clipping cells return the curves they plot;
# - the `pdb` example keeps `pdb.set_trace()` in its backward pass (the tests replace it); its markdown-only
#   `jax.grad(foo)(3.)` is `debug_cell`;
# - `custom_vjp_logs_cell` keeps the cotangents the page unpacks into `_`.
# tests/examples/test_docs_custom_derivatives_301.py checks the cells against closed forms, float64 finite
# differences and the prose's claims; test_docs_custom_derivatives_301_against_jax.py runs them under both libraries.

# ------------------------------------------------------ TL;DR ------------------------------------------------------

import kiln as jax
import kiln.numpy as jnp
from kiln.experimental.hijax import VJPHiPrimitive
from kiln.experimental import hijax

def tldr_def_cell():
  global SinTimesY, f

  class SinTimesY(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
      self.in_avals = (x_aval, y_aval)  # input types
      self.out_aval = x_aval            # output type
      self.params = {}                  # static parameters (none here)
      super().__init__()

    # Implementation, used for evaluation and lowering (e.g. under jit).
    def expand(self, x, y):
      return jnp.sin(x) * y

    # Reverse-mode: forward pass returns (primal_out, residuals).
    def vjp_fwd(self, nzs_in, x, y):
      return self(x, y), (jnp.cos(x), jnp.sin(x), y)

    # Reverse-mode: backward pass maps (residuals, output cotangent) to a tuple
    # of input cotangents.
    def vjp_bwd_retval(self, res, g):
      cos_x, sin_x, y = res
      return (cos_x * g * y, sin_x * g)

    # Forward-mode rule (optional, only needed under e.g. jax.jvp).
    def jvp(self, primals, tangents):
      (x, y), (x_dot, y_dot) = primals, tangents
      return self(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

  def f(x, y):
    return SinTimesY(jax.typeof(x), jax.typeof(y))(x, y)


from kiln import jvp, grad

def tldr_cell():
  out = f(2., 3.)
  print(out)
  y, y_dot = jvp(f, (2., 3.), (1., 0.))
  print(y)
  print(y_dot)
  g = grad(f)(2., 3.)
  print(g)
  return out, y, y_dot, g

# ---------------------------------------------- Example: Numerical stability ----------------------------------------

def log1pexp_cell():
  global log1pexp
  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

  return log1pexp(3.)  # the cell displays this value


from kiln import jit, grad, vmap

def log1pexp_transforms_cell():
  y = jit(log1pexp)(3.)
  print(y)
  g = jit(grad(log1pexp))(3.)
  print(g)
  gv = vmap(jit(grad(log1pexp)))(jnp.arange(3.))
  print(gv)
  return y, g, gv


def log1pexp_grad_100_cell():
  g = grad(log1pexp)(100.)
  print(g)
  return g


def log1pexp_jaxpr_cell():
  return jit(grad(log1pexp)).trace(100.).jaxpr  # the cell displays this jaxpr


def log1pexp_hijax_cell():
  global Log1pExp, log1pexp

  class Log1pExp(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return jnp.log(1. + jnp.exp(x))

    def vjp_fwd(self, nzs_in, x):
      return self(x), x

    def vjp_bwd_retval(self, x, g):
      return ((1 - 1/(1 + jnp.exp(x))) * g,)

    def jvp(self, primals, tangents):
      (x,), (x_dot,) = primals, tangents
      return self(x), (1 - 1/(1 + jnp.exp(x))) * x_dot

    def batch_dim_rule(self, axis_data, in_dims):
      return in_dims[0]

  def log1pexp(x):
    return Log1pExp(jax.typeof(x))(x)

# ------------------------------------- Example: Enforcing a differentiation convention ------------------------------

def f_on_r_cell():
  global f
  def f(x):
    return x / (1 + jnp.sqrt(x))


def grad_f_0_cell():
  g = grad(f)(0.)
  print(g)
  return g


def f_on_r_plus_cell():
  global FOnRPlus, f

  class FOnRPlus(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return x / (1 + jnp.sqrt(x))

    def vjp_fwd(self, nzs_in, x):
      return self(x), x

    def vjp_bwd_retval(self, x, g):
      return (((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * g,)

  def f(x):
    return FOnRPlus(jax.typeof(x))(x)

# ---------------------------------------------- Example: Gradient clipping ------------------------------------------

def clip_gradient_cell():
  global ClipGradient, clip_gradient

  class ClipGradient(VJPHiPrimitive):
    def __init__(self, lo_aval, hi_aval, x_aval):
      self.in_avals = (lo_aval, hi_aval, x_aval)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, lo, hi, x):
      return x  # identity function

    def vjp_fwd(self, nzs_in, lo, hi, x):
      return self(lo, hi, x), (lo, hi)  # save bounds as residuals

    def vjp_bwd_retval(self, res, g):
      lo, hi = res
      return (None, None, jnp.clip(g, lo, hi))  # None: zero cotangents for lo, hi

    def batch_dim_rule(self, axis_data, in_dims):
      return in_dims[2]

  def clip_gradient(lo, hi, x):
    return ClipGradient(jax.typeof(lo), jax.typeof(hi), jax.typeof(x))(lo, hi, x)


def sin_curves_cell():
  global t
  # (matplotlib left out: the cell plots these two curves)
  t = jnp.linspace(0, 10, 1000)

  return jnp.sin(t), vmap(grad(jnp.sin))(t)


def clip_sin_cell():
  global clip_sin
  def clip_sin(x):
    x = clip_gradient(-0.75, 0.75, x)
    return jnp.sin(x)

  return clip_sin(t), vmap(grad(clip_sin))(t)  # (the cell plots these two curves)

# ------------------------------------------------ Example: Python debugging -----------------------------------------

import pdb

def debug_def_cell():
  global Debug, debug, foo

  class Debug(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return x  # acts like identity

    def vjp_fwd(self, nzs_in, x):
      return self(x), x

    def vjp_bwd_retval(self, x, g):
      pdb.set_trace()
      return (g,)

  def debug(x):
    return Debug(jax.typeof(x))(x)

  def foo(x):
    y = x ** 2
    y = debug(y)  # insert pdb in corresponding backward pass step
    return jnp.sin(y)


def debug_cell():
  return jax.grad(foo)(3.)  # (the page shows this in a plain code block, with its pdb session)

# ---------------------------- Example: Implicit function differentiation of iterative implementations ---------------

from kiln.lax import while_loop

def fixed_point_loop_cell():
  global fixed_point
  def fixed_point(f, a, x_guess):
    def cond_fun(carry):
      x_prev, x = carry
      return jnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
      _, x = carry
      return x, f(a, x)

    _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star


def newton_sqrt_cell():
  global newton_sqrt
  def newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)
    return fixed_point(update, a, a)


def newton_sqrt_2_cell():
  y = newton_sqrt(2.)
  print(y)
  return y


def jit_vmap_newton_sqrt_cell():
  y = jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.]))
  print(y)
  return y


from functools import partial
from kiln import vjp

def fixed_point_hijax_cell():
  global FixedPoint, rev_iter, fixed_point

  class FixedPoint(VJPHiPrimitive):
    def __init__(self, a_aval, x_aval, *, f):
      self.in_avals = (a_aval, x_aval)
      self.out_aval = x_aval
      self.params = dict(f=f)
      super().__init__()

    def expand(self, a, x_guess):
      def cond_fun(carry):
        x_prev, x = carry
        return jnp.abs(x_prev - x) > 1e-6

      def body_fun(carry):
        _, x = carry
        return x, self.f(a, x)

      _, x_star = while_loop(cond_fun, body_fun, (x_guess, self.f(a, x_guess)))
      return x_star

    def vjp_fwd(self, nzs_in, a, x_guess):
      x_star = self(a, x_guess)
      return x_star, (a, x_star)

    def vjp_bwd_retval(self, res, x_star_bar):
      a, x_star = res
      _, vjp_a = vjp(lambda a: self.f(a, x_star), a)
      a_bar, = vjp_a(fixed_point(partial(rev_iter, self.f),
                                 (a, x_star, x_star_bar),
                                 x_star_bar))
      return a_bar, jnp.zeros_like(x_star)

  def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]

  def fixed_point(f, a, x_guess):
    a_aval = jax.tree.map(jax.typeof, a)
    x_aval = jax.tree.map(jax.typeof, x_guess)
    return FixedPoint(a_aval, x_aval, f=f)(a, x_guess)


def grad_newton_sqrt_cell():
  g = grad(newton_sqrt)(2.)
  print(g)
  gg = grad(grad(newton_sqrt))(2.)
  print(gg)
  return g, gg


def grad_sqrt_cell():
  g = grad(jnp.sqrt)(2.)
  print(g)
  gg = grad(grad(jnp.sqrt))(2.)
  print(gg)
  return g, gg

# ---------------------------------------- Basic usage of `VJPHiPrimitive` -------------------------------------------

def square_cell():
  class Square(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return x * x

  def square(x):
    return Square(jax.typeof(x))(x)

  out = square(3.)
  print(out)
  return locals()


def mul_cell():
  global Mul, mul

  class Mul(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
      self.in_avals = (x_aval, y_aval)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x, y):
      return x * y

    def vjp_fwd(self, nzs_in, x, y):
      return self(x, y), (x, y)

    def vjp_bwd_retval(self, res, g):
      x, y = res
      return (g * y, x * g)

  def mul(x, y):
    return Mul(jax.typeof(x), jax.typeof(y))(x, y)

  g0 = grad(mul)(2., 3.)
  print(g0)
  g1 = grad(mul, 1)(2., 3.)
  print(g1)
  return g0, g1


from kiln.experimental.hijax import ShapedArray

def take_elt_cell():
  global TakeElt, take_elt
  ValAccum, RefAccum, NullAccum = hijax.ValAccum, hijax.RefAccum, hijax.NullAccum  # (the page imports them)

  class TakeElt(VJPHiPrimitive):
    def __init__(self, x_aval, i):
      self.in_avals = (x_aval,)
      self.out_aval = ShapedArray((), x_aval.dtype)
      self.params = dict(i=i)
      super().__init__()

    def expand(self, x):
      return x[self.i]

    def vjp_fwd(self, nzs_in, x):
      return self(x), None

    def vjp_bwd(self, res, g, x_acc):
      if isinstance(x_acc, NullAccum):
        return                              # gradient not wanted: skip the work
      elif isinstance(x_acc, RefAccum):
        x_acc.ref[self.i] += g              # sparse in-place update
      else:
        one_hot = jnp.zeros(x_acc.aval.shape, x_acc.aval.dtype).at[self.i].add(g)
        x_acc.accum(one_hot)                # dense functional fallback

  def take_elt(x, i):
    return TakeElt(jax.typeof(x), i)(x)


def take_elt_grad_cell():
  global x
  x = jnp.arange(10.)
  g = grad(lambda x: take_elt(x, 3))(x)
  print(g)
  return g


def grad_ref_cell():
  global grad_ref
  grad_ref = jax.new_ref(jnp.zeros(10))

  for i in [3, 5, 3]:
    _, f_vjp = jax.vjp(lambda x: take_elt(x, i), x)
    f_vjp.with_refs(grad_ref)(1.0)

  print(grad_ref)
  return grad_ref


def bwd_jaxpr_cell():
  def bwd_jaxpr():
    _, f_vjp = jax.vjp(lambda x: take_elt(x, 3), x)
    f_vjp.with_refs(grad_ref)(1.0)

  jaxpr = jax.jit(bwd_jaxpr).trace().jaxpr
  print(jaxpr)
  return jaxpr


def sin_jvp_cell():
  class Sin(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return jnp.sin(x)

    def jvp(self, primals, tangents):
      (x,), (x_dot,) = primals, tangents
      return self(x), jnp.cos(x) * x_dot

  def sin(x):
    return Sin(jax.typeof(x))(x)

  y, y_dot = jvp(sin, (3.,), (1.,))
  print(y)
  print(y_dot)
  return locals()


def sin_lin_cell():
  class Sin(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return jnp.sin(x)

    def lin(self, nzs_in, x):
      return self(x), jnp.cos(x)

    def linearized(self, cos_x, x_dot):
      return cos_x * x_dot

  def sin(x):
    return Sin(jax.typeof(x))(x)

  y, f_lin = jax.linearize(sin, 3.)
  print(y)
  y_dot = f_lin(1.)
  print(y_dot)
  return locals()


def sin_derived_cell():
  linearize_from_jvp, vjp_from_lin = hijax.linearize_from_jvp, hijax.vjp_from_lin  # (the page imports them)

  class Sin(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return jnp.sin(x)

    def jvp(self, primals, tangents):
      (x,), (x_dot,) = primals, tangents
      return self(x), jnp.cos(x) * x_dot

    lin, linearized = linearize_from_jvp
    vjp_fwd, vjp_bwd_retval = vjp_from_lin

  def sin(x):
    return Sin(jax.typeof(x))(x)

  g = grad(sin)(3.)
  print(g)
  y, sin_lin = jax.linearize(sin, 3.)
  y_dot = sin_lin(1.)
  print(y_dot)
  gg = grad(grad(sin))(3.)
  print(gg)
  return locals()


def mul_jaxpr_cell():
  return jit(mul).trace(2., 3.).jaxpr  # the cell displays this jaxpr


def noisy_cell():
  global Noisy, noisy

  class Noisy(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      print('called expand!')
      return jnp.sin(x)

  def noisy(x):
    return Noisy(jax.typeof(x))(x)

  out = noisy(3.)
  print(out)
  return out


def jit_noisy_cell():
  y1 = jit(noisy)(3.)
  print(y1)
  y2 = jit(noisy)(3.)  # tracing is cached: no more 'called expand!'
  print(y2)
  return y1, y2


def g_cell():
  global G, g

  class G(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      if x > 0:
        return jnp.sin(x)
      else:
        return jnp.cos(x)

    def vjp_fwd(self, nzs_in, x):
      return self(x), x

    def vjp_bwd_retval(self, x, g):
      if x > 0:
        return (2 * g,)
      else:
        return (3 * g,)

  def g(x):
    return G(jax.typeof(x))(x)

  g_pos = grad(g)(1.)
  print(g_pos)
  g_neg = grad(g)(-1.)
  print(g_neg)
  return g_pos, g_neg


def mulv_cell():
  global MulV, mul, x, y

  class MulV(Mul):
    def batch_dim_rule(self, axis_data, in_dims):
      x_dim, y_dim = in_dims
      return y_dim if x_dim is None else x_dim

  def mul(x, y):
    return MulV(jax.typeof(x), jax.typeof(y))(x, y)

  x = jnp.arange(3.)
  y = jnp.arange(3.) + 1.
  both = vmap(mul)(x, y)
  print(both)
  x_only = vmap(mul, in_axes=(0, None))(x, 2.)
  print(x_only)
  grads = vmap(grad(mul))(x, y)
  print(grads)
  return both, x_only, grads


def matvec_cell():
  def matvec_kernel(A, x):          # stand-in for e.g. a Pallas or ffi call
    return A @ x

  def batched_matvec_kernel(A, X):  # the kernel's dedicated batched variant
    return X @ A.T

  class MatVec(VJPHiPrimitive):
    def __init__(self, A_aval, x_aval):
      self.in_avals = (A_aval, x_aval)
      self.out_aval = ShapedArray((A_aval.shape[0],), A_aval.dtype)
      self.params = {}
      super().__init__()

    def expand(self, A, x):
      return matvec_kernel(A, x)

    def batch(self, axis_data, args, dims):
      A, X = args
      A_dim, x_dim = dims
      assert A_dim is None
      X = jnp.moveaxis(X, x_dim, 0)  # stack the batch of vectors along axis 0
      return batched_matvec_kernel(A, X), 0

  def matvec(A, x):
    return MatVec(jax.typeof(A), jax.typeof(x))(A, x)

  A = jnp.arange(6.).reshape(2, 3)
  xs = jnp.arange(12.).reshape(4, 3)  # batch of 4 vectors
  out = vmap(matvec, in_axes=(None, 0))(A, xs)
  print(out)
  return locals()

# ------------------------------------------------ More features and details -----------------------------------------

from collections import namedtuple
from kiln.experimental.hijax import Zero, instantiate_zeros

def point_cell():
  global Point
  Point = namedtuple("Point", ["x", "y"])

  class FPt(VJPHiPrimitive):
    def __init__(self, pt_aval):
      self.in_avals = (pt_aval,)
      self.out_aval = {'a': pt_aval.x, 'b': (pt_aval.x, pt_aval.y)}
      self.params = {}
      super().__init__()

    def expand(self, pt):
      return {'a': pt.x ** 2, 'b': (jnp.sin(pt.x), jnp.cos(pt.y))}

    def vjp_fwd(self, nzs_in, pt):
      return self(pt), pt

    def vjp_bwd_retval(self, pt, g):
      g = jax.tree.map(instantiate_zeros, g,
                       is_leaf=lambda x: isinstance(x, Zero))
      a_bar, (b0_bar, b1_bar) = g['a'], g['b']
      x_bar = 2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar
      y_bar = -jnp.sin(pt.y) * b1_bar
      return (Point(x_bar, y_bar),)

  def f(pt):
    return FPt(jax.tree.map(jax.typeof, pt))(pt)

  def fun(pt):
    dct = f(pt)
    return dct['a'] + dct['b'][0]

  pt = Point(1., 2.)
  out = f(pt)
  print(out)
  pt_grad = grad(fun)(pt)
  print(pt_grad)
  return locals()


def mul2_cell():
  class Mul2(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
      self.in_avals = (x_aval, y_aval)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x, y):
      return x * y

    def vjp_fwd(self, nzs_in, x, y):
      x_nz, y_nz = nzs_in
      return self(x, y), (x if y_nz else None, y if x_nz else None)

    def vjp_bwd_retval(self, res, g):
      x, y = res
      return (g * y if y is not None else None,
              x * g if x is not None else None)

  def mul2(x, y):
    return Mul2(jax.typeof(x), jax.typeof(y))(x, y)

  g0 = grad(mul2, 0)(2., 3.)  # nzs_in == (True, False), saves only y
  print(g0)
  g1 = grad(mul2, 1)(2., 3.)  # nzs_in == (False, True), saves only x
  print(g1)
  return locals()


def square_logs_cell():
  global Square, square

  class Square(VJPHiPrimitive):
    def __init__(self, x_aval, tag):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = dict(tag=tag)
      super().__init__()

    def expand(self, x):
      return x ** 2

    def vjp_fwd(self, nzs_in, x):
      return self(x), x

    def vjp_bwd(self, x, g, x_acc):
      x_acc.accum(2. * x * g)
      return {self.tag: {'x': x, 'ct_in': g}}  # logged out of the backward pass

  def square(x, tag='sq'):
    return Square(jax.typeof(x), tag)(x)

  y, f_vjp = jax.vjp(square, 3.)
  arg_cts, logs = f_vjp.with_logs(1.)
  print(arg_cts)
  print(logs)
  return locals()


def nested_logs_cell():
  f = lambda x: square(square(x, 'inner'), 'outer')
  _, f_vjp = jax.vjp(f, 2.)
  _, logs = f_vjp.with_logs(1.)
  print(logs)
  return logs


def scan_logs_cell():
  def f(xs):
    c, _ = jax.lax.scan(lambda c, x: (c + square(x), None), 0., xs)
    return c

  xs = jnp.arange(1., 4.)
  _, f_vjp = jax.vjp(f, xs)
  _, logs = f_vjp.with_logs(1.)
  print(logs)
  return logs


def cond_logs_cell():
  def g(x):
    return jax.lax.cond(x > 0,
                        lambda x: square(x, 'pos'),
                        lambda x: 2. * square(x, 'neg'),
                        x)

  _, g_vjp = jax.vjp(g, 3.)
  _, logs = g_vjp.with_logs(1.)
  print(logs['pos'])
  print(logs['neg'])
  return logs


def custom_vjp_logs_cell():
  @jax.custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g), {'f': {'ct_out': g}}

  f.defvjp_with_logs(f_fwd, f_bwd)

  _, f_vjp = jax.vjp(f, 1., 2.)
  arg_cts, logs = f_vjp.with_logs(1.)  # (the page: `_, logs = ...`)
  print(logs)
  return arg_cts, logs


def structured_residuals_cell():
  global f_vjp

  class Square(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return x ** 2

    def vjp_fwd(self, nzs_in, x):
      return self(x), (), True, {'x': x}  # sres in the fourth slot

    def vjp_bwd(self, res, sres, g, x_acc):
      x_acc.accum(2. * sres['x'] * g)

  class Cube(VJPHiPrimitive):
    def __init__(self, x_aval):
      self.in_avals = (x_aval,)
      self.out_aval = x_aval
      self.params = {}
      super().__init__()

    def expand(self, x):
      return x ** 3

    def vjp_fwd(self, nzs_in, x):
      return self(x), (), True, {'x': x}

    def vjp_bwd(self, res, sres, g, x_acc):
      x_acc.accum(3. * sres['x'] ** 2 * g)

  def square(x):
    return Square(jax.typeof(x))(x)

  def cube(x):
    return Cube(jax.typeof(x))(x)

  def f(x):
    return square(x) + cube(x)

  g = grad(f)(3.)
  print(g)

  _, f_vjp = jax.vjp(f, 3.)
  print(f_vjp.structured_residuals)
  return locals()


def dedup_cell():
  x1, x2 = jax.tree.leaves(f_vjp.structured_residuals)
  same = x1 is x2
  print(same)
  return x1, x2, same

# ---------------------------------------------------------------------------------------------------------------------

# (label, cell) in the page's order; a cell the page repeats word for word is listed again under another label.
CELLS = [
    ("tldr_def", tldr_def_cell), ("tldr", tldr_cell),
    ("log1pexp", log1pexp_cell), ("log1pexp_transforms", log1pexp_transforms_cell),
    ("log1pexp_grad_100", log1pexp_grad_100_cell), ("log1pexp_jaxpr", log1pexp_jaxpr_cell),
    ("log1pexp_hijax", log1pexp_hijax_cell), ("log1pexp_hijax_grad_100", log1pexp_grad_100_cell),
    ("log1pexp_hijax_transforms", log1pexp_transforms_cell), ("log1pexp_hijax_jaxpr", log1pexp_jaxpr_cell),
    ("f_on_r", f_on_r_cell), ("grad_f_0", grad_f_0_cell), ("f_on_r_plus", f_on_r_plus_cell),
    ("grad_f_on_r_plus_0", grad_f_0_cell),
    ("clip_gradient", clip_gradient_cell), ("sin_curves", sin_curves_cell), ("clip_sin", clip_sin_cell),
    ("debug_def", debug_def_cell), ("debug", debug_cell),
    ("fixed_point_loop", fixed_point_loop_cell), ("newton_sqrt", newton_sqrt_cell),
    ("newton_sqrt_2", newton_sqrt_2_cell), ("jit_vmap_newton_sqrt", jit_vmap_newton_sqrt_cell),
    ("fixed_point_hijax", fixed_point_hijax_cell), ("newton_sqrt_2_hijax", newton_sqrt_2_cell),
    ("grad_newton_sqrt", grad_newton_sqrt_cell), ("grad_sqrt", grad_sqrt_cell),
    ("square", square_cell), ("mul", mul_cell),
    ("take_elt", take_elt_cell), ("take_elt_grad", take_elt_grad_cell), ("grad_ref", grad_ref_cell),
    ("bwd_jaxpr", bwd_jaxpr_cell),
    ("sin_jvp", sin_jvp_cell), ("sin_lin", sin_lin_cell), ("sin_derived", sin_derived_cell),
    ("mul_jaxpr", mul_jaxpr_cell), ("noisy", noisy_cell), ("jit_noisy", jit_noisy_cell), ("g", g_cell),
    ("mulv", mulv_cell), ("matvec", matvec_cell),
    ("point", point_cell), ("mul2", mul2_cell),
    ("square_logs", square_logs_cell), ("nested_logs", nested_logs_cell), ("scan_logs", scan_logs_cell),
    ("cond_logs", cond_logs_cell), ("custom_vjp_logs", custom_vjp_logs_cell),
    ("structured_residuals", structured_residuals_cell), ("dedup", dedup_cell),
]


def run(skip=()):
  """The page's cells in order, but those labelled in `skip`: {label: what the cell returns}."""
  return {label: cell() for label, cell in CELLS if label not in skip}
