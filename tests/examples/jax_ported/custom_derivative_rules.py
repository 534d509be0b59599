# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the notebook's cells: two-space indents, redefinitions, imports between cells)
# Copyright 2020 The JAX Authors.
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
# The code cells of JAX's docs/notebooks/Custom_derivative_rules_for_Python_code.md (jax-ml/jax f8017a6838), one
# after the other, ported to kiln by changing imports only. The imports stay at the top level, where they are in the
# notebook, so that tests/examples/ported.py can put JAX's back. The notebook redefines `f` (and `log1pexp`,
# `fixed_point`, `app`) from section to section, and its rules look the function up by name when they run (`f_jvp`
# calls `f`): so each cell that defines one is wrapped in a `*_def` function that defines it locally, exactly as the
# cell does, and returns it, and each cell that uses it is a `*_cell` function that takes it as an argument and
# returns what the cell prints or displays (its prints are kept). Cells the notebook repeats word for word (the
# TL;DR prints, the log1pexp prints, `grad(f)(0.)`, ...) are one function called again. `newton_sqrt` looks up the
# global `fixed_point`, which the notebook redefines with a custom_vjp between its uses: it is defined in both
# `fixed_point_def` and `fixed_point_custom_vjp_def`, next to the `fixed_point` it finds there. `run` calls
# everything in the notebook's order. Left out: matplotlib (the gradient-clipping cells return the curves they
# plot, with the notebook's 1000 points as a parameter). The `pdb` example keeps `pdb.set_trace()` in its backward
# pass (a test replaces it), and its markdown-only `jax.grad(foo)(3.)` is `debug_cell`.
# tests/examples/test_custom_derivative_rules.py checks it against closed forms, finite differences and the
# notebook's printed values; test_custom_derivative_rules_against_jax.py runs it under both libraries.

# -------------------------------------- TL;DR: Custom JVPs with `jax.custom_jvp` --------------------------------------

import kiln.numpy as jnp
from kiln import custom_jvp

def tldr_custom_jvp_def():
  @custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  @f.defjvp
  def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = f(x, y)
    tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    return primal_out, tangent_out
  return f


from kiln import jvp, grad

def tldr_jvp_cell(f):
  print(f(2., 3.))
  y, y_dot = jvp(f, (2., 3.), (1., 0.))
  print(y)
  print(y_dot)
  print(grad(f)(2., 3.))
  return f(2., 3.), y, y_dot, grad(f)(2., 3.)


def tldr_defjvps_def():
  # Equivalent alternative using the defjvps convenience wrapper

  @custom_jvp
  def f(x, y):
    return jnp.sin(x) * y

  f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
            lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
  return f


# -------------------------------------- TL;DR: Custom VJPs with `jax.custom_vjp` --------------------------------------

from kiln import custom_vjp

def tldr_custom_vjp_def():
  @custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  def f_fwd(x, y):
    # Returns primal output and residuals to be used in backward pass by f_bwd.
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res # Gets residuals computed in f_fwd
    return (cos_x * g * y, sin_x * g)

  f.defvjp(f_fwd, f_bwd)
  return f


def grad_f_2_3_cell(f):
  print(grad(f)(2., 3.))
  return grad(f)(2., 3.)


# ------------------------------------------- Example: Numerical stability -------------------------------------------

def log1pexp_def():

  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))
  return log1pexp

def log1pexp_cell(log1pexp):
  return log1pexp(3.)  # the cell displays this value


from kiln import jit, grad, vmap

def log1pexp_transforms_cell(log1pexp):
  print(jit(log1pexp)(3.))
  print(jit(grad(log1pexp))(3.))
  print(vmap(jit(grad(log1pexp)))(jnp.arange(3.)))
  return jit(log1pexp)(3.), jit(grad(log1pexp))(3.), vmap(jit(grad(log1pexp)))(jnp.arange(3.))


def log1pexp_grad_100_cell(log1pexp):
  print(grad(log1pexp)(100.))
  return grad(log1pexp)(100.)


from kiln import make_jaxpr

def log1pexp_jaxpr_cell(log1pexp):
  return make_jaxpr(grad(log1pexp))(100.)  # the cell displays this jaxpr


from kiln import custom_jvp

def log1pexp_custom_jvp_def():
  @custom_jvp
  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

  @log1pexp.defjvp
  def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    ans_dot = (1 - 1/(1 + jnp.exp(x))) * x_dot
    return ans, ans_dot
  return log1pexp


def log1pexp_defjvps_def():
  @custom_jvp
  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))

  log1pexp.defjvps(lambda t, ans, x: (1 - 1/(1 + jnp.exp(x))) * t)
  return log1pexp

