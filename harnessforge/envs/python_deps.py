"""A Python project's dependencies and import names at one commit, read with real parsers.

Sources: pyproject.toml (PEP 621 dependencies and extras, PEP 735 dependency groups, the build
system's requires, tox's TOML config), setup.cfg, the literal arguments of setup.py's `setup()`,
tox.ini, and pip requirement files. Every requirement goes through `packaging` (PEP 508). Rules:

- The project is never installed from the index: a line naming it (`mypkg[tests]`, `-e .[tests]`,
  `.`, `{toxinidir}`) is replaced by the requirements of the extras it names, recursively, because
  the workspace itself is installed (per checkout, see `recipes.py`).
- Test requirements are the project's test extras and dependency groups (`test`, `tests`, `dev`,
  ...) plus tox's *plain test env*: the `[testenv]` section, or the first `[testenv:NAME]` whose name
  is made only of plain-env factors. A plain test env has the base image's Python (`py`, `py3`,
  `py311`, `3.11`, ...) and a test factor (`test`, `tests`, `testing`, `unit`, `pytest`); a factor
  line (`mypy: mypy`, `py3{10,11}-tests: x`, `!py38: y`) is taken when its condition holds for those
  factors, as tox would decide it. So `mypy: mypy` and `docs: sphinx` are not taken, `!pypy: x` is.
- Requirement files are read when tox's test env names them (`-r`, followed recursively), else every
  `requirements*.txt` and `requirements/*{test,dev}*.txt` (a pip-compile `.in` only without its `.txt`).
- A line that does not parse, or that could only come from elsewhere than the package index (VCS,
  URLs, other local paths, unset tox substitutions), is skipped and reported, never fatal.
  Constraint files (`-c`) and index options are read past: they only narrow what the index gives.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlparse

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..errors import ConfigError

Reader = Callable[[str], bytes | None]

PYTHON = (3, 11)  # the interpreter of the default Python base image (Debian bookworm)
TEST_EXTRAS = re.compile(r"^(test|tests|testing|dev|develop|check)$", re.I)
TEST_FACTORS = {"test", "tests", "testing", "unit", "unittest", "unittests", "pytest"}
REQUIREMENT_FILES = re.compile(r"^(requirements[^/]*|requirements/[^/]*(test|dev)[^/]*)\.(txt|in)$", re.I)
# Top-level directories that are never the package under test, even with an __init__.py.
NOT_PACKAGES = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "benchmark", "bench",
                "scripts", "tools", "build", "dist", "site", "tasks", "ci", "changelog", "changelog.d"}  # fmt: skip
NOT_MODULES = {"setup", "conftest", "noxfile", "fabfile", "tasks", "manage", "dodo", "version", "_version"}
INDEX_HOSTS = {"pypi.org", "files.pythonhosted.org"}  # the only index reachable at image build
EDITABLE_REQUIRES = {"hatchling": "editables", "pdm-pep517": "editables"}  # backend -> its editable helper
PIP_OPTIONS = {  # options a requirements file may carry that change nothing we install
    "-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--pre", "--prefer-binary",
    "--no-binary", "--only-binary", "--trusted-host", "--require-hashes", "--use-feature", "--hash",
    "-c", "--constraint", "--config-settings", "-C", "--global-option", "--install-option",
}  # fmt: skip


def python_factors(version: tuple[int, int] = PYTHON) -> set[str]:
    """The tox factors that name this interpreter (tox 3 and 4 spellings)."""
    major, minor = version
    short, dotted = f"{major}{minor}", f"{major}.{minor}"
    return {"py", f"py{major}", f"py{short}", f"py{dotted}", dotted, "python", f"python{major}", f"python{dotted}",
            "cpython", f"cpython{short}", f"cp{short}"}  # fmt: skip


PLAIN_ENV = python_factors() | TEST_FACTORS


@dataclass
class PythonDeps:
    requirements: list[str]
    skipped: list[str]
    packages: list[str]


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


# ---- tox factors ---------------------------------------------------------------------------------
_BRACES = re.compile(r"\{([^{}]*)\}")
_CONDITION = re.compile(r"^[\w.{}!,+-]+$")


def expand_braces(text: str) -> list[str]:
    """tox's generative names: `py3{10,11}-{a,b}` -> py310-a, py310-b, ...; `{10-12}` is a range."""
    m = _BRACES.search(text)
    if not m:
        return [text]
    choices = []
    for part in m.group(1).split(","):
        r = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", part)
        choices += [str(i) for i in range(int(r[1]), int(r[2]) + 1)] if r else [part.strip()]
    return [out for c in choices for out in expand_braces(text[: m.start()] + c + text[m.end() :])]


