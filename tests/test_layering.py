"""Imports only go down: every file of kiln has a floor, and no import (lazy ones included) reaches a
higher floor. Where a lower floor must call a higher one, the higher one registers itself in a table
or hook the lower floor owns (see ``frontend/README.md`` and DESIGN.md's "floors of frontend/").

``ALLOWED`` lists the upward imports that remain while the floors are being built (issue 12); each
entry is ``(file, imported module)``. The target is an empty list.
"""
from __future__ import annotations

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Folder (relative to the repository) -> (floor number, floor name, import name of the folder).
FLOORS = {
    "runtime": (0, "runtime", "kiln.runtime"),
    "frontend/core": (1, "F0 core", "kiln.frontend.core"),
    "lowering": (2, "lowering", "kiln.lowering"),
    "frontend/driver": (3, "F1 driver", "kiln.frontend.driver"),
    "frontend/lax": (4, "F2 lax", "kiln.frontend.lax"),
    "frontend/ad": (5, "F3 transformations", "kiln.frontend.ad"),
    "frontend/batching": (5, "F3 transformations", "kiln.frontend.batching"),
    "frontend/control": (6, "F4 structured", "kiln.frontend.control"),
    "frontend/sharding": (6, "F4 structured", "kiln.frontend.sharding"),
    "frontend": (7, "F5 libraries", "kiln.frontend"),  # numpy/, random/, nn/, scipy/, ... and frontend/*.py
    "kiln": (8, "public API", "kiln"),
}

ALLOWED: set[tuple[str, str]] = set()


def _floor_of_path(rel: str):
    best = None
    for folder, floor in FLOORS.items():
        if rel == folder or rel.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, floor)
    return best[1] if best else None


def _floor_of_module(module: str):
    best = None
    for floor in FLOORS.values():
        name = floor[2]
        if module == name or module.startswith(name + "."):
            if best is None or len(name) > len(best[2]):
                best = floor
    return best


def _module_of(rel: str) -> tuple[str, bool]:
    """The import name of a file and whether it is a package's __init__."""
    parts = rel[:-3].split("/")
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    top = {"kiln": ["kiln"], "frontend": ["kiln", "frontend"], "lowering": ["kiln", "lowering"],
           "runtime": ["kiln", "runtime"]}[parts[0]]
    return ".".join(top + parts[1:]), is_pkg


def _is_module(module: str) -> bool:
    parts = module.split(".")
    top = {"kiln.frontend": "frontend", "kiln.lowering": "lowering", "kiln.runtime": "runtime"}.get(
        ".".join(parts[:2]), "kiln")
    rest = parts[2:] if top != "kiln" else parts[1:]
    base = os.path.join(REPO, top, *rest)
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def _imports(path: str, module: str, is_pkg: bool):
    tree = ast.parse(open(path).read())
    package = module if is_pkg else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if not target.startswith("kiln"):
                continue
            for a in node.names:  # "from kiln.frontend import numpy" imports the module kiln.frontend.numpy
                yield node.lineno, f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target


def _violations():
    found = []
    for folder in ("kiln", "frontend", "lowering", "runtime"):
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, REPO).replace(os.sep, "/")
                own = _floor_of_path(rel)
                module, is_pkg = _module_of(rel)
                for line, target in _imports(path, module, is_pkg):
                    other = _floor_of_module(target)
                    if other is None or other[0] <= own[0] or other[0] == own[0]:
                        continue
                    found.append((rel, line, target, own, other))
    return found


def test_no_import_goes_up():
    bad = [v for v in _violations() if (v[0], v[2]) not in ALLOWED]
    lines = [f"{rel}:{line}: imports {target} ({other[1]}, floor {other[0]}) from {own[1]} (floor {own[0]})"
             for rel, line, target, own, other in bad]
    assert not bad, "imports that go up a floor:\n" + "\n".join(lines)


def test_allow_list_has_no_stale_entries():
    present = {(v[0], v[2]) for v in _violations()}
    stale = sorted(ALLOWED - present)
    assert not stale, f"ALLOWED lists imports that no longer exist (remove them): {stale}"


def test_every_file_has_a_floor():
    for folder in ("kiln", "frontend", "lowering", "runtime"):
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            for name in files:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(root, name), REPO).replace(os.sep, "/")
                    assert _floor_of_path(rel) is not None, rel
