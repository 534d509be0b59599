"""XLA's options per compilation (JAX's ``compiler_options``): ``kiln.jit(f, compiler_options=...)`` and
``Lowered.compile(compiler_options=...)``. They reach XLA (one- and multi-device programs), combine as JAX's,
keep jit's signature caches and the persistent compile cache apart, and a name or value XLA rejects raises a
kiln error that leaves no cache entry behind."""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.driver.jit import CompilerOptions, JitArgumentError, JitError
from kiln.runtime import compile_cache as cc
from kiln.runtime._jaxlib import xc
from kiln.runtime.executable import CompilerOptionError, _compile_options

import kiln
import kiln.numpy as knp

X8 = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
NO_FUSION = {"xla_disable_hlo_passes": "fusion"}


def f(x):
    return knp.sin(x) * 2.0 + knp.exp(x)


def _want(x):
    return np.sin(x) * 2.0 + np.exp(x)


def _loop_fusions(hlo: str) -> int:
    """The number of loop fusions in an optimised HLO text: one for f, as XLA's fusion pass merges its ops; one per
    op when the pass is off (XLA then wraps each op in a fusion of its own)."""
    return hlo.count("kind=kLoop")


@pytest.fixture
def disk_cache(tmp_path):
    """A fresh persistent compile cache directory of this test's own (settings and counters restored after)."""
    saved = cc.settings()
    cc.configure(enabled=True, directory=str(tmp_path / "cache"), max_size=cc.DEFAULT_MAX_SIZE, min_compile_time=0.0)
    cc.reset_stats()
    yield
    cc.configure(**saved)
    cc.reset_stats()


# -- the options reach XLA ------------------------------------------------------------------------------------

@pytest.mark.backend("cpu")  # the pass names are the CPU compiler's
def test_disabling_a_pass_by_name_changes_the_optimized_hlo():
    plain = kiln.jit(f).lower(X8).compile().as_text()
    jf = kiln.jit(f, compiler_options=NO_FUSION)
    unfused = jf.lower(X8).compile().as_text()
    assert _loop_fusions(plain) == 1
    assert _loop_fusions(unfused) > 1 and "fused_computation" not in unfused
    np.testing.assert_allclose(np.asarray(jf(X8)), _want(X8), rtol=1e-6)
    # the program jf's calls run is that one
    assert [e.hlo_text() for e in jf._executables()] == [unfused]


@pytest.mark.backend("cpu")
def test_lowered_compile_takes_options_and_leaves_the_jitted_program_alone():
    jf = kiln.jit(f)
    lowered = jf.lower(X8)
    compiled = lowered.compile(compiler_options=NO_FUSION)
    assert _loop_fusions(compiled.as_text()) > 1
    np.testing.assert_allclose(np.asarray(compiled(X8)), _want(X8), rtol=1e-6)
    # the function's own calls, and compile() without options, get the program compiled without them
    np.testing.assert_allclose(np.asarray(jf(X8)), _want(X8), rtol=1e-6)
    assert [_loop_fusions(e.hlo_text()) for e in jf._executables()] == [1]
    assert _loop_fusions(lowered.compile().as_text()) == 1
    assert _loop_fusions(jf.lower(X8).compile({}).as_text()) == 1
    # positional, and through trace().lower()
    assert _loop_fusions(jf.trace(X8).lower().compile(NO_FUSION).as_text()) > 1


@pytest.mark.backend("cpu")
def test_compile_options_combine_with_jits_and_win_on_the_same_name():
    jf = kiln.jit(f, compiler_options=NO_FUSION)
    assert _loop_fusions(jf.lower(X8).compile({"xla_disable_hlo_passes": ""}).as_text()) == 1
    # another name: jit's option stays
    assert _loop_fusions(jf.lower(X8).compile({"xla_backend_optimization_level": 1}).as_text()) > 1
    # the same options as jit's: the function's own program
    lowered = jf.lower(X8)
    assert lowered.compile(dict(NO_FUSION)).runtime_executable() is jf._executables()[0]


