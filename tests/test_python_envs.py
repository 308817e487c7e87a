"""Python environments test the workspace: requirements come from real parsers (PEP 508, tox's factor
syntax, pip's requirement files), the project is never installed from the index, and validation
proves the tests import the checkout (else `package_shadowed`)."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harnessforge.envs.python_deps import condition_holds, expand_braces, factor_filter, read_python_deps
from harnessforge.envs.recipes import recipe_at
from harnessforge.errors import ConfigError
from harnessforge.examples.patterns import build_pattern
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from harnessforge.store import Store

BIN = Path(sys.executable).parent
KEY = "harnessforge-examples__selfextras"


def deps(files: dict[str, str]):
    data = {path: text.encode() for path, text in files.items()}
    return read_python_deps(list(data), data.get)


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


# ---- tox factors --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, taken",
    [
        ("mypy: mypy", None),
        ("docs: sphinx", None),
        ("py3{10,11}: packaging", "packaging"),
        ("py{310-313}: ranged", "ranged"),
        ("py3{8,9}: old", None),
        ("!py38: not-old", "not-old"),
        ("!pypy: cpython-only", "cpython-only"),
        ("py38: only-old", None),
        ("py311-tests: both", "both"),
        ("py311-django: needs-django", None),
        ("tests,lint: either", "either"),
        ("!pypy-!mypy: neither", "neither"),
        ("py3.11: dotted", "dotted"),
        ("3.11: bare", "bare"),
        ("3.1{0,1}-tests: structlog-style", "structlog-style"),
        ("py{310,311}-{tests,mypy}: product", "product"),
        ("coverage: coverage", None),
        ("pytestmain: git+https://github.com/pytest-dev/pytest.git@main", None),
        ("attrs>=22", "attrs>=22"),
        ("pkg @ https://files.pythonhosted.org/x.whl", "pkg @ https://files.pythonhosted.org/x.whl"),
    ],
)
def test_tox_factor_conditions_are_decided_for_a_plain_test_env(line, taken):
    assert list(factor_filter([line])) == ([taken] if taken else [])


def test_brace_expansion_and_conditions():
    assert expand_braces("py3{10,11}-{a,b}") == ["py310-a", "py310-b", "py311-a", "py311-b"]
    assert expand_braces("py3{10-12}") == ["py310", "py311", "py312"]
    assert condition_holds("py38,tests", {"tests"}) and not condition_holds("py38-tests", {"tests"})
    assert condition_holds("!py38", set()) and not condition_holds("!py38", {"py38"})


def test_tox_ini_real_world_spellings():
    tox = """
[tox]
envlist = py3{10,11,12}, mypy, docs

[base]
deps =
    attrs>=22.2
    hypothesis

[testenv]
deps =
    {[base]deps}
    -r{toxinidir}/requirements/tests.txt
    min: -r requirements/tests-min.txt
    -c constraints.txt
    mypy: mypy
    py3{10,11}: tomli
    !py38: exceptiongroup ; python_version < "3.11"
    {env:EXTRA_DEPS}
    {env:PINNED:freezegun==1.5}
    {envsitepackagesdir}/x
    coverage[toml] >= 5.0  # inline comment
    pytest-xdist \\
        >=3
extras = tests
dependency_groups =
    tests: testing
    mypy: typing

