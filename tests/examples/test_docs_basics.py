"""JAX's docs pages random-numbers.md, jit-compilation.md, automatic-vectorization.md, pytrees.md, custom_pytrees.md
and control-flow.md, ported to kiln by changing imports (tests/examples/jax_ported/docs_*.py, one module per page),
checked against oracles that do not involve JAX.

Oracles: a NumPy Threefry-2x32 (tests/examples/threefry_oracle.py) for every key and draw of the random-numbers
page, bit for bit for the keys and uniform bits, to float32 rounding for the normal draws (the oracle's erfinv is
float64); NumPy's own generator for the page's NumPy cells; the page's printed text where it does not depend on
memory addresses (jaxprs, key paths, treedefs, tracers); NumPy float64 closed forms (SELU, np.convolve, the MLP's
gradient by backpropagation, pairwise distances); Python loops for vmap, over batches with distinct rows (the
page's two rows are equal); trace counts for the jit-caching cell. Where a cell raises on the page, the test checks
the exception class (JAX's, or a kiln subclass of it) and that the message says what went wrong, where (the
argument) and how to fix it. Where JAX 0.10.2 no longer does what the page says (jax.vmap of the validating MyTree
no longer raises), kiln is checked to do what JAX 0.10.2 does (test_docs_basics_against_jax.py compares the two).

control-flow.md: tests/examples/test_common_gotchas.py (its "Control flow" section) already checks every cell's
value and error under kiln; here only what it does not: the printed text, dtypes and weak types of each cell.
The whole file runs each cell once, at small sizes (SELU on 7 numbers, an MLP of widths 1-8-8-1).
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings

import numpy as np
import pytest
import threefry_oracle
from ported import load

import kiln
import kiln.numpy as jnp
from kiln import tree_util


@pytest.fixture(autouse=True)
def _numpy_global_rng():
    """The pages seed and draw from NumPy's global generator: leave its state as it was for other tests."""
    state = np.random.get_state()
    yield
    np.random.set_state(state)


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _np(x):
    return np.asarray(x)


def _kd(key):
    return _np(kiln.random.key_data(key))


def _strong(x, dtype, shape=()):
    assert (x.dtype, x.shape, x.weak_type) == (np.dtype(dtype), shape, False), (x.dtype, x.shape, x.weak_type)


def _weak(x, dtype, shape=()):
    assert (x.dtype, x.shape, x.weak_type) == (np.dtype(dtype), shape, True), (x.dtype, x.shape, x.weak_type)


# ==================== random-numbers.md =============================================================================

@pytest.fixture(scope="module")
def rnd():
    nb = load("docs_random_numbers")
    state = np.random.get_state()
    out, lines = _run(nb.run)
    np.random.set_state(state)
    return out, lines


def test_numpy_cells(rnd):
    out, lines = rnd
    rs = np.random.RandomState(0)
    stream = rs.random_sample(3)
    assert out["numpy_stream"] == tuple(stream) and lines[:3] == [str(v) for v in stream]
    # the three truncated states: after three draws, after seed(0) (MT19937's initial words), after one more draw
    states = [ln for ln in lines if ln.startswith("('MT19937', array([")]
    assert len(states) == 3
    assert lines.count("('MT19937', array([         0,          1, 1812433255, 1900727105, 1208447044,") == 1
    assert sum(ln.endswith(" ...") for ln in lines) == 3
    assert out["uniform_print_state"] == np.random.RandomState(0).uniform()
    np.testing.assert_array_equal(out["numpy_vector"], np.random.RandomState(0).uniform(size=3))
    individually, all_at_once = out["numpy_sequential"]
    np.testing.assert_array_equal(individually, all_at_once)  # NumPy's sequential equivalence
    u = np.random.RandomState(0).uniform(size=2)
    assert out["foo"] == u[0] + 2 * u[1]


def test_key_and_its_repr(rnd):
    out, lines = rnd
    key = out["key"]
    assert kiln.dtypes.issubdtype(key.dtype, kiln.dtypes.prng_key) and key.shape == ()
    np.testing.assert_array_equal(_kd(key), np.array([0, 42], np.uint32))
    i = lines.index("Array((), dtype=key<fry>) overlaying:")
    assert lines[i + 1] == "[ 0 42]"