def test_values_of_each_type_and_build_options():
    opts = {"xla_backend_optimization_level": 1, "xla_cpu_enable_fast_math": False, "xla_disable_hlo_passes": "",
            "exec_time_optimization_effort": 0.5, "optimization_level": 0,
            "xla_step_marker_location": "STEP_MARK_AT_ENTRY"}
    np.testing.assert_allclose(np.asarray(kiln.jit(f, compiler_options=opts)(X8)), _want(X8), rtol=1e-6)
    # NumPy scalars are read as Python ones (JAX passes np.bool_ to XLA as the int 1, which a bool option rejects)
    numpy_opts = {"xla_cpu_enable_fast_math": np.bool_(False), "xla_backend_optimization_level": np.int64(2)}
    np.testing.assert_allclose(np.asarray(kiln.jit(f, compiler_options=numpy_opts)(X8)), _want(X8), rtol=1e-6)


def test_compiler_options_type():
    assert CompilerOptions == dict[str, str | bool | int | float]


def test_sharded_program_gets_the_options(run_py):
    code = """
        import numpy as np, kiln, kiln.numpy as knp
        from kiln.sharding import NamedSharding, PartitionSpec as P
        from kiln.runtime.executable import CompilerOptionError
        mesh = kiln.make_mesh((2,), ("x",))
        s = NamedSharding(mesh, P("x"))
        def f(x):
            return knp.sin(x) * 2.0 + knp.exp(x)
        x = kiln.device_put(np.linspace(-1, 1, 8, dtype=np.float32), s)
        n = lambda c: c.as_text().count("kind=kLoop")
        plain = kiln.jit(f, in_shardings=s)
        unfused = kiln.jit(f, in_shardings=s, compiler_options={"xla_disable_hlo_passes": "fusion"})
        assert n(plain.lower(x).compile()) == 1 and n(unfused.lower(x).compile()) > 1
        assert n(plain.lower(x).compile({"xla_disable_hlo_passes": "fusion"})) > 1
        out = unfused(x)
        assert out.sharding == s and len(out.sharding.device_set) == 2
        np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(x)) * 2 + np.exp(np.asarray(x)), rtol=1e-6)
        try:
            kiln.jit(f, in_shardings=s, compiler_options={"xla_no_such_option": 1})(x)
            raise SystemExit("no error")
        except CompilerOptionError as e:
            assert "XLA has no option 'xla_no_such_option'" in str(e), e
        assert n(plain.lower(x).compile()) == 1
        print("OK")
    """
    proc = run_py(code, env={"KILN_NUM_CPU_DEVICES": "2", "KILN_PLATFORMS": "cpu"})
    assert proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


# -- caches ---------------------------------------------------------------------------------------------------

@pytest.mark.backend("cpu")
@pytest.mark.parametrize("options_first", [False, True])
def test_jit_signature_caches_keep_options_apart(options_first):
    def g(x):  # a function of this test's own: jit's caches belong to the function
        return knp.sin(x) * 2.0 + knp.exp(x)
    plain, unfused = kiln.jit(g), kiln.jit(g, compiler_options=NO_FUSION)
    for jf in ([unfused, plain] if options_first else [plain, unfused]):
        for _ in range(3):  # the later calls take the direct and C++ dispatch paths
            np.testing.assert_allclose(np.asarray(jf(X8)), _want(X8), rtol=1e-6)
    assert [_loop_fusions(e.hlo_text()) for e in plain._executables()] == [1]
    assert [_loop_fusions(e.hlo_text()) > 1 for e in unfused._executables()] == [True]
    # a jit of the same function with the same options shares the cache, in any order of the names
    same = kiln.jit(g, compiler_options={"xla_cpu_enable_fast_math": False, **NO_FUSION})
    same(X8)
    assert kiln.jit(g, compiler_options={**NO_FUSION, "xla_cpu_enable_fast_math": False})._cache_size() == 1


def test_equal_values_of_other_types_are_other_options():
    # True == 1 in Python, but XLA reads them differently: the int option takes 1 and rejects True
    def g(x):
        return x + 1
    np.testing.assert_array_equal(np.asarray(kiln.jit(g, compiler_options={"xla_backend_optimization_level": 1})(X8)),
                                  X8 + 1)
    with pytest.raises(CompilerOptionError, match="'xla_backend_optimization_level' takes int32 values"):
        kiln.jit(g, compiler_options={"xla_backend_optimization_level": True})(X8)


