"""A NumPy Threefry-2x32 and the draws kiln.random (JAX's default, partitionable Threefry) makes from it: the
oracle of the ported notebooks' random cells (tests/random/test_threefry.py has the library's own, broadcasting
one). Checked against the Random123 test vector in test_common_gotchas.py."""
import numpy as np
import scipy.special

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x, d):
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(key, x0, x1):
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011) of the words ``x0``, ``x1`` under ``key``."""
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    ks = [k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA)]
    x = [np.asarray(x0, np.uint32) + ks[0], np.asarray(x1, np.uint32) + ks[1]]
    with np.errstate(over="ignore"):
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x[0] = x[0] + x[1]
                x[1] = _rotl(x[1], r) ^ x[0]
            x[0] = x[0] + ks[(i + 1) % 3]
            x[1] = x[1] + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x


def split(key, n=2):
    """The keys random.split makes (partitionable Threefry: key i hashes the counter (0, i))."""
    a, b = threefry2x32(key, np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32))
    return np.stack([a, b], axis=1)


def uniform(key, n, minval=0.0, maxval=1.0):
    """random.uniform's n float32 draws: 23 random mantissa bits in [1, 2), shifted and scaled."""
    a, b = threefry2x32(key, np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32))
    floats = (((a ^ b) >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    minval, maxval = np.float32(minval), np.float32(maxval)
    return np.maximum(minval, floats * (maxval - minval) + minval)


def normal(key, n):
    """random.normal's n draws, in float64: sqrt(2) erfinv of uniforms in (-1, 1)."""
    u = uniform(key, n, np.nextafter(np.float32(-1), np.float32(0)), 1.0).astype(np.float64)
    return np.sqrt(2) * scipy.special.erfinv(u)
