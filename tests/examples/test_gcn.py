"""examples/gcn.py: the graph convolution against NumPy, dense ≡ sparse, and the script end to end."""
from __future__ import annotations

import importlib
import pathlib
import sys

import numpy as np
import pytest

import kiln
from kiln.experimental import sparse

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

pytest.importorskip("networkx")  # the graphs come from networkx (the kiln[examples] extra)
pytest.importorskip("scipy")


@pytest.fixture(scope="module")
def gcn():
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield importlib.import_module("gcn")
    finally:
        sys.path.remove(str(EXAMPLES))


# -- the model ------------------------------------------------------------------------------------

def test_normalized_adjacency_matches_numpy(gcn):
    import networkx as nx

    graph = nx.karate_club_graph()
    a = nx.to_numpy_array(graph, nodelist=sorted(graph.nodes), weight="weight") + np.eye(34)
    assert a.max() > 1  # networkx's karate club counts interactions
    d = a.sum(1) ** -0.5
    got = gcn.normalized_adjacency(graph, sorted(graph.nodes))
    np.testing.assert_allclose(got.toarray(), d[:, None] * a * d[None, :], rtol=1e-6)
    assert got.dtype == np.float32 and np.allclose(got.toarray(), got.toarray().T)


def test_gcn_forward_and_grad_dense_equals_sparse_equals_numpy(gcn):
    """Two convolutions, ReLU and log-softmax (no dropout) match NumPy; dense and BCOO adjacency give the
    same outputs and gradients, eagerly and under jit."""
    adj_sp, features, labels, idx_train, _, _ = gcn.karate_club(0)
    init_fun, apply_fun = gcn.GCN(nhid=8, nclass=2)
    out_shape, params = init_fun(kiln.random.PRNGKey(1), features.shape)
    assert out_shape == (34, 2) and params[0][1] is None and params[0][0].shape == (34, 8)
    (w1, _), (w2, _) = [(np.asarray(w, np.float64), b) for w, b in params]
    a = adj_sp.toarray().astype(np.float64)
    h = np.maximum(a @ (features @ w1), 0)
    logits = a @ (h @ w2)
    want = logits - np.log(np.exp(logits).sum(1, keepdims=True))

    dense, bcoo = adj_sp.toarray(), sparse.BCOO.from_scipy_sparse(adj_sp)
    jitted = kiln.jit(lambda p, x, adj: apply_fun(p, x, adj))
    for adj in (dense, bcoo):
        np.testing.assert_allclose(np.asarray(apply_fun(params, features, adj)), want, atol=1e-5)
        np.testing.assert_allclose(np.asarray(jitted(params, features, adj)), want, atol=1e-5)

    def loss(p, adj, rng):
        preds = apply_fun(p, features, adj, is_training=True, rng=rng)
        return -kiln.numpy.mean(preds[idx_train, labels[idx_train]])

    rng = kiln.random.PRNGKey(2)
    g_dense = kiln.jit(kiln.grad(loss))(params, dense, rng)
    g_sparse = kiln.jit(kiln.grad(loss))(params, bcoo, rng)
    for gd, gs in zip(kiln.tree_util.tree_leaves(g_dense), kiln.tree_util.tree_leaves(g_sparse)):
        np.testing.assert_allclose(np.asarray(gs), np.asarray(gd), rtol=1e-5, atol=1e-7)
    assert float(kiln.numpy.abs(g_dense[0][0]).sum()) > 0


def test_seed_sp_matmul_equals_bcoo(gcn):
    """Seed 003's own sparse product (gather rows, scale, ``kiln.ops.segment_sum``), written as in JAX,
    equals ``BCOO @ dense`` and the dense product, values and gradients, under jit."""
    import kiln.numpy as jnp

    def sp_matmul(A, B, shape):
        assert B.ndim == 2
        indexes, values = A
        rows, cols = indexes
        in_ = B.take(cols, axis=0)
        prod = in_ * values[:, None]
        return kiln.ops.segment_sum(prod, rows, shape)

    adj_sp = gcn.karate_club(0)[0].tocoo()
    seed_adj = ((jnp.asarray(adj_sp.row), jnp.asarray(adj_sp.col)), jnp.asarray(adj_sp.data))
    h = np.random.default_rng(0).standard_normal((34, 5)).astype(np.float32)
    want = adj_sp.toarray().astype(np.float64) @ h
    seed_out = kiln.jit(lambda a, h: sp_matmul(a, h, h.shape[0]))(seed_adj, h)
    bcoo_out = kiln.jit(lambda a, h: a @ h)(sparse.BCOO.from_scipy_sparse(adj_sp), h)
    np.testing.assert_allclose(np.asarray(seed_out), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(bcoo_out), want, rtol=1e-5, atol=1e-6)
    g_seed = kiln.jit(kiln.grad(lambda h: jnp.sum(jnp.sin(sp_matmul(seed_adj, h, 34)))))(h)
    g_bcoo = kiln.jit(kiln.grad(lambda h: jnp.sum(jnp.sin(sparse.BCOO.from_scipy_sparse(adj_sp) @ h))))(h)
    g_want = adj_sp.toarray().T.astype(np.float64) @ np.cos(want)
    np.testing.assert_allclose(np.asarray(g_seed), g_want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(g_bcoo), g_want, rtol=1e-4, atol=1e-5)


