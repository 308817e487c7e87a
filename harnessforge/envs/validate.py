"""Running tests in sandboxes: milestone validation (FAIL at base, PASS at verify, K times) and
grading a candidate solution in a fresh sandbox.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..diffs import split_diff
from ..errors import EnvError
from ..files import FileClassifier
from ..models.env import Grade, MilestoneStatus, Recipe, TestRun, Validation
from ..models.plan import Milestone
from ..rules import Rules
from .declared_tests import declared_tests
from .grading import (
    Classification,
    candidate_tests,
    classify,
    excluded_candidates,
    grade,
    owner_files,
    run_problem,
)
from .runners import runner, test_files_of
from .sandbox import Sandbox

OpenSandbox = Callable[[str], Sandbox]  # commit -> a started sandbox at that commit
# Runners that abort every selected id when one selected file fails to load (pytest: "found no
# collectors"); they are given whole files instead, and the statuses of the ids are read back.
FILE_RUNNERS = ("pytest", "jest", "vitest")


def run_tests(sb: Sandbox, recipe: Recipe, tests: list[str], timeout: int) -> TestRun:
    """Run `tests` (all when empty) and read the runner's structured report; stdout is not trusted."""
    return _run_tests(sb, recipe, tests, timeout)[0]


def _run_tests(sb: Sandbox, recipe: Recipe, tests: list[str], timeout: int) -> tuple[TestRun, dict[str, str]]:
    """`run_tests`, plus the report files themselves (validation reads where each test is defined)."""
    spec = runner(recipe.runner)
    if recipe.test_cmd:
        quoted = " ".join(shlex.quote(t) for t in tests)
        cmd = recipe.test_cmd.format(tests=quoted, out=sb.results_dir, plugins=sb.plugin_dir)
    else:
        cmd = spec.command(tests, out_dir=sb.results_dir, plugin_dir=sb.plugin_dir)
    sb.clear_results()
    r = sb.exec(cmd, timeout=timeout)
    files = sb.read_results()
    run = spec.parse(files, r.exit_code, r.stdout + r.stderr)
    update = {"timed_out": r.timed_out, "oom_killed": r.oom_killed, "duration_s": r.duration_s}
    return run.model_copy(update=update), files


def _file_of(recipe: Recipe) -> Callable[[str], str]:
    return lambda test: test_files_of(recipe.runner, [test])[0]


def _runs(
    sb: Sandbox, recipe: Recipe, test_patch: bytes, repeats: int, timeout: int
) -> tuple[list[TestRun], dict[str, tuple[str, int | None]]]:
    """`repeats` runs of the whole suite in one sandbox; tracked files are reset between runs but
    ignored files (caches, and state a leaky test leaves behind) survive, as on a developer's machine.
    Also: where the first run says each test is defined (pytest; other runners say nothing)."""
    runs, defined_in = [], {}
    for i in range(repeats):
        if i:
            sb.clean()
        sb.apply_patch(test_patch)
        run, files = _run_tests(sb, recipe, [], timeout)
        runs.append(run)
        if not i:
            defined_in = definitions(files.get(runner("pytest").report, "")) if recipe.runner == "pytest" else {}
        if run_problem(run) in ("timeout", "oom"):
            break
    return runs, defined_in


def definitions(report: str) -> dict[str, tuple[str, int | None]]:
    """Test id -> (file, line) where our pytest plugin says its function is defined (a mixin's file
    for an inherited test). The plugin's setup records carry it; other lines are skipped."""
    out = {}
    for line in report.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        where = rec.get("location") if isinstance(rec, dict) else None
        if isinstance(where, list) and len(where) == 2 and isinstance(where[0], str) and rec.get("nodeid"):
            out[rec["nodeid"]] = (where[0], where[1] if isinstance(where[1], int) else None)
    return out


def _read(sb: Sandbox, path: str) -> str | None:
    try:
        return sb.read_file(path).decode("utf-8", "replace")
    except EnvError:
        return None  # deleted by the milestone, or a path outside the workspace


@dataclass
class Candidates:
    """The runtime acceptance-test candidates of a milestone, with what the static trace says of them."""

    tests: list[str]
    excluded: dict[str, str]  # candidate -> why the static trace left it out
    defined_in: dict[str, tuple[str, int | None]]


