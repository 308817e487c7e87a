"""SWE-bench-style task instances of the validated milestones, so existing harnesses can run them.

Field names follow SWE-bench (`instance_id`, `repo`, `base_commit`, `patch`, `test_patch`,
`problem_statement`, `hints_text`, `created_at`, `version`, `environment_setup_commit`,
`FAIL_TO_PASS`, `PASS_TO_PASS`, the last two JSON-encoded lists as in the original dataset), plus
`image_name` (our environment image) and `milestone_id`. `hints_text` stays empty: in SWE-bench it
means issue comments, not the Mentor's hints.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ArtifactError
from ..gitio import GitRepo
from ..store import Store

FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "environment_setup_commit",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)


def instances(store: Store) -> list[dict[str, Any]]:
    found = []
    for key in store.repo_keys():
        try:
            plan = store.load_plan(key)
        except ArtifactError:
            continue  # registered but not planned
        found += [instance(store, key, milestone.id) for milestone in plan.milestones if milestone.status == "valid"]
    return found


def instance(store: Store, key: str, milestone_id: str) -> dict[str, Any]:
    """One valid milestone as a SWE-bench instance."""
    milestone = store.load_milestone(key, milestone_id)
    spec = store.load_repo(key)
    validation = store.load_validation(key, milestone_id)
    ground_truth, tests = store.read_patches(key, milestone_id)
    created = GitRepo(store.git_cache(key)).text("log", "-1", "--format=%cI", milestone.verify_commit)
    return {
        "instance_id": f"{key}-{milestone_id}",
        "repo": spec.github or key.replace("__", "/", 1),
        "base_commit": milestone.base_commit,
        "patch": ground_truth.decode(errors="replace"),
        "test_patch": tests.decode(errors="replace"),
        "problem_statement": milestone.brief,
        "hints_text": "",
        "created_at": created,
        "version": milestone.release or "",
        "environment_setup_commit": milestone.base_commit,
        "FAIL_TO_PASS": json.dumps(validation.fail_to_pass),
        "PASS_TO_PASS": json.dumps(validation.pass_to_pass),
        "image_name": validation.image,
        "milestone_id": milestone_id,
    }
