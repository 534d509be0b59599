"""Timing helpers: warm up, run in batches, wait for the results, take the median; interleave the batches of two
frameworks' plans so that both meet the machine in the same state."""
from __future__ import annotations

import contextlib
import dataclasses
import random
import statistics
import time
from typing import Any, Callable

try:
    import resource  # POSIX only
except ImportError:  # pragma: no cover
    resource = None


@dataclasses.dataclass
class Plan:
    """A steady-state measurement not taken yet: ``number`` back-to-back calls of ``fn`` per batch, ``repeat``
    batches, after ``warmup`` calls; ``block`` waits for a result. ``around()`` is a context that the warm-up
    and each batch run inside, untimed (e.g. stdout redirected: it must hold while the batch runs, which is
    later than the code that made the plan when batches are interleaved)."""
    fn: Callable[[], Any]
    block: Callable[[Any], Any]
    number: int
    repeat: int
    warmup: int
    around: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext

    def warm_up(self) -> None:
        with self.around():
            out = None
            for _ in range(self.warmup):
                out = self.fn()
            self.block(out)

    def batch(self) -> float:
        """The time per call (seconds) of one batch, its last result waited for."""
        with self.around():
            start = time.perf_counter()
            for _ in range(self.number):
                out = self.fn()
            self.block(out)
            return (time.perf_counter() - start) / self.number


_planning = False


@contextlib.contextmanager
def planning():
    """Inside, :func:`per_call` returns its :class:`Plan` instead of timing it, for :func:`interleaved`."""
    global _planning
    _planning, before = True, _planning
    try:
        yield
    finally:
        _planning = before


def per_call(fn: Callable[[], Any], block: Callable[[Any], Any], *, number: int, repeat: int,
             warmup: int = 3, around: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
             ) -> float | Plan:
    """Median over ``repeat`` batches of the time per call (seconds) of ``number`` back-to-back calls.

    Each batch ends by waiting for its last result, so asynchronous dispatch cannot hide the work.
    """
    plan = Plan(fn, block, number, repeat, warmup, around)
    if _planning:
        return plan
    plan.warm_up()
    return statistics.median(plan.batch() for _ in range(plan.repeat))


def _page_faults() -> int:
    """This process's page faults so far (minor and major), or 0 where getrusage does not count them."""
    if resource is None:
        return 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def interleaved_batches(plans: dict[str, Plan], enter: dict[str, Callable[[], None]],
                        rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The time per call of every batch of each plan, their batches interleaved: ``rounds`` x ``repeat`` times one
    batch of each, in an order that alternates, so that a drift of the machine's speed (load from elsewhere,
    clocks, the heap's state) meets each plan alike. ``enter[name]()`` runs before each of ``name``'s batches.

    Also the page faults per call of each batch: a call that writes a fresh buffer the allocator took from the
    operating system pays a fault per page, which can double a row's time."""
    for name, plan in plans.items():
        enter[name]()
        plan.warm_up()
    names = list(plans)
    samples: dict[str, list[float]] = {name: [] for name in names}
    faults: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds * max(plan.repeat for plan in plans.values())):
        for name in (names if i % 2 == 0 else names[::-1]):
            enter[name]()
            before = _page_faults()
            samples[name].append(plans[name].batch())
            faults[name].append((_page_faults() - before) / plans[name].number)
    return samples, faults


def interleaved(plans: dict[str, Plan], enter: dict[str, Callable[[], None]],
                rounds: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median time per call of each plan, and median page faults per call, over the batches of
    :func:`interleaved_batches`."""
    samples, faults = interleaved_batches(plans, enter, rounds)
    return medians(samples), medians(faults)


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    """The median of each plan's batches."""
    return {name: statistics.median(values) for name, values in samples.items()}


def ratio_interval(a: list[float], b: list[float], *, level: float = 0.95, resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float]:
    """A ``level`` bootstrap interval of ``median(a) / median(b)``: the batches of each side resampled with
    replacement, ``resamples`` times (a fixed seed: the same batches give the same interval). How far the ratio
    of one run can move by the batch-to-batch noise alone: a ratio whose interval holds 1 does not tell the two
    apart."""
    rng = random.Random(seed)
    ratios = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                    for _ in range(resamples))
    cut = int(resamples * (1 - level) / 2)
    return ratios[cut], ratios[resamples - 1 - cut]


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
