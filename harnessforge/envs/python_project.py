"""A Python project's own metadata at one commit, and its top-level import names.

Read with real parsers from pyproject.toml (PEP 621, PEP 735 groups, the build backend's package
config, tox's TOML config), setup.cfg, and the literal keyword arguments of setup.py's `setup()`.
`python_deps.py` turns this into the requirements an image installs.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import posixpath
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from ..errors import ConfigError

Reader = Callable[[str], bytes | None]

# Top-level directories that are never the package under test, even with an __init__.py.
NOT_PACKAGES = {
    *("tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "benchmark", "bench"),
    *("scripts", "tools", "build", "dist", "site", "tasks", "ci", "changelog", "changelog.d"),
}
NOT_MODULES = {"setup", "conftest", "noxfile", "fabfile", "tasks", "manage", "dodo", "version", "_version"}


@dataclass
class Project:
    """What the project's own metadata says (pyproject, setup.cfg, setup.py merged)."""

    name: str | None = None  # canonical
    dependencies: list[tuple[str, str]] = field(default_factory=list)  # (requirement, where)
    extras: dict[str, list[str]] = field(default_factory=dict)  # canonical extra -> requirement lines
    groups: dict[str, list] = field(default_factory=dict)  # canonical group -> PEP 735 items
    build: list[str] | None = None  # [build-system] requires; None when no build system is declared
    packages: set[str] = field(default_factory=set)
    discover: list[tuple[str, list[str]]] = field(default_factory=list)  # (where, include patterns) to scan
    tox_toml: dict | None = None


# ---- values as configuration files spell them ----------------------------------------------------
def words(lines: list[str]) -> list[str]:
    """The words of lines separated by whitespace or commas (setup.cfg and tox lists)."""
    return [word for line in lines for word in re.split(r"[\s,]+", line) if word]


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def is_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def logical_lines(text: str, tox: bool = False) -> list[str]:
    """Lines with comments dropped and backslash continuations joined (pip's and tox's rules)."""
    found, pending = [], ""
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = (pending + line.strip()).strip()
        pending = ""
        if line:
            found.append(line)
    if pending.strip():
        found.append(pending.strip())
    return found


# ---- the project's own metadata ------------------------------------------------------------------
def read_project(files: list[str], read: Reader) -> Project:
    """pyproject.toml, setup.cfg and setup.py, merged; an invalid pyproject.toml is a ConfigError."""
    project = Project()
    if "pyproject.toml" in files:
        _pyproject(project, read("pyproject.toml") or b"")
    if "setup.cfg" in files:
        _setup_cfg(project, read("setup.cfg") or b"")
    if "setup.py" in files:
        _setup_py(project, read("setup.py") or b"")
    return project


def _table(data: dict, key: str) -> dict:
    return data[key] if isinstance(data.get(key), dict) else {}


def _pyproject(project: Project, raw: bytes) -> None:
    try:
        data = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"pyproject.toml is not valid TOML: {e}") from None
    meta = _table(data, "project")
    if isinstance(meta.get("name"), str):
        project.name = canonicalize_name(meta["name"])
    dependencies = [line for line in as_list(meta.get("dependencies")) if is_text(line)]
    project.dependencies += [(line, "pyproject.toml dependencies") for line in dependencies]
    for extra, lines in (meta.get("optional-dependencies") or {}).items():
        project.extras.setdefault(canonicalize_name(extra), []).extend(line for line in as_list(lines) if is_text(line))
    for group, items in (data.get("dependency-groups") or {}).items():
        project.groups[canonicalize_name(group)] = as_list(items)
    if isinstance(data.get("build-system"), dict):
        project.build = [line for line in as_list(data["build-system"].get("requires")) if is_text(line)]
    tool = _table(data, "tool")
    tox = tool.get("tox")
    if isinstance(tox, dict):
        project.tox_toml = tox
    _configured_packages(project, tool)


def _configured_packages(project: Project, tool: dict) -> None:
    """Import names from the build backend's config: setuptools, flit, hatch, poetry, pdm."""
    setuptools = _table(tool, "setuptools")
    packages = setuptools.get("packages")
    root = _table(setuptools, "package-dir").get("", "")
    if isinstance(packages, list):
        project.packages |= {package.split(".")[0] for package in packages if is_text(package)}
    elif isinstance(packages, dict) and isinstance(packages.get("find"), dict):
        find = packages["find"]
        for where in as_list(find.get("where")) or [root or "."]:
            project.discover.append((str(where), [str(pattern) for pattern in as_list(find.get("include"))]))
    project.packages |= {module for module in as_list(setuptools.get("py-modules")) if is_text(module)}
    flit = _table(tool, "flit")
    if isinstance(flit.get("module"), dict) and is_text(flit["module"].get("name")):
        project.packages.add(flit["module"]["name"].split(".")[0])
    hatch = _table(tool, "hatch").get("build") or {}
    wheel = (hatch.get("targets") or {}).get("wheel") or {} if isinstance(hatch, dict) else {}
    for path in as_list(wheel.get("packages") if isinstance(wheel, dict) else None):
        if is_text(path):
            project.packages.add(posixpath.basename(path.rstrip("/")))
    for item in as_list(_table(tool, "poetry").get("packages")):
        if isinstance(item, dict) and is_text(item.get("include")) and "*" not in item["include"]:
            project.packages.add(item["include"].split("/")[0].split(".")[0])


