"""The direct launch of jitted calls whose arguments and results are pytrees of Python's containers holding kiln
arrays (frontend/driver/direct_call.py, PytreeCall): a training step ``step(params, batch)`` skips jaxlib's C++
dispatch and its Python callback per array. Every call that does not match the recorded signature exactly must
take the other paths and get their results and errors."""
import collections
from typing import NamedTuple

import numpy as np
import pytest
from kiln.frontend.driver import jit as jit_module
from kiln.frontend.driver.array import Array as ConcreteArray  # (kiln.Array is the public type)
from kiln.frontend.driver.direct_call import PytreeCall, StaticOptionsCall

import kiln
import kiln.numpy as knp


class State(NamedTuple):
    step: object
    params: object


def _no_other_path(monkeypatch):
    """Fail the test when a call leaves the direct launch (for the C++ path, or the Python path without it)."""
    monkeypatch.setattr(jit_module, "call_cpp", lambda *a, **k: pytest.fail("left the direct launch"))


def _host(tree):
    return kiln.tree_util.tree_map(np.asarray, tree)


def _params(seed=0, n=8):
    rng = np.random.default_rng(seed)
    return {f"w{i}": knp.asarray(rng.standard_normal(4).astype(np.float32)) for i in range(n)}


def _sgd(p, g):
    return {k: w - np.float32(0.1) * g for k, w in p.items()}


def test_dict_step_launches_directly_with_the_numbers_of_the_other_paths(monkeypatch):
    step = kiln.jit(lambda p, g: {k: w - 0.1 * g for k, w in p.items()})
    p, g = _params(), knp.arange(4.0)
    first = step(p, g)
    assert type(step._signatures.direct) is PytreeCall
    _no_other_path(monkeypatch)
    for _ in range(3):
        out = step(p, g)
        assert type(out) is dict and sorted(out) == sorted(p)
        for k in p:
            assert type(out[k]) is ConcreteArray and out[k].dtype == np.float32 and not out[k].committed
            np.testing.assert_array_equal(out[k], first[k])
            np.testing.assert_allclose(out[k], _sgd(_host(p), np.arange(4.0, dtype=np.float32))[k], rtol=1e-6)
    # a chain of steps: each call's outputs are the next call's arguments (new arrays, equal aux tuples)
    q = p
    for _ in range(3):
        q = step(q, g)
    expect = _host(p)
    for _ in range(3):
        expect = _sgd(expect, np.arange(4.0, dtype=np.float32))
    for k in p:
        np.testing.assert_allclose(q[k], expect[k], rtol=1e-6)


def test_results_fed_back_match_without_comparing_avals(monkeypatch):
    """A training loop passes each step's results back in: they carry the arguments' own aux tuples, so the
    signature matches by identity, with no Python ``ShapedArray.__eq__`` per parameter per step."""
    from kiln.frontend.core.avals import ShapedArray
    step = kiln.jit(lambda p, g: ({k: w - 0.1 * g for k, w in p.items()}, knp.sum(g)))
    p, g = _params(), knp.arange(4.0)
    q, _ = step(p, g)
    q, _ = step(q, g)
    f = kiln.jit(lambda x: x * 0.5)  # x = f(x), on the plain path
    x = f(f(knp.ones(3)))
    compared = []
    plain_eq = ShapedArray.__eq__
    monkeypatch.setattr(ShapedArray, "__eq__", lambda a, b: compared.append(a) or plain_eq(a, b))
    _no_other_path(monkeypatch)
    for _ in range(3):
        q, total = step(q, g)
    assert compared == []
    assert float(total) == 6.0
    expect = _host(p)
    for _ in range(5):
        expect = _sgd(expect, np.arange(4.0, dtype=np.float32))
    for k in p:
        np.testing.assert_allclose(q[k], expect[k], rtol=1e-6)
    for _ in range(3):
        x = f(x)
    assert compared == []
    np.testing.assert_array_equal(x, np.full(3, 0.5 ** 5, np.float32))