def log1pexp_defjvps_cell(log1pexp):
  print(grad(log1pexp)(100.))
  print(jit(log1pexp)(3.))
  print(jit(grad(log1pexp))(3.))
  print(vmap(jit(grad(log1pexp)))(jnp.arange(3.)))
  return (grad(log1pexp)(100.), jit(log1pexp)(3.), jit(grad(log1pexp))(3.),
          vmap(jit(grad(log1pexp)))(jnp.arange(3.)))


# ---------------------------------- Example: Enforcing a differentiation convention -----------------------------------

def x_over_1_plus_sqrt_def():
  def f(x):
    return x / (1 + jnp.sqrt(x))
  return f

def grad_at_zero_cell(f):
  print(grad(f)(0.))
  return grad(f)(0.)


def x_over_1_plus_sqrt_custom_jvp_def():
  @custom_jvp
  def f(x):
    return x / (1 + jnp.sqrt(x))

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = f(x)
    ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * x_dot
    return ans, ans_dot
  return f


def x_over_1_plus_sqrt_defjvps_def():
  @custom_jvp
  def f(x):
    return x / (1 + jnp.sqrt(x))

  f.defjvps(lambda t, ans, x: ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * t)
  return f


# ------------------------------------------- Example: Gradient clipping -------------------------------------------

from functools import partial
from kiln import custom_vjp

@custom_vjp
def clip_gradient(lo, hi, x):
  return x  # identity function

def clip_gradient_fwd(lo, hi, x):
  return x, (lo, hi)  # save bounds as residuals

def clip_gradient_bwd(res, g):
  lo, hi = res
  return (None, None, jnp.clip(g, lo, hi))  # use None to indicate zero cotangents for lo and hi

clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


from kiln import vmap

def sin_curves_cell(num=1000):
  # `num` is the notebook's 1000 points unless a test asks for fewer; the cell plots the two curves
  t = jnp.linspace(0, 10, num)

  return t, jnp.sin(t), vmap(grad(jnp.sin))(t)


def clip_sin(x):
  x = clip_gradient(-0.75, 0.75, x)
  return jnp.sin(x)

def clip_sin_cell(t):
  return clip_sin(t), vmap(grad(clip_sin))(t)  # the cell plots these


# ---------------------- Example: Implicit function differentiation of iterative implementations -----------------------

from kiln.lax import while_loop

def fixed_point_def():
  def fixed_point(f, a, x_guess):
    def cond_fun(carry):
      x_prev, x = carry
      return jnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
      _, x = carry
      return x, f(a, x)

    _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star

  def newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)
    return fixed_point(update, a, a)
  return fixed_point, newton_sqrt


def newton_sqrt_cell(newton_sqrt):
  print(newton_sqrt(2.))
  return newton_sqrt(2.)


def newton_sqrt_jit_vmap_cell(newton_sqrt):
  print(jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.])))
  return jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.]))


from kiln import vjp

def fixed_point_custom_vjp_def():
  @partial(custom_vjp, nondiff_argnums=(0,))
  def fixed_point(f, a, x_guess):
    def cond_fun(carry):
      x_prev, x = carry
      return jnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
      _, x = carry
      return x, f(a, x)

    _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star

  def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)

  def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(partial(rev_iter, f),
                               (a, x_star, x_star_bar),
                               x_star_bar))
    return a_bar, jnp.zeros_like(x_star)

  def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]

  fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

  # the notebook's newton_sqrt, which now finds this fixed_point
  def newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)
    return fixed_point(update, a, a)
  return fixed_point, newton_sqrt


def newton_sqrt_grad_cell(newton_sqrt):
  print(grad(newton_sqrt)(2.))
  print(grad(grad(newton_sqrt))(2.))
  return grad(newton_sqrt)(2.), grad(grad(newton_sqrt))(2.)


def sqrt_grad_cell():
  print(grad(jnp.sqrt)(2.))
  print(grad(grad(jnp.sqrt))(2.))
  return grad(jnp.sqrt)(2.), grad(grad(jnp.sqrt))(2.)


# ----------------- Use `jax.custom_jvp` to define forward-mode (and, indirectly, reverse-mode) rules ------------------

from kiln import custom_jvp
import kiln.numpy as jnp

def sin_custom_jvp_def():
  # f :: a -> b
  @custom_jvp
  def f(x):
    return jnp.sin(x)

  # f_jvp :: (a, T a) -> (b, T b)
  def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), jnp.cos(x) * t

  f.defjvp(f_jvp)
  return f


from kiln import jvp

