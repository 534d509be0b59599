"""``kiln.export``: export / serialize / deserialize / call, JAX's serialized format, error paths.

NumPy is the oracle; JAX (where its interpreter and ``flatbuffers`` are installed) only checks that the
bytes are exchangeable in both directions.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.export import ExportError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDS = kiln.ShapeDtypeStruct
TABLE = np.array([1.0, -2.0, 0.5], np.float32)  # a captured constant: written into the module


def _model(params, x, *, scale):
    h = knp.tanh(x @ params["w"] + params["b"]) * scale
    return {"out": h + TABLE, "stats": (h.sum(), h.shape[0])}


def _cumsum_scan(xs):
    def step(c, x):
        c = c + x
        return c, c * 2
    return kiln.lax.scan(step, knp.zeros_like(xs[0]), xs)


def _np_model(params, x, scale):
    h = np.tanh(x @ params["w"] + params["b"]) * scale
    return h + TABLE, h.sum()


def _model_specs():
    return ({"w": SDS((4, 3), knp.float32), "b": SDS((3,), knp.float32)}, SDS((2, 4), knp.float32))


def _model_values(seed=0):
    r = np.random.default_rng(seed)
    return ({"w": r.standard_normal((4, 3)).astype(np.float32), "b": r.standard_normal(3).astype(np.float32)},
            r.standard_normal((2, 4)).astype(np.float32))


def test_exported_attributes():
    def f(x, unused, *, y):
        return [x * 2, {"s": y.sum()}], None
    exp = kiln.export.export(kiln.jit(f))(SDS((3,), knp.float32), SDS((5,), knp.int32), y=SDS((2, 2), knp.int8))
    assert exp.fun_name == "f"
    assert [(a.shape, a.dtype) for a in exp.in_avals] == [((3,), np.float32), ((5,), np.int32), ((2, 2), np.int8)]
    assert [(a.shape, a.dtype) for a in exp.out_avals] == [((3,), np.float32), ((), np.int32)]  # sum promotes
    assert exp.in_tree == kiln.tree_util.tree_structure(((1, 2), {"y": 3}))
    assert exp.out_tree == kiln.tree_util.tree_structure(([1, {"s": 2}], None))
    assert exp.module_kept_var_idx == (0, 2)  # the unused argument is not a parameter of the module
    assert exp.platforms == (kiln.default_backend(),) and exp.nr_devices == 1
    assert exp.in_shardings_hlo == (None,) * 3 and exp.out_shardings_hlo == (None,) * 2
    assert exp.in_shardings_jax(None) == (None,) * 3 and exp.out_shardings_jax(None) == (None,) * 2
    assert exp.calling_convention_version == kiln.export.maximum_supported_calling_convention_version
    assert exp.mlir_module_serialized.startswith(b"ML\xefR")  # MLIR bytecode (a portable artifact)
    text = exp.mlir_module()
    assert "func.func public @main(" in text and "tensor<5xi32>" not in text
    assert not exp.has_vjp() and exp.uses_global_constants is False
    back = kiln.export.deserialize(exp.serialize())
    for name in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "platforms", "nr_devices",
                 "module_kept_var_idx", "calling_convention_version", "mlir_module_serialized"):
        assert getattr(back, name) == getattr(exp, name), name


def test_call_pytrees_constants_and_static_arguments_against_numpy():
    exp = kiln.export.export(kiln.jit(_model, static_argnames="scale"))(*_model_specs(), scale=3.0)
    assert len(exp.in_avals) == 3  # the static argument is baked in
    for seed in range(2):
        params, x = _model_values(seed)
        want_out, want_sum = _np_model(params, x, 3.0)
        for e in (exp, kiln.export.deserialize(exp.serialize())):
            got = e.call(params, x)
            np.testing.assert_allclose(np.asarray(got["out"]), want_out, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(float(got["stats"][0]), want_sum, rtol=1e-5, atol=1e-5)
            assert int(got["stats"][1]) == 2 and isinstance(got["stats"][1], kiln.Array)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.complex64, np.float16,
                                   ml_dtypes.bfloat16])
def test_dtypes_round_trip(dtype):
    def f(a, b):
        return a == b, knp.where(a == b, a, b)
    a = np.array([[1, 0, 1], [0, 1, 1]]).astype(dtype)
    b = np.array([[1, 1, 0], [0, 1, 0]]).astype(dtype)
    exp = kiln.export.deserialize(kiln.export.export(kiln.jit(f))(a, b).serialize())
    assert exp.in_avals[0].dtype == np.dtype(dtype)
    eq, w = exp.call(a, b)
    np.testing.assert_array_equal(np.asarray(eq), a == b)
    np.testing.assert_array_equal(np.asarray(w), np.where(a == b, a, b))
    assert np.asarray(w).dtype == np.dtype(dtype)


def test_deserialize_and_call_in_a_fresh_process(tmp_path, run_py):
    params, x = _model_values(1)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    blobs = {
        "model": kiln.export.export(kiln.jit(_model, static_argnames="scale"))(*_model_specs(), scale=0.5),
        "scan": kiln.export.export(kiln.jit(_cumsum_scan))(SDS((4, 3), knp.float32)),
    }
    for name, exp in blobs.items():
        (tmp_path / f"{name}.bin").write_bytes(exp.serialize())
    np.savez(tmp_path / "in.npz", w=params["w"], b=params["b"], x=x, xs=xs)
    proc = run_py(f"""
        import json, numpy as np, kiln
        d = np.load({str(tmp_path / 'in.npz')!r})
        model = kiln.export.deserialize(open({str(tmp_path / 'model.bin')!r}, 'rb').read())
        scan = kiln.export.deserialize(open({str(tmp_path / 'scan.bin')!r}, 'rb').read())
        out = model.call({{'w': d['w'], 'b': d['b']}}, d['x'])
        carry, ys = scan.call(d['xs'])
        print(json.dumps({{"out": np.asarray(out['out']).tolist(), "sum": float(out['stats'][0]),
                          "n": int(out['stats'][1]), "carry": np.asarray(carry).tolist(),
                          "ys": np.asarray(ys).tolist(), "name": scan.fun_name}}))
    """)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want_out, want_sum = _np_model(params, x, 0.5)
    np.testing.assert_allclose(got["out"], want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["sum"], want_sum, rtol=1e-5, atol=1e-5)
    assert got["n"] == 2 and got["name"] == "_cumsum_scan"
    np.testing.assert_allclose(got["carry"], xs.sum(0))
    np.testing.assert_allclose(got["ys"], 2 * np.cumsum(xs, axis=0))


def test_call_errors():
    exp = kiln.export.export(kiln.jit(_model, static_argnames="scale"))(*_model_specs(), scale=1.0)
    params, x = _model_values()
    with pytest.raises(ExportError, match=r"argument args\[1\] is f32\[3,4\] but the function was exported for "
                                          r"f32\[2,4\]; export it again"):
        exp.call(params, np.zeros((3, 4), np.float32))
    with pytest.raises(ExportError, match=r"argument args\[0\]\['w'\] is i32\[4,3\] but the function was "
                                          r"exported for f32\[4,3\]"):
        exp.call({"w": np.zeros((4, 3), np.int32), "b": params["b"]}, x)
    with pytest.raises(ExportError, match=r"the arguments have the structure .* but the function was exported "
                                          r"for .*; pass \(args, kwargs\) with the exported structure"):
        exp.call(params, x, x)
    with pytest.raises(ExportError, match=r"argument args\[1\] is f32\[3,4\] but the function was exported"):
        kiln.jit(lambda p, x: exp.call(p, x)["out"])(params, np.zeros((3, 4), np.float32))
    assert not exp.has_vjp()  # an integer result
    with pytest.raises(ExportError, match=r"cannot differentiate the exported '_model': it has no VJP \(kiln records "
                                          r"one when every argument and result is floating or complex.*"
                                          r"kiln.export.export\(kiln.jit\(kiln.grad\(f\)\)\)"):
        kiln.grad(lambda x: exp.call(params, x)["stats"][0])(x)


def _smooth(x, p):
    return {"y": knp.sin(x) * p["w"], "s": (x ** 2 * p["w"]).sum()}


def test_grad_through_call_uses_the_exported_vjp():
    x = np.array([0.1, 0.5, 1.0], np.float32)
    w = np.array([1.0, 2.0, 3.0], np.float32)
    exp = kiln.export.export(kiln.jit(_smooth))(SDS((3,), knp.float32), {"w": SDS((3,), knp.float32)})
    assert exp.has_vjp()
    vjp = exp.vjp()  # primals, then one cotangent per result; returns one cotangent per argument
    assert [a.shape for a in vjp.in_avals] == [(3,), (3,), (), (3,)] and len(vjp.out_avals) == 2
    # d/dx, d/dw of sum(sin(x) w) + sum(x^2 w): cos(x) w + 2 x w, sin(x) + x^2
    want = (np.cos(x) * w + 2 * x * w, np.sin(x) + x ** 2)
    for e in (exp, kiln.export.deserialize(exp.serialize(vjp_order=1))):
        def loss(x, w):
            out = e.call(x, {"w": w})
            return out["y"].sum() + out["s"]
        for g in (kiln.grad(loss, argnums=(0, 1)), kiln.jit(kiln.grad(loss, argnums=(0, 1)))):
            got = g(x, w)
            np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-5)
            np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-5)
    assert not kiln.export.deserialize(exp.serialize()).has_vjp()  # vjp_order=0 stores none
    # The VJP is exported lazily, here inside vmap's trace; per-example gradients against the analytic ones.
    fresh = kiln.export.export(kiln.jit(_smooth))(SDS((3,), knp.float32), {"w": SDS((3,), knp.float32)})
    xb = np.stack([x, 2 * x])
    per_example = kiln.jit(kiln.vmap(kiln.grad(lambda x: fresh.call(x, {"w": w})["s"])))(xb)
    np.testing.assert_allclose(np.asarray(per_example), 2 * xb * w, rtol=1e-5)
    # Second order: d2/dx2 sum(sin(x) w) = -sin(x) w
    e2 = kiln.export.deserialize(exp.serialize(vjp_order=2))
    hess_diag = kiln.grad(lambda x: kiln.grad(lambda x: e2.call(x, {"w": w})["y"].sum())(x).sum())(x)
    np.testing.assert_allclose(np.asarray(hess_diag), -np.sin(x) * w, rtol=1e-5)
    with pytest.raises(TypeError, match="forward-mode differentiation .* of the custom_vjp function Exported.call "
                                        "of '_smooth' is not supported, as in JAX"):
        kiln.jvp(lambda x: e2.call(x, {"w": w})["s"], (x,), (x,))


def test_call_inside_jit_and_vmap():
    """Inside a trace the module's functions are inlined into the caller's module (renamed)."""
    exp = kiln.export.deserialize(
        kiln.export.export(kiln.jit(_model, static_argnames="scale"))(*_model_specs(), scale=1.5).serialize())
    scan = kiln.export.export(kiln.jit(_cumsum_scan))(SDS((4, 3), knp.float32))
    params, x = _model_values(3)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)

    @kiln.jit
    def g(params, x, xs):
        a = exp.call(params, x)
        b = exp.call(params, x * 2)  # called twice: two renamed copies
        carry, ys = scan.call(xs)
        return a["out"] - b["out"], a["stats"][0], carry, ys
    d, s, carry, ys = g(params, x, xs)
    want_a, want_s = _np_model(params, x, 1.5)
    np.testing.assert_allclose(np.asarray(d), want_a - _np_model(params, 2 * x, 1.5)[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(s), want_s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(carry), xs.sum(0))
    np.testing.assert_allclose(np.asarray(ys), 2 * np.cumsum(xs, axis=0))
    text = g.lower(params, x, xs).as_text()
    assert text.count("func.func private @exported_") == 3 and "call @exported_" in text

    xb = np.stack([x, x + 1, -x])
    got = kiln.vmap(lambda x: exp.call(params, x)["out"])(xb)  # once per batch element
    np.testing.assert_allclose(np.asarray(got), np.stack([_np_model(params, v, 1.5)[0] for v in xb]), rtol=1e-5,
                               atol=1e-5)
    got = kiln.jit(kiln.vmap(lambda p, x: exp.call(p, x)["stats"][0], in_axes=(None, 0)))(params, xb)
    np.testing.assert_allclose(np.asarray(got), [_np_model(params, v, 1.5)[1] for v in xb], rtol=1e-5, atol=1e-5)


def test_export_errors():
    with pytest.raises(ExportError, match=r"must be the result of kiln.jit.*kiln.export.export\(kiln.jit\(f\)\)"):
        kiln.export.export(lambda x: x)
    with pytest.raises(ExportError, match=r"platforms=\('cpu', 'cpu'\) names a platform twice"):
        kiln.export.export(kiln.jit(knp.sin), platforms=["cpu", "cpu"])
    with pytest.raises(ExportError, match=r"platforms=\('metal',\): expected one of 'cpu', 'cuda'"):
        kiln.export.export(kiln.jit(knp.sin), platforms=["metal"])
    with pytest.raises(ExportError, match="symbolic .* export is not supported by kiln; export once per concrete"):
        kiln.export.symbolic_shape("b, 4")
    exp = kiln.export.export(kiln.jit(lambda x: x.astype(knp.int32)))(SDS((2,), knp.float32))
    with pytest.raises(ExportError, match=r"serialize\(vjp_order=1\): '<lambda>' has no VJP to store"):
        exp.serialize(vjp_order=1)
    with pytest.raises(ExportError, match="has no VJP: kiln records one when every argument and result is floating"):
        exp.vjp()
    with pytest.raises(ExportError, match=r"serialize\(vjp_order=-1\): expected an int >= 0"):
        exp.serialize(vjp_order=-1)
    def printing(x):
        kiln.debug.print("x = {}", x)
        return x * 2
    with pytest.raises(ExportError, match=r"export\(printing\): the function calls back into Python .* a serialized "
                                          "module cannot hold Python functions"):
        kiln.export.export(kiln.jit(printing))(SDS((2,), knp.float32))
    with pytest.raises(ExportError, match=r"an argument is a traced value .* pass kiln.ShapeDtypeStruct"):
        kiln.jit(lambda x: kiln.export.export(kiln.jit(knp.sin))(x))(np.ones(2, np.float32))

    class Point:
        def __init__(self, x):
            self.x = x
    kiln.tree_util.register_pytree_node(Point, lambda p: ((p.x,), None), lambda _, c: Point(*c))
    exp = kiln.export.export(kiln.jit(lambda p: p.x * 2))(Point(SDS((2,), knp.float32)))
    with pytest.raises(ExportError, match="cannot serialize the arguments' structure: it contains a Point node, "
                                          "which is not registered for serialization; register it with "
                                          "kiln.export.register_pytree_node_serialization"):
        exp.serialize()
    np.testing.assert_allclose(np.asarray(exp.call(Point(np.ones(2, np.float32)))), [2, 2])  # calls unserialized


class _Pair(collections.namedtuple("_Pair", ["first", "second"])):
    pass


class _Box:
    def __init__(self, value, label):
        self.value, self.label = value, label


kiln.tree_util.register_pytree_node(_Box, lambda b: ((b.value,), b.label), lambda label, c: _Box(c[0], label))
kiln.export.register_namedtuple_serialization(_Pair, serialized_name="kiln.tests._Pair")
kiln.export.register_pytree_node_serialization(_Box, serialized_name="kiln.tests._Box",
                                               serialize_auxdata=lambda label: label.encode(),
                                               deserialize_auxdata=lambda data: data.decode())


def test_registered_pytree_nodes_serialize():
    def f(pair, od, box):
        return _Pair(second=pair.first * 2, first=od["z"] - od["a"]), _Box(box.value + 1, box.label)
    od = collections.OrderedDict([("z", SDS((3,), knp.float32)), ("a", SDS((3,), knp.float32))])
    exp = kiln.export.export(kiln.jit(f))(_Pair(SDS((2,), knp.int32), SDS((), knp.bool_)), od,
                                          _Box(SDS((2,), knp.float32), "tag"))
    back = kiln.export.deserialize(exp.serialize())
    assert back.in_tree == exp.in_tree and back.out_tree == exp.out_tree
    z, a = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    pair, box = back.call(_Pair(np.array([1, 2], np.int32), np.bool_(True)), collections.OrderedDict(z=z, a=a),
                          _Box(np.zeros(2, np.float32), "tag"))
    assert isinstance(pair, _Pair) and isinstance(box, _Box) and box.label == "tag"
    np.testing.assert_array_equal(np.asarray(pair.second), [2, 4])
    np.testing.assert_array_equal(np.asarray(pair.first), z - a)
    np.testing.assert_array_equal(np.asarray(box.value), [1, 1])
    with pytest.raises(ExportError, match="already registered"):
        kiln.export.register_namedtuple_serialization(_Pair, serialized_name="other")
    with pytest.raises(ExportError, match="expected a namedtuple class"):
        kiln.export.register_namedtuple_serialization(dict, serialized_name="d")
    blob = bytes(exp.serialize()).replace(b"kiln.tests._Box", b"kiln.tests._Xox")
    with pytest.raises(ExportError, match=r"the pytree node 'kiln.tests._Xox', which is not registered here; "
                                          r"register its type with kiln.export.register_pytree_node_serialization"):
        kiln.export.deserialize(blob)


def test_several_platforms_take_the_platform_index_first():
    here = kiln.default_backend()
    platforms = ("tpu", here) if here != "tpu" else ("cpu", here)
    f = kiln.jit(lambda x: knp.linalg.solve(x, knp.ones(3)) * 2)
    exp = kiln.export.export(f, platforms=platforms)(SDS((3, 3), knp.float32))
    assert exp.platforms == platforms
    assert "@main(%arg0: tensor<i32>, %arg1: tensor<3x3xf32>)" in exp.mlir_module()
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
    want = np.linalg.solve(a, np.ones(3)) * 2
    back = kiln.export.deserialize(exp.serialize())
    np.testing.assert_allclose(np.asarray(back.call(a)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.jit(back.call)(a)), want, rtol=1e-5)


def test_export_on_another_platform_refuses_to_run_here():
    here = kiln.default_backend()
    other = "tpu" if here != "tpu" else "cpu"
    exp = kiln.export.export(kiln.jit(knp.sin), platforms=[other])(SDS((2,), knp.float32))
    assert exp.platforms == (other,)
    with pytest.raises(ExportError, match=rf"exported for platforms \('{other}',\) but runs on {here}"):
        exp.call(np.ones(2, np.float32))
    with pytest.raises(kiln.lowering.LoweringError, match=rf"exported for platforms \('{other}',\) but is called "
                                                          rf"in a program for {here}"):
        kiln.jit(exp.call)(np.ones(2, np.float32))


def test_deserialize_rejects_bad_bytes():
    blob = kiln.export.export(kiln.jit(_model, static_argnames="scale"))(*_model_specs(), scale=1.0).serialize()
    with pytest.raises(ExportError, match="expected the bytes of Exported.serialize"):
        kiln.export.deserialize("not bytes")
    for cut in (0, 3, 7, 40, len(blob) // 2, len(blob) - 100, len(blob) - 1):
        with pytest.raises(ExportError, match=rf"the {cut} bytes are not a serialized Exported .* corrupted or "
                                              "truncated"):
            kiln.export.deserialize(blob[:cut])
    with pytest.raises(ExportError, match="not a serialized Exported"):
        kiln.export.deserialize(b"\xff" * 64)


def test_corrupted_bytes_never_crash(tmp_path):
    """Flipped bytes anywhere: deserialize and call either work or raise a Python error, never abort."""
    exp = kiln.export.export(kiln.jit(_cumsum_scan))(SDS((4, 3), knp.float32))
    path = tmp_path / "scan.bin"
    path.write_bytes(exp.serialize())
    module = exp.mlir_module_serialized
    code = f"""
        import numpy as np, kiln
        blob = bytearray(open({str(path)!r}, 'rb').read())
        start = blob.index({module!r})
        rng = np.random.default_rng(0)
        errors = 0
        for pos in list(rng.integers(0, len(blob), 30)) + list(range(0, 64, 8)):
            bad = bytearray(blob)
            bad[pos] ^= 0xA5
            try:
                e = kiln.export.deserialize(bytes(bad))
                e.call(np.ones((4, 3), np.float32))
            except Exception as err:
                assert str(err), type(err)
                errors += 1
        # The module's bytes are checked (CRC-32) before MLIR reads them: damaged bytecode can corrupt the
        # memory of MLIR's reader.
        for pos in rng.integers(start, start + {len(module)}, 20):
            bad = bytearray(blob)
            bad[pos] ^= 0x5A
            try:
                kiln.export.deserialize(bytes(bad))
                raise AssertionError("a damaged module was accepted")
            except kiln.export.ExportError as err:
                assert "do not match their CRC-32 checksum" in str(err) or "not MLIR bytecode" in str(err), err
        print("OK", errors)
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, cwd=REPO, timeout=600)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and out.strip().splitlines()[-1].startswith("OK"), f"rc={proc.returncode}\n{out}\n{err}"


