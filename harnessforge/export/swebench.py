"""SWE-bench instances of the validated milestones: Harbor's copy with our test ids, and SWE-bench 5.x's.

Field names follow SWE-bench (`instance_id`, `repo`, `base_commit`, `patch`, `test_patch`,
`problem_statement`, `hints_text`, `created_at`, `version`, `environment_setup_commit`,
`FAIL_TO_PASS`, `PASS_TO_PASS`, the last two JSON-encoded lists as in the original dataset).
`hints_text` stays empty: in SWE-bench it means issue comments, not the Mentor's hints.

- `instance()` keeps the test ids as our runner reports them (pytest nodeids): Harbor's tests/config.json.
- `swebench_instance()` is what swebench 5.x's `make_test_spec` reads: `image` (the name its harness
  derives), `eval_script`, `log_parser`, `eval_type`, and FAIL_TO_PASS / PASS_TO_PASS as swebench's
  log parser reports them. Its pytest parsers split log lines on whitespace, so a parametrised id
  such as `test_blank[   ]` is graded as `test_blank[ ]` (`parse_log_pytest_v2`) or `test_blank[`
  (`parse_log_pytest`); an id stored as pytest wrote it would never match.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArtifactError, ConfigError
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
HARNESS_FIELDS = ("image", "eval_script", "log_parser", "eval_type")  # what swebench 5.x adds for a custom repo
IMAGE_NAMESPACE = "swebench"  # `swebench dataset check` accepts only the name its harness derives
_COLOUR_CODE = re.compile(r"\[(\d+)m")  # what parse_log_pytest_v2 strips from a line before splitting it
_CONTROL = str.maketrans("", "", "".join(chr(code) for code in range(1, 32)))


def valid_milestones(store: Store) -> list[tuple[str, str]]:
    """(repo key, milestone id) of every task of every planned repo: valid, and not held back."""
    found = []
    for key in store.repo_keys():
        try:
            plan = store.load_plan(key)
        except ArtifactError:
            continue  # registered but not planned
        found += [(key, milestone.id) for milestone in plan.milestones if milestone.is_task]
    return found


def instance(store: Store, key: str, milestone_id: str) -> dict[str, Any]:
    """One valid milestone as a SWE-bench instance, with the test ids our runner reports (for Harbor)."""
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


def reported_id(test_id: str, log_parser: str) -> str:
    """The id swebench's pytest `log_parser` reads off the line `PASSED <test_id>` of an eval log."""
    if log_parser == "parse_log_pytest_v2":  # colour codes and control characters dropped, words re-joined
        return " ".join(_COLOUR_CODE.sub("", test_id).translate(_CONTROL).split())
    if log_parser == "parse_log_pytest":  # the first word only
        return test_id.split()[0]
    raise ConfigError(f"export.swebench.log_parser {log_parser!r}: use parse_log_pytest_v2 or parse_log_pytest")


@dataclass
class GradedIds:
    """FAIL_TO_PASS / PASS_TO_PASS as the log parser reports them; `ambiguous` ids share their reported
    id with another test, so no log could grade them apart: they are left out of both lists."""

    fail_to_pass: list[str]
    pass_to_pass: list[str]
    ambiguous: list[str] = field(default_factory=list)


def graded_ids(fail_to_pass: list[str], pass_to_pass: list[str], log_parser: str) -> GradedIds:
    real: dict[str, set[str]] = {}
    for test_id in [*fail_to_pass, *pass_to_pass]:
        real.setdefault(reported_id(test_id, log_parser), set()).add(test_id)
    ambiguous = {reported for reported, ids in real.items() if len(ids) > 1}

    def keep(ids: list[str]) -> list[str]:
        return list(dict.fromkeys(r for r in (reported_id(i, log_parser) for i in ids) if r not in ambiguous))

    dropped = sorted(i for reported in ambiguous for i in real[reported])
    return GradedIds(keep(fail_to_pass), keep(pass_to_pass), dropped)


def image_name(instance_id: str) -> str:
    """The image swebench's harness derives for an instance (Docker Hub allows no `__` in names)."""
    return f"{IMAGE_NAMESPACE}/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")
