"""The public package ``kiln/`` re-exports explicitly (issue 12).

The public modules are ``kiln`` and its sub-modules, found with ``pkgutil`` (the implementation
packages ``kiln.frontend``, ``kiln.lowering`` and ``kiln.runtime`` are not part of it). Each must:

(a) define ``__all__``: a list of strings with no duplicates, each an attribute of the module;
(b) list in ``__all__`` every public attribute (a name not starting with ``_``). The one exception is a
    sub-module of the package itself that the package does not export (``kiln.frontend``): the import
    system binds a package's sub-modules as its attributes whether or not it imports them;
(c) import explicitly, checked on its source with ``ast``: no ``from M import *``, and every name of a
    ``from M import ...`` carries an ``as`` clause: ``from M import x as x`` (PEP 484's explicit
    re-export) or a renaming ``from M import Array as ndarray``. Exceptions: ``from __future__ import``
    and the import of a sub-module of the package the file defines (``from . import linalg`` in
    ``kiln/numpy/__init__.py``, ``from kiln import lax`` in ``kiln/__init__.py``), which the import
    system binds as the package's attribute anyway. A name imported only for the module's own use
    takes a private alias (``from M import x as _x``, ``import M as _M``), so that it is not public.
"""
from __future__ import annotations

import ast
import collections
import importlib
import os
import pkgutil
import types

import pytest

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPLEMENTATION = ("kiln.frontend", "kiln.lowering", "kiln.runtime")


def _public_modules() -> list[str]:
    names, todo = ["kiln"], [kiln]
    while todo:
        package = todo.pop()
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if info.name in IMPLEMENTATION:
                continue
            names.append(info.name)
            if info.ispkg:
                todo.append(importlib.import_module(info.name))
    return sorted(names)


MODULES = _public_modules()


def _where(module: types.ModuleType) -> str:
    path = os.path.abspath(module.__file__)
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else path


def _parse(module: types.ModuleType) -> ast.Module:
    with open(module.__file__) as f:
        return ast.parse(f.read(), module.__file__)


def _all_line(module: types.ModuleType) -> int | None:
    for node in _parse(module).body:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return node.lineno
    return None


def test_walk_finds_the_public_modules():
    assert {"kiln", "kiln.lax", "kiln.numpy", "kiln.numpy.linalg", "kiln.scipy.special"} <= set(MODULES), MODULES


@pytest.mark.parametrize("name", MODULES)
def test_all_is_complete_and_exact(name):
    module = importlib.import_module(name)
    where = _where(module)
    assert hasattr(module, "__all__"), (
        f"{where}: no __all__; define `__all__ = [...]` listing every public name the module exports")
    line = f"{where}:{_all_line(module) or '?'}"
    exported = module.__all__
    assert isinstance(exported, (list, tuple)) and all(isinstance(n, str) for n in exported), (
        f"{line}: __all__ must be a list of strings, not {exported!r}")
    twice = sorted(n for n, count in collections.Counter(exported).items() if count > 1)
    assert not twice, f"{line}: __all__ lists {twice} more than once; list each name once"
    missing = sorted(n for n in exported if not hasattr(module, n))
    assert not missing, (
        f"{line}: __all__ lists {missing}, which {name} does not define; import them (`from M import x as x`) "
        f"or remove them from __all__")
    undeclared = []
    for attr in dir(module):
        if attr.startswith("_") or attr in exported:
            continue
        value = getattr(module, attr)
        if isinstance(value, types.ModuleType) and value.__name__ == f"{name}.{attr}":
            continue  # a sub-module of this package, bound by the import system
        undeclared.append(attr)
    assert not undeclared, (
        f"{line}: {name} has public names that __all__ does not list: {undeclared}. Add them to __all__ if "
        f"they are exported, otherwise import them under a private alias (`... as _x`)")


def _resolve(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module
    package = name if is_package else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _is_own_submodule(module: types.ModuleType, source: str, alias: ast.alias) -> bool:
    """Whether ``from source import alias.name`` imports a sub-module of ``module``, the package itself."""
    if source != module.__name__ or not hasattr(module, "__path__"):
        return False
    return any(info.name == alias.name for info in pkgutil.iter_modules(module.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_imports_are_explicit(name):
    module = importlib.import_module(name)
    where = _where(module)
    is_package = hasattr(module, "__path__")
    problems = []
    for node in ast.walk(_parse(module)):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        source = _resolve(node, name, is_package)
        for alias in node.names:
            if alias.name == "*":
                problems.append(f"{where}:{node.lineno}: `from {source} import *`; import each name explicitly "
                                f"(`from {source} import x as x`) and list it in __all__")
            elif alias.asname is None and not _is_own_submodule(module, source, alias):
                problems.append(f"{where}:{node.lineno}: `from {source} import {alias.name}` has no `as`; write "
                                f"`{alias.name} as {alias.name}` to re-export it (and list it in __all__) or "
                                f"`{alias.name} as _{alias.name}` if it is for the module's own use")
    assert not problems, "\n".join(problems)
