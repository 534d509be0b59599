"""Runs tests/multidevice/ in a fresh interpreter with 8 virtual CPU devices (the device count is fixed
when kiln starts its CPU backend, so these tests cannot share this session's)."""
from __future__ import annotations

import os
import sys

import pytest

MULTIDEVICE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multidevice")


def test_multidevice_suite_on_8_cpu_devices(run_py):
    import kiln
    if kiln.device_count() >= 8:
        pytest.skip("this session has 8 devices: tests/multidevice ran in it directly")
    if kiln.devices()[0].platform != "cpu":
        pytest.skip("virtual devices exist on CPU only; this session tests another backend")
    code = f"import sys, pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-x', {MULTIDEVICE!r}]))"
    proc = run_py(code, env={"KILN_NUM_CPU_DEVICES": "8"}, check=False, timeout=600)
    sys.stdout.write(proc.stdout[-3000:])
    assert proc.returncode == 0, (f"tests/multidevice failed on 8 CPU devices:\n{proc.stdout[-6000:]}\n"
                                  f"{proc.stderr[-3000:]}")