def test_disk_cache_key_has_the_options():
    dev = kiln.devices()[0]
    client, devices = dev.backend._client, xc.DeviceList((dev._raw,))
    text = kiln.jit(f).lower(X8).as_text()

    def key(options):
        return cc.cache_key(client, text, devices, _compile_options(dev, options))
    keys = {key(()), key((("xla_disable_hlo_passes", "fusion"),)), key((("xla_disable_hlo_passes", "algsimp"),)),
            key((("xla_backend_optimization_level", 1),)), key((("xla_backend_optimization_level", True),)),
            key((("optimization_level", 1),))}
    assert len(keys) == 6


def test_effort_levels_take_compiler_effort_level_members_and_names():
    """JAX's compilation-effort options: a kiln.CompilerEffortLevel member, its name ("O0" ... "O3") or XLA's number
    are the same option (the same serialized compile options, so the same disk cache key)."""
    assert [(m.name, m.value) for m in kiln.CompilerEffortLevel] == [("UNKNOWN", 0), ("O0", 9), ("O1", 19), ("O2", 29),
                                                                     ("O3", 39)]
    dev = kiln.devices()[0]
    client, devices = dev.backend._client, xc.DeviceList((dev._raw,))
    text = kiln.jit(f).lower(X8).as_text()

    def key(name, value):
        return cc.cache_key(client, text, devices, _compile_options(dev, ((name, value),)))
    for name in ("optimization_level", "memory_fitting_level"):
        assert key(name, kiln.CompilerEffortLevel.O1) == key(name, "O1") == key(name, 19) != key(name, "O3")
        assert key(name, "O3") == key(name, 39)
    for level in (kiln.CompilerEffortLevel.O3, "O0"):
        g = kiln.jit(f, compiler_options={"optimization_level": level, "memory_fitting_level": level})
        np.testing.assert_allclose(np.asarray(g(X8)), _want(X8), rtol=1e-6)
        lowered = kiln.jit(f).lower(X8)
        np.testing.assert_allclose(np.asarray(lowered.compile({"optimization_level": level})(X8)), _want(X8),
                                   rtol=1e-6)
    # a member and its number are one program of the jitted function
    assert kiln.jit(f, compiler_options={"optimization_level": kiln.CompilerEffortLevel.O2})._compiler_options == (
        ("optimization_level", 29),)


@pytest.mark.backend("cpu")
def test_disk_cache_serves_a_program_only_to_the_same_options(disk_cache):
    def g(x):
        return knp.sin(x) * 2.0 + knp.exp(x)
    unfused = kiln.jit(g, compiler_options=NO_FUSION)
    assert _loop_fusions(unfused.lower(X8).compile().as_text()) > 1
    assert cc.stats()["last"] == "miss"
    plain = kiln.jit(g)
    assert _loop_fusions(plain.lower(X8).compile().as_text()) == 1
    assert cc.stats()["last"] == "miss"  # not the entry compiled with the options
    unfused.clear_cache()
    assert _loop_fusions(unfused.lower(X8).compile().as_text()) > 1
    assert cc.stats()["last"] == "hit"
    plain.clear_cache()
    assert _loop_fusions(plain.lower(X8).compile().as_text()) == 1
    assert cc.stats()["last"] == "hit"
    assert cc.stats()["misses"] == 2


