"""JAX's public names (``jax_public_names.txt``, a snapshot made by ``tools/jax_api_snapshot.py``) against
kiln's counterparts (``jax.X`` -> ``kiln.X``), minus the exclusions (``exclusions.txt``: one
``qualified.name: reason`` per line). ``python tests/api/api_coverage.py`` prints the coverage per module."""
from __future__ import annotations

import importlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def snapshot() -> dict[str, list[str]]:
    """{jax module: [public names]} in the snapshot's order."""
    sections: dict[str, list[str]] = {}
    current = None
    with open(os.path.join(HERE, "jax_public_names.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                current = line[1:-1]
                sections[current] = []
            else:
                sections[current].append(line)
    return sections


def exclusions() -> dict[str, tuple[str, int]]:
    """{qualified JAX name: (reason, line number)}."""
    out: dict[str, tuple[str, int]] = {}
    with open(os.path.join(HERE, "exclusions.txt")) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, reason = line.partition(":")
            if not sep or not reason.strip():
                raise ValueError(f"exclusions.txt:{lineno}: {line!r} is not 'qualified.name: reason'")
            if name.strip() in out:
                raise ValueError(f"exclusions.txt:{lineno}: {name.strip()} is listed twice")
            out[name.strip()] = (reason.strip(), lineno)
    return out


def kiln_counterpart(jax_module: str) -> str:
    return "kiln" + jax_module[len("jax"):]


def kiln_module(jax_module: str):
    """kiln's module for ``jax_module``, or None when it does not exist."""
    name = kiln_counterpart(jax_module)
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    parent, _, attr = name.rpartition(".")  # a module reached as an attribute (kiln.lax.linalg)
    try:
        return getattr(importlib.import_module(parent), attr, None)
    except ImportError:
        return None


def missing(jax_module: str, names: list[str]) -> list[str]:
    """The names of ``jax_module`` that kiln's counterpart lacks (all of them when it does not exist)."""
    mod = kiln_module(jax_module)
    return [n for n in names if mod is None or not hasattr(mod, n)]


def main() -> None:
    excl = exclusions()
    rows, have_all, total_all = [], 0, 0
    for m, names in snapshot().items():
        lacking = missing(m, names)
        excluded = sum(1 for n in lacking if f"{m}.{n}" in excl)
        have = len(names) - len(lacking)
        have_all, total_all = have_all + have, total_all + len(names)
        rows.append(f"| `{m}` | {have} / {len(names)} | {excluded} |")
    print("| JAX module | kiln has | excluded |\n| --- | --- | --- |")
    print("\n".join(rows))
    print(f"| all | {have_all} / {total_all} | |")


if __name__ == "__main__":
    main()