def find_candidates(
    sb: Sandbox, recipe: Recipe, m: Milestone, runs: list[TestRun], defined_in: dict[str, tuple[str, int | None]]
) -> Candidates:
    """Candidates from the runs' own ids (the verify runs ran the whole suite, so they are the
    collection), reading in the verify checkout only what the rules need: Go's module path and the
    test names its changed files declare, and the files defining candidates when tests were excluded."""
    ids = {t for r in runs for t in r.statuses}
    declared: dict[str, list[str]] = {}
    module = ""
    if recipe.runner == "go":
        texts = {f: _read(sb, f) for f in m.test_files if f.endswith("_test.go")}
        declared = {f: [s.test_id.rsplit("::", 1)[-1] for s in declared_tests(f, t)] for f, t in texts.items() if t}
        found = re.search(r"^module\s+\"?([^\s\"]+)", _read(sb, "go.mod") or "", re.M)
        module = found[1] if found else ""
    tests = candidate_tests(recipe.runner, ids, m.test_files, defined_in, declared, module)
    excluded: dict[str, str] = {}
    if m.excluded_tests:
        owners = {t: owner_files(recipe.runner, t, m.test_files, defined_in, declared, module) for t in tests}
        files = sorted({defined_in[t][0] for t in tests if t in defined_in})
        spans = {f: declared_tests(f, text) for f in files if (text := _read(sb, f))}
        reasons = {e.test: e.reason for e in m.excluded_tests}
        excluded = excluded_candidates(recipe.runner, tests, reasons, m.acceptance_tests, owners, defined_in, spans)
    return Candidates(tests, excluded, {t: defined_in[t] for t in tests if t in defined_in})


def validate_milestone(
    open_sandbox: OpenSandbox, m: Milestone, test_patch: bytes, recipe: Recipe, rules: Rules, image: str = ""
) -> Validation:
    env = rules.environments
    common = {"milestone_id": m.id, "repeats": env.repeats, "image": image}
    try:
        with open_sandbox(m.base_commit) as sb:
            base_runs, _ = _runs(sb, recipe, test_patch, env.repeats, env.test_timeout_s)
        with open_sandbox(m.verify_commit) as sb:
            from .shadowing import check_workspace  # the checkout itself is what the tests import

            check_workspace(sb, recipe)  # EnvError install_failed / package_shadowed: env_error below
            verify_runs, defined_in = _runs(sb, recipe, b"", env.repeats, env.test_timeout_s)
            found = find_candidates(sb, recipe, m, verify_runs + base_runs, defined_in)
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
    file_of = _file_of(recipe)
    c = classify(found.tests, base_runs, verify_runs, file_of, env.max_pass_to_pass, excluded=found.excluded)
    return Validation(
        **common,
        **runs,
        status=milestone_status(found.tests, c),
        detail=summary(m, found.tests, c),
        fail_to_pass=c.fail_to_pass,
        pass_to_pass=c.pass_to_pass,
        flaky=c.flaky,
        not_reproduced=c.not_reproduced,
        broken=c.broken,
        candidates=found.tests,
        rejected=c.rejected,
        defined_in={t: f"{f}:{n}" for t, (f, n) in found.defined_in.items() if f != file_of(t)},
    )


def milestone_status(candidates: list[str], c: Classification) -> MilestoneStatus:
    """valid with a FAIL_TO_PASS test; does_not_reproduce when every candidate that is neither flaky,
    excluded nor skipped at both ends already passes at base; else no_fail_to_pass."""
    if c.fail_to_pass:
        return "valid"
    unusable = ("flaky", "excluded", "skipped")
    usable = [t for t in candidates if not c.rejected.get(t, "").startswith(unusable)]
    if usable and set(usable) <= set(c.not_reproduced):
        return "does_not_reproduce"
    return "no_fail_to_pass"


def summary(m: Milestone, candidates: list[str], c: Classification) -> str:
    """One line: how many candidates, and how many of them fell out for which reason."""
    if not candidates:
        files = ", ".join(m.test_files[:5]) or "none"
        return f"the runner reported no test in the changed test files ({files})"
    kinds = Counter(why.split(":", 1)[0] for why in c.rejected.values())
    rest = "".join(f", {n} {kind}" for kind, n in sorted(kinds.items()))
    return f"{len(candidates)} candidates: {len(c.fail_to_pass)} FAIL_TO_PASS{rest}"


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
        sb.prepare()  # the candidate may change the project's metadata: install the workspace as it now is
        run = run_tests(sb, recipe, tests, rules.environments.test_timeout_s)
    return grade(m.id, run, validation.fail_to_pass, validation.pass_to_pass, file_of, sorted(set(dropped)))
