"""``kiln.experimental.xla_metadata.set_xla_metadata``: XLA metadata as ``mhlo.frontend_attributes`` on exactly the
operations traced inside the context (or producing a tagged value), in the StableHLO and in XLA's HLO, through
jit's caches and the transformations, as JAX 0.10.2 does (its tests/xla_metadata_test.py)."""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from kiln.frontend.core.config import config

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.experimental.xla_metadata import must_fuse_call, set_xla_metadata, xla_metadata_call, xla_metadata_call2

X = np.array([0.5, -1.25, 2.0], np.float32)


def _ops(text: str, name: str) -> list[str]:
    """The lines of the StableHLO ``text`` that define a ``stablehlo.<name>`` operation."""
    return [line for line in text.splitlines() if re.search(rf"= stablehlo\.{name}\b", line)]


def _tags(line: str) -> str | None:
    found = re.search(r"mhlo\.frontend_attributes = (\{[^}]*\})", line)
    return found.group(1) if found else None


def test_context_tags_the_operations_traced_inside_it():
    def f(x):
        y = knp.sin(x)
        with set_xla_metadata(a="b", n=10, flag=True, r=0.5):
            z = knp.cos(y) * 3.0
        return z + 1.0

    text = kiln.jit(f).lower(X).as_text()
    tags = '{a = "b", flag = "true", n = "10", r = "0.5"}'  # values as JAX writes them: str(), bools lower-case
    assert [_tags(line) for line in _ops(text, "cosine") + _ops(text, "multiply")] == [tags, tags]
    assert [_tags(line) for line in _ops(text, "sine") + _ops(text, "add")] == [None, None]
    assert not any(_tags(line) for line in _ops(text, "constant"))  # (a literal's constant, as in JAX)
    np.testing.assert_allclose(kiln.jit(f)(X), np.cos(np.sin(X)) * 3 + 1, rtol=1e-6)


def test_xla_hlo_and_the_compiled_program_carry_them():
    def f(x):
        with set_xla_metadata(_xla_log=True):
            return knp.sin(x) * knp.cos(x)

    lowered = kiln.jit(f).lower(X)
    hlo = [line for line in lowered.as_text("hlo").splitlines() if "frontend_attributes" in line]
    assert len(hlo) == 3 and all('frontend_attributes={_xla_log="true"}' in line for line in hlo)
    assert re.search(r"= f32\[3\]\{0\} multiply\(.*frontend_attributes=\{_xla_log=\"true\"\}", lowered.as_text("hlo"))
    compiled = lowered.compile().as_text()
    assert re.search(r"cosine\(.*frontend_attributes=\{_xla_log=\"true\"\}", compiled)
    np.testing.assert_allclose(lowered.compile()(X), np.sin(X) * np.cos(X), rtol=1e-6)


def test_value_tagging_tags_the_operation_producing_the_value():
    # JAX's docs example: only the multiply is tagged.
    hlo = kiln.jit(lambda x: set_xla_metadata(knp.sin(x) * knp.cos(x), breakpoint=True)).lower(1.0).as_text("hlo")
    tagged = [line for line in hlo.splitlines() if "frontend_attributes" in line]
    assert len(tagged) == 1 and re.search(r"multiply\(.*frontend_attributes=\{breakpoint=\"true\"\}", tagged[0])

    def g(x):
        with set_xla_metadata(a="ctx"):
            y = knp.sin(x)
        pair = set_xla_metadata((y, knp.cos(x)), a="val", b="v2")  # a pytree; the context's key wins, as in JAX
        return pair[0] + pair[1], set_xla_metadata(x, a="input")  # an input has no operation to tag

    text = kiln.jit(g).lower(X).as_text()
    assert _tags(_ops(text, "sine")[0]) == '{a = "ctx", b = "v2"}'
    assert _tags(_ops(text, "cosine")[0]) == '{a = "val", b = "v2"}'
    assert _tags(_ops(text, "add")[0]) is None and '"input"' not in text
    out, same = kiln.jit(g)(X)
    np.testing.assert_allclose(out, np.sin(X) + np.cos(X), rtol=1e-6)
    np.testing.assert_array_equal(same, X)
    # eagerly: the values themselves (a Python scalar becomes an array, as JAX's)
    x = kiln.numpy.asarray(X)
    assert set_xla_metadata(x, a="b") is x and set_xla_metadata(x) is x
    assert float(set_xla_metadata(2.5, a="b")) == 2.5
    assert "frontend_attributes" not in kiln.jit(lambda v: set_xla_metadata(v * 2, a=None)).lower(X).as_text()


