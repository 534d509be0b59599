"""JAX's shard_map notebook (docs/notebooks/shard_map.md) ported to kiln (tests/examples/jax_ported/
shard_map_notebook.py), each cell against NumPy: on the global arrays, on each device's block (Python loops over the
devices, the notebook's `collective_ref` semantics written in NumPy), and the training sections' losses and
gradients against a float64 NumPy forward and backward pass (itself checked by float64 finite differences).

Left to tests/multidevice/test_shard_map.py and test_shard_map_training.py (they cover the same ground with other
shapes): the StableHLO, grad through each collective, vmap of shard_map. Every cell runs once (module-scoped
fixtures); the network is the notebook's with 16 features instead of 784/128 (divisible by the 8 devices) and 4
layers instead of 6 (2 inner layers, one per pipeline stage), to keep the file's compiles to a few seconds."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from ported_pages import mlp_forward_backward, run_printing

import kiln
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P

PORT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "jax_ported" / "shard_map_notebook.py"
SIZES = (16, 16, 16, 16, 8)  # the notebook: 784, then five layers of 128, then 8
BATCH = 32


def _load():
    spec = importlib.util.spec_from_file_location("jax_ported_shard_map_notebook", PORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nb():
    return _load()


def _np(x):
    return np.asarray(x)


# ------------------------------------------------ basics ------------------------------------------------

def test_toy_matmul_and_its_layout(nb):
    out, printed = run_printing(nb.toy_matmul)
    a, b = np.arange(8 * 16.).reshape(8, 16), np.arange(16 * 4.).reshape(16, 4)
    np.testing.assert_allclose(_np(out["c"]), a @ b, rtol=1e-6)
    np.testing.assert_allclose(_np(out["c_ref"]), a @ b, rtol=1e-6)
    assert bool(out["ok"]) and bool(out["ok_ref"])
    assert out["c"].sharding.spec == P("x", None) and out["a"].sharding.spec == P("x", "y")
    # Each device (x, y) holds row block x of c, whatever y: the printed grid has 4 rows of 2 devices.
    for x in range(4):
        np.testing.assert_allclose(
            _np(out["c"].addressable_shards[2 * x].data), (a @ b)[2 * x:2 * x + 2], rtol=1e-6)
    assert printed.count("a blocks:") == 1 and "CPU 0,1" in printed


def test_rank_reducing_and_rank_preserving_maps(nb):
    (ans, expected), printed = run_printing(nb.check_vmap_cell)
    xs = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(_np(ans), np.einsum("ij,ij->i", xs, xs))
    (ans, expected), printed2 = run_printing(nb.check_shmap_cell)
    y = np.arange(32).reshape(8, 4)
    np.testing.assert_array_equal(_np(ans), np.concatenate([blk.T @ blk for blk in np.split(y, 4)]))
    assert printed.strip() == "True" and printed2.strip() == "True"


def test_in_specs_split_and_tile(nb):
    out, printed = run_printing(nb.in_specs_cells)
    x = np.arange(144).reshape(12, 12)
    assert out["shapes"] == [(3, 12), (3, 6)] and printed.split() == ["(3,", "12)", "(3,", "6)"]
    # f1: each of the 2 devices along j returns the whole row block; out_specs P('i', 'j') concatenates both.
    np.testing.assert_array_equal(_np(out["y1"]), np.tile(x, (1, 2)))
    np.testing.assert_array_equal(_np(out["y2"]), x)


def test_out_specs_untile(nb):
    zs, printed = run_printing(nb.out_specs_untile_cells)
    x = np.array([[3.]])
    for z, reps in zip(zs, [(4, 2), (4, 1), (1, 1)]):
        np.testing.assert_array_equal(_np(z), np.tile(x, reps))


def test_psum_along_the_axes_out_specs_leave_out(nb):
    out, printed = run_printing(nb.psum_out_specs_cells)
    x = np.arange(144).reshape(12, 12)
    blocks = x.reshape(4, 3, 2, 6)  # (i, rows, j, cols)
    np.testing.assert_array_equal(_np(out["y3"]), blocks.sum(2).reshape(12, 6))
    np.testing.assert_array_equal(_np(out["y4"]), blocks.sum(0).reshape(3, 12))
    np.testing.assert_array_equal(_np(out["y5"]), blocks.sum((0, 2)))
    assert printed.split("\n")[:3] == ["(12, 6)", "(3, 12)", "(3, 6)"]


# ------------------------------------------------ check_vma ------------------------------------------------

def test_vma_cells(nb):
    out, printed = run_printing(nb.vma_cells)
    x = np.arange(6.)
    np.testing.assert_array_equal(_np(out["double_varying"]), 2 * x)
    np.testing.assert_array_equal(_np(out["double_invariant"]), 2 * x)
    np.testing.assert_array_equal(_np(out["psum"]), x[:3] + x[3:])          # the two devices' blocks summed
    np.testing.assert_array_equal(_np(out["psum_typed"]), x[:3] + x[3:])
    x2 = np.arange(32.).reshape(8, 4)
    np.testing.assert_array_equal(_np(out["psum_j"]), x2[:, :2] + x2[:, 2:])
    # The types the notebook's comments give (kiln prints JAX's float32 spelling, as jax.typeof's str does).
    assert [str(t) for t in out["types"]] == ["float32[3]{V:i}", "float32[3]", "float32[2,2]{V:(i,j)}",
                                              "float32[2,2]{V:i}", "float32[6]", "float32[6]{V:i}"]
    assert out["types"][5].manual_axis_type.varying == {"i"}
    # The out_specs bug is caught with check_vma=True: a ValueError naming the spec and the axis.
    err = out["out_specs_bug"]
    assert isinstance(err, ValueError) and "P()" in str(err) and "['i']" in str(err) and str(err) in printed
    assert out["pcast"] is None
    assert "shard_map" in str(out["jaxpr"]) and "mul" in str(out["jaxpr"])
    np.testing.assert_array_equal(_np(out["mul"]), x * np.tile(np.arange(3.), 2))


def test_scan_with_a_varying_and_an_unvarying_carry(nb):
    out, printed = run_printing(nb.scan_vma_cells)
    x, y = np.arange(6.), np.arange(3.)
    # README "Differences from JAX": kiln checks VMA types at the outputs, not through scan carries, so the
    # unfixed cell computes (two swaps give the carries back) where JAX raises; with pcast both agree.
    assert out["error"] is None
    for key in ("unfixed", "fixed"):
        x_, y_ = out[key]
        np.testing.assert_array_equal(_np(x_), x)
        np.testing.assert_array_equal(_np(y_), np.tile(y, 2))  # each device's y, concatenated by P('i')


# ------------------------------------------------ collectives ------------------------------------------------

X16 = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])


def _psum_ref(blocks):
    tot = sum(blocks)
    return [tot] * len(blocks)


def _psum_scatter_ref(blocks):  # tiled
    tot = sum(blocks)
    tot = tot.reshape(len(blocks), -1, *tot.shape[1:])
    return [tot[i] for i in range(tot.shape[0])]


def _ppermute_ref(blocks, perm):
    results = [np.zeros_like(blocks[0])] * len(blocks)
    for src, dst in perm:
        results[dst] = blocks[src]
    return results


def _all_to_all_ref(blocks):  # tiled, split_axis = concat_axis = 0
    splits = [np.array_split(x, len(blocks)) for x in blocks]
    return [np.concatenate(s) for s in zip(*splits)]


def test_psum_cells(nb):
    out, printed = run_printing(nb.psum_cells)
    np.testing.assert_array_equal(_np(out["f1"]), _psum_ref(np.split(X16, 4))[0])
    x = np.arange(16).reshape(4, 4)
    b = [np.split(r, 2, axis=1) for r in np.split(x, 2)]  # b[i][j]: device (i, j)'s block
    np.testing.assert_array_equal(_np(out["f2"]), np.concatenate([b[0][j] + b[1][j] for j in range(2)], axis=1))
    np.testing.assert_array_equal(_np(out["f3"]), sum(b[i][j] for i in range(2) for j in range(2)))
    assert "FINAL RESULT:\n [22 20 12 17]" in printed


def test_gather_scatter_permute_and_all_to_all_cells(nb):
    out, printed = run_printing(nb.gather_scatter_permute_cells)
    x4 = np.array([3, 9, 5, 2])
    np.testing.assert_array_equal(_np(out["f4"]), np.concatenate([np.concatenate(np.split(x4, 4))] * 4))
    np.testing.assert_array_equal(_np(out["f5"]), np.concatenate([np.stack(np.split(x4, 4))] * 4))
    np.testing.assert_array_equal(_np(out["f6"]), np.concatenate(_psum_scatter_ref(np.split(X16, 4))))
    np.testing.assert_array_equal(_np(out["f7"]),
                                  np.concatenate(_ppermute_ref(np.split(np.arange(8), 4),
                                                               [(i, (i + 1) % 4) for i in range(4)])))
    # f8: the notebook's psum_scatter written with ppermutes gives psum_scatter's numbers.
    np.testing.assert_array_equal(_np(out["f8"]), _np(out["f6"]))
    np.testing.assert_array_equal(_np(out["f9"]), np.concatenate(_all_to_all_ref(np.split(X16, 4))))
    assert printed.count("FINAL RESULT:") == 6


def test_collective_matmuls(nb):
    out, printed = run_printing(nb.matmul_cells)
    want = _np(out["lhs"]).astype(np.float64) @ _np(out["rhs"]).astype(np.float64)
    for name in ("allgather", "allgather_overlapped", "allgather_overlapped_bidi", "psumscatter",
                 "psumscatter_overlapped", "psumscatter_overlapped_bidi"):
        np.testing.assert_allclose(_np(out[name]), want, rtol=1e-5, atol=1e-5, err_msg=name)
        assert out[name].sharding.is_equivalent_to(NamedSharding(out["lhs"].sharding.mesh, P("i", None)), 2), name
    assert printed.split() == ["True"] * 6


# ------------------------------------------------ neural networks ------------------------------------------------


@pytest.fixture(scope="module")
def net(nb):
    (params, batch), _ = run_printing(nb.init_cell, SIZES, BATCH)
    host = ([(_np(w), _np(b)) for w, b in params], (_np(batch[0]), _np(batch[1])))
    return params, batch, host


def _close_grads(got, want, tol=2e-4):
    for (gw, gb), (ww, wb) in zip(got, want):
        np.testing.assert_allclose(_np(gw), ww, rtol=tol, atol=tol)
        np.testing.assert_allclose(_np(gb), wb, rtol=tol, atol=tol)


def test_numpy_backprop_oracle_matches_finite_differences(net):
    _, _, (params, batch) = net
    params = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    _, grads = mlp_forward_backward(params, batch)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for layer in (0, 2, 3):
        for which in (0, 1):
            p = params[layer][which]
            idx = tuple(rng.integers(0, n) for n in p.shape)
            plus = [[v.copy() for v in wb] for wb in params]
            minus = [[v.copy() for v in wb] for wb in params]
            plus[layer][which][idx] += eps
            minus[layer][which][idx] -= eps
            fd = (mlp_forward_backward(plus, batch)[0] - mlp_forward_backward(minus, batch)[0]) / (2 * eps)
            np.testing.assert_allclose(grads[layer][which][idx], fd, rtol=1e-6, atol=1e-9)


def test_data_parallel(nb, net):
    params, batch, host = net
    (out, _, _), printed = run_printing(nb.data_parallel_cells, params, batch)
    loss, grads = mlp_forward_backward(*host)
    np.testing.assert_allclose(float(out["loss"]), loss, rtol=1e-5)
    np.testing.assert_allclose(float(out["loss_dp"]), loss, rtol=1e-5)
    _close_grads(out["grad"], grads)
    assert printed.split()[-1] == "True"


def test_fully_sharded_data_parallel(nb, net):
    params, batch, host = net
    (out, params_s, _), printed = run_printing(nb.fsdp_cells, params, batch)
    loss, grads = mlp_forward_backward(*host)
    np.testing.assert_allclose(float(out["loss_fsdp"]), loss, rtol=1e-5)
    _close_grads(out["grad"], grads)  # the gradient of the fragments: the whole gradient, laid out in 4 blocks
    assert params_s[0][0].sharding.spec == P("batch") and printed.split()[-1] == "True"


def test_tensor_parallel(nb, net):
    params, batch, host = net
    (loss_tp, params_s, batch_s), _ = run_printing(nb.tp_cells, params, batch)
    loss, grads = mlp_forward_backward(*host)
    mesh = params_s[0][0].sharding.mesh
    try:
        kiln.set_mesh(mesh)  # as the notebook leaves it in context
        np.testing.assert_allclose(float(kiln.jit(loss_tp)(params_s, batch_s)), loss, rtol=1e-5)
        _close_grads(kiln.jit(kiln.grad(loss_tp))(params_s, batch_s), grads)
    finally:
        kiln.set_mesh(None)


def test_fsdp_and_tensor_parallel(nb, net):
    params, batch, host = net
    (out, _, _), printed = run_printing(nb.fsdp_tp_cells, params, batch)
    loss, grads = mlp_forward_backward(*host)
    np.testing.assert_allclose(float(out["loss_fsdp_tp"]), loss, rtol=1e-5)
    _close_grads(out["grad"], grads)
    assert printed.split()[-1] == "True"


def test_spmd_pipeline(nb, net):
    params, batch, host = net
    out, printed = run_printing(nb.pipeline_cells, params, batch, BATCH)
    loss, grads = mlp_forward_backward(*host)
    assert printed.startswith("2 stages, 1 layer(s) per stage, 2 pipelined layers total\n"
                              "8 examples per microbatch, 4 microbatches total\n")
    np.testing.assert_allclose(float(out["loss_pp"]), loss, rtol=1e-5)
    (g_first, (g_ws, g_bs), g_last) = out["grad"]
    _close_grads([g_first, g_last], [grads[0], grads[-1]])
    np.testing.assert_allclose(_np(g_bs), np.stack([b for _, b in grads[1:-1]]), rtol=2e-4, atol=2e-4)
    # The notebook only asks that the gradient not crash: the pipeline's bubbles start from NaN (zeros * nan), and
    # the inner weights' cotangent x.T @ ct multiplies them by zeros, so entries come out NaN (JAX's do too); the
    # finite ones are the gradient's.
    g_ws, want = _np(g_ws), np.stack([w for w, _ in grads[1:-1]])
    finite = np.isfinite(g_ws)
    np.testing.assert_allclose(g_ws[finite], want[finite], rtol=2e-4, atol=2e-4)


@pytest.mark.xfail(strict=True, reason="kiln difference (README, mesh axes): JAX 0.10's make_mesh makes "
                                       "Explicit axes, whose shard_map results carry out_specs in their types, so its "
                                       "jit returns P('i', None); kiln's axes are Auto, and for a NumPy argument the "
                                       "spec read back from the program is P('i',) (as JAX's on an Auto mesh; a "
                                       "committed argument laid out so gives P('i', None) in both)")
def test_jitted_shard_map_result_keeps_the_stated_out_specs():
    mesh = kiln.make_mesh((4,), ("i",))
    f = kiln.jit(kiln.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None)))
    assert f(np.ones((8, 4), np.float32)).sharding.spec == P("i", None)