def test_nested_containers_namedtuples_none_and_keywords(monkeypatch):
    def f(state, batch, *, scale):
        w, (b, extra) = state.params["layer"]
        loss = knp.sum((batch["x"] @ w + b) ** 2) * scale
        return State(state.step + 1, {"layer": [w * 2, (b - 1, None)]}), [loss, (extra,)]

    f = kiln.jit(f)
    w, b = knp.ones((3, 2)), knp.arange(2.0)
    state = State(knp.asarray(0), {"layer": [w, (b, None)]})
    batch = {"x": knp.arange(6.0).reshape(2, 3)}
    scale = knp.asarray(0.5)
    first = f(state, batch, scale=scale)
    assert type(f._signatures.direct) is PytreeCall
    _no_other_path(monkeypatch)
    out = f(state, batch, scale=scale)
    assert type(out[0]) is State and out[0].params["layer"][1][1] is None and out[1][1] == (None,)
    assert int(out[0].step) == 1
    np.testing.assert_array_equal(out[0].params["layer"][0], np.full((3, 2), 2.0))
    np.testing.assert_array_equal(out[0].params["layer"][1][0], np.arange(2.0) - 1)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(out[1][0], np.sum((x @ np.ones((3, 2)) + np.arange(2.0)) ** 2) * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(out[1][0], first[1][0])


def test_every_mismatch_takes_the_other_paths(count_misses):
    step = kiln.jit(lambda p, g: {k: w * g for k, w in p.items()})
    p, g = {"a": knp.ones(2), "b": knp.full(2, 2.0)}, knp.full(2, 3.0)
    step(p, g), step(p, g)
    assert type(step._signatures.direct) is PytreeCall

    def check(p, g, expect):
        out = step(p, g)
        assert sorted(out) == sorted(expect)
        for k in expect:
            np.testing.assert_array_equal(out[k], expect[k])

    check({"b": knp.full(2, 2.0), "a": knp.ones(2)}, g, {"a": [3.0, 3.0], "b": [6.0, 6.0]})  # other key order
    check({"a": knp.ones(2), "c": knp.ones(2)}, g, {"a": [3.0, 3.0], "c": [3.0, 3.0]})  # other keys
    check({"a": knp.ones(2)}, g, {"a": [3.0, 3.0]})  # fewer
    check({"a": knp.ones(3), "b": knp.ones(3)}, knp.ones(3), {"a": [1.0] * 3, "b": [1.0] * 3})  # other shapes
    check({"a": knp.ones(2, dtype=knp.int32), "b": knp.ones(2)}, g, {"a": [3.0, 3.0], "b": [3.0, 3.0]})  # dtype
    check({"a": np.ones(2, np.float32), "b": knp.ones(2)}, g, {"a": [3.0, 3.0], "b": [3.0, 3.0]})  # a host array
    check({"a": 1.0, "b": knp.ones(2)}, g, {"a": [3.0, 3.0], "b": [3.0, 3.0]})  # a Python scalar
    check(p, 2.0, {"a": [2.0, 2.0], "b": [4.0, 4.0]})
    committed = {"a": kiln.device_put(knp.ones(2), kiln.devices()[0]), "b": knp.ones(2)}
    out = step(committed, g)
    assert out["a"].committed and out["b"].committed
    assert not step(p, g)["a"].committed  # the recorded (uncommitted) signature again
    check(p, g, {"a": [3.0, 3.0], "b": [6.0, 6.0]})
    # a list where a tuple was: another structure
    h = kiln.jit(lambda xs: [x + 1 for x in xs])
    xs = (knp.ones(2), knp.zeros(2))
    h(xs), h(xs)
    assert type(h._signatures.direct) is PytreeCall
    np.testing.assert_array_equal(h([knp.ones(2), knp.zeros(2)])[1], [1.0, 1.0])
    np.testing.assert_array_equal(h(xs)[0], [2.0, 2.0])


def test_plain_array_arguments_with_a_pytree_result(monkeypatch):
    """Arrays passed by position with a namedtuple/dict result (``eigh(a)``): matched without flattening the
    arguments; a container, a keyword, a host array or another shape in their place takes the other paths."""
    f = kiln.jit(lambda a, b: State(step=a + b, params={"d": a - b}))
    a, b = knp.arange(3.0), knp.ones(3)
    f(a, b), f(a, b)
    direct = f._signatures.direct
    assert type(direct) is PytreeCall and direct.positional_leaves == 2
    with monkeypatch.context() as m:
        _no_other_path(m)
        out = f(a, b)
    assert type(out) is State and type(out.params) is dict
    np.testing.assert_array_equal(out.step, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out.params["d"], [-1.0, 0.0, 1.0])
    for call, want in [(lambda: f(a, b=b), [1.0, 2.0, 3.0]), (lambda: f(a, np.ones(3, np.float32)), [1.0, 2.0, 3.0]),
                       (lambda: f(knp.ones(2), knp.ones(2)), [2.0, 2.0]), (lambda: f(a, 2.0), [2.0, 3.0, 4.0])]:
        np.testing.assert_array_equal(call().step, want)
    with pytest.raises(TypeError):
        f((a,), b)  # a container where an array was: not matched here, the other paths' error
    eigh = kiln.jit(knp.linalg.eigh)
    s = knp.asarray(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32))
    eigh(s), eigh(s)
    assert eigh._signatures.direct.positional_leaves == 1
    np.testing.assert_allclose(eigh(s).eigenvalues, [1.0, 3.0], rtol=1e-6)
    with_tree = kiln.jit(lambda t: t[0] * 2)  # a tuple argument: flattened, as before
    with_tree((a,)), with_tree((a,))
    assert with_tree._signatures.direct.positional_leaves == -1
    np.testing.assert_array_equal(with_tree((a,)), [0.0, 2.0, 4.0])


