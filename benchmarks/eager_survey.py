"""Eager calls across the API, kiln against JAX: ``python benchmarks/eager_survey.py [--threshold R] [-k TEXT]``.

run.py times a few eager operations closely; this times many (methods, operators, indexing, kiln.numpy, kiln.nn,
kiln.random, kiln.scipy.special) a little, to find the ones kiln runs much slower than JAX: typically a function
that JAX compiles whole when called eagerly and kiln ran primitive by primitive. Each call is timed in short
batches, the two frameworks' batches interleaved, and the rows are printed slowest (for kiln) first. Small
arrays: this measures the cost of a call, not of its arithmetic. The ratios of rows near 1 move by a few percent
from run to run; the survey is for the outliers.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import numpy as np
from frameworks import Framework, load_jax, load_kiln
from timing import Plan, interleaved


def calls(fw: Framework) -> dict[str, Callable[[], Any]]:
    """Name -> a call without arguments, on small arrays put on ``fw``'s device."""
    top = __import__(fw.name)
    np_, nn, random = fw.np, top.nn, top.random
    special = __import__(f"{fw.name}.scipy.special", fromlist=["special"])
    rng = np.random.default_rng(0)
    x = fw.put(rng.standard_normal(16, dtype=np.float32))
    m = fw.put(rng.standard_normal((32, 32), dtype=np.float32))
    ints = fw.put(np.arange(16, dtype=np.int32))
    i = fw.put(np.int32(3))
    key = random.PRNGKey(0)
    grad_sin = top.grad(lambda v: np_.sum(np_.sin(v)))
    vmap_dot = top.vmap(np_.dot)
    vg_mean = top.value_and_grad(lambda v: np_.mean(v * v))
    image = __import__(f"{fw.name}.image", fromlist=["image"])
    sla = __import__(f"{fw.name}.scipy.linalg", fromlist=["linalg"])
    img = fw.put(rng.standard_normal((8, 8, 3), dtype=np.float32))
    st_scale, st_shift = fw.put(np.array([1.5, 1.5], np.float32)), fw.put(np.zeros(2, np.float32))
    m6 = fw.put(0.5 * rng.standard_normal((6, 6), dtype=np.float32))
    spd6 = fw.put(np.eye(6, dtype=np.float32) * 6 + np.ones((6, 6), np.float32))
    b6 = fw.put(rng.standard_normal((6, 2), dtype=np.float32))
    lu6 = sla.lu_factor(m6)
    cho6 = sla.cho_factor(spd6)
    xs = fw.put(np.arange(16, dtype=np.float32))
    qkv = fw.put(rng.standard_normal((2, 4, 2, 8), dtype=np.float32))
    stats = __import__(f"{fw.name}.scipy.stats", fromlist=["stats"])
    signal = __import__(f"{fw.name}.scipy.signal", fromlist=["signal"])
    ndimage = __import__(f"{fw.name}.scipy.ndimage", fromlist=["ndimage"])
    sfft = __import__(f"{fw.name}.scipy.fft", fromlist=["fft"])
    vq = __import__(f"{fw.name}.scipy.cluster.vq", fromlist=["vq"])
    rot = __import__(f"{fw.name}.scipy.spatial.transform", fromlist=["transform"]).Rotation
    interp = __import__(f"{fw.name}.scipy.interpolate", fromlist=["interpolate"])
    rgi = interp.RegularGridInterpolator((np.arange(4.0), np.arange(4.0)), np.arange(16.0).reshape(4, 4))
    glorot = top.nn.initializers.glorot_normal()
    d6, e5 = fw.put(rng.standard_normal(6, dtype=np.float32)), fw.put(rng.standard_normal(5, dtype=np.float32))
    return {
        # indexing and updates
        "x[0]": lambda: x[0], "x[1:5]": lambda: x[1:5], "x[i]": lambda: x[i], "m[:, 0]": lambda: m[:, 0],
        "x[None, :]": lambda: x[None, :], "x.at[0].set(1.0)": lambda: x.at[0].set(1.0),
        # operators
        "x + 1": lambda: x + 1, "2 - x": lambda: 2 - x, "x / 2": lambda: x / 2, "x // 2": lambda: x // 2,
        "x % 2": lambda: x % 2, "x ** 2": lambda: x ** 2, "-x": lambda: -x, "abs(x)": lambda: abs(x),
        "x > 0": lambda: x > 0, "x == x": lambda: x == x, "ints & 6": lambda: ints & 6,
        "ints >> 1": lambda: ints >> 1,
        "~ints": lambda: ~ints, "m @ m": lambda: m @ m, "m @ m[0]": lambda: m @ m[0],
        # methods
        "x.sum()": lambda: x.sum(), "m.sum(0)": lambda: m.sum(0), "m.sum(axis=1)": lambda: m.sum(axis=1),
        "x.mean()": lambda: x.mean(), "x.max()": lambda: x.max(), "m.max(axis=0)": lambda: m.max(axis=0),
        "x.min()": lambda: x.min(), "x.prod()": lambda: x.prod(), "x.std()": lambda: x.std(),
        "x.var()": lambda: x.var(),
        "x.argmax()": lambda: x.argmax(), "(x > 0).any()": lambda: (x > 0).any(), "x.cumsum()": lambda: x.cumsum(),
        "x.reshape(4, 4)": lambda: x.reshape(4, 4), "m.T": lambda: m.T, "m.ravel()": lambda: m.ravel(),
        "m.flatten()": lambda: m.flatten(), "x.astype(int32)": lambda: x.astype(np_.int32),
        "x.astype(float16)": lambda: x.astype(np_.float16),
        # kiln.numpy / jax.numpy
        "add": lambda: np_.add(x, x), "maximum": lambda: np_.maximum(x, 0.0), "minimum": lambda: np_.minimum(x, 0.5),
        "where": lambda: np_.where(x > 0, x, 0.0), "clip": lambda: np_.clip(x, -1, 1), "exp": lambda: np_.exp(x),
        "log": lambda: np_.log(x), "sqrt": lambda: np_.sqrt(x), "abs": lambda: np_.abs(x),
        "isnan": lambda: np_.isnan(x),
        "isfinite": lambda: np_.isfinite(x), "floor": lambda: np_.floor(x), "round": lambda: np_.round(x, 2),
        "sum": lambda: np_.sum(x), "sum(m, axis=1)": lambda: np_.sum(m, axis=1),
        "max(x, axis=0)": lambda: np_.max(x, axis=0),
        "mean keepdims": lambda: np_.mean(m, axis=-1, keepdims=True), "argmax": lambda: np_.argmax(x),
        "all": lambda: np_.all(x > 0), "cumsum": lambda: np_.cumsum(x), "sort": lambda: np_.sort(x),
        "argsort": lambda: np_.argsort(x), "take": lambda: np_.take(x, ints), "dot": lambda: np_.dot(m, m),
        "einsum": lambda: np_.einsum("ij,jk->ik", m, m), "outer": lambda: np_.outer(x, x),
        "linalg.norm": lambda: np_.linalg.norm(x), "transpose": lambda: np_.transpose(m),
        "swapaxes": lambda: np_.swapaxes(m, 0, 1), "squeeze": lambda: np_.squeeze(x[None]),
        "concatenate": lambda: np_.concatenate([x, x]), "stack": lambda: np_.stack([x, x]),
        "tile": lambda: np_.tile(x, 2),
        "pad": lambda: np_.pad(x, 1), "diff": lambda: np_.diff(x), "flip": lambda: np_.flip(x),
        "arange": lambda: np_.arange(16), "linspace": lambda: np_.linspace(0, 1, 16), "zeros": lambda: np_.zeros(16),
        "ones_like": lambda: np_.ones_like(x), "full": lambda: np_.full((4,), 2.0), "eye": lambda: np_.eye(4),
        "array(list)": lambda: np_.array([1.0, 2.0]), "asarray(host)": lambda: np_.asarray(np.ones(16, np.float32)),
        # kiln.nn / jax.nn, kiln.random / jax.random, special functions
        "nn.relu": lambda: nn.relu(x), "nn.sigmoid": lambda: nn.sigmoid(x), "nn.softmax": lambda: nn.softmax(x),
        "nn.log_softmax": lambda: nn.log_softmax(x), "nn.logsumexp": lambda: nn.logsumexp(x),
        "nn.gelu": lambda: nn.gelu(x), "nn.one_hot": lambda: nn.one_hot(ints, 16),
        "random.normal": lambda: random.normal(key, (16,)), "random.uniform": lambda: random.uniform(key, (16,)),
        "random.split": lambda: random.split(key), "random.fold_in": lambda: random.fold_in(key, 1),
        "special.erf": lambda: special.erf(x), "special.gammaln": lambda: special.gammaln(x),
        # image resampling, SciPy / NumPy linear algebra compositions (one jitted program in JAX)
        "image.resize linear": lambda: image.resize(img, (12, 12, 3), "linear"),
        "image.resize cubic": lambda: image.resize(img, (12, 12, 3), "cubic"),
        "image.resize nearest": lambda: image.resize(img, (12, 12, 3), "nearest"),
        "image.scale_and_translate": lambda: image.scale_and_translate(img, (12, 12, 3), (0, 1), st_scale,
                                                                       st_shift, "linear"),
        "scipy.linalg.expm": lambda: sla.expm(m6), "scipy.linalg.expm_frechet": lambda: sla.expm_frechet(m6, m6),
        "scipy.linalg.funm(sin)": lambda: sla.funm(m6, np_.sin), "scipy.linalg.cholesky": lambda: sla.cholesky(spd6),
        "scipy.linalg.lu": lambda: sla.lu(m6), "scipy.linalg.lu_solve": lambda: sla.lu_solve(lu6, b6),
        "scipy.linalg.eigh_tridiagonal": lambda: sla.eigh_tridiagonal(d6, e5, eigvals_only=True),
        "scipy.linalg.block_diag": lambda: sla.block_diag(m6, spd6),
        "scipy.linalg.convolution_matrix": lambda: sla.convolution_matrix(d6, 4),
        "linalg.lstsq": lambda: np_.linalg.lstsq(m6, b6),
        "scipy.linalg.lu_factor": lambda: sla.lu_factor(m6), "scipy.linalg.cho_factor": lambda: sla.cho_factor(spd6),
        "scipy.linalg.cho_solve": lambda: sla.cho_solve(cho6, b6), "scipy.linalg.qr": lambda: sla.qr(m6),
        "scipy.linalg.svd": lambda: sla.svd(m6), "scipy.linalg.eigh": lambda: sla.eigh(spd6),
        "scipy.linalg.inv": lambda: sla.inv(m6), "scipy.linalg.det": lambda: sla.det(m6),
        "scipy.linalg.solve": lambda: sla.solve(m6, b6),
        "scipy.linalg.solve_triangular": lambda: sla.solve_triangular(spd6, b6, lower=True),
        "scipy.linalg.schur": lambda: sla.schur(m6), "scipy.linalg.hessenberg": lambda: sla.hessenberg(m6),
        "scipy.linalg.polar": lambda: sla.polar(spd6), "scipy.linalg.sqrtm": lambda: sla.sqrtm(spd6),
        "scipy.linalg.toeplitz": lambda: sla.toeplitz(d6), "scipy.linalg.circulant": lambda: sla.circulant(d6),
        "scipy.linalg.hankel": lambda: sla.hankel(d6), "scipy.linalg.qr_multiply": lambda: sla.qr_multiply(m6, b6.T),
        # more kiln.numpy / scipy / nn functions (some jitted whole in JAX)
        "fft.fft": lambda: np_.fft.fft(x), "fft.rfft": lambda: np_.fft.rfft(x), "fft.fft2": lambda: np_.fft.fft2(m),
        "interp": lambda: np_.interp(x, xs, x), "polyval": lambda: np_.polyval(x[:4], x),
        "searchsorted": lambda: np_.searchsorted(xs, x), "histogram": lambda: np_.histogram(x, 4)[0],
        "convolve": lambda: np_.convolve(x, x[:4]), "correlate": lambda: np_.correlate(x, x[:4]),
        "cov": lambda: np_.cov(m[:4]), "corrcoef": lambda: np_.corrcoef(m[:4]), "median": lambda: np_.median(x),
        "percentile": lambda: np_.percentile(x, 30.0), "nanmean": lambda: np_.nanmean(x),
        "kron": lambda: np_.kron(x[:4], x[:4]),
        "trapezoid": lambda: np_.trapezoid(x), "cross": lambda: np_.cross(x[:3], x[3:6]),
        "gradient": lambda: np_.gradient(x), "roll": lambda: np_.roll(x, 3), "rot90": lambda: np_.rot90(m),
        "tril": lambda: np_.tril(m), "vander": lambda: np_.vander(x[:4]),
        "unique(size=)": lambda: np_.unique(ints, size=4),
        "ediff1d": lambda: np_.ediff1d(x), "logaddexp": lambda: np_.logaddexp(x, x), "hypot": lambda: np_.hypot(x, x),
        "sinc": lambda: np_.sinc(x), "nan_to_num": lambda: np_.nan_to_num(x), "allclose": lambda: np_.allclose(x, x),
        "isclose": lambda: np_.isclose(x, x), "argwhere(size=)": lambda: np_.argwhere(x > 0, size=4),
        "linalg.inv": lambda: np_.linalg.inv(m6), "linalg.eigh": lambda: np_.linalg.eigh(spd6),
        "linalg.svd": lambda: np_.linalg.svd(m6), "linalg.slogdet": lambda: np_.linalg.slogdet(m6),
        "special.logsumexp": lambda: special.logsumexp(x), "special.xlogy": lambda: special.xlogy(x, x),
        "special.entr": lambda: special.entr(x), "special.gammainc": lambda: special.gammainc(xs + 1, xs + 1),
        "special.betainc": lambda: special.betainc(xs + 1, xs + 1, xs / 16),
        "special.ndtri": lambda: special.ndtri(xs / 16), "special.hyp1f1": lambda: special.hyp1f1(xs + 1, xs + 2, x),
        "special.zeta": lambda: special.zeta(xs + 2, xs + 1), "special.gamma": lambda: special.gamma(xs + 1),
        "stats.norm.logpdf": lambda: stats.norm.logpdf(x), "stats.norm.cdf": lambda: stats.norm.cdf(x),
        "signal.convolve": lambda: signal.convolve(x, x[:4]),
        "signal.fftconvolve": lambda: signal.fftconvolve(x, x[:4]),
        "nn.silu": lambda: nn.silu(x), "nn.softplus": lambda: nn.softplus(x), "nn.elu": lambda: nn.elu(x),
        "nn.standardize": lambda: nn.standardize(m), "nn.glu": lambda: nn.glu(m),
        "nn.dot_product_attention": lambda: nn.dot_product_attention(qkv, qkv, qkv),
        # samplers, distributions, signal and image processing (jitted whole in JAX)
        "random.gamma": lambda: random.gamma(key, 2.5, (16,)),
        "random.beta": lambda: random.beta(key, 2.0, 3.0, (16,)),
        "random.dirichlet": lambda: random.dirichlet(key, xs[:3] + 1),
        "random.poisson": lambda: random.poisson(key, 3.0, (16,)),
        "random.categorical": lambda: random.categorical(key, m), "random.choice": lambda: random.choice(key, 16, (4,)),
        "random.permutation": lambda: random.permutation(key, 16),
        "random.bernoulli": lambda: random.bernoulli(key, 0.3, (16,)),
        "random.truncated_normal": lambda: random.truncated_normal(key, -1.0, 1.0, (16,)),
        "random.multivariate_normal": lambda: random.multivariate_normal(key, d6, spd6),
        "random.t": lambda: random.t(key, 3.0, (16,)), "random.randint": lambda: random.randint(key, (16,), 0, 10),
        "stats.gamma.logpdf": lambda: stats.gamma.logpdf(xs + 1, 2.0),
        "stats.beta.cdf": lambda: stats.beta.cdf(xs / 16, 2.0, 3.0),
        "stats.t.logpdf": lambda: stats.t.logpdf(x, 3.0), "stats.poisson.logpmf": lambda: stats.poisson.logpmf(xs, 3.0),
        "stats.multivariate_normal.logpdf": lambda: stats.multivariate_normal.logpdf(d6, d6, spd6),
        "signal.welch": lambda: signal.welch(x, nperseg=8)[1], "signal.stft": lambda: signal.stft(x, nperseg=8)[2],
        "ndimage.map_coordinates": lambda: ndimage.map_coordinates(m, [xs / 2, xs / 2], order=1),
        "scipy.fft.dct": lambda: sfft.dct(x), "scipy.fft.idct": lambda: sfft.idct(x),
        "scipy.fft.dctn": lambda: sfft.dctn(m),
        "cluster.vq": lambda: vq.vq(m[:8], m[:3])[0], "bincount": lambda: np_.bincount(ints, length=16),
        "digitize": lambda: np_.digitize(x, xs), "histogram2d": lambda: np_.histogram2d(x, x, 4)[0],
        "polyfit": lambda: np_.polyfit(xs, x, 2), "polymul": lambda: np_.polymul(x[:4], x[:3]),
        "lexsort": lambda: np_.lexsort((x, ints)), "argpartition": lambda: np_.argpartition(x, 3),
        "partition": lambda: np_.partition(x, 3), "insert": lambda: np_.insert(x, 2, 5.0),
        "delete": lambda: np_.delete(x, 2), "select": lambda: np_.select([x > 0, x < -1], [x, -x], 0.0),
        "nanargmax": lambda: np_.nanargmax(x), "nanstd": lambda: np_.nanstd(x),
        "average": lambda: np_.average(x, weights=xs), "cumprod": lambda: np_.cumprod(x),
        "inner": lambda: np_.inner(x, x), "matrix_power": lambda: np_.linalg.matrix_power(m6, 3),
        "meshgrid": lambda: np_.meshgrid(x, x)[0], "triu_indices": lambda: np_.triu_indices(4)[0],
        "packbits": lambda: np_.packbits(ints > 3), "piecewise": lambda: np_.piecewise(x, [x < 0], [-1.0, 1.0]),
        "nn.initializers.glorot_normal": lambda: glorot(key, (8, 8)), "nn.one_hot 2d": lambda: nn.one_hot(ints[:4], 5),
        "spatial.Rotation.from_euler": lambda: rot.from_euler("xyz", x[:3]).as_matrix(),
        "interpolate.RegularGridInterpolator": lambda: rgi(x[:2][None]),
        # transformations called eagerly (no jit around them)
        "grad(sum of sin)": lambda: grad_sin(x), "vmap(dot)": lambda: vmap_dot(m, m),
        "value_and_grad(mean sq)": lambda: vg_mean(x), "jvp(tanh)": lambda: top.jvp(np_.tanh, (x,), (x,)),
        # to the host
        "float(x[0])": lambda: float(x[0]), "x[0].item()": lambda: x[0].item(),
        "np.asarray(x + 0)": lambda: np.asarray(x + 0),
        "x.tolist()": lambda: x.tolist(),
    }