def sin_jvp_cell(f):
  print(f(3.))

  y, y_dot = jvp(f, (3.,), (1.,))
  print(y)
  print(y_dot)
  return f(3.), y, y_dot


from kiln import grad

def sin_grad_grad_cell(f):
  print(grad(f)(3.))
  print(grad(grad(f))(3.))
  return grad(f)(3.), grad(grad(f))(3.)


def x2y_custom_jvp_def():
  @custom_jvp
  def f(x, y):
    return x ** 2 * y

  @f.defjvp
  def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = f(x, y)
    tangent_out = 2 * x * y * x_dot + x ** 2 * y_dot
    return primal_out, tangent_out
  return f


def sin_defjvps_def():
  @custom_jvp
  def f(x):
    return jnp.sin(x)

  f.defjvps(lambda t, ans, x: jnp.cos(x) * t)
  return f

def grad_f_3_cell(f):
  print(grad(f)(3.))
  return grad(f)(3.)


def x2y_defjvps_def():
  @custom_jvp
  def f(x, y):
    return x ** 2 * y

  f.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot,
            lambda y_dot, primal_out, x, y: x ** 2 * y_dot)
  return f

def x2y_argnums_cell(f):
  print(grad(f)(2., 3.))
  print(grad(f, 0)(2., 3.))  # same as above
  print(grad(f, 1)(2., 3.))
  return grad(f)(2., 3.), grad(f, 0)(2., 3.), grad(f, 1)(2., 3.)


def x2y_defjvps_none_def():
  @custom_jvp
  def f(x, y):
    return x ** 2 * y

  f.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot,
            None)
  return f


def side_effect_custom_jvp_def():
  @custom_jvp
  def f(x):
    print('called f!')  # a harmless side-effect
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    print('called f_jvp!')  # a harmless side-effect
    x, = primals
    t, = tangents
    return f(x), jnp.cos(x) * t
  return f


from kiln import vmap, jit

def print_f_3_cell(f):
  out = f(3.)  # the notebook's print(f(3.)), calling f once
  print(out)
  return out


def vmap_jit_cell(f):
  out = vmap(f)(jnp.arange(3.))  # the notebook prints each expression, calling f once each
  print(out)
  out_jit = jit(f)(3.)
  print(out_jit)
  return out, out_jit


def jvp_y_dot_cell(f):
  y, y_dot = jvp(f, (3.,), (1.,))
  print(y_dot)
  return y, y_dot


def print_grad_f_3_cell(f):
  out = grad(f)(3.)  # the notebook's print(grad(f)(3.)), differentiating once
  print(out)
  return out


def grad_grad_cell(f):
  return grad(grad(f))(3.)  # the cell displays this value


def control_flow_custom_jvp_def():
  @custom_jvp
  def f(x):
    if x > 0:
      return jnp.sin(x)
    else:
      return jnp.cos(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = f(x)
    if x > 0:
      return ans, 2 * x_dot
    else:
      return ans, 3 * x_dot
  return f

def control_flow_cell(f):
  print(grad(f)(1.))
  print(grad(f)(-1.))
  return grad(f)(1.), grad(f)(-1.)


# --------------------------- Use `jax.custom_vjp` to define custom reverse-mode-only rules ----------------------------

from kiln import custom_vjp
import kiln.numpy as jnp

def sin_custom_vjp_def():
  # f :: a -> b
  @custom_vjp
  def f(x):
    return jnp.sin(x)

  # f_fwd :: a -> (b, c)
  def f_fwd(x):
    return f(x), jnp.cos(x)

  # f_bwd :: (c, CT b) -> CT a
  def f_bwd(cos_x, y_bar):
    return (cos_x * y_bar,)

  f.defvjp(f_fwd, f_bwd)
  return f


from kiln import grad

def sin_vjp_cell(f):
  print(f(3.))
  print(grad(f)(3.))
  return f(3.), grad(f)(3.)


from kiln import custom_vjp

def sin_y_custom_vjp_def():
  @custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)

  def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)

  f.defvjp(f_fwd, f_bwd)
  return f


def side_effect_custom_vjp_def():
  @custom_vjp
  def f(x):
    print("called f!")
    return jnp.sin(x)

  def f_fwd(x):
    print("called f_fwd!")
    return f(x), jnp.cos(x)

  def f_bwd(cos_x, y_bar):
    print("called f_bwd!")
    return (cos_x * y_bar,)

  f.defvjp(f_fwd, f_bwd)
  return f


def vjp_y_cell(f):

  y, f_vjp = vjp(f, 3.)
  print(y)
  return y, f_vjp


def f_vjp_cell(f_vjp):
  out = f_vjp(1.)  # the notebook's print(f_vjp(1.)), calling f_vjp once
  print(out)
  return out