[testenv:docs]
deps = sphinx
"""
    found = deps(
        {
            "pyproject.toml": (
                '[project]\nname = "mypkg"\n[project.optional-dependencies]\ntests = ["mypkg[toml]", '
                '"pytest-mock"]\ntoml = ["tomlkit"]\n[dependency-groups]\ntesting = ["time-machine"]\n'
                'typing = ["mypy"]\n[build-system]\nrequires = ["flit_core>=3.4"]\n'
            ),
            "tox.ini": tox,
            "requirements/tests.txt": "pytest==8.3.3\n",
            "requirements/tests-min.txt": "werkzeug==2.0.0\n",
            "requirements-dev.txt": "black==1.0\n",  # tox names its files: the glob is not read
            "constraints.txt": "attrs<99\n",
        }
    )
    assert names(found.requirements) == {
        "attrs",
        "hypothesis",
        "pytest",
        "tomli",
        "exceptiongroup",
        "freezegun",
        "coverage",
        "pytest-xdist",
        "pytest-mock",
        "tomlkit",
        "time-machine",
        "flit-core",
    }
    assert 'exceptiongroup; python_version < "3.11"' in found.requirements and "pytest-xdist>=3" in found.requirements
    assert "freezegun==1.5" in found.requirements and "coverage[toml]>=5.0" in found.requirements
    assert not {"mypy", "werkzeug", "black", "sphinx", "mypkg"} & names(found.requirements)
    assert found.skipped == ["tox.ini [testenv]: {envsitepackagesdir}/x (a tox substitution with no value here)"]


def test_tox_sections_for_a_plain_env_and_tox_toml():
    ini = "[testenv]\ndeps = base-only\n[testenv:py{310,311}]\ndeps = py311-section\n[testenv:lint]\ndeps = ruff\n"
    assert names(deps({"tox.ini": ini}).requirements) == {"pytest", "py311-section"}
    toml = (
        '[project]\nname = "Flask"\n[dependency-groups]\nlocal = ["asgiref", "flask[dotenv]"]\n'
        '[project.optional-dependencies]\ndotenv = ["python-dotenv"]\n'
        '[tool.tox.env_run_base]\ndependency_groups = ["local"]\ndeps = ["greenlet", {replace = "ref"}]\n'
        '[tool.tox.env.typing]\ndeps = ["mypy"]\n[build-system]\nrequires = ["flit_core<4"]\n'
    )
    found = deps({"pyproject.toml": toml})
    assert names(found.requirements) == {"pytest", "asgiref", "python-dotenv", "greenlet", "flit-core"}
    assert found.skipped == ["pyproject.toml [tool.tox]: {'replace': 'ref'} (a tox TOML expression, not a requirement)"]
    legacy = '[project]\nname = "x"\n[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ndeps =\n  tests: legacy\n"""\n'
    assert "legacy" in names(deps({"pyproject.toml": legacy}).requirements)


