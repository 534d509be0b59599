"""The persistent compile cache (runtime/compile_cache.py): key, entries, corruption, concurrency, eviction."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from kiln.frontend.core.config import ConfigError
from kiln.runtime import compile_cache as cc
from kiln.runtime._jaxlib import xc
from kiln.runtime.executable import _compile_options

import kiln
from kiln import runtime

F32_4 = [((4,), np.float32)]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Same program as ADD_F32_4 with source locations: the key must not see them.
ADD_WITH_LOCS = """module {
  func.func public @main(%a: tensor<4xf32> loc("a"), %b: tensor<4xf32> loc("b")) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32> loc(#loc1)
    return %0 : tensor<4xf32> loc(#loc2)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("/home/me/model.py":12:7)
#loc2 = loc("model.py":13:4)
"""

MUL_F32_4 = """func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty cache directory for one test (settings and counters restored afterwards)."""
    saved = cc.settings()
    d = tmp_path / "cache"
    cc.configure(enabled=True, directory=str(d), max_size=cc.DEFAULT_MAX_SIZE, min_compile_time=0.0)
    cc.reset_stats()
    monkeypatch.setenv("KILN_CACHE_DIR", str(d))  # for subprocesses
    monkeypatch.delenv("KILN_COMPILATION_CACHE", raising=False)
    yield d
    cc.configure(**saved)
    cc.reset_stats()


def _entries(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith(cc.SUFFIX)) if os.path.isdir(d) else []


def _run_add(exe, dev, a=(1, 2, 3, 4), b=(10, 20, 30, 40)):
    a, b = np.array(a, np.float32), np.array(b, np.float32)
    (out,) = exe.execute([runtime.put(a, dev), runtime.put(b, dev)])
    return runtime.to_numpy(out)


def _key(module, dev, text=None, opts=None, client=None, device_list=None):
    return cc.cache_key(client or dev.backend._client, module, device_list or xc.DeviceList((dev._raw,)),
                        opts or _compile_options(dev), text)


# ---------------------------------------------------------------------------------------------- the key

class _Client:
    """A client that reports another platform (the key reads ``platform`` and ``platform_version``)."""

    def __init__(self, platform="cpu", platform_version="cpu"):
        self.platform, self.platform_version = platform, platform_version


class _Dev:
    def __init__(self, kind):
        self.device_kind = kind


def _fresh_static(monkeypatch):
    monkeypatch.setattr(cc, "_client_parts", {})


def test_key_changes_with_the_module(cpu0, add_f32_4):
    assert _key(add_f32_4, cpu0) != _key(MUL_F32_4, cpu0)
    assert _key(add_f32_4, cpu0) == _key(add_f32_4, cpu0)


def test_key_ignores_locations(cpu0, add_f32_4):
    from jaxlib.mlir import ir
    with runtime.mlir_context():
        mod = ir.Module.parse(ADD_WITH_LOCS)
        printed = ir.Module.parse(add_f32_4).operation.get_asm()  # as kiln's lowering prints it
    plain = _key(printed, cpu0)
    assert "loc(" in mod.operation.get_asm(enable_debug_info=True)
    assert _key(ADD_WITH_LOCS, cpu0) == plain  # text with loc(...)
    assert _key(mod, cpu0) == plain  # an ir.Module carrying locations
    assert _key(mod, cpu0, text=ADD_WITH_LOCS) == plain  # the caller's text with locations
    assert cc.module_text(mod) == printed


def test_key_changes_with_kiln_and_jaxlib_versions(cpu0, add_f32_4, monkeypatch):
    base = _key(add_f32_4, cpu0)
    _fresh_static(monkeypatch)
    monkeypatch.setattr(cc, "_kiln_version", ["999.0"])
    assert _key(add_f32_4, cpu0) != base
    monkeypatch.undo()
    _fresh_static(monkeypatch)
    monkeypatch.setattr(cc, "JAXLIB_VERSION", "0.0.1")
    assert _key(add_f32_4, cpu0) != base
    monkeypatch.undo()
    _fresh_static(monkeypatch)
    monkeypatch.setattr(cc, "API_VERSION", -1)  # jaxlib's binding API number
    assert _key(add_f32_4, cpu0) != base


def test_key_changes_with_platform_platform_version_plugin_and_host_cpu(cpu0, add_f32_4, monkeypatch):
    base = _key(add_f32_4, cpu0)
    same = _key(add_f32_4, cpu0, client=_Client("cpu", "cpu"))
    assert same == base
    assert _key(add_f32_4, cpu0, client=_Client("cuda", "cpu")) != base
    assert _key(add_f32_4, cpu0, client=_Client("cpu", "cpu 2")) != base
    _fresh_static(monkeypatch)
    monkeypatch.setattr(cc, "_plugin_version", lambda client: "cuda /x/pjrt_c_api_gpu_plugin.so 123 456")
    assert _key(add_f32_4, cpu0) != base
    monkeypatch.undo()
    _fresh_static(monkeypatch)
    monkeypatch.setattr(cc, "_host_cpu", lambda: "x86_64\nflags: sse2")
    assert _key(add_f32_4, cpu0) != base


def test_key_changes_with_compile_options(cpu0, add_f32_4):
    base = _key(add_f32_4, cpu0)
    debug = _compile_options(cpu0)
    debug.executable_build_options.debug_options.xla_cpu_enable_fast_math = \
        not debug.executable_build_options.debug_options.xla_cpu_enable_fast_math
    assert _key(add_f32_4, cpu0, opts=debug) != base
    parts = _compile_options(cpu0)
    parts.num_partitions = 2
    assert _key(add_f32_4, cpu0, opts=parts) != base
    other = _compile_options(cpu0)
    other.device_assignment = xc.DeviceAssignment.create(np.array([[cpu0._raw.id + 1]]))
    assert _key(add_f32_4, cpu0, opts=other) != base


def test_key_changes_with_device_kinds(cpu0, add_f32_4):
    base = _key(add_f32_4, cpu0)
    assert _key(add_f32_4, cpu0, device_list=[_Dev(cpu0._raw.device_kind)]) == base
    assert _key(add_f32_4, cpu0, device_list=[_Dev("NVIDIA H100 80GB HBM3")]) != base


@pytest.mark.parametrize("var", ["XLA_FLAGS", "LIBTPU_INIT_ARGS"])
def test_key_changes_with_flag_variables(cpu0, add_f32_4, monkeypatch, var):
    monkeypatch.delenv(var, raising=False)
    base = _key(add_f32_4, cpu0)
    monkeypatch.setenv(var, "--xla_cpu_enable_fast_math=true")
    assert _key(add_f32_4, cpu0) != base


def test_key_is_equal_across_processes(cpu0, add_f32_4, run_py):
    code = f"""
        from kiln import runtime
        from kiln.runtime import compile_cache as cc
        from kiln.runtime._jaxlib import xc
        from kiln.runtime.executable import _compile_options
        dev = runtime.local_device("cpu", 0)
        print(cc.cache_key(dev.backend._client, {add_f32_4!r}, xc.DeviceList((dev._raw,)), _compile_options(dev)))
    """
    keys = {run_py(code).stdout.strip().splitlines()[-1] for _ in range(2)}
    assert keys == {_key(add_f32_4, cpu0)}


# ------------------------------------------------------------------------------------- hits and misses

def test_an_executable_loaded_from_disk_serializes_as_its_entry(cache, cpu0, add_f32_4):
    from kiln.runtime import serialized_executable as se
    assert runtime.compile(add_f32_4, cpu0, F32_4).cache_entry is None  # compiled here
    again = runtime.compile(add_f32_4, cpu0, F32_4)
    assert again.cache_entry == (str(cache), again.cache_entry[1]) and cc.stats()["last"] == "hit"
    assert se.serialize(again).endswith(cc.read_entry(*again.cache_entry))
    for name in _entries(cache):  # the entry trimmed away since: no bytes to write
        os.remove(os.path.join(cache, name))
    with pytest.raises(se.SerializedExecutableError, match="loaded from the persistent compile cache, whose entry "
                                                           r"has been removed since .*kiln.clear_caches\(\) first"):
        se.serialize(again)


def test_second_compile_loads_from_disk(cache, cpu0, add_f32_4):
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats() == {"hits": 0, "misses": 1, "writes": 1, "errors": 0, "skipped": 0, "last": "miss"}
    assert len(_entries(cache)) == 1
    again = runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats()["hits"] == 1 and cc.stats()["last"] == "hit"
    np.testing.assert_array_equal(_run_add(again, cpu0), _run_add(exe, cpu0))
    np.testing.assert_array_equal(_run_add(again, cpu0), [11, 22, 33, 44])
    # what XLA tells about a loaded executable is what it tells about a compiled one
    assert again.hlo_text() == exe.hlo_text()
    assert again.cost_analysis() == exe.cost_analysis()
    assert again.memory_stats() is not None
    assert again.num_args == 2
    runtime.compile(MUL_F32_4, cpu0, F32_4)
    assert cc.stats()["misses"] == 2 and len(_entries(cache)) == 2


def test_misses_and_hits_are_logged(cache, cpu0, caplog):
    """JAX's explain_cache_misses explains persistent-cache misses too, and log_compiles logs its hits: each as a
    warning naming the module and the key; without the flags the same lines are debug messages."""
    module = kiln.jit(lambda x: x * 17.0).lower(np.float32(1)).as_text()
    key = _key(module, cpu0)
    with caplog.at_level(logging.DEBUG, logger="kiln"), kiln.config.override("explain_cache_misses", True):
        runtime.compile(module, cpu0, [((), np.float32)])
        runtime.compile(module, cpu0, [((), np.float32)])
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "kiln"] == [
        (logging.WARNING, f"PERSISTENT COMPILATION CACHE MISS for 'jit__lambda_' with key '{key}'"),
        (logging.DEBUG, f"Persistent compilation cache hit for 'jit__lambda_' with key '{key}'")]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="kiln"), kiln.config.override("log_compiles", True):
        runtime.compile(module, cpu0, [((), np.float32)])
        runtime.compile(MUL_F32_4, cpu0, F32_4)
    assert [(r.levelno, r.getMessage().split(" with key ")[0]) for r in caplog.records if r.name == "kiln"] == [
        (logging.WARNING, "Persistent compilation cache hit for 'jit__lambda_'"),
        (logging.DEBUG, "PERSISTENT COMPILATION CACHE MISS for 'main'")]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kiln"), kiln.config.override("compilation_cache", False), \
            kiln.config.override("explain_cache_misses", True):
        runtime.compile(ADD_WITH_LOCS, cpu0, F32_4)
    assert [r for r in caplog.records if r.name == "kiln"] == []  # the cache is off: nothing is looked up


def test_jitted_function_hits_in_a_new_process(cache, run_py):
    code = """
        import json, numpy as np, kiln, kiln.numpy as knp
        from kiln.runtime import compile_cache as cc
        f = kiln.jit(lambda x, y: knp.tanh(x @ y) + 1)
        x = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6
        out = np.asarray(f(x, x.T))
        print(json.dumps([out.tolist(), cc.stats()]))
    """
    cold_out, cold = json.loads(run_py(code).stdout.strip().splitlines()[-1])
    warm_out, warm = json.loads(run_py(code).stdout.strip().splitlines()[-1])
    assert cold["misses"] >= 1 and cold["writes"] == cold["misses"] and cold["hits"] == 0
    assert warm["hits"] == cold["misses"] and warm["misses"] == 0 and warm["last"] == "hit"
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6
    np.testing.assert_allclose(warm_out, np.tanh(x @ x.T) + 1, rtol=1e-6)
    assert warm_out == cold_out


def test_spmd_compile_hits_and_depends_on_the_device_order(cache, run_py):
    code = """
        import json, numpy as np
        from kiln import runtime
        from kiln.runtime import compile_cache as cc
        mod = '''module @m attributes {mhlo.num_partitions = 2 : i32} {
          sdy.mesh @mesh = <["x"=2]>
          func.func public @main(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<4xf32> {
            %0 = stablehlo.multiply %a, %a : tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }'''
        d0, d1 = runtime.devices("cpu")
        outs = []
        for devs in [(d0, d1), (d0, d1), (d1, d0)]:
            exe = runtime.compile_spmd(mod, devs, [((4,), np.float32)])
            s = runtime.spmd_sharding(devs, "{devices=[2]<=[2]}")
            x = np.arange(4, dtype=np.float32)
            buf = runtime.put_sharded([x[:2], x[2:]], s, (4,), np.float32)
            (y,) = exe.execute([buf])
            values = np.concatenate([runtime.to_numpy(p) for p in runtime.shards_of(y)])
            outs.append([cc.stats()["last"], values.tolist()])
        print(json.dumps(outs))
    """
    outs = json.loads(run_py(code, env={"KILN_NUM_CPU_DEVICES": "2"}).stdout.strip().splitlines()[-1])
    assert [o[0] for o in outs] == ["miss", "hit", "miss"]
    for _, values in outs:
        assert values == [0.0, 1.0, 4.0, 9.0]


# --------------------------------------------------------------------------------------- corruption

def _corrupt_truncate(data):
    return data[: len(data) // 2]


def _corrupt_flip(data):
    b = bytearray(data)
    for i in (len(b) // 3, len(b) // 2, len(b) - 5):
        b[i] ^= 0xFF
    return bytes(b)


def _corrupt_garbage(data):
    return os.urandom(len(data))


def _corrupt_empty(data):
    return b""


def _corrupt_header(data):
    return data[:8] + b"\xff\xff" + data[10:]  # another format version


@pytest.mark.parametrize("corrupt", [_corrupt_truncate, _corrupt_flip, _corrupt_garbage, _corrupt_empty,
                                     _corrupt_header])
def test_corrupt_entry_is_ignored_and_rewritten(cache, cpu0, add_f32_4, corrupt):
    runtime.compile(add_f32_4, cpu0, F32_4)
    (name,) = _entries(cache)
    path = cache / name
    good = path.read_bytes()
    path.write_bytes(corrupt(good))
    cc.reset_stats()
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats() == {"hits": 0, "misses": 1, "writes": 1, "errors": 1, "skipped": 0, "last": "miss"}
    np.testing.assert_array_equal(_run_add(exe, cpu0), [11, 22, 33, 44])
    key = name[: -len(cc.SUFFIX)]
    assert cc.decode_entry(key, path.read_bytes()) is not None  # rewritten whole
    runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats()["last"] == "hit"


def test_entry_of_another_key_is_rejected(cache, cpu0, add_f32_4):
    runtime.compile(add_f32_4, cpu0, F32_4)
    runtime.compile(MUL_F32_4, cpu0, F32_4)
    add_key, mul_key = _key(add_f32_4, cpu0), _key(MUL_F32_4, cpu0)
    # an intact entry copied under another name must not load as that key's executable
    (cache / (add_key + cc.SUFFIX)).write_bytes((cache / (mul_key + cc.SUFFIX)).read_bytes())
    cc.reset_stats()
    exe = runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats()["errors"] == 1 and cc.stats()["last"] == "miss"
    np.testing.assert_array_equal(_run_add(exe, cpu0), [11, 22, 33, 44])


def test_entry_format_round_trip_and_compression():
    key = "ab" * 32
    blob = bytes(range(256)) * 64
    data = cc.encode_entry(key, blob)
    assert data.startswith(cc.MAGIC) and len(data) < len(blob)  # compressible: compressed
    assert cc.decode_entry(key, data) == blob
    assert cc.decode_entry("cd" * 32, data) is None
    noise = os.urandom(2000)  # incompressible: stored as is
    assert cc.decode_entry(key, cc.encode_entry(key, noise)) == noise
    assert len(cc.encode_entry(key, noise)) == len(noise) + cc._HEADER.size


# ---------------------------------------------------------------------------------------- concurrency

def test_concurrent_writers_of_the_same_key(cache):
    code = textwrap.dedent("""
        import json, numpy as np, kiln, kiln.numpy as knp
        from kiln.runtime import compile_cache as cc
        @kiln.jit
        def f(x):
            return knp.sum(knp.sin(x) * knp.cos(x[::-1]), axis=0)
        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
        print(json.dumps([np.asarray(f(x)).tolist(), cc.stats()]))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("KILN_PLATFORMS", "KILN_NUM_CPU_DEVICES")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = np.sum(np.sin(x) * np.cos(x[::-1]), axis=0)
    for values, _ in results:
        np.testing.assert_allclose(values, expected, rtol=1e-6)
    assert not [n for n in os.listdir(cache) if n.startswith(cc._TMP_PREFIX)]  # no debris
    for name in _entries(cache):
        assert cc.decode_entry(name[: -len(cc.SUFFIX)], (cache / name).read_bytes()) is not None
    later = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                           timeout=300)
    values, stats = json.loads(later.stdout.strip().splitlines()[-1])
    assert stats["misses"] == 0 and stats["hits"] >= 1 and stats["errors"] == 0
    np.testing.assert_allclose(values, expected, rtol=1e-6)


# ------------------------------------------------------------------------------------------- eviction

def test_least_recently_used_entries_are_evicted(cache, cpu0):
    modules = [MUL_F32_4.replace("multiply", op) for op in ("multiply", "add", "subtract", "maximum", "minimum")]
    runtime.compile(modules[0], cpu0, F32_4)
    (first,) = _entries(cache)
    size = (cache / first).stat().st_size
    cc.configure(max_size=int(2.5 * size))  # room for two entries of this size
    past = os.stat(cache / first).st_mtime - 100
    os.utime(cache / first, (past, past))
    runtime.compile(modules[1], cpu0, F32_4)
    second = (set(_entries(cache)) - {first}).pop()
    os.utime(cache / second, (past + 1, past + 1))
    runtime.compile(modules[0], cpu0, F32_4)  # a hit: the first entry becomes the most recently used
    assert cc.stats()["last"] == "hit"
    runtime.compile(modules[2], cpu0, F32_4)  # over the bound: the least recently used (second) goes
    left = _entries(cache)
    assert first in left and second not in left and len(left) == 2
    for m in modules[3:]:
        runtime.compile(m, cpu0, F32_4)
    assert len(_entries(cache)) == 2
    assert sum((cache / n).stat().st_size for n in _entries(cache)) <= 2.5 * size


def test_entry_larger_than_the_bound_is_not_written(cache, cpu0, add_f32_4):
    cc.configure(max_size=100)
    runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats()["skipped"] == 1 and cc.stats()["writes"] == 0 and _entries(cache) == []


def test_trim_removes_stale_temporary_files(cache):
    os.makedirs(cache)
    tmp = cache / (cc._TMP_PREFIX + "x")
    tmp.write_bytes(b"half")
    os.utime(tmp, (1, 1))
    fresh = cache / (cc._TMP_PREFIX + "y")
    fresh.write_bytes(b"being written")
    cc.trim(str(cache), 1 << 20)
    assert not tmp.exists() and fresh.exists()


def test_min_compile_time_skips_writes(cache, cpu0, add_f32_4):
    cc.configure(min_compile_time=3600.0)
    runtime.compile(add_f32_4, cpu0, F32_4)
    assert cc.stats()["skipped"] == 1 and _entries(cache) == []


# --------------------------------------------------------------------------------------- switches

def test_off_switches(cache, cpu0, add_f32_4, run_py):
    code = """
        import numpy as np, kiln, kiln.numpy as knp
        from kiln.runtime import compile_cache as cc
        kiln.jit(lambda x: x * 3)(np.ones(3, np.float32))
        print(cc.stats()["last"], cc.cache_dir())
    """
    assert run_py(code, env={"KILN_COMPILATION_CACHE": "0"}).stdout.split()[-2:] == ["off", "None"]
    assert _entries(cache) == []
    for name, value in [("compilation_cache", False), ("jax_enable_compilation_cache", False),
                        ("compilation_cache_max_size", 0), ("jax_compilation_cache_max_size", 0)]:
        with kiln.config.override(name, value):
            assert cc.cache_dir() is None
            runtime.compile(add_f32_4, cpu0, F32_4)
            assert cc.stats()["last"] == "off"
        assert cc.cache_dir() == str(cache)
    assert _entries(cache) == []


def test_config_names_and_jax_names(cache, tmp_path):
    other = tmp_path / "elsewhere"
    with kiln.config.override("jax_compilation_cache_dir", other):  # a path-like is accepted
        assert kiln.config.compilation_cache_dir == str(other) and cc.cache_dir() == str(other)
    assert cc.cache_dir() == str(cache)
    with kiln.config.override("jax_persistent_cache_min_compile_time_secs", 2):
        assert kiln.config.persistent_cache_min_compile_time_secs == 2.0
        assert cc.settings()["min_compile_time"] == 2.0
    assert cc.settings()["min_compile_time"] == 0.0
    with kiln.config.override("jax_compilation_cache_max_size", 12345):
        assert cc.settings()["max_size"] == 12345


def test_config_errors():
    with pytest.raises(ConfigError, match=r"compilation_cache_dir.*expected a str, got int"):
        kiln.config.update("compilation_cache_dir", 3)
    with pytest.raises(ConfigError, match=r"compilation_cache.*expected a bool"):
        kiln.config.update("compilation_cache", "yes")


def test_bad_max_size_variable_warns(run_py, cache):
    out = run_py("""
        import warnings
        warnings.simplefilter("always")
        from kiln.runtime import compile_cache as cc
        print(cc.settings()["max_size"])
    """, env={"KILN_COMPILATION_CACHE_MAX_SIZE": "1GB"})
    assert out.stdout.split()[-1] == str(cc.DEFAULT_MAX_SIZE)
    assert "KILN_COMPILATION_CACHE_MAX_SIZE='1GB' is not an integer number of bytes" in out.stderr


def test_default_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "k"))
    assert cc.default_dir() == str(tmp_path / "k")
    monkeypatch.delenv("KILN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cc.default_dir() == str(tmp_path / "xdg" / "kiln")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cc.default_dir() == str(tmp_path / "home" / ".cache" / "kiln")


def test_unwritable_directory_warns_once_then_is_off(cache, cpu0, add_f32_4, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    bad = blocker / "cache"  # cannot be created, even by root
    cc.configure(directory=str(bad))
    with pytest.warns(RuntimeWarning, match=r"compile cache directory .*a_file/cache' is not writable .*"
                                            r"the persistent compile cache is off for this process.*KILN_CACHE_DIR"):
        exe = runtime.compile(add_f32_4, cpu0, F32_4)
    np.testing.assert_array_equal(_run_add(exe, cpu0), [11, 22, 33, 44])
    assert cc.cache_dir() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.compile(MUL_F32_4, cpu0, F32_4)
    assert cc.stats()["last"] == "off"
    cc.configure(directory=str(cache))  # another directory: on again
    runtime.compile(MUL_F32_4, cpu0, F32_4)
    assert cc.stats()["last"] == "miss" and len(_entries(cache)) == 1


# --------------------------------------------------------------------------------------- host callbacks

CALLBACK = """func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.custom_call @xla_ffi_python_cpu_callback(%x) {mhlo.backend_config = {index = 0 : ui64}}
      : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}"""


@pytest.mark.backend("cpu")
def test_host_callbacks_are_bound_again_on_a_hit(cache, cpu0):
    from jaxlib.mlir import ir

    def compile_with(fn):
        with runtime.mlir_context():
            mod = ir.Module.parse(CALLBACK)
        return runtime.compile(mod, cpu0, F32_4, host_callbacks=[fn])

    def run(exe):
        (out,) = exe.execute([runtime.put(np.arange(4, dtype=np.float32), cpu0)])
        return runtime.to_numpy(out)

    calls = []
    first = compile_with(lambda x: (calls.append("double") or np.asarray(2 * x, np.float32),))
    assert cc.stats()["last"] == "miss"
    np.testing.assert_array_equal(run(first), [0, 2, 4, 6])
    second = compile_with(lambda x: (calls.append("square") or np.asarray(x * x, np.float32),))
    assert cc.stats()["last"] == "hit"
    np.testing.assert_array_equal(run(second), [0, 1, 4, 9])
    np.testing.assert_array_equal(run(first), [0, 2, 4, 6])  # each executable keeps its own callable
    assert calls == ["double", "square", "double"]


def test_jitted_callbacks_hit_in_a_new_process_with_the_current_callables(cache, run_py):
    # The module's text does not contain the Python callables: a second process with other callables loads
    # the same executable and must call its own (debug.print, pure_callback, io_callback).
    code = """
        import json, os, numpy as np, kiln, kiln.numpy as knp
        from kiln.runtime import compile_cache as cc
        factor = float(os.environ["FACTOR"])
        SDS = kiln.ShapeDtypeStruct
        seen = []

        @kiln.jit
        def f(x):
            kiln.debug.print("x = {x}", x=x)
            y = kiln.pure_callback(lambda v: np.asarray(v * factor, np.float32), SDS((3,), np.float32), x)
            kiln.experimental.io_callback(lambda v: seen.append(float(v.sum())), None, y, ordered=True)
            return y + 1

        out = np.asarray(f(np.arange(3, dtype=np.float32)))
        kiln.effects_barrier()
        print(json.dumps([out.tolist(), seen, cc.stats()]))
    """
    procs = [run_py(code, env={"FACTOR": f}) for f in ("2", "3")]
    (out2, seen2, cold), (out3, seen3, warm) = [json.loads(p.stdout.strip().splitlines()[-1]) for p in procs]
    for p in procs:
        assert "x = [0. 1. 2.]" in p.stdout  # debug.print ran in both
    assert cold["hits"] == 0 and cold["writes"] >= 1
    assert warm["misses"] == 0 and warm["hits"] == cold["writes"]
    assert out2 == [1.0, 3.0, 5.0] and seen2 == [6.0]
    assert out3 == [1.0, 4.0, 7.0] and seen3 == [9.0]


def test_same_function_on_another_line_hits(cache, run_py):
    # kiln's modules carry source locations (file, line); moving the function must not miss the cache.
    code = """
        import json, numpy as np, kiln, kiln.numpy as knp
        from kiln.runtime import compile_cache as cc
        PAD
        @kiln.jit
        def f(x):
            return knp.exp(x) - knp.sin(x) * 2
        lowered = f.lower(np.ones(3, np.float32))
        out = np.asarray(f(np.ones(3, np.float32)))
        print(json.dumps([lowered.as_text(debug_info=True).count("loc("), out.tolist(), cc.stats()]))
    """
    runs = [json.loads(run_py(code.replace("PAD", pad)).stdout.strip().splitlines()[-1])
            for pad in ("", "y = 1\n        " * 7)]
    (locs1, _, cold), (locs2, out, warm) = runs
    assert locs1 > 0 and locs2 > 0  # the modules do carry locations
    assert cold["misses"] >= 1 and warm["misses"] == 0 and warm["hits"] == cold["writes"]
    np.testing.assert_allclose(out, np.exp(np.ones(3)) - np.sin(np.ones(3)) * 2, rtol=1e-6)


def test_jax_set_cache_dir_reset_cache_and_url_directories(run_py, tmp_path):
    # JAX's kiln.experimental.compilation_cache.compilation_cache.set_cache_dir/reset_cache; a gs:// directory (JAX
    # reads those through etils) warns and turns the cache off instead of creating a local folder named "gs:"
    proc = run_py(f"""
        import os, warnings
        import kiln, kiln.numpy as knp
        from kiln.experimental.compilation_cache import compilation_cache as cc
        from kiln.runtime import compile_cache
        cc.set_cache_dir({str(tmp_path / "local")!r})
        kiln.jit(lambda x: x * 17 + 3)(knp.ones(2))
        print(len(os.listdir({str(tmp_path / "local")!r})), compile_cache.stats()["writes"])
        cc.reset_cache()
        print(compile_cache.stats()["writes"])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            kiln.config.update("jax_compilation_cache_dir", "gs://jax-cache")
        print(str(w[0].message))
        print(kiln.jit(lambda x: x * 19 + 3)(knp.ones(2)).tolist(), compile_cache.cache_dir(), os.path.exists("gs:"))
    """, cwd=str(tmp_path))
    lines = proc.stdout.strip().splitlines()
    files, writes = map(int, lines[0].split())
    assert files == writes >= 1 and lines[1] == "0"  # (the jitted program, and knp.ones' own)
    assert "is a URL, and kiln's persistent compile cache writes to local directories only" in lines[2]
    assert lines[3] == "[22.0, 22.0] None False"  # 1 * 19 + 3: compiled and run, nothing cached
