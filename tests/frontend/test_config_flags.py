"""kiln.config with JAX's flag names, the top-level flag context managers (kiln.enable_x64, ...), strict
dtype promotion, and kiln.default_device."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from kiln.frontend.core.config import ConfigError
from kiln.frontend.core.jax_flags import JAX_FLAG_NAMES

import kiln
import kiln.numpy as knp
from kiln import config


def test_the_flag_list_says_where_it_came_from():
    import kiln.frontend.core.jax_flags as jf
    assert "Generated from JAX 0.10.2's ``jax.config.values``" in jf.__doc__
    assert len(JAX_FLAG_NAMES) > 100 and "jax_enable_x64" in JAX_FLAG_NAMES


def test_every_jax_flag_is_accepted():
    for name in sorted(JAX_FLAG_NAMES):
        kiln_name = config._kiln_name(name)
        value = getattr(config, kiln_name) if kiln_name else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with config.override(name, value):  # applied, or recorded with a warning; never an error
                pass


def test_jax_names_of_kiln_flags_apply():
    with config.override("jax_enable_x64", True):
        assert config.enable_x64 and config.jax_enable_x64
        assert knp.arange(3.0).dtype == np.float64
    assert not config.enable_x64
    with config.override("jax_platforms", "cpu,cuda"):
        assert config.default_backend == "cpu"
    with config.override("jax_disable_jit", True):
        assert config.disable_jit


def test_a_jax_flag_kiln_lacks_warns_once_and_is_recorded():
    name = "jax_pgle_profiling_runs"
    config._warned.discard(name)
    with pytest.warns(UserWarning, match=r"kiln does not implement JAX's flag 'jax_pgle_profiling_runs'"):
        with config.override(name, 3):
            assert config.jax_pgle_profiling_runs == 3
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the second time: no warning
                config.update(name, 4)
    with pytest.raises(AttributeError, match=r"JAX's flag 'jax_pgle_profiling_runs' is not implemented by kiln"):
        _ = config.jax_pgle_profiling_runs


def test_unknown_names_raise_with_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown flag 'jax_enable_x46'.*Did you mean 'jax_enable_x64'"):
        config.update("jax_enable_x46", True)
    # an AttributeError too, as JAX's ("Unrecognized config option"): the flag JEP 11830 removed
    with pytest.raises(AttributeError, match=r"kiln.config.update: unknown flag 'jax_new_checkpoint'; known flags"):
        config.update("jax_new_checkpoint", False)
    with pytest.raises(AttributeError, match=r"kiln.config has no flag 'enabel_x64'.*Did you mean 'enable_x64'"):
        _ = config.enabel_x64
    with pytest.raises(ValueError, match=r"expected one of 'standard', 'strict'"):
        config.update("jax_numpy_dtype_promotion", "loose")
    with pytest.raises(ValueError, match=r"unknown PRNG implementation; kiln implements 'threefry2x32', "
                       r"'threefry4x32', 'rbg', 'unsafe_rbg', 'philox2x32' and 'philox4x32'"):
        config.update("jax_default_prng_impl", "philox")
    with pytest.raises(ValueError, match=r"unknown PRNG implementation; kiln implements"):
        config.update("jax_default_prng_impl", "rgb")
    assert config.default_prng_impl == "threefry2x32"


def test_flags_kiln_keeps_but_does_not_enforce_warn_once():
    config._warned.discard("allow_f16_reductions")
    with pytest.warns(UserWarning, match=r"allow_f16_reductions=False is accepted but has no effect"):
        with kiln.allow_f16_reductions(False):
            assert kiln.allow_f16_reductions.value is False
    assert kiln.allow_f16_reductions.value is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with kiln.enable_checks(True), kiln.softmax_custom_jvp(True), kiln.enable_custom_prng(), kiln.auto_pcast(True):
            pass  # no effect on kiln's numbers, and nothing to warn about
    config._warned.discard("auto_pcast")
    with pytest.warns(UserWarning, match=r"auto_pcast=False is accepted but has no effect: kiln's types carry no "
                                         r"varying mesh axes"):
        with kiln.auto_pcast(False):
            pass


def test_top_level_context_managers():
    with kiln.enable_x64():
        assert kiln.enable_x64.value and knp.ones(1).dtype == np.float64
    with kiln.enable_x64(False):
        assert knp.ones(1).dtype == np.float32
    assert not kiln.enable_x64.value
    with pytest.raises(TypeError, match=r"kiln.numpy_dtype_promotion\(\) needs a value"):
        kiln.numpy_dtype_promotion()
    assert "kiln flag default_prng_impl='threefry2x32'" in repr(kiln.default_prng_impl)
    with pytest.raises(ValueError, match=r"expected one of 'allow', 'warn', 'error'"):
        with kiln.legacy_prng_key("sometimes"):
            pass


def test_strict_dtype_promotion():
    x, i = knp.ones(3, np.float32), knp.ones(3, np.int32)
    with kiln.numpy_dtype_promotion("strict"):
        assert (x + 1).dtype == np.float32 and (i * 2).dtype == np.int32 and (x * 2.5).dtype == np.float32
        assert kiln.jit(lambda a: a + a)(x).dtype == np.float32
        with pytest.raises(kiln.dtypes.TypePromotionError, match=r"no implicit type promotion between .* "
                                                                 r"numpy_dtype_promotion='strict'"):
            x + i
        with pytest.raises(ValueError, match=r"cast the operands explicitly"):
            knp.ones(2, np.float16) + knp.ones(2, np.float32)
        with pytest.raises(kiln.dtypes.TypePromotionError):
            knp.promote_types(np.int8, np.int16)
    assert (x + i).dtype == np.float32  # standard again


def test_default_device():
    dev = kiln.devices()[0]
    with kiln.default_device(dev):
        assert config.default_device is dev
        a = knp.ones(2)
        assert a.devices() == {dev} and not a.committed
        assert kiln.jit(lambda v: v * 2)(np.ones(2)).devices() == {dev}
    with kiln.default_device("cpu"):
        assert knp.zeros(1).devices() == {kiln.devices("cpu")[0]}
    assert config.default_device is None
    with pytest.raises(ValueError, match=r"default_device: expected a kiln device .*, a backend name or None"):
        config.update("jax_default_device", 3)


def test_threefry_partitionable_context():
    """``kiln.threefry_partitionable`` (JAX's top-level flag): the PRNG mode inside the block."""
    key = kiln.random.key(7)
    default = np.asarray(kiln.random.bits(key, (6,)))
    assert kiln.threefry_partitionable.value is True
    with kiln.threefry_partitionable(False):
        assert kiln.config.threefry_partitionable is False
        legacy = np.asarray(kiln.random.bits(key, (6,)))
    with kiln.config.override("threefry_partitionable", False):
        np.testing.assert_array_equal(np.asarray(kiln.random.bits(key, (6,))), legacy)
    assert not np.array_equal(default, legacy) and kiln.threefry_partitionable.value is True
    with kiln.threefry_partitionable():  # no value: True, as JAX's boolean flags
        np.testing.assert_array_equal(np.asarray(kiln.random.bits(key, (6,))), default)


def test_command_line_flags_as_jax_parses_them_with_absl(monkeypatch):
    """config_with_absl / parse_flags_with_absl apply the --jax_... flags of sys.argv (up to --), as JAX's
    (JAX's examples/gaussian_process_regression.py calls both); kiln does not import absl."""
    monkeypatch.setattr(sys, "argv", ["prog", "--jax_enable_x64", "--jax_log_compiles=false", "--nojax_debug_nans",
                                      "--verbose", "--", "--jax_debug_infs"])
    with kiln.config.override("debug_nans", True):
        kiln.config.config_with_absl()
        assert kiln.config.enable_x64 is True and kiln.config.debug_nans is False
        assert kiln.config.log_compiles is False and kiln.config.debug_infs is False  # after "--": not a flag
    monkeypatch.setattr(sys, "argv", ["prog", "--jax_enable_x64=perhaps"])
    with pytest.raises(ConfigError, match=r"command-line flag '--jax_enable_x64=perhaps': expected true or false, "
                                          "got 'perhaps'"):
        kiln.config.parse_flags_with_absl()
    monkeypatch.setattr(sys, "argv", ["prog", "--jax_enable_x46"])
    with pytest.raises(ConfigError, match=r"unknown flag 'jax_enable_x46'.*Did you mean 'jax_enable_x64'"):
        kiln.config.parse_flags_with_absl()


def test_jax_environment_variables_kiln_does_not_read_are_named():
    from kiln.frontend.core.config import jax_environment_message
    assert jax_environment_message({}) is None
    assert jax_environment_message({"JAX_ENABLE_X64": "1", "KILN_ENABLE_X64": "1"}) is None  # kiln's own is set
    msg = jax_environment_message({"JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu", "PATH": "/bin"})
    assert msg.startswith("kiln reads its own environment variables, not JAX's, so these have no effect on kiln: "
                          "JAX_ENABLE_X64='1' (kiln's variable: KILN_ENABLE_X64); JAX_PLATFORMS='cpu' (kiln's "
                          "variable: KILN_PLATFORMS).")
    # at import, as a warning (a fresh interpreter: the check runs once, when kiln's configuration is made)
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "KILN_ENABLE_X64"))}
    out = subprocess.run([sys.executable, "-c", "import kiln, kiln.numpy as knp; print(knp.ones(1).dtype)"],
                         env={**env, "JAX_ENABLE_X64": "1"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "float32"
    assert "UserWarning: kiln reads its own environment variables" in out.stderr and "KILN_ENABLE_X64" in out.stderr


def test_default_matmul_precision_from_the_environment():
    # JAX's JAX_DEFAULT_MATMUL_PRECISION=highest: kiln's variable is KILN_DEFAULT_MATMUL_PRECISION (JAX's is named)
    import os
    import subprocess

    from kiln.frontend.core.config import jax_environment_message
    assert "JAX_DEFAULT_MATMUL_PRECISION='highest' (kiln's variable: KILN_DEFAULT_MATMUL_PRECISION)" in \
        jax_environment_message({"JAX_DEFAULT_MATMUL_PRECISION": "highest"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "KILN_DEFAULT_MATMUL"))}
    script = ("import kiln, numpy as np; print(kiln.config.default_matmul_precision); "
              "print(kiln.jit(lambda a: a @ a).lower(np.ones((2, 2), np.float32)).as_text())")
    out = subprocess.run([sys.executable, "-c", script], env={**env, "KILN_DEFAULT_MATMUL_PRECISION": "highest"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("highest\n") and "precision = [HIGHEST, HIGHEST]" in out.stdout
    out = subprocess.run([sys.executable, "-c", "import kiln"], env={**env, "KILN_DEFAULT_MATMUL_PRECISION": "fast"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert ("ConfigError: KILN_DEFAULT_MATMUL_PRECISION='fast': expected one of 'default', 'high', 'highest'"
            in out.stderr), out.stderr
