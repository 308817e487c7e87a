"""The dependencies a milestone's change adds, removes or moves: what a Dev must change too for its tests to pass.

A test can pass only with a dependency the change bumps (cobra's man-page test needs go-md2man v2.0.6): a task
that does not say so asks for what no reading of it can find. Read from the manifests at both ends: `go.mod`'s
requires, `package.json`'s dependency maps, `pyproject.toml`'s project dependencies, `Cargo.toml`'s
dependency tables (a test compiles with the dev ones). npm's devDependencies are left out: linters and release
tooling, which the sandbox installs as the image has them. A manifest that does not parse says nothing.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement

from ..gitio import GitRepo

MANIFESTS = ("go.mod", "package.json", "pyproject.toml", "Cargo.toml")
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.\-/~]+\.[\w.\-/~]+)\s+(v\S+)", re.M)
_NODE_MAPS = ("dependencies", "peerDependencies", "optionalDependencies")  # not devDependencies: the tooling


def _go(text: str) -> dict[str, str]:
    return {name: version for name, version in _GO_REQUIRE.findall(text) if name not in ("module", "go")}


def _node(text: str) -> dict[str, str]:
    manifest = json.loads(text)
    return {name: str(version) for key in _NODE_MAPS for name, version in (manifest.get(key) or {}).items()}


def _python(text: str) -> dict[str, str]:
    project = tomllib.loads(text).get("project") or {}
    specs = list(project.get("dependencies") or [])  # not the extras: `dev`, `docs` and `test` tooling
    found = {}
    for spec in specs:
        try:
            requirement = Requirement(spec)
        except InvalidRequirement:
            continue
        found[requirement.name] = str(requirement.specifier) or "any version"
    return found


def _rust(text: str) -> dict[str, str]:
    manifest = tomllib.loads(text)
    found = {}
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        for name, spec in (manifest.get(key) or {}).items():
            found[name] = spec if isinstance(spec, str) else str(spec.get("version", spec.get("path", "")))
    return found


_READERS = {"go.mod": _go, "package.json": _node, "pyproject.toml": _python, "Cargo.toml": _rust}


def dependencies(path: str, text: str) -> dict[str, str] | None:
    """name -> version (or specifier) of a manifest; None when it does not parse or is no manifest."""
    reader = _READERS.get(PurePosixPath(path).name)
    if reader is None:
        return None
    try:
        return reader(text)
    except (ValueError, tomllib.TOMLDecodeError, AttributeError, TypeError):
        return None


def dependency_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per dependency added, removed or moved: "`x` v1 → v2", "`y` added (^2.0)", "`z` removed"."""
    lines = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            lines.append(f"`{name}` added ({after[name]})")
        elif name not in after:
            lines.append(f"`{name}` removed")
        elif before[name] != after[name]:
            lines.append(f"`{name}` {before[name]} → {after[name]}")
    return lines


# the code a manifest's dependencies serve: lo (Go) keeps its docs site's `marked` in a root package.json
_SERVES = {
    "go.mod": (".go",),
    "package.json": (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"),
    "pyproject.toml": (".py",),
    "Cargo.toml": (".rs",),
}


def changed_dependencies(repo: GitRepo, base: str, verify: str, changed_files: list[str]) -> list[str]:
    """The dependency changes of every root manifest among `changed_files` whose language's code the change touches
    too, each line naming its manifest when several changed. A manifest the change creates moves nothing: loguru's
    new pyproject.toml took over setup.py's dependencies."""
    out = []
    manifests = [  # the root's: a docs site's are not the code's
        path
        for path in changed_files
        if path in MANIFESTS and any(other.endswith(_SERVES[path]) for other in changed_files)
    ]
    for path in manifests:
        texts = [(repo.show(rev, path) or b"").decode("utf-8", "replace") for rev in (base, verify)]
        if not texts[0]:
            continue
        before, after = (dependencies(path, text) if text else {} for text in texts)
        if before is None or after is None:
            continue
        where = f" ({path})" if len(manifests) > 1 else ""
        out += [line + where for line in dependency_changes(before, after)]
    return out
