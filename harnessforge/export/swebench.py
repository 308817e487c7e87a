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

FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
          "created_at", "version", "environment_setup_commit", "FAIL_TO_PASS", "PASS_TO_PASS")  # fmt: skip


def instances(store: Store) -> list[dict[str, Any]]:
    out = []
    for key in store.repo_keys():
        try:
            plan = store.load_plan(key)
        except ArtifactError:
            continue  # registered but not planned
        out += [instance(store, key, m.id) for m in plan.milestones if m.status == "valid"]
    return out


def instance(store: Store, key: str, mid: str) -> dict[str, Any]:
    """One valid milestone as a SWE-bench instance."""
    m = store.load_milestone(key, mid)
    spec = store.load_repo(key)
    validation = store.load_validation(key, mid)
    gt, tests = store.read_patches(key, mid)
    created = GitRepo(store.git_cache(key)).text("log", "-1", "--format=%cI", m.verify_commit)
    return {
        "instance_id": f"{key}-{mid}", "repo": spec.github or key.replace("__", "/", 1),
        "base_commit": m.base_commit, "patch": gt.decode(errors="replace"),
        "test_patch": tests.decode(errors="replace"), "problem_statement": m.brief, "hints_text": "",
        "created_at": created, "version": m.release or "", "environment_setup_commit": m.base_commit,
        "FAIL_TO_PASS": json.dumps(validation.fail_to_pass),
        "PASS_TO_PASS": json.dumps(validation.pass_to_pass),
        "image_name": validation.image, "milestone_id": mid,
    }  # fmt: skip
