"""JAX's public names (``jax_public_names.txt``, a snapshot made by ``tools/jax_api_snapshot.py``) against
kiln's counterparts (``jax.X`` -> ``kiln.X``), minus the exclusions (``exclusions.txt``: one
``qualified.name: reason`` per line). ``python tests/api/api_coverage.py`` prints the coverage per module;
``--readme`` prints the generated part of README.md's "API coverage" section and ``--write-readme`` puts it
there (tests/api/test_coverage.py checks that it is current)."""
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


STATS = "jax.scipy.stats."  # its distribution submodules share one row of the README's table


def coverage_rows() -> list[tuple[str, int, int]]:
    """(JAX module, names kiln has, names in JAX) per module of the snapshot."""
    return [(m, len(names) - len(missing(m, names)), len(names)) for m, names in snapshot().items()]


def _group(reason: str) -> str:
    """The README's heading for an exclusion's reason."""
    if reason.startswith("other issue:"):
        what, _, issue = reason[len("other issue:"):].strip().rpartition(" (")
        return f"owned by {issue.rstrip(')')} ({what})"
    if reason.startswith("not yet (issue 14)"):
        return "not yet (issue 14)"
    if "internal" in reason.lower() or "there is no" in reason and "primitive to bind" in reason:
        return "JAX internals (primitive objects, implementation modules)"
    return "other reasons (see exclusions.txt)"


def readme_section() -> str:
    """The body of README.md's "API coverage" section: the table per module and the excluded names by reason."""
    rows, stats, n_stats = [], [0, 0], 0
    for m, have, total in coverage_rows():
        if m.startswith(STATS):
            stats, n_stats = [stats[0] + have, stats[1] + total], n_stats + 1
        else:
            rows.append(f"| `{m}` | {have} / {total} |")
    rows.append(f"| `jax.scipy.stats.*` ({n_stats} distributions) | {stats[0]} / {stats[1]} |")
    have_all = sum(r[1] for r in coverage_rows())
    total_all = sum(r[2] for r in coverage_rows())
    rows.append(f"| all | {have_all} / {total_all} |")
    excl = exclusions()
    groups: dict[str, list[str]] = {}
    for m, names in snapshot().items():
        for n in missing(m, names):
            reason = excl.get(f"{m}.{n}", ("(not excluded: tests/api/test_coverage.py fails)", 0))[0]
            groups.setdefault(_group(reason), []).append(f"{m}.{n}")
    lines = ["| JAX module | kiln has |", "| --- | --- |", *rows, "", "What is left out, by reason:", ""]
    for group, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"- {group} ({len(names)}): {', '.join(f'`{n}`' for n in sorted(names))}")
    return "\n".join(lines)


BEGIN, END = "<!-- api_coverage.py --write-readme: begin -->", "<!-- api_coverage.py --write-readme: end -->"
README = os.path.join(HERE, "..", "..", "README.md")


def readme_block(readme: str) -> str:
    """The generated part of README.md (between the BEGIN and END markers)."""
    return readme.split(BEGIN + "\n", 1)[1].split("\n" + END, 1)[0]


def write_readme() -> None:
    with open(README) as f:
        readme = f.read()
    readme = readme.replace(readme_block(readme), readme_section())
    with open(README, "w") as f:
        f.write(readme)


def main() -> None:
    import sys
    if sys.argv[1:] == ["--readme"]:
        print(readme_section())
        return
    if sys.argv[1:] == ["--write-readme"]:
        write_readme()
        return
    excl = exclusions()
    print("| JAX module | kiln has | excluded |\n| --- | --- | --- |")
    for m, have, total in coverage_rows():
        names = snapshot()[m]
        excluded = sum(1 for n in missing(m, names) if f"{m}.{n}" in excl)
        print(f"| `{m}` | {have} / {total} | {excluded} |")
    print(f"| all | {sum(r[1] for r in coverage_rows())} / {sum(r[2] for r in coverage_rows())} | |")


if __name__ == "__main__":
    main()
