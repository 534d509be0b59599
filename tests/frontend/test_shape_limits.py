"""Shapes XLA cannot represent: kiln refuses them with ShapeError instead of letting XLA abort the process.

XLA computes an array's byte size as itemsize * d0 * d1 * ... in int64, left to right, and aborts the
interpreter when a partial product overflows (JAX crashes the same way). Since a regression would kill the
interpreter, every case that would reach XLA runs in a subprocess, one case after another, each reporting a
JSON line; a crash fails the test naming the case that was running."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kiln.frontend.core.avals import INT64_MAX, ShapedArray, ShapeError, check_shape

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import kiln, kiln.numpy as knp
    from kiln import lax
    cases = json.loads(sys.argv[1])
    for label, expr in cases:
        print(json.dumps(["start", label]), flush=True)
        try:
            out = eval(expr)
            result = ["ok", label, str(getattr(out, "shape", out))]
        except Exception as e:
            result = ["error", label, [c.__name__ for c in type(e).__mro__], str(e)]
        print(json.dumps(result), flush=True)
    a = knp.add(knp.ones(4), knp.ones(4))  # the interpreter is still fine
    print(json.dumps(["done", float(a.sum())]), flush=True)
""")


def run_cases(cases: dict[str, str]) -> dict[str, list]:
    """Evaluate each expression in one fresh interpreter; ``{label: ["ok", shape] | ["error", mro, msg]}``."""
    proc = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(list(cases.items()))], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    results, running = {}, None
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        if rec[0] == "start":
            running = rec[1]
        elif rec[0] in ("ok", "error"):
            results[rec[1]] = [rec[0], *rec[2:]]
            running = None
        elif rec[0] == "done":
            assert rec[1] == 8.0
    if proc.returncode != 0 or running is not None:
        raise AssertionError(f"the subprocess died (rc={proc.returncode}) while running case {running!r}:\n"
                             f"{proc.stderr[-3000:]}")
    return results


_TOO_BIG = {
    "zeros 2**31 x 2**31": "knp.zeros((2**31, 2**31))",
    "zeros 2**40 x 2**40": "knp.zeros((2**40, 2**40))",
    "ones 2**62 x 4": "knp.ones((2**62, 4))",
    "zeros 2**61 f32 (elements fit, bytes do not)": "knp.zeros((2**61,), knp.float32)",
    "empty": "knp.empty((2**33, 2**31))",
    "full": "knp.full((2**40, 2**40), 2.0)",
    "broadcast_to": "knp.broadcast_to(knp.ones(()), (2**40, 2**40))",
    "lax.broadcast_in_dim": "lax.broadcast_in_dim(1.0, (2**40, 2**40), ())",
    "ones then sum": "knp.ones((2**31, 2**31)).sum()",
    "tile": "knp.tile(knp.ones(2**20), (2**30, 2**30))",
    "eye": "knp.eye(2**40)",
    "jit output": "kiln.jit(lambda x: knp.broadcast_to(x, (2**40, 2**40)))(1.0)",
    "jit tile": "kiln.jit(lambda x: knp.tile(x, (2**32, 2**32)))(knp.ones(4))",
    "jit lower": "kiln.jit(lambda x: knp.zeros((2**40, 2**40)) + x).lower(1.0)",
}


@pytest.fixture(scope="module")
def too_big_results():
    return run_cases(_TOO_BIG)


@pytest.mark.parametrize("label", list(_TOO_BIG))
def test_too_large_shapes_raise_instead_of_aborting(too_big_results, label):
    kind, mro, msg = too_big_results[label]
    assert kind == "error" and "ShapeError" in mro and "ValueError" in mro and "KilnError" in mro, \
        (label, mro, msg)
    assert "XLA cannot represent an array of shape (" in msg
    assert "and XLA's limit for one array is 2**63 - 1 = 9223372036854775807 bytes (its sizes are int64)" in msg


def test_too_large_message_gives_shape_elements_and_bytes(too_big_results):
    msg = too_big_results["zeros 2**31 x 2**31"][2]
    assert msg == ("kiln: XLA cannot represent an array of shape (2147483648, 2147483648) and dtype float32: it "
                   "would take 18446744073709551616 bytes (4611686018427387904 elements of 4 bytes, about 2**64.0 "
                   "bytes), and XLA's limit for one array is 2**63 - 1 = 9223372036854775807 bytes (its sizes are "
                   "int64). Check how the shape was computed.")
    msg = too_big_results["zeros 2**61 f32 (elements fit, bytes do not)"][2]
    assert "shape (2305843009213693952,) and dtype float32: it would take 9223372036854775808 bytes" in msg


_EDGE = {
    "zero-size but the leading dims overflow": "knp.zeros((2**40, 2**40, 0))",
    "reshape to zero-size overflowing shape": "knp.reshape(knp.ones(0), (2**40, 2**40, 0))",
    "dimension over int64": "knp.zeros((2**64,))",
    "dimension over int64 after a 0": "knp.zeros((0, 2**63))",
    "negative dimension in lax": "lax.broadcast_in_dim(1.0, (-1, 3), ())",
    "negative iota": "lax.iota(np.float32, -3)",
    "reshape whose int64 product would wrap to the size": "knp.ones(4).reshape(2**62 + 1, 4)",
    "negative dimension in kiln.numpy": "knp.zeros((2, -3))",
    # big but representable: traced and lowered (not run), as XLA accepts them
    "largest f32 lowering":
        "kiln.jit(lambda x: knp.zeros((2**30, 2**31 - 1)) + x).lower(1.0).as_text().count('2147483647')",
    "bool of 2**62 elements lowers":
        "kiln.jit(lambda x: knp.zeros((2**62,), bool) | x).lower(True).as_text().count('4611686018427387904')",
    "large reshape of a traced zero-size array":
        "kiln.jit(lambda x: knp.reshape(x, (2**30, 0, 2**30))).lower(knp.ones(0)).as_text()"
        ".count('1073741824x0x1073741824')",
}