def condition_holds(condition: str, factors: set[str]) -> bool:
    """A tox factor condition: `,` is or, `-` is and, `!` is not (`py3{10,11}-!mypy`)."""
    for expanded in expand_braces(condition):
        for alternative in expanded.split(","):
            parts = [p.strip() for p in alternative.split("-") if p.strip()]
            if parts and all((p[1:] not in factors) if p.startswith("!") else (p in factors) for p in parts):
                return True
    return False


def factor_filter(lines: list[str], factors: set[str] = PLAIN_ENV) -> Iterator[str]:
    """The lines tox would keep for an env with `factors`; conditions are stripped, never passed on."""
    for line in lines:
        head, sep, rest = line.partition(":")
        if sep and rest[:1] in (" ", "\t", "") and _CONDITION.match(head.strip()):
            if condition_holds(head.strip(), factors) and rest.strip():
                yield rest.strip()
        else:
            yield line


def env_name_is_plain(name: str) -> bool:
    return any(set(n.split("-")) <= PLAIN_ENV for n in expand_braces(name))


# ---- the collector -------------------------------------------------------------------------------
class Collector:
    """Requirements gathered from every source: parsed, self-references expanded, bad lines reported."""

    def __init__(self, project: Project, files: list[str], read: Reader):
        self.project, self.files, self.read = project, set(files), read
        self.requirements: dict[str, None] = {}
        self.skipped: list[str] = []
        self._seen: set[tuple[str, str]] = set()  # extras, groups and files already expanded

    def skip(self, where: str, line: str, why: str) -> None:
        entry = f"{where}: {line.strip()} ({why})" if line.strip() else f"{where}: {why}"
        if entry not in self.skipped:
            self.skipped.append(entry)

    def _once(self, kind: str, key: str) -> bool:
        if (kind, key) in self._seen:
            return False
        self._seen.add((kind, key))
        return True

    def add(self, text: str, where: str, marker: Marker | None = None) -> None:
        """One PEP 508 requirement; the project itself becomes the extras it names."""
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            self.skip(where, text, f"not a PEP 508 requirement: {str(e).splitlines()[0]}")
            return
        if self.project.name and canonicalize_name(req.name) == self.project.name:
            self.extras(sorted(req.extras), where, _both(marker, req.marker))
            return
        if req.url and urlparse(req.url).hostname not in INDEX_HOSTS:
            self.skip(where, text, "a direct URL: only the package index is reachable at image build")
            return
        req.marker = _both(marker, req.marker)
        self.requirements[str(req)] = None

    def extras(self, names: list[str], where: str, marker: Marker | None = None) -> None:
        for extra in names:
            key = canonicalize_name(extra)
            if key not in self.project.extras:
                self.skip(where, f"[{extra}]", "the project has no such extra")
            elif self._once("extra", key):
                for line in self.project.extras[key]:
                    self.add(line, f"extra {extra}", marker)

    def group(self, name: str, where: str) -> None:
        """A PEP 735 dependency group, with its `include-group`s."""
        key = canonicalize_name(name)
        if key not in self.project.groups:
            self.skip(where, name, "no such dependency group")
            return
        if not self._once("group", key):
            return
        for item in self.project.groups[key]:
            if isinstance(item, str):
                self.add(item, f"dependency group {name}")
            elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
                self.group(item["include-group"], f"dependency group {name}")
            else:
                self.skip(f"dependency group {name}", str(item), "neither a requirement nor an include-group")

    # ---- pip's requirement-file syntax (requirements files and tox deps) ------------------------
    def requirement_file(self, path: str, where: str) -> None:
        path = posixpath.normpath(path)
        if path.startswith("../") or path not in self.files:
            self.skip(where, f"-r {path}", "no such file in the repository")
            return
        if not self._once("file", path):
            return
        text = (self.read(path) or b"").decode(errors="replace")
        for line in logical_lines(text):
            self.pip_line(line, path, posixpath.dirname(path))

    def pip_line(self, line: str, where: str, here: str = "") -> None:
        """One logical line of pip's requirement syntax; `-r` paths are relative to the file (`here`)."""
        if line.startswith("-"):
            m = re.match(r"(-[A-Za-z]|--[A-Za-z][\w-]*)(?:=|\s*)(.*)$", line)
            option, value = (m[1], m[2].strip()) if m else (line, "")
            if option in ("-r", "--requirement"):
                self.requirement_file(posixpath.join(here, value), where)
            elif option in ("-e", "--editable"):
                self.location(value, line, where)
            elif option not in PIP_OPTIONS:
                self.skip(where, line, f"unknown pip option {option}")
            return
        if "${" in line:
            self.skip(where, line, "an environment variable pip would substitute")
            return
        # pip's own split: the requirement ends at the first option (`--hash=...`, `--config-settings`)
        words = line.split(" ")
        first_option = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
        text = " ".join(words[:first_option]).strip()
        if _looks_like_location(text):
            self.location(text, line, where)
        else:
            self.add(text, where)

    def location(self, value: str, line: str, where: str) -> None:
        """A path or URL: the project root (with extras) is the workspace, anything else is skipped."""
        m = re.fullmatch(r"(.*?)(\[([^\]]*)\])?", value.strip())
        path, extras = m[1], [e.strip() for e in (m[3] or "").split(",") if e.strip()]
        if path.startswith("file:"):
            path = urlparse(path).path or "."
        if "://" in path or re.match(r"^(git|hg|svn|bzr)\+", path):
            self.skip(where, line, "a VCS or URL requirement: only the package index is reachable at image build")
        elif posixpath.normpath(path or ".") == ".":
            self.extras(extras, where)
        else:
            self.skip(where, line, "a local path other than the project: not installed")

    # ---- tox --------------------------------------------------------------------------------------
    def tox_ini(self, text: str, where: str) -> bool:
        """The plain test env of a tox.ini (or setup.cfg / legacy_tox_ini); True when it names `-r` files."""
        cfg = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            cfg.read_string(text)
        except configparser.Error as e:
            self.skip(where, "", f"not a valid INI file: {str(e).splitlines()[0]}")
            return False
        sections = [s for s in cfg.sections() if s.startswith("testenv:") and env_name_is_plain(s[len("testenv:") :])]
        chain = [*sections[:1], "testenv"]

        def value(key: str) -> list[str]:
            for section in chain:
                if cfg.has_option(section, key):
                    raw = _tox_substitute(cfg.get(section, key), cfg)
                    return list(factor_filter(logical_lines(raw, tox=True)))
            return []

        name = f"{where} [{chain[0]}]"
        names_files = False
        for line in value("deps"):
            if re.search(r"\{[^}]*\}", line):
                self.skip(name, line, "a tox substitution with no value here")
                continue
            names_files |= _names_file(line)
            self.pip_line(line, name)
        for extra in _words(value("extras")):
            self.extras([extra], name)
        for group in _words(value("dependency_groups")):
            self.group(group, name)
        return names_files

    def tox_toml(self, data: dict, where: str) -> bool:
        """tox's native TOML config (`[tool.tox]` or tox.toml): env_run_base and a plain env's overrides."""
        envs = data.get("env", {}) if isinstance(data.get("env"), dict) else {}
        plain = next((env for name, env in envs.items() if env_name_is_plain(name) and isinstance(env, dict)), {})
        base = data.get("env_run_base", {}) if isinstance(data.get("env_run_base"), dict) else {}
        merged = {**base, **plain}
        name = f"{where} [tool.tox]"
        names_files = False
        for item in _list(merged.get("deps")):
            if not isinstance(item, str):
                self.skip(name, str(item), "a tox TOML expression, not a requirement")
                continue
            line = item.replace("{toxinidir}", ".").replace("{tox_root}", ".")
            names_files |= _names_file(line)
            self.pip_line(line, name)
        for extra in _list(merged.get("extras")):
            if isinstance(extra, str):
                self.extras([extra], name)
        for group in _list(merged.get("dependency_groups")):
            if isinstance(group, str):
                self.group(group, name)
        return names_files


