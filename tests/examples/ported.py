"""Loading JAX's example scripts ported to kiln (tests/examples/jax_ported/): under kiln as they are, or the same
source with JAX's imports put back (for the tests that compare the two libraries where JAX is installed)."""
from __future__ import annotations

import collections
import contextlib
import importlib.util
import io
import pathlib
import re
import threading
import types

import numpy as np

PORTED = pathlib.Path(__file__).resolve().parent / "jax_ported"
# The ports change only imports: these patterns put JAX's back.
TO_JAX = [(r"^import kiln as jax$", "import jax"), (r"^import kiln\.", "import jax."), (r"^from kiln\.", "from jax."),
          (r"^from kiln import", "from jax import")]


def load(name: str, lib: str = "kiln") -> types.ModuleType:
    """The port ``jax_ported/NAME.py`` under kiln, or (``lib="jax"``) the same source with JAX's imports."""
    if lib == "kiln":
        spec = importlib.util.spec_from_file_location(f"jax_ported_{name}", PORTED / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    source = (PORTED / f"{name}.py").read_text()
    for pattern, replacement in TO_JAX:
        source = re.sub(pattern, replacement, source, flags=re.M)
    assert "kiln" not in re.sub(r"#.*", "", source)
    module = types.ModuleType(f"jax_{name}")
    module.__file__ = str(PORTED / f"{name}.py")
    # (dont_inherit: the port's own __future__ imports, not this file's: a dataclass cell needs real annotations)
    exec(compile(source, f"jax_{name}.py", "exec", dont_inherit=True), module.__dict__)
    return module


def count_primitives(jaxpr, counts: collections.Counter | None = None, names: dict | None = None
                     ) -> collections.Counter:
    """How many equations of each primitive a jaxpr (kiln's or JAX's) has, nested programs (remat bodies) included;
    with ``names`` ({primitive: label}), only those primitives, counted under their labels."""
    counts = collections.Counter() if counts is None else counts
    for eqn in equations(jaxpr):
        name = eqn.primitive.name
        if names is None or name in names:
            counts[name if names is None else names[name]] += 1
    return counts


def fd_jacobian(fun, x, h: float = 1e-6) -> np.ndarray:
    """Central differences of a NumPy float64 function, entry by entry of x: shape fun(x).shape + x.shape (the
    oracle of the ported pages' derivatives)."""
    x = np.asarray(x, np.float64)
    cols = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(cols[0]) + x.shape)


def run_quietly(module: types.ModuleType, **kwargs) -> dict:
    """What a port's ``run(**kwargs)`` returns (a dict of its cells' results), with everything they printed under
    ``"stdout"``."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = module.run(**kwargs)
    res["stdout"] = buf.getvalue()
    return res


def within(fn, *args, seconds: float = 60):
    """What fn(*args) returns (or raises), run on a daemon thread: an AssertionError if it takes over ``seconds`` (a
    hang fails the test instead of the run)."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 (re-raised below, on the test's thread)
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} did not finish in {seconds} s (a hang?)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def equations(jaxpr):
    """The equations of ``jaxpr`` (kiln's or JAX's) and of the programs nested in them, depth first."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else [value]:  # (a cond's branches)
                inner = getattr(sub, "jaxpr", sub)
                inner = getattr(inner, "ir", inner)
                if hasattr(inner, "eqns"):
                    yield from equations(inner)


def scan_body(scan_eqn):
    """A scan equation's body program (JAX's ``jaxpr`` parameter, kiln's ``body``)."""
    body = scan_eqn.params.get("jaxpr", scan_eqn.params.get("body"))
    body = getattr(body, "jaxpr", body)
    return getattr(body, "ir", body)


def equations_building(jaxpr, shape):
    """The primitive names of the equations (not calls or loops) in ``jaxpr`` that build a value of ``shape``."""
    def nested(e):
        return any(hasattr(getattr(v, "jaxpr", v), "eqns") or hasattr(v, "ir") for v in e.params.values())
    return [e.primitive.name for e in equations(jaxpr) if not nested(e)
            and any(tuple(getattr(o, "aval", o).shape) == shape for o in e.outvars)]
