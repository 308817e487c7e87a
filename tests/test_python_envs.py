"""Python environments test the workspace: the project is never installed from the index, and
validation proves the tests import the checkout (else `package_shadowed`). How requirements are read:
test_python_deps.py."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from harnessforge.envs.recipes import recipe_at
from harnessforge.examples.patterns import build_pattern
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from harnessforge.store import Store

BIN = Path(sys.executable).parent
KEY = "harnessforge-examples__selfextras"


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
    from resources import GitHubResource, SandboxResource, StoreResource

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
    resources = {
        "store": StoreResource(root=str(store), rules_path=str(rules)),
        "sandbox": SandboxResource(),
        "github": GitHubResource(),
    }
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


EXTENSION = """#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, "The answer."}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "speedups", NULL, -1, methods};
PyMODINIT_FUNC PyInit_speedups(void) { return PyModule_Create(&module); }
"""


def test_the_python_base_compiles_a_c_extension_without_network(base_image, docker_client, tmp_path):
    # markupsafe's checkout installs only by compiling its speedups: the base carries a compiler and the headers
    (tmp_path / "speedups.c").write_text(EXTENSION)
    (tmp_path / "setup.py").write_text(
        "from setuptools import Extension, setup\nsetup(ext_modules=[Extension('speedups', ['speedups.c'])])\n"
    )
    script = "cp -r /source /tmp/build && cd /tmp/build && python3 setup.py -q build_ext --inplace 2>&1 | tail -3 && "
    script += "python3 -c 'import speedups; print(speedups.answer())'"
    output = docker_client.containers.run(
        base_image,
        ["bash", "-c", script],
        network_mode="none",
        remove=True,
        volumes={str(tmp_path): {"bind": "/source", "mode": "ro"}},
    )
    assert output.decode().strip().splitlines()[-1] == "42"