# ---- self-references ------------------------------------------------------------------------------
def test_the_project_is_never_a_requirement_its_extras_are():
    pyproject = """
[project]
name = "My_Pkg"
dependencies = ["attrs"]
[project.optional-dependencies]
tests = ["my-pkg[toml,color]", "pytest>=7"]
toml = ["tomli; python_version < '3.11'", "my.pkg[cycle]"]
color = ["colorama"]
cycle = ["My-Pkg[toml]"]
dev = ["my_pkg[tests]"]
docs = ["sphinx"]
[build-system]
requires = ["setuptools>=64"]
"""
    tox = "[testenv]\ndeps =\n    -e .[docs]\n    my-pkg[docs]\n    .\n    {toxinidir}\n    -e {toxinidir}[color]\n"
    found = deps({"pyproject.toml": pyproject, "tox.ini": tox, "requirements.txt": "-e .[tests]\n"})
    assert "my-pkg" not in names(found.requirements) and "my_pkg" not in names(found.requirements)
    assert names(found.requirements) == {"attrs", "pytest", "tomli", "colorama", "sphinx", "setuptools"}
    assert 'tomli; python_version < "3.11"' in found.requirements
    assert found.skipped == []
    # the marker of a self-reference carries over to what its extra brings
    marked = deps(
        {
            "pyproject.toml": (
                '[project]\nname = "p"\n[project.optional-dependencies]\n'
                'test = [\'p[x]; sys_platform == "linux"\']\nx = ["lxml"]\n'
            )
        }
    )
    assert 'lxml; sys_platform == "linux"' in marked.requirements
    missing = deps({"pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["p[nope]"]\n'})
    assert missing.skipped == ["extra test: [nope] (the project has no such extra)"]


def test_setup_py_and_setup_cfg_literal_arguments():
    setup_py = textwrap.dedent(
        """
        from setuptools import find_packages, setup
        REQUIRES = ["requests>=2", "idna"]
        setup(
            name="legacy-pkg",
            install_requires=REQUIRES,
            extras_require={"test": ["legacy_pkg[socks]", "pytest-mock"], "socks": "PySocks"},
            tests_require=["responses"],
            packages=find_packages(where="src", exclude=["tests"]),
            package_dir={"": "src"},
        )
        """
    )
    found = deps({"setup.py": setup_py, "src/legacy_pkg/__init__.py": "", "src/legacy_pkg/sub/__init__.py": ""})
    assert names(found.requirements) == {
        "pytest",
        "requests",
        "idna",
        "pysocks",
        "pytest-mock",
        "responses",
        "setuptools",
        "wheel",
    }
    assert found.packages == ["legacy_pkg"]
    cfg = "[metadata]\nname = cfgpkg\n[options]\ninstall_requires =\n    click>=8\npackages = find:\npackage_dir =\n"
    cfg += "    =lib\n[options.extras_require]\ntesting =\n    cfgpkg[yaml]\nyaml = pyyaml\n"
    found = deps({"setup.cfg": cfg, "setup.py": "import setuptools; setuptools.setup()", "lib/cfgpkg/__init__.py": ""})
    assert names(found.requirements) == {"pytest", "click", "pyyaml", "setuptools", "wheel"} and found.packages == [
        "cfgpkg"
    ]
    # setup.py that is not Python: its arguments stay unknown, nothing fails
    assert deps({"setup.py": "setup(\n", "mod.py": ""}).packages == ["mod"]


# ---- requirement files --------------------------------------------------------------------------
def test_requirement_files_with_includes_markers_hashes_and_options():
    found = deps(
        {
            "requirements/dev.txt": textwrap.dedent(
                """\
            # tools
            --index-url https://pypi.org/simple
            -i https://pypi.org/simple
            --pre
            --requirement=base.txt
            -r ../requirements/base.txt
            -c ../constraints.txt
            pytest-cov==5.0.0 \\
                --hash=sha256:4f0764a1219df53214206bf1feea4633c3b558a2925c8b59f144f682861ce653 \\
                --hash=sha256:5837b58e9f6ebd335b0f8060eecce69b662415b16dc503883a02f45dfeb14857
            mock>=4 ; python_version < "3.8"
            -e git+https://github.com/o/r.git#egg=r
            r2 @ git+https://github.com/o/r2.git
            wheelhouse @ https://files.pythonhosted.org/packages/w-1.0-py3-none-any.whl
            ${TOKEN_PACKAGE}
            --frobnicate
            -r missing.txt
            ./vendored/thing
            """
            ),
            "requirements/base.txt": "-r dev.txt\nattrs>=22\n",  # a cycle back to dev.txt
            "constraints.txt": "attrs<30\n",
        }
    )
    assert found.requirements == sorted(
        [
            "pytest",
            "attrs>=22",
            "pytest-cov==5.0.0",
            'mock>=4; python_version < "3.8"',
            "wheelhouse @ https://files.pythonhosted.org/packages/w-1.0-py3-none-any.whl",
        ]
    )
    reasons = {entry.split(" (", 1)[1] for entry in found.skipped}
    assert len(found.skipped) == 6 and all(s.startswith("requirements/dev.txt: ") for s in found.skipped)
    assert "unknown pip option --frobnicate)" in reasons and "no such file in the repository)" in reasons
    assert "an environment variable pip would substitute)" in reasons
    assert "a local path other than the project: not installed)" in reasons


def test_pip_compile_in_files_yield_to_their_txt():
    found = deps({"requirements/test.in": "pytest\n", "requirements/test.txt": "pytest==8.3.3\n"})
    assert found.requirements == ["pytest", "pytest==8.3.3"]


@pytest.mark.parametrize(
    "line",
    ["pytest>=7 pytest-cov", "foo==", "bar[", "baz >= 1.0 ; python_version < '3.8", "==1.0", "qux (>=1.0"],
)
def test_unparsable_lines_are_reported_and_skipped(line):
    found = deps({"requirements.txt": f"attrs\n{line}\nidna\n"})
    assert found.requirements == ["attrs", "idna", "pytest"]
    (entry,) = found.skipped
    assert entry.startswith(f"requirements.txt: {line} (not a PEP 508 requirement: ") and "\n" not in entry


def test_broken_tox_ini_and_setup_cfg_are_reported_not_fatal():
    found = deps({"tox.ini": "[testenv\ndeps = x\n", "setup.cfg": "not ini at all\n[", "requirements.txt": "six\n"})
    assert found.requirements == ["pytest", "six"]
    assert len(found.skipped) == 1 and found.skipped[0].startswith("tox.ini: not a valid INI file: ")


def test_invalid_pyproject_is_one_clear_error():
    with pytest.raises(ConfigError, match="^pyproject.toml is not valid TOML: ") as e:
        deps({"pyproject.toml": "[project\nname = 'x'\n"})
    assert "\n" not in str(e.value)


# ---- import names -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "files, expected",
    [
        ({"pyproject.toml": '[tool.setuptools]\npackages = ["pluggy", "pluggy.sub"]\n'}, ["pluggy"]),
        (
            {
                "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["src"]\ninclude = ["core*"]\n',
                "src/core/__init__.py": "",
                "src/other/__init__.py": "",
            },
            ["core"],
        ),
        ({"pyproject.toml": '[tool.flit.module]\nname = "more_itertools"\n'}, ["more_itertools"]),
        ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/structlog"]\n'}, ["structlog"]),
        ({"pyproject.toml": '[tool.poetry]\npackages = [{include = "poetic", from = "src"}]\n'}, ["poetic"]),
        ({"pyproject.toml": '[tool.setuptools]\npy-modules = ["single"]\n'}, ["single"]),
        ({"httpx/__init__.py": "", "tests/__init__.py": "", "docs/conf.py": "", "setup.py": ""}, ["httpx"]),
        ({"src/humanize/__init__.py": "", "src/humanize/time.py": "", "tests/test_time.py": ""}, ["humanize"]),
        ({"six.py": "", "setup.py": "", "conftest.py": "", "test_six.py": "", "noxfile.py": ""}, ["six"]),
        ({"README.md": ""}, []),
    ],
)
def test_import_names(files, expected):
    assert deps(files).packages == expected


# ---- the pattern repository and its environment, in Docker ---------------------------------------
def _cli(store: Path, *args: str, rules: Path | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "harnessforge"), "--store", str(store), *(["--rules", str(rules)] if rules else []), *args]
    env = {**os.environ, "COLUMNS": "250", "GITHUB_TOKEN": ""}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="session")
