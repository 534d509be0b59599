"""A jitted method that rebinds an attribute while it is traced (JAX's stateful-computations trap) is warned
about once per attribute, with the attribute, its values and the fix; results keep JAX's semantics."""
import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.errors import StaleValueWarning, TraceSideEffectWarning


def _side_effects(record):
    return [w for w in record if issubclass(w.category, TraceSideEffectWarning)]


def _calls(fn, *args_list):
    """``fn`` called on each tuple of arguments, and the TraceSideEffectWarnings the calls gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = [fn(*args) for args in args_list]
    return out, _side_effects(record)


class Counter:
    """JAX's docs' example (stateful-computations.md)."""

    def __init__(self):
        self.n = 0

    def count(self):
        self.n += 1
        return self.n


def test_the_counter_warns_once_naming_the_attribute_and_keeps_jax_results():
    counter = Counter()
    out, record = _calls(kiln.jit(counter.count), (), (), ())
    assert [int(x) for x in out] == [1, 1, 1]  # as JAX (the page's "Oh no!")
    assert counter.n == 1  # the line ran once, while tracing
    (w,) = record
    msg = str(w.message)
    assert "kiln.jit(count)" in msg and "attribute 'n'" in msg and "type Counter" in msg
    assert "from 0 to 1" in msg and "return the new state" in msg and "stale_value_warnings" in msg
    assert w.filename == __file__  # at the user's call
    assert issubclass(TraceSideEffectWarning, StaleValueWarning)


def test_a_retrace_does_not_warn_again_and_a_pure_method_never_warns():
    class Scaler:
        def __init__(self):
            self.calls = 0
            self.factor = 2.0

        def scale(self, x):
            self.calls += 1
            return x * self.factor

        def pure(self, x):
            return x * self.factor

    s = Scaler()
    _, record = _calls(kiln.jit(s.scale), (knp.ones(2),), (knp.ones(3),), (knp.ones(3),))
    assert s.calls == 2  # traced for two shapes
    assert len(record) == 1
    out, record = _calls(kiln.jit(s.pure), (knp.ones(2),))
    assert not record
    np.testing.assert_array_equal(np.asarray(out[0]), [2.0, 2.0])


def test_a_traced_value_stored_on_a_callable_object_is_named_a_leaked_tracer():
    class Model:
        def __call__(self, x):
            self.last_input = x
            return x + 1

    _, (w,) = _calls(kiln.jit(Model()), (knp.ones(3),))
    msg = str(w.message)
    assert "attribute 'last_input'" in msg and "set it to a traced f32[3]" in msg and "leaked tracer" in msg


def test_static_arguments_deleted_attributes_and_equal_values():
    class Config:
        def __init__(self):
            self.scale, self.cache = 3.0, 1.0

    def f(cfg, x):
        cfg.scale = 3.0  # an equal value: nothing changed
        del cfg.cache
        return x * cfg.scale

    cfg = Config()
    out, (w,) = _calls(kiln.jit(f, static_argnums=0), (cfg, knp.ones(2)))
    assert "attribute 'cache'" in str(w.message) and "deleted it" in str(w.message)
    np.testing.assert_array_equal(np.asarray(out[0]), [3.0, 3.0])


def test_changes_inside_an_attribute_and_kiln_functions_are_not_reported():
    class Log:
        def __init__(self):
            self.seen = []

        def f(self, x):
            self.seen.append(x.shape)  # in place: the attribute is the same object
            return x

    log = Log()
    _, record = _calls(kiln.jit(log.f), (knp.ones(2),))
    assert not record and log.seen == [(2,)]


def test_off_with_the_stale_value_switch():
    counter = Counter()
    kiln.config.update("stale_value_warnings", False)
    try:
        out, record = _calls(kiln.jit(counter.count), ())
    finally:
        kiln.config.update("stale_value_warnings", True)
    assert not record and int(out[0]) == 1


def test_lowering_warns_too():
    counter = Counter()
    with pytest.warns(TraceSideEffectWarning, match="attribute 'n'"):
        kiln.jit(counter.count).lower()


def _stale_only(record):
    return [w for w in record if w.category is StaleValueWarning]


def test_an_attribute_of_a_static_self_changed_after_the_trace_is_named():
    class CustomClass:  # JAX's Sharp Bits page, "marking self as static"
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        def calc(self, y):
            return self.x * y if self.mul else y

    calc = kiln.jit(CustomClass.calc, static_argnums=0)
    c = CustomClass(2, True)
    assert int(calc(c, 3)) == 6
    c.mul = False
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert int(calc(c, 3)) == 6  # JAX's result: the trace of the same object is reused
        assert int(calc(c, 3)) == 6
    (w,) = _stale_only(record)  # once
    msg = str(w.message)
    assert "attribute 'mul' of the CustomClass object is now False, but it was True when calc was traced" in msg
    assert "calc.clear_cache()" in msg and w.filename == __file__
    calc.clear_cache()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert int(calc(c, 3)) == 3
    assert not _stale_only(record)


def test_a_bound_methods_attributes_it_reads_are_watched_and_the_others_not():
    class Model:
        def __init__(self):
            self.w, self.step = knp.array([2.0, 3.0]), 0

        def predict(self, x):
            return x * self.w

    model = Model()
    predict = kiln.jit(model.predict)
    np.testing.assert_array_equal(np.asarray(predict(knp.ones(2))), [2.0, 3.0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.step += 1  # not read by predict
        predict(knp.ones(2))
        model.w = knp.array([2.0, 3.0])  # another array, equal: nothing is stale
        predict(knp.ones(2))
    assert not _stale_only(record)
    model.w = knp.array([5.0, 5.0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = predict(knp.ones(2))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 3.0])  # the baked value, as JAX
    (w,) = _stale_only(record)
    assert "attribute 'w' of the Model object" in str(w.message) and "when predict was traced" in str(w.message)


def test_a_later_change_of_a_rebound_attribute_still_warns_as_stale():
    counter = Counter()
    count = kiln.jit(counter.count)
    _, (w,) = _calls(count, ())
    counter.n = 5
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert int(count()) == 1  # the baked value, as JAX
    (w,) = _stale_only(record)
    assert "attribute 'n' of the Counter object is now 5, but it was 1" in str(w.message)


def test_a_jitted_function_passed_as_a_static_argument_is_not_watched():
    """A kiln.jit function as a static argument, called inside the trace, updates its own cache bookkeeping: that is
    kiln's, not the user's state, and gives no warning (it did: "rebound the attribute '_last_key' of an object of
    type JittedFunction"). A user's object beside it still is watched."""
    inner = kiln.jit(lambda x: x * 2.0)
    counter = Counter()

    def outer(f, c, x):
        c.count()
        return f(x) + 1.0

    out, record = _calls(kiln.jit(outer, static_argnums=(0, 1)), (inner, counter, 1.0))
    assert float(out[0]) == 3.0
    assert [str(w.message).split(" of an object of type ")[1].split(" ")[0] for w in record] == ["Counter"]
