"""kiln.explain_cache_misses says why a jitted function was traced again."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_explains_a_dtype_change():
    f = kiln.jit(lambda x: x + 1)
    f(knp.ones(3))
    with kiln.explain_cache_misses():
        with pytest.warns(UserWarning, match=r"argument shapes/dtypes changed \(f32\[3\] -> i32\[3\]\)"):
            f(knp.ones(3, dtype=np.int32))


def test_explains_a_static_change_and_stays_quiet_on_hits(recwarn):
    f = kiln.jit(lambda x, n: x * n, static_argnames="n")
    x = knp.ones(2)
    f(x, n=2)
    with kiln.explain_cache_misses():
        f(x, n=2)
        assert not [w for w in recwarn if "cache miss" in str(w.message)]
        with pytest.warns(UserWarning, match="static arguments changed"):
            f(x, n=3)
