"""JAX's docs page docs/debugging/slow_tracing_compilation.md under kiln and under JAX 0.10.2 (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_slow_compilation.py; the JAX side is the same source with JAX's
imports put back. The page's claims are checked in test_docs_slow_compilation.py; this checks what both libraries'
tools show, where it is observable: the phases jax_log_compiles times (tracing, lowering, XLA compilation) for the
page's unrolled loop, the eqn_count_pprof profile (the loop line's adds), how many times each gotcha traces its
function and whether jax_explain_cache_misses says the function is re-created per call, and the values.

Differences, tested as such:
- the wording of the lines: kiln's "Finished lowering jit(f) to StableHLO" is JAX's "Finished jaxpr to MLIR
  module conversion jit(f)"; kiln's explanations are warnings (warnings.warn) where JAX logs them ("TRACING CACHE
  MISS ... never seen function ... maybe the function is being re-defined repeatedly"); kiln's profile is named
  kiln_NNNNNN_jit_f.eqn_count_pprof where JAX's is jax_NNNNNN_f.eqn_count_pprof.
- kiln's IR broadcasts the Python scalar of `x + 1.0` explicitly: its profile has a broadcast_in_dim next to each
  add at the loop's line (JAX's add takes the scalar literal).
- The page's claim that a fresh functools.partial hits the tracing cache holds in neither: both trace per call.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from kiln.runtime import ir_dump  # noqa: E402
from ported import load  # noqa: E402
from same_as_jax import assert_same  # noqa: E402

import kiln  # noqa: E402

ITERATIONS = 200
X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
Y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


@pytest.fixture(scope="module")
def both():
    return load("docs_slow_compilation"), load("docs_slow_compilation", "jax")


@pytest.fixture
def page_flags(both, tmp_path):
    """The page's flags block run in both libraries (each dumping to its own directory); set back afterwards."""
    k, j = both
    names = ("jax_log_compiles", "jax_explain_cache_misses", "jax_dump_ir_to", "jax_dump_ir_modes")
    saved = [(kiln, {n: getattr(kiln.config, n) for n in names}), (jax, {n: jax.config.values[n] for n in names})]
    k.flags_cell(str(tmp_path / "kiln"))
    j.flags_cell(str(tmp_path / "jax"))
    yield tmp_path
    for lib, values in saved:
        for n, v in values.items():
            lib.config.update(n, v)


@contextlib.contextmanager
def watching(caplog):
    """What happens in the block: the messages logged (kiln's and JAX's loggers) and warned, as one list."""
    seen = []
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        start = len(caplog.records)
        yield seen
    seen.extend(r.getMessage() for r in caplog.records[start:] if r.levelno >= logging.WARNING)
    seen.extend(str(w.message) for w in record)


def _traces(seen, name):
    return sum(bool(re.match(rf"Finished tracing (\+ transforming )?{re.escape(name)} for jit", m)) for m in seen)


def test_unrolled_loop_logs_and_profile(both, page_flags, caplog):
    k, j = both
    outs, phases = [], []
    for nb in both:
        with watching(caplog) as seen:
            outs.append(nb.unrolled_loop_cell(ITERATIONS))
        phases.append([m.split(" in ")[0] for m in seen if m.startswith("Finished") and "unrolled_loop" in m])
    assert_same(outs[0], outs[1], rtol=0)
    assert phases[0] == ["Finished tracing + transforming unrolled_loop for jit",
                         "Finished lowering jit(unrolled_loop) to StableHLO",
                         "Finished XLA compilation of jit(unrolled_loop)"]
    assert phases[1] == ["Finished tracing unrolled_loop for jit",
                         "Finished jaxpr to MLIR module conversion jit(unrolled_loop)",
                         "Finished XLA compilation of jit(unrolled_loop)"]
    counts = []
    for lib, pattern in (("kiln", r"kiln_\d{6}_jit_unrolled_loop\.eqn_count_pprof"),
                         ("jax", r"jax_\d{6}_unrolled_loop\.eqn_count_pprof")):
        (name,) = [n for n in os.listdir(page_flags / lib) if re.fullmatch(pattern, n)]
        profile = ir_dump.read_profile((page_flags / lib / name).read_bytes())
        s = lambda i, p=profile: p["stringTable"][int(i)]  # noqa: E731
        lines = {loc["id"]: int(loc["line"][0]["line"]) for loc in profile["location"]}
        counts.append({(lines[sample["locationId"][-1]], s(sample["label"][0]["str"])): int(sample["value"][0])
                       for sample in profile["sample"] if sample.get("locationId")})
    adds = [{key: n for key, n in c.items() if key[1] == "add"} for c in counts]
    assert adds[0] == adds[1] and list(adds[0].values()) == [ITERATIONS]  # at the same line
    assert {key: n for key, n in counts[0].items() if key[1] != "broadcast_in_dim"} == counts[1]


def test_recreated_function_and_lambda_trace_per_call_in_both(both, page_flags, caplog):
    for cell, args, name, want in (("recreated_function_bad_cell", (X, Y), "custom_einsum",
                                    np.einsum("...i,...i->...", X, Y)),
                                   ("lambda_bad_cell", (X, Y, 2.5), "<lambda>", (X + Y) * 2.5)):
        said = []
        for nb in both:
            top_function = getattr(nb, cell)()
            with watching(caplog) as seen:
                for _ in range(2):
                    np.testing.assert_allclose(np.asarray(top_function(*args)), want, rtol=1e-6)
            assert _traces(seen, name) == 2, (cell, seen)
            said.append(seen)
        # the second call: kiln warns that the function is made anew per call, JAX that it is "being re-defined"
        assert any("created and jitted anew for every call" in m for m in said[0])
        assert any("maybe the function is\n  being re-defined repeatedly" in m for m in said[1]), said[1]


def test_a_function_made_once_traces_once_in_both(both, page_flags, caplog):
    for nb in both:
        top_function = nb.recreated_function_good_cell()
        with watching(caplog) as seen:
            for _ in range(3):
                top_function(X, Y)
        assert _traces(seen, "custom_einsum") == 1


def test_a_fresh_partial_is_traced_per_call_in_both(both, page_flags, caplog):
    """The page: "JAX correctly unwraps functools.partial and hits the tracing cache!" JAX 0.10.2 does not."""
    traced = []
    for nb, name in zip(both, ("partial(add_multiply)", "add_multiply")):
        top_function = nb.partial_good_cell()
        with watching(caplog) as seen:
            for _ in range(2):
                np.testing.assert_allclose(np.asarray(top_function(X, Y, 2.5)), (X + Y) * 2.5, rtol=1e-6)
        traced.append(_traces(seen, name))
    assert traced == [2, 2]


def test_eager_and_jitted_tree_maps(both):
    rng = np.random.default_rng(1)
    params = {f"w{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate([(4, 3), (6,), (4, 3)])}
    k, j = both
    assert_same(k.eager_tree_map_bad_cell(params), j.eager_tree_map_bad_cell(params), rtol=0)
    assert_same(k.eager_tree_map_good_cell(params), j.eager_tree_map_good_cell(params), rtol=0)
