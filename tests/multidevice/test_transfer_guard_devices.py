"""Device-to-device transfer guards (needs two devices)."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.errors import TransferGuardError


def test_device_to_device_implicit_refused_explicit_allowed():
    d0, d1 = kiln.devices()[:2]
    x = kiln.device_put(knp.arange(3.0), d0)
    with kiln.transfer_guard_device_to_device("disallow"):
        with pytest.raises(TransferGuardError,
                           match=r"from CpuDevice\(id=0\) to CpuDevice\(id=1\) is an implicit device-to-device"):
            kiln.jit(lambda a: a + 1, device=d1)(x)
        y = kiln.device_put(x, d1)  # explicit
        np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(kiln.jit(lambda a: a + 1, device=d1)(x), [1.0, 2.0, 3.0])
