"""Transfer guards (JAX's jax.transfer_guard*): implicit transfers refused or logged, explicit ones allowed."""
import threading

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.errors import TransferGuardError


def test_disallow_refuses_implicit_host_to_device_with_a_clear_error():
    f = kiln.jit(lambda a: a + 1)
    with kiln.transfer_guard("disallow"):
        with pytest.raises(TransferGuardError) as info:
            f(np.ones(3, np.float32))
        y = kiln.device_put(np.ones(3, np.float32))  # explicit: allowed
        np.testing.assert_array_equal(f(y), [2.0, 2.0, 2.0])  # already on the device: no transfer
        np.testing.assert_array_equal(kiln.device_get(y), np.ones(3))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)  # as JAX raises
    assert "implicit host-to-device transfer" in msg and "float32[3]" in msg
    assert "kiln.device_put" in msg and "transfer_guard_host_to_device('allow')" in msg
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2.0, 2.0, 2.0])  # restored on exit


def test_direction_specific_guard_and_nesting():
    with kiln.transfer_guard_host_to_device("disallow"):
        with pytest.raises(TransferGuardError):
            knp.asarray(np.ones(2))
        with kiln.transfer_guard_host_to_device("allow"):
            knp.asarray(np.ones(2))
        with kiln.transfer_guard_device_to_host("disallow"):
            np.asarray(kiln.device_put(np.ones(2)))  # fetching from a CPU device is never a transfer (as JAX)
    with kiln.transfer_guard_device_to_device("disallow"):
        knp.asarray(np.ones(2))  # another direction: allowed


def test_disallow_explicit_and_log_levels(capfd):
    with kiln.transfer_guard("disallow_explicit"):
        with pytest.raises(TransferGuardError):
            kiln.device_put(np.ones(2))
    with kiln.transfer_guard("log"):
        kiln.jit(lambda a: a * 2)(np.ones(2, np.float32))
    assert "host-to-device transfer" in capfd.readouterr().err


def test_global_setting_and_threads():
    kiln.config.update("jax_transfer_guard", "disallow")  # JAX's spelling
    try:
        with pytest.raises(TransferGuardError):
            kiln.jit(lambda a: a - 1)(np.ones(2, np.float32))
        seen = []

        def other_thread():
            try:
                knp.asarray(np.ones(2))
                seen.append("allowed")
            except TransferGuardError:
                seen.append("refused")
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert seen == ["refused"]  # a global setting holds in every thread
    finally:
        kiln.config.update("transfer_guard", None)
    with kiln.transfer_guard("disallow"):  # a context manager holds in its own thread only
        seen = []
        t = threading.Thread(target=lambda: seen.append(np.asarray(knp.asarray(np.ones(2))).sum()))
        t.start()
        t.join()
        assert seen == [2.0]


def test_bad_level():
    with pytest.raises(ValueError, match=r"kiln.transfer_guard\('nope'\): the level must be one of 'allow'"):
        with kiln.transfer_guard("nope"):
            pass
    with pytest.raises(ValueError, match="expected one of"):
        kiln.config.update("transfer_guard", "sometimes")


def test_python_scalars_are_transfers_even_when_seen_before(capfd):
    """kiln reuses the device copy of a repeated Python scalar argument (jit's direct launch, eager ops), but
    not while a host-to-device guard is set: each implicit transfer is checked, as JAX checks it."""
    f = kiln.jit(lambda a, s: a * s)
    x = knp.ones(3)
    for _ in range(3):
        f(x, 2.0), x * 3.0
    for level in ("disallow", "log"):
        with kiln.transfer_guard_host_to_device(level):
            if level == "disallow":
                with pytest.raises(TransferGuardError, match="float32"):
                    f(x, 2.0)
                with pytest.raises(TransferGuardError, match="float32"):
                    x * 3.0
            else:
                capfd.readouterr()
                for _ in range(2):
                    np.testing.assert_array_equal(f(x, 2.0), [2.0, 2.0, 2.0])
                assert capfd.readouterr().err.count("host-to-device transfer") == 2  # logged at each call
    np.testing.assert_array_equal(f(x, 2.0), [2.0, 2.0, 2.0])  # the guard is gone: reused again
    np.testing.assert_array_equal(x * 3.0, [3.0, 3.0, 3.0])