# -- JAX compatibility ---------------------------------------------------------------------------
def _jax_python() -> str | None:
    """An interpreter with JAX and flatbuffers: this one, or ``KILN_JAX_PYTHON``, or the bench environment."""
    candidates = [sys.executable, os.environ.get("KILN_JAX_PYTHON"), os.path.join(REPO, ".nox/bench/bin/python")]
    for exe in candidates:
        if exe and os.path.exists(exe):
            ok = subprocess.run([exe, "-c", "import jax.export, flatbuffers"], capture_output=True, cwd="/",
                                timeout=120)
            if ok.returncode == 0:
                return exe
    return None


@pytest.fixture(scope="module")
def jax_python():
    exe = _jax_python()
    if exe is None:
        pytest.skip("no interpreter with jax and flatbuffers (set KILN_JAX_PYTHON)")
    return exe


def test_jax_reads_and_calls_kilns_bytes(tmp_path, jax_python):
    params, x = _model_values(2)
    jitted = kiln.jit(_model, static_argnames="scale")
    exp = kiln.export.export(jitted)(*_model_specs(), scale=2.0)
    (tmp_path / "k.bin").write_bytes(exp.serialize())
    (tmp_path / "kv.bin").write_bytes(kiln.export.export(kiln.jit(_smooth))(
        SDS((3,), knp.float32), {"w": SDS((3,), knp.float32)}).serialize(vjp_order=1))
    two = kiln.export.export(jitted, platforms=["cuda", "cpu"])(*_model_specs(), scale=2.0)
    (tmp_path / "k2.bin").write_bytes(two.serialize())
    np.savez(tmp_path / "in.npz", w=params["w"], b=params["b"], x=x)
    code = f"""
        import json, numpy as np, jax
        from jax import export
        d = np.load({str(tmp_path / 'in.npz')!r})
        e = export.deserialize(bytearray(open({str(tmp_path / 'k.bin')!r}, 'rb').read()))
        args = ({{'w': d['w'], 'b': d['b']}}, d['x'])
        out = e.call(*args)
        jitted = jax.jit(e.call)(*args)
        two = export.deserialize(bytearray(open({str(tmp_path / 'k2.bin')!r}, 'rb').read()))
        ev = export.deserialize(bytearray(open({str(tmp_path / 'kv.bin')!r}, 'rb').read()))
        xv, wv = np.array([0.1, 0.5, 1.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
        gx, gw = jax.grad(lambda x, w: ev.call(x, {{'w': w}})['y'].sum(), argnums=(0, 1))(xv, wv)
        print(json.dumps({{"gx": np.asarray(gx).tolist(), "gw": np.asarray(gw).tolist(),
                          "out": np.asarray(out['out']).tolist(), "sum": float(out['stats'][0]),
                          "jit": np.asarray(jitted['out']).tolist(), "name": e.fun_name,
                          "two": np.asarray(two.call(*args)['out']).tolist(), "platforms": two.platforms,
                          "avals": [str(a) for a in e.in_avals]}}))
    """
    proc = subprocess.run([jax_python, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd="/",
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want_out, want_sum = _np_model(params, x, 2.0)
    np.testing.assert_allclose(got["out"], want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["jit"], want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["two"], want_out, rtol=1e-5, atol=1e-6)
    assert got["platforms"] == ["cuda", "cpu"]
    xv, wv = np.array([0.1, 0.5, 1.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(got["gx"], np.cos(xv) * wv, rtol=1e-5)
    np.testing.assert_allclose(got["gw"], np.sin(xv), rtol=1e-5)
    np.testing.assert_allclose(got["sum"], want_sum, rtol=1e-5, atol=1e-5)
    assert got["name"] == "_model" and got["avals"] == ["float32[3]", "float32[4,3]", "float32[2,4]"]


def test_kiln_reads_and_calls_jaxs_bytes(tmp_path, jax_python):
    code = f"""
        import jax, jax.numpy as jnp
        from jax import export
        def g(x, d):
            return {{'s': jnp.cumsum(x) * d['k'], 't': [x.astype(jnp.int32), None]}}
        specs = (jax.ShapeDtypeStruct((4,), jnp.float32),
                 {{'k': jax.ShapeDtypeStruct((), jnp.float32), 'unused': jax.ShapeDtypeStruct((2,), jnp.int16)}})
        open({str(tmp_path / 'j.bin')!r}, 'wb').write(export.export(jax.jit(g))(*specs).serialize())
        two = export.export(jax.jit(lambda x: jnp.sin(x) * 2), platforms=['cuda', 'cpu'])(specs[0])
        open({str(tmp_path / 'j2.bin')!r}, 'wb').write(two.serialize())
        smooth = export.export(jax.jit(lambda x, y: (jnp.tanh(x) * y, (x * y).sum())))(specs[0], specs[0])
        open({str(tmp_path / 'j3.bin')!r}, 'wb').write(smooth.serialize(vjp_order=2))
        m = jax.ShapeDtypeStruct((3, 3), jnp.float32)
        lin = export.export(jax.jit(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.eigh(a)[0])))(
            m, jax.ShapeDtypeStruct((3,), jnp.float32))
        open({str(tmp_path / 'j4.bin')!r}, 'wb').write(lin.serialize())
    """
    proc = subprocess.run([jax_python, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd="/",
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    exp = kiln.export.deserialize((tmp_path / "j.bin").read_bytes())
    assert exp.fun_name == "g" and exp.module_kept_var_idx == (0, 1)
    assert [str(a.dtype) for a in exp.in_avals] == ["float32", "float32", "int16"]
    x = np.array([1.5, -2.0, 3.25, 4.0], np.float32)
    out = exp.call(x, {"k": np.float32(3.0), "unused": np.zeros(2, np.int16)})
    np.testing.assert_allclose(np.asarray(out["s"]), np.cumsum(x) * 3.0, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["t"][0]), x.astype(np.int32))
    assert out["t"][1] is None
    two = kiln.export.deserialize((tmp_path / "j2.bin").read_bytes())  # platform index, shape refinement
    assert two.platforms == ("cuda", "cpu") and two.uses_global_constants
    np.testing.assert_allclose(np.asarray(two.call(x)), np.sin(x) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(two.call)(x)), np.sin(x) * 2, rtol=1e-6)
    smooth = kiln.export.deserialize((tmp_path / "j3.bin").read_bytes())
    y = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    gx, gy = kiln.grad(lambda x, y: smooth.call(x, y)[0].sum() + smooth.call(x, y)[1], argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), (1 - np.tanh(x) ** 2) * y + y, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gy), np.tanh(x) + x, rtol=1e-5)
    second = kiln.grad(lambda x: kiln.grad(lambda x: smooth.call(x, y)[0].sum())(x).sum())(x)
    np.testing.assert_allclose(np.asarray(second), -2 * np.tanh(x) * (1 - np.tanh(x) ** 2) * y, rtol=1e-4,
                               atol=1e-5)
    lin = kiln.export.deserialize((tmp_path / "j4.bin").read_bytes())  # JAX's LAPACK custom calls on CPU
    if kiln.default_backend() == "cpu":
        a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
        for sol, eig in (lin.call(a, y[:3]), kiln.jit(lin.call)(a, y[:3])):
            np.testing.assert_allclose(np.asarray(sol), np.linalg.solve(a, y[:3]), rtol=1e-5)
            np.testing.assert_allclose(np.asarray(eig), np.linalg.eigvalsh(a), rtol=1e-5)
    inside = kiln.jit(lambda x, k: exp.call(x, {"k": k, "unused": knp.zeros(2, knp.int16)})["s"])(x, np.float32(2))
    np.testing.assert_allclose(np.asarray(inside), np.cumsum(x) * 2.0, rtol=1e-6)


def test_export_of_a_numpy_function_as_jax_jitted_jnp():
    # JAX's jnp.cos is a jitted function: export(jnp.cos), jnp.cos.lower/.trace/.eval_shape all work
    exp = kiln.export.export(knp.cos)(1.)
    assert exp.fun_name == "cos" and exp.calling_convention_version == 10
    np.testing.assert_allclose(exp.call(np.float32(0.5)), np.cos(np.float32(0.5)), rtol=1e-6)
    assert "stablehlo.cosine" in knp.cos.lower(1.).as_text()
    assert "reduce" in knp.sum.lower(knp.ones((3, 4)), axis=1).as_text()
    assert knp.sum.eval_shape(knp.ones((3, 4)), axis=1).shape == (3,)
    assert "reduce_sum" in str(knp.sum.trace(knp.ones(3)).jaxpr)


def test_calling_convention_version_flag():
    # docs/export/export.md: `with config.jax_export_calling_convention_version(10): ...`; JAX records the flag's
    # version (9 and 10 are supported) and refuses one outside that range when exporting
    assert kiln.config.jax_export_calling_convention_version == 10
    with kiln.config.override("jax_export_calling_convention_version", 9):
        exp = kiln.export.export(kiln.jit(lambda x: x * 2))(SDS((3,), np.float32))
        with pytest.raises(ExportError) as info:
            with kiln.config.override("jax_export_calling_convention_version", 11):
                kiln.export.export(kiln.jit(lambda x: x * 2))(SDS((3,), np.float32))
    assert "version 11 is outside the range of supported versions [9..10]" in str(info.value)
    assert "jax_export_calling_convention_version" in str(info.value)  # how to fix it
    assert isinstance(info.value, ValueError)  # JAX's class
    back = kiln.export.deserialize(exp.serialize())
    assert exp.calling_convention_version == back.calling_convention_version == 9
    np.testing.assert_array_equal(back.call(np.arange(3, dtype=np.float32)), np.arange(3, dtype=np.float32) * 2)
    assert kiln.export.export(kiln.jit(lambda x: x))(1.).calling_convention_version == 10  # the default again


def test_symbolic_specs_without_symbols_are_concrete_shapes():
    ex = kiln.export
    assert ex.symbolic_shape("_, 4", like=(3, 4)) == (3, 4)
    assert ex.symbolic_shape("(2, ...)", like=(2, 5, 6)) == (2, 5, 6)
    assert ex.symbolic_shape("3,") == (3,) and ex.symbolic_shape(None, like=(2, 2)) == (2, 2)
    args = (np.ones((3, 1), np.float32), {"y": np.zeros(4, np.int32)})
    for specs in ("...", None, ["_, 1", None]):
        got = ex.symbolic_args_specs(args, specs)
        assert got[0].shape == (3, 1) and got[0].dtype == np.float32
        assert got[1]["y"].shape == (4,) and got[1]["y"].dtype == np.int32
    assert not ex.is_symbolic_dim(3) and repr(ex.SymbolicScope()) == "SymbolicScope([])"
    with pytest.raises(ExportError, match=r"symbolic_shape\('a'\): symbolic .* not supported by kiln"):
        ex.symbolic_args_specs(args, ("_, 1", "a"))
    with pytest.raises(ExportError, match="constraints name dimension variables"):
        ex.symbolic_shape("4", constraints=["a >= 2"])
    with pytest.raises(ValueError, match="symbolic constraints should be a sequence of strings"):
        ex.SymbolicScope("a >= 2")
    with pytest.raises(ValueError, match=r"'_' takes its size from like=, which is missing"):
        ex.symbolic_shape("_, 4")
    with pytest.raises(ValueError, match=r"2 dimensions, but like= has 3"):
        ex.symbolic_shape("_, 4", like=(3, 4, 5))
    with pytest.raises(ValueError, match="'...' may only be the last dimension"):
        ex.symbolic_shape("..., 4", like=(3, 4))


def test_disabled_platform_check_runs_the_first_platforms_module():
    disabled = [kiln.export.DisabledSafetyCheck.platform()]
    want = np.cos(np.float32(1.0))
    for platforms in (["tpu"], ["tpu", "cuda"]):
        exp = kiln.export.export(kiln.jit(kiln.lax.cos), platforms=platforms, disabled_checks=disabled)(1.)
        np.testing.assert_allclose(exp.call(1.), want, rtol=1e-6)
        np.testing.assert_allclose(kiln.jit(exp.call)(1.), want, rtol=1e-6)
        back = kiln.export.deserialize(exp.serialize())
        assert back.disabled_safety_checks == tuple(disabled)
        np.testing.assert_allclose(back.call(1.), want, rtol=1e-6)
    checked = kiln.export.export(kiln.jit(kiln.lax.cos), platforms=["tpu"])(1.)
    with pytest.raises(ExportError, match=r"exported for platforms \('tpu',\) but runs on cpu"):
        checked.call(1.)
    # inside jit the lowering finds the mismatch: a ValueError too, as JAX's
    with pytest.raises(ValueError, match=r"exported for platforms \('tpu',\) but is called in a program for cpu"):
        kiln.jit(checked.call)(1.)


def test_custom_call_without_compatibility_guarantee_is_refused():
    from kiln.extend.core import Primitive
    from kiln.extend.mlir.dialects import stablehlo as hlo
    from kiln.interpreters import mlir
    prim = Primitive("test_export_unstable_target")
    prim.def_abstract_eval(lambda x: x)
    mlir.register_lowering(prim, lambda ctx, x: hlo.CustomCallOp([x.type], [x],
                                                                 call_target_name="my_unstable_target").results)
    with pytest.raises(ExportError, match=r"(?s)custom calls whose targets have no compatibility guarantees:.*"
                                          r"my_unstable_target at .*DisabledSafetyCheck.custom_call\('my_unstable"):
        kiln.export.export(kiln.jit(prim.bind))(1.)
    for target in ("my_unstable_target", "ALL"):
        check = kiln.export.DisabledSafetyCheck.custom_call(target)
        exp = kiln.export.export(kiln.jit(prim.bind), disabled_checks=[check])(1.)
        assert "my_unstable_target" in exp.mlir_module()
    # LAPACK's kernels are stable targets: CPU linear algebra exports
    a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    exp = kiln.export.export(kiln.jit(knp.linalg.inv))(a)
    assert "lapack_" in exp.mlir_module()
    np.testing.assert_allclose(exp.call(a), np.linalg.inv(a), rtol=1e-5)


def test_derivative_beyond_the_stored_vjp_orders_says_which_order():
    exp = kiln.export.export(kiln.jit(knp.sin))(1.)
    back = kiln.export.deserialize(exp.serialize(vjp_order=2))
    second = kiln.grad(kiln.grad(back.call))
    np.testing.assert_allclose(second(1.), -np.sin(1.0), rtol=1e-6)
    with pytest.raises(ValueError, match=r"needs serialize\(vjp_order=3\) or higher for this derivative of order 3"):
        kiln.grad(second)(1.)
