"""Shared bits of the pattern repositories: sized feature code, its tests, and a builder start.

A pattern needs features big enough to be milestones under the default rules (three source files,
a hundred lines, a test) but its history is what matters, so feature code is generated: each
function returns its argument plus a constant, and each test checks one of them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ..builder import RepoBuilder

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest>=7"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""


# A package whose tests import it from the checkout (`pythonpath`), with its name, version and description.
PACKAGE_PYPROJECT = (
    PYPROJECT.replace('version = "{version}"\n', 'version = "{version}"\ndescription = "{description}"\n').replace(
        "[tool.pytest.ini_options]", '[tool.setuptools]\npackages = ["{name}"]\n\n[tool.pytest.ini_options]'
    )
    + 'pythonpath = ["."]\n'
)


def package_pyproject(name: str, description: str) -> str:
    """`PACKAGE_PYPROJECT` for one package, its `{version}` left to fill at each release."""
    return PACKAGE_PYPROJECT.replace("{name}", name).replace("{description}", description)


def builder(dest: Path, name: str, remote: str | None = None) -> RepoBuilder:
    b = RepoBuilder(dest, START)
    b.git("remote", "add", "origin", remote or f"https://github.com/harnessforge-examples/{name}.git")
    return b


def functions(feature: str, count: int, offset: int = 0) -> str:
    """`count` small documented functions named `<feature>_<i>`, returning x + i + offset."""
    return "".join(
        f'def {feature}_{i}(x: int) -> int:\n    """{feature.replace("_", " ").capitalize()}, step {i}."""\n'
        f"    value = x + {i}\n    value += {offset}\n    return value\n\n\n"
        for i in range(count)
    )


def feature_files(package: str, feature: str, modules: int = 3, per_module: int = 8) -> dict[str, str]:
    """Source modules `<package>/<feature>_<k>.py` and a test file exercising each of them."""
    files: dict[str, str] = {}
    tests = []
    for k in range(modules):
        name = f"{feature}_{k}"
        files[f"{package}/{name}.py"] = (
            f'"""{feature.replace("_", " ").capitalize()}, part {k}."""\n\n\n'
            + functions(name, per_module, k).rstrip()
            + "\n"
        )
        tests.append(f"from {package}.{name} import {name}_1\n")
    body = (
        "".join(tests)
        + "\n\n"
        + "".join(f"def test_{feature}_{k}():\n    assert {feature}_{k}_1(1) == {2 + k}\n\n\n" for k in range(modules))
    )
    files[f"tests/test_{feature}.py"] = body.rstrip() + "\n"
    return files
