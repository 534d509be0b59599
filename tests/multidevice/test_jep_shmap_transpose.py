"""JAX's design document docs/jep/17111-shmap-transpose.md (efficient transposition of psum and all_gather under
shard_map), ported to kiln (tests/examples/jax_ported/jep_shmap_transpose.py), on 8 CPU devices.

Every block's function is checked against NumPy on the global arrays (the blocks' sums, concatenations and
gathers written out), and so are their transposes (``linear_transpose``, which is exact for these linear maps):
the page's "currently we get" and "using device variance types" transposes give the numbers of the transposes kiln
computes, with ``check_vma`` on (JAX's default, the page's proposal) and off (the page's "currently"). The table of
device variance types is checked against kiln.typeof (``f32[3]{V:(i,j)}`` ...), and its Transpose column against
NumPy. With check_vma on, kiln's transposition is typed as JAX's (frontend/ad/varying_transpose.py): the
transposes communicate only where the page says they need to, and transposes taken inside a body (psum's,
pbroadcast's, all_gather_invariant's) have the typed values. Compared with JAX in
tests/examples/test_jep_shmap_transpose_against_jax.py.
"""
from __future__ import annotations

import contextlib
import importlib.util
import pathlib
from functools import partial

import numpy as np
import pytest
from ported_pages import collectives as _collectives

import kiln
from kiln.sharding import Mesh

PORT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "jax_ported" / "jep_shmap_transpose.py"
N = 8  # devices along 'i'
RNG = np.random.default_rng(17111)