def test_contexts_nest_override_and_unset():
    def f(x):
        with set_xla_metadata(k1="v1", a="outer"):
            y = knp.sin(x)
            with set_xla_metadata(k2="v2", a="inner"):
                y = knp.cos(y)
                with set_xla_metadata(a=None, k1=None):
                    y = knp.exp(y)
            return knp.tanh(y)

    text = kiln.jit(f).lower(X).as_text()
    assert _tags(_ops(text, "sine")[0]) == '{a = "outer", k1 = "v1"}'
    assert _tags(_ops(text, "cosine")[0]) == '{a = "inner", k1 = "v1", k2 = "v2"}'
    assert _tags(_ops(text, "exponential")[0]) == '{k2 = "v2"}'
    assert _tags(_ops(text, "tanh")[0]) == '{a = "outer", k1 = "v1"}'
    # a context around jit and one inside it merge; the inner value wins (JAX's test_f_attributes_overwrite)
    with set_xla_metadata(key1="val1", a="b"):
        text = kiln.jit(lambda x: set_xla_metadata(a="c")(knp.sin)(x)).lower(X).as_text()
    assert _tags(_ops(text, "sine")[0]) == '{a = "c", key1 = "val1"}'


def test_decorator_on_a_jitted_and_on_a_plain_function():
    @set_xla_metadata(a="b")
    @kiln.jit
    def f(x, y):
        with set_xla_metadata(c="d"):
            return x + y

    assert f.__name__ == "f"
    assert 'mhlo.frontend_attributes = {a = "b", c = "d"}' in f.lower(1.0, 2.0).as_text()
    assert float(f(1.0, 2.0)) == 3.0

    @set_xla_metadata(tag="plain")
    def g(x):
        return knp.sin(x)

    assert _tags(_ops(kiln.jit(g).lower(X).as_text(), "sine")[0]) == '{tag = "plain"}'


def test_no_metadata_no_attribute_and_the_same_module():
    f = kiln.jit(lambda x: knp.sin(x) * 2.0)
    before = f.lower(X).as_text()
    with set_xla_metadata(a="b"):
        assert "frontend_attributes" in f.lower(X).as_text()
    after = f.lower(X).as_text()
    assert after == before and "frontend_attributes" not in after
    assert "frontend_attributes" not in kiln.jit(lambda x: knp.cos(x)).lower(X).as_text("hlo")
    assert 'loc("jit(<lambda>)/sin"' in f.lower(X).as_text(debug_info=True)


def test_jit_caches_are_keyed_on_the_metadata():
    traces = []

    @kiln.jit
    def f(x):
        traces.append(1)
        return knp.sin(x)

    x = kiln.numpy.asarray(X)
    for _ in range(3):  # the direct launch and jaxlib's C++ dispatch record the signature
        f(x)
    with set_xla_metadata(a="1"):
        assert config._metadata_holds == 1
        assert 'a = "1"' in f.lower(x).as_text()
        np.testing.assert_allclose(f(x), np.sin(X), rtol=1e-6)
        f(x)
    assert len(traces) == 2  # once without, once with the metadata (lower and calls share it)
    f(x)
    with set_xla_metadata(a="2"):
        f(x)
    with set_xla_metadata(a="1"):
        f(x)
    assert len(traces) == 3 and config._metadata_holds == 0 and not config._jit_python_dispatch
    assert "frontend_attributes" not in f.lower(x).as_text()