from kiln import jvp

def jvp_error_cell(f):
  try:
    jvp(f, (3.,), (1.,))
  except TypeError as e:
    print('ERROR! {}'.format(e))
    return e  # what the cell caught


import pdb

@custom_vjp
def debug(x):
  return x  # acts like identity

def debug_fwd(x):
  return x, x

def debug_bwd(x, g):
  pdb.set_trace()
  return g

debug.defvjp(debug_fwd, debug_bwd)


def foo(x):
  y = x ** 2
  y = debug(y)  # insert pdb in corresponding backward pass step
  return jnp.sin(y)


import kiln as jax

def debug_cell():
  return jax.grad(foo)(3.)  # the notebook's markdown example: it stops in pdb at debug_bwd's `return g`


# ----------------------- Working with `list` / `tuple` / `dict` containers (and other pytrees) ------------------------

from collections import namedtuple
Point = namedtuple("Point", ["x", "y"])

def point_custom_jvp_def():
  @custom_jvp
  def f(pt):
    x, y = pt.x, pt.y
    return {'a': x ** 2,
            'b': (jnp.sin(x), jnp.cos(y))}

  @f.defjvp
  def f_jvp(primals, tangents):
    pt, = primals
    pt_dot, =  tangents
    ans = f(pt)
    ans_dot = {'a': 2 * pt.x * pt_dot.x,
               'b': (jnp.cos(pt.x) * pt_dot.x, -jnp.sin(pt.y) * pt_dot.y)}
    return ans, ans_dot

  def fun(pt):
    dct = f(pt)
    return dct['a'] + dct['b'][0]
  return f, fun


def point_f_cell(f):
  pt = Point(1., 2.)

  print(f(pt))
  return pt, f(pt)


def point_grad_cell(fun, pt):
  print(grad(fun)(pt))
  return grad(fun)(pt)


def point_custom_vjp_def():
  @custom_vjp
  def f(pt):
    x, y = pt.x, pt.y
    return {'a': x ** 2,
            'b': (jnp.sin(x), jnp.cos(y))}

  def f_fwd(pt):
    return f(pt), pt

  def f_bwd(pt, g):
    a_bar, (b0_bar, b1_bar) = g['a'], g['b']
    x_bar = 2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar
    y_bar = -jnp.sin(pt.y) * b1_bar
    return (Point(x_bar, y_bar),)

  f.defvjp(f_fwd, f_bwd)

  def fun(pt):
    dct = f(pt)
    return dct['a'] + dct['b'][0]
  return f, fun


# --------------------------------------- Handling non-differentiable arguments ----------------------------------------
# `jax.custom_jvp` with `nondiff_argnums`

from functools import partial

def app_custom_jvp_def():
  @partial(custom_jvp, nondiff_argnums=(0,))
  def app(f, x):
    return f(x)

  @app.defjvp
  def app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2. * x_dot
  return app


def app_cube_cell(app):
  print(app(lambda x: x ** 3, 3.))
  return app(lambda x: x ** 3, 3.)


def app_cube_grad_cell(app):
  print(grad(app, 1)(lambda x: x ** 3, 3.))
  return grad(app, 1)(lambda x: x ** 3, 3.)