@pytest.fixture(scope="module")
def nb():
    spec = importlib.util.spec_from_file_location("jax_ported_jep_shmap_transpose", PORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def in_context(nb):
    """The examples' mesh (8 devices along 'i') in context, as the page assumes."""
    mesh = nb.mesh_cell()

    @contextlib.contextmanager
    def ctx():
        with kiln.set_mesh(mesh):
            yield
    return ctx


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _T(f, *primals):
    """The transpose of a linear f of one argument, as a function of the cotangent (the page's `t`)."""
    return lambda ct: kiln.linear_transpose(f, *primals)(ct)[0]


def _close(got, want, rtol=2e-6, atol=2e-6):
    got = np.asarray(got)
    assert got.shape == np.shape(want) and got.dtype == np.float32, (got.shape, got.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _blocks(x):
    return np.split(np.asarray(x, np.float64), N)


# ------------------------------------------------ Motivation: the loss -----------------------------------------------

def test_loss_example(nb):
    loss = nb.loss_cell()
    params, inputs, targets = _f32(4, 2), _f32(16, 4), _f32(16, 2)
    r = inputs.astype(np.float64) @ params - targets
    # pmean of the per-device means of the row sums: the mean over all rows
    _close(loss(params, (inputs, targets)), np.mean(r.sum(-1)))
    dp, (dx, dt) = kiln.grad(loss, argnums=(0, 1))(params, (inputs, targets))
    _close(dp, np.repeat(inputs.astype(np.float64).mean(0)[:, None], 2, 1))
    _close(dx, np.repeat(params.astype(np.float64).sum(1)[None, :], 16, 0) / 16)
    _close(dt, np.full((16, 2), -1 / 16))


def test_loss_gradient_communicates_once_backward(nb):
    loss = nb.loss_cell()
    params, batch = _f32(4, 2), (_f32(16, 4), _f32(16, 2))
    assert _collectives(kiln.make_jaxpr(kiln.grad(loss))(params, batch)) == {"psum": 2}


# ------------------------------------------------ the examples' values -----------------------------------------------

X, Y, YBAR = _f32(24, 4), _f32(24, 4), _f32(3, 4)  # blocks f32[3,4]
X8, Y5 = _f32(8), _f32(64, 1)                       # Examples 4 and 5: x:f32[1]{i}, y:f32[8,1]{i}
SHMAPS = {"check_vma": kiln.shard_map, "no_check_vma": partial(kiln.shard_map, check_vma=False)}


@pytest.mark.parametrize("which", list(SHMAPS))
def test_example1(nb, in_context, which):
    with in_context():
        f1, efficient, current = nb.example1_cells(SHMAPS[which])
        _close(f1(X), 2 * sum(_blocks(X)))
        t1 = _T(f1, X)
        want = np.tile(2 * YBAR, (N, 1))  # each device's block: t(g)(ybar), once (not 8 times)
        for got in (t1(YBAR), efficient(YBAR), current(YBAR)):
            _close(got, want)
        _close(_T(t1, YBAR)(X), 2 * sum(_blocks(X)))  # t(t(f1)) is f1


@pytest.mark.parametrize("which", list(SHMAPS))
def test_example2(nb, in_context, which):
    with in_context():
        f2, current = nb.example2_cells(SHMAPS[which])
        s = 2 * sum(_blocks(X))
        _close(f2(X, Y), np.concatenate([s * b for b in _blocks(Y)]), rtol=1e-5)
        zbar = _f32(24, 4)
        want = np.tile(2 * sum(z * b for z, b in zip(_blocks(zbar), _blocks(Y))), (N, 1))
        _close(_T(lambda v: f2(v, Y), X)(zbar), want, rtol=1e-5)
        _close(current(Y, zbar), want, rtol=1e-5)


@pytest.mark.parametrize("which", list(SHMAPS))
def test_example3_cursed_identity(nb, in_context, which):
    with in_context():
        cursed, t_cursed, t_t_cursed = nb.example3_cells(SHMAPS[which])
        t3 = _T(cursed, YBAR)
        for got in (cursed(YBAR), t3(YBAR), _T(t3, YBAR)(YBAR), t_cursed(YBAR), t_t_cursed(YBAR)):
            _close(got, YBAR)


def test_example4(nb, in_context):
    with in_context():
        f4, t_f4 = nb.example4_cells(SHMAPS["no_check_vma"])
        _close(f4(X8), X8[:, None])
        ybar = _f32(8, 1)
        for got in (_T(f4, X8)(ybar), t_f4(ybar)):
            _close(got, ybar[:, 0])
        _close(nb.f4_better_cell()(X8), X8)
        # with check_vma, all_gather's result varies along 'i' (the table): out_specs P() is refused, as JAX does
        f4, _ = nb.example4_cells()
        with pytest.raises(ValueError) as e:
            f4(X8)
        assert "promises the value is the same along mesh axes ['i'], but it may differ along ['i']" in str(e.value)
        assert "check_vma=False" in str(e.value)


def test_example5(nb, in_context):
    with in_context():
        f5, t_f5 = nb.example5_cells()
        _close(f5(X8, Y5), np.tile(X8[:, None], (N, 1)) * Y5)
        zbar = _f32(64, 1)
        want = sum(z * y for z, y in zip(np.split(zbar, N), np.split(Y5, N)))[:, 0]  # psum_scatter of zbar * y
        _close(_T(lambda v: f5(v, Y5), X8)(zbar), want, rtol=1e-5)
        _close(t_f5(Y5, zbar), want, rtol=1e-5)


def test_full_solution_blocks(nb, in_context):
    with in_context():
        t_f1, f2, t_f2_0, t_cursed, t_t_cursed, f4 = nb.full_solution_cells()
        _close(t_f1(YBAR), np.tile(2 * YBAR, (N, 1)))
        _close(_T(t_f1, YBAR)(X), 2 * sum(_blocks(X)))  # "t(t(f1)) == f1"
        s = 2 * sum(_blocks(X))
        _close(f2(X, Y), np.concatenate([s * b for b in _blocks(Y)]), rtol=1e-5)
        zbar = _f32(24, 4)
        _close(t_f2_0(Y, zbar), np.tile(2 * sum(z * b for z, b in zip(_blocks(zbar), _blocks(Y))), (N, 1)),
               rtol=1e-5)
        _close(t_cursed(YBAR), YBAR)
        _close(t_t_cursed(YBAR), YBAR)
        _close(f4(X8), X8[:, None])
        ybar = _f32(8, 1)
        _close(_T(f4, X8)(ybar), ybar[:, 0])  # pscatter: each device's row


# ------------------------------------------------ the transposes' collectives ---------------------------------------

def _programs(nb, shmap):
    """name -> the jaxpr of a transpose the page discusses."""
    f1, *_ = nb.example1_cells(shmap)
    f2, _ = nb.example2_cells(shmap)
    cursed, *_ = nb.example3_cells(shmap)
    f5, _ = nb.example5_cells(shmap)
    t1, t3 = _T(f1, X), _T(cursed, YBAR)
    out = {"t(f1)": kiln.make_jaxpr(t1)(YBAR), "t(t(f1))": kiln.make_jaxpr(_T(t1, YBAR))(X),
           "t(f2, 0)": kiln.make_jaxpr(_T(lambda v: f2(v, Y), X))(Y),
           "t(cursed_identity)": kiln.make_jaxpr(t3)(YBAR),
           "t(t(cursed_identity))": kiln.make_jaxpr(_T(t3, YBAR))(YBAR),
           "t(f5, 0)": kiln.make_jaxpr(_T(lambda v: f5(v, Y5), X8))(Y5),
           "t(f4_better)": kiln.make_jaxpr(_T(nb.f4_better_cell(shmap), X8))(X8)}
    if shmap is SHMAPS["no_check_vma"]:
        f4, _ = nb.example4_cells(shmap)
    else:
        *_, f4 = nb.full_solution_cells(shmap)  # all_gather_invariant: all_gather's result cannot be P()
    out["t(f4)"] = kiln.make_jaxpr(_T(f4, X8))(_f32(8, 1))
    return {k: _collectives(v) for k, v in out.items()}


# What JAX 0.10.2 runs: with check_vma=False the page's "currently we get" (Examples 1 and 3 communicate, and the
# cursed identity's transposes grow); with check_vma=True the page's proposal ("Efficiency achieved!").
CURRENT = {"t(f1)": {"psum": 1}, "t(t(f1))": {"psum": 2}, "t(f2, 0)": {"psum": 1}, "t(cursed_identity)": {"psum": 1},
           "t(t(cursed_identity))": {"psum": 2}, "t(f5, 0)": {"psum_scatter": 1}, "t(f4_better)": {},
           "t(f4)": {"psum_scatter": 1}}
TYPED = {"t(f1)": {}, "t(t(f1))": {"psum": 1}, "t(f2, 0)": {"psum": 1}, "t(cursed_identity)": {},
         "t(t(cursed_identity))": {}, "t(f5, 0)": {"psum_scatter": 1}, "t(f4_better)": {}, "t(f4)": {}}


@pytest.fixture(scope="module")
def programs(nb, in_context):
    with in_context():
        return {which: _programs(nb, shmap) for which, shmap in SHMAPS.items()}


@pytest.mark.parametrize("name", list(CURRENT))
def test_transposes_without_check_vma_communicate_as_the_page_says(programs, name):
    assert programs["no_check_vma"][name] == CURRENT[name]


@pytest.mark.parametrize("name", list(TYPED))
def test_transposes_with_check_vma_communicate_only_where_needed(programs, name):
    assert programs["check_vma"][name] == TYPED[name]


# ------------------------------------------------ the table ---------------------------------------------------------

def test_device_variance_types_of_the_table(nb, in_context):
    mesh_ij = Mesh(np.array(kiln.devices()).reshape(4, 2), ("i", "j"))
    x_ij, x3, x16, x2 = _f32(24), _f32(3), _f32(128), _f32(16)
    with in_context():
        types, values = nb.device_variance_table_cells(mesh_ij)(x_ij, x3, x16, x2)
    # the Example column, as kiln.typeof prints it: f32[3]{i,j} -> f32[3]{j}, ...
    assert types == [("float32[3]{V:(i,j)}", "float32[3]{V:j}"),  # psum over i
                     ("float32[3]", "float32[3]{V:i}"),            # pbroadcast: invariant -> varying
                     ("float32[16]{V:i}", "float32[16]{V:i}"),      # all_to_all
                     (None, "int32[]{V:i}"),                        # axis_index
                     ("float32[16]{V:i}", "float32[2]{V:i}"),       # psum_scatter
                     ("float32[2]{V:i}", "float32[16]{V:i}"),       # all_gather: a varying result
                     ("float32[2]{V:i}", "float32[16]")]            # all_gather_invariant
    psum_ij, (pb, a2a, idx, ps, ag, agi) = values
    blocks = x_ij.reshape(4, 2, 3)  # device (i, j)'s block
    _close(psum_ij, blocks.sum(0).reshape(6))
    _close(pb, np.tile(x3, (N, 1)))
    b16 = x16.reshape(N, 16)  # device d's block; all_to_all: device d gets the d-th pieces of every block
    _close(a2a, np.stack([b16[:, 2 * d:2 * d + 2].reshape(16) for d in range(N)]))
    np.testing.assert_array_equal(np.asarray(idx), np.arange(N)[:, None])
    _close(ps, np.stack([b16[:, 2 * d:2 * d + 2].sum(0) for d in range(N)]), rtol=1e-5)
    _close(ag, np.tile(x2, (N, 1)))
    _close(agi, np.tile(x2, (N, 1)))


@pytest.fixture(scope="module")
def table_transposes(nb, in_context):
    x, w, ct_varying, ct_invariant = _f32(16), _f32(2), _f32(128), _f32(16)
    with in_context():
        outs = nb.table_transposes_cell()(x, w, ct_varying, ct_invariant)
    return outs, (x, ct_varying.reshape(N, 16), ct_invariant)


def _want_psum(x, cv, ci):          # psum's transpose is pbroadcast: each device's cotangent, unchanged
    return np.tile(ci[:2], (N, 1))


def _want_pbroadcast(x, cv, ci):    # pbroadcast's is psum: the sum of the devices' cotangents
    return np.tile(cv[:, :2].sum(0), (N, 1))


def _want_all_gather(x, cv, ci):    # all_gather's is psum_scatter: device d gets the sum of the d-th pieces
    return np.stack([cv[:, 2 * d:2 * d + 2].sum(0) for d in range(N)])


def _want_psum_scatter(x, cv, ci):  # psum_scatter's is all_gather: the cotangent (x here) gathered on every device
    return np.tile(x, (N, 1))


def _want_pscatter(x, cv, ci):      # all_gather_invariant's is pscatter: device d's piece of the invariant cotangent
    return ci.reshape(N, 2)


ROWS = [("psum", _want_psum, "psum's transpose is pbroadcast (JAX: each device keeps its cotangent; kiln: 8x it)"),
        ("pbroadcast", _want_pbroadcast, "pbroadcast's transpose is psum (JAX: the sum; kiln: each device's own)"),
        ("all_gather", _want_all_gather, None), ("psum_scatter", _want_psum_scatter, None),
        ("all_gather_invariant", _want_pscatter,
         "all_gather_invariant's transpose is pscatter (JAX: a slice; kiln: psum_scatter, 8x it)")]


@pytest.mark.parametrize("row", [pytest.param(i, id=name) for i, (name, _, _) in enumerate(ROWS)])
def test_transpose_column_of_the_table(table_transposes, row):
    outs, arrays = table_transposes
    _close(outs[row], ROWS[row][1](*arrays), rtol=1e-5)
