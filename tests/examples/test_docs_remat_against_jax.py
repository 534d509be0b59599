"""JAX's docs page docs/new_docs/301/remat.md under kiln and under JAX (with the page's ``jax_remat3``) saves the same
residuals and gives the same numbers (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_remat.py; the JAX side is the same source with JAX's imports put back,
run with ``jax_remat3`` on as the page sets it (and reset afterwards: the flag is process-wide). The closed-form and
finite-difference oracles are in test_docs_remat.py; this checks that the two libraries agree: every
``print_saved_residuals`` listing, text for text (dtypes, shapes, where each residual comes from, function names and
line:column; the file's path aside), the work of ``print_fwd_bwd``'s forward and backward jaxprs (sin, cos and
dot_general equations) and its saved values, the values, dtypes, weak types and containers of every gradient, to
float32 rounding, and the exception the page's ``jax.vjp(h)(y)`` raises.
Differences, tested as such:
- JAX 0.10.2's remat3 wrapper is a ``functools.partial``: its listings name a checkpointed function's arguments
  ``args[0]``...; kiln's wrapper keeps the function's signature (``W1``, as JAX after 0.10.2 does with
  ``functools.wraps``).
- JAX 0.10.2's remat3 saves nothing under ``everything_saveable`` (the page: "as if no policy were given") and
  under the offloading policy (it recomputes 'y' and 'z' too); JAX's earlier
  implementation (``jax_remat3`` off) saves everything under the first, and 'y' and 'z' under the second (offloading
  'z' to host memory), as the page describes and as kiln saves them ('z' in device memory, README): compared with
  that one.
- the vjp function's leaves: JAX 0.10.2's remat3 closes over a checkpoint's saved values (the value named 'a' is no
  leaf), and folds the Python scalar 3. of the recursive example into its jaxpr; kiln's leaves have both.
- ``jax.custom_remat`` and ``jax.checkpoint_policies.SaveOnlyTheseNames`` exist in neither library (JAX 0.10.2 keeps
  its custom_remat private): both raise AttributeError (test_docs_remat.py has the strict xfails).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import count_primitives, load  # noqa: E402
from same_as_jax import assert_same, outcome, quiet  # noqa: E402

import kiln  # noqa: E402

CELLS = ["residuals_cell", "f2_residuals_cell", "f4_residuals_cell", "fwd_bwd_cells", "policies_cells",
         "offload_cell", "custom_remat_cell", "policy_aware_custom_remat_cell", "chain_compose_8_cell",
         "chain_compose_16_cell", "recursive_checkpoint_8_cell", "recursive_checkpoint_16_cell", "chain_fwd_bwd_cell",
         "recursive_fwd_bwd_cell"]


@pytest.fixture(scope="module")
def run():
    """(kiln's port, JAX's port, {cell: ((kiln's return, printed), (JAX's, printed))}, check(fn)): every cell run in
    the page's order with jax_remat3 on; ``check(fn)`` runs fn(k, j) with it on again (the flag is reset after each)."""
    import warnings
    before = jax.config.jax_remat3
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k = load("docs_remat")
        j = load("docs_remat", "jax")  # (sets jax_remat3, as the page does)
        outs = {name: (outcome(getattr(k, name)), outcome(getattr(j, name))) for name in CELLS}
    finally:
        jax.config.update("jax_remat3", before)

    def check(fn):
        try:
            jax.config.update("jax_remat3", True)
            return fn(k, j)
        finally:
            jax.config.update("jax_remat3", before)
    return k, j, outs, check


def _located(text):
    """A listing with ``from /path/file.py:`` as ``from FILE:`` (the lines and columns are the same)."""
    return re.sub(r"from \S+?\.py:", "from FILE:", text)


def _unnamed(text):
    """A listing with the arguments' names as JAX 0.10.2's remat3 prints them: args[i], in order."""
    lines, i = [], 0
    for line in text.splitlines():
        m = re.match(r"(\S+) from the argument (\w+)(.*)$", line)
        if m:
            line = f"{m.group(1)} from the argument args[{i}]{m.group(3)}" if "args[" not in line else line
            i += not m.group(3)
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("cell", ["residuals_cell", "f2_residuals_cell", "chain_compose_8_cell",
                                  "chain_compose_16_cell", "recursive_checkpoint_8_cell",
                                  "recursive_checkpoint_16_cell"])
def test_listings(run, cell):
    (_, k_text), (_, j_text) = run[2][cell]
    assert k_text.strip() and _located(k_text) == _located(j_text)


def test_listing_of_a_checkpointed_function(run):
    (_, k_text), (_, j_text) = run[2]["f4_residuals_cell"]
    assert "from the argument W1" in k_text and "from the argument args[0]" in j_text
    assert _unnamed(_located(k_text)) == _located(j_text).strip()


