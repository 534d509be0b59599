"""kiln.monitoring (as jax.monitoring): listeners hear what is recorded, and kiln records each jit trace and
compile under JAX's event names. Also JAX's old host_* names and ``import kiln.lax.linalg``."""
from __future__ import annotations

import importlib
import time
import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import monitoring


@pytest.fixture(autouse=True)
def _no_listeners():
    monitoring.clear_event_listeners()
    yield
    monitoring.clear_event_listeners()


def test_each_kind_reaches_only_its_listeners_with_keywords():
    heard = []
    monitoring.register_event_listener(lambda e, **k: heard.append(("event", e, k)))
    monitoring.register_event_duration_secs_listener(lambda e, d, **k: heard.append(("duration", e, d, k)))
    monitoring.register_event_time_span_listener(lambda e, s, t, **k: heard.append(("span", e, s, t, k)))
    monitoring.register_scalar_listener(lambda e, v, **k: heard.append(("scalar", e, v, k)))
    monitoring.record_event("/a", step=3)
    monitoring.record_event_duration_secs("/b", 0.5, who="x")
    monitoring.record_event_time_span("/c", 1.0, 2.5)
    monitoring.record_scalar("/d", 7)
    assert heard == [("event", "/a", {"step": 3}), ("duration", "/b", 0.5, {"who": "x"}),
                     ("span", "/c", 1.0, 2.5, {}), ("scalar", "/d", 7, {})]


def test_unregister_and_clear():
    heard = []

    def listener(event, **kwargs):
        heard.append(event)

    monitoring.register_event_listener(listener)
    monitoring.record_event("/one")
    monitoring.unregister_event_listener(listener)
    monitoring.record_event("/two")
    assert heard == ["/one"]
    monitoring.register_event_listener(listener)
    monitoring.clear_event_listeners()
    monitoring.record_event("/three")
    assert heard == ["/one"]


def test_errors_name_the_function_and_the_fix():
    with pytest.raises(TypeError, match=r"register_event_listener: the listener must be callable, got int"):
        monitoring.register_event_listener(3)
    with pytest.raises(ValueError, match=r"unregister_scalar_listener: .* is not a registered listener"):
        monitoring.unregister_scalar_listener(print)


def test_jit_reports_its_trace_and_compile_under_jaxs_event_names():
    x = knp.arange(4.0)  # (made first: knp.arange's own program reports its phases too)
    durations, spans = [], []
    monitoring.register_event_duration_secs_listener(lambda e, d, **k: durations.append((e, d, k)))
    monitoring.register_event_time_span_listener(lambda e, s, t, **k: spans.append((e, s, t, k)))
    before = time.time()

    def scaled_sum(x):
        return (x * 2.0).sum()

    f = kiln.jit(scaled_sum)
    assert float(f(x)) == 12.0
    events = [e for e, _, _ in durations]
    assert events == ["/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                      "/jax/core/compile/backend_compile_duration"]
    assert durations[0][2] == {"fun_name": "scaled_sum"}
    assert durations[1][2] == durations[2][2] == {"fun_name": "jit(scaled_sum)"}
    assert all(d >= 0 for _, d, _ in durations)
    assert [e for e, _, _, _ in spans] == events
    for (_, s, t, _), (_, d, _) in zip(spans, durations):
        assert before - 1 <= s <= t <= time.time() + 1 and t - s == pytest.approx(d, abs=1e-3)
    durations.clear()
    f(x)  # a cached signature: nothing traced or compiled, nothing recorded
    assert durations == []


@pytest.mark.parametrize("old, new", [("host_count", "process_count"), ("host_id", "process_index"),
                                      ("host_ids", "process_indices")])
def test_old_host_names_warn_and_answer_as_the_new_ones(old, new):
    with pytest.warns(DeprecationWarning, match=rf"kiln\.{old} is the old name of kiln\.{new}"):
        value = getattr(kiln, old)()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert value == getattr(kiln, new)()


def test_lax_linalg_is_an_importable_module():
    module = importlib.import_module("kiln.lax.linalg")
    assert module is kiln.lax.linalg
    from kiln.lax.linalg import cholesky, triangular_solve
    a = np.array([[4.0, 2.0], [2.0, 3.0]], np.float32)
    low = cholesky(a)
    np.testing.assert_allclose(np.asarray(low), np.linalg.cholesky(a), rtol=1e-6)
    b = np.array([[1.0], [2.0]], np.float32)
    x = triangular_solve(low, b, left_side=True, lower=True)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(np.linalg.cholesky(a), b), rtol=1e-6)
