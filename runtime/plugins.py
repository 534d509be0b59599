"""Discovery and loading of PJRT plugins without importing jax or any plugin's ``__init__`` (NOTES §4).

Plugins are found in three places:
- sub-packages of the ``jax_plugins`` namespace package (``xla_cuda12``, ``xla_cuda13``, ``xla_rocm7``, ...):
  their shared library is located on disk; their ``__init__`` is never run (it imports jax);
- ``KILN_PJRT_PLUGINS="name:/path/lib.so,name2:/path2.so"`` for explicit paths;
- ``libtpu`` if installed.

A GPU plugin also needs what JAX's plugin ``__init__`` does besides loading the library (read from
``jax_plugins/cuda/__init__.py``; NOTES §4, §8): the NVIDIA pip wheels' libraries preloaded, the CUDA
components' versions checked, and the companion ``jax_cuda13_plugin.cuda_plugin_extension`` (package
``jax-cuda13-plugin``) registered as the platform's custom-call and FFI-type handler, which gives the
GPU its host-callback and solver kernels. kiln does all three here without running any jax code.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import importlib.util
import os
import re
from typing import Any, Callable

from . import distributed
from ._jaxlib import xc

# Default-backend priorities (same as JAX's): accelerators first, CPU last.
PRIORITIES = {"cuda": 500, "rocm": 500, "tpu": 300}
PLUGIN_PRIORITY = 400
CPU_PRIORITY = 0

_KNOWN_SO_NAMES = ("xla_cuda_plugin.so", "xla_rocm_plugin.so", "libtpu.so")


@dataclasses.dataclass(frozen=True)
class PluginSpec:
    """A PJRT plugin library found on disk (not loaded yet)."""

    name: str  # the name it is registered under with jaxlib ('cuda', 'rocm', 'tpu', or the plugin's)
    path: str
    source: str  # where it was found, for messages ('jax_plugins.xla_cuda13', 'KILN_PJRT_PLUGINS', ...)
    cuda_major: int | None = None

    @property
    def priority(self) -> int:
        return PRIORITIES.get(self.name, PLUGIN_PRIORITY)


def _plugin_name(package: str) -> tuple[str, int | None]:
    """``xla_cuda13`` -> ('cuda', 13), ``xla_rocm7`` -> ('rocm', None), ``xla_fake`` -> ('fake', None)."""
    m = re.fullmatch(r"xla_cuda(\d*)", package)
    if m:
        return "cuda", int(m.group(1)) if m.group(1) else None
    if re.fullmatch(r"xla_rocm\d*", package):
        return "rocm", None
    name = package[4:] if package.startswith("xla_") else package
    return name.lower(), None


def _find_library(directory: str) -> str | None:
    """The PJRT shared library inside a plugin package directory, if any."""
    try:
        files = sorted(os.listdir(directory))
    except OSError:
        return None
    for known in _KNOWN_SO_NAMES:
        if known in files:
            return os.path.join(directory, known)
    for f in files:
        if f.endswith(".so") and ("pjrt" in f or "plugin" in f):
            return os.path.join(directory, f)
    return None


def _namespace_paths(package: str) -> list[str]:
    """Search locations of a (namespace) package, found without executing any ``__init__``."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return list(spec.submodule_search_locations)


def _from_jax_plugins() -> list[PluginSpec]:
    found = []
    for root in _namespace_paths("jax_plugins"):
        try:
            entries = sorted(os.listdir(root), reverse=True)  # reverse: xla_cuda13 before xla_cuda12
        except OSError:
            continue
        for entry in entries:
            directory = os.path.join(root, entry)
            if entry.startswith(("_", ".")) or not os.path.isdir(directory):
                continue
            path = _find_library(directory)
            if path is not None:
                name, major = _plugin_name(entry)
                found.append(PluginSpec(name, path, f"jax_plugins.{entry}", major))
    return found


def _from_env() -> list[PluginSpec]:
    value = os.environ.get("KILN_PJRT_PLUGINS", "")
    found = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, path = item.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"KILN_PJRT_PLUGINS entry {item!r} is not of the form 'name:/path/to/plugin.so'")
        found.append(PluginSpec(name.strip().lower(), path.strip(), "KILN_PJRT_PLUGINS"))
    return found


def _from_libtpu() -> list[PluginSpec]:
    for directory in _namespace_paths("libtpu"):
        path = os.path.join(directory, "libtpu.so")
        if os.path.exists(path):
            return [PluginSpec("tpu", path, "libtpu")]
    return []