def self_extras_repo(tmp_path_factory) -> Path:
    return build_pattern("self-extras", tmp_path_factory.mktemp("patterns") / "selfextras")


@pytest.fixture(scope="session")
def self_extras_planned(self_extras_repo, tmp_path_factory) -> Path:
    """A store holding the pattern's plan (read-only; copy it to change anything)."""
    store = tmp_path_factory.mktemp("selfextras") / "store"
    proc = _cli(store, "plan", str(self_extras_repo))
    assert proc.returncode == 0, proc.stderr
    return store


@pytest.fixture(scope="session")
def self_extras_built(self_extras_planned, self_extras_repo, base_image, docker_client, tmp_path_factory):
    """The pattern's image built by `env build` (the CLI, a real build) and validated: (store, build, validate)."""
    store = tmp_path_factory.mktemp("selfextras-built") / "store"
    shutil.copytree(self_extras_planned, store)
    plan = Store(store).load_plan(KEY)
    recipe = recipe_at(GitRepo(self_extras_repo), plan.to_commit, KEY, load_rules().environments)
    from harnessforge.envs.recipes import env_hash

    tag = f"harnessforge/{KEY}:{env_hash(recipe, docker_client.images.get(base_image).id)}"
    if docker_client.images.list(name=tag):  # an earlier session's image: build it for real
        docker_client.images.remove(tag, force=True)
    built = _cli(store, "env", "build", KEY)
    validated = _cli(store, "validate", KEY)
    return store, built, validated


