"""kiln.lax.ragged_all_to_all (JAX's) over a vmap axis: JAX's documented example, random exchanges against a NumPy
model of JAX's pseudocode (slice i of each sender to element i // (K / n), written in order at the sender's
output_offsets[i]), its derivatives (it is linear in operand and output: jvp and vjp against the map itself), under
jit and nested vmap, and the error paths. tests/multidevice/test_ragged_all_to_all.py runs it across devices."""
import numpy as np
import pytest

import kiln
from kiln import lax


def numpy_model(operands, outputs, input_offsets, send_sizes, output_offsets, recv_sizes):
    """JAX's pseudocode, element by element (first axis of every argument: the element of the named axis)."""
    n, k = len(operands), input_offsets.shape[1]
    per_peer = k // n
    results = [np.array(o) for o in outputs]
    for me in range(n):
        for i in range(k):
            src, j = i // per_peer, me * per_peer + i % per_peer  # slice j of element src comes to me as slice i
            start, at, size = input_offsets[src, j], output_offsets[src, j], recv_sizes[me, i]
            results[me][at:at + size] = operands[src][start:start + size]
    return np.stack(results)


def exchange(*args):
    return kiln.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"), axis_name="i")(*args)


def random_exchange(rng, n, per_peer, rows_in, rows_out, tail=()):
    """Arguments of a valid exchange: each element cuts its operand into k = n * per_peer slices (send sizes), and
    each receiver lays the slices it receives one after the other in its output."""
    k = n * per_peer
    send = rng.integers(0, 3, size=(n, k))
    input_offsets = np.zeros((n, k), np.int32)
    for e in range(n):
        input_offsets[e] = np.concatenate([[0], np.cumsum(send[e])[:-1]])
    assert (input_offsets[:, -1] + send[:, -1] <= rows_in).all()
    recv = np.zeros((n, k), np.int32)   # recv[me, i]: the size of slice i I receive = send[src, j]
    output_offsets = np.zeros((n, k), np.int32)   # where sender src's slice j goes on its receiver
    for me in range(n):
        at = 0
        for i in range(k):
            src, j = i // per_peer, me * per_peer + i % per_peer
            recv[me, i] = send[src, j]
            output_offsets[src, j] = at
            at += send[src, j]
        assert at <= rows_out
    operands = rng.standard_normal((n, rows_in) + tail).astype(np.float32)
    outputs = rng.standard_normal((n, rows_out) + tail).astype(np.float32)
    return operands, outputs, input_offsets, send.astype(np.int32), output_offsets, recv


def test_the_example_of_jaxs_documentation():
    operand = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
    output = np.zeros((2, 4), np.float32)
    args = (operand, output, np.array([[0, 1], [0, 1]]), np.array([[1, 2], [1, 1]]), np.array([[0, 0], [1, 2]]),
            np.array([[1, 1], [2, 1]]))
    expected = [[1, 3, 0, 0], [2, 2, 4, 0]]
    np.testing.assert_array_equal(exchange(*args), expected)
    np.testing.assert_array_equal(kiln.jit(exchange)(*args), expected)
    np.testing.assert_array_equal(numpy_model(*args), expected)


@pytest.mark.parametrize("n,per_peer,tail", [(2, 1, ()), (3, 2, (2,)), (4, 1, (2, 3))])
def test_random_exchanges_against_numpy(n, per_peer, tail):
    rng = np.random.default_rng(n * 10 + per_peer)
    for _ in range(3):
        args = random_exchange(rng, n, per_peer, rows_in=2 * n * per_peer + 1, rows_out=2 * n * per_peer + 2,
                               tail=tail)
        np.testing.assert_array_equal(kiln.jit(exchange)(*args), numpy_model(*args))