def test_deleted_leaf_gets_kilns_error_naming_its_path():
    step = kiln.jit(lambda p: {k: w + 1 for k, w in p.items()})
    p = {"a": knp.ones(2), "b": knp.ones(2)}
    step(p), step(p)
    assert type(step._signatures.direct) is PytreeCall
    p["b"].delete()
    with pytest.raises(kiln.DeletedBufferError, match=r"argument p\['b'\] refers to a deleted"):
        step(p)


def test_unsortable_dict_keys_get_kilns_error():
    f = kiln.jit(lambda p: [v * 2 for v in p.values()])
    p = {"a": knp.ones(2), "b": knp.ones(2)}
    f(p), f(p)
    with pytest.raises(ValueError, match="cannot be compared"):
        f({1: knp.ones(2), "b": knp.ones(2)})


def test_other_pytree_types_take_the_other_paths():
    # OrderedDict (insertion order), defaultdict, registered classes: kiln's rules, not jaxlib's containers
    f = kiln.jit(lambda d: {k: v * 2 for k, v in d.items()})
    od = collections.OrderedDict([("b", knp.ones(2)), ("a", knp.zeros(2))])
    for _ in range(3):
        out = f(od)
        np.testing.assert_array_equal(out["b"], [2.0, 2.0])
        np.testing.assert_array_equal(out["a"], [0.0, 0.0])
    assert f._signatures.direct is None

    @kiln.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    g = kiln.jit(lambda p: [Pair(p.b, p.a)])
    for _ in range(3):
        out = g(Pair(knp.ones(2), knp.zeros(3)))[0]
        assert isinstance(out, Pair) and out.a.shape == (3,) and out.b.shape == (2,)
    assert g._signatures.direct is None


def test_unused_leaves_and_closed_over_arrays(monkeypatch):
    const = knp.arange(3.0)
    f = kiln.jit(lambda p: {"y": p["used"] * const})  # p["unused"] is pruned from the program
    p = {"unused": knp.ones(5), "used": knp.full(3, 2.0)}
    f(p), f(p)
    assert type(f._signatures.direct) is PytreeCall
    _no_other_path(monkeypatch)
    for _ in range(2):
        np.testing.assert_array_equal(f(p)["y"], [0.0, 2.0, 4.0])


def test_static_options_beside_pytrees(monkeypatch):
    f = kiln.jit(lambda p, lr: [w * lr for w in p], static_argnames="lr")
    p = [knp.ones(2), knp.full(2, 2.0)]
    f(p, lr=0.5), f(p, lr=0.5)
    assert type(f._signatures.direct) is StaticOptionsCall and type(f._signatures.direct.inner) is PytreeCall
    np.testing.assert_array_equal(f(p, lr=0.25)[1], [0.5, 0.5])  # another option: another program
    np.testing.assert_array_equal(f(p, lr=0.5)[1], [1.0, 1.0])
    f(p, lr=0.5)
    _no_other_path(monkeypatch)
    np.testing.assert_array_equal(f(p, lr=0.5)[0], [0.5, 0.5])
    monkeypatch.undo()
    np.testing.assert_array_equal(f(p, 0.5)[0], [0.5, 0.5])  # the option by position: matched on the other paths


def test_flags_and_donation():
    f = kiln.jit(lambda p: {"y": knp.log(p["x"])})
    p = {"x": -knp.ones(2)}
    f(p), f(p)
    assert type(f._signatures.direct) is PytreeCall
    with kiln.config.override("debug_nans", True):
        with pytest.raises(FloatingPointError):
            f(p)
    assert np.isnan(np.asarray(f(p)["y"])).all()
    g = kiln.jit(lambda p: {"y": p["x"] * 2}, donate_argnums=0)
    q = {"x": knp.ones(2)}
    out = g(q)
    assert type(g._signatures.direct) is PytreeCall and g._signatures.direct.donated == (0,)
    with pytest.raises(kiln.DeletedBufferError, match=r"argument p\['x'\] refers to a deleted array"):
        g(q)
    r = {"x": out["y"]}
    np.asarray(r["x"])  # a cached host view: dropped before the launch, so the buffer is still donated
    np.testing.assert_array_equal(g(r)["y"], [4.0, 4.0])
    assert r["x"].is_deleted()


def test_eager_sequences_launch_directly(monkeypatch):
    from kiln.frontend.driver import eager_jit as eager_jit_module
    x, y = knp.arange(3.0), knp.ones(2)
    for _ in range(2):
        knp.concatenate([x, y]), knp.stack((x, x), axis=1)
    assert type(knp.concatenate._eager_state[0]._signatures.direct) is PytreeCall
    assert type(knp.stack._eager_state[0]._signatures.direct) is StaticOptionsCall
    monkeypatch.setattr(eager_jit_module, "call_cpp", lambda *a: pytest.fail("took the C++ path"))
    np.testing.assert_array_equal(knp.concatenate([x, y]), [0.0, 1.0, 2.0, 1.0, 1.0])
    np.testing.assert_array_equal(knp.stack((x, x), axis=1), np.stack([np.arange(3.0)] * 2, axis=1))
