# ruff: noqa: E111, E114, E302, E305, E402, F811, I001  (the page's cells: two-space indents, redefinitions, imports between cells)
# Copyright 2025 The JAX Authors.
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
# The code cells of JAX's docs/new_docs/301/custom-jvp-vjp.md ("Custom JVPs or VJPs with custom_jvp and custom_vjp",
# jax-ml/jax cec06d116c), one after the other, ported to kiln by changing imports only. The imports stay at the top
# level, where the page has them, so that tests/examples/ported.py can put JAX's back. The page redefines `f` (and
# `log1pexp`, `app`) from section to section, and its rules look the function up by name when they run (`f_jvp` calls
# `f`): so each cell that defines one is a `*_def` function that defines it locally, exactly as the cell does, and
# returns it, and each cell that uses it is a `*_cell` function that takes it and returns what the cell prints or
# displays (its prints are kept; a value printed and returned is computed once, so a side-effect print in `f` shows
# as often as on the page). Cells the page repeats word for word (the TL;DR prints, `print(grad(f)(2., 3.))`, ...)
# are one function called again. `run` calls everything in the page's order.
# Substituted: matplotlib (the gradient-clipping cells return the curves they plot; the page's 1000 points are a
# parameter). The cell the page tags `raises-exception` (forward mode of `clip_gradient`) returns the exception. The
# `pdb` example keeps `pdb.set_trace()` in its backward pass (a test replaces it); its markdown-only
# `jax.grad(foo)(3.)` is `debug_cell`, with the `import jax` the page leaves implicit.
# This page is the successor of docs/notebooks/Custom_derivative_rules_for_Python_code.md (custom_derivative_rules.py
# here): tests/examples/test_docs_custom_jvp_vjp.py checks it against closed forms, finite differences and the prose's
# claims, test_docs_custom_jvp_vjp_against_jax.py runs it under both libraries.

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
  out = f(2., 3.)
  print(out)
  y, y_dot = jvp(f, (2., 3.), (1., 0.))
  print(y)
  print(y_dot)
  g = grad(f)(2., 3.)
  print(g)
  return out, y, y_dot, g


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
  g = grad(f)(2., 3.)
  print(g)
  return g


# -------------------------------------------- Example: Numerical stability --------------------------------------------

def log1pexp_def():
  def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))
  return log1pexp

def log1pexp_cell(log1pexp):
  return log1pexp(3.)  # the cell displays this value


from kiln import jit, grad, vmap

def log1pexp_transforms_cell(log1pexp):
  y = jit(log1pexp)(3.)
  print(y)
  g = jit(grad(log1pexp))(3.)
  print(g)
  gv = vmap(jit(grad(log1pexp)))(jnp.arange(3.))
  print(gv)
  return y, g, gv


def log1pexp_grad_100_cell(log1pexp):
  g = grad(log1pexp)(100.)
  print(g)
  return g


def log1pexp_jaxpr_cell(log1pexp):
  return jit(grad(log1pexp)).trace(100.).jaxpr  # the cell displays this jaxpr


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
  g100 = grad(log1pexp)(100.)
  print(g100)
  y = jit(log1pexp)(3.)
  print(y)
  g = jit(grad(log1pexp))(3.)
  print(g)
  gv = vmap(jit(grad(log1pexp)))(jnp.arange(3.))
  print(gv)
  return g100, y, g, gv


# --------------------------------------------- Example: Gradient clipping ---------------------------------------------

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
  # (matplotlib left out: the cell plots these two curves; `num` is the page's 1000 points unless a test asks fewer)
  t = jnp.linspace(0, 10, num)

  return t, jnp.sin(t), vmap(grad(jnp.sin))(t)


def clip_sin(x):
  x = clip_gradient(-0.75, 0.75, x)
  return jnp.sin(x)

def clip_sin_cell(t):
  return clip_sin(t), vmap(grad(clip_sin))(t)  # the cell plots these


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
  out = f(3.)
  print(out)

  y, y_dot = jvp(f, (3.,), (1.,))
  print(y)
  print(y_dot)
  return out, y, y_dot


from kiln import grad

def sin_grad_grad_cell(f):
  g = grad(f)(3.)
  print(g)
  gg = grad(grad(f))(3.)
  print(gg)
  return g, gg


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
  g = grad(f)(3.)  # the page's print(grad(f)(3.)), differentiating once
  print(g)
  return g


def x2y_defjvps_def():
  @custom_jvp
  def f(x, y):
    return x ** 2 * y

  f.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot,
            lambda y_dot, primal_out, x, y: x ** 2 * y_dot)
  return f

def x2y_argnums_cell(f):
  g = grad(f)(2., 3.)
  print(g)
  g0 = grad(f, 0)(2., 3.)  # same as above
  print(g0)
  g1 = grad(f, 1)(2., 3.)
  print(g1)
  return g, g0, g1


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
  out = f(3.)  # the page's print(f(3.)), calling f once
  print(out)
  return out


def vmap_jit_cell(f):
  out = vmap(f)(jnp.arange(3.))
  print(out)
  out_jit = jit(f)(3.)
  print(out_jit)
  return out, out_jit


def jvp_y_dot_cell(f):
  y, y_dot = jvp(f, (3.,), (1.,))
  print(y_dot)
  return y, y_dot


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
  g_pos = grad(f)(1.)
  print(g_pos)
  g_neg = grad(f)(-1.)
  print(g_neg)
  return g_pos, g_neg


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
  out = f(3.)
  print(out)
  g = grad(f)(3.)
  print(g)
  return out, g


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


from kiln import vjp

