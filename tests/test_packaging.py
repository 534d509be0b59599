"""Every package folder of the three stages is listed in pyproject.toml, so `pip install .` (not only
the editable install) ships it."""
import os
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping, listed = config["package-dir"], set(config["packages"])
    found = set()
    for name, folder in mapping.items():
        for dirpath, dirs, files in os.walk(ROOT / folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            if "__init__.py" in files:
                rel = pathlib.Path(dirpath).relative_to(ROOT / folder)
                found.add(name if str(rel) == "." else name + "." + ".".join(rel.parts))
    assert found - listed == set(), f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed but not found: {sorted(listed - found)}"
