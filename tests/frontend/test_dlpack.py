"""DLPack: kiln arrays to NumPy and back (NumPy is the other library here), dtypes, devices, copies, and the
error paths; the export hazard (deleting an exported buffer aborts jaxlib) runs in a subprocess."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

DTYPES = [np.float32, np.float16, np.int8, np.int16, np.int32, np.uint8, np.uint32, np.complex64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_through_numpy(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x = knp.from_dlpack(a)
    assert x.dtype == a.dtype and x.shape == a.shape and isinstance(x, kiln.Array) and not x.committed
    np.testing.assert_array_equal(np.asarray(x), a)
    back = np.from_dlpack(x)  # NumPy reads kiln's memory (a read-only view)
    np.testing.assert_array_equal(back, a)
    assert not back.flags.writeable
    np.testing.assert_array_equal(np.asarray(kiln.dlpack.from_dlpack(a) * 1), a * 1)


def test_kiln_results_bfloat16_capsules_and_x64_conversion():
    x = knp.linspace(0, 1, 5, dtype=ml_dtypes.bfloat16)
    y = knp.from_dlpack(x.__dlpack__())  # a capsule, bfloat16 included
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert x.__dlpack_device__() == (1, 0)
    z = knp.from_dlpack(np.arange(3.0))  # float64 without x64: converted as JAX does
    assert z.dtype == np.float32
    with pytest.raises(ValueError, match="copy=False, but float64 arrays are stored as float32"):
        knp.from_dlpack(np.arange(3.0), copy=False)
    with kiln.enable_x64():
        assert knp.from_dlpack(np.arange(3.0)).dtype == np.float64
    assert kiln.dlpack.is_supported_dtype(np.float32) and not kiln.dlpack.is_supported_dtype(np.dtype("V2"))


def test_device_copy_and_arrays():
    a = np.arange(4, dtype=np.int32)
    dev = kiln.devices()[-1]
    x = knp.from_dlpack(a, device=dev)
    assert x.device == dev and x.committed
    c = knp.from_dlpack(x, copy=True)
    np.testing.assert_array_equal(np.asarray(c), a)
    assert knp.from_dlpack(x) is x
    numpy_copy = np.from_dlpack(x, copy=True)  # NumPy asks for a copy: a new writable array
    np.testing.assert_array_equal(numpy_copy, a)


def test_errors():
    with pytest.raises(TypeError, match="expected an array with __dlpack__"):
        knp.from_dlpack([1, 2, 3])
    with pytest.raises(kiln.errors.TracerArrayConversionError, match="has no memory to share over DLPack"):
        kiln.jit(lambda t: np.from_dlpack(t))(knp.ones(2))
    cap = np.ones(2, np.float32).__dlpack__()
    knp.from_dlpack(cap)
    with pytest.raises(BufferError, match="expected an unused DLPack capsule"):
        knp.from_dlpack(cap)  # a capsule is consumed once
    x = knp.arange(3.0)
    view = np.from_dlpack(x)
    with pytest.raises(kiln.KilnError, match="its memory was exported over DLPack"):
        x.delete()
    np.testing.assert_array_equal(view, [0.0, 1.0, 2.0])


def test_deleting_after_export_never_aborts(run_py):
    # jaxlib aborts the process when an exported buffer is deleted: kiln refuses instead, and the readers
    # stay valid after the array is dropped.
    proc = run_py("""
        import gc, numpy as np, kiln, kiln.numpy as knp
        x = knp.arange(5.0) * 2
        view = np.from_dlpack(x)
        try:
            x.delete()
        except kiln.KilnError:
            print("refused")
        del x
        gc.collect()
        print(view.tolist())
        y = knp.arange(3.0) + 1
        donated = kiln.jit(lambda t: t * 2, donate_argnums=0)
        keep = np.from_dlpack(y)
        print(np.asarray(donated(y)).tolist(), keep.tolist())
    """, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["refused", "[0.0,", "2.0,", "4.0,", "6.0,", "8.0]", "[2.0,", "4.0,", "6.0]",
                                   "[1.0,", "2.0,", "3.0]"]


def test_pytorch_round_trip_shares_memory():
    """With PyTorch installed: kiln -> torch and torch -> kiln on CPU without copies (skipped otherwise)."""
    torch = pytest.importorskip("torch")
    x = knp.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (2, 3) and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
    assert t.data_ptr() == np.from_dlpack(x).ctypes.data  # the device buffer itself, not a copy
    source = torch.arange(4, dtype=torch.float32) * 2
    y = knp.from_dlpack(source)
    np.testing.assert_array_equal(y, [0.0, 2.0, 4.0, 6.0])
    assert np.from_dlpack(y).ctypes.data == source.data_ptr()
    np.testing.assert_array_equal(kiln.jit(lambda a: a + 1)(y), [1.0, 3.0, 5.0, 7.0])