def test_recipe_of_the_pattern_drops_the_self_reference(self_extras_repo):
    repo = GitRepo(self_extras_repo)
    recipe = recipe_at(repo, repo.rev("v0.2.0"), KEY, load_rules().environments)
    assert recipe.requirements == [
        "iniconfig>=1",
        "packaging>=23",
        "pluggy",
        "pytest",
        "pytest>=7",
        "setuptools-scm>=8",
        "setuptools>=64",
    ]
    assert recipe.packages == ["selfextras"]
    assert [s.split(": ", 1)[1].split(" (")[0] for s in recipe.skipped_requirements] == [
        "pytest>=7 pytest-timeout",
        "https://github.com/harnessforge-examples/selfextras-fixtures/archive/main.zip",
    ]


def test_env_build_and_validate_test_the_workspace(self_extras_built, docker_client):
    store, built, validated = self_extras_built
    assert built.returncode == 0, built.stderr
    # the skipped lines are printed, each with why
    assert "m01: skipped 2 requirement line(s) that cannot be installed:" in built.stderr
    assert "tox.ini [testenv]: pytest>=7 pytest-timeout (not a PEP 508 requirement" in built.stderr
    assert "built in" in built.stderr
    assert validated.returncode == 0, validated.stderr
    validation = json.loads((store / "repos" / KEY / "milestones" / "m01" / "validation.json").read_text())
    assert validation["status"] == "valid", validation["detail"]
    # entry points exist only when the checkout's own metadata is installed (per checkout, at its commit)
    assert "tests/test_wrap.py::test_boxed_format_is_registered" in validation["fail_to_pass"]
    assert "tests/test_workspace.py::test_the_package_is_the_checkout" in validation["pass_to_pass"]
    # what the install writes into the checkout (the version file, not in .gitignore) never reaches a
    # diff and survives the clean between runs; the version comes from the checkout's own git history
    from harnessforge.envs.environment import Environment

    env = Environment(Store(store), KEY, load_rules(), backend="docker")
    m = Store(store).load_plan(KEY).milestone("m01")
    with env.opener(m)(m.verify_commit) as sandbox:
        assert sandbox.exec("test -f src/selfextras/_version.py").exit_code == 0
        assert sandbox.diff() == b"" and sandbox.exec("git status --porcelain").stdout == ""
        sandbox.clean()
        assert sandbox.exec("test -f src/selfextras/_version.py").exit_code == 0
        probe = "import importlib.metadata as m, selfextras; print(m.version('selfextras'), selfextras.__version__)"
        version, imported = sandbox.exec(f'python -c "{probe}"').stdout.split()
        assert version == imported and version.startswith("0.1.dev")  # no tags in a workspace


def _fork_wheel() -> bytes:
    """A distribution `selfextras-fork` that installs a top-level `selfextras` package: an index copy
    under another name (a fork, a vendored copy), which pip never removes for the checkout."""
    buf = io.BytesIO()
    dist = "selfextras_fork-1.0.dist-info"
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("selfextras/__init__.py", "def render(text, fmt='plain'):\n    return 'forked'\n")
        z.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: selfextras-fork\nVersion: 1.0\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return buf.getvalue()


