"""kiln.numpy as an array API standard namespace (issue 14 item 3): the metadata and the Array members the
standard asks for. The conformance suite itself (data-apis/array-api-tests) needs a checkout of it, so it runs
outside CI: tools/array_api_tests.sh."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_namespace_version_and_info():
    x = knp.ones((2, 3))
    assert x.__array_namespace__() is knp
    assert x.__array_namespace__(api_version="2024.12") is knp
    assert knp.__array_api_version__ == "2024.12"
    info = knp.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}
    assert info.default_device() is None
    assert info.devices() == [None, *kiln.devices()]
    assert info.default_dtypes() == {"real floating": np.float32, "complex floating": np.complex64,
                                     "integral": np.int32, "indexing": np.int32}
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                                  "complex64"}
    assert info.dtypes(kind="signed integer") == {n: np.dtype(n) for n in ("int8", "int16", "int32")}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64"}


def test_namespace_info_follows_x64():
    with kiln.enable_x64(True):
        info = knp.__array_namespace_info__()
        assert info.default_dtypes()["real floating"] == np.float64
        assert info.default_dtypes(device=kiln.devices()[0])["indexing"] == np.int64
        assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
        assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}


def test_tracers_have_the_namespace_and_to_device():
    dev = kiln.devices()[0]

    @kiln.jit
    def f(x):
        assert x.__array_namespace__() is knp
        return x.to_device(dev).mT * 2

    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(x)), x.T * 2)


def test_to_device_commits_a_copy():
    dev = kiln.devices()[0]
    x = knp.arange(4)
    assert not x.committed
    y = x.to_device(dev)
    assert y.committed and y.device == dev
    np.testing.assert_array_equal(np.asarray(y), np.arange(4))
    assert x.to_device("cpu").device == kiln.devices("cpu")[0]


def test_mT_transposes_the_last_two_axes():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(knp.asarray(x).mT), np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("call, error, message", [
    (lambda: knp.ones(3).__array_namespace__(api_version="2021.12"), ValueError,
     r"api_version='2021.12' is not available; kiln.numpy implements version '2024.12'"),
    (lambda: knp.ones(3).to_device(kiln.devices()[0], stream=1), NotImplementedError,
     "the stream argument is not supported"),
    (lambda: knp.ones(3).to_device(3), TypeError, "device must be a kiln device"),
    (lambda: knp.ones(3).mT, ValueError, r"matrix_transpose: x must be at least 2-D, got shape \(3,\)"),
    (lambda: knp.__array_namespace_info__().dtypes(kind="floating"), ValueError,
     "unknown kind 'floating'; expected one of 'bool'"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
