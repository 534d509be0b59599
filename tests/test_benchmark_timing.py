"""The bench's timing (benchmarks/timing.py): steady-state plans of two frameworks are measured with their batches
interleaved, in alternating order, each framework's settings entered before each of its batches."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "timing.py"
_spec = importlib.util.spec_from_file_location("bench_timing", _PATH)
timing = sys.modules.setdefault("bench_timing", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(timing)


def test_per_call_times_at_once_outside_planning_and_returns_a_plan_inside():
    calls = []
    assert isinstance(timing.per_call(lambda: calls.append(1), lambda out: None, number=2, repeat=3), float)
    assert len(calls) == 3 + 2 * 3  # warm-up, then the batches
    with timing.planning():
        plan = timing.per_call(lambda: calls.append(1), lambda out: None, number=2, repeat=3)
    assert isinstance(plan, timing.Plan) and len(calls) == 9  # nothing ran
    assert not timing._planning


def test_interleaved_alternates_batches_and_enters_each_framework_first():
    log = []

    def plan(name):
        return timing.Plan(lambda: log.append(name), lambda out: None, number=1, repeat=2, warmup=1)

    enter = {"kiln": lambda: log.append("enter kiln"), "jax": lambda: log.append("enter jax")}
    seconds, faults = timing.interleaved({"kiln": plan("kiln"), "jax": plan("jax")}, enter, rounds=2)
    assert set(seconds) == set(faults) == {"kiln", "jax"} and all(s >= 0 for s in seconds.values())
    batches = [entry for entry in log[4:] if not entry.startswith("enter")]
    assert log[:4] == ["enter kiln", "kiln", "enter jax", "jax"]  # warm-ups
    assert batches == ["kiln", "jax", "jax", "kiln"] * 2  # 2 rounds x 2 repeats, the order alternating
    assert all(log[i - 1] == f"enter {log[i]}" for i in range(4, len(log)) if not log[i].startswith("enter"))


def test_interleaved_takes_the_median_of_each(monkeypatch):
    clock = iter([0.0, 1.0, 1.0, 11.0, 11.0, 13.0, 13.0, 113.0, 113.0, 116.0, 116.0, 1116.0])
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    p = {n: timing.Plan(lambda: None, lambda out: None, number=1, repeat=3, warmup=0) for n in ("a", "b")}
    seconds, _ = timing.interleaved(p, {"a": lambda: None, "b": lambda: None}, rounds=1)
    # batches a, b, b, a, a, b take 1, 10, 2, 100, 3, 1000: a's are 1, 100, 3 and b's 10, 2, 1000
    assert seconds == pytest.approx({"a": 3.0, "b": 10.0})


def test_interleaved_counts_the_page_faults_of_each_plans_calls():
    import numpy as np
    # fresh 64 MB buffers, written: mmap'd by malloc (above its threshold), so a fault per page: 16,384 of 4 KB,
    # or 32 of 2 MB where the kernel backs them with transparent huge pages
    size = 64 << 20

    def fresh():
        np.ones(size, np.uint8)

    plans = {"fresh": timing.Plan(fresh, lambda out: None, number=2, repeat=3, warmup=1),
             "none": timing.Plan(lambda: None, lambda out: None, number=2, repeat=3, warmup=1)}
    _, faults = timing.interleaved(plans, {"fresh": lambda: None, "none": lambda: None}, rounds=1)
    assert faults["fresh"] >= (size >> 21) // 2 and faults["none"] < 5, faults


def test_plan_runs_warm_up_and_every_batch_inside_around():
    """A row that redirects stdout (debug.print) must hold the redirection while its batches run, which under
    interleaving is after per_call returned: `around` is entered for the warm-up and each batch."""
    import contextlib
    import io
    sink = io.StringIO()

    def call():
        print("x")
    with timing.planning():
        plan = timing.per_call(call, lambda out: None, number=2, repeat=3, warmup=1,
                               around=lambda: contextlib.redirect_stdout(sink))
    outside = io.StringIO()
    with contextlib.redirect_stdout(outside):
        timing.interleaved({"p": plan}, {"p": lambda: None}, rounds=1)
    assert sink.getvalue() == "x\n" * (1 + 2 * 3)
    assert outside.getvalue() == ""


def test_interleaved_batches_keeps_every_batch():
    clock = {"a": [], "b": []}

    def plan(name):
        return timing.Plan(lambda: clock[name].append(1), lambda out: None, number=1, repeat=3, warmup=0)
    samples, faults = timing.interleaved_batches({"a": plan("a"), "b": plan("b")}, {"a": lambda: None,
                                                                                   "b": lambda: None}, rounds=2)
    assert [len(v) for v in samples.values()] == [6, 6] and [len(v) for v in faults.values()] == [6, 6]
    assert len(clock["a"]) == len(clock["b"]) == 6


def test_ratio_interval_holds_the_ratio_and_tells_separated_samples_apart():
    rng = np.random.default_rng(0)
    same_a, same_b = list(1.0 + 0.05 * rng.standard_normal(75)), list(1.0 + 0.05 * rng.standard_normal(75))
    low, high = timing.ratio_interval(same_a, same_b)
    assert low < 1 < high  # one distribution: 1 is inside
    ratio = np.median(same_a) / np.median(same_b)
    assert low <= ratio <= high
    assert timing.ratio_interval(same_a, same_b) == (low, high)  # fixed seed: the same batches, the same interval
    slow = [2 * x for x in same_a]
    low, high = timing.ratio_interval(slow, same_b)
    assert 1.8 < low <= high < 2.2