def _both(a: Marker | None, b: Marker | None) -> Marker | None:
    if a is None or b is None:
        return a or b
    return Marker(f"({a}) and ({b})")


def _names_file(line: str) -> bool:
    return bool(re.match(r"(-r|--requirement\b)", line))


def _looks_like_location(text: str) -> bool:
    """A path or URL pip takes as is (not PEP 508's `name @ url`, which names its project)."""
    return text.startswith((".", "/", "file:")) or bool(re.match(r"^[A-Za-z][\w+.-]*://", text))


def _words(lines: list[str]) -> list[str]:
    return [w for line in lines for w in re.split(r"[\s,]+", line) if w]


def _list(value) -> list:
    return value if isinstance(value, list) else []


def logical_lines(text: str, tox: bool = False) -> list[str]:
    """Lines with comments dropped and backslash continuations joined (pip's and tox's rules)."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = (pending + line.strip()).strip()
        pending = ""
        if line:
            out.append(line)
    if pending.strip():
        out.append(pending.strip())
    return out


_TOX_REFERENCE = re.compile(r"\{\[([^\]]+)\]([\w-]+)\}")
_TOX_ENV = re.compile(r"\{env:([^:}]+)(?::([^}]*))?\}")


def _tox_substitute(value: str, cfg: configparser.ConfigParser, depth: int = 0) -> str:
    """tox's substitutions that matter for deps: `{[section]key}`, `{env:NAME:default}`, `{toxinidir}`."""

    def reference(m: re.Match) -> str:
        section, key = m[1], m[2]
        if depth > 5 or not cfg.has_option(section, key):
            return ""
        return _tox_substitute(cfg.get(section, key), cfg, depth + 1)

    value = _TOX_REFERENCE.sub(reference, value)
    value = _TOX_ENV.sub(lambda m: m[2] or "", value)  # unset in the image: its default, else nothing (as tox)
    return value.replace("{toxinidir}", ".").replace("{tox_root}", ".")


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


