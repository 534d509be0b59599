"""debug_nans / debug_infs: the first primitive producing a NaN (Inf) is named with the user's source line
(eager, jit with an op-by-op re-run, grad, nested jit, cond/while/scan bodies); flags off change nothing
and keep jit's C++ dispatch."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from kiln.frontend.driver import jit as jit_module
from kiln.frontend.driver import nan_check

import kiln
import kiln.numpy as knp
from kiln import lax, runtime

HERE = os.path.basename(__file__)


def line_of(fun, marker: str) -> int:
    """The line of ``fun``'s source holding ``marker`` (a comment at the end of the line)."""
    import inspect
    lines, start = inspect.getsourcelines(fun)
    hits = [start + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def expect(match_prim: str, fun, marker: str, kind: str = "nan"):
    """pytest.raises for the error naming ``match_prim`` at ``fun``'s line with ``marker``."""
    line = line_of(fun, marker)
    pattern = rf"invalid value \({kind}\) encountered in {match_prim} at .*{re.escape(HERE)}:{line} \({fun.__name__}\)"
    return pytest.raises(FloatingPointError, match=pattern)


@pytest.fixture
def nans():
    with kiln.debug_nans(True):
        yield


@pytest.fixture
def infs():
    with kiln.debug_infs(True):
        yield


def f_log(x):
    y = x * 2.0
    z = knp.log(y)  # LOG
    return z + 1.0


BAD = np.array([-1.0, 2.0], np.float32)


def test_eager_names_primitive_and_line(nans):
    with expect("log", f_log, "# LOG"):
        f_log(knp.asarray(BAD))


def test_jit_reruns_op_by_op(nans):
    with expect("log", f_log, "# LOG") as info:
        kiln.jit(f_log)(knp.asarray(BAD))
    assert "re-running kiln.jit(f_log) op by op" in str(info.value)
    assert isinstance(info.value, kiln.KilnError)


def test_jit_with_numpy_arguments_and_clean_outputs(nans):
    f = kiln.jit(f_log)
    np.testing.assert_allclose(f(np.array([1.0, 2.0], np.float32)), np.log([2.0, 4.0]) + 1, rtol=1e-6)
    with expect("log", f_log, "# LOG"):
        f(BAD)


def f_norm(x):
    s = knp.sum(x * x)  # SQUARE
    return knp.sqrt(s)  # SQRT


def test_grad_names_backward_primitive_and_forward_line(nans):
    x = knp.zeros(3)
    assert float(f_norm(x)) == 0.0  # the forward pass is clean: only the backward pass makes a NaN
    for g in (kiln.grad(f_norm), kiln.jit(kiln.grad(f_norm))):
        with pytest.raises(FloatingPointError) as info:
            g(x)
        msg = str(info.value)
        # sqrt's derivative 0.5/sqrt(s) is inf at 0; inf * 0 in the chain rule is the NaN
        assert re.search(rf"invalid value \(nan\) encountered in mul at .*{HERE}:"
                         rf"({line_of(f_norm, '# SQUARE')}|{line_of(f_norm, '# SQRT')}) \(f_norm\)", msg), msg


def test_grad_infs_name_the_derivative_of_sqrt(infs):
    with expect("(div|rsqrt|mul|integer_pow|pow)", f_norm, "# SQRT", "inf"):
        kiln.grad(f_norm)(knp.zeros(3))


def inner(x):
    return knp.sqrt(x - 3.0)  # INNER


def test_nested_jit_names_the_inner_line(nans):
    inner_jit = kiln.jit(inner)

    @kiln.jit
    def outer(x):
        return inner_jit(x * 1.0) + 1.0
    np.testing.assert_allclose(outer(knp.full(2, 4.0)), [2.0, 2.0])
    with expect("sqrt", inner, "# INNER"):
        outer(knp.ones(2))


def scan_body(c, x):
    y = knp.log(x - c)  # SCANLOG
    return c + 1.0, y


def test_scan_body(nans):
    f = kiln.jit(lambda xs: lax.scan(scan_body, 0.0, xs))
    c, ys = f(knp.array([5.0, 6.0, 7.0]))  # clean: no error
    np.testing.assert_allclose(ys, np.log([5.0, 5.0, 5.0]), rtol=1e-6)
    with expect("log", scan_body, "# SCANLOG"):
        f(knp.array([5.0, 6.0, 1.0]))  # the third step: log(1 - 2)


def test_scan_body_reverse_and_eager(nans):
    with expect("log", scan_body, "# SCANLOG"):
        lax.scan(scan_body, 0.0, knp.array([0.5, 6.0, 7.0]), reverse=True)


def cond_branch(x):
    return knp.arccos(x)  # ACOS


def test_cond_branch(nans):
    f = kiln.jit(lambda p, x: lax.cond(p, cond_branch, lambda x: x * 0.0, x))
    np.testing.assert_allclose(f(False, knp.full(2, 5.0)), [0.0, 0.0])  # the other branch: clean
    with expect("acos", cond_branch, "# ACOS"):
        f(True, knp.full(2, 5.0))


def loop_body(v):
    i, x = v
    return i + 1, knp.sqrt(x - 1.0)  # LOOP


def test_while_body(nans):
    f = kiln.jit(lambda x: lax.while_loop(lambda v: v[0] < 3, loop_body, (0, x)))
    with expect("sqrt", loop_body, "# LOOP"):
        f(knp.full(2, 1.5))  # sqrt(0.5) = 0.707, then sqrt(-0.29)


def test_infs_are_separate():
    f = kiln.jit(lambda x: 1.0 / x)
    zero = knp.zeros(2)
    with kiln.debug_nans(True):
        assert np.isinf(np.asarray(f(zero))).all()  # an Inf is not a NaN
    with kiln.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            f(zero)
        assert np.isnan(np.asarray(kiln.jit(lambda x: x * 0.0 + knp.nan)(knp.ones(1)))).all()  # a NaN is not an Inf


def test_integer_and_boolean_outputs_are_not_checked(nans):
    x = knp.asarray(np.array([np.nan, 1.0], np.float32))
    assert nan_check.invalid_kind(knp.arange(3)) is None
    assert int(kiln.jit(lambda x: knp.isnan(x).sum())(x)) == 1
    assert knp.isnan(x).tolist() == [True, False]
    assert kiln.jit(lambda x: (x > 0).astype(knp.int32))(x).tolist() == [0, 1]


def test_nan_from_an_argument_returned_unchanged(nans):
    x = knp.asarray(np.array([np.nan], np.float32))
    with pytest.raises(FloatingPointError, match=r"output of kiln.jit\(<lambda>\), but re-running it op by op "
                                                 r"produced no nan"):
        kiln.jit(lambda x: x)(x)


def test_donated_arguments_cannot_be_rerun(nans):
    f = kiln.jit(lambda x: knp.log(x) * 2.0, donate_argnums=0)
    with pytest.raises(FloatingPointError, match=r"arguments were donated.*without donate_argnums"):
        f(knp.asarray(BAD))


def test_flags_off_no_error_and_cpp_fast_path(monkeypatch):
    if not runtime.fastpath.available():
        pytest.skip("C++ dispatch unavailable here")
    misses, python_calls = [], []
    miss, call = jit_module.JittedFunction._cpp_miss, jit_module.JittedFunction._call
    monkeypatch.setattr(jit_module.JittedFunction, "_cpp_miss",
                        lambda self, *a, **k: misses.append(1) or miss(self, *a, **k))
    monkeypatch.setattr(jit_module.JittedFunction, "_call",
                        lambda self, *a, **k: python_calls.append(1) or call(self, *a, **k))
    f = kiln.jit(f_log)
    x = knp.asarray(BAD)
    assert not kiln.config.debug_nans and not kiln.config.debug_infs
    for _ in range(4):
        assert np.isnan(np.asarray(f(x)))[0]  # no error with the flags off
    assert len(misses) == 1 and not python_calls  # one miss, then C++ only
    with kiln.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f(x)  # the recorded C++ path is left while the flag is on
        assert python_calls
    python_calls.clear()
    f(x)
    assert not python_calls and len(misses) == 1  # back on the C++ path, nothing retraced


def test_config_names_context_managers_and_env():
    assert kiln.debug_nans.value is False and kiln.debug_infs.value is False
    with kiln.debug_nans(True):
        assert kiln.config.debug_nans and kiln.config.jax_debug_nans
    kiln.config.update("jax_debug_infs", True)
    try:
        assert kiln.debug_infs.value is True
    finally:
        kiln.config.update("debug_infs", False)
    code = "import kiln; print(kiln.config.debug_nans, kiln.config.debug_infs)"
    env = dict(os.environ, KILN_DEBUG_NANS="1", KILN_DEBUG_INFS="true", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr


# -- source locations ----------------------------------------------------------------------------------------

def two_lines(x):
    y = knp.sin(x)  # SIN
    return y * 3.0  # MUL


def test_ir_records_user_lines_and_transformations_keep_them():
    sin_line, mul_line = line_of(two_lines, "# SIN"), line_of(two_lines, "# MUL")
    ir = kiln.make_jaxpr(two_lines)(knp.ones(2))
    assert "#" not in str(ir)  # off by default
    text = ir.pretty_print(source_info=True)
    # JAX's layout: each note after the line that binds the equation's results, lined up past the longest line
    assert re.search(rf"= sin a +# {HERE}:{sin_line} \(two_lines\)", text), text
    assert re.search(rf"= mul .* +# {HERE}:{mul_line} \(two_lines\)", text), text
    cases = [(kiln.grad(lambda x: two_lines(x).sum()), knp.ones(2), True),
             (kiln.vmap(two_lines), knp.ones((2, 2)), False),
             (lambda x: kiln.jvp(two_lines, (x,), (x,)), knp.ones(2), True)]
    for transformed, arg, has_cos in cases:
        text = kiln.make_jaxpr(transformed)(arg).pretty_print(source_info=True)
        eqn_lines = [ln for ln in text.splitlines() if " = " in ln]
        assert eqn_lines and all(f"{HERE}:" in ln for ln in eqn_lines), text
        if has_cos:  # sin's derivative: a cos at sin's line
            assert re.search(rf"= cos a +# {HERE}:{sin_line} \(two_lines\)", text), text


def test_stablehlo_locations_only_with_debug_info():
    lowered = kiln.jit(two_lines).lower(knp.ones(2))
    plain = lowered.as_text()
    assert "loc(" not in plain and HERE not in plain
    text = lowered.as_text(debug_info=True)
    sin_line, mul_line = line_of(two_lines, "# SIN"), line_of(two_lines, "# MUL")
    assert re.search(r'loc\("jit\(two_lines\)/sin"\(#loc\d*\)\)', text), text
    assert re.search(rf'loc\(".*{re.escape(HERE)}":{sin_line}:\d+\)', text), text
    assert re.search(rf'loc\(".*{re.escape(HERE)}":{mul_line}:\d+\)', text), text
    assert lowered.as_text() == plain  # the text compile caches are keyed on stays free of locations
    assert lowered.as_text("stablehlo") == plain and "loc(" in lowered.as_text("stablehlo", debug_info=True)
    # As JAX's: dialect="hlo" is the module in XLA's HLO text before its optimisations, metadata with debug_info
    hlo = lowered.as_text("hlo")
    assert hlo.startswith("HloModule ") and "ENTRY" in hlo and "sine(" in hlo and "metadata" not in hlo
    with_info = lowered.as_text("hlo", debug_info=True)
    assert 'op_name="jit(two_lines)/sin"' in with_info and HERE in with_info
    with pytest.raises(kiln.KilnError, match=r"as_text\(dialect='mhlo'\): the dialects are 'stablehlo'"):
        lowered.as_text("mhlo")


def test_a_failing_rerun_is_reported(nans, monkeypatch):
    def broken(*args):
        raise RuntimeError("no eager rule")
    monkeypatch.setattr(nan_check, "run_checked", broken)
    with pytest.raises(FloatingPointError, match=r"output of kiln.jit\(f_log\); re-running it op by op to find the "
                                                 r"operation that produced it failed: RuntimeError: no eager rule"):
        kiln.jit(f_log)(knp.asarray(BAD))


def one_op(x):
    return knp.log(x)  # ONE


def test_a_jitted_single_primitive_is_named_without_rerun(nans):
    with expect("log", one_op, "# ONE") as info:
        kiln.jit(one_op)(knp.asarray(BAD))
    assert "re-running" not in str(info.value)


def remat_body(x):
    y = x + 1.0
    return knp.sqrt(y)  # REMAT


def test_checkpoint_body(nans):
    g = kiln.checkpoint(remat_body)
    with expect("sqrt", remat_body, "# REMAT"):
        kiln.jit(lambda x: g(x) * 2.0)(knp.full(2, -3.0))
    with expect("sqrt", remat_body, "# REMAT"):
        g(knp.full(2, -3.0))


def test_every_equation_of_transformed_control_flow_has_a_user_line():
    def f(x):
        y = lax.cond(x.sum() > 0, knp.sin, lambda v: v * 2, x)
        _, ys = lax.scan(lambda c, v: (c + v, knp.exp(v) * c), 0.0, y)
        return ys.sum()
    for g, arg in ((kiln.grad(f), knp.ones(3)), (kiln.vmap(kiln.grad(f)), knp.ones((2, 3))),
                   (kiln.jit(kiln.grad(f)), knp.ones(3))):
        text = kiln.make_jaxpr(g)(arg).pretty_print(source_info=True)
        eqn_lines = [ln for ln in text.splitlines() if " = " in ln]
        missing = [ln for ln in eqn_lines if f"# {HERE}:" not in ln]
        assert eqn_lines and not missing, "\n".join(missing)
