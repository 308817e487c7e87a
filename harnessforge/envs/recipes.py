"""Per-language recipes: what to install in a repo's image and how to run its tests.

A recipe is derived from the dependency files at one commit, reduced to what matters for the
install (requirement lines, lockfile digests). Its hash names the image, so a release that only
bumps a version number reuses the image, and a new dependency builds a new one.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import re
import tomllib
from collections.abc import Callable

from pydantic import ValidationError

from ..errors import ConfigError
from ..gitio import GitRepo
from ..mining.screening import language_loc
from ..models.common import first_error
from ..models.env import Recipe
from ..rules import EnvRules

DEPS_DIR = "/hf/deps"  # dependency manifests copied into the build container
VENV = "/opt/hf/venv"
TEST_EXTRAS = re.compile(r"^(test|tests|testing|dev|develop|check)$", re.I)
REQUIREMENT_FILES = re.compile(r"^(requirements[^/]*|requirements/[^/]*(test|dev)[^/]*)\.(txt|in)$", re.I)

Reader = Callable[[str], bytes | None]


def _requirement_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-", ".")):
            out.append(line)
    return out


def python_requirements(files: list[str], read: Reader) -> list[str]:
    """Runtime, test and build requirements from pyproject/setup.cfg/requirements/tox, plus pytest."""
    reqs: set[str] = {"pytest"}
    if "pyproject.toml" in files:
        try:
            data = tomllib.loads((read("pyproject.toml") or b"").decode())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"pyproject.toml is not valid TOML: {e}") from None
        project = data.get("project", {})
        reqs.update(project.get("dependencies", []))
        for extra, deps in project.get("optional-dependencies", {}).items():
            if TEST_EXTRAS.match(extra):
                reqs.update(deps)
        for group, deps in data.get("dependency-groups", {}).items():
            if TEST_EXTRAS.match(group):
                reqs.update(d for d in deps if isinstance(d, str))
        reqs.update(data.get("build-system", {}).get("requires", []))
    if "setup.cfg" in files:
        cfg = configparser.ConfigParser(interpolation=None)
        cfg.read_string((read("setup.cfg") or b"").decode(errors="replace"))
        reqs.update(_requirement_lines(cfg.get("options", "install_requires", fallback="")))
        if cfg.has_section("options.extras_require"):
            for extra, deps in cfg.items("options.extras_require"):
                if TEST_EXTRAS.match(extra):
                    reqs.update(_requirement_lines(deps))
    for path in files:
        if REQUIREMENT_FILES.match(path):
            reqs.update(_requirement_lines((read(path) or b"").decode(errors="replace")))
    if "tox.ini" in files:
        cfg = configparser.ConfigParser(interpolation=None, strict=False)
        cfg.read_string((read("tox.ini") or b"").decode(errors="replace"))
        reqs.update(_requirement_lines(cfg.get("testenv", "deps", fallback="")))
    return sorted(r for r in reqs if "{" not in r)


def _digest(files: list[str], read: Reader, names: tuple[str, ...]) -> dict[str, str]:
    return {p: hashlib.sha256(read(p) or b"").hexdigest()[:16] for p in files if p.rsplit("/", 1)[-1] in names}


def detect_language(repo: GitRepo, commit: str, files: list[str]) -> str:
    loc = language_loc(repo, commit, files)
    if not loc:
        raise ConfigError(f"no source files in a supported language at {commit[:10]}")
    return max(loc, key=loc.get)


def detect_recipe(language: str, files: list[str], read: Reader, rules: EnvRules) -> Recipe:
    """The default recipe for `language`, from the repo's own dependency files."""
    base = rules.base_images.get(language)
    if not base:
        raise ConfigError(f"environments.base_images has no image for {language}")
    if language == "python":
        reqs = python_requirements(files, read)
        site = f"$({VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
        return Recipe(
            language="python",
            runner="pytest",
            base_image=base,
            install=[
                f"python3 -m venv {VENV}",
                f"{VENV}/bin/pip install --quiet --disable-pip-version-check -r {DEPS_DIR}/requirements.txt",
                # The checkout is importable without a per-checkout `pip install -e .`.
                f"printf '/workspace\\n/workspace/src\\n' > {site}/harnessforge-workspace.pth",
            ],
            env={"PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin", "PIP_NO_INDEX": "1", "PYTHONHASHSEED": "0"},
            requirements=reqs,
        )
    if language == "typescript":
        locks = _digest(files, read, ("package-lock.json", "pnpm-lock.yaml", "yarn.lock"))
        pkg = json.loads((read("package.json") or b"{}").decode()) if "package.json" in files else {}
        dev = {**pkg.get("dependencies", {}), **pkg.get("devDependencies", {})}
        installer = (
            "corepack pnpm install --frozen-lockfile"
            if "pnpm-lock.yaml" in locks
            else "yarn install --frozen-lockfile"
            if "yarn.lock" in locks
            else "npm ci"
            if "package-lock.json" in locks
            else "npm install"
        )
        return Recipe(
            language="typescript",
            runner="vitest" if "vitest" in dev else "jest",
            base_image=base,
            install=[f"cd {DEPS_DIR} && {installer}"],
            prepare=[f"ln -sfn {DEPS_DIR}/node_modules node_modules"],
            env={"npm_config_offline": "true", "CI": "1"},
            inputs=locks | _digest(files, read, ("package.json",)),
        )
    if language == "go":
        return Recipe(
            language="go",
            runner="go",
            base_image=base,
            install=[f"cd {DEPS_DIR} && go mod download", "chmod -R a+rwX /opt/hf/go"],
            env={
                "GOFLAGS": "-mod=mod",
                "GOPROXY": "off",
                "GOMODCACHE": "/opt/hf/go/mod",
                "GOCACHE": "/opt/hf/go/cache",
            },
            inputs=_digest(files, read, ("go.mod", "go.sum")),
        )
    if language == "rust":
        return Recipe(
            language="rust",
            runner="cargo",
            base_image=base,
            # Manifests alone, with stub sources: dependencies are fetched without the repo's code.
            install=[
                f"cd {DEPS_DIR} && for m in $(find . -name Cargo.toml); do d=$(dirname $m); "
                "mkdir -p $d/src && touch $d/src/lib.rs; done && cargo fetch",
                "chmod -R a+rwX /opt/hf/cargo",
            ],
            env={"CARGO_HOME": "/opt/hf/cargo", "CARGO_NET_OFFLINE": "true"},
            inputs=_digest(files, read, ("Cargo.toml", "Cargo.lock")),
        )
    raise ConfigError(f"no recipe for language {language!r}")


