"""Harbor task folders: each verified task card as a directory Harbor-compatible RL frameworks run.

tasks/<task_id>/instruction.md        the statement the agent gets
tasks/<task_id>/task.toml             config + metadata (hints live here, host-side, never shown)
tasks/<task_id>/environment/          Dockerfile + repo.bundle (history up to the base commit only)
tasks/<task_id>/tests/                test.sh (writes /logs/verifier/reward.txt), test.patch, config.json
tasks/<task_id>/solution/solve.sh     applies the reference patch (the oracle)
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from ..envs.workspace import make_workspace
from ..models.distill import TaskCard
from ..rules import Rules
from ..store import Store
from .swebench import instance

TASK_TOML_KEYS = {  # Harbor's task.toml sections and the keys we fill (harborframework.com/docs/task-format)
    "": ["schema_version"],
    "task": ["name", "description", "keywords"],
    "metadata": ["difficulty", "category", "source", "created_at", "base_commit", "repo"],
    "verifier": ["timeout_sec"],
    "agent": ["timeout_sec"],
    "environment": ["build_timeout_sec", "cpus", "memory_mb", "storage_mb", "allow_internet"],
}
TEST_SH = """#!/bin/bash
# Restore the milestone's tests, run FAIL_TO_PASS and PASS_TO_PASS, reward 1 only if all pass.
mkdir -p /logs/verifier
git config --global --add safe.directory {workdir}  # the verifier may run as another user than the agent
cd {workdir}
# the agent's changes to test files do not count: put them back as they were, then add the tests
git apply --numstat /tests/test.patch | cut -f3 | while read -r f; do
  git checkout -q HEAD -- "$f" 2>/dev/null || rm -f "$f"
done
git apply /tests/test.patch || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
{test_cmd}
rc=$?
if [ $rc -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
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
        files = {
            "instruction.md": f"# {card.title}\n\n{card.statement}\n",
            "task.toml": task_toml(card, rules),
            "environment/Dockerfile": card.dockerfile,
            "tests/test.sh": TEST_SH.format(workdir="/workspace", test_cmd=card.test_cmd),
            "tests/config.json": json.dumps(instance(store, card.repo, card.milestone_id), indent=2) + "\n",
            "solution/solve.sh": SOLVE_SH.format(workdir="/workspace"),
        }
        files |= {f"environment/deps/{path}": text for path, text in card.dependency_files.items()}
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        (folder / "tests" / "test.patch").write_bytes(tests)
        (folder / "solution" / "solution.patch").write_bytes(ground_truth)
        for script in ("tests/test.sh", "solution/solve.sh"):
            (folder / script).chmod(0o755)
        bundle(store.git_cache(card.repo), card.base_commit, folder / "environment" / "repo.bundle")
        written.append(folder)
    return written


def bundle(source: Path, commit: str, dest: Path) -> None:
    """A git bundle of the history up to `commit` and nothing after it (branch `main`)."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = make_workspace(source, commit, Path(scratch) / "repo")
        subprocess.run(["git", "-C", str(repo), "bundle", "create", "-q", str(dest), "HEAD", "main"], check=True)


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
        "fail_to_pass": card.fail_to_pass,
        "pass_to_pass": card.pass_to_pass,
    }
    lines = [
        'schema_version = "1.3"',
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
        "",
        "[agent]",
        f"timeout_sec = {float(rules.harness.max_wall_s_per_milestone)}",
        "",
        "[environment]",
        f"build_timeout_sec = {float(environments.build_timeout_s)}",
        f"cpus = {int(environments.cpus)}",
        f"memory_mb = {memory_mb}",
        "storage_mb = 10240",
        "allow_internet = false",
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
