"""JAX's docs page array_refs.md under kiln and under JAX (the against_jax session): the same values, dtypes, weak
types, printed text and error types, cell by cell.

The kiln side is tests/examples/jax_ported/array_refs.py; the JAX side is the same source with JAX's imports put
back. The NumPy and finite-difference oracles are in test_array_refs.py; this only checks that the two libraries
agree. Every array and ref a cell leaves in its locals (and the module's globals it sets) is compared: dtype,
shape, weak type and value (to float32 rounding); the printed text of the cells that print values (the buffer
addresses aside: only their equality before and after the in-place update); the types of the errors (kiln's are
instances of JAX's: ``RefError`` is a ``ValueError``; JAX raises a bare ``Exception`` for ``err5``), the messages
differing in wording. Where the two differ: the page was written for a later JAX than the installed 0.10.2, whose
``vjp`` cannot yet differentiate with respect to a ``Ref`` argument (its transpose raises "Expected cotangent type
Ref{float32[]} but got float32[]"): for those three cells kiln's gradient refs are compared with what JAX 0.10.2
gives for the same function of the ref's value (a ``with_refs`` gradient ref for a value argument, which it has), and
the cell that shows the missing-gradient-ref error raises a ValueError in both, for that different reason in JAX.
JAX 0.10.2 also accepts the page's ``err4`` (``freeze`` of a ref argument inside jit), which kiln refuses as the page
says. The sparse in-place update of the gradient ref in ``take``'s backward pass is JAX's, not yet kiln's (xfail).
JAX prints two refs without the weak type that reading them gives (``REPR_WITHOUT_WEAK_TYPE``), and under ``grad``
of the page's ``err6`` it raises after adding to the plumbing ref, which kiln leaves as it was.
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402

import kiln  # noqa: E402

RefType = {"kiln": kiln.Ref, "jax": jax.Ref}
ArrayType = {"kiln": kiln.Array, "jax": jax.Array}


def _run(lib):
    """cell name -> (its locals or the exception it raised, what it printed, {name: (dtype, weak, value)} of the
    refs among its locals and the module's globals right after it), the cells run once in the page's order."""
    nb = load("array_refs", lib)
    res = {}
    for cell in nb.CELLS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                local = cell()
            except Exception as e:  # JAX 0.10.2: the cells that differentiate with respect to a Ref
                local = e
        names = {**vars(nb), **(local if isinstance(local, dict) else {})}
        refs = {}
        for k, v in names.items():
            if isinstance(v, RefType[lib]):
                value = v[...]
                refs[k] = (value.dtype, value.weak_type, np.asarray(value))
        res[cell.__name__] = (local, buf.getvalue(), refs)
    return nb, res


@pytest.fixture(scope="module")
def both():
    """(kiln's module, kiln's cells, JAX's module, JAX's cells)."""
    k, kres = _run("kiln")
    j, jres = _run("jax")
    return k, kres, j, jres


JAX_LACKS = {"vjp_ref_arg_cell", "accumulate_cell", "inplace_update_cell"}  # vjp with respect to a Ref (see above)


def _same(a, b, rtol=1e-6, atol=1e-7):
    """Two arrays (kiln's, JAX's): dtype, shape, weak type and values."""
    assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("cell", [c.__name__ for c in load("array_refs").CELLS])
def test_cell_values_and_refs(both, cell):
    _, kres, _, jres = both
    (klocal, _, krefs), (jlocal, _, jrefs) = kres[cell], jres[cell]
    assert not isinstance(klocal, Exception), klocal
    if cell in JAX_LACKS:
        assert isinstance(jlocal, ValueError) and "Expected cotangent type Ref{float32[]}" in str(jlocal)
        return
    assert not isinstance(jlocal, Exception), jlocal
    arrays = [n for n, v in jlocal.items() if isinstance(v, jax.Array)]
    assert [n for n, v in klocal.items() if isinstance(v, kiln.Array)] == arrays
    for name in arrays:
        _same(klocal[name], jlocal[name])
    assert set(krefs) == set(jrefs)
    for name, (dtype, weak, value) in jrefs.items():
        assert krefs[name][:2] == (dtype, weak), name
        np.testing.assert_allclose(krefs[name][2], value, rtol=1e-6, atol=1e-7)


PRINTING = ["intro_cell", "grad_cell", "vmap_ref_args_cell", "grad_pure_cell", "stash_grads_use_cell", "value_arg_cell",
            "take_cell", "sparse_accumulate_cell", "dont_want_cell", "dont_want_dots_cell", "microbatches_check_cell",
            "foreach_cell"]


# JAX prints these refs without their weak type, which reading them shows (ref[...].weak_type is True in both: see
# test_cell_values_and_refs): its repr shows the buffer that the backward pass / the scan wrote back, kiln's the value.
REPR_WITHOUT_WEAK_TYPE = {"stash_grads_use_cell", "foreach_cell"}


@pytest.mark.parametrize("cell", PRINTING)
def test_printed_text(both, cell):
    _, kres, _, jres = both
    ktext = kres[cell][1]
    if cell in REPR_WITHOUT_WEAK_TYPE:
        assert ktext.count(", weak_type=True)") == 1
        ktext = ktext.replace(", weak_type=True)", ")")
    assert ktext == jres[cell][1]


def test_in_place_update_keeps_the_buffer_address(both):
    _, kres, _, jres = both
    for res in (kres, jres):
        lines = res["sin_inplace_cell"][1].splitlines()
        pointers = [int(line.split(" ", 1)[0]) for line in lines]
        assert pointers[0] == pointers[1]
    strip = lambda text: re.sub(r"^\d+ ", "", text, flags=re.M)  # noqa: E731
    assert strip(kres["sin_inplace_cell"][1]) == strip(jres["sin_inplace_cell"][1])


ERROR_CELLS = ["not_an_array_cell", "restrictions_cell", "vmap_closed_over_cell", "vjp_ref_arg_without_with_refs_cell"]


@pytest.mark.parametrize("cell", ERROR_CELLS)
def test_error_types(both, cell):
    _, kres, _, jres = both
    kraised, jraised = kres[cell][0]["raised"], jres[cell][0]["raised"]
    # kiln raises where JAX does (and for err4, which JAX 0.10.2 accepts), an instance of JAX's type
    assert set(jraised) <= set(kraised)
    for name, err in jraised.items():
        assert isinstance(kraised[name], type(err)), (name, type(kraised[name]), type(err))
    if cell == "restrictions_cell":
        assert set(kraised) - set(jraised) == {"err4"}


def test_functions_the_page_defines_but_does_not_call(both):
    _, kres, _, jres = both
    kl, jl = kres["impure_cell"][0], jres["impure_cell"][0]
    ka, kb = kiln.new_ref(kiln.numpy.zeros(3)), kiln.new_ref(kiln.numpy.arange(3.0))
    ja, jb = jax.new_ref(jax.numpy.zeros(3)), jax.new_ref(jax.numpy.arange(3.0))
    kl["impure1"](ka, kb)
    jl["impure1"](ja, jb)
    _same(ka[...], ja[...])
    kl["impure2"](7)
    jl["impure2"](7)
    _same(kl["y_ref"][...], jl["y_ref"][...])
    kp, jp = kres["pure_cell"][0]["pure1"], jres["pure_cell"][0]["pure1"]
    xs = np.array([0.5, -2.0, 3.0], np.float32)
    _same(kp(xs), jp(xs))
    _same(kiln.grad(kp)(1.5), jax.grad(jp)(1.5))
    _same(kiln.vmap(kp)(xs), jax.vmap(jp)(xs))
    kplumb, jplumb = kres["plumbing_cell"][0], jres["plumbing_cell"][0]
    kr, jr = kiln.new_ref(0.0), jax.new_ref(0.0)
    _same(kiln.grad(kplumb["foo"])(1.5, kr), jax.grad(jplumb["foo"])(1.5, jr))
    _same(kr[...], jr[...])
    errors = []
    for grad, err6, ref in ((kiln.grad, kplumb["err6"], kr), (jax.grad, jplumb["err6"], jr)):
        with pytest.raises(Exception) as info:
            grad(err6)(1.0, ref)
        errors.append(info.value)
    assert isinstance(errors[0], type(errors[1]))  # JAX: a bare Exception; kiln: a RefError (a ValueError)
    # (kiln leaves the ref as it was; JAX 0.10.2 has added 2 to it before raising)
    ks, js = kiln.new_ref(0.0), jax.new_ref(0.0)
    _same(kiln.grad(kres["stash_grads_use_cell"][0]["f"])(0.4, ks),
          jax.grad(jres["stash_grads_use_cell"][0]["f"])(0.4, js))
    _same(ks[...], js[...])


def _jax_g(x_ref):
    """The page's ``g`` of inplace_update_cell (the cell fails under JAX 0.10.2 before returning it)."""
    x_ref[...] = jax.numpy.sin(x_ref[...])
    return x_ref[...] ** 2


@pytest.mark.parametrize("cell, grad_ref, acc0", [("vjp_ref_arg_cell", "x_grad_ref", 0.0),
                                                  ("accumulate_cell", "x_grad_ref", 100.0),
                                                  ("inplace_update_cell", "g_grad_ref", 0.0)])
def test_vjp_of_ref_arguments_against_jaxs_vjp_of_their_values(both, cell, grad_ref, acc0):
    _, kres, j, _ = both
    fun = _jax_g if cell == "inplace_update_cell" else j.f  # (vjp_ref_arg_cell defined f before it failed)
    acc = jax.new_ref(acc0)  # JAX 0.10.2 binds gradient refs to value arguments
    _, vjp = jax.vjp(lambda v: fun(jax.new_ref(v)), 2.0)
    vjp.with_refs(acc)(1.0)
    dtype, weak, value = kres[cell][2][grad_ref]
    assert (dtype, weak) == (acc[...].dtype, acc[...].weak_type)
    np.testing.assert_allclose(value, np.asarray(acc[...]), rtol=1e-6)
    if "x_ref" not in kres[cell][2]:
        return
    x_ref = jax.new_ref(2.0)
    fun(x_ref)  # what the function leaves in its ref (kiln's vjp ran it once on x_ref)
    dtype, weak, value = kres[cell][2]["x_ref"]
    assert (dtype, weak) == (x_ref[...].dtype, x_ref[...].weak_type)
    np.testing.assert_allclose(value, np.asarray(x_ref[...]), rtol=1e-6)


def _eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", value)
            inner = getattr(inner, "ir", inner)
            if hasattr(inner, "eqns"):
                yield from _eqns(inner)


def _dense(closed, shape=(10,)):
    """The equations (no calls) that build a value of the gradient's shape."""
    jaxpr = getattr(closed, "jaxpr", closed)
    calls = lambda e: any(hasattr(getattr(v, "jaxpr", v), "eqns") or hasattr(v, "ir")  # noqa: E731
                          for v in e.params.values())
    return [e.primitive.name for e in _eqns(jaxpr) if not calls(e)
            and any(tuple(getattr(o, "aval", o).shape) == shape for o in e.outvars)]


def test_make_jaxpr_of_a_vjp_application(both):
    _, kres, _, jres = both
    for res in (kres, jres):
        np.testing.assert_array_equal(res["take_vjp_jaxpr_cell"][2]["grad_ref"][2],
                                      res["sparse_accumulate_cell"][2]["grad_ref"][2])
    assert _dense(jres["take_vjp_jaxpr_cell"][0]["take_vjp_jaxpr"]()) == []  # JAX: b[c:c+1] += j only


@pytest.mark.xfail(strict=True, reason="kiln's backward pass returns take's cotangent as a dense one-hot array "
                   "(broadcast zeros, dynamic_update_slice) that with_refs adds to the gradient ref; JAX's transpose "
                   "accumulates into the ref in place (see test_array_refs.py)")
def test_take_backward_pass_is_as_sparse_as_jaxs(both):
    _, kres, _, jres = both
    assert len(_dense(kres["take_vjp_jaxpr_cell"][0]["take_vjp_jaxpr"]())) <= 1


def test_dont_want_dot_counts(both):
    _, kres, _, jres = both
    assert kres["dont_want_dots_cell"][1].split() == jres["dont_want_dots_cell"][1].split()
    kv, jv = kres["dont_want_dots_cell"][0]["f_vjp"], jres["dont_want_dots_cell"][0]["f_vjp"]
    for a, b in zip(kv(kiln.numpy.ones(4)), jv(jax.numpy.ones(4))):
        _same(a, b)


def test_microbatches_with_other_inputs(both):
    k, _, j, _ = both
    rng = np.random.default_rng(0)
    Ws = rng.normal(size=(3, 4, 4)).astype(np.float32) / 2
    xs = rng.normal(size=(35, 4)).astype(np.float32)
    kg, kl = k.process_batch(kiln.numpy.asarray(Ws), kiln.numpy.asarray(xs))
    jg, jl = j.process_batch(jax.numpy.asarray(Ws), jax.numpy.asarray(xs))
    _same(kg, jg, rtol=1e-5, atol=1e-6)
    _same(kl, jl, rtol=1e-5, atol=1e-6)
