"""kiln.scipy.spatial.transform: ``Rotation`` and ``Slerp`` (as ``jax.scipy.spatial.transform``).

A rotation is stored as a unit quaternion ``(x, y, z, w)`` (scalar last, as SciPy), of shape ``(4,)`` for
one rotation or ``(N, 4)`` for a stack; both classes are NamedTuples, so they pass through ``jit``.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..numpy import linalg as _nla
from ..random import samplers as _samplers

__all__ = ["Rotation", "Slerp"]

_WHERE = "kiln.scipy.spatial.transform"


def _float(x):
    x = jnp.asarray(x)
    return x if dtypes.is_inexact(x.dtype) else x.astype(dtypes.default_float_dtype())


def _normalize(q):
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def _compose(p, q):
    """The quaternion product ``p q`` (apply q, then p)."""
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    w = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
    return jnp.concatenate([v, w], axis=-1)


def _elementary(axis: int, angle):
    """Quaternions of rotations by ``angle`` about the basis axis ``axis``."""
    half = angle / 2
    parts = [jnp.zeros_like(half)] * 3 + [jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def _check_seq(seq: str) -> tuple[list[int], bool]:
    if not isinstance(seq, str) or not 1 <= len(seq) <= 3:
        raise ValueError(f"{_WHERE}: seq must be a string of 1 to 3 axes ('xyz', 'ZXZ', ...), got {seq!r}")
    intrinsic, extrinsic = set(seq) <= set("XYZ"), set(seq) <= set("xyz")
    if not (intrinsic or extrinsic):
        raise ValueError(f"{_WHERE}: seq must use the axes x, y, z, all lower case (extrinsic) or all upper case "
                         f"(intrinsic), got {seq!r}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"{_WHERE}: consecutive axes of seq must differ, got {seq!r}")
    return ["xyz".index(c) for c in seq.lower()], intrinsic


class Rotation(NamedTuple):
    """Rotations in 3 dimensions (as ``scipy.spatial.transform.Rotation``), held as unit quaternions."""

    quat: jnp.ndarray

    # -- constructors --------------------------------------------------------------------------------
    @classmethod
    def from_quat(cls, quat) -> Rotation:
        """From quaternions ``(x, y, z, w)`` (normalized here)."""
        q = _float(quat)
        if q.shape[-1:] != (4,) or q.ndim > 2:
            raise ValueError(f"{_WHERE}.Rotation.from_quat: expected shape (4,) or (N, 4), got {q.shape}")
        return cls(_normalize(q))

    @classmethod
    def from_matrix(cls, matrix) -> Rotation:
        """From rotation matrices ``(3, 3)`` or ``(N, 3, 3)`` (Shepperd's method)."""
        m = _float(matrix)
        if m.shape[-2:] != (3, 3) or m.ndim > 3:
            raise ValueError(f"{_WHERE}.Rotation.from_matrix: expected shape (3, 3) or (N, 3, 3), got {m.shape}")
        diag = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], axis=-1)
        trace = jnp.sum(diag, axis=-1)
        choice = jnp.argmax(jnp.concatenate([diag, trace[..., None]], axis=-1), axis=-1)
        candidates = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            q = [None] * 4
            q[i] = 1 - trace + 2 * m[..., i, i]
            q[j] = m[..., j, i] + m[..., i, j]
            q[k] = m[..., k, i] + m[..., i, k]
            q[3] = m[..., k, j] - m[..., j, k]
            candidates.append(jnp.stack(q, axis=-1))
        candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                     m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
        q = candidates[3]
        for i in range(3):
            q = jnp.where((choice == i)[..., None], candidates[i], q)
        return cls(_normalize(q))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False) -> Rotation:
        """From rotation vectors (axis times angle, radians unless ``degrees``)."""
        v = _float(rotvec)
        if v.shape[-1:] != (3,) or v.ndim > 2:
            raise ValueError(f"{_WHERE}.Rotation.from_rotvec: expected shape (3,) or (N, 3), got {v.shape}")
        if degrees:
            v = jnp.deg2rad(v)
        angle = jnp.linalg.norm(v, axis=-1, keepdims=True)
        small = angle <= 1e-3
        safe = jnp.where(small, 1.0, angle)
        scale = jnp.where(small, 0.5 - angle ** 2 / 48 + angle ** 4 / 3840, jnp.sin(safe / 2) / safe)
        return cls(jnp.concatenate([scale * v, jnp.cos(angle / 2)], axis=-1))

    @classmethod
    def from_mrp(cls, mrp) -> Rotation:
        """From modified Rodrigues parameters."""
        p = _float(mrp)
        if p.shape[-1:] != (3,) or p.ndim > 2:
            raise ValueError(f"{_WHERE}.Rotation.from_mrp: expected shape (3,) or (N, 3), got {p.shape}")
        p2 = jnp.sum(p * p, axis=-1, keepdims=True)
        return cls(jnp.concatenate([2 * p, 1 - p2], axis=-1) / (1 + p2))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes ``seq`` (lower case: extrinsic, upper case: intrinsic)."""
        axes, intrinsic = _check_seq(seq)
        a = _float(angles)
        if a.ndim == 0:
            a = a[None]
        if a.shape[-1] != len(axes) or a.ndim > 2:
            raise ValueError(f"{_WHERE}.Rotation.from_euler: expected angles of shape ({len(axes)},) or "
                             f"(N, {len(axes)}) for seq {seq!r}, got {a.shape}")
        if degrees:
            a = jnp.deg2rad(a)
        q = _elementary(axes[0], a[..., 0])
        for n, axis in enumerate(axes[1:], 1):
            e = _elementary(axis, a[..., n])
            q = _compose(q, e) if intrinsic else _compose(e, q)
        return cls(q)

    @classmethod
    def identity(cls, num: int | None = None, dtype=float) -> Rotation:
        """The identity rotation (``num`` of them, or a single one)."""
        q = np.array([0.0, 0.0, 0.0, 1.0])
        if num is not None:
            q = np.tile(q, (int(num), 1))
        return cls(jnp.asarray(q, dtype=dtypes.canonicalize_dtype(np.dtype(dtype))))

    @classmethod
    def random(cls, random_key, num: int | None = None) -> Rotation:
        """Uniformly distributed rotations (normalized Gaussian quaternions) from a kiln.random key."""
        shape = (4,) if num is None else (int(num), 4)
        return cls(_normalize(_samplers.normal(random_key, shape)))

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """One stack of all the given rotations."""
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    # -- views ------------------------------------------------------------------------------------
    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions ``(x, y, z, w)`` (``(w, x, y, z)`` with ``scalar_first``); ``canonical``: the
        sign with ``w > 0`` (or the first non-zero component positive when ``w == 0``)."""
        q = self.quat
        if canonical:
            x, y, z, w = (q[..., i] for i in range(4))
            s = jnp.where(w != 0, jnp.sign(w), jnp.where(x != 0, jnp.sign(x), jnp.where(y != 0, jnp.sign(y),
                                                                                           jnp.sign(z))))
            q = q * s[..., None]
        if scalar_first:
            q = jnp.concatenate([q[..., 3:], q[..., :3]], axis=-1)
        return q

    def as_matrix(self):
        """The rotation matrices ``(3, 3)`` (or ``(N, 3, 3)``)."""
        x, y, z, w = (self.quat[..., i] for i in range(4))
        rows = [[w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z]]
        return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors (axis times angle in ``[0, pi]``; degrees with ``degrees``)."""
        q = jnp.where(self.quat[..., 3:] < 0, -self.quat, self.quat)
        v = q[..., :3]
        angle = 2 * jnp.arctan2(jnp.linalg.norm(v, axis=-1, keepdims=True), q[..., 3:])
        small = angle <= 1e-3
        safe = jnp.where(small, 1.0, angle)
        scale = jnp.where(small, 2 + angle ** 2 / 12 + 7 * angle ** 4 / 2880, safe / jnp.sin(safe / 2))
        out = scale * v
        return jnp.rad2deg(out) if degrees else out

    def as_mrp(self):
        """Modified Rodrigues parameters (of the quaternion with ``w >= 0``)."""
        q = jnp.where(self.quat[..., 3:] < 0, -self.quat, self.quat)
        return q[..., :3] / (1 + q[..., 3:])

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles about the axes ``seq`` (lower case: extrinsic, upper case: intrinsic); the first
        and last angles in ``[-pi, pi]``, the middle one in ``[0, pi]`` (repeated axes) or ``[-pi/2, pi/2]``.
        At a gimbal lock the third angle is set to 0, as SciPy."""
        axes, intrinsic = _check_seq(seq)
        if len(axes) != 3:
            raise ValueError(f"{_WHERE}.Rotation.as_euler: seq must have three axes, got {seq!r}")
        if intrinsic:
            axes = axes[::-1]
        i, j, k = axes
        symmetric = i == k
        if symmetric:
            k = 3 - i - j
        sign = (i - j) * (j - k) * (k - i) // 2
        q = self.quat
        if symmetric:
            a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
        else:
            a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
            c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
        middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
        eps = 1e-7
        lock0 = jnp.abs(middle) <= eps
        lock_pi = jnp.abs(middle - np.pi) <= eps
        half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
        first = half_sum - half_diff
        third = half_sum + half_diff
        # Gimbal lock: the third angle is 0 and the first carries the whole rotation (the first angle of the
        # extrinsic sequence, which is the last of the intrinsic one).
        locked = lock0 | lock_pi
        total = jnp.where(lock0, 2 * half_sum, 2 * half_diff * (1 if intrinsic else -1))
        if intrinsic:
            first = jnp.where(locked, 0.0, first)
            third = jnp.where(locked, total, third)
        else:
            third = jnp.where(locked, 0.0, third)
            first = jnp.where(locked, total, first)
        if not symmetric:
            third = third * sign
            middle = middle - np.pi / 2
        angles = jnp.stack([first, middle, third], axis=-1)
        angles = jnp.where(angles > np.pi, angles - 2 * np.pi, jnp.where(angles < -np.pi, angles + 2 * np.pi,
                                                                           angles))
        if intrinsic:
            angles = angles[..., ::-1]
        return jnp.rad2deg(angles) if degrees else angles

    # -- operations ---------------------------------------------------------------------------------
    def apply(self, vectors, inverse: bool = False):
        """Rotate ``vectors`` (``(3,)`` or ``(N, 3)``), or apply the inverse rotation."""
        v = _float(vectors)
        if v.shape[-1:] != (3,) or v.ndim > 2:
            raise ValueError(f"{_WHERE}.Rotation.apply: expected vectors of shape (3,) or (N, 3), got {v.shape}")
        m = self.as_matrix()
        if inverse:
            m = jnp.swapaxes(m, -1, -2)
        return jnp.einsum("...ij,...j->...i", m, v)

    def __mul__(self, other: Rotation) -> Rotation:
        """The composition: ``(self * other).apply(v) == self.apply(other.apply(v))``."""
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_normalize(_compose(self.quat, other.quat)))

    def inv(self) -> Rotation:
        """The inverse rotation(s)."""
        return Rotation(self.quat * jnp.asarray([-1.0, -1.0, -1.0, 1.0], dtype=self.quat.dtype))

    def magnitude(self):
        """The rotation angle(s) in ``[0, pi]``."""
        return 2 * jnp.arctan2(jnp.linalg.norm(self.quat[..., :3], axis=-1), jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None) -> Rotation:
        """The (weighted) mean rotation: the eigenvector of ``sum w q q^T`` with the largest eigenvalue."""
        q = jnp.atleast_2d(self.quat)
        w = jnp.ones(q.shape[0], q.dtype) if weights is None else _float(weights)
        if w.ndim != 1 or w.shape[0] != q.shape[0]:
            raise ValueError(f"{_WHERE}.Rotation.mean: weights must have one entry per rotation ({q.shape[0]}), "
                             f"got shape {w.shape}")
        k = jnp.einsum("n,ni,nj->ij", w, q, q)
        _, v = _nla.eigh(k)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (not a stack)."""
        return self.quat.ndim == 1

    def __getitem__(self, indexer) -> Rotation:
        if self.single:
            raise TypeError(f"{_WHERE}.Rotation: a single rotation is not subscriptable")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        if self.single:
            raise TypeError(f"{_WHERE}.Rotation: a single rotation has no len()")
        return self.quat.shape[0]


class Slerp(NamedTuple):
    """Spherical linear interpolation of rotations (as ``scipy.spatial.transform.Slerp``); make one with
    ``Slerp.init(times, rotations)`` and call it with times in ``[times[0], times[-1]]``."""

    times: jnp.ndarray
    timedelta: jnp.ndarray
    rotations: Rotation
    rotvecs: jnp.ndarray

    @classmethod
    def init(cls, times, rotations: Rotation) -> Slerp:
        if not isinstance(rotations, Rotation):
            raise TypeError(f"{_WHERE}.Slerp.init: rotations must be a Rotation, got {type(rotations).__name__}")
        if rotations.single or len(rotations) < 2:
            raise ValueError(f"{_WHERE}.Slerp.init: rotations must hold at least 2 rotations")
        t = jnp.asarray(times, dtype=rotations.quat.dtype)
        if t.ndim != 1:
            raise ValueError(f"{_WHERE}.Slerp.init: times must be one-dimensional, got {t.ndim} dimensions")
        if t.shape[0] != len(rotations):
            raise ValueError(f"{_WHERE}.Slerp.init: got {len(rotations)} rotations and {t.shape[0]} times; they "
                             "must match")
        start = Rotation(rotations.quat[:-1])
        steps = (start.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return cls(times=t, timedelta=t[1:] - t[:-1], rotations=start, rotvecs=steps)

    def __call__(self, times) -> Rotation:
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError(f"{_WHERE}.Slerp: times must be at most one-dimensional, got shape {t.shape}")
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        ind = jnp.clip(jnp.searchsorted(self.times, t) - 1, 0, self.timedelta.shape[0] - 1)
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        out = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return out[0] if single else out