def test_gcn_dropout_needs_an_rng(gcn):
    init_fun, apply_fun = gcn.GCN(nhid=4, nclass=2)
    _, params = init_fun(kiln.random.PRNGKey(0), (5, 3))
    with pytest.raises(ValueError, match=r"GCN apply_fun: is_training=True needs rng=<a kiln.random key> for dropout"):
        apply_fun(params, np.ones((5, 3), np.float32), np.eye(5, dtype=np.float32), is_training=True)


def test_dropout_keeps_the_mean(gcn):
    x = np.ones((200, 50), np.float32)
    y = np.asarray(gcn.dropout(kiln.random.PRNGKey(3), x, 0.5, True))
    assert set(np.unique(y)) == {0.0, 2.0} and abs(y.mean() - 1) < 0.05
    assert gcn.dropout(None, x, 0.5, False) is x


# -- the script -----------------------------------------------------------------------------------







def leaves(path: pathlib.Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {name: f[name] for name in f.files if name != "__kiln_checkpoint__"}


def test_gcn_karate_dense_and_sparse_agree(gcn, runs, tmp_path):
    """The default run (karate club, 200 epochs) beats the floor; --sparse gives the same accuracy and
    nearly the same loss and parameters."""
    results = {}
    for mode in ("dense", "sparse"):
        if mode == "dense":  # as a program, as a user runs it
            proc = runs.script("gcn.py", "--out", str(tmp_path / mode))
        else:
            proc = runs.main(gcn, "--out", str(tmp_path / mode), "--sparse")
        assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        results[mode] = runs.summary(proc, "gcn")
        assert results[mode]["sparse"] == str(mode == "sparse") and results[mode]["epochs"] == "200"
        assert float(results[mode]["test_accuracy"]) >= 0.9
        assert (tmp_path / mode / "gcn.png").stat().st_size > 0
        assert "val_acc" in proc.stdout and "epochs 200/200" in proc.stdout
    assert results["dense"]["test_accuracy"] == results["sparse"]["test_accuracy"]
    assert abs(float(results["dense"]["test_loss"]) - float(results["sparse"]["test_loss"])) < 1e-3
    dense, bcoo = leaves(tmp_path / "dense" / "checkpoint.npz"), leaves(tmp_path / "sparse" / "checkpoint.npz")
    for name in dense:
        np.testing.assert_allclose(bcoo[name], dense[name], rtol=1e-3, atol=1e-4, err_msg=name)


def test_gcn_resume_continues_the_run(gcn, runs, tmp_path):
    """2 epochs + resume to 4 ≡ 4 epochs straight (dropout keys come from the epoch number)."""
    straight = runs.main(gcn, "--epochs", "4", "--sparse", "--no-plot", "--out", str(tmp_path / "straight"))
    first = runs.main(gcn, "--epochs", "2", "--sparse", "--no-plot", "--out", str(tmp_path / "split"))
    resumed = runs.main(gcn, "--epochs", "4", "--sparse", "--no-plot", "--out", str(tmp_path / "split"),
                       "--resume")
    for proc in (straight, first, resumed):  # 4 epochs are below the floor: exit 1, checkpoint written
        assert proc.returncode in (0, 1) and "summary: gcn" in proc.stdout, proc.stderr
    assert "resumed from" in resumed.stdout and "at epoch 2" in resumed.stdout
    a, b = leaves(tmp_path / "straight" / "checkpoint.npz"), leaves(tmp_path / "split" / "checkpoint.npz")
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-7, err_msg=name)
    assert runs.summary(straight, "gcn")["test_accuracy"] == runs.summary(resumed, "gcn")["test_accuracy"]
    other = runs.main(gcn, "--epochs", "6", "--hidden", "8", "--out", str(tmp_path / "split"), "--resume")
    assert other.returncode == 2 and "--resume: " in other.stderr and "does not match the model's" in other.stderr, \
        other.stderr


def test_gcn_synthetic_citation_graph(gcn, runs, tmp_path):
    proc = runs.main(gcn, "--dataset", "synthetic", "--sparse", "--epochs", "30", "--lr", "0.05",
                    "--out", str(tmp_path))
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "synthetic: 2708 nodes" in proc.stdout and "7 classes; 140 train / 500 val / 1000 test" in proc.stdout
    fields = runs.summary(proc, "gcn")
    assert fields["dataset"] == "synthetic" and float(fields["test_accuracy"]) >= 0.85


def test_gcn_script_bad_flags(gcn, runs, tmp_path):
    for args, message in [(("--epochs", "0"), "--epochs must be positive, got 0"),
                          (("--device", "99"), "--device 99 is out of range"),
                          (("--dropout", "1"), "--dropout must be in [0, 1), got 1.0"),
                          (("--hidden", "0"), "--hidden must be positive, got 0"),
                          (("--dataset", "cora"), "invalid choice: 'cora'"),
                          (("--resume",), "--resume: no checkpoint at")]:
        proc = runs.main(gcn, *args, "--out", str(tmp_path))
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
