"""Every exception class kiln defines (warning categories aside) derives from ``kiln.KilnError``
(``except kiln.KilnError`` catches whatever kiln raises on purpose), and keeps a built-in base a ported JAX
program would catch."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import kiln


def _kiln_modules():
    seen = []
    for package in ("kiln", "kiln.frontend", "kiln.lowering", "kiln.runtime"):
        pkg = importlib.import_module(package)
        seen.append(pkg)
        for info in pkgutil.walk_packages(pkg.__path__, package + "."):
            seen.append(importlib.import_module(info.name))
    return seen


def _exception_classes():
    found = {}
    for module in _kiln_modules():
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and not issubclass(obj, Warning)
                    and obj.__module__.startswith("kiln.") and not name.startswith("_")):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_kiln_exception_is_a_kiln_error():
    classes = _exception_classes()
    assert len(classes) > 25, sorted(classes)  # the walk really found kiln's errors
    strays = sorted(name for name, cls in classes.items() if not issubclass(cls, kiln.KilnError))
    assert not strays, f"these kiln exceptions do not derive from kiln.KilnError: {strays}"


def test_runtime_errors_share_the_base():
    assert issubclass(kiln.runtime.KilnRuntimeError, kiln.KilnError)
    assert issubclass(kiln.BackendError, kiln.KilnError) and issubclass(kiln.BackendError, ValueError)
    assert kiln.KilnError is kiln.runtime.errors.KilnError


def test_kiln_errors_keep_a_builtin_base():
    for name, cls in _exception_classes().items():
        if cls is kiln.KilnError or cls is kiln.runtime.KilnRuntimeError:
            continue
        builtin = [b for b in cls.__mro__ if b.__module__ == "builtins" and b not in (Exception, BaseException,
                                                                                     object)]
        assert builtin or issubclass(cls, kiln.runtime.KilnRuntimeError) or cls.__name__ in {
            "UnexpectedTracerError", "LoweringError", "CompileError"}, f"{name} has no built-in base to catch"