# -- errors ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"xla_no_such_option": 1}, r"kiln.jit\(f\): compiler_options: XLA has no option 'xla_no_such_option'\. The names "
                                r"are the fields of XLA's DebugOptions .*; correct the name or remove it"),
    ({"xla_cpu_enable_fast_math": "maybe"},
     r"kiln.jit\(f\): compiler_options: XLA's option 'xla_cpu_enable_fast_math' takes bool values, and 'maybe' is "
     r"not one; pass a bool \(True or False\)"),
    ({"xla_backend_optimization_level": "high"}, r"'xla_backend_optimization_level' takes int32 values, and 'high' is "
                                                 r"not one; pass an int"),
    ({"xla_disable_hlo_passes": 3}, r"'xla_disable_hlo_passes' takes string values, and '3' is not one; pass a str "
                                    r"\(a list of names: one comma-separated str\)"),
    ({"xla_step_marker_location": "SOMEWHERE"}, r"'xla_step_marker_location' takes enum values, and 'SOMEWHERE' is not "
                                                r"one; pass the name of one of the enum's values as a str"),
    ({"optimization_level": "O7"}, r"'optimization_level' is an effort level, and 'O7' is not one; pass "
                                   r"kiln.CompilerEffortLevel.O0 ... O3 or its name "
                                   r"\('UNKNOWN', 'O0', 'O1', 'O2', 'O3'\)"),
    ({"memory_fitting_level": 2.5}, r"'memory_fitting_level' takes int values, got a float \(2.5\); pass a value of "
                                    r"type int"),
])
def test_xla_rejects_a_name_or_value_at_compile_time(options, message):
    jf = kiln.jit(f, compiler_options=options)  # not checked until compiled (as JAX)
    for _ in range(2):  # a failed compile is not cached: each call says it again
        with pytest.raises(CompilerOptionError, match=message):
            jf(X8)
    with pytest.raises(CompilerOptionError, match=message):
        jf.lower(X8).compile()
    assert isinstance(CompilerOptionError(), (kiln.KilnError, ValueError, RuntimeError))
    # nothing poisoned: the same function without the option, and Lowered.compile with and without options
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(X8)), _want(X8), rtol=1e-6)
    lowered = kiln.jit(f).lower(X8)
    with pytest.raises(CompilerOptionError, match=message.replace(r"kiln.jit\(f\): ", "")):
        lowered.compile(options)
    np.testing.assert_allclose(np.asarray(lowered.compile()(X8)), _want(X8), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(lowered.compile({"xla_backend_optimization_level": 1})(X8)), _want(X8),
                               rtol=1e-6)


def test_a_failed_compile_writes_no_disk_entry(disk_cache):
    def g(x):
        return x * 3.0
    with pytest.raises(CompilerOptionError):
        kiln.jit(g, compiler_options={"xla_no_such_option": True})(X8)
    assert cc.stats()["writes"] == 0
    np.testing.assert_array_equal(np.asarray(kiln.jit(g)(X8)), X8 * 3)


@pytest.mark.parametrize("options, message", [
    ([("xla_backend_optimization_level", 0)], r"compiler_options must be a dict of XLA option names to values, e\.g\. "
                                              r"\{'xla_backend_optimization_level': 0\}; got a list"),
    ({0: True}, r"compiler_options has the key 0, a int; the keys are XLA's option names, as strs"),
    ({"xla_disable_hlo_passes": ["fusion", "algsimp"]},
     r"compiler_options\['xla_disable_hlo_passes'\] is a list \(\['fusion', 'algsimp'\]\); XLA's options take a str, "
     r"bool, int or float \(a list of names, e\.g\. passes to disable, is one comma-separated str\)"),
    ({"xla_backend_optimization_level": None}, r"compiler_options\['xla_backend_optimization_level'\] is a NoneType"),
])
def test_bad_types_raise_when_given(options, message):
    with pytest.raises(JitError, match=r"kiln.jit\(f\): " + message):
        kiln.jit(f, compiler_options=options)
    with pytest.raises(JitError, match=r"kiln.jit\(f\).lower\(...\).compile: " + message):
        kiln.jit(f).lower(X8).compile(options)
    assert isinstance(JitError(), TypeError)


def test_options_apply_to_top_level_calls_only():
    inner = kiln.jit(f, compiler_options=NO_FUSION)
    message = (r"kiln.jit\(f\): compiler_options=\{'xla_disable_hlo_passes': 'fusion'\} apply to the program of a "
               r"top-level call only, and this call is inside a trace .*Pass compiler_options to the outermost "
               r"kiln.jit instead, or call this function outside the transformation")
    with pytest.raises(JitArgumentError, match=message):
        kiln.jit(lambda x: inner(x) + 1)(X8)
    with pytest.raises(JitArgumentError, match=message):
        kiln.make_jaxpr(lambda x: inner(x) * 2)(X8)
    with pytest.raises(JitArgumentError, match=message):
        kiln.grad(lambda x: inner(x).sum())(X8)
    assert isinstance(JitArgumentError(), ValueError)  # JAX raises a ValueError
    # the outer function takes them, and the top-level call still works
    outer = kiln.jit(lambda x: f(x) + 1, compiler_options=NO_FUSION)
    np.testing.assert_allclose(np.asarray(outer(X8)), _want(X8) + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(inner(X8)), _want(X8), rtol=1e-6)