def test_a_key_is_an_array():
    # "A key is an array with a special dtype": isinstance(jax.random.key(42), jax.Array) is True in JAX
    assert isinstance(kiln.random.key(42), kiln.Array)
    assert isinstance(kiln.random.split(kiln.random.key(42)), kiln.Array)
    kiln.jit(lambda k: _seen.append(isinstance(k, kiln.Array)))(kiln.random.key(42))
    assert _seen.pop() is True


_seen: list = []


def test_same_key_same_draw(rnd):
    out, lines = rnd
    a, b = out["same_key"]
    _strong(a, np.float32)
    assert _np(a).tobytes() == _np(b).tobytes()  # the same key, the same sample
    np.testing.assert_allclose(float(a), threefry_oracle.normal([0, 42], 1)[0], rtol=1e-6)
    i = lines.index("[ 0 42]")
    assert lines[i + 1] == lines[i + 2] == str(a)


def test_split_loop(rnd):
    out, lines = rnd
    key = np.array([0, 42], np.uint32)
    for i, val in enumerate(out["split_loop"]):
        key, subkey = threefry_oracle.split(key)
        _strong(val, np.float32)
        np.testing.assert_allclose(float(val), threefry_oracle.normal(subkey, 1)[0], rtol=1e-6, atol=1e-7)
        assert f"draw {i}: {float(val)}" in lines
    np.testing.assert_array_equal(_kd(out["key_after_loop"]), key)  # bit for bit
    key, subkey = threefry_oracle.split(key)
    np.testing.assert_array_equal(_kd(out["subkey"]), subkey)
    keys = threefry_oracle.split(key, 43)
    np.testing.assert_array_equal(_kd(out["key_after_split_43"]), keys[0])
    assert len(out["forty_two_subkeys"]) == 42
    np.testing.assert_array_equal(np.stack([_kd(k) for k in out["forty_two_subkeys"]]), keys[1:])


def test_no_sequential_equivalence_and_vmap(rnd):
    out, lines = rnd
    sequence, all_at_once = out["no_sequential"]
    keys = threefry_oracle.split(np.array([0, 42], np.uint32), 3)
    np.testing.assert_array_equal(_kd(out["subkeys"]), keys)
    assert isinstance(sequence, np.ndarray) and sequence.dtype == np.float32  # np.stack of the three draws
    np.testing.assert_allclose(sequence, [threefry_oracle.normal(k, 1)[0] for k in keys], rtol=1e-6, atol=1e-7)
    _strong(all_at_once, np.float32, (3,))
    np.testing.assert_allclose(_np(all_at_once), threefry_oracle.normal([0, 42], 3), rtol=1e-6, atol=1e-7)
    assert float(all_at_once[0]) == float(out["same_key"][0])  # the first of the three is the key's scalar draw
    assert not np.allclose(sequence, _np(all_at_once))  # what the page shows: no sequential equivalence
    vectorized = out["vectorized"]
    _strong(vectorized, np.float32, (3,))
    np.testing.assert_array_equal(_np(vectorized), sequence)  # vmap draws what the loop draws, bit for bit
    assert lines[-3:] == [f"individually: {sequence}", f"all at once:  {all_at_once}", f"vectorized: {vectorized}"]


# ==================== jit-compilation.md ============================================================================

@pytest.fixture(scope="module")
def jc():
    return load("docs_jit_compilation")


LOG2_JAXPR = """{ lambda ; a:f32[]. let
    b:f32[] = log a
    c:f32[] = log 2.0:f32[]
    d:f32[] = div b c
  in (d,) }"""


def test_make_jaxpr_and_the_side_effect(jc):
    jc.global_list.clear()
    jaxpr, lines = _run(jc.make_jaxpr_cell)
    assert str(jaxpr) == LOG2_JAXPR and lines == LOG2_JAXPR.splitlines()  # the page's jaxpr, as JAX prints it
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["log", "log", "div"]
    # the append ran once, while tracing, and kept the tracer: nothing of it is in the jaxpr
    assert len(jc.global_list) == 1 and isinstance(jc.global_list[0], kiln.core.Tracer)
    assert "append" not in str(jaxpr)
    np.testing.assert_allclose(float(kiln.core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, 8.0)[0]), 3.0, rtol=1e-6)


