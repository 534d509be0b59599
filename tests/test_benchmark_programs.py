"""benchmarks/programs.py (the compiled programs of typical functions, kiln against JAX): every program compiles
under kiln, and the four that were worse than JAX's stay fixed (their temporaries)."""
from __future__ import annotations

import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def test_every_program_compiles_and_the_fixed_ones_stay_small(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import programs
    rows = programs.measure("kiln", None, None)
    assert len(rows) >= 50
    assert not [(name, row["error"]) for name, row in rows.items() if "error" in row]
    assert all(row["kernels"] >= 1 and row["instructions"] >= row["kernels"] for row in rows.values())
    # grad of a cond (a saved broadcast constant), grad of solve (the LU factorization differentiated), x @ w
    # with a 3-D x (w broadcast over x's batch): 1 MiB, 390 KB and 1 MiB of temporaries before
    assert rows["grad_cond"]["temp_bytes"] < 1024
    assert rows["grad_solve"]["temp_bytes"] < 16 * 1024
    assert rows["matmul_3d_2d"]["temp_bytes"] == 0
    # segment_sum wrapped its negative ids twice (40 StableHLO ops; JAX's program 28): now not at all (27)
    assert rows["segment_sum"]["stablehlo"] < 32
    text = programs.table(rows, None)
    assert text.count("\n") == len(rows) + 1 and "| grad_cond | " in text
    sys.modules.pop("programs", None)