def _pyproject(project: Project, raw: bytes) -> None:
    try:
        data = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"pyproject.toml is not valid TOML: {e}") from None
    meta = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    if isinstance(meta.get("name"), str):
        project.name = canonicalize_name(meta["name"])
    project.dependencies += [(d, "pyproject.toml dependencies") for d in _list(meta.get("dependencies")) if _str(d)]
    for extra, deps in (meta.get("optional-dependencies") or {}).items():
        project.extras.setdefault(canonicalize_name(extra), []).extend(d for d in _list(deps) if _str(d))
    for group, items in (data.get("dependency-groups") or {}).items():
        project.groups[canonicalize_name(group)] = _list(items)
    if isinstance(data.get("build-system"), dict):
        project.build = [r for r in _list(data["build-system"].get("requires")) if _str(r)]
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    tox = tool.get("tox")
    if isinstance(tox, dict):
        project.tox_toml = tox
    _configured_packages(project, tool)


def _configured_packages(project: Project, tool: dict) -> None:
    """Import names from the build backend's config: setuptools, flit, hatch, poetry, pdm."""
    setuptools = tool.get("setuptools", {}) if isinstance(tool.get("setuptools"), dict) else {}
    packages = setuptools.get("packages")
    root = (setuptools.get("package-dir") or {}).get("", "") if isinstance(setuptools.get("package-dir"), dict) else ""
    if isinstance(packages, list):
        project.packages |= {p.split(".")[0] for p in packages if _str(p)}
    elif isinstance(packages, dict) and isinstance(packages.get("find"), dict):
        find = packages["find"]
        for where in _list(find.get("where")) or [root or "."]:
            project.discover.append((str(where), [str(i) for i in _list(find.get("include"))]))
    project.packages |= {m for m in _list(setuptools.get("py-modules")) if _str(m)}
    flit = tool.get("flit", {}) if isinstance(tool.get("flit"), dict) else {}
    if isinstance(flit.get("module"), dict) and _str(flit["module"].get("name")):
        project.packages.add(flit["module"]["name"].split(".")[0])
    hatch = ((tool.get("hatch") or {}).get("build") or {}) if isinstance(tool.get("hatch"), dict) else {}
    wheel = (hatch.get("targets") or {}).get("wheel") or {} if isinstance(hatch, dict) else {}
    for path in _list(wheel.get("packages") if isinstance(wheel, dict) else None):
        if _str(path):
            project.packages.add(posixpath.basename(path.rstrip("/")))
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    for item in _list(poetry.get("packages")):
        if isinstance(item, dict) and _str(item.get("include")) and "*" not in item["include"]:
            project.packages.add(item["include"].split("/")[0].split(".")[0])