def dependency_files(recipe: Recipe, files: list[str], read: Reader) -> dict[str, bytes]:
    """The files copied into the build container: requirements, or the manifests the digests cover."""
    if recipe.language == "python":
        return {"requirements.txt": "".join(f"{r}\n" for r in recipe.requirements).encode()}
    return {p: read(p) or b"" for p in files if p in recipe.inputs}


def apply_override(recipe: Recipe, override: dict) -> Recipe:
    """A user's per-repo override (any Recipe field) on top of the detected recipe."""
    try:
        return Recipe.model_validate({**recipe.model_dump(), **override})
    except ValidationError as e:
        raise ConfigError(f"environments.overrides: {first_error(e)}") from None


def env_hash(recipe: Recipe, base_image_id: str) -> str:
    """Names the dependency epoch: what the install reads and does, and the base it starts from."""
    canonical = json.dumps({"recipe": recipe.model_dump(mode="json"), "base": base_image_id}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def recipe_at(repo: GitRepo, commit: str, repo_key: str, rules: EnvRules, language: str | None = None) -> Recipe:
    files = repo.files(commit)
    language = language or detect_language(repo, commit, files)
    recipe = detect_recipe(language, files, lambda p: repo.show(commit, p), rules)
    override = rules.overrides.get(repo_key)
    return apply_override(recipe, override) if override else recipe
