"""JAX's config contexts kiln adds: ``no_tracing``, ``no_execution``, ``make_user_context``,
``array_garbage_collection_guard``, ``remove_size_one_mesh_axis_from_type`` and
``jax2tf_associative_scan_reductions``."""
from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kiln.frontend.core.config import dispatch_epoch
from kiln.frontend.driver import gc_guard

import kiln
import kiln.numpy as knp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _f32(*shape):
    return knp.ones(shape, dtype=np.float32)


# -- no_tracing ---------------------------------------------------------------------------------------------------

def test_no_tracing_runs_cached_calls():
    f = kiln.jit(lambda x: x * 3.0)
    x = _f32(4)
    f(x), x - x  # traced and compiled for f32[4]
    with kiln.no_tracing(True):
        assert kiln.no_tracing.value is True and kiln.config.jax_no_tracing is True
        np.testing.assert_array_equal(f(x), np.full(4, 3.0, np.float32))
        np.testing.assert_array_equal(x - x, np.zeros(4, np.float32))
    assert kiln.no_tracing.value is False


def test_no_tracing_raises_on_a_new_signature():
    def triple(x):
        return x * 3.0
    f = kiln.jit(triple)
    f(_f32(4))
    y = _f32(3)  # (made outside: creating it is an eager operation of its own)
    with kiln.no_tracing():
        with pytest.raises(RuntimeError) as info:
            f(y)
    message = str(info.value)
    assert isinstance(info.value, kiln.KilnError)
    assert "kiln.jit(triple)" in message and "test_config_contexts.py" in message  # what, and where it is defined
    assert "(f32[3])" in message and "no_tracing is set" in message
    assert "Call it once with arguments of these types" in message and "jax_no_tracing', False" in message
    np.testing.assert_array_equal(f(y), np.full(3, 3.0, np.float32))  # off again: traced


def test_no_tracing_raises_for_a_new_function_and_a_new_eager_signature():
    x = _f32(5)
    with kiln.no_tracing(True):
        with pytest.raises(RuntimeError, match=r"kiln\.jit\(<lambda>\).*about to trace it for arguments \(f32\[5\]\)"):
            kiln.jit(lambda v: v - 1.0)(x)
        with pytest.raises(RuntimeError, match=r"kiln\.numpy\.arctan2: about to trace it .*\(f32\[5\], f32\[5\]\)"):
            knp.arctan2(x, x)


def test_no_tracing_by_config_update_and_jax_name():
    f = kiln.jit(lambda x: x + 2.0)
    kiln.config.update("jax_no_tracing", True)
    try:
        with pytest.raises(RuntimeError, match="no_tracing is set"):
            f(np.ones(2, np.float32))
    finally:
        kiln.config.update("jax_no_tracing", False)
    np.testing.assert_array_equal(f(np.ones(2, np.float32)), [3.0, 3.0])


# -- no_execution -------------------------------------------------------------------------------------------------