def discover() -> list[PluginSpec]:
    """Every plugin found, one per name; explicit ``KILN_PJRT_PLUGINS`` entries win."""
    specs: dict[str, PluginSpec] = {}
    for spec in _from_env() + _from_jax_plugins() + _from_libtpu():
        specs.setdefault(spec.name, spec)
    return list(specs.values())


def hardware_missing(spec: PluginSpec) -> str | None:
    """Why a plugin should be skipped on this machine (no device files), or None to try loading it.

    Like JAX, CUDA is skipped unless an NVIDIA device node exists; ``KILN_FORCE_PLUGIN_LOAD=1`` overrides.
    """
    if os.environ.get("KILN_FORCE_PLUGIN_LOAD", "") not in ("", "0"):
        return None
    nodes = {"cuda": ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg"),
             "rocm": ("/dev/kfd",),
             "tpu": ("/dev/accel0", "/dev/vfio")}.get(spec.name)
    if nodes is None or any(os.path.exists(n) for n in nodes):
        return None
    return f"no {spec.name} device found (none of {', '.join(nodes)} exists)"


# NVIDIA libraries the CUDA plugin dlopens, in dependency order (what jax's cuda plugin preloads).
_NVIDIA_LIBS = ("libcudart", "libnvrtc", "libnvJitLink", "libcublasLt", "libcublas", "libcupti",
                "libcusparse", "libcusolver", "libcufft", "libnccl", "libnvshmem_host", "libcudnn")
_NVIDIA_PACKAGES = ("cuda_runtime", "cuda_nvrtc", "nvjitlink", "cublas", "cuda_cupti", "cusparse",
                    "cusolver", "cufft", "nccl", "nvshmem", "cudnn")


def _nvidia_lib_dirs(cuda_major: int | None) -> list[str]:
    dirs = []
    for root in _namespace_paths("nvidia"):
        subs = ([f"cu{cuda_major}"] if cuda_major else []) + list(_NVIDIA_PACKAGES)
        dirs += [d for d in (os.path.join(root, s, "lib") for s in subs) if os.path.isdir(d)]
    return dirs