def test_overlapping_slices_are_written_in_order_and_int_dtypes():
    # both slices element 0 receives land at row 1: the second (from element 1) wins, as in JAX's pseudocode
    operand = np.array([[10, 11], [20, 21]], np.int32)
    output = np.full((2, 3), -1, np.int32)
    offsets = np.zeros((2, 2), np.int64)
    sizes = np.ones((2, 2), np.int64)
    output_offsets = np.array([[1, 0], [1, 2]], np.int64)
    args = (operand, output, offsets, sizes, output_offsets, sizes)
    np.testing.assert_array_equal(exchange(*args), numpy_model(*args))
    np.testing.assert_array_equal(exchange(*args)[0], [-1, 20, -1])


def test_derivatives_are_the_map_itself():
    rng = np.random.default_rng(0)
    operands, outputs, *sizes = random_exchange(rng, 3, 1, rows_in=5, rows_out=6, tail=(2,))

    def f(a, b):
        return exchange(a, b, *sizes)
    da, db = rng.standard_normal(operands.shape, np.float32), rng.standard_normal(outputs.shape, np.float32)
    value, tangent = kiln.jvp(f, (operands, outputs), (da, db))
    np.testing.assert_array_equal(value, numpy_model(operands, outputs, *sizes))
    np.testing.assert_allclose(tangent, numpy_model(da, db, *sizes), rtol=1e-6)
    ct = rng.standard_normal(outputs.shape, np.float32)
    _, pullback = kiln.vjp(f, operands, outputs)
    ga, gb = pullback(ct)
    # <ct, f(da, db)> == <vjp(ct), (da, db)>: the transpose of the linear map
    np.testing.assert_allclose(float(np.sum(ct * numpy_model(da, db, *sizes))),
                               float(np.sum(np.asarray(ga) * da) + np.sum(np.asarray(gb) * db)), rtol=1e-4)
    # output rows that receive data get no gradient from the output argument
    written = numpy_model(np.zeros_like(operands), np.ones_like(outputs), *sizes) == 0
    assert (np.asarray(gb)[written] == 0).all() and (np.asarray(gb)[~written] == ct[~written]).all()


def test_under_an_outer_vmap():
    rng = np.random.default_rng(1)
    batches = [random_exchange(rng, 2, 2, rows_in=9, rows_out=10) for _ in range(3)]
    stacked = [np.stack(a) for a in zip(*batches)]
    out = kiln.vmap(exchange)(*stacked)
    np.testing.assert_array_equal(out, np.stack([numpy_model(*b) for b in batches]))


def test_errors():
    operand, output = np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)
    ints = np.zeros((2, 2), np.int32)
    with pytest.raises(ValueError, match="input_offsets must be an integer array, got float32"):
        exchange(operand, output, ints.astype(np.float32), ints, ints, ints)
    with pytest.raises(ValueError, match=r"send_sizes must be rank 1 with a positive size, got shape \(2, 1\)"):
        exchange(operand, output, ints, np.zeros((2, 2, 1), np.int32), ints, ints)
    with pytest.raises(ValueError, match="must have one length, got input_offsets 2, send_sizes 2, output_offsets "
                                         "2, recv_sizes 3"):
        exchange(operand, output, ints, ints, ints, np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match="the length 3 of the offset and size arrays is not divisible by the size 2 "
                                         "of axis 'i'"):
        three = np.zeros((2, 3), np.int32)
        exchange(operand, output, three, three, three, three)
    with pytest.raises(ValueError, match=r"operand and output must have one dtype and the same shape but for their "
                                         r"leading \(ragged\) dimension, got f32\[3\] and i32\[4\]"):
        exchange(operand, output.astype(np.int32), ints, ints, ints, ints)
    with pytest.raises(NotImplementedError, match="axis_index_groups is not supported"):
        kiln.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i", axis_index_groups=[[0, 1]]),
                  axis_name="i")(operand, output, ints, ints, ints, ints)
    with pytest.raises(NameError, match="unbound axis name 'j'"):
        kiln.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="j"), axis_name="i")(
            operand, output, ints, ints, ints, ints)