def test_the_tracer_is_an_array(jc):
    # "When tracing, JAX wraps each argument by a tracer object": one that isinstance(x, jax.Array) accepts
    seen = []
    kiln.make_jaxpr(lambda x: (seen.append(isinstance(x, kiln.Array)), jc.log2(x))[1])(3.0)
    kiln.jit(lambda x: seen.append(isinstance(x, kiln.Array)))(3.0)
    kiln.vmap(lambda x: seen.append(isinstance(x, kiln.Array)))(kiln.numpy.ones(2))
    kiln.grad(lambda x: seen.append(isinstance(x, kiln.Array)) or x)(3.0)
    assert seen == [True, True, True, True]


def test_make_jaxpr_of_a_print(jc):
    jaxpr, lines = _run(jc.make_jaxpr_with_print_cell)
    assert lines[0] == "printed x: JitTracer(~float32[])"  # the weak float32 tracer JAX 0.10 prints
    assert lines[1:] == LOG2_JAXPR.splitlines()


def test_make_jaxpr_sees_one_branch(jc):
    jaxpr, lines = _run(jc.make_jaxpr_if_rank_2_cell)
    assert lines == ["{ lambda ; a:i32[3]. let  in (a,) }"] and jaxpr.jaxpr.eqns == []
    two = kiln.make_jaxpr(jc.log2_if_rank_2)(jnp.ones((2, 2)))  # the other branch, on a matrix
    # JAX 0.10.2: log, log, convert_element_type (the weak log 2.0 made strong), div of f32[2,2] by f32[]. kiln
    # broadcasts the scalar first (one more equation, broadcast_in_dim: kiln's lax ops take operands of one shape)
    names = [e.primitive.name for e in two.jaxpr.eqns]
    assert [n for n in names if n != "broadcast_in_dim"] == ["log", "log", "convert_element_type", "div"]
    assert names.count("broadcast_in_dim") == 1


