"""Tests that need 8 devices. On CPU they run in a subprocess with ``KILN_NUM_CPU_DEVICES=8``
(tests/test_multidevice.py starts it); in a session with fewer devices they are skipped here."""
from __future__ import annotations

import os
import sys

import pytest

NEEDED = 8
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # ported_pages.py, the helper beside the tests


def pytest_collection_modifyitems(config, items):
    import kiln
    if kiln.device_count() >= NEEDED:
        return
    skip = pytest.mark.skip(reason=f"needs {NEEDED} devices: tests/test_multidevice.py runs these with "
                                   f"KILN_NUM_CPU_DEVICES={NEEDED}")
    for item in items:
        if str(item.path).startswith(HERE + os.sep):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def mesh():
    """The (4, 2) mesh most of these tests use: axes "data" and "model"."""
    import kiln
    return kiln.make_mesh((4, 2), ("data", "model"))
