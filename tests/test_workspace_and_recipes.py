"""Workspaces hold no history after their commit; recipes come from the repo's own dependency files."""

import subprocess

import pytest

from harnessforge.envs.recipes import apply_override, detect_recipe, env_hash, python_requirements, recipe_at
from harnessforge.envs.workspace import make_workspace
from harnessforge.errors import ConfigError
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from tests.helpers import git


def test_workspace_has_only_the_commit_and_its_ancestors(example_repo, tmp_path):
    base = git(example_repo, "rev-parse", "v0.2.0^{commit}")
    ws = make_workspace(example_repo, base, tmp_path / "ws")
    assert git(ws, "rev-parse", "HEAD") == base
    assert git(ws, "tag") == "" and git(ws, "remote") == ""
    assert git(ws, "rev-list", "--all").split() == git(example_repo, "rev-list", base).split()
    future = git(example_repo, "rev-parse", "v0.3.0^{commit}")
    assert subprocess.run(["git", "cat-file", "-e", future], cwd=ws).returncode != 0
    # no object of any later commit, reachable or not
    objects = {line.split()[0] for line in git(ws, "cat-file", "--batch-all-objects", "--batch-check").splitlines()}
    later_only = set(git(example_repo, "rev-list", "--objects", f"{base}..v0.4.0").split()) - set(
        git(example_repo, "rev-list", "--objects", base).split()
    )
    assert later_only and not (objects & later_only)
    assert str(example_repo) not in (ws / ".git" / "config").read_text()
    assert not (ws / ".git" / "FETCH_HEAD").exists() and not (ws / ".git" / "logs").exists()


def test_python_requirements_come_from_pyproject_extras_setup_cfg_and_requirements():
    files = {
        "pyproject.toml": b'[project]\ndependencies = ["attrs>=22"]\n[project.optional-dependencies]\n'
        b'test = ["hypothesis"]\ndocs = ["sphinx"]\n[build-system]\nrequires = ["hatchling"]\n',
        "setup.cfg": b"[options]\ninstall_requires =\n    click\n[options.extras_require]\ntesting = freezegun\n",
        "requirements-dev.txt": b"# dev\nmypy==1.0  # types\n-e .\n",
        "tox.ini": b"[testenv]\ndeps =\n    coverage\n    {env:EXTRA}\n",
    }
    reqs = python_requirements(list(files), files.get)
    assert reqs == sorted(
        ["attrs>=22", "click", "coverage", "editables", "freezegun", "hatchling", "hypothesis", "mypy==1.0", "pytest"]
    )


def test_broken_pyproject_is_a_clear_error():
    with pytest.raises(ConfigError, match="pyproject.toml is not valid TOML"):
        python_requirements(["pyproject.toml"], lambda p: b"[project\n")


def test_recipe_hash_ignores_version_bumps_but_not_new_dependencies(example_repo, rules):
    repo = GitRepo(example_repo)
    env = rules.environments
    r2, r4 = (recipe_at(repo, git(example_repo, "rev-parse", t), "k", env) for t in ("v0.2.0", "v0.4.0"))
    assert r2.language == "python" and r2.runner == "pytest"
    assert r2.requirements == ["pytest", "pytest>=7", "setuptools>=61"]
    assert env_hash(r2, "sha256:base") == env_hash(r4, "sha256:base")
    more = r4.model_copy(update={"requirements": [*r4.requirements, "attrs"]})
    assert env_hash(more, "sha256:base") != env_hash(r4, "sha256:base")
    assert env_hash(r4, "sha256:other-base") != env_hash(r4, "sha256:base")


