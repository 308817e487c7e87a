"""Grading a candidate solution: its diff (test files and test configuration dropped) on the
milestone's base checkout plus the milestone's own tests, in a fresh sandbox; `grade_run` is the
pure verdict over the one run that gives.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Callable

from ..diffs import split_diff
from ..errors import EnvError
from ..files import FileClassifier
from ..models.env import Grade, Recipe, TestRun, Validation
from ..models.plan import Milestone
from ..rules import Rules
from .classification import outcome, run_problem
from .runners import FILE_RUNNERS, run_tests, runner, test_files_of
from .sandbox import Sandbox
from .validation import OpenSandbox


def grade_run(
    milestone_id: str,
    run: TestRun,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    file_of: Callable[[str], str],
    excluded_files: list[str],
) -> Grade:
    """Resolved only if the run is trustworthy and every F2P and P2P test passed (skips do not)."""
    problem = run_problem(run)
    fail_to_pass_statuses = {test: outcome(run, test, file_of) for test in fail_to_pass}
    pass_to_pass_statuses = {test: outcome(run, test, file_of) for test in pass_to_pass}
    statuses = [*fail_to_pass_statuses.values(), *pass_to_pass_statuses.values()]
    resolved = problem is None and all(status == "passed" for status in statuses) and bool(fail_to_pass_statuses)
    return Grade(
        milestone_id=milestone_id,
        resolved=resolved,
        fail_to_pass=fail_to_pass_statuses,
        pass_to_pass=pass_to_pass_statuses,
        excluded_files=excluded_files,
        reason=problem,
        run=run,
    )


def filter_candidate(patch: bytes, rules: Rules) -> tuple[bytes, list[str]]:
    """Drop the candidate's changes to test files and test configuration; return (kept, dropped paths)."""
    tests = FileClassifier(rules.planning)
    config = FileClassifier(
        rules.planning.model_copy(update={"test_patterns": rules.environments.test_config_patterns})
    )
    kept, dropped = [], []
    for file_diff in split_diff(patch):
        is_test = tests.is_test(file_diff.path) or config.is_test(file_diff.path)
        (dropped if is_test else kept).append(file_diff)
    return b"".join(file_diff.raw for file_diff in kept), sorted(file_diff.path for file_diff in dropped)


def _section(text: str, name: str, dotted: str):
    try:
        data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return "<unparsable>"
    for key in dotted.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _restore_test_config(sandbox: Sandbox, base: str, rules: Rules) -> list[str]:
    """Revert config files whose test sections the candidate changed (pyproject.toml, package.json)."""
    reverted = []
    for name, sections in rules.environments.test_config_sections.items():
        old = sandbox.exec(f"git show {base}:{shlex.quote(name)}")
        if old.exit_code != 0:
            continue
        try:
            new = sandbox.read_file(name).decode(errors="replace")
        except EnvError:
            new = ""
        if any(_section(old.stdout, name, section) != _section(new, name, section) for section in sections):
            sandbox.exec(f"git checkout {base} -- {shlex.quote(name)}")
            reverted.append(name)
    return reverted


def grade_candidate(
    open_sandbox: OpenSandbox,
    milestone: Milestone,
    validation: Validation,
    test_patch: bytes,
    candidate: bytes,
    recipe: Recipe,
    rules: Rules,
    suite: list[str] | None = None,
) -> Grade:
    """Base checkout + the candidate's diff (tests and test config dropped) + the milestone's own
    tests, in a fresh sandbox; the verdict comes from the structured report only. `suite`: the whole
    suite runs, and these tests (not the PASS_TO_PASS sample) are the ones that must still pass."""
    kept, dropped = filter_candidate(candidate, rules)
    pass_to_pass = validation.pass_to_pass if suite is None else suite
    tests = [] if suite is not None else validation.fail_to_pass + validation.pass_to_pass  # []: every test
    if recipe.runner in FILE_RUNNERS:  # whole files: one file that fails to import must not stop the rest
        tests = list(dict.fromkeys(test_files_of(recipe.runner, tests)))
    file_of = runner(recipe.runner).file_of
    with open_sandbox(milestone.base_commit) as sandbox:
        applied = sandbox.apply_patch(kept, check=False)
        if applied.exit_code != 0:
            empty = TestRun(runner=recipe.runner, log_tail=applied.stderr[-4000:])
            grade = grade_run(milestone.id, empty, validation.fail_to_pass, pass_to_pass, file_of, dropped)
            return grade.model_copy(update={"reason": "patch_failed"})
        dropped += _restore_test_config(sandbox, milestone.base_commit, rules)
        sandbox.apply_patch(test_patch)
        sandbox.prepare()  # the candidate may change the project's metadata: install the workspace as it now is
        run = run_tests(sandbox, recipe, tests, rules.environments.test_timeout_s)
    excluded = sorted(set(dropped))
    return grade_run(milestone.id, run, validation.fail_to_pass, pass_to_pass, file_of, excluded)