def test_grad_tags_the_backward_pass_of_a_context_only():
    def f(x):
        with set_xla_metadata(a="b"):
            return knp.sin(x) * x

    text = kiln.jit(kiln.grad(f)).lower(1.0).as_text()
    ops = [line for line in text.splitlines() if "= stablehlo." in line]
    assert len(ops) == 4 and all(_tags(line) == '{a = "b"}' for line in ops)  # sin, cos, mul, add of cotangents
    assert float(kiln.jit(kiln.grad(f))(1.0)) == pytest.approx(np.cos(1.0) + np.sin(1.0), rel=1e-6)

    @kiln.jit
    def tagged_inside(x):  # JAX's test_grad_outside_ctx: a jitted function's tags survive grad around it
        with set_xla_metadata(a="b"):
            return x ** 3 + knp.sin(x)
    text = kiln.jit(kiln.grad(tagged_inside)).lower(1.0).as_text()
    assert _tags(_ops(text, "cosine")[0]) == '{a = "b"}'

    def g(x):  # a tagged value: the forward operation only (as JAX); its tangent under jvp too
        return set_xla_metadata(knp.sin(x), a="v") * x

    text = kiln.jit(kiln.grad(g)).lower(1.0).as_text()
    assert [_tags(line) for line in _ops(text, "sine") + _ops(text, "cosine")] == ['{a = "v"}', None]
    text = kiln.jit(lambda x, t: kiln.jvp(g, (x,), (t,))).lower(1.0, 1.0).as_text()
    assert sum('{a = "v"}' in line for line in text.splitlines()) == 2  # sin and the tangent's multiply


def test_vmap():
    text = kiln.jit(kiln.vmap(lambda x: set_xla_metadata(knp.sin(x) + 1.0, a="v"))).lower(X).as_text()
    assert _tags(_ops(text, "add")[0]) == '{a = "v"}' and _tags(_ops(text, "sine")[0]) is None

    @kiln.jit
    def f(d, x):
        with set_xla_metadata(a="b"):
            return d["a"] + d["b"] + x

    d = {"a": np.float32(0.0), "b": X}
    with set_xla_metadata(a="d", e="f"):  # the batched equations keep their own value for "a", as in JAX
        text = kiln.jit(kiln.vmap(f, in_axes=({"a": None, "b": 0}, None))).lower(d, 1.0).as_text()
    assert {_tags(line) for line in _ops(text, "add")} == {'{a = "b", e = "f"}'}
    np.testing.assert_allclose(kiln.vmap(f, in_axes=({"a": None, "b": 0}, None))(d, 1.0), X + 1)


def test_scan_and_cond_bodies():
    def body(c, x):
        with set_xla_metadata(a="s"):
            c = c + x
        return c * 2.0, c

    xs = np.arange(1, 4, dtype=np.float32)
    text = kiln.jit(lambda xs: lax.scan(body, 0.0, xs)).lower(xs).as_text()
    adds = [line for line in _ops(text, "add") if "f32" in line]
    assert [_tags(line) for line in adds] == ['{a = "s"}'] and _tags(_ops(text, "multiply")[0]) is None
    carry, ys = kiln.jit(lambda xs: lax.scan(body, 0.0, xs))(xs)
    assert float(carry) == 22.0 and ys.tolist() == [1.0, 4.0, 11.0]

    def around(xs):  # a context around the scan: its loop and the loop's bookkeeping too, as in JAX
        with set_xla_metadata(a="o"):
            return lax.scan(lambda c, x: (c + x, c), 0.0, xs)
    text = kiln.jit(around).lower(xs).as_text()
    assert re.search(r'stablehlo\.while\(.*attributes \{mhlo\.frontend_attributes = \{a = "o"\}\}', text)
    assert all(_tags(line) == '{a = "o"}' for line in _ops(text, "dynamic_slice") + _ops(text, "add"))
    assert not any(_tags(line) for line in text.splitlines() if "stablehlo.return" in line)

    def cos_untagged(x):
        with set_xla_metadata(a=None):
            return knp.cos(x)

    def f(x):  # JAX's test_cond_annotates_branches_and_none_unsets
        with set_xla_metadata(a="b"):
            return lax.cond(x < 0.0, knp.sin, cos_untagged, x)

    text = kiln.jit(f).lower(1.0).as_text()
    assert _tags(_ops(text, "sine")[0]) == '{a = "b"}' and _tags(_ops(text, "cosine")[0]) is None
    assert float(kiln.jit(f)(1.0)) == pytest.approx(np.cos(1.0))