def test_the_policies_the_page_names(run):
    k, j, _, check = run
    x = [np.ones(s, np.float32) for s in ((5, 4), (6, 5), (7, 6), (4,))]

    def listing(lib, page, policy):
        return _located(quiet(page.print_saved_residuals, lib.checkpoint(page.f, policy=policy), *x)[1])

    for name in ("nothing_saveable", "dots_with_no_batch_dims_saveable"):
        k_text = listing(kiln, k, getattr(kiln.checkpoint_policies, name))
        j_text = check(lambda k, j: listing(jax, j, getattr(jax.checkpoint_policies, name)))
        assert _unnamed(k_text) == j_text.strip()
    # everything_saveable: "the default behavior as if no policy were given"; JAX 0.10.2's remat3 saves nothing (its
    # CheckpointName alone reads that policy), its earlier implementation saves everything, as kiln
    k_text = listing(kiln, k, kiln.checkpoint_policies.everything_saveable)
    j_remat3 = check(lambda k, j: listing(jax, j, jax.checkpoint_policies.everything_saveable))
    assert _unnamed(k_text) != j_remat3.strip() and j_remat3.count("\n") == 4  # the four arguments only
    assert k_text == listing(jax, j, jax.checkpoint_policies.everything_saveable)  # (jax_remat3 off)


def test_policies(run):
    (k_res, k_text), (j_res, j_text) = run[2]["policies_cells"]
    k_first, k_second = _located(k_text).splitlines()[:9], _located(k_text).splitlines()[9:]
    j_first, j_second = _located(j_text).splitlines()[:9], _located(j_text).splitlines()[9:]
    assert k_first == j_first
    # (JAX 0.10.2's remat3: args[0][0] ... for params[0] ...)
    assert [re.sub(r"from the argument \S+", "ARG", line) for line in k_second] == \
        [re.sub(r"from the argument \S+", "ARG", line) for line in j_second]
    assert "from the argument params[0]" in k_second[0] and "from the argument args[0][0]" in j_second[0]
    rng = np.random.default_rng(2)
    params = [rng.normal(size=(4, 4)).astype(np.float32) for _ in range(3)]
    x, y = rng.normal(size=4).astype(np.float32), rng.normal(size=4).astype(np.float32)

    def grads(k, j):
        out = []
        for lib, res in ((kiln, k_res), (jax, j_res)):
            for name in ("loss", "loss_checkpoint"):
                out.append(lib.value_and_grad(res[name], (0, 1, 2))([lib.numpy.asarray(p) for p in params],
                                                                   lib.numpy.asarray(x), lib.numpy.asarray(y)))
        return out
    kl, kc, jl, jc = run[3](grads)
    assert_same(kl, jl, rtol=2e-6, atol=1e-6)
    assert_same(kc, jc, rtol=2e-6, atol=1e-6)


def _work(jaxpr):
    return dict(count_primitives(jaxpr, names={"sin": "sin", "cos": "cos", "dot_general": "dot"}))


def test_print_fwd_bwd(run):
    ((k_plain, k_named), k_text), ((j_plain, j_named), j_text) = run[2]["fwd_bwd_cells"]
    assert k_text.count("computation:") == j_text.count("computation:") == 4
    for kr, jr in ((k_plain, j_plain), (k_named, j_named)):
        assert (_work(kr[0]), _work(kr[1])) == (_work(jr[0]), _work(jr[1]))
    assert_same(k_plain[2], j_plain[2], 0.0, 0.0)  # the saved values, bit for bit
    # JAX's remat3 closes over the value named 'a' (a constant of its backward jaxpr): kiln's fifth leaf
    assert_same(k_named[2][:4], j_named[2], 0.0, 0.0) and len(k_named[2]) == 5
    for cell in ("chain_fwd_bwd_cell", "recursive_fwd_bwd_cell"):
        (kr, _), (jr, _) = run[2][cell]
        assert (_work(kr[0]), _work(kr[1])) == (_work(jr[0]), _work(jr[1]))
        if cell.startswith("chain"):
            assert_same(kr[2], jr[2], 0.0, 0.0)
        else:  # kiln's leaves: x = 3. first, then the saved values; JAX's jaxpr folds the Python scalar in
            assert len(kr[2]) == len(jr[2]) + 1
            assert_same(kr[2][1:], jr[2], 0.0, 0.0)


def test_gradients_of_the_layers(run):
    rng = np.random.default_rng(1)
    args = [rng.normal(size=s).astype(np.float32) / 2 for s in ((5, 4), (6, 5), (7, 6), (4,))]
    ct = rng.normal(size=7).astype(np.float32)

    def both(k, j):
        out = []
        for name in ("f", "f2", "f4"):
            ky, k_vjp = kiln.vjp(getattr(k, name), *map(kiln.numpy.asarray, args))
            jy, j_vjp = jax.vjp(getattr(j, name), *map(jax.numpy.asarray, args))
            out.append(((ky, k_vjp(kiln.numpy.asarray(ct))), (jy, j_vjp(jax.numpy.asarray(ct)))))
            out.append((kiln.jit(kiln.grad(lambda *a: getattr(k, name)(*a).sum(), (0, 3)))(*args),
                        jax.jit(jax.grad(lambda *a: getattr(j, name)(*a).sum(), (0, 3)))(*args)))
        return out
    for kres, jres in run[3](both):
        assert_same(kres, jres, rtol=2e-6, atol=1e-6)


