"""A Python project's dependencies at one commit: the requirements its image installs, the lines
skipped, and (from `python_project.py`) its import names.

Sources: the project's own metadata (pyproject.toml, setup.cfg, setup.py; read by
`python_project.py`), tox's config (tox.ini, tox.toml, `[tool.tox]`), and pip requirement files.
Every requirement goes through `packaging` (PEP 508). Rules:

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
  `requirements*.txt`, `requirements/*{test,dev}*.txt` and `tests/requirements*.txt` (a pip-compile `.in`
  only without its `.txt`).
- A line that does not parse, or that could only come from elsewhere than the package index (VCS,
  URLs, other local paths, unset tox substitutions), is skipped and reported, never fatal.
  Constraint files (`-c`) and index options are read past: they only narrow what the index gives.
"""

from __future__ import annotations

import configparser
import posixpath
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlparse

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .python_project import Project, Reader, as_list, import_names, logical_lines, read_project, words

PYTHON = (3, 11)  # the interpreter of the default Python base image (Debian bookworm)
TEST_EXTRAS = re.compile(r"^(test|tests|testing|dev|develop|check)$", re.I)
ONLY_TESTS = re.compile(r"^(test|tests|testing)$", re.I)
TEST_FACTORS = {"test", "tests", "testing", "unit", "unittest", "unittests", "pytest"}
# the root's requirements files, a requirements folder's test and dev files, and a test folder's own (packaging's
# `tests/requirements.txt`, which its noxfile installs); never docs' or tasks'
REQUIREMENT_FILES = re.compile(
    r"^(requirements[^/]*|requirements/[^/]*(test|dev)[^/]*|(tests?|testing)/requirements[^/]*)\.(txt|in)$", re.I
)
INDEX_HOSTS = {"pypi.org", "files.pythonhosted.org"}  # the only index reachable at image build
EDITABLE_REQUIRES = {"hatchling": "editables", "pdm-pep517": "editables"}  # backend -> its editable helper
PIP_OPTIONS = {  # options a requirements file may carry that change nothing we install
    *("-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--pre", "--prefer-binary"),
    *("--no-binary", "--only-binary", "--trusted-host", "--require-hashes", "--use-feature", "--hash"),
    *("-c", "--constraint", "--config-settings", "-C", "--global-option", "--install-option"),
}


def python_factors(version: tuple[int, int] = PYTHON) -> set[str]:
    """The tox factors that name this interpreter (tox 3 and 4 spellings)."""
    major, minor = version
    short, dotted = f"{major}{minor}", f"{major}.{minor}"
    return {
        *("py", f"py{major}", f"py{short}", f"py{dotted}", dotted),
        *("python", f"python{major}", f"python{dotted}", "cpython", f"cpython{short}", f"cp{short}"),
    }


PLAIN_ENV = python_factors() | TEST_FACTORS


@dataclass
class PythonDeps:
    requirements: list[str]
    skipped: list[str]
    packages: list[str]


# ---- tox factors ---------------------------------------------------------------------------------
_BRACES = re.compile(r"\{([^{}]*)\}")
_CONDITION = re.compile(r"^[\w.{}!,+-]+$")


def expand_braces(text: str) -> list[str]:
    """tox's generative names: `py3{10,11}-{a,b}` -> py310-a, py310-b, ...; `{10-12}` is a range."""
    braces = _BRACES.search(text)
    if not braces:
        return [text]
    choices = []
    for part in braces.group(1).split(","):
        span = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", part)
        choices += [str(number) for number in range(int(span[1]), int(span[2]) + 1)] if span else [part.strip()]
    before, after = text[: braces.start()], text[braces.end() :]
    return [name for choice in choices for name in expand_braces(before + choice + after)]


def condition_holds(condition: str, factors: set[str]) -> bool:
    """A tox factor condition: `,` is or, `-` is and, `!` is not (`py3{10,11}-!mypy`)."""
    for expanded in expand_braces(condition):
        for alternative in expanded.split(","):
            parts = [part.strip() for part in alternative.split("-") if part.strip()]
            if parts and all(_factor_holds(part, factors) for part in parts):
                return True
    return False


