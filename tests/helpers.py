"""Small helpers for tests: git repositories they build, the installed command line, a planned store
validated in the local sandbox, and pytest run in a folder."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from harnessforge.envs.environment import validate
from harnessforge.models import Milestone
from harnessforge.rules import Rules, load_rules
from harnessforge.store import Store


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def copy_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


BIN = Path(sys.executable).parent / "harnessforge"


def cli_command(store, arguments: str, *extra: str, rules: Path | None = None) -> list[str]:
    """The installed `harnessforge` command on `store` (and `rules`): `arguments` split on spaces, then `extra`."""
    return [
        str(BIN),
        "--store",
        str(store.root),
        *(["--rules", str(rules)] if rules else []),
        *arguments.split(),
        *extra,
    ]


def one_run_per_side(rules: Rules | None = None) -> Rules:
    """`rules` (default: the shipped ones) validating with one base and one verify run: fast, and the
    example repository's tests are not flaky."""
    rules = rules or load_rules()
    return rules.model_copy(update={"environments": rules.environments.model_copy(update={"repeats": 1})})


def validated_copy(planned, folder: Path, milestones: Sequence[str], rules: Rules | None = None) -> tuple[Store, str]:
    """A copy of the `planned` fixture's store in `folder`, `milestones` validated in the local sandbox."""
    source, result = planned
    store = Store(folder / "store")
    shutil.copytree(source.root, store.root)
    key = result.plan.repo.key
    for milestone_id in milestones:
        (validation,) = validate(
            store, key, rules or one_run_per_side(), milestone=milestone_id, backend="local", log=lambda *_: None
        )
        assert validation.status == "valid", validation
    return store, key


def run_pytest(cwd: Path, tests: Sequence[str]) -> subprocess.CompletedProcess:
    """This environment's pytest on `tests` in `cwd` (no cache written there)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


# The example repository is below real repositories' screening thresholds on purpose: Dagster tests that
# plan it use these rules (the failed screening check is a warning, not a block).
EXAMPLE_RULES = str(Path(__file__).parent / "fixtures" / "example_rules.yaml")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (servers the tests start bind it: webserver, code server, PostgreSQL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def milestone_between(
    base: str,
    verify: str,
    title: str,
    description: str,
    changed_files: Sequence[str],
    test_files: Sequence[str] = (),
    tests: Sequence[str] = (),
) -> Milestone:
    """Milestone m01 from `base` to `verify` (one commit) with only what reading its task needs: its files and tests."""
    return Milestone(
        id="m01",
        ordinal=1,
        title=title,
        description=description,
        base_commit=base,
        verify_commit=verify,
        source_prs=[],
        issues=[],
        commits=[verify],
        changed_files=list(changed_files),
        test_files=list(test_files),
        lines_added=1,
        lines_deleted=0,
        difficulty=1,
        acceptance_tests=list(tests),
    )


def documented_change(
    folder: Path, before: dict[str, str], after: dict[str, str | None], names: set[str], **options
) -> list[str]:
    """What `envs.documentation.documented` quotes of a change from files `before` to `after` (a built repository),
    for tests using `names`: the shape of every documentation-quoting test."""
    from harnessforge.envs.documentation import documented
    from harnessforge.examples.builder import RepoBuilder
    from harnessforge.examples.patterns.common import START
    from harnessforge.gitio import GitRepo

    builder = RepoBuilder(folder / "repo", START)
    base = builder.commit("Before", before)
    verify = builder.commit("After", after)
    return documented(GitRepo(builder.path), base, verify, sorted({*before, *after}), names, [], **options)
