"""kiln.nn.initializers: JAX's values for the same keys, the variances they promise, shapes,
dtypes, and error messages."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import random
from kiln.nn import initializers as init

# jax.nn.initializers (JAX 0.10.2) with key(7): (values, shape).
JAX_VALUES = {
    'glorot_uniform': (
        [0.32235187292099, 0.8788197040557861, -0.36506277322769165, -0.10376865416765213, 0.4275188744068146,
         0.24243448674678802, -0.09526625275611877, -0.1639050841331482, -0.7966422438621521, -0.7596684098243713,
         -0.23850280046463013, 0.6318743228912354],
        (3, 4)),
    'glorot_normal': (
        [0.2609083652496338, 1.0177783966064453, -0.2981925904750824, -0.08172425627708435, 0.35486385226249695,
         0.19358323514461517, -0.07499244064092636, -0.12967485189437866, -0.8172140717506409, -0.7505244016647339,
         -0.1903381645679474, 0.5696313977241516],
        (3, 4)),
    'he_uniform': (
        [0.4924006164073944, 1.3424192667007446, -0.5576425790786743, -0.1585092395544052, 0.6530458331108093,
         0.3703247904777527, -0.1455215960741043, -0.250369131565094, -1.2168910503387451, -1.1604126691818237,
         -0.3643190264701843, 0.9652039408683777],
        (3, 4)),
    'he_normal': (
        [0.3985441327095032, 1.5546823740005493, -0.45549675822257996, -0.12483587116003036, 0.5420635342597961,
         0.29570332169532776, -0.11455285549163818, -0.1980816274881363, -1.2483152151107788, -1.1464450359344482,
         -0.29074639081954956, 0.8701264262199402],
        (3, 4)),
    'lecun_uniform': (
        [0.34817981719970703, 0.9492337703704834, -0.39431285858154297, -0.11208295822143555, 0.461773157119751,
         0.2618591785430908, -0.10289931297302246, -0.17703771591186523, -0.8604719638824463, -0.8205356597900391,
         -0.2576124668121338, 0.682502269744873],
        (3, 4)),
    'lecun_normal': (
        [0.28181323409080505, 1.0993263721466064, -0.32208481431007385, -0.08827228844165802, 0.38329675793647766,
         0.20909379422664642, -0.08100109547376633, -0.14006485044956207, -0.8826920986175537, -0.8106590509414673,
         -0.2055887132883072, 0.6152722835540771],
        (3, 4)),
    'normal': (
        [0.04512351378798485, 0.19534508883953094, -0.05162394791841507, -0.014094029553234577, 0.06154967099428177],
        (5,)),
    'uniform': (
        [0.06740899384021759, 0.09746169298887253, 0.03028435818850994, 0.04439585283398628, 0.07308866083621979],
        (5,)),
    'truncated_normal': (
        [0.21467918157577515, 0.8374428749084473, -0.2453572005033493, -0.06724390387535095, 0.2919871211051941],
        (5,)),
    'variance_scaling_conv': (
        [0.1595357060432434, 0.6906492114067078, -0.18251821398735046, -0.04982991889119148, 0.2176109403371811,
         0.11819873005151749, -0.04572317749261856, -0.07910279184579849, -0.5223930478096008, -0.4746122360229492,
         -0.11621060967445374, 0.35341665148735046, 0.18672651052474976, -0.617424726486206, 0.5211347937583923,
         -0.01333413366228342, -0.09006915986537933, 0.2587120532989502, -0.12113337963819504, 0.6898258924484253,
         0.5356165170669556, -0.0923922210931778, -0.135959193110466, 0.16466262936592102, 0.2442135065793991,
         -0.4226416349411011, 0.2807481288909912, -0.1284225583076477, 0.022007079795002937, -0.19163809716701508,
         0.6074953675270081, -0.6650179028511047, 0.4902987778186798, -0.20925144851207733, -0.679990291595459,
         0.5836187601089478, -0.495328813791275, 0.018127603456377983, 0.07682923227548599, -0.13424502313137054,
         -0.34310436248779297, 0.34956878423690796, -0.31543058156967163, -0.03940874710679054,
         0.05256068706512451, 0.30715757608413696, -0.13865990936756134, 0.1986723095178604],
        (2, 2, 3, 4)),
    'variance_scaling_geo': (
        [0.3064371347427368, 0.8354318141937256, -0.3470393717288971, -0.09864553064107895, 0.4064119756221771,
         0.2304653376340866, -0.09056289494037628, -0.15581297874450684, -0.7573114633560181, -0.7221630811691284,
         -0.22672775387763977, 0.6006782650947571, 0.35433241724967957, -0.8090412616729736, 0.756470263004303],
        (3, 5)),
}


CASES = {
    "glorot_uniform": lambda k: init.glorot_uniform()(k, (3, 4)),
    "glorot_normal": lambda k: init.glorot_normal()(k, (3, 4)),
    "he_uniform": lambda k: init.he_uniform()(k, (3, 4)),
    "he_normal": lambda k: init.he_normal()(k, (3, 4)),
    "lecun_uniform": lambda k: init.lecun_uniform()(k, (3, 4)),
    "lecun_normal": lambda k: init.lecun_normal()(k, (3, 4)),
    "normal": lambda k: init.normal(0.1)(k, (5,)),
    "uniform": lambda k: init.uniform(0.1)(k, (5,)),
    "truncated_normal": lambda k: init.truncated_normal(0.5)(k, (5,)),
    "variance_scaling_conv": lambda k: init.variance_scaling(2.0, "fan_out", "normal")(k, (2, 2, 3, 4)),
    "variance_scaling_geo": lambda k: init.variance_scaling(1.0, "fan_geo_avg", "uniform", in_axis=0,
                                                            out_axis=1)(k, (3, 5)),
}


def test_initializers_give_jax_values():
    key = random.key(7)
    for name, fn in CASES.items():
        values, shape = JAX_VALUES[name]
        got = fn(key)
        assert got.shape == shape and got.dtype == np.float32, name
        np.testing.assert_array_equal(np.asarray(got), np.array(values, np.float32).reshape(shape), err_msg=name)


def test_aliases_and_public_module():
    assert init.xavier_uniform is init.glorot_uniform and init.xavier_normal is init.glorot_normal
    assert init.kaiming_uniform is init.he_uniform and init.kaiming_normal is init.he_normal
    assert kiln.nn.initializers is init


def test_variances():
    key = random.key(0)
    fan_in, fan_out = 200, 300
    shape = (fan_in, fan_out)
    want = {"glorot_uniform": 2 / (fan_in + fan_out), "glorot_normal": 2 / (fan_in + fan_out),
            "he_uniform": 2 / fan_in, "he_normal": 2 / fan_in, "lecun_uniform": 1 / fan_in, "lecun_normal": 1 / fan_in}
    for name, var in want.items():
        w = np.asarray(getattr(init, name)()(key, shape), np.float64)
        assert abs(w.mean()) < 5 * np.sqrt(var / w.size), name
        np.testing.assert_allclose(w.var(), var, rtol=0.03, err_msg=name)
        bound = np.sqrt(3 * var) if name.endswith("uniform") else 2 * np.sqrt(var) / .87962566103423978
        assert np.abs(w).max() <= bound * (1 + 1e-6), name
    # a convolution kernel: the receptive field multiplies the fans
    w = np.asarray(init.he_normal()(key, (3, 3, 16, 32)), np.float64)
    np.testing.assert_allclose(w.var(), 2 / (3 * 3 * 16), rtol=0.05)
    w = np.asarray(init.variance_scaling(1.0, "fan_avg", "normal", batch_axis=0)(key, (4, 100, 300)), np.float64)
    np.testing.assert_allclose(w.var(), 2 / 400, rtol=0.05)


def test_constants_and_simple_initializers():
    key = random.key(1)
    z = init.zeros(key, (2, 3))
    assert z.dtype == np.float32 and not np.asarray(z).any()
    o = init.ones(key, (4,), np.float16)
    assert o.dtype == np.float16 and np.all(np.asarray(o) == 1)
    np.testing.assert_array_equal(np.asarray(init.constant(2.5)(key, (2,))), [2.5, 2.5])
    u = np.asarray(init.uniform(0.5)(key, (1000,)))
    assert u.min() >= 0 and u.max() < 0.5
    n = np.asarray(init.normal(2.0)(key, (N := 20_000,)), np.float64)
    np.testing.assert_allclose(n.std(), 2.0, rtol=0.03)
    t = np.asarray(init.truncated_normal(1.0, lower=-1.0, upper=1.0)(key, (N,)))
    assert np.all(np.abs(t) < 1.0)
    assert init.glorot_uniform(dtype=knp.bfloat16)(key, (4, 4)).dtype == knp.bfloat16
    assert init.he_normal()(key, (4, 4), np.float16).dtype == np.float16


def test_orthogonal_and_delta_orthogonal():
    key = random.key(2)
    for shape, col in [((4, 4), -1), ((6, 3), -1), ((3, 6), -1), ((2, 3, 8), -1), ((5, 2), 0)]:
        w = np.asarray(init.orthogonal(scale=2.0, column_axis=col)(key, shape), np.float64)
        assert w.shape == shape
        m = np.moveaxis(w, col, -1).reshape(-1, shape[col])
        gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=2e-5)
    assert init.orthogonal()(key, (0, 3)).shape == (0, 3)
    d = np.asarray(init.delta_orthogonal()(key, (3, 3, 4, 4)), np.float64)
    centre = d[1, 1]
    np.testing.assert_allclose(centre.T @ centre, np.eye(4), atol=2e-5)
    d[1, 1] = 0
    assert not d.any()
    c = init.variance_scaling(1.0, "fan_in", "uniform")(key, (200, 100), np.complex64)
    cv = np.asarray(c)
    assert c.dtype == np.complex64 and np.all(np.abs(cv) <= np.sqrt(1 / 200 * 2) * (1 + 1e-6))
    np.testing.assert_allclose(np.mean(np.abs(cv) ** 2), 1 / 200, rtol=0.05)


def test_initializers_under_jit_and_vmap():
    f = kiln.jit(lambda k: init.glorot_uniform()(k, (3, 4)))
    key = random.key(7)
    np.testing.assert_array_equal(np.asarray(f(key)), np.asarray(CASES["glorot_uniform"](key)))
    many = kiln.vmap(lambda k: init.he_normal()(k, (3, 4)))(random.split(key, 3))
    assert many.shape == (3, 3, 4)


def test_initializer_errors():
    key = random.key(0)
    with pytest.raises(ValueError, match="kiln.nn.initializers.variance_scaling: invalid mode 'fan_max'"):
        init.variance_scaling(1.0, "fan_max", "normal")
    with pytest.raises(ValueError, match="kiln.nn.initializers.variance_scaling: invalid distribution 'cauchy'"):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="cannot compute the fan-in and fan-out of a 1-dimensional weight"):
        init.glorot_uniform()(key, (5,))
    with pytest.raises(ValueError, match="in_axis 3 is out of bounds for a weight of shape"):
        init.glorot_uniform(in_axis=3)(key, (2, 2))
    with pytest.raises(ValueError, match="kiln.nn.initializers.orthogonal: needs a shape of at least 2 dimensions"):
        init.orthogonal()(key, (3,))
    with pytest.raises(ValueError, match="kiln.nn.initializers.delta_orthogonal: needs a 3-D, 4-D or 5-D shape"):
        init.delta_orthogonal()(key, (3, 3))
    with pytest.raises(ValueError, match=r"kiln.nn.initializers.delta_orthogonal: fan_in \(4\) must be less than or"):
        init.delta_orthogonal()(key, (3, 4, 2))
    with pytest.raises(ValueError, match="kiln.nn.initializers.normal: dtype must be a float or complex dtype"):
        init.normal()(key, (2,), np.int32)
    with pytest.raises(ValueError, match=r"kiln.nn.initializers.zeros: shape must not have negative dimensions"):
        init.zeros(key, (-1,))