def survey(frameworks: list[Framework], names: list[str], batches: int, number: int) -> dict[str, dict[str, float]]:
    """Median seconds per call of each named call of each framework, their batches interleaved (timing.py)."""
    made = {}
    for fw in frameworks:
        fw.enter()  # (each framework's arrays made under its own settings: JAX's need its tracebacks on)
        made[fw.name] = calls(fw)
    enter = {fw.name: fw.enter for fw in frameworks}
    times: dict[str, dict[str, float]] = {}
    for name in names:
        plans = {fw.name: Plan(made[fw.name][name], fw.block, number, batches, warmup=3) for fw in frameworks}
        times[name] = interleaved(plans, enter, rounds=1)[0]
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the calls whose name contains this text")
    parser.add_argument("--threshold", type=float, default=0.0,
                        help="print only the rows whose kiln/jax ratio is at least this")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--number", type=int, default=100, help="calls per batch")
    args = parser.parse_args(argv)
    kiln_fw = load_kiln()  # kiln first: its C++ dispatch path is set up only when jax is not imported yet
    try:
        frameworks = [kiln_fw, load_jax()]
    except ImportError:
        print("jax is not installed: nothing to compare with (python3 -m nox -s bench installs it)")
        return 1
    kiln_fw.enter()
    names = [n for n in calls(kiln_fw) if args.k in n]
    times = survey(frameworks, names, args.batches, args.number)
    rows = sorted(((t["kiln"] / t["jax"], n, t) for n, t in times.items()), reverse=True)
    print("| call | kiln | jax | kiln/jax |\n| --- | --- | --- | --- |")
    for ratio, name, t in rows:
        if ratio >= args.threshold:
            print(f"| `{name}` | {t['kiln'] * 1e6:.2f} µs | {t['jax'] * 1e6:.2f} µs | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