@pytest.fixture(scope="module")
def edge_results():
    return run_cases(_EDGE)


def test_zero_size_shape_whose_leading_dims_overflow(edge_results):
    for label in ("zero-size but the leading dims overflow", "reshape to zero-size overflowing shape"):
        kind, mro, msg = edge_results[label]
        assert kind == "error" and "ShapeError" in mro, (label, msg)
        assert msg == ("kiln: XLA cannot represent an array of shape (1099511627776, 1099511627776, 0) and dtype "
                       "float32: although it has no element (a dimension is 0), its dimensions up to axis 1 "
                       "already make 4835703278458516698824704 bytes (about 2**82.0), and XLA computes sizes left "
                       "to right; XLA's limit for one array is 2**63 - 1 = 9223372036854775807 bytes (its sizes "
                       "are int64). Check how the shape was computed.")


def test_dimension_larger_than_int64(edge_results):
    for label, shape, axis in [("dimension over int64", "(18446744073709551616,)", 0),
                               ("dimension over int64 after a 0", "(0, 9223372036854775808)", 1)]:
        kind, mro, msg = edge_results[label]
        assert kind == "error" and "ShapeError" in mro, (label, msg)
        assert f"shape {shape} and dtype float32: dimension" in msg
        assert f"at axis {axis} is larger than 2**63 - 1, the largest dimension XLA accepts" in msg


def test_negative_dimensions(edge_results):
    for label, shape in [("negative dimension in lax", "(-1, 3)"), ("negative iota", "(-3,)")]:
        kind, mro, msg = edge_results[label]
        # TypeError as JAX's lax raises, ValueError as NumPy raises
        assert kind == "error" and {"ShapeError", "TypeError", "ValueError"} <= set(mro), (label, msg)
        # lax's own shape rules say it first (naming the function); the ShapedArray check is the backstop
        assert "negative dimension" in msg and shape in msg, (label, msg)
    kind, mro, msg = edge_results["negative dimension in kiln.numpy"]
    assert "ValueError" in mro and msg == "kiln.numpy.full: negative dimensions are not allowed, got shape (2, -3)"


def test_reshape_counts_elements_exactly(edge_results):
    kind, mro, msg = edge_results["reshape whose int64 product would wrap to the size"]
    assert kind == "error" and mro[0] == "ValueError"
    assert msg == ("kiln.numpy.reshape: cannot reshape array of size 4 (shape (4,)) into shape "
                   "(4611686018427387905, 4)")


def test_large_but_valid_shapes_are_accepted(edge_results):
    assert edge_results["largest f32 lowering"][0] == "ok"
    assert int(edge_results["largest f32 lowering"][1]) >= 1
    assert edge_results["bool of 2**62 elements lowers"][0] == "ok"
    assert int(edge_results["bool of 2**62 elements lowers"][1]) >= 1
    assert edge_results["large reshape of a traced zero-size array"][0] == "ok"
    assert int(edge_results["large reshape of a traced zero-size array"][1]) >= 1


# -- the check itself (no XLA involved: in process) ---------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", [
    ((2**61 - 1,), np.int32), ((2**62,), np.bool_), ((2**59, 15), np.uint8), ((2**31, 2**31), np.bool_),
    ((0, 2**62), np.complex128), ((2**40, 0), np.float32), ((), np.float64), ((2**20,) * 3, np.float32),
])
def test_representable_shapes(shape, dtype):
    check_shape(shape, np.dtype(dtype))
    aval = ShapedArray(shape, dtype)
    assert aval.shape == shape and aval.size == int(np.prod(shape, dtype=object))


@pytest.mark.parametrize("shape, dtype", [
    ((2**61,), np.int32), ((2**62, 2), np.bool_), ((2**60,), np.complex128), ((2**40, 2**40, 0), np.int8),
    ((-1,), np.float32), ((-2, -3), np.float32), ((2, 0, -1), np.float32), ((INT64_MAX + 1,), np.bool_),
])
def test_unrepresentable_shapes(shape, dtype):
    with pytest.raises(ShapeError, match=r"shape \(.*\)"):
        ShapedArray(shape, dtype)
    with pytest.raises(ShapeError, match="kiln.test"):
        check_shape(shape, np.dtype(dtype), "kiln.test")


def test_shapes_are_limited_by_bytes_not_elements():
    ShapedArray((2**63 - 1,), np.bool_)  # INT64_MAX one-byte elements: XLA accepts the shape
    with pytest.raises(ShapeError, match=r"it would take 9223372036854775808 bytes \(4611686018427387904 elements "
                                         r"of 2 bytes, about 2\*\*63\.0 bytes\)"):
        ShapedArray((2**62,), np.float16)


def test_even_number_of_negative_dimensions():
    with pytest.raises(ShapeError, match=r"the shape \(-2, -3\) has a negative dimension \(-2 at axis 0\)"):
        ShapedArray((-2, -3), np.float32)
