"""Harbor task folders: each verified task card as a directory Harbor-compatible RL frameworks run.

tasks/<task_id>/instruction.md        the statement the agent gets
tasks/<task_id>/task.toml             config + metadata (hints live here, host-side, never shown)
tasks/<task_id>/environment/          Dockerfile + repo.bundle (history up to the base commit only)
tasks/<task_id>/tests/                test.sh (writes /logs/verifier/reward.txt), test.patch, config.json
tasks/<task_id>/solution/solve.sh     applies the reference patch (the oracle)

Written for Harbor's task schema 1.4 and checked by Harbor's own loader and `harbor lint`
(tests/test_harbor_tools.py). The verifier runs in a container of its own (`environment_mode =
"separate"`), so nothing the agent did to its sandbox besides the repository reaches the grading: a
collect hook saves the agent's changes as a patch (the way SWE-bench takes a model patch) and test.sh
applies it to a fresh checkout of the base commit.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from ..envs.images import bootstrap_packages, bootstrap_path, package_suites
from ..envs.workspace import SANDBOX_UID, SANDBOX_USER, make_workspace
from ..models.distill import TaskCard
from ..rules import Rules
from ..store import Store
from .swebench import instance

SCHEMA_VERSION = "1.4"
TASK_TOML_KEYS = {  # Harbor's task.toml sections and the keys we fill (harborframework.com/docs/task-format)
    "": ["schema_version"],
    "task": ["name", "description", "keywords"],
    "metadata": ["difficulty", "category", "source", "created_at", "base_commit", "repo"],
    "verifier": ["timeout_sec", "user", "environment_mode", "collect"],
    "agent": ["timeout_sec", "user"],
    "environment": ["build_timeout_sec", "cpus", "memory_mb", "storage_mb", "network_mode"],
}
WORKDIR = "/workspace"
AGENT_PATCH = "/logs/artifacts/agent.patch"  # Harbor's artifacts folder: collected, then given to the verifier
BASE_ARG = "BASE_IMAGE"
# The agent's changes against the base commit, untracked files included, through an index of its own
# (the agent's staging area is left alone), as the harness's sandbox takes them.
COLLECT = (
    "mkdir -p /logs/artifacts && cd {workdir} && export GIT_INDEX_FILE=/tmp/hf-collect.index && "
    "rm -f $GIT_INDEX_FILE && git -c safe.directory='*' read-tree {base} && git -c safe.directory='*' add -A . && "
    "git -c safe.directory='*' diff --cached --binary {base} > {patch}"
)
TEST_SH = """#!/bin/bash
# The agent's changes (collected as {patch}) on the base commit, the milestone's tests restored and
# added, FAIL_TO_PASS and PASS_TO_PASS run: reward 1 only if all pass. Without a collected patch (a
# verifier sharing the agent's sandbox, no collect hook) the workspace is graded as it is.
mkdir -p /logs/verifier
reward() {{ echo "$1" > /logs/verifier/reward.txt; exit 0; }}
git config --global --add safe.directory {workdir}  # the verifier may run as another user than the agent
cd {workdir}
if [ -f {patch} ]; then
  git reset -q --hard {base} && git clean -q -fd || reward 0
  if [ -s {patch} ]; then git apply --binary {patch} || reward 0; fi
fi
# the agent's changes to test files do not count: put them back as they were, then add the tests
git apply --numstat /tests/test.patch | cut -f3 | while read -r f; do
  git checkout -q {base} -- "$f" 2>/dev/null || rm -f "$f"
done
git apply /tests/test.patch || reward 0
{test_cmd}
rc=$?
if [ $rc -eq 0 ]; then reward 1; else reward 0; fi
"""
SOLVE_SH = """#!/bin/bash
# The reference solution: the milestone's ground-truth patch.
git config --global --add safe.directory {workdir}
cd {workdir} && git apply /solution/solution.patch
"""


def harbor_tasks(store: Store, cards: list[TaskCard], out: Path, rules: Rules) -> list[Path]:
    written = []
    for card in cards:
        folder = out / "tasks" / card.task_id
        ground_truth, tests = store.read_patches(card.repo, card.milestone_id)
        files = task_files(card, rules)
        files["tests/config.json"] = json.dumps(instance(store, card.repo, card.milestone_id), indent=2) + "\n"
        write_folder(folder, files)
        (folder / "tests" / "test.patch").write_bytes(tests)
        (folder / "solution" / "solution.patch").write_bytes(ground_truth)
        bundle(store.git_cache(card.repo), card.base_commit, folder / "environment" / "repo.bundle")
        written.append(folder)
    return written


def task_files(card: TaskCard, rules: Rules) -> dict[str, str]:
    """The folder's text files that come from the card alone (path -> text)."""
    files = {
        "instruction.md": f"# {card.title}\n\n{card.statement}\n",
        "task.toml": task_toml(card, rules),
        "environment/Dockerfile": environment_dockerfile(card, rules),
        "tests/test.sh": TEST_SH.format(
            workdir=WORKDIR, base=card.base_commit, patch=AGENT_PATCH, test_cmd=card.test_cmd
        ),
        "solution/solve.sh": SOLVE_SH.format(workdir=WORKDIR),
    }
    return files | {f"environment/deps/{path}": text for path, text in card.dependency_files.items()}


