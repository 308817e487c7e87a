"""The SWE-bench export as a swebench 5.x task repo: what `swebench dataset check` accepts and its harness runs.

swebench/sweb.yaml                the dataset and split it publishes (rules: export.swebench)
swebench/instances.jsonl          one row per instance, as `make_test_spec` reads it
swebench/tasks/<instance_id>/
    task.yaml                     instance_id, repo, version, base_commit, split, datasets, image, log_parser, ...
    tests.json                    FAIL_TO_PASS / PASS_TO_PASS, the ids as the log parser reports them
    problem_statement.md, gold.patch, test.patch
    eval.sh                       test files reset, test patch applied, tests run between swebench's markers
    Dockerfile                    the environment, the repository at its base commit in /testbed (where the
                                  harness applies patches, as root); built in this folder (deps/, repo.bundle)
swebench/left_out.json            milestones not exported and tests not graded, with why

The Dockerfile is the task card's (`distill.tasks.dockerfile`) with the checkout moved to /testbed.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..atomic import atomic_write
from ..diffs import split_diff
from ..distill.tasks import WORKDIR as CARD_WORKDIR
from ..distill.tasks import dockerfile
from ..envs.recipes import dependency_files, recipe_at
from ..envs.runners import PYTEST_FLAGS, test_files_of
from ..errors import ArtifactError, ConfigError
from ..gitio import GitRepo
from ..models.env import Recipe
from ..rules import Rules
from ..store import Store
from .harbor import bundle
from .swebench import graded_ids, image_name, instance

WORKDIR = "/testbed"  # swebench.image_builder.constants.CONTAINER_WORKDIR
START_TEST_OUTPUT = ">>>>> Start Test Output"  # swebench.harness.constants: grading reads between these
END_TEST_OUTPUT = ">>>>> End Test Output"
SHELL_HEADER = ("#!/bin/bash", "set -uxo pipefail")  # what swebench's parse_eval_script strips and re-adds


@dataclass
class SwebenchTask:
    row: dict[str, Any]
    dockerfile: str
    dependency_files: dict[str, bytes]
    ungraded: list[str] = field(default_factory=list)  # ids the log parser cannot tell apart


@dataclass
class SwebenchExport:
    files: list[Path] = field(default_factory=list)
    instances: int = 0
    left_out: dict[str, str] = field(default_factory=dict)  # instance id -> why it is not exported


def write_task_repo(store: Store, milestones: list[tuple[str, str]], root: Path, rules: Rules) -> SwebenchExport:
    """The task repo of `milestones` ((repo key, milestone id), in order) at `root`, replacing its tasks."""
    settings = rules.export.swebench
    result, rows, ungraded = SwebenchExport(), [], {}
    shutil.rmtree(root / "tasks", ignore_errors=True)  # no task of an earlier export stays behind
    for key, milestone_id in milestones:
        try:
            task = swebench_task(store, key, milestone_id, rules)
        except (ArtifactError, ConfigError) as e:
            result.left_out[f"{key}-{milestone_id}"] = str(e)
            continue
        result.files.append(_write_task(store, key, task, root / "tasks" / task.row["instance_id"], rules))
        rows.append(task.row)
        if task.ungraded:
            ungraded[task.row["instance_id"]] = task.ungraded
    config = {"datasets": [settings.dataset], "splits": [settings.split]}
    atomic_write(root / "sweb.yaml", yaml.safe_dump(config, sort_keys=True).encode())
    atomic_write(root / "instances.jsonl", b"".join(json.dumps(row).encode() + b"\n" for row in rows))
    notes = {"not_exported": result.left_out, "ungraded_tests": ungraded}
    atomic_write(root / "left_out.json", (json.dumps(notes, indent=2) + "\n").encode())
    result.files += [root / "sweb.yaml", root / "instances.jsonl", root / "left_out.json"]
    result.instances = len(rows)
    return result


def swebench_task(store: Store, key: str, milestone_id: str, rules: Rules) -> SwebenchTask:
    """One milestone as swebench 5.x reads an instance of a repository outside its registry."""
    settings = rules.export.swebench
    milestone = store.load_milestone(key, milestone_id)
    validation = store.load_validation(key, milestone_id)
    recipe = environment_recipe(store, key, milestone_id, rules)
    instance_id = f"{key}-{milestone_id}"
    if recipe.runner != "pytest" or recipe.test_cmd:
        how = f"{recipe.runner}" + (f" through its own command {recipe.test_cmd!r}" if recipe.test_cmd else "")
        raise ArtifactError(f"{instance_id}: its tests run with {how}; the SWE-bench export reads pytest's only")
    ids = graded_ids(validation.fail_to_pass, validation.pass_to_pass, settings.log_parser)
    if not ids.fail_to_pass:
        raise ArtifactError(f"{instance_id}: no FAIL_TO_PASS test that {settings.log_parser} can tell apart")
    row = instance(store, key, milestone_id)
    del row["image_name"]  # our environment image; swebench's `image` is the instance image it runs
    repo = GitRepo(store.git_cache(key))
    _, tests = store.read_patches(key, milestone_id)
    script = eval_script(
        milestone.base_commit,
        row["test_patch"],
        [file_diff.path for file_diff in split_diff(tests)],
        set(repo.files(milestone.base_commit)),
        recipe.prepare,
        list(dict.fromkeys(test_files_of("pytest", validation.fail_to_pass + validation.pass_to_pass))),
    )
    row |= {"FAIL_TO_PASS": json.dumps(ids.fail_to_pass), "PASS_TO_PASS": json.dumps(ids.pass_to_pass)}
    row |= {"image": image_name(instance_id), "eval_script": script}
    row |= {"log_parser": settings.log_parser, "eval_type": settings.eval_type}
    at = milestone.verify_commit  # the environment is the verify commit's, as the image's was
    deps = dependency_files(recipe, repo.files(at), lambda path: repo.show(at, path))
    return SwebenchTask(row, instance_dockerfile(recipe, milestone.base_commit), deps, ids.ambiguous)


def environment_recipe(store: Store, key: str, milestone_id: str, rules: Rules) -> Recipe:
    """The recipe of the milestone's environment image; without images (local sandbox), the one it would get."""
    if store.has_images(key):
        record = store.load_images(key).for_milestone(milestone_id)
        if record is None:
            raise ArtifactError(f"{key}-{milestone_id}: no environment image was built for it")
        return record.recipe
    milestone = store.load_milestone(key, milestone_id)
    repo = GitRepo(store.git_cache(key))
    return recipe_at(repo, milestone.verify_commit, key, rules.environments, base_commit=milestone.base_commit)