def test_nested_jit_merges():
    @kiln.jit
    def f(x, y):
        with set_xla_metadata(a="b"):
            z = x * y

            @kiln.jit
            def g(z):
                with set_xla_metadata(c="d"):
                    return z ** 2 + 1
            return g(z)

    text = f.lower(1.0, 2.0).as_text()  # (g's call is inlined: its operations carry both)
    assert [_tags(line) for line in _ops(text, "multiply") + _ops(text, "add")] == [
        '{a = "b"}', '{a = "b", c = "d"}', '{a = "b", c = "d"}']
    assert float(f(1.0, 2.0)) == 5.0


def test_eager_use_and_threads():
    with set_xla_metadata(a="b"):
        np.testing.assert_allclose(knp.sin(X), np.sin(X), rtol=1e-6)
        np.testing.assert_allclose(kiln.grad(lambda x: knp.sum(knp.sin(x)))(X), np.cos(X), rtol=1e-6)
    texts = {}

    def worker(i):  # each thread its own metadata
        with set_xla_metadata(t=str(i)):
            texts[i] = kiln.jit(lambda v: knp.sin(v) + i).lower(X).as_text()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(f't = "{i}"' in texts[i] and f't = "{1 - i}"' not in texts[i] for i in range(3))
    assert config._metadata_holds == 0


def test_bad_values_raise():
    for bad, kind in (([1, 2], "list"), ({"k": 1}, "dict"), (kiln.numpy.ones(2), "Array")):
        with pytest.raises(TypeError, match=rf"the value of 'a' is a {kind} .*unhashable type: '{kind}'.*must be "
                                            "hashable") as info:
            set_xla_metadata(a=bad)
        assert isinstance(info.value, kiln.KilnError)
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        set_xla_metadata(X, a=[1])
    with pytest.raises(ValueError, match="a metadata key must be a non-empty string, got ''"):
        set_xla_metadata(**{"": 1})
    # what JAX takes: any hashable value, as its str(); keys XLA can read
    with set_xla_metadata(**{"a b": (1, 2), "q": 'x"y', "k": ""}):
        hlo = kiln.jit(knp.sin).lower(1.0).as_text("hlo")
    assert 'frontend_attributes={a b="(1, 2)",k="",q="x\\"y"}' in hlo


def test_a_users_lowering_rule_is_tagged_and_a_failing_one_leaves_the_lowering_sound():
    from kiln.extend import core as ext
    from kiln.extend.mlir.dialects import stablehlo as hlo
    from kiln.interpreters import mlir

    p = ext.Primitive("xla_metadata_test_fma")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, lambda ctx, x: [hlo.AddOp(hlo.MulOp(x, x), x).result])
    with set_xla_metadata(a="ext"):
        text = kiln.jit(lambda x: p.bind(x)).lower(X).as_text()
    assert [_tags(line) for line in _ops(text, "multiply") + _ops(text, "add")] == ['{a = "ext"}'] * 2

    q = ext.Primitive("xla_metadata_test_failing")
    q.def_abstract_eval(lambda x: x)

    def failing(ctx, x):
        hlo.MulOp(x, x)  # built, then the rule fails: the operation is moved out of the scratch block, untouched
        raise ValueError("the rule failed")
    mlir.register_lowering(q, failing)
    with set_xla_metadata(a="ext"), pytest.raises(ValueError, match="the rule failed"):
        kiln.jit(lambda x: q.bind(x) + 1).lower(X)
    assert config._metadata_holds == 0
    np.testing.assert_allclose(kiln.jit(lambda x: p.bind(x))(X), X * X + X, rtol=1e-6)