def test_selu_eager_and_jitted(jc):
    x, y = jc.selu_cell(7)
    _strong(x, np.int32, (7,))
    _strong(y, np.float32, (7,))
    np.testing.assert_allclose(_np(y), 1.05 * np.arange(7.0), rtol=1e-6)
    selu_jit, yj = jc.selu_jit_cell(x)
    _strong(yj, np.float32, (7,))
    np.testing.assert_allclose(_np(yj), _np(y), rtol=1e-6)
    # both branches of the where, against the closed form in float64
    z = np.linspace(-3, 3, 13, dtype=np.float32)
    want = 1.05 * np.where(z > 0, z, 1.67 * np.exp(z.astype(np.float64)) - 1.67)
    np.testing.assert_allclose(_np(selu_jit(z)), want, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(_np(jc.selu(z)), want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("cell, arg", [("f_jit_cell", "x"), ("g_jit_cell", "n")])
def test_python_control_flow_on_traced_values_raises(jc, cell, arg):
    with pytest.raises(kiln.errors.TracerBoolConversionError) as e:
        getattr(jc, cell)()
    assert isinstance(e.value, kiln.errors.ConcretizationTypeError) and isinstance(e.value, TypeError)
    msg = str(e.value)
    assert "bool" in msg and "traced" in msg  # what
    assert f"argument {arg}" in msg and cell[0] in msg  # where: the argument and the function being traced
    assert "static_argnums" in msg and "lax.cond" in msg and "lax.while_loop" in msg  # how to fix it


def test_jitted_loop_body_and_static_arguments(jc):
    _weak(jc.g_inner_jitted_cell(), np.int32)
    assert int(jc.g_inner_jitted_cell()) == 30
    (f_jit_correct, a), lines_a = _run(jc.f_jit_correct_cell)
    (g_jit_correct, b), lines_b = _run(jc.g_jit_correct_cell)
    c, lines_c = _run(jc.g_jit_decorated_cell)
    for v, want in ((a, 10), (b, 30), (c, 30)):
        _weak(v, np.int32)
        assert int(v) == want
    assert (lines_a, lines_b, lines_c) == (["10"], ["30"], ["30"])
    # the static value takes the other branch, and a new n another number of iterations
    assert int(f_jit_correct(-3)) == -6 and int(g_jit_correct(1, 5)) == 6 and int(jc.g_jit_decorated(1, n=2)) == 3


_TRACES = [0]


def _tick():
    _TRACES[0] += 1


def test_jit_caching(jc, monkeypatch):
    # every trace of the loop body runs its Python once: count them
    body = jc.unjitted_loop_body
    monkeypatch.setattr(jc, "unjitted_loop_body", lambda prev_i: (_tick(), body(prev_i))[1])
    counts, caught = [], []
    for fn in (jc.g_inner_jitted_partial, jc.g_inner_jitted_lambda, jc.g_inner_jitted_normal):
        _TRACES[0] = 0
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fn(10, 20)
        _weak(out, np.int32)
        assert int(out) == 30
        counts.append(_TRACES[0])
        caught.append([type(x.message) for x in w])
    # a new partial or lambda each iteration: traced 20 times; the same function: traced once, for a weak int32
    assert counts == [20, 20, 1]
    # kiln's RetraceWarning (README, "Warnings JAX does not give") for the first two, once each; none for the third
    assert caught[0] == caught[1] == [kiln.errors.RetraceWarning] and caught[2] == []
    _TRACES[0] = 0
    assert int(jc.g_inner_jitted_normal(10, 20)) == 30 and _TRACES[0] == 0  # cached from the first call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kiln.errors.RetraceWarning)
        res, lines = _run(jc.caching_cell)
    assert [int(r) for r in res] == [30, 30, 30]
    assert lines == ["jit called in a loop with partials:", "jit called in a loop with lambdas:",
                     "jit called in a loop with caching:"]


# ==================== automatic-vectorization.md ====================================================================

@pytest.fixture(scope="module")
def av():
    nb = load("docs_automatic_vectorization")
    return nb, nb.run()


def _np_convolve(x, w):
    """The page's convolve in float64: the dot of each length-3 window with w."""
    return np.convolve(np.asarray(x, np.float64), np.asarray(w, np.float64)[::-1], "valid")


def test_convolve(av):
    nb, out = av
    _strong(out["convolve"], np.float32, (3,))
    np.testing.assert_array_equal(_np(out["convolve"]), [11.0, 20.0, 29.0])
    np.testing.assert_array_equal(_np(out["convolve"]), _np_convolve(nb.x, nb.w))
    xs, ws = out["xs_ws"]
    _strong(xs, np.int32, (2, 5))
    _strong(ws, np.float32, (2, 3))


def test_page_batches(av):
    _, out = av
    want = np.array([[11.0, 20.0, 29.0]] * 2)
    for name in ("manually_batched", "manually_vectorized", "auto", "v3", "jitted"):
        _strong(out[name], np.float32, (2, 3))
        np.testing.assert_array_equal(_np(out[name]), want)
    xst, wst, res = out["auto_v2"]
    assert xst.shape == (5, 2) and wst.shape == (3, 2)
    _strong(res, np.float32, (3, 2))
    np.testing.assert_array_equal(_np(res), want.T)


def test_batches_of_distinct_rows_against_a_python_loop(av):
    nb, _ = av
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(4, 6)).astype(np.float32)
    ws = rng.normal(size=(4, 3)).astype(np.float32)
    want = np.stack([_np_convolve(x, w) for x, w in zip(xs, ws)])  # one row at a time
    for got in (nb.manually_batched_convolve(xs, ws), nb.manually_vectorized_convolve(xs, ws),
                nb.auto_batch_convolve(xs, ws), nb.jitted_batch_convolve(xs, ws)):
        _strong(got, np.float32, (4, 4))
        np.testing.assert_allclose(_np(got), want, rtol=1e-5, atol=1e-5)
    got = nb.auto_batch_convolve_v2(xs.T, ws.T)
    assert got.shape == (4, 4)
    np.testing.assert_allclose(_np(got), want.T, rtol=1e-5, atol=1e-5)
    got = nb.batch_convolve_v3(xs, ws[1])  # one w for every x
    np.testing.assert_allclose(_np(got), np.stack([_np_convolve(x, ws[1]) for x in xs]), rtol=1e-5, atol=1e-5)


def test_pairwise_distances(av):
    nb, _ = av
    pts = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    D = nb.pairwise(lambda x, y: jnp.sqrt(jnp.sum((x - y) ** 2)), pts)
    _strong(D, np.float32, (4, 4))
    p = pts.astype(np.float64)
    want = np.array([[np.linalg.norm(a - b) for b in p] for a in p])
    np.testing.assert_allclose(_np(D), want, rtol=1e-5, atol=1e-6)


# ==================== pytrees.md ====================================================================================

@pytest.fixture(scope="module")
def pt():
    return load("docs_pytrees")


def test_leaves_of_example_trees(pt):
    leaves, lines = _run(pt.leaves_cell)
    assert [len(v) for v in leaves] == [3, 3, 5, 3, 1]
    assert leaves[1:4] == [[1, 2, 3], [1, 2, 3, 4, 5], [2, 2, 3]] and leaves[0][:2] == [1, "a"]
    assert leaves[4][0] is pt.example_trees[4] and leaves[0][2] is pt.example_trees[0][2]
    assert re.fullmatch(r"\[1, 'a', <object object at 0x\w+>\]\s+has 3 leaves: \[1, 'a', <object object at 0x\w+>\]",
                        lines[0])
    assert lines[1:] == [
        "(1, (2, 3), ())                               has 3 leaves: [1, 2, 3]",
        "[1, {'k1': 2, 'k2': (3, 4)}, 5]               has 5 leaves: [1, 2, 3, 4, 5]",
        "{'a': 2, 'b': (2, 3)}                         has 3 leaves: [2, 2, 3]",
        "Array([1, 2, 3], dtype=int32)                 has 1 leaves: [Array([1, 2, 3], dtype=int32)]"]


def test_tree_map(pt):
    assert pt.tree_map_cell() == [[2, 4, 6], [2, 4], [2, 4, 6, 8]]
    assert pt.tree_map_nary_cell() == [[2, 4, 6], [2, 4], [2, 4, 6, 8]]


def _np_mlp_loss_and_grads(params, x, y):
    """The page's MLP (ReLU hidden layers, mean squared error) and its gradient by backpropagation, in float64."""
    P = [{k: np.asarray(v, np.float64) for k, v in layer.items()} for layer in params]
    acts, pre = [np.asarray(x, np.float64)], []
    for layer in P[:-1]:
        pre.append(acts[-1] @ layer["weights"] + layer["biases"])
        acts.append(np.maximum(pre[-1], 0))
    out = acts[-1] @ P[-1]["weights"] + P[-1]["biases"]
    r = out - y
    d = 2 * r / r.size
    grads = [None] * len(P)
    for i in reversed(range(len(P))):
        grads[i] = {"weights": acts[i].T @ d, "biases": d.sum(0)}
        if i:
            d = (d @ P[i]["weights"].T) * (pre[i - 1] > 0)
    return np.mean(r ** 2), grads


def test_mlp_params_and_sgd_update(pt):
    np.random.seed(0)
    params = pt.init_cell((1, 8, 8, 1))
    shapes = pt.shapes_cell(params)
    assert shapes == [{"biases": (8,), "weights": (1, 8)}, {"biases": (8,), "weights": (8, 8)},
                      {"biases": (1,), "weights": (8, 1)}]
    assert [list(s) for s in shapes] == [["biases", "weights"]] * 3  # tree.map rebuilds dicts in sorted key order
    rng = np.random.default_rng(2)
    x = rng.normal(size=(16, 1)).astype(np.float32)
    y = np.sin(x)
    want_loss, want = _np_mlp_loss_and_grads(params, x, y)
    np.testing.assert_allclose(float(pt.loss_fn(params, x, y)), want_loss, rtol=1e-5)
    grads = kiln.jit(kiln.grad(pt.loss_fn))(params, x, y)
    assert tree_util.tree_structure(grads) == tree_util.tree_structure(params)
    new = pt.update(params, x, y)
    assert tree_util.tree_structure(new) == tree_util.tree_structure(params)
    for g, gw, p, n in zip(grads, want, params, new):
        for k in ("weights", "biases"):
            _strong(g[k], np.float32, p[k].shape)
            _strong(n[k], np.float32, p[k].shape)
            np.testing.assert_allclose(_np(g[k]), gw[k], rtol=2e-5, atol=1e-6)
            np.testing.assert_allclose(_np(n[k]), p[k] - pt.LEARNING_RATE * gw[k], rtol=1e-6, atol=1e-7)


def test_tree_structure_of_an_object(pt):
    s, lines = _run(pt.tree_structure_cell)
    assert lines == ["PyTreeDef(*)"] and s.num_leaves == 1 and s.num_nodes == 1


def test_key_paths(pt):
    flattened, lines = _run(pt.key_path_values_cell)
    assert lines == ["Value of tree[0]: 1", "Value of tree[1]['k1']: 2", "Value of tree[1]['k2'][0]: 3",
                     "Value of tree[1]['k2'][1]: 4", "Value of tree[2].name: foo"]
    paths, lines = _run(pt.key_paths_cell)
    assert lines == ["Key path of tree[0]: (SequenceKey(idx=0),)",
                     "Key path of tree[1]['k1']: (SequenceKey(idx=1), DictKey(key='k1'))",
                     "Key path of tree[1]['k2'][0]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=0))",
                     "Key path of tree[1]['k2'][1]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=1))",
                     "Key path of tree[2].name: (SequenceKey(idx=2), GetAttrKey(name='name'))"]
    S, D, G = tree_util.SequenceKey, tree_util.DictKey, tree_util.GetAttrKey
    assert paths[4] == (S(2), G("name")) and paths[2] == (S(1), D("k2"), S(0))
    assert [type(k) for k in paths[1]] == [S, D] and paths[1][1].key == "k1" and paths[4][1].name == "name"
    assert [v for _, v in flattened] == [1, 2, 3, 4, "foo"]


def test_shapes_are_nodes_not_leaves(pt):
    res = pt.nodes_for_leaves_cell()
    assert isinstance(res, list) and [type(t) for t in res] == [tuple, tuple]
    assert [[a.shape for a in t] for t in res] == [[(2,), (3,)], [(3,), (4,)]]  # ones(2), ones(3), not ones((2, 3))
    for t in res:
        for a in t:
            _strong(a, np.float32, a.shape)
            np.testing.assert_array_equal(_np(a), np.ones(a.shape))


def test_none_is_a_node(pt):
    assert pt.none_leaves_cell() == []
    assert pt.none_is_leaf_cell() == [None, None, None]


def test_unsortable_dict_keys(pt):
    with pytest.raises(ValueError) as e:  # JAX's class
        pt.unsortable_keys_cell()
    msg = str(e.value)
    assert "[1, 'y']" in msg and "sort" in msg  # what and where: the keys that cannot be ordered
    assert "OrderedDict" in msg  # how: the page's way out
    # which works: an OrderedDict flattens in insertion order
    out = pt.jax.tree.map(lambda x: x + 1, __import__("collections").OrderedDict([(1, 7), ("y", 42)]))
    assert list(out.items()) == [(1, 8), ("y", 43)]


def test_transposes(pt):
    assert pt.tree_transpose_cell() == {"obs": [3, 4], "t": [1, 2]}
    res = pt.jax_tree_transpose_cell()
    assert res == {"obs": [3, 4], "t": [1, 2]} and list(res) == ["obs", "t"]


# ==================== custom_pytrees.md =============================================================================

@pytest.fixture(scope="module")
def cp():
    return load("docs_custom_pytrees")


def test_unregistered_class_is_a_leaf(cp):
    leaves = cp.special_leaves_cell()
    assert len(leaves) == 2 and all(type(v) is cp.Special for v in leaves)
    assert [(v.x, v.y) for v in leaves] == [(0, 1), (2, 4)]
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Special' and 'int'"):
        cp.special_tree_map_cell()


def test_registered_classes(cp):
    res = cp.registered_tree_map_cell()
    assert repr(res) == "[RegisteredSpecial(x=1, y=2), RegisteredSpecial(x=3, y=5)]"
    assert all(type(r) is cp.RegisteredSpecial for r in res)
    _, lines = _run(cp.show_example_methods_cell)
    assert lines == ["structured=RegisteredSpecial2(x=1.0, y=2.0)", "  flat=(1.0, 2.0)", "  tree=None",
                     "  unflattened=RegisteredSpecial2(x=1.0, y=2.0)"]
    # the decorated class is a pytree node too
    out = cp.jax.tree.map(lambda v: v * 10, cp.RegisteredSpecial2(1, 2))
    assert type(out) is cp.RegisteredSpecial2 and (out.x, out.y) == (10, 20)
    assert str(tree_util.tree_structure(cp.RegisteredSpecial2(1, 2))).startswith("PyTreeDef(CustomNode(")


def test_namedtuple_and_dataclass_nodes(cp):
    assert cp.namedtuple_leaves_cell() == ["Alice", 1, 2, 3, "Bob", 4, 5, 6]  # the name is a leaf
    leaves = cp.dataclass_leaves_cell()  # the name is metadata
    assert len(leaves) == 6 and leaves[:2] == [5.3, 1.2] and leaves[4:] == [-1.0, 0.0]
    _strong(leaves[2], np.float32, (4,))
    assert isinstance(leaves[3], np.ndarray) and leaves[3].tolist() == [3, 4]
    a = cp.MyDataclassContainer("x", 1, 2, 3)
    assert tree_util.tree_structure(a) != tree_util.tree_structure(cp.MyDataclassContainer("y", 1, 2, 3))
    y = cp.jit_dataclass_cell()
    _weak(y, np.int32)
    assert int(y) == 3


def test_jit_of_a_namedtuple_with_a_string_raises(cp):
    with pytest.raises(TypeError) as e:  # JAX's class (kiln's JitError is a TypeError)
        cp.jit_namedtuple_cell()
    msg = str(e.value)
    assert "str" in msg and "'moc'" in msg  # what
    assert "x.name" in msg  # where: the path of the leaf
    assert "static_argnames" in msg  # how


def test_vmap_of_a_validating_tree(cp):
    # the page says this raises (JAX once unflattened with object() leaves); JAX 0.10.2 and kiln map it
    res = cp.vmap_mytree_cell()
    assert type(res) is type(cp.tree)
    _strong(res.a, np.float32, (5,))
    np.testing.assert_array_equal(_np(res.a), np.arange(5.0))


def test_jacobian_of_a_validating_tree_raises(cp):
    with pytest.raises(TypeError) as e:
        cp.jacobian_mytree_cell()
    # as the page says: a MyTree reaches MyTree.__init__, whose jnp.asarray cannot take it (JAX 0.10.2 raises a
    # ValueError there: its input check's tree_map unflattens MyTree(None) first)
    assert any(entry.name == "__init__" and "docs_custom_pytrees" in str(entry.path) for entry in e.traceback)
    msg = str(e.value)
    assert "kiln.numpy.array" in msg and "MyTree" in msg


def test_potential_solutions(cp):
    T1 = cp.solution_1_cell()
    cp.register_pytree_node(T1, lambda tree: ((tree.a,), None), lambda _, args: T1(*args))

    class T2(type(cp.tree)):  # the page's validating MyTree, unflattened without __init__ (solution 2)
        pass

    cp.register_pytree_node(T2, lambda tree: ((tree.a,), None), cp.solution_2_cell(T2))
    for T in (T1, T2):
        t = T(jnp.arange(3.0))
        v = kiln.vmap(lambda x: x)(t)
        assert type(v) is T
        np.testing.assert_array_equal(_np(v.a), np.arange(3.0))
        J = kiln.jacobian(lambda x: x)(t)  # a tree of trees
        assert type(J) is T and type(J.a) is T
        _strong(J.a.a, np.float32, (3, 3))
        np.testing.assert_array_equal(_np(J.a.a), np.eye(3))
        J = kiln.jacobian(lambda x: jnp.sum(x.a ** 2))(t)
        assert type(J) is T
        np.testing.assert_array_equal(_np(J.a), 2 * np.arange(3.0))


def test_flatten_and_unflatten(cp):
    (flat, tree, tflat, tstruct), lines = _run(cp.flatten_unflatten_cell)
    assert flat == [1.0, 2.0, 3.0] and tflat == [2.0, 4.0, 6.0] and tstruct == [2.0, (4.0, 6.0)]
    assert tree.num_leaves == 3
    assert lines == ["value_flat=[1.0, 2.0, 3.0]", "value_tree=PyTreeDef([*, (*, *)])",
                     "transformed_flat=[2.0, 4.0, 6.0]", "transformed_structured=[2.0, (4.0, 6.0)]"]


def test_show_examples(cp):
    _, lines = _run(cp.show_examples_cell)
    assert lines == [
        "structured=(1.0, [2.0, 3.0])", "  flat=[1.0, 2.0, 3.0]", "  tree=PyTreeDef((*, [*, *]))",
        "  unflattened=(1.0, [2.0, 3.0])",
        "structured=(1.0, {'b': 2.0, 'a': 3.0})", "  flat=[1.0, 3.0, 2.0]", "  tree=PyTreeDef((*, {'a': *, 'b': *}))",
        "  unflattened=(1.0, {'a': 3.0, 'b': 2.0})",
        "structured=1.0", "  flat=[1.0]", "  tree=PyTreeDef(*)", "  unflattened=1.0",
        "structured=None", "  flat=[]", "  tree=PyTreeDef(None)", "  unflattened=None",
        "structured=Array([0., 0.], dtype=float32)", "  flat=[Array([0., 0.], dtype=float32)]", "  tree=PyTreeDef(*)",
        "  unflattened=Array([0., 0.], dtype=float32)",
        "structured=Point(x=1.0, y=2.0)", "  flat=[1.0, 2.0]",
        "  tree=PyTreeDef(CustomNode(namedtuple[Point], [*, *]))",
        "  unflattened=Point(x=1.0, y=2.0)"]


# ==================== control-flow.md (what test_common_gotchas.py does not check) ==================================

@pytest.fixture(scope="module")
def cf():
    return load("docs_control_flow")


def test_control_flow_printed_values_and_types(cf):
    out, lines = _run(cf.unrolled_loop_cell)
    _weak(out, np.int32)
    assert lines == ["24"]
    out, lines = _run(cf.shape_loop_cell)
    _strong(out, np.float32)
    assert lines == ["6.0"]
    (_, out), lines = _run(cf.static_if_cell)
    _weak(out, np.float32)
    assert lines == ["12.0"]
    _strong(cf.static_loop_cell(), np.float32)
    out, lines = _run(cf.example_fun_cell)
    _strong(out, np.float32, (5,))
    assert lines == ["[4. 4. 4. 4. 4.]"]
    (a, b), lines = _run(cf.good_example_jit_cell)
    assert a.shape == (10,) and b.shape == (5,) and lines == ["[4. 4. 4. 4. 4. 4. 4. 4. 4. 4.]", "[4. 4. 4. 4. 4.]"]
    out, lines = _run(cf.print_in_jit_cell)
    _weak(out, np.int32)
    assert int(out) == 4 and lines == ["JitTracer(~int32[])"] * 2
    (a, b), lines = _run(cf.grad_cell)
    _weak(a, np.float32)
    _weak(b, np.float32)
    assert lines == ["12.0", "-4.0"]


def test_structured_primitives_types(cf):
    a, b = cf.cond_cell()
    _strong(a, np.float32, (1,))
    _strong(b, np.float32, (1,))
    _weak(cf.while_loop_cell(), np.int32)  # the page's comments (array(10, dtype=int32)) predate weak types
    _weak(cf.fori_loop_cell(), np.int32)


def test_logical_operators_printed_and_typed(cf):
    (a, b), lines = _run(cf.positive_even_scalar_cell)
    assert a is True and lines == ["True", "True"]
    _strong(b, np.bool_)  # JAX's promotion never makes a bool weak: logical_and of two weak bools is strong
    (x, out), lines = _run(cf.positive_even_array_cell)
    _strong(out, np.bool_, (3,))
    assert lines == ["[False  True False]"]
    with pytest.raises(ValueError, match="ambiguous"):
        cf.python_positive_even_array_cell(x)
    with pytest.raises(kiln.errors.TracerBoolConversionError):
        cf.traced_and_cell()
    with pytest.raises(TypeError, match="length"):
        cf.bad_example_jit_cell()
