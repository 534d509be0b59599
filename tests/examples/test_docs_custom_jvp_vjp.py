"""JAX's docs/new_docs/301/custom-jvp-vjp.md, ported to kiln by changing imports
(tests/examples/jax_ported/docs_custom_jvp_vjp.py), checked against oracles that involve neither JAX nor kiln.

The page is the successor of the notebook Custom_derivative_rules_for_Python_code.md, whose port
test_custom_derivative_rules.py checks in depth (rules in float64, keyword arguments, misused rules, tracers in
nondiff_argnums, ...). This file runs the new page's cells once (the port's ``run``, with 50 points instead of 1000
for the gradient-clipping curves) and checks each cell's result against closed forms in NumPy, and the side-effect
prints against the order the prose describes; it checks in depth only what the page adds: ``jit(...).trace(x).jaxpr``,
forward mode of ``clip_gradient`` (and jacfwd of it, which the prose names), and the prose's claim that reverse mode
composes through a custom_vjp function (grad of grad, hessian, forward-over-reverse Hessian-vector products),
against float64 finite differences and closed forms. The page stores no outputs; its one transcript, the pdb
session's ``p x`` and ``p g``, is checked.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from ported import load, run_quietly

import kiln
import kiln.numpy as jnp

NUM = 50  # points of the gradient-clipping curves (the page's 1000)


@pytest.fixture(scope="module")
def nb():
    return load("docs_custom_jvp_vjp")


@pytest.fixture(scope="module")
def out(nb):
    """What every cell returns (``run``), and everything they printed under "stdout"."""
    return run_quietly(nb, num=NUM)


def _close(got, want, rtol=2e-7, atol=0.0):
    """float32 results against float64 closed forms: to a float32 rounding or two."""
    got = np.asarray(got)
    assert got.dtype == np.float32, got.dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def _sigmoid(x):
    return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


# ------------------------------------------------ Every cell ------------------------------------------------

def test_every_cell_against_closed_forms(out):
    s2, c2, s3, c3 = np.sin(2.0), np.cos(2.0), np.sin(3.0), np.cos(3.0)
    # TL;DR: f(x, y) = sin(x) y at (2, 3); jvp along x; d/dx
    for key in ("tldr_jvp", "tldr_defjvps"):
        _close(out[key], [3 * s2, 3 * s2, 3 * c2, 3 * c2])
    for key in ("tldr_vjp", "sin_y_vjp"):
        _close(out[key], 3 * c2)
    # log1pexp: the plain rule's nan at 100, the custom ones' 1.0, sigmoid elsewhere
    _close(out["log1pexp"], np.log1p(np.exp(3.0)))
    for key in ("log1pexp_transforms", "log1pexp_custom_transforms"):
        y, g, gv = out[key]
        _close(y, np.log1p(np.exp(3.0)))
        _close(g, _sigmoid(3.0), rtol=3e-7)
        _close(gv, _sigmoid(np.arange(3.0)), rtol=3e-7)
    assert np.isnan(float(out["log1pexp_grad_100"]))
    assert float(out["log1pexp_custom_grad_100"]) == 1.0
    g100, y, g, gv = out["log1pexp_defjvps"]
    assert float(g100) == 1.0
    _close([y, g], [np.log1p(np.exp(3.0)), _sigmoid(3.0)], rtol=3e-7)
    _close(gv, _sigmoid(np.arange(3.0)), rtol=3e-7)
    # gradient clipping: sin and cos on the grid; clip_gradient is the identity with cos clipped to +-0.75
    t = np.asarray(out["t"], np.float64)
    np.testing.assert_allclose(t, np.linspace(0, 10, NUM), rtol=1e-6)
    sin_t, dsin_t = out["sin_curves"]
    clip_sin_t, dclip_t = out["clip_sin"]
    _close(sin_t, np.sin(t), atol=1e-6)
    _close(dsin_t, np.cos(t), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(clip_sin_t), np.asarray(sin_t))
    _close(dclip_t, np.clip(np.cos(t), -0.75, 0.75), atol=1e-6)
    assert (np.abs(np.cos(t)) > 0.75).any() and np.abs(np.asarray(dclip_t)).max() == np.float32(0.75)
    # custom_jvp basics
    _close(out["sin_jvp"], [s3, s3, c3])
    _close(out["sin_grad_grad"], [c3, -s3])
    assert float(out["x2y_grad"]) == 12.0  # d (x^2 y)/dx = 2 x y at (2, 3)
    _close(out["sin_defjvps_grad"], c3)
    assert [float(v) for v in out["x2y_defjvps"]] == [12.0, 12.0, 4.0]
    assert [float(v) for v in out["x2y_defjvps_none"]] == [12.0, 12.0, 0.0]  # None: a zero JVP for y
    _close(out["side_effect_f"], s3)
    v, vj = out["side_effect_vmap_jit"]
    _close(v, np.sin(np.arange(3.0)))
    _close(vj, s3)
    _close(out["side_effect_jvp"], [s3, c3])
    _close(out["side_effect_grad"], c3)
    _close(out["side_effect_grad_grad"], -s3)
    assert [float(v) for v in out["control_flow"]] == [2.0, 3.0]  # the rule's 2 and 3, not cos(1) or -sin(-1)
    # custom_vjp basics
    _close(out["sin_vjp"], [s3, c3])
    _close([out["vjp_side_effect_f"], out["vjp_side_effect_grad"], out["vjp_side_effect_y"]], [s3, c3, s3])
    ct = out["vjp_side_effect_f_vjp"]
    assert isinstance(ct, tuple) and len(ct) == 1
    _close(ct[0], c3)
    # pytrees: {'a': x^2, 'b': (sin x, cos y)} at Point(1, 2); fun = x^2 + sin x
    for kind in ("jvp", "vjp"):
        fx, g = out[f"point_{kind}_f"], out[f"point_{kind}_grad"]
        assert fx["a"] == 1.0
        _close(list(fx["b"]), [np.sin(1.0), np.cos(2.0)])
        assert type(g).__name__ == "Point"
        _close([g.x, g.y], [2 + np.cos(1.0), 0.0])
    # nondiff_argnums: the primal values, and the rules' constants 2, 3 and 5 as derivatives
    assert [float(out[k]) for k in ("app_jvp", "app_jvp_grad", "app2", "app2_grad", "app_vjp", "app_vjp_grad")] == \
        [27.0, 2.0, 3375.0, 3.0, 16.0, 5.0]


def test_side_effect_prints_follow_the_prose(out):
    """"When you're not performing differentiation, the function f is called just as if it weren't decorated";
    "The custom JVP rule is invoked during differentiation, whether forward or reverse"; grad(grad(f)) applies the
    rule once per order; custom_vjp's fwd and bwd run only under differentiation, and fwd runs before forward mode
    fails."""
    calls = [line for line in out["stdout"].splitlines() if line.startswith("called")]
    jvp_part = ["called f!",                      # print(f(3.))
                "called f!",                      # vmap(f)
                "called f!",                      # jit(f)
                "called f_jvp!", "called f!",     # jvp(f, ...)
                "called f_jvp!", "called f!",     # grad(f)(3.)
                "called f_jvp!", "called f_jvp!", "called f!"]  # grad(grad(f))(3.)
    vjp_part = ["called f!",                      # print(f(3.))
                "called f_fwd!", "called f!", "called f_bwd!",  # grad(f)(3.)
                "called f_fwd!", "called f!",     # vjp(f, 3.)
                "called f_bwd!",                  # f_vjp(1.)
                "called f_fwd!", "called f!"]     # jvp(f, ...): fwd runs, then forward mode is refused
    assert calls == jvp_part + vjp_part
    assert out["stdout"].count("ERROR! ") == 1


def test_grad_through_trace_jaxpr_multiplies_zero_by_infinity(out, nb):
    # the page's `jit(grad(log1pexp)).trace(100.).jaxpr`: exp(x) * (1 / (1 + exp(x))), which at 100. is inf * 0
    closed = out["log1pexp_jaxpr"]
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["exp", "add", "log", "div", "mul"]
    assert str(closed) == str(kiln.make_jaxpr(kiln.grad(nb.log1pexp_def()))(100.))
    assert str(closed).splitlines()[-2:] == ["    e:f32[] = mul d b", "  in (e,) }"]
    b = np.exp(np.float32(100.))
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isinf(b) and np.isnan(np.float32(1) / (1 + b) * b)  # what the last two equations compute


def test_forward_mode_of_clip_gradient_raises(out, nb):
    e = out["clip_gradient_jvp"]  # the cell tagged raises-exception
    assert isinstance(e, TypeError)
    # what (forward mode of the custom_vjp function clip_gradient) and how to fix it (reverse mode, or custom_jvp)
    for part in ("forward-mode", "custom_vjp function clip_gradient", "kiln.jacfwd", "kiln.grad", "kiln.custom_jvp"):
        assert part in str(e), (part, str(e))
    # "applying forward-mode autodiff -- jax.jvp or jax.jacfwd -- to a function that contains a custom_vjp function"
    with pytest.raises(TypeError, match="custom_vjp function clip_gradient"):
        nb.jax.jacfwd(nb.clip_sin)(jnp.array([1.0, 2.0]))


def test_reverse_mode_composes_through_custom_vjp(nb):
    # "grad-of-grad, jax.hessian, and forward-over-reverse Hessian-vector products all work on functions containing
    # custom_vjp": the backward pass is built from fwd and bwd, which are differentiable
    jax = nb.jax
    xs = np.array([0.3, 1.2, 2.0, 4.0])  # |cos| > 0.75 at 0.3 and 4.0: clipped there, so the slope is 0
    clipped = np.abs(np.cos(xs)) > 0.75
    assert clipped.any() and not clipped.all()
    want = np.where(clipped, 0.0, -np.sin(xs))  # d/dx clip(cos x, -0.75, 0.75)
    with kiln.config.override("enable_x64", True):
        d1 = jax.jit(jax.vmap(jax.grad(nb.clip_sin)))
        d2 = np.asarray(jax.jit(jax.vmap(jax.grad(jax.grad(nb.clip_sin))))(xs))
        np.testing.assert_allclose(d2, want, rtol=1e-12, atol=1e-15)
        h = 1e-6
        fd = (np.asarray(d1(xs + h)) - np.asarray(d1(xs - h))) / (2 * h)  # float64 central differences of grad
        np.testing.assert_allclose(d2, fd, rtol=1e-6, atol=1e-12)
        total = lambda v: jnp.sum(nb.clip_sin(v))  # noqa: E731
        H = np.asarray(jax.hessian(total)(jnp.asarray(xs)))
        np.testing.assert_allclose(H, np.diag(want), rtol=1e-12, atol=1e-15)
        vec = np.array([1.0, -2.0, 0.5, 3.0])
        _, hvp = jax.jvp(jax.grad(total), (jnp.asarray(xs),), (jnp.asarray(vec),))
        np.testing.assert_allclose(np.asarray(hvp), want * vec, rtol=1e-12, atol=1e-15)
        # a custom_vjp whose bwd reads a residual: the page's sin with cos(x) saved. Reverse over reverse works
        # (sum(f(x)^2) has Hessian diag(2 cos 2x)); forward over reverse does not, in JAX 0.10.2 either: its f_fwd
        # calls f itself, so forward mode of the backward pass meets the custom_vjp function (the prose's claim
        # holds for a fwd built from differentiable code only, as clip_gradient's)
        f = nb.sin_custom_vjp_def()
        np.testing.assert_allclose(float(jax.grad(jax.grad(f))(1.0)), -np.sin(1.0), rtol=1e-15)
        sq = lambda v: jnp.sum(f(v) ** 2)  # noqa: E731
        np.testing.assert_allclose(np.asarray(jax.jacrev(jax.jacrev(sq))(jnp.asarray(xs))),
                                   np.diag(2 * np.cos(2 * xs)), rtol=1e-12, atol=1e-15)
        with pytest.raises(TypeError, match="forward-mode differentiation .* of the custom_vjp function f "):
            jax.hessian(sq)(jnp.asarray(xs))


def test_pdb_transcript(nb, monkeypatch):
    # the page's session: `p x` shows Array(9., dtype=float32), `p g` shows Array(-0.91113025, dtype=float32)
    seen = []

    def set_trace():
        frame = sys._getframe(1)
        seen.append((frame.f_code.co_name, frame.f_locals["x"], frame.f_locals["g"]))

    monkeypatch.setattr(nb.pdb, "set_trace", set_trace)
    with pytest.raises(TypeError, match="tuple"):  # after `q`: debug_bwd returns g, where a tuple is required
        nb.debug_cell()
    (name, x, g), = seen
    assert name == "debug_bwd"
    # (the transcript's JAX printed no weak types; both values are weakly typed, from the Python float 3.)
    assert repr(x) == "Array(9., dtype=float32, weak_type=True)"
    assert repr(g) == "Array(-0.91113025, dtype=float32, weak_type=True)"
    _close(g, np.cos(9.0))  # d sin(y)/dy at y = 9