# ---- xla_metadata_call / xla_metadata_call2 / must_fuse_call ------------------------------------------------------
# (JAX 0.11's API, which JAX 0.10.2 lacks: the behaviour follows JAX's jax/_src/xla_metadata.py and its docs page
# docs/new_docs/201/controlling-xla.md)

def _calls(hlo: str) -> list[tuple[str, str | None]]:
    """(the called computation, its frontend attributes or None) of each ``call`` in XLA's HLO text."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"= (?:\([^)]*\)|\S+) call\([^)]*\), to_apply=(\S+?)(?:, frontend_attributes=(\{[^}]*\}))?$",
                        hlo, re.M)]


def _computation(hlo: str, name: str) -> list[str]:
    """The instructions (opcode names) of computation ``name`` in XLA's HLO text."""
    body = re.search(rf"^{re.escape(name)} [^\n]*\{{\n(.*?)\n\}}", hlo, re.M | re.S).group(1)
    return [re.search(r"= (?:\([^)]*\)|\S+) ([\w-]+)\(", line).group(1) for line in body.splitlines()]


def test_metadata_call_stages_the_function_out_as_a_tagged_call():
    @xla_metadata_call(tag="my_block", on=True, n=3, r=0.5)
    def block(x):
        y = knp.sin(x)
        return y * knp.cos(x)

    hlo = kiln.jit(lambda x: block(x) + 1.0).lower(X).as_text("hlo")
    (callee, tags), = _calls(hlo)
    assert callee.startswith("xla_metadata_call.") and tags == '{n="3",on="true",r="0.5",tag="my_block"}'
    assert _computation(hlo, callee) == ["parameter", "sine", "cosine", "multiply"]
    assert hlo.count("frontend_attributes") == 1  # the call only: its operations get them when XLA inlines it
    np.testing.assert_allclose(kiln.jit(lambda x: block(x) + 1.0)(X), np.sin(X) * np.cos(X) + 1, rtol=1e-6)
    np.testing.assert_allclose(block(X), np.sin(X) * np.cos(X), rtol=1e-6)  # eagerly: a program of its own
    # XLA inlines the call and keeps its attributes: the optimized program's fusion of the block carries them (which
    # of the inlined operations keep them is XLA's business: this jaxlib's passes keep them on the root)
    compiled = kiln.jit(block).lower(X).compile().as_text()
    assert " call(" not in compiled
    assert re.search(r"ROOT %\S+ = f32\[3\]\{0\} fusion\(.*frontend_attributes=\{[^}]*tag=\"my_block\"", compiled)


def test_metadata_call_takes_pytrees_keywords_and_is_traced_once_per_signature():
    traces = []

    @xla_metadata_call2({"t": "x"})
    def f(d, scale=2.0):
        traces.append(1)
        return {"s": d["a"] * scale, "p": (d["b"] + 1, d["a"].sum())}

    d = {"a": X, "b": np.arange(2, dtype=np.int32)}
    out = kiln.jit(lambda d: f(d, scale=3.0))(d)
    np.testing.assert_allclose(out["s"], X * 3, rtol=1e-6)
    np.testing.assert_array_equal(out["p"][0], [1, 2])
    assert out["p"][0].dtype == np.int32 and float(out["p"][1]) == pytest.approx(X.sum())
    # a decorator with the dict in f's place, and two calls in one program get functions of their own names
    g = xla_metadata_call2({"k": "v"})(knp.cos)
    hlo = kiln.jit(lambda x: g(x) + g(x * 2)).lower(X).as_text("hlo")
    assert [c.split(".")[0] for c, _ in _calls(hlo)] == ["xla_metadata_call", "xla_metadata_call_0"]
    assert {t for _, t in _calls(hlo)} == {'{k="v"}'}


