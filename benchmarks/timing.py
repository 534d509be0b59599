"""Timing helpers: warm up, run in batches, wait for the results, take the median."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def per_call(fn: Callable[[], Any], block: Callable[[Any], Any], *, number: int, repeat: int,
             warmup: int = 3) -> float:
    """Median over ``repeat`` batches of the time per call (seconds) of ``number`` back-to-back calls.

    Each batch ends by waiting for its last result, so asynchronous dispatch cannot hide the work.
    """
    out = None
    for _ in range(warmup):
        out = fn()
    block(out)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            out = fn()
        block(out)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def once_each(make: Callable[[int], Callable[[], Any]], *, repeat: int) -> float:
    """Median time (seconds) of ``make(i)()`` for i in range(repeat); ``make`` itself is not timed.

    For one-off costs (tracing, compiling) that a cache would hide on a second call: ``make(i)``
    builds a fresh, different piece of work each time.
    """
    samples = []
    for i in range(repeat):
        work = make(i)
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