def instance_dockerfile(recipe: Recipe, base_commit: str) -> str:
    """The task card's Dockerfile, then the checkout moved to /testbed: the recipe's paths (its
    workspace `.pth`, the editable install) follow a link, and git accepts root in the sandbox user's clone."""
    tail = [
        "# swebench's harness applies patches and runs eval.sh as root in /testbed",
        "USER root",
        "WORKDIR /",
        f"RUN mv {CARD_WORKDIR} {WORKDIR} && ln -s {WORKDIR} {CARD_WORKDIR} "
        "&& git config --system --add safe.directory '*'",
        f"WORKDIR {WORKDIR}",
    ]
    return dockerfile(recipe, base_commit) + "\n".join(tail) + "\n"


def eval_script(
    base_commit: str,
    test_patch: str,
    test_paths: list[str],
    base_files: set[str],
    prepare: list[str],
    test_files: list[str],
) -> str:
    """SWE-bench's shape: the test files put back as at base (what a prediction did to them does not
    count), the test patch applied, the recipe's per-checkout steps, pytest with `-rA` (a PASSED/FAILED
    line per test, what swebench's parsers read) between the markers, then the test files reset."""
    existing = [path for path in test_paths if path in base_files]
    new = [path for path in test_paths if path not in base_files]
    reset = [f"git checkout {base_commit} -- {_words(existing)}"] if existing else []
    reset += [f"rm -f -- {_words(new)}"] if new else []
    apply = []
    if test_patch.strip():
        delimiter = "EOF_HF_TEST_PATCH"
        while delimiter in test_patch:
            delimiter += "_"
        apply = [f"git apply --verbose - <<'{delimiter}'", test_patch.removesuffix("\n"), delimiter]
    lines = [
        *SHELL_HEADER,
        f"cd {WORKDIR}",
        f"git config --global --add safe.directory {WORKDIR}",
        *reset,
        *apply,
        *[f"bash -c {shlex.quote(step)}" for step in prepare],  # each in its own shell, as validation runs them
        f": '{START_TEST_OUTPUT}'",
        f"python -m pytest -rA {PYTEST_FLAGS} {_words(test_files)}",  # the line before the end marker:
        f": '{END_TEST_OUTPUT}'",  # swebench records its exit status there
        *reset,
    ]
    return "\n".join(lines) + "\n"


def _words(items: list[str]) -> str:
    return " ".join(shlex.quote(item) for item in items)


def _write_task(store: Store, key: str, task: SwebenchTask, folder: Path, rules: Rules) -> Path:
    settings = rules.export.swebench
    row = task.row
    meta = {
        name: row[name]
        for name in (
            "instance_id",
            "repo",
            "version",
            "base_commit",
            "created_at",
            "environment_setup_commit",
            "milestone_id",
            "image",
            "log_parser",
            "eval_type",
        )
    }
    meta |= {"split": settings.split, "datasets": [settings.dataset]}
    tests = {name: json.loads(row[name]) for name in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    texts = {
        "task.yaml": yaml.safe_dump(meta, sort_keys=True, allow_unicode=True),
        "tests.json": json.dumps(tests, indent=2, ensure_ascii=False) + "\n",
        "problem_statement.md": row["problem_statement"],
        "gold.patch": row["patch"],
        "test.patch": row["test_patch"],
        "eval.sh": row["eval_script"],
        "Dockerfile": task.dockerfile,
    }
    files = {name: text.encode() for name, text in texts.items()}  # bytes: a CRLF in a patch stays as it is
    files |= {f"deps/{path}": data for path, data in task.dependency_files.items()}
    (folder / "deps").mkdir(parents=True, exist_ok=True)  # the Dockerfile copies it, even when empty
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "eval.sh").chmod(0o755)
    bundle(store.git_cache(key), row["base_commit"], folder / "repo.bundle")
    return folder