def write_folder(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    for script in ("tests/test.sh", "solution/solve.sh"):
        if (folder / script).exists():
            (folder / script).chmod(0o755)


def bundle(source: Path, commit: str, dest: Path) -> None:
    """A git bundle of the history up to `commit` and nothing after it (branch `main`)."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = make_workspace(source, commit, Path(scratch) / "repo")
        subprocess.run(["git", "-C", str(repo), "bundle", "create", "-q", str(dest), "HEAD", "main"], check=True)


def local_base(card: TaskCard) -> str:
    """The base image the card's Dockerfile was verified on (its FROM)."""
    return card.dockerfile.partition("\n")[0].removeprefix("FROM ").strip()


def environment_dockerfile(card: TaskCard, rules: Rules) -> str:
    """The card's Dockerfile with its base as the build argument BASE_IMAGE.

    A base `env bootstrap-base` made (Debian by debootstrap, plus a few packages and the sandbox user)
    exists only on the machine that made it, so the default is the public Debian image of the same suite
    (`environments.bootstrap.public_image`) and a first step installs the same packages when they are
    missing; `--build-arg BASE_IMAGE=<the local tag>` builds on the local base, that step then a no-op.
    Any other base (a registry's, set in `base_images` or a recipe override) is the default as it is.
    """
    environments = rules.environments
    base = local_base(card)
    body = card.dockerfile.splitlines()[1:]
    language = next((name for name, tag in environments.base_images.items() if tag == base), None)
    if language is None:
        return "\n".join([f"ARG {BASE_ARG}={base}", f"FROM ${{{BASE_ARG}}}", *body]) + "\n"
    packages = bootstrap_packages(language, environments)
    names = " ".join(package.split("/", 1)[0] for package in packages)  # `name/suite`: what dpkg knows it by
    suites = package_suites(packages, environments.bootstrap.mirror).replace("\n", "\\n")
    add_sources = f"printf '{suites}' > /etc/apt/sources.list.d/harnessforge.list && " if suites else ""
    public = environments.bootstrap.public_image
    lines = [
        f"# Base: {base} is what `harnessforge env bootstrap-base` builds (debootstrap of Debian",
        f"# {environments.bootstrap.suite} with the packages installed below); it exists only where it was made.",
        f"# The default is the public {public} with the same packages; --build-arg {BASE_ARG}={base}",
        "# builds on the local base (the install step then does nothing).",
        f"ARG {BASE_ARG}={public}",
        f"FROM ${{{BASE_ARG}}}",
        "USER root",
        "ENV LANG=C.UTF-8",
        f"ENV PATH={bootstrap_path(language, environments)}",
        f"RUN dpkg -s {names} >/dev/null 2>&1 || ({add_sources}apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
        f"apt-get install -y -qq --no-install-recommends {' '.join(packages)} && rm -rf /var/lib/apt/lists/*)",
        *(f"RUN {command}" for command in environments.bootstrap.setup.get(language, [])),
    ]
    return "\n".join(lines + body[1:] if body[:1] == ["USER root"] else lines + body) + "\n"


def task_toml(card: TaskCard, rules: Rules) -> str:
    environments = rules.environments
    memory_mb = _megabytes(environments.memory)
    hints = ", ".join(
        f"{{level = {hint.level}, name = {_string(hint.name)}, text = {_string(hint.content)}, "
        f"solved_runs = {hint.solved_runs}}}"
        for hint in card.hint_ladder
    )
    metadata = {
        "difficulty": card.difficulty or 0,
        "category": "programming",
        "source": "harnessforge",
        "created_at": card.provenance.get("created_at", ""),
        "base_commit": card.base_commit,
        "verify_commit": card.verify_commit,
        "repo": card.repo,
        "milestone_id": card.milestone_id,
        "rl_value": card.rl_value or "",
        "reference_run": card.reference_run or "",
        "image": card.image,
        "base_image": local_base(card),
        "fail_to_pass": card.fail_to_pass,
        "pass_to_pass": card.pass_to_pass,
    }
    collect = COLLECT.format(workdir=WORKDIR, base=card.base_commit, patch=AGENT_PATCH)
    lines = [
        f"schema_version = {_string(SCHEMA_VERSION)}",
        "",
        "[task]",
        f"name = {_string('harnessforge/' + card.task_id)}",
        f"description = {_string(card.title)}",
        f"keywords = {json.dumps(card.tags)}",
        "",
        "[metadata]",
        *[f"{name} = {_value(value)}" for name, value in metadata.items()],
        f"mentor_hints = [{hints}]",
        "",
        "[verifier]",
        f"timeout_sec = {float(environments.test_timeout_s)}",
        f"user = {SANDBOX_UID}",
        'environment_mode = "separate"  # a fresh container: only the collected patch carries the agent\'s work',
        "",
        "[[verifier.collect]]",
        f"command = {_string(collect)}",
        "",
        "[agent]",
        f"timeout_sec = {float(rules.harness.max_wall_s_per_milestone)}",
        f"user = {SANDBOX_UID}  # {SANDBOX_USER}: the Dockerfile's USER",
        "",
        "[environment]",
        f"build_timeout_sec = {float(environments.build_timeout_s)}",
        f"cpus = {int(environments.cpus)}",
        f"memory_mb = {memory_mb}",
        "storage_mb = 10240",
        'network_mode = "no-network"  # the image build alone has network',
        "",
    ]
    return "\n".join(lines)


def _string(text: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes)."""
    return json.dumps(text, ensure_ascii=False)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return _string(str(value))


def _megabytes(size: str) -> int:
    unit = size[-1].lower()
    number = int(size[:-1]) if unit in "kmg" else int(size)
    return {"k": number // 1024, "m": number, "g": number * 1024}.get(unit, number // (1024 * 1024))