def test_no_execution_stops_jit_eager_and_aot_calls():
    f = kiln.jit(lambda x: x + 1.0)
    x = _f32(4)
    f(x), x + x, kiln.lax.sin(x)  # their fast paths are recorded
    compiled = kiln.jit(lambda x: x * 2.0).lower(x).compile()
    with kiln.no_execution():
        for call, what in [(lambda: f(x), r"kiln\.jit\(<lambda>\)"), (lambda: x + x, r"kiln\.numpy\.add"),
                           (lambda: kiln.lax.sin(x), r"kiln\.numpy\.sin|kiln\.lax\.sin"),
                           (lambda: compiled(x), r"kiln\.jit\(<lambda>\)")]:
            with pytest.raises(RuntimeError, match=f"kiln tried to execute {what}.*no_execution is set") as info:
                call()
            assert isinstance(info.value, kiln.KilnError)
            assert "jax_no_execution', False" in str(info.value)
    # and the fast paths serve the calls again afterwards
    np.testing.assert_array_equal(f(x), np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(x + x, np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(compiled(x), np.full(4, 2.0, np.float32))


def test_no_execution_allows_tracing_compiling_and_transfers():
    x = _f32(3)
    with kiln.no_execution(True):
        assert kiln.config.no_execution is True
        ir = kiln.make_jaxpr(lambda v: v * v)(1.0)
        assert "mul" in str(ir)
        assert kiln.eval_shape(lambda v: v * 2.0, x).shape == (3,)
        kiln.jit(lambda v: v * 2.0).lower(x).compile()
        y = kiln.device_put(np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0])
        np.testing.assert_array_equal(np.asarray(x), [1.0, 1.0, 1.0])


def test_no_execution_changes_the_dispatch_epoch_and_restores_it():
    before = dispatch_epoch.current
    with kiln.no_execution():
        assert dispatch_epoch.current is not before
    assert dispatch_epoch.current is before


# -- make_user_context --------------------------------------------------------------------------------------------

def test_user_context_retraces_on_new_values_and_reuses_old_ones():
    traces = []

    @kiln.jit
    def f(x):
        traces.append(ctx.value)
        return x * 2.0

    ctx = kiln.make_user_context(default_value=None)
    x = _f32(2)
    f(x), f(x)
    with ctx(1):
        assert ctx.value == 1
        f(x), f(x)
    with ctx(2):
        f(x)
    with ctx(1):
        f(x)  # traced for 1 before
    f(x)
    assert traces == [None, 1, 2]
    with ctx(True):  # equal to 1, but another value (as JAX keys it: by type too)
        f(x)
    assert traces == [None, 1, 2, True]
    assert ctx.value is None and ctx.get_global() is None


def test_user_context_set_global_and_errors():
    ctx = kiln.make_user_context("a")
    n = []
    f = kiln.jit(lambda x: n.append(1) or x + 1.0)
    f(_f32(1))
    ctx.set_global("b")
    assert ctx.value == "b" and ctx.get_global() == "b"
    f(_f32(1))
    assert len(n) == 2
    with pytest.raises(ValueError, match=r"make_user_context: the value must be hashable .*got list"):
        ctx.set_global([1, 2])
    assert ctx.value == "b"
    with pytest.raises(ValueError, match="must be hashable"):
        kiln.make_user_context({})
    ctx.set_global("a")


# -- array_garbage_collection_guard -------------------------------------------------------------------------------

class _Node:
    pass


def _cycle_holding_an_array():
    node = _Node()
    node.me = node
    node.array = knp.ones((2, 3), dtype=np.float32)


def test_gc_guard_logs_an_array_freed_by_the_collector(caplog):
    gc.collect()
    with kiln.array_garbage_collection_guard("log"), caplog.at_level(logging.ERROR, logger="kiln"):
        assert kiln.config.jax_array_garbage_collection_guard == "log"
        y = knp.ones(7)
        del y  # reference counting: nothing to say
        gc.collect()
        assert not caplog.records
        _cycle_holding_an_array()
        gc.collect()
    records = [r for r in caplog.records if "garbage collector" in r.getMessage()]
    assert len(records) == 1, caplog.records
    assert records[0].levelno == logging.ERROR
    assert records[0].getMessage().startswith("kiln.Array f32[2,3] was deleted by Python's garbage collector instead "
                                              "of reference counting. Break the reference cycle")


def test_gc_guard_allow_installs_nothing(caplog):
    from kiln.frontend.driver.array import Array  # (the concrete class; kiln.Array is the public type)
    assert "__del__" not in Array.__dict__
    with kiln.array_garbage_collection_guard("log"):
        assert "__del__" in Array.__dict__
        with kiln.array_garbage_collection_guard("allow"):
            assert "__del__" not in Array.__dict__
            with caplog.at_level(logging.ERROR, logger="kiln"):
                _cycle_holding_an_array()
                gc.collect()
            assert not caplog.records
    assert "__del__" not in kiln.Array.__dict__ and gc_guard._on_gc not in gc.callbacks


def test_gc_guard_rejects_other_values():
    with pytest.raises(ValueError, match=r"expected one of None, 'allow', 'log', 'fatal'"):
        kiln.config.update("jax_array_garbage_collection_guard", "warn")


def test_gc_guard_fatal_aborts_the_process():
    code = textwrap.dedent("""
        import gc, kiln, kiln.numpy as knp
        kiln.config.update("jax_array_garbage_collection_guard", "fatal")
        class N: pass
        n = N(); n.me = n; n.a = knp.zeros(3); del n
        gc.collect()
        print("survived")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode != 0 and "survived" not in out.stdout
    assert "kiln.Array f32[3] was deleted by Python's garbage collector" in out.stderr


# -- flags accepted with no effect ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["remove_size_one_mesh_axis_from_type", "jax2tf_associative_scan_reductions"])
def test_flags_without_effect_are_accepted_silently(name, recwarn):
    context = getattr(kiln, name)
    jax_name = "jax_" + name if name.startswith("remove") else name
    x = np.array([1.0, 2.0, 3.0], np.float32)
    with context(True):
        assert context.value is True and getattr(kiln.config, jax_name) is True
        np.testing.assert_array_equal(kiln.jit(knp.cumsum)(x), [1.0, 3.0, 6.0])
    kiln.config.update(jax_name, True)
    assert getattr(kiln.config, name) is True
    kiln.config.update(jax_name, False)
    assert not [w for w in recwarn if name in str(w.message)]
    with pytest.raises(ValueError, match="expected a bool"):
        kiln.config.update(jax_name, "yes")
