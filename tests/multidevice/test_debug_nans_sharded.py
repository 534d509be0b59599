"""debug_nans with arrays laid out over a mesh: jit, eager operations (which run as jitted one-primitive
programs) and pmap name the primitive and the user's line."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P

HERE = re.escape(os.path.basename(__file__))


def f(x):
    return knp.log(x) * 2.0  # LOG


LOG_LINE = f.__code__.co_firstlineno + 1


@pytest.fixture
def sharded(mesh):
    return kiln.device_put(knp.array(np.linspace(-1.0, 3.0, 8, dtype=np.float32)), NamedSharding(mesh, P("data")))


def test_jit_over_a_mesh(sharded):
    with kiln.debug_nans(True):
        with pytest.raises(FloatingPointError, match=rf"encountered in log at .*{HERE}:{LOG_LINE} \(f\); found by "):
            kiln.jit(f)(sharded)
        np.testing.assert_allclose(kiln.jit(f)(knp.abs(sharded) + 1.0),
                                   2 * np.log(np.abs(np.linspace(-1.0, 3.0, 8)) + 1), rtol=1e-5)


def test_eager_over_a_mesh(sharded):
    with kiln.debug_nans(True):
        with pytest.raises(FloatingPointError, match=rf"^invalid value \(nan\) encountered in log at .*{HERE}:"
                                                     rf"{LOG_LINE} \(f\)$"):
            f(sharded)


def test_pmap_names_its_program():
    with kiln.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in shard_map at "):
            kiln.pmap(f)(knp.array([-1.0, 1.0]))