def test_other_languages_and_overrides(rules):
    env = rules.environments
    go = detect_recipe("go", ["go.mod", "go.sum", "main.go"], lambda p: b"module x\n", env)
    assert (
        go.runner == "go"
        and set(go.inputs) == {"go.mod", "go.sum"}
        and go.env["GOPROXY"] == "file:///opt/hf/go/mod/cache/download,off"
        and go.env["GOSUMDB"] == "off"
    )
    ts = detect_recipe(
        "typescript", ["package.json", "pnpm-lock.yaml"], lambda p: b'{"devDependencies": {"vitest": "1"}}', env
    )
    assert ts.runner == "vitest" and "pnpm install --frozen-lockfile" in ts.install[0]
    rust = detect_recipe("rust", ["Cargo.toml", "Cargo.lock"], lambda p: b"", env)
    assert rust.runner == "cargo" and "cargo fetch" in rust.install[0]
    custom = apply_override(go, {"test_cmd": "make test-json OUT={out}"})
    assert custom.test_cmd == "make test-json OUT={out}" and custom.runner == "go"
    with pytest.raises(ConfigError, match="environments.overrides: runner"):
        apply_override(go, {"runner": "maven"})


def test_a_workspace_on_another_filesystem_than_the_clone_is_built(example_repo):
    """Issue 32: `git pack-objects` writes its pack beside the source's objects and renames it into the
    workspace: "Invalid cross-device link" for a store on a data disk or a tmpfs /tmp. /dev/shm is a tmpfs."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    dest = Path(tempfile.mkdtemp(dir="/dev/shm")) / "ws"
    try:
        dest.parent.chmod(0o700)
        assert os.stat(example_repo).st_dev != os.stat(dest.parent).st_dev  # the case under test
        commit = git(example_repo, "rev-parse", "v0.3.0^{commit}")
        make_workspace(Path(example_repo), commit, dest)
        assert git(dest, "rev-parse", "HEAD") == commit
        assert git(dest, "rev-list", "--all", "--count") == git(example_repo, "rev-list", "--count", commit)
        assert git(dest, "status", "--porcelain") == ""
    finally:
        shutil.rmtree(dest.parent, ignore_errors=True)


def test_a_go_base_requiring_other_module_versions_gets_them_in_the_image(tmp_path):
    """spf13/cast: the base's go.mod requires quicktest v1.14.3, the verify commit's v1.14.6; the sandbox's only proxy
    is the image's module cache, so both versions are downloaded when the image is built."""
    from harnessforge.examples.builder import RepoBuilder
    from harnessforge.examples.patterns.common import START
    from harnessforge.gitio import GitRepo

    gomod = "module example.com/m\n\ngo 1.19\n\nrequire github.com/frankban/quicktest {}\n"
    b = RepoBuilder(tmp_path / "m", START)
    base = b.commit("Base", {"go.mod": gomod.format("v1.14.3"), "m.go": "package m\n"})
    verify = b.commit("Upgrade", {"go.mod": gomod.format("v1.14.6"), "m.go": "package m\n\nconst X = 1\n"})
    same = b.commit("Same", {"m.go": "package m\n\nconst X = 2\n"})
    repo, env = GitRepo(b.path), load_rules().environments
    install = recipe_at(repo, verify, "m", env, base_commit=base).install
    step = next(step for step in install if "deps-base" in step)
    # and the go.mod of every module in their graph: progressbar's test imported `virtualterm`, whose graph needs
    # `objx`'s go.mod, which `go mod download` alone leaves out ("module lookup disabled by GOPROXY=off")
    assert step.endswith("cd /hf/deps-base && go mod download && { go list -m all >/dev/null 2>&1 || true; }")
    assert any(step.startswith("cd /hf/deps && go mod download && { go list -m all") for step in install)
    assert not any("deps-base" in step for step in recipe_at(repo, same, "m", env, base_commit=verify).install)
    # progressbar's milestone added `virtualterm`, which its test imports: at base, `go` resolves it from the base's
    # go.mod (go 1.13: the whole graph), so the image resolves it there too
    added = gomod.format("v1.14.6") + "require github.com/chengxilo/virtualterm v1.0.4\n"
    terminal = b.commit("Terminal", {"go.mod": added})
    step = next(step for step in recipe_at(repo, terminal, "m", env, base_commit=same).install if "deps-base" in step)
    assert step.endswith("{ go get github.com/chengxilo/virtualterm@v1.0.4 >/dev/null 2>&1 || true; }")