def _setup_cfg(project: Project, raw: bytes) -> None:
    config = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        config.read_string(raw.decode(errors="replace"))
    except configparser.Error:
        return  # setup.cfg often holds only tool sections; a broken one says nothing about deps
    if not project.name and config.has_option("metadata", "name"):
        project.name = canonicalize_name(config.get("metadata", "name").strip())

    def option(key: str) -> list[str]:
        return logical_lines(config.get("options", key, fallback=""))

    project.dependencies += [(line, "setup.cfg install_requires") for line in option("install_requires")]
    project.extras.setdefault("tests-require", []).extend(option("tests_require"))
    if config.has_section("options.extras_require"):
        for extra, lines in config.items("options.extras_require"):
            project.extras.setdefault(canonicalize_name(extra), []).extend(logical_lines(lines))
    packages = config.get("options", "packages", fallback="").strip()
    if packages.startswith("find"):
        where = config.get("options.packages.find", "where", fallback="").strip()
        include = words(logical_lines(config.get("options.packages.find", "include", fallback="")))
        project.discover.append((where or _package_dir(config.get("options", "package_dir", fallback="")), include))
    else:
        project.packages |= {package.split(".")[0] for package in words(logical_lines(packages))}
    project.packages |= set(words(option("py_modules")))


def _package_dir(value: str) -> str:
    """setup.cfg's `package_dir = =src` (the root's directory), else the repository root."""
    for line in logical_lines(value):
        key, _, path = line.partition("=")
        if not key.strip():
            return path.strip()
    return "."


def _setup_py(project: Project, raw: bytes) -> None:
    """The literal keyword arguments of setup(): what most setup.py files spell out."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return  # not Python we can read: its dependencies stay unknown
    assigned = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    setup_calls = (node for node in ast.walk(tree) if isinstance(node, ast.Call) and _called_name(node) == "setup")
    call = next(setup_calls, None)
    if call is None:
        return
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}

    def literal(key: str):
        node = keywords.get(key)
        node = assigned.get(node.id, node) if isinstance(node, ast.Name) else node
        try:
            return ast.literal_eval(node) if node is not None else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def texts(value) -> list[str]:
        return [line for line in as_list(value) if is_text(line)]

    if not project.name and is_text(literal("name")):
        project.name = canonicalize_name(literal("name"))
    project.dependencies += [(line, "setup.py install_requires") for line in texts(literal("install_requires"))]
    project.extras.setdefault("tests-require", []).extend(texts(literal("tests_require")))
    extras = literal("extras_require")
    for extra, lines in extras.items() if isinstance(extras, dict) else []:
        project.extras.setdefault(canonicalize_name(str(extra)), []).extend(
            texts([lines] if isinstance(lines, str) else lines)
        )
    packages = keywords.get("packages")
    if isinstance(packages, ast.Call) and _called_name(packages) in ("find_packages", "find_namespace_packages"):
        positional = packages.args[0] if packages.args else None
        where = next((keyword.value for keyword in packages.keywords if keyword.arg == "where"), positional)
        where = where.value if isinstance(where, ast.Constant) and isinstance(where.value, str) else "."
        project.discover.append((where, []))
    else:
        project.packages |= {package.split(".")[0] for package in texts(literal("packages"))}
    project.packages |= set(texts(literal("py_modules")))


def _called_name(call: ast.Call) -> str:
    function = call.func
    if isinstance(function, ast.Name):
        return function.id
    return function.attr if isinstance(function, ast.Attribute) else ""


# ---- import names -------------------------------------------------------------------------------
def _top_level(files: set[str], root: str, include: list[str], modules: bool) -> set[str]:
    prefix = "" if root in ("", ".") else root.strip("/") + "/"
    names = set()
    for path in files:
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        if len(parts) == 2 and parts[1] == "__init__.py":
            names.add(parts[0])
        elif modules and len(parts) == 1 and parts[0].endswith(".py"):
            stem = parts[0][:-3]
            if stem not in NOT_MODULES and not stem.startswith("test_") and not stem.endswith("_test"):
                names.add(stem)
    names = {name for name in names if name.isidentifier() and name not in NOT_PACKAGES}
    return {
        name
        for name in names
        if not include or any(fnmatch.fnmatch(name, pattern.split(".")[0]) for pattern in include)
    }


def import_names(project: Project, files: list[str]) -> list[str]:
    """The project's top-level import names: its build config's, else packages found at the root or
    under src/, else single modules there."""
    found = set(project.packages)
    file_set = set(files)
    for where, include in project.discover:
        found |= _top_level(file_set, where, include, modules=False)
    if not found:
        found = _top_level(file_set, "", [], False) | _top_level(file_set, "src", [], False)
    if not found:
        found = _top_level(file_set, "", [], True) | _top_level(file_set, "src", [], True)
    return sorted(name for name in found if name.isidentifier())