def test_an_installed_copy_that_shadows_the_checkout_is_env_error(self_extras_built, tmp_path):
    from harnessforge.envs.environment import build, validate

    src, built, _ = self_extras_built
    assert built.returncode == 0, built.stderr
    store = _copy(src, tmp_path / "store")
    image = Store(src).load_images(KEY).images[0].tag
    wheel = "/tmp/selfextras_fork-1.0-py3-none-any.whl"
    install = [
        f"echo {base64.b64encode(_fork_wheel()).decode()} | base64 -d > {wheel}",
        f"/opt/hf/venv/bin/pip install --quiet --no-index --no-deps {wheel}",
    ]
    rules = _derived_rules(image, install)
    images = build(store, KEY, rules, log=lambda *_: None)
    assert not images.failures, images.failures
    (validation,) = validate(store, KEY, rules, backend="docker", log=lambda *_: None)
    assert validation.status == "env_error" and validation.reason == "package_shadowed"
    assert validation.detail.startswith(
        "selfextras is imported from /opt/hf/venv/lib/python3.11/site-packages/selfextras/"
    )
    assert "not from the workspace /workspace" in validation.detail
    assert store.load_plan(KEY).milestone("m01").status == "env_error"


def test_a_missing_base_that_cannot_be_bootstrapped_is_one_clear_line(self_extras_planned, tmp_path, docker_client):
    store = tmp_path / "store"
    shutil.copytree(self_extras_planned, store)
    tag = "harnessforge/base:hf-test-never-built-python"
    assert not docker_client.images.list(name=tag)
    rules = tmp_path / "rules.yaml"
    defaults = load_rules().environments
    rules.write_text(
        yaml.safe_dump(
            {
                "environments": {
                    "base_images": {**defaults.base_images, "python": tag},
                    "bootstrap": {**defaults.bootstrap.model_dump(), "mirror": "http://127.0.0.1:9/debian"},
                }
            }
        )
    )
    proc = _cli(store, "env", "build", KEY, rules=rules)
    assert proc.returncode == 1
    error = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1, proc.stderr
    assert "1 milestone(s) have no image (m01: toolchain_unavailable: cannot bootstrap " + tag in error[0]
    assert "failed (1): E: Failed getting release file http://127.0.0.1:9/debian" in error[0]
    assert "validates the 0 with an image" in error[0]
    assert f"{tag}: missing, bootstrapping it" in proc.stderr  # the progress it printed on the way
    images = json.loads((store / "images" / f"{KEY}.json").read_text())
    assert images["failures"]["m01"].startswith("toolchain_unavailable: cannot bootstrap")
    # validate does not stop: the milestone is recorded as env_error with the build's message
    proc = _cli(store, "validate", KEY, rules=rules)
    assert proc.returncode == 0, proc.stderr
    validation = json.loads((store / "repos" / KEY / "milestones" / "m01" / "validation.json").read_text())
    assert validation["status"] == "env_error" and "cannot bootstrap" in validation["detail"]


def test_shadowing_check_in_a_local_sandbox(self_extras_repo):
    """The check itself, without Docker: a directory ahead of the workspace on sys.path shadows it."""
    from harnessforge.envs.local_sandbox import LocalSandbox
    from harnessforge.envs.sandbox import SandboxSpec
    from harnessforge.envs.shadowing import shadowed_packages

    repo = GitRepo(self_extras_repo)
    commit = repo.rev("v0.2.0")
    recipe = recipe_at(repo, commit, KEY, load_rules().environments)
    with LocalSandbox(SandboxSpec(self_extras_repo, commit, env={"PYTHONPATH": "{workspace}/src"})) as sandbox:
        assert shadowed_packages(sandbox, recipe) == {}
        assert shadowed_packages(sandbox, recipe.model_copy(update={"packages": ["no_such_module_anywhere"]})) == {}
        sandbox._put_file(f"{sandbox.scratch}/site/selfextras/__init__.py", b"")
        sandbox.env["PYTHONPATH"] = f"{sandbox.scratch}/site:{sandbox.workdir}/src"
        assert shadowed_packages(sandbox, recipe) == {"selfextras": f"{sandbox.scratch}/site/selfextras/__init__.py"}