def preload_nvidia_libraries(cuda_major: int | None) -> None:
    """Load the ``nvidia.*`` pip wheels' libraries globally, so the CUDA plugin finds them.

    jax's CUDA plugin ``__init__`` does this; kiln cannot run that ``__init__`` (it imports jax).
    Missing libraries are fine: the plugin then falls back to the system's.
    """
    dirs = _nvidia_lib_dirs(cuda_major)
    for lib in _NVIDIA_LIBS:
        for d in dirs:
            names = sorted(f for f in os.listdir(d) if f.startswith(lib + ".so"))
            if cuda_major is not None and f"{lib}.so.{cuda_major}" in names:
                names = [f"{lib}.so.{cuda_major}"]
            if names:
                try:
                    ctypes.CDLL(os.path.join(d, names[0]), mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass  # best effort: the plugin reports what is really missing
                break


def cuda_data_dir(cuda_major: int | None) -> str | None:
    """A directory holding ``bin/ptxas`` and ``nvvm/libdevice`` for XLA's GPU compiler, if installed."""
    root_env = os.environ.get("CUDA_ROOT") or os.environ.get("CUDA_HOME")
    candidates = [root_env] if root_env else []
    for root in _namespace_paths("nvidia"):
        subs = ([f"cu{cuda_major}"] if cuda_major else []) + ["cuda_nvcc"]
        candidates += [os.path.join(root, s) for s in subs]
    for c in candidates:
        if os.path.isdir(os.path.join(c, "nvvm", "libdevice")) and os.path.isdir(os.path.join(c, "bin")):
            return c
    return None


# CUDA components: (name, version getter, build-version getter, minimum). A minimum of None means "the
# major.minor the plugin was built against" (versions are encoded as e.g. 91000 for cuDNN 9.10.0, hence
# the divisor that drops the patch level). The explicit minima are JAX's.
_CUDA_COMPONENTS = (
    ("CUDA runtime", "cuda_runtime_get_version", "cuda_runtime_build_version", 12010, 10),
    ("cuDNN", "cudnn_get_version", "cudnn_build_version", None, 100),
    ("cuFFT", "cufft_get_version", "cufft_build_version", None, 100),
    ("cuPTI", "cupti_get_version", "cupti_build_version", 18, 1),
    ("cuBLAS", "cublas_get_version", "cublas_build_version", 120100, 100),
    ("cuSPARSE", "cusparse_get_version", "cusparse_build_version", 12100, 100),
)


def cuda_version_problems(versions: Any) -> list[str]:
    """What is wrong with the installed CUDA components, read through the plugin's ``_versions`` module
    (each problem says what was found, what is needed and how to fix it); empty when all is well."""
    problems = []
    for name, get, build, minimum, scale in _CUDA_COMPONENTS:
        built = int(getattr(versions, build)())
        try:
            found = int(getattr(versions, get)())
        except Exception as e:  # the library is missing or broken
            problems.append(f"{name} could not be loaded ({type(e).__name__}: {e}); install it, e.g. "
                            "pip install 'kiln[cuda13]' (NVIDIA's CUDA wheels)")
            continue
        if minimum is not None and found < minimum:
            problems.append(f"{name} {found} is installed, but at least {minimum} is needed (the plugin was "
                            f"built against {built}); upgrade it")
        elif minimum is None and found // scale < built // scale:
            problems.append(f"{name} {found} is installed, older than the {built} the plugin was built "
                            "against; upgrade it")
    return problems


def gpu_extension(platform: str) -> tuple[Any, Any] | tuple[None, None]:
    """The companion extension of a GPU plugin and its ``_versions`` module (``jax_cuda13_plugin`` /
    ``jax_cuda12_plugin`` / ``jax_rocm7_plugin`` ...), or (None, None) when it is not installed or its
    version differs from jaxlib's (jaxlib then warns)."""
    try:
        from jaxlib import plugin_support
    except ImportError:
        return None, None
    extension = plugin_support.import_from_plugin(platform, f"{platform}_plugin_extension")
    if extension is None:
        return None, None
    versions = plugin_support.import_from_plugin(platform, "_versions", check_version=False)
    return extension, versions


def register_gpu_extension(platform: str, c_api: Any, extension: Any,
                           xla: Any = None) -> None:
    """Make ``extension`` the handler of the platform's custom calls and FFI types, and register its FFI
    handlers (host callbacks, solvers), as JAX's CUDA plugin does. ``xla`` defaults to jaxlib's
    ``xla_client`` (a test passes a recorder)."""
    xla = xla or xc
    xla_platform = {"cuda": "CUDA", "rocm": "ROCM"}[platform]
    xla.register_custom_type_handler(xla_platform, functools.partial(extension.register_custom_type, c_api))
    xla.register_custom_call_handler(xla_platform,
                                     functools.partial(extension.register_custom_call_target, c_api))
    for name, value in extension.ffi_types().items():
        xla.register_custom_type(name, value, platform=xla_platform)
    for name, value in extension.ffi_handlers().items():
        xla.register_custom_call_target(name, value, platform=xla_platform, api_version=1)


def _check_cuda(versions: Any) -> None:
    if versions is None or os.environ.get("KILN_SKIP_CUDA_CONSTRAINTS_CHECK", "") not in ("", "0"):
        return
    problems = cuda_version_problems(versions)
    if problems:
        raise RuntimeError("the installed CUDA libraries cannot run this plugin: " + "; ".join(problems)
                           + ". (KILN_SKIP_CUDA_CONSTRAINTS_CHECK=1 skips this check.)")


def make_client(spec: PluginSpec, load_extension: Callable[[str], tuple[Any, Any]] = gpu_extension) -> Any:
    """Load, initialise and create the PJRT client of a plugin. Raises on any failure."""
    extension = versions = None
    if spec.name in ("cuda", "rocm"):
        if spec.name == "cuda":
            preload_nvidia_libraries(spec.cuda_major)
        extension, versions = load_extension(spec.name)
        if spec.name == "cuda":
            _check_cuda(versions)
    if not os.path.exists(spec.path):
        raise FileNotFoundError(f"no such file: {spec.path}")
    loaded = getattr(xc, "pjrt_plugin_loaded", lambda name: False)
    if not loaded(spec.name):
        c_api = xc.load_pjrt_plugin_dynamically(spec.name, spec.path)
        if extension is not None:
            register_gpu_extension(spec.name, c_api, extension)
    if not xc.pjrt_plugin_initialized(spec.name):
        xc.initialize_pjrt_plugin(spec.name)
    options: dict[str, Any] = {}
    if spec.name in ("cuda", "rocm"):
        options = dict(xc.generate_pjrt_gpu_plugin_options())
        options["platform_name"] = spec.name
    extra, distributed_client = distributed.plugin_client_options(spec.name)
    options.update(extra)
    return xc.make_c_api_client(spec.name, options, distributed_client)