def _str(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _setup_cfg(project: Project, raw: bytes) -> None:
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(raw.decode(errors="replace"))
    except configparser.Error:
        return  # setup.cfg often holds only tool sections; a broken one says nothing about deps
    if not project.name and cfg.has_option("metadata", "name"):
        project.name = canonicalize_name(cfg.get("metadata", "name").strip())
    option = lambda key: logical_lines(cfg.get("options", key, fallback=""))  # noqa: E731
    project.dependencies += [(d, "setup.cfg install_requires") for d in option("install_requires")]
    project.extras.setdefault("tests-require", []).extend(option("tests_require"))
    if cfg.has_section("options.extras_require"):
        for extra, deps in cfg.items("options.extras_require"):
            project.extras.setdefault(canonicalize_name(extra), []).extend(logical_lines(deps))
    packages = cfg.get("options", "packages", fallback="").strip()
    if packages.startswith("find"):
        where = cfg.get("options.packages.find", "where", fallback="").strip()
        include = _words(logical_lines(cfg.get("options.packages.find", "include", fallback="")))
        project.discover.append((where or _package_dir(cfg.get("options", "package_dir", fallback="")), include))
    else:
        project.packages |= {p.split(".")[0] for p in _words(logical_lines(packages))}
    project.packages |= set(_words(option("py_modules")))


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
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) == "setup"), None)
    if call is None:
        return
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}

    def literal(key: str):
        node = kwargs.get(key)
        node = assigned.get(node.id, node) if isinstance(node, ast.Name) else node
        try:
            return ast.literal_eval(node) if node is not None else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    if not project.name and _str(literal("name")):
        project.name = canonicalize_name(literal("name"))
    project.dependencies += [(d, "setup.py install_requires") for d in _list(literal("install_requires")) if _str(d)]
    project.extras.setdefault("tests-require", []).extend(d for d in _list(literal("tests_require")) if _str(d))
    extras = literal("extras_require")
    for extra, deps in extras.items() if isinstance(extras, dict) else []:
        deps = [deps] if isinstance(deps, str) else _list(deps)
        project.extras.setdefault(canonicalize_name(str(extra)), []).extend(d for d in deps if _str(d))
    packages = kwargs.get("packages")
    if isinstance(packages, ast.Call) and _called(packages) in ("find_packages", "find_namespace_packages"):
        positional = packages.args[0] if packages.args else None
        where = next((k.value for k in packages.keywords if k.arg == "where"), positional)
        where = where.value if isinstance(where, ast.Constant) and isinstance(where.value, str) else "."
        project.discover.append((where, []))
    else:
        project.packages |= {p.split(".")[0] for p in _list(literal("packages")) if _str(p)}
    project.packages |= {m for m in _list(literal("py_modules")) if _str(m)}