def _derived_rules(image: str, install: list[str]):
    """Rules whose recipe for the pattern starts from its built image and runs `install` on top (a
    few seconds: everything else is already in the image)."""
    rules = load_rules()
    override = {KEY: {"base_image": image, "install": install}}
    env = rules.environments.model_copy(update={"repeats": 1, "overrides": override})
    return rules.model_copy(update={"environments": env})


def _copy(src: Path, dest: Path) -> Store:
    store = Store(dest)
    shutil.copytree(Store(src).repo_dir(KEY), store.repo_dir(KEY))
    shutil.copytree(Store(src).git_cache(KEY), store.git_cache(KEY))
    return store


def test_a_checkout_whose_own_install_fails_is_install_failed(self_extras_built, tmp_path):
    """Without its build backend pip cannot install the checkout: its version file and entry points
    are missing, so validation refuses the environment and says why."""
    from harnessforge.envs.environment import build, validate

    src, built, _ = self_extras_built
    assert built.returncode == 0, built.stderr
    store = _copy(src, tmp_path / "store")
    image = Store(src).load_images(KEY).images[0].tag
    rules = _derived_rules(image, ["/opt/hf/venv/bin/pip uninstall --quiet --yes setuptools"])
    assert not build(store, KEY, rules, log=lambda *_: None).failures
    (validation,) = validate(store, KEY, rules, backend="docker", log=lambda *_: None)
    assert validation.status == "env_error" and validation.reason == "install_failed"
    assert validation.detail.startswith("the checkout's own install (pip install --editable .) failed with exit 1: ")
    assert "ModuleNotFoundError: No module named 'setuptools'" in validation.detail and "\n" not in validation.detail


def test_dagster_builds_what_it_can_and_validates_the_rest(self_extras_planned, tmp_path, docker_client):
    """A repo whose image cannot be built still materializes (its check says what is missing), and its
    milestones are validated as env_error instead of being held back."""
    import dagster as dg

    from harnessforge_assets.environments import docker_images, validated_milestones
    from harnessforge_assets.partitions import repo_milestone_key
    from resources import SandboxResource, StoreResource

    store = tmp_path / "store"
    shutil.copytree(self_extras_planned, store)
    defaults = load_rules().environments
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump(
            {
                "environments": {
                    "base_images": {**defaults.base_images, "python": "harnessforge/base:hf-test-absent"},
                    "bootstrap": {**defaults.bootstrap.model_dump(), "mirror": "http://127.0.0.1:9/debian"},
                }
            }
        )
    )
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [KEY])
    instance.add_dynamic_partitions("milestone", ["m01"])
    resources = {"store": StoreResource(root=str(store), rules_path=str(rules)), "sandbox": SandboxResource()}
    result = dg.materialize([docker_images], instance=instance, partition_key=KEY, resources=resources)
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "every_milestone_has_image" and not check.passed
    assert "m01: toolchain_unavailable: cannot bootstrap harnessforge/base:hf-test-absent" in check.description
    validated = dg.materialize(
        [validated_milestones], instance=instance, partition_key=repo_milestone_key(KEY, "m01"), resources=resources
    )
    assert validated.success
    assert Store(store).load_validation(KEY, "m01").status == "env_error"


def test_env_build_of_one_milestone_keeps_the_other_milestones_images(env_store, tmp_path):
    from harnessforge.envs.environment import build
    from harnessforge.errors import EnvError

    src, key, before = env_store
    store = Store(tmp_path / "store")
    shutil.copytree(src.repo_dir(key), store.repo_dir(key))
    shutil.copytree(src.git_cache(key), store.git_cache(key))
    shutil.copytree(src.root / "images", store.root / "images")
    after = build(store, key, load_rules(), milestone="m02", log=lambda *_: None)
    assert after.milestone_images == before.milestone_images and not after.failures
    assert [i.env_hash for i in after.images] == [i.env_hash for i in before.images]
    with pytest.raises(EnvError, match="has no milestone 'm99'"):
        build(store, key, load_rules(), milestone="m99", log=lambda *_: None)