def app2_custom_jvp_def():
  @partial(custom_jvp, nondiff_argnums=(0, 2))
  def app2(f, x, g):
    return f(g((x)))

  @app2.defjvp
  def app2_jvp(f, g, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(g(x)), 3. * x_dot
  return app2


def app2_cell(app2):
  print(app2(lambda x: x ** 3, 3., lambda y: 5 * y))
  return app2(lambda x: x ** 3, 3., lambda y: 5 * y)


def app2_grad_cell(app2):
  print(grad(app2, 1)(lambda x: x ** 3, 3., lambda y: 5 * y))
  return grad(app2, 1)(lambda x: x ** 3, 3., lambda y: 5 * y)


# `jax.custom_vjp` with `nondiff_argnums`

def app_custom_vjp_def():
  @partial(custom_vjp, nondiff_argnums=(0,))
  def app(f, x):
    return f(x)

  def app_fwd(f, x):
    return f(x), x

  def app_bwd(f, x, g):
    return (5 * g,)

  app.defvjp(app_fwd, app_bwd)
  return app


def app_square_cell(app):
  print(app(lambda x: x ** 2, 4.))
  return app(lambda x: x ** 2, 4.)


def app_square_grad_cell(app):
  print(grad(app, 1)(lambda x: x ** 2, 4.))
  return grad(app, 1)(lambda x: x ** 2, 4.)


# ------------------------------------------------------------------------------------------------------------------

def run(num=1000):
    """The notebook's cells in order (without the pdb one), passing each definition to the cells that use it; a dict
    of what they return. `num` is the number of points of the gradient-clipping plots."""
    out = {}
    out["tldr_jvp"] = tldr_jvp_cell(tldr_custom_jvp_def())
    out["tldr_defjvps"] = tldr_jvp_cell(tldr_defjvps_def())
    out["tldr_vjp"] = grad_f_2_3_cell(tldr_custom_vjp_def())
    log1pexp = log1pexp_def()
    out.update(log1pexp=log1pexp_cell(log1pexp), log1pexp_transforms=log1pexp_transforms_cell(log1pexp),
               log1pexp_grad_100=log1pexp_grad_100_cell(log1pexp), log1pexp_jaxpr=log1pexp_jaxpr_cell(log1pexp))
    log1pexp = log1pexp_custom_jvp_def()
    out.update(log1pexp_custom_grad_100=log1pexp_grad_100_cell(log1pexp),
               log1pexp_custom_transforms=log1pexp_transforms_cell(log1pexp))
    out["log1pexp_defjvps"] = log1pexp_defjvps_cell(log1pexp_defjvps_def())
    out["sqrt_ratio_grad_0"] = grad_at_zero_cell(x_over_1_plus_sqrt_def())
    out["sqrt_ratio_custom_grad_0"] = grad_at_zero_cell(x_over_1_plus_sqrt_custom_jvp_def())
    out["sqrt_ratio_defjvps_grad_0"] = grad_at_zero_cell(x_over_1_plus_sqrt_defjvps_def())
    t, *out["sin_curves"] = sin_curves_cell(num)
    out.update(t=t, clip_sin=clip_sin_cell(t))
    _, newton_sqrt = fixed_point_def()
    out.update(newton_sqrt=newton_sqrt_cell(newton_sqrt), newton_sqrt_jit_vmap=newton_sqrt_jit_vmap_cell(newton_sqrt))
    _, newton_sqrt = fixed_point_custom_vjp_def()
    out.update(newton_sqrt_custom=newton_sqrt_cell(newton_sqrt), newton_sqrt_grad=newton_sqrt_grad_cell(newton_sqrt),
               sqrt_grad=sqrt_grad_cell())
    out["sin_jvp"] = sin_jvp_cell(f := sin_custom_jvp_def())
    out["sin_grad_grad"] = sin_grad_grad_cell(f)
    out["x2y_grad"] = grad_f_2_3_cell(x2y_custom_jvp_def())
    out["sin_defjvps_grad"] = grad_f_3_cell(sin_defjvps_def())
    out["x2y_defjvps"] = x2y_argnums_cell(x2y_defjvps_def())
    out["x2y_defjvps_none"] = x2y_argnums_cell(x2y_defjvps_none_def())
    f = side_effect_custom_jvp_def()
    out.update(side_effect_f=print_f_3_cell(f), side_effect_vmap_jit=vmap_jit_cell(f),
               side_effect_jvp=jvp_y_dot_cell(f), side_effect_grad=print_grad_f_3_cell(f),
               side_effect_grad_grad=grad_grad_cell(f))
    out["control_flow"] = control_flow_cell(control_flow_custom_jvp_def())
    out["sin_vjp"] = sin_vjp_cell(sin_custom_vjp_def())
    out["sin_y_vjp"] = grad_f_2_3_cell(sin_y_custom_vjp_def())
    f = side_effect_custom_vjp_def()
    out.update(vjp_side_effect_f=print_f_3_cell(f), vjp_side_effect_grad=print_grad_f_3_cell(f))
    y, f_vjp = vjp_y_cell(f)
    out.update(vjp_side_effect_y=y, vjp_side_effect_f_vjp=f_vjp_cell(f_vjp), jvp_error=jvp_error_cell(f))
    f, fun = point_custom_jvp_def()
    pt, out["point_jvp_f"] = point_f_cell(f)
    out["point_jvp_grad"] = point_grad_cell(fun, pt)
    f, fun = point_custom_vjp_def()
    pt, out["point_vjp_f"] = point_f_cell(f)
    out["point_vjp_grad"] = point_grad_cell(fun, pt)
    app = app_custom_jvp_def()
    out.update(app_jvp=app_cube_cell(app), app_jvp_grad=app_cube_grad_cell(app))
    app2 = app2_custom_jvp_def()
    out.update(app2=app2_cell(app2), app2_grad=app2_grad_cell(app2))
    app = app_custom_vjp_def()
    out.update(app_vjp=app_square_cell(app), app_vjp_grad=app_square_grad_cell(app))
    return out