def vjp_y_cell(f):
  y, f_vjp = vjp(f, 3.)
  print(y)
  return y, f_vjp


def f_vjp_cell(f_vjp):
  out = f_vjp(1.)  # the page's print(f_vjp(1.)), calling f_vjp once
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
  return jax.grad(foo)(3.)  # the page's markdown example: it stops in pdb at debug_bwd's `return g`


# ------------------------------- `custom_vjp` functions can't be forward-differentiated -------------------------------

from kiln import jvp

def clip_gradient_jvp_cell():
  """The page tags this cell `raises-exception`: the exception, or None if nothing raised."""
  try:
    jvp(lambda x: clip_gradient(-1., 1., x), (3.,), (1.,))
  except Exception as e:
    return e


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

  out = f(pt)
  print(out)
  return pt, out


def point_grad_cell(fun, pt):
  g = grad(fun)(pt)
  print(g)
  return g


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
  out = app(lambda x: x ** 3, 3.)
  print(out)
  return out


def app_cube_grad_cell(app):
  g = grad(app, 1)(lambda x: x ** 3, 3.)
  print(g)
  return g


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
  out = app2(lambda x: x ** 3, 3., lambda y: 5 * y)
  print(out)
  return out


def app2_grad_cell(app2):
  g = grad(app2, 1)(lambda x: x ** 3, 3., lambda y: 5 * y)
  print(g)
  return g


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
  out = app(lambda x: x ** 2, 4.)
  print(out)
  return out


def app_square_grad_cell(app):
  g = grad(app, 1)(lambda x: x ** 2, 4.)
  print(g)
  return g


# ----------------------------------------------------------------------------------------------------------------------

def run(num=1000):
  """The page's cells in order (without the pdb one), passing each definition to the cells that use it; a dict of
  what they return. `num` is the number of points of the gradient-clipping plots."""
  out = {}
  out["tldr_jvp"] = tldr_jvp_cell(tldr_custom_jvp_def())
  out["tldr_defjvps"] = tldr_jvp_cell(tldr_defjvps_def())
  out["tldr_vjp"] = grad_f_2_3_cell(tldr_custom_vjp_def())
  log1pexp = log1pexp_def()
  out["log1pexp"] = log1pexp_cell(log1pexp)
  out["log1pexp_transforms"] = log1pexp_transforms_cell(log1pexp)
  out["log1pexp_grad_100"] = log1pexp_grad_100_cell(log1pexp)
  out["log1pexp_jaxpr"] = log1pexp_jaxpr_cell(log1pexp)
  log1pexp = log1pexp_custom_jvp_def()
  out["log1pexp_custom_grad_100"] = log1pexp_grad_100_cell(log1pexp)
  out["log1pexp_custom_transforms"] = log1pexp_transforms_cell(log1pexp)
  out["log1pexp_defjvps"] = log1pexp_defjvps_cell(log1pexp_defjvps_def())
  t, *out["sin_curves"] = sin_curves_cell(num)
  out["t"] = t
  out["clip_sin"] = clip_sin_cell(t)
  f = sin_custom_jvp_def()
  out["sin_jvp"] = sin_jvp_cell(f)
  out["sin_grad_grad"] = sin_grad_grad_cell(f)
  out["x2y_grad"] = grad_f_2_3_cell(x2y_custom_jvp_def())
  out["sin_defjvps_grad"] = grad_f_3_cell(sin_defjvps_def())
  out["x2y_defjvps"] = x2y_argnums_cell(x2y_defjvps_def())
  out["x2y_defjvps_none"] = x2y_argnums_cell(x2y_defjvps_none_def())
  f = side_effect_custom_jvp_def()
  out["side_effect_f"] = print_f_3_cell(f)
  out["side_effect_vmap_jit"] = vmap_jit_cell(f)
  out["side_effect_jvp"] = jvp_y_dot_cell(f)
  out["side_effect_grad"] = grad_f_3_cell(f)
  out["side_effect_grad_grad"] = grad_grad_cell(f)
  out["control_flow"] = control_flow_cell(control_flow_custom_jvp_def())
  out["sin_vjp"] = sin_vjp_cell(sin_custom_vjp_def())
  out["sin_y_vjp"] = grad_f_2_3_cell(sin_y_custom_vjp_def())
  f = side_effect_custom_vjp_def()
  out["vjp_side_effect_f"] = print_f_3_cell(f)
  out["vjp_side_effect_grad"] = grad_f_3_cell(f)
  y, f_vjp = vjp_y_cell(f)
  out["vjp_side_effect_y"] = y
  out["vjp_side_effect_f_vjp"] = f_vjp_cell(f_vjp)
  out["jvp_error"] = jvp_error_cell(f)
  out["clip_gradient_jvp"] = clip_gradient_jvp_cell()
  f, fun = point_custom_jvp_def()
  pt, out["point_jvp_f"] = point_f_cell(f)
  out["point_jvp_grad"] = point_grad_cell(fun, pt)
  f, fun = point_custom_vjp_def()
  pt, out["point_vjp_f"] = point_f_cell(f)
  out["point_vjp_grad"] = point_grad_cell(fun, pt)
  app = app_custom_jvp_def()
  out["app_jvp"] = app_cube_cell(app)
  out["app_jvp_grad"] = app_cube_grad_cell(app)
  app2 = app2_custom_jvp_def()
  out["app2"] = app2_cell(app2)
  out["app2_grad"] = app2_grad_cell(app2)
  app = app_custom_vjp_def()
  out["app_vjp"] = app_square_cell(app)
  out["app_vjp_grad"] = app_square_grad_cell(app)
  return out