def test_fundamentals(run):
    k, j, _, check = run
    x = np.array([0.3, -1.2, 2.0], np.float32)

    def both(k, j):
        kF = k.fundamentals_cells(kiln.numpy.sin, lambda y: kiln.numpy.sum(kiln.numpy.tanh(y) ** 2))
        jF = j.fundamentals_cells(jax.numpy.sin, lambda y: jax.numpy.sum(jax.numpy.tanh(y) ** 2))
        kx, jx = kiln.numpy.asarray(x), jax.numpy.asarray(x)
        for name in ("f_grad_bad", "f_grad_bad2"):
            assert_same(kF[name](kx), jF[name](jx))
        for name in ("f_vjp", "f_vjp_checkpoint"):
            (kz, kb), (jz, jb) = kF[name](kx), jF[name](jx)
            assert_same((kz, kb(1.0)), (jz, jb(1.0)))
        for name in ("sin_vjp", "sin_vjp2"):
            (ky, kb), (jy, jb) = kF[name](kx), jF[name](jx)
            assert_same((ky, kb(kx)), (jy, jb(jx)))
        assert_same(kiln.grad(kF["f_checkpoint"])(kx), jax.grad(jF["f_checkpoint"])(jx))
        errors = [outcome(F["f_checkpoint_grad"], arg)[0] for F, arg in ((kF, kx), (jF, jx))]
        assert type(errors[0]) is type(errors[1]) is TypeError and str(errors[0]) == str(errors[1])
    check(both)


def test_offloading(run):
    k, j, outs, check = run
    ((k_policy, k_f), k_text), ((j_policy, j_f), j_text) = outs["offload_cell"]
    k_lines, j_lines = _located(k_text).splitlines(), _located(j_text).splitlines()
    assert k_lines[0] == j_lines[0]  # the printed gradient
    x = np.arange(4.0, dtype=np.float32)
    assert_same(check(lambda k, j: (kiln.grad(k_f)(x), kiln.jit(kiln.grad(k_f))(x))),
                check(lambda k, j: (jax.grad(j_f)(x), jax.jit(jax.grad(j_f))(x))))
    # JAX 0.10.2's remat3 recomputes everything under this policy; its earlier implementation keeps 'y' and offloads
    # 'z' to the host, as kiln saves them (in device memory)
    assert j_lines[1:] == ["f32[4] from the argument args[0]"]
    assert not jax.config.jax_remat3  # (the fixture reset it)
    (_, j_old_f), _ = quiet(j.offload_cell)
    j_old = _located(quiet(j.print_saved_residuals, j_old_f, x)[1]).splitlines()
    assert k_lines[1:3] == j_old[:2]  # x, and 'y' (named, from the same line and column)
    assert j_old[2] == "f32<host>[4] output of device_put from "
    assert re.fullmatch(r"f32\[4\] named 'z' from FILE:\d+:8 \(offload_cell.<locals>.f_offload\)", k_lines[3])


def test_custom_remat_is_missing_in_both(run):
    for cell in ("custom_remat_cell", "policy_aware_custom_remat_cell"):
        (k_err, k_text), (j_err, j_text) = run[2][cell]
        assert type(k_err) is type(j_err) is AttributeError and k_text == j_text == ""


def test_recursive_gradients(run):
    for depth in (8, 16):
        for cell in (f"chain_compose_{depth}_cell", f"recursive_checkpoint_{depth}_cell"):
            (kf, _), (jf, _) = run[2][cell]
            assert_same(kiln.value_and_grad(kf)(3.), run[3](lambda k, j: jax.value_and_grad(jf)(3.)))


def test_scan_over_layers(run):
    k, j, _, check = run
    x = np.array([1.0, -0.3], np.float32)

    def both(k, j):
        k_loop, j_loop = k.loop_net_cell(), j.loop_net_cell()
        kres, jres = k.scan_over_layers_cells(), j.scan_over_layers_cells()
        assert_same(kres[:3], jres[:3], 0.0, 0.0)  # params, all_weights, all_biases
        kx, jx = kiln.numpy.asarray(x), jax.numpy.asarray(x)
        assert_same(kiln.grad(lambda p, v: kiln.numpy.sum(k_loop(p, v)), (0, 1))(kres[0], kx),
                    jax.grad(lambda p, v: jax.numpy.sum(j_loop(p, v)), (0, 1))(jres[0], jx))
        for kn, jn in ((k.scan_over_layers_cells(False)[4], j.scan_over_layers_cells(False)[4]), (kres[4], jres[4])):
            assert_same(kiln.value_and_grad(lambda *a: kiln.numpy.sum(kn(*a)), (0, 1, 2))(kres[1], kres[2], kx),
                        jax.value_and_grad(lambda *a: jax.numpy.sum(jn(*a)), (0, 1, 2))(jres[1], jres[2], jx))
            assert (_located(quiet(k.print_saved_residuals, kn, kres[1], kres[2], kx)[1])
                    == _located(quiet(j.print_saved_residuals, jn, jres[1], jres[2], jx)[1]))
    check(both)