def test_grad_tags_the_forward_and_backward_computations_as_ad_metadata_says():
    @xla_metadata_call(tag="my_block")
    def block(x):
        return knp.sin(x)

    hlo = kiln.jit(kiln.grad(block)).lower(1.0).as_text("hlo")
    (fwd, fwd_tags), (bwd, bwd_tags) = _calls(hlo)
    assert fwd_tags == bwd_tags == '{tag="my_block"}'
    assert "cosine" in _computation(hlo, fwd) and _computation(hlo, bwd) == ["parameter", "parameter", "multiply"]
    assert float(kiln.jit(kiln.grad(block))(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
    for ad, want in (("same", '{tag="x"}'), ("drop", None), ({"tag": "y", "n": 1}, '{n="1",tag="y"}')):
        f = xla_metadata_call2(knp.sin, {"tag": "x"}, ad_metadata=ad)
        hlo = kiln.jit(kiln.grad(f)).lower(1.0).as_text("hlo")
        assert [t for _, t in _calls(hlo)] == ['{tag="x"}', want], ad
        assert float(kiln.grad(f)(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
    # jvp: the primal and tangent computations are one call, with the forward metadata whatever ad_metadata says
    f = xla_metadata_call2(knp.sin, {"tag": "x"}, ad_metadata="drop")
    hlo = kiln.jit(lambda x, t: kiln.jvp(f, (x,), (t,))).lower(1.0, 1.0).as_text("hlo")
    (callee, tags), = _calls(hlo)
    assert tags == '{tag="x"}' and {"sine", "cosine", "multiply"} <= set(_computation(hlo, callee))
    y, t = kiln.jvp(f, (np.float32(0.5),), (np.float32(2.0),))
    assert (float(y), float(t)) == pytest.approx((np.sin(0.5), 2 * np.cos(0.5)), rel=1e-6)


def test_vmap_and_control_flow_keep_the_call():
    block = xla_metadata_call(tag="b")(lambda x: knp.sin(x) * 2.0)
    hlo = kiln.jit(kiln.vmap(block)).lower(np.ones((4, 3), np.float32)).as_text("hlo")
    (callee, tags), = _calls(hlo)
    assert tags == '{tag="b"}' and "f32[4,3]" in hlo.split(callee)[1].splitlines()[1]  # the batched body
    np.testing.assert_allclose(kiln.vmap(block)(np.stack([X, 2 * X])), np.sin(np.stack([X, 2 * X])) * 2, rtol=1e-6)
    scanned = kiln.jit(lambda x: lax.scan(lambda c, _: (block(c), None), x, None, length=3)[0])
    want = X
    for _ in range(3):
        want = np.sin(want) * 2
    np.testing.assert_allclose(scanned(X), want, rtol=1e-5)
    assert [t for _, t in _calls(scanned.lower(X).as_text("hlo"))] == ['{tag="b"}']


def test_checkify_checks_inside_the_call_and_keeps_it_tagged():
    from kiln.experimental import checkify
    block = xla_metadata_call(tag="c")(lambda x: knp.log(x) * 2.0)
    checked = kiln.jit(checkify.checkify(block, errors=checkify.float_checks))
    err, out = checked(np.float32(-1.0))
    assert "nan generated by primitive: log" in err.get() and np.isnan(out)
    err, out = checked(np.float32(1.0))
    assert err.get() is None and float(out) == 0.0
    assert [t for _, t in _calls(checked.lower(np.float32(1.0)).as_text("hlo"))] == ['{tag="c"}']


def test_jet_computes_the_series_inside_the_call_and_keeps_it_tagged():
    from kiln.experimental.jet import jet
    plain = lambda x: knp.sin(x) * x  # noqa: E731
    block = xla_metadata_call(tag="j")(plain)
    # (x0, x1, x2) = (2, 1, 0.5): the series of plain's Taylor expansion, written out (jet's derivative convention)
    x0, x1, x2 = 2.0, 1.0, 0.5
    d1 = np.cos(x0) * x0 + np.sin(x0)
    d2 = 2 * np.cos(x0) - np.sin(x0) * x0
    primal, series = jet(block, (x0,), ((x1, x2),))
    np.testing.assert_allclose(primal, np.sin(x0) * x0, rtol=1e-6)
    np.testing.assert_allclose(series, [d1 * x1, d1 * x2 + d2 * x1 ** 2], rtol=1e-5)
    hlo = kiln.jit(lambda x: jet(block, (x,), ((x1, x2),))).lower(x0).as_text("hlo")
    assert {t for _, t in _calls(hlo)} == {'{tag="j"}'}


def test_must_fuse_call_tags_the_call_must_fuse():
    f = must_fuse_call("1")(lambda x: knp.square(x).sum())
    assert [t for _, t in _calls(kiln.jit(f).lower(X).as_text("hlo"))] == ['{MUST_FUSE="1"}']
    assert float(kiln.jit(f)(X)) == pytest.approx(float((X.astype(np.float64) ** 2).sum()), rel=1e-6)


def test_metadata_call_errors_say_what_to_pass():
    with pytest.raises(TypeError, match=r"metadata values must be str, bool, int, or float, got list \(\[1\]\) for "
                                        r"key 'a': pass it as a string"):
        xla_metadata_call(a=[1])
    with pytest.raises(TypeError, match=r"ad_metadata must be 'same', 'drop', or a dict of metadata, got 'keep'"):
        xla_metadata_call2(knp.sin, {"a": 1}, ad_metadata="keep")
    with pytest.raises(TypeError, match=r"xla_metadata_call2: metadata must be a dict, got \[\('a', 1\)\]"):
        xla_metadata_call2(knp.sin, [("a", 1)])
    with pytest.raises(TypeError, match=r"xla_metadata_call2: expected a callable to wrap, got 3"):
        xla_metadata_call2(3, {"a": 1})
    with pytest.raises(TypeError, match=r"expected a callable to wrap, got 'tag'; the metadata goes in keyword "
                                        r"arguments: xla_metadata_call\(tag='x'\)\(f\)"):
        xla_metadata_call("tag")
    with pytest.raises(ValueError, match="a metadata key must be a non-empty string, got ''"):
        xla_metadata_call(**{"": 1})
    ordered = xla_metadata_call(t=1)(lambda x: kiln.debug.print("{}", x, ordered=True) or x * 2)
    with pytest.raises(NotImplementedError, match=r"xla_metadata_call of a function with ordered effects .* call "
                                                  r"the ordered callback outside the tagged function"):
        kiln.jit(ordered).lower(1.0)


def test_each_context_gets_its_program_without_the_cpp_dispatch(run_py):
    # Regression: without jaxlib's C++ dispatch (jax imported before kiln, or KILN_CPP_DISPATCH=0), a call made
    # under one set_xla_metadata context left a direct launch that a call under another context then reused: no
    # retrace, and the program tagged with the first context's metadata.
    out = run_py("""
        import kiln, kiln.numpy as knp
        from kiln.experimental.xla_metadata import set_xla_metadata
        from kiln.runtime import fastpath
        assert not fastpath.available()
        traces = []

        @kiln.jit
        def f(x):
            traces.append(1)
            return knp.sin(x) * 2.0

        x = 1.0  # (a Python scalar: its direct launch was the one reused)
        f(x)
        counts = []
        for value in ("a", "b", "a", None):
            if value is None:
                f(x)
            else:
                with set_xla_metadata(group=value):
                    f(x)
            counts.append(len(traces))
        f(x)
        assert counts == [2, 3, 3, 3] and len(traces) == 3, counts
        with set_xla_metadata(group="b"):  # (the program of that context)
            assert 'group = "b"' in f.lower(x).as_text()
        print("ok")
    """, env={"KILN_CPP_DISPATCH": "0"})
    assert out.stdout.strip().endswith("ok")
