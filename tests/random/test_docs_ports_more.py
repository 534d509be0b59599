"""Regressions found by running more of JAX's documentation pages under ``import kiln as jax``
(docs/debugging/print_breakpoint.md's callbacks): a key array a host callback receives prints as JAX's."""
from __future__ import annotations

import numpy as np

import kiln
from kiln import random


def test_key_in_a_callback_prints_its_data_as_jax():
    seen = []
    keys = random.split(random.key(0))
    kiln.debug.callback(lambda k: seen.append(repr(k)), random.key(0))
    kiln.jit(lambda k: kiln.debug.callback(lambda v: seen.append(str(v)), k))(keys)
    kiln.effects_barrier()
    # the data as NumPy prints it (str), not its repr
    assert seen == ["Array((), dtype=key<fry>) overlaying:\n[0 0]",
                    f"Array((2,), dtype=key<fry>) overlaying:\n{np.asarray(random.key_data(keys))}"]
