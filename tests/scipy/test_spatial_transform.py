"""kiln.scipy.spatial.transform.Rotation and Slerp against SciPy's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SR
from scipy.spatial.transform import Slerp as SS

import kiln
from kiln.scipy.spatial.transform import Rotation as R
from kiln.scipy.spatial.transform import Slerp

rng = np.random.default_rng(17)
Q = rng.standard_normal((6, 4))


def close(a, b, tol=1e-9, msg=""):
    np.testing.assert_allclose(np.asarray(a), b, atol=tol, rtol=tol, err_msg=msg)


@pytest.fixture
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def test_conversions(x64):
    s, k = SR.from_quat(Q), R.from_quat(Q)
    close(k.as_quat(canonical=True), s.as_quat(canonical=True))
    close(k.as_quat(canonical=True, scalar_first=True), s.as_quat(canonical=True, scalar_first=True))
    close(k.as_matrix(), s.as_matrix())
    close(R.from_matrix(s.as_matrix()).as_quat(canonical=True), s.as_quat(canonical=True))
    close(k.as_rotvec(), s.as_rotvec())
    close(k.as_rotvec(degrees=True), s.as_rotvec(degrees=True))
    close(R.from_rotvec(s.as_rotvec()).as_matrix(), s.as_matrix())
    close(R.from_rotvec(np.array([1e-5, 0.0, 2e-5])).as_matrix(), SR.from_rotvec([1e-5, 0.0, 2e-5]).as_matrix())
    close(R.from_rotvec([30.0, 0.0, 0.0], degrees=True).as_matrix(),
          SR.from_rotvec([30.0, 0.0, 0.0], degrees=True).as_matrix())
    close(k.as_mrp(), s.as_mrp())
    close(R.from_mrp(s.as_mrp()).as_matrix(), s.as_matrix())
    assert k[0].single and not k.single and len(k) == 6 and k[1:3].quat.shape == (2, 4)


@pytest.mark.parametrize("seq", ["xyz", "zyx", "xzy", "XYZ", "ZYX", "zxz", "ZXZ", "xyx", "YXY"])
def test_euler(x64, seq):
    angles = rng.uniform(-1.5, 1.5, (6, 3))
    close(R.from_euler(seq, angles).as_matrix(), SR.from_euler(seq, angles).as_matrix())
    s, k = SR.from_quat(Q), R.from_quat(Q)
    close(k.as_euler(seq), s.as_euler(seq))
    close(k.as_euler(seq, degrees=True), s.as_euler(seq, degrees=True))
    symmetric = seq[0].lower() == seq[2].lower()
    lock = np.array([[0.3, 0.0, 0.0], [0.4, np.pi, 0.0]]) if symmetric else \
        np.array([[0.3, np.pi / 2, 0.0], [0.4, -np.pi / 2, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns about the gimbal lock
        locked = SR.from_euler(seq, lock)
        close(R.from_quat(locked.as_quat()).as_euler(seq), locked.as_euler(seq), 1e-6)


def test_fewer_euler_axes(x64):
    close(R.from_euler("x", 0.3).as_matrix(), SR.from_euler("x", 0.3).as_matrix())
    close(R.from_euler("XY", [0.3, 0.5]).as_matrix(), SR.from_euler("XY", [0.3, 0.5]).as_matrix())


def test_operations(x64):
    s, k = SR.from_quat(Q), R.from_quat(Q)
    v = rng.standard_normal((6, 3))
    close(k.apply(np.ones(3)), s.apply(np.ones(3)))
    close(k.apply(v, inverse=True), s.apply(v, inverse=True))
    close(k[0].apply(v), s[0].apply(v))
    close((k * k[::-1]).as_matrix(), (s * s[::-1]).as_matrix())
    close(k.inv().as_matrix(), s.inv().as_matrix())
    close(k.magnitude(), s.magnitude())
    close(k.mean().as_matrix(), s.mean().as_matrix())
    w = rng.uniform(0, 1, 6)
    close(k.mean(w).as_matrix(), s.mean(w).as_matrix())
    close(R.identity().quat, [0, 0, 0, 1.0])
    assert R.identity(3).quat.shape == (3, 4)
    assert R.concatenate([k[0], k[1:3]]).quat.shape == (3, 4)
    r = R.random(kiln.random.key(0), 100)
    close(np.linalg.norm(np.asarray(r.quat), axis=1), np.ones(100), 1e-6)


def test_slerp(x64):
    times = [0.0, 1.0, 3.0, 4.0]
    ss = SS(times, SR.from_quat(Q[:4]))
    ks = Slerp.init(times, R.from_quat(Q[:4]))
    t = np.array([0.0, 0.5, 1.0, 2.2, 3.9, 4.0])
    close(ks(t).as_matrix(), ss(t).as_matrix())
    close(ks(2.5).as_matrix(), ss(2.5).as_matrix())
    assert ks(2.5).single


def test_float32_jit_vmap_grad():
    k = R.from_quat(Q.astype(np.float32))
    v = rng.standard_normal((6, 3)).astype(np.float32)
    out = kiln.jit(lambda r, v: r.apply(v))(k, v)  # a NamedTuple through jit
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), SR.from_quat(Q).apply(v), rtol=1e-5, atol=1e-5)
    m = kiln.vmap(lambda q: R.from_quat(q).as_matrix())(Q.astype(np.float32))
    np.testing.assert_allclose(np.asarray(m), SR.from_quat(Q).as_matrix(), rtol=1e-5, atol=1e-5)
    g = kiln.grad(lambda a: R.from_rotvec(knp_vec(a)).apply(np.float32([1.0, 0.0, 0.0]))[1])(np.float32(0.3))
    np.testing.assert_allclose(float(g), np.cos(0.3), rtol=1e-5)  # d/da sin(a)


def knp_vec(a):
    import kiln.numpy as knp
    return knp.stack([0.0 * a, 0.0 * a, a])


def test_errors():
    with pytest.raises(ValueError, match="from_quat: expected shape \\(4,\\) or \\(N, 4\\)"):
        R.from_quat(np.ones(3))
    with pytest.raises(ValueError, match="seq must use the axes x, y, z, all lower case"):
        R.from_euler("xYz", [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="consecutive axes of seq must differ"):
        R.from_euler("xxy", [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="from_euler: expected angles of shape \\(3,\\)"):
        R.from_euler("xyz", [0.0, 0.0])
    with pytest.raises(TypeError, match="a single rotation is not subscriptable"):
        R.identity()[0]
    with pytest.raises(TypeError, match="a single rotation has no len"):
        len(R.identity())
    with pytest.raises(ValueError, match="Slerp.init: rotations must hold at least 2 rotations"):
        Slerp.init([0.0], R.identity(1))
    with pytest.raises(ValueError, match="got 3 rotations and 2 times"):
        Slerp.init([0.0, 1.0], R.identity(3))
    with pytest.raises(TypeError, match="Slerp.init: rotations must be a Rotation"):
        Slerp.init([0.0, 1.0], np.ones((2, 4)))
    with pytest.raises(ValueError, match="apply: expected vectors of shape"):
        R.identity().apply(np.ones(4))
