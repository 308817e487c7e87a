"""Running tests in sandboxes: milestone validation (FAIL at base, PASS at verify, K times) and
grading a candidate solution in a fresh sandbox.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Callable

from ..errors import EnvError
from ..mining.classify import FileClassifier
from ..mining.patches import split_diff
from ..models.env import Grade, Recipe, TestRun, Validation
from ..models.plan import Milestone
from ..rules import Rules
from .grading import classify, grade, run_problem
from .runners import runner, test_files_of
from .sandbox import Sandbox

OpenSandbox = Callable[[str], Sandbox]  # commit -> a started sandbox at that commit
# Runners that abort every selected id when one selected file fails to load (pytest: "found no
# collectors"); they are given whole files instead, and the statuses of the ids are read back.
FILE_RUNNERS = ("pytest", "jest", "vitest")


def run_tests(sb: Sandbox, recipe: Recipe, tests: list[str], timeout: int) -> TestRun:
    """Run `tests` (all when empty) and read the runner's structured report; stdout is not trusted."""
    spec = runner(recipe.runner)
    if recipe.test_cmd:
        quoted = " ".join(shlex.quote(t) for t in tests)
        cmd = recipe.test_cmd.format(tests=quoted, out=sb.results_dir, plugins=sb.plugin_dir)
    else:
        cmd = spec.command(tests, out_dir=sb.results_dir, plugin_dir=sb.plugin_dir)
    sb.clear_results()
    r = sb.exec(cmd, timeout=timeout)
    run = spec.parse(sb.read_results(), r.exit_code, r.stdout + r.stderr)
    return run.model_copy(update={"timed_out": r.timed_out, "oom_killed": r.oom_killed, "duration_s": r.duration_s})


def _file_of(recipe: Recipe) -> Callable[[str], str]:
    return lambda test: test_files_of(recipe.runner, [test])[0]


def _runs(sb: Sandbox, recipe: Recipe, test_patch: bytes, repeats: int, timeout: int) -> list[TestRun]:
    """`repeats` runs of the whole suite in one sandbox; tracked files are reset between runs but
    ignored files (caches, and state a leaky test leaves behind) survive, as on a developer's machine."""
    runs = []
    for i in range(repeats):
        if i:
            sb.clean()
        sb.apply_patch(test_patch)
        runs.append(run_tests(sb, recipe, [], timeout))
        if run_problem(runs[-1]) in ("timeout", "oom"):
            break
    return runs


def validate_milestone(
    open_sandbox: OpenSandbox, m: Milestone, test_patch: bytes, recipe: Recipe, rules: Rules, image: str = ""
) -> Validation:
    env = rules.environments
    common = {"milestone_id": m.id, "repeats": env.repeats, "image": image}
    try:
        with open_sandbox(m.base_commit) as sb:
            base_runs = _runs(sb, recipe, test_patch, env.repeats, env.test_timeout_s)
        with open_sandbox(m.verify_commit) as sb:
            verify_runs = _runs(sb, recipe, b"", env.repeats, env.test_timeout_s)
    except EnvError as e:
        return Validation(**common, status="env_error", reason=e.reason, detail=str(e))
    runs = {"base_runs": base_runs, "verify_runs": verify_runs}
    # At base the new tests may not even import: only verify runs must be clean to trust a verdict.
    for side, side_runs in (("verify", verify_runs), ("base", base_runs)):
        for run in side_runs:
            problem = run_problem(run)
            if problem and (side == "verify" or problem in ("timeout", "oom") or not run.suite_ran):
                detail = f"{side} run: {problem}; {run.log_tail[-800:]}"
                return Validation(**common, **runs, status="env_error", reason=problem, detail=detail)
    c = classify(m.acceptance_tests, base_runs, verify_runs, _file_of(recipe), env.max_pass_to_pass)
    candidates = [t for t in m.acceptance_tests if t not in c.flaky]
    if c.fail_to_pass:
        status = "valid"
    elif candidates and set(candidates) <= set(c.not_reproduced):
        status = "does_not_reproduce"
    else:
        status = "no_fail_to_pass"
    return Validation(
        **common,
        **runs,
        status=status,
        fail_to_pass=c.fail_to_pass,
        pass_to_pass=c.pass_to_pass,
        flaky=c.flaky,
        not_reproduced=c.not_reproduced,
        broken=c.broken,
    )


# ---- grading a candidate ----------------------------------------------------------------------
def filter_candidate(patch: bytes, rules: Rules) -> tuple[bytes, list[str]]:
    """Drop the candidate's changes to test files and test configuration; return (kept, dropped paths)."""
    tests = FileClassifier(rules.planning)
    config = FileClassifier(
        rules.planning.model_copy(update={"test_patterns": rules.environments.test_config_patterns})
    )
    kept, dropped = [], []
    for f in split_diff(patch):
        (dropped if tests.is_test(f.path) or config.is_test(f.path) else kept).append(f)
    return b"".join(f.raw for f in kept), sorted(f.path for f in dropped)


def _section(text: str, name: str, dotted: str):
    try:
        data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return "<unparsable>"
    for key in dotted.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _restore_test_config(sb: Sandbox, base: str, rules: Rules) -> list[str]:
    """Revert config files whose test sections the candidate changed (pyproject.toml, package.json)."""
    reverted = []
    for name, sections in rules.environments.test_config_sections.items():
        old = sb.exec(f"git show {base}:{shlex.quote(name)}")
        if old.exit_code != 0:
            continue
        try:
            new = sb.read_file(name).decode(errors="replace")
        except EnvError:
            new = ""
        if any(_section(old.stdout, name, s) != _section(new, name, s) for s in sections):
            sb.exec(f"git checkout {base} -- {shlex.quote(name)}")
            reverted.append(name)
    return reverted


def grade_candidate(
    open_sandbox: OpenSandbox,
    m: Milestone,
    validation: Validation,
    test_patch: bytes,
    candidate: bytes,
    recipe: Recipe,
    rules: Rules,
) -> Grade:
    """Base checkout + the candidate's diff (tests and test config dropped) + the milestone's own
    tests, in a fresh sandbox; the verdict comes from the structured report only."""
    kept, dropped = filter_candidate(candidate, rules)
    tests = validation.fail_to_pass + validation.pass_to_pass
    if recipe.runner in FILE_RUNNERS:  # whole files: one file that fails to import must not stop the rest
        tests = list(dict.fromkeys(test_files_of(recipe.runner, tests)))
    file_of = _file_of(recipe)
    with open_sandbox(m.base_commit) as sb:
        applied = sb.apply_patch(kept, check=False)
        if applied.exit_code != 0:
            empty = TestRun(runner=recipe.runner, log_tail=applied.stderr[-4000:])
            g = grade(m.id, empty, validation.fail_to_pass, validation.pass_to_pass, file_of, dropped)
            return g.model_copy(update={"reason": "patch_failed"})
        dropped += _restore_test_config(sb, m.base_commit, rules)
        sb.apply_patch(test_patch)
        run = run_tests(sb, recipe, tests, rules.environments.test_timeout_s)
    return grade(m.id, run, validation.fail_to_pass, validation.pass_to_pass, file_of, sorted(set(dropped)))