def _factor_holds(part: str, factors: set[str]) -> bool:
    return part[1:] not in factors if part.startswith("!") else part in factors


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
    return any(set(expanded.split("-")) <= PLAIN_ENV for expanded in expand_braces(name))


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
            requirement = Requirement(text)
        except InvalidRequirement as e:
            self.skip(where, text, f"not a PEP 508 requirement: {str(e).splitlines()[0]}")
            return
        if self.project.name and canonicalize_name(requirement.name) == self.project.name:
            self.extras(sorted(requirement.extras), where, _both(marker, requirement.marker))
            return
        if requirement.url and urlparse(requirement.url).hostname not in INDEX_HOSTS:
            self.skip(where, text, "a direct URL: only the package index is reachable at image build")
            return
        requirement.marker = _both(marker, requirement.marker)
        self.requirements[str(requirement)] = None

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
            spelled = re.match(r"(-[A-Za-z]|--[A-Za-z][\w-]*)(?:=|\s*)(.*)$", line)
            option, value = (spelled[1], spelled[2].strip()) if spelled else (line, "")
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
        tokens = line.split(" ")
        first_option = next((index for index, token in enumerate(tokens) if token.startswith("-")), len(tokens))
        text = " ".join(tokens[:first_option]).strip()
        if _looks_like_location(text):
            self.location(text, line, where)
        else:
            self.add(text, where)

    def location(self, value: str, line: str, where: str) -> None:
        """A path or URL: the project root (with extras) is the workspace, anything else is skipped."""
        spelled = re.fullmatch(r"(.*?)(\[([^\]]*)\])?", value.strip())
        path, extras = spelled[1], [extra.strip() for extra in (spelled[3] or "").split(",") if extra.strip()]
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
        config = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            config.read_string(text)
        except configparser.Error as e:
            self.skip(where, "", f"not a valid INI file: {str(e).splitlines()[0]}")
            return False
        sections = [
            section
            for section in config.sections()
            if section.startswith("testenv:") and env_name_is_plain(section[len("testenv:") :])
        ]
        chain = [*sections[:1], "testenv"]
        envname = _plain_env_name(config, sections)

        def value(key: str) -> list[str]:
            for section in chain:
                if config.has_option(section, key):
                    raw = _tox_substitute(config.get(section, key), config).replace("{envname}", envname)
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
        for extra in words(value("extras")):
            self.extras([extra], name)
        for group in words(value("dependency_groups")):
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
        for item in as_list(merged.get("deps")):
            if not isinstance(item, str):
                self.skip(name, str(item), "a tox TOML expression, not a requirement")
                continue
            line = item.replace("{toxinidir}", ".").replace("{tox_root}", ".")
            names_files |= _names_file(line)
            self.pip_line(line, name)
        for extra in as_list(merged.get("extras")):
            if isinstance(extra, str):
                self.extras([extra], name)
        for group in as_list(merged.get("dependency_groups")):
            if isinstance(group, str):
                self.group(group, name)
        return names_files


def _both(outer: Marker | None, inner: Marker | None) -> Marker | None:
    """Both markers must hold: an extra's marker and the marker of a line it brings."""
    if outer is None or inner is None:
        return outer or inner
    return Marker(f"({outer}) and ({inner})")


def _names_file(line: str) -> bool:
    return bool(re.match(r"(-r|--requirement\b)", line))


def _looks_like_location(text: str) -> bool:
    """A path or URL pip takes as is (not PEP 508's `name @ url`, which names its project)."""
    return text.startswith((".", "/", "file:")) or bool(re.match(r"^[A-Za-z][\w+.-]*://", text))


_TOX_REFERENCE = re.compile(r"\{\[([^\]]+)\]([\w-]+)\}")
_TOX_ENV = re.compile(r"\{env:([^:}]+)(?::([^}]*))?\}")


def _plain_env_name(config: configparser.ConfigParser, sections: list[str]) -> str:
    """What tox's `{envname}` is for the plain test env on this interpreter: the `[testenv:NAME]` read, else the
    envlist's name for it (bidict's `python3.{12,11}` and `deps = -r dev-deps/{envname}/test.txt`), else `py3XX`."""
    if sections:
        return sections[0][len("testenv:") :]
    listed = config.get("tox", "envlist", fallback="") if config.has_section("tox") else ""
    for name in (name for line in logical_lines(listed, tox=True) for name in expand_braces(line.strip())):
        for each in name.split(","):
            if each.strip() and set(each.strip().split("-")) <= python_factors():
                return each.strip()
    return "py{}{}".format(*PYTHON)