def _called(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


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
    names = {n for n in names if n.isidentifier() and n not in NOT_PACKAGES}
    return {n for n in names if not include or any(fnmatch.fnmatch(n, p.split(".")[0]) for p in include)}


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
    return sorted(n for n in found if n.isidentifier())


# ---- everything together ------------------------------------------------------------------------
def read_python_deps(files: list[str], read: Reader) -> PythonDeps:
    """Runtime, build and test requirements (plus pytest), the lines skipped, and the import names."""
    project = read_project(files, read)
    c = Collector(project, files, read)
    c.add("pytest", "the test runner")
    for line, where in project.dependencies:
        c.add(line, where)
    # No [build-system]: pip builds with setuptools (PEP 517's default), and so does the editable install.
    setuptools_default = project.build is None and ("setup.py" in files or "pyproject.toml" in files)
    for line in project.build or (["setuptools>=40.8.0", "wheel"] if setuptools_default else []):
        c.add(line, "build-system requires")
    # What the backend asks for on top to build an editable wheel (its get_requires_for_build_editable),
    # which pip never installs for us: the per-checkout install runs without build isolation.
    backends = {canonicalize_name(Requirement(r).name) for r in c.requirements}
    for backend, extra in EDITABLE_REQUIRES.items():
        if backend in backends:
            c.add(extra, f"{backend}'s editable builds")
    for extra in project.extras:
        if TEST_EXTRAS.match(extra) or extra == "tests-require":
            c.extras([extra], "test extras")
    for group in project.groups:
        if TEST_EXTRAS.match(group):
            c.group(group, "dependency groups")
    tox_names_files = False
    if "tox.ini" in files:
        tox_names_files = c.tox_ini((read("tox.ini") or b"").decode(errors="replace"), "tox.ini")
    elif "tox.toml" in files:
        try:
            tox_names_files = c.tox_toml(tomllib.loads((read("tox.toml") or b"").decode()), "tox.toml")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            c.skip("tox.toml", "", f"not valid TOML: {str(e).splitlines()[0]}")
    elif project.tox_toml is not None:
        legacy = project.tox_toml.get("legacy_tox_ini")
        if isinstance(legacy, str):
            tox_names_files = c.tox_ini(legacy, "pyproject.toml legacy_tox_ini")
        else:
            tox_names_files = c.tox_toml(project.tox_toml, "pyproject.toml")
    elif "setup.cfg" in files and b"[tox:tox]" in (read("setup.cfg") or b""):
        tox_names_files = c.tox_ini((read("setup.cfg") or b"").decode(errors="replace"), "setup.cfg")
    if not tox_names_files:
        matched = [p for p in sorted(files) if REQUIREMENT_FILES.match(p)]
        for path in matched:
            if path.endswith(".in") and path[:-3] + ".txt" in matched:
                continue  # pip-compile: the .txt is the resolved form of the .in
            c.requirement_file(path, path)
    return PythonDeps(sorted(c.requirements), c.skipped, import_names(project, files))


__all__ = ["PythonDeps", "condition_holds", "expand_braces", "factor_filter", "read_python_deps"]