def _tox_substitute(value: str, config: configparser.ConfigParser, depth: int = 0) -> str:
    """tox's substitutions that matter for deps: `{[section]key}`, `{env:NAME:default}`, `{toxinidir}`."""

    def reference(found: re.Match) -> str:
        section, key = found[1], found[2]
        if depth > 5 or not config.has_option(section, key):
            return ""
        return _tox_substitute(config.get(section, key), config, depth + 1)

    value = _TOX_REFERENCE.sub(reference, value)
    value = _TOX_ENV.sub(lambda found: found[2] or "", value)  # unset in the image: its default, else nothing (as tox)
    return value.replace("{toxinidir}", ".").replace("{tox_root}", ".")


# ---- everything together ------------------------------------------------------------------------
def read_python_deps(files: list[str], read: Reader) -> PythonDeps:
    """Runtime, build and test requirements (plus pytest), the lines skipped, and the import names."""
    project = read_project(files, read)
    collector = Collector(project, files, read)
    collector.add("pytest", "the test runner")
    for line, where in project.dependencies:
        collector.add(line, where)
    # No [build-system]: pip builds with setuptools (PEP 517's default), and so does the editable install.
    setuptools_default = project.build is None and ("setup.py" in files or "pyproject.toml" in files)
    for line in project.build or (["setuptools>=40.8.0", "wheel"] if setuptools_default else []):
        collector.add(line, "build-system requires")
    # What the backend asks for on top to build an editable wheel (its get_requires_for_build_editable),
    # which pip never installs for us: the per-checkout install runs without build isolation.
    backends = {canonicalize_name(Requirement(line).name) for line in collector.requirements}
    for backend, extra in EDITABLE_REQUIRES.items():
        if backend in backends:
            collector.add(extra, f"{backend}'s editable builds")
    for extra in project.extras:
        if TEST_EXTRAS.match(extra) or extra == "tests-require":
            collector.extras([extra], "test extras")
    # a `test` group is the tests' own; `dev` gathers docs, lint and release tools too (filelock's pins a Sphinx
    # plugin that needs a newer Python than the image's): read only when no test group is there
    testing = [group for group in project.groups if ONLY_TESTS.match(group)]
    for group in testing or [group for group in project.groups if TEST_EXTRAS.match(group)]:
        collector.group(group, "dependency groups")
    tox_names_files = False
    if "tox.ini" in files:
        tox_names_files = collector.tox_ini((read("tox.ini") or b"").decode(errors="replace"), "tox.ini")
    elif "tox.toml" in files:
        try:
            tox_names_files = collector.tox_toml(tomllib.loads((read("tox.toml") or b"").decode()), "tox.toml")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            collector.skip("tox.toml", "", f"not valid TOML: {str(e).splitlines()[0]}")
    elif project.tox_toml is not None:
        legacy = project.tox_toml.get("legacy_tox_ini")
        if isinstance(legacy, str):
            tox_names_files = collector.tox_ini(legacy, "pyproject.toml legacy_tox_ini")
        else:
            tox_names_files = collector.tox_toml(project.tox_toml, "pyproject.toml")
    elif "setup.cfg" in files and b"[tox:tox]" in (read("setup.cfg") or b""):
        tox_names_files = collector.tox_ini((read("setup.cfg") or b"").decode(errors="replace"), "setup.cfg")
    if not tox_names_files:
        matched = [path for path in sorted(files) if REQUIREMENT_FILES.match(path)]
        for path in matched:
            if path.endswith(".in") and path[:-3] + ".txt" in matched:
                continue  # pip-compile: the .txt is the resolved form of the .in
            collector.requirement_file(path, path)
    return PythonDeps(sorted(collector.requirements), collector.skipped, import_names(project, files))


__all__ = ["PythonDeps", "condition_holds", "expand_braces", "factor_filter", "read_python_deps"]
