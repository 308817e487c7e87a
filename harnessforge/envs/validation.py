"""Milestone validation in sandboxes: the suite K times at base (with the milestone's tests) and K
times at verify, the candidates found among the runner's ids, and the verdict of the classification
rules (`classification.py`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import EnvError
from ..models.env import MilestoneStatus, Recipe, TestRun, Validation
from ..models.plan import Milestone
from ..rules import Rules
from .classification import (
    Classification,
    candidate_tests,
    classify,
    excluded_candidates,
    owner_files,
    run_problem,
    static_ids,
    unbuilt_tests,
    uncovered,
    unloaded_elsewhere,
    untested_headlines,
)
from .collateral import collateral, needing_new_code, set_aside
from .declared_tests import declared_tests
from .private_tests import set_aside_private
from .runners import run_with_reports, runner
from .sandbox import Sandbox

OpenSandbox = Callable[[str], Sandbox]  # commit -> a started sandbox at that commit


def _repeated_runs(
    sandbox: Sandbox, recipe: Recipe, test_patch: bytes, repeats: int, timeout: int
) -> tuple[list[TestRun], dict[str, tuple[str, int | None]]]:
    """`repeats` runs of the whole suite in one sandbox; tracked files are reset between runs but
    ignored files (caches, and state a leaky test leaves behind) survive, as on a developer's machine.
    Also: where the first run says each test is defined (pytest; other runners say nothing)."""
    runs, defined_in = [], {}
    for attempt in range(repeats):
        if attempt:
            sandbox.clean()
        sandbox.apply_patch(test_patch)
        run, files = run_with_reports(sandbox, recipe, [], timeout)
        runs.append(run)
        if not attempt and recipe.runner == "pytest":
            defined_in = definitions(files.get(runner("pytest").report, ""))
        if run_problem(run) in ("timeout", "oom"):
            break
    return runs, defined_in


def definitions(report: str) -> dict[str, tuple[str, int | None]]:
    """Test id -> (file, line) where our pytest plugin says its function is defined (a mixin's file
    for an inherited test). The plugin's setup records carry it; other lines are skipped."""
    found = {}
    for line in report.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        where = record.get("location") if isinstance(record, dict) else None
        if isinstance(where, list) and len(where) == 2 and isinstance(where[0], str) and record.get("nodeid"):
            found[record["nodeid"]] = (where[0], where[1] if isinstance(where[1], int) else None)
    return found


def _read(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path).decode("utf-8", "replace")
    except EnvError:
        return None  # deleted by the milestone, or a path outside the workspace


@dataclass
class Candidates:
    """The runtime acceptance-test candidates of a milestone, with what the static trace says of them."""

    tests: list[str]
    excluded: dict[str, str]  # candidate -> why the static trace left it out
    defined_in: dict[str, tuple[str, int | None]]
    changed: set[str]  # the candidates whose own lines the milestone changed (the static trace's tests)
    owners: dict[str, list[str]]  # candidate -> the changed test files it belongs to
    go_spans: dict[str, list[tuple[str, int, int]]] = None  # changed Go test file -> (test name, first, last line)


def find_candidates(
    sandbox: Sandbox,
    recipe: Recipe,
    milestone: Milestone,
    runs: list[TestRun],
    defined_in: dict[str, tuple[str, int | None]],
) -> Candidates:
    """Candidates from the runs' own ids (the verify runs ran the whole suite, so they are the
    collection), reading in the verify checkout only what the rules need: Go's module path and the
    test names its changed files declare, and the files defining candidates, to match them with the
    static trace's ids."""
    ids = {test for run in runs for test in run.statuses}
    declared: dict[str, list[str]] = {}
    go_spans: dict[str, list[tuple[str, int, int]]] = {}
    module = ""
    if recipe.runner == "go":
        texts = {path: _read(sandbox, path) for path in milestone.test_files if path.endswith("_test.go")}
        go_spans = {
            path: [(span.test_id.rsplit("::", 1)[-1], span.first, span.last) for span in declared_tests(path, text)]
            for path, text in texts.items()
            if text
        }
        declared = {path: [name for name, _, _ in spans] for path, spans in go_spans.items()}
        found = re.search(r"^module\s+\"?([^\s\"]+)", _read(sandbox, "go.mod") or "", re.M)
        module = found[1] if found else ""
    tests = candidate_tests(recipe.runner, ids, milestone.test_files, defined_in, declared, module)
    owners = {
        test: owner_files(recipe.runner, test, milestone.test_files, defined_in, declared, module) for test in tests
    }
    files = sorted({defined_in[test][0] for test in tests if test in defined_in})
    spans = {path: declared_tests(path, text) for path in files if (text := _read(sandbox, path))}
    reasons = {exclusion.test: exclusion.reason for exclusion in milestone.excluded_tests}
    accepted = milestone.acceptance_tests
    excluded = excluded_candidates(recipe.runner, tests, reasons, accepted, owners, defined_in, spans)
    traced = set(accepted) | set(reasons)
    changed = {test for test in tests if static_ids(recipe.runner, test, owners[test], defined_in, spans) & traced}
    defined = {test: defined_in[test] for test in tests if test in defined_in}
    return Candidates(tests, excluded, defined, changed, owners, go_spans)


def _changed_and_needed(changed: set[str], needing: set[str] | None) -> Callable[[str], bool]:
    """Whether a test's own lines changed, and, where the base build said which tests use new code (`needing`), it
    is one of them: `pkg::TestRace/race#01` counts by `TestRace`."""
    if needing is None:
        return changed.__contains__
    return lambda test: test in changed and test.rsplit("::", 1)[-1].split("/", 1)[0] in needing


def validate_milestone(
    open_sandbox: OpenSandbox,
    milestone: Milestone,
    test_patch: bytes,
    recipe: Recipe,
    rules: Rules,
    image: str = "",
    private: Callable[[str], str] | None = None,
) -> Validation:
    """`private`: why a test id tests a private helper the change adds (`private_tests.private_reader`)."""
    env = rules.environments
    common = {"milestone_id": milestone.id, "repeats": env.repeats, "image": image}
    try:
        with open_sandbox(milestone.base_commit) as sandbox:
            base_runs, _ = _repeated_runs(sandbox, recipe, test_patch, env.repeats, env.test_timeout_s)
        with open_sandbox(milestone.verify_commit) as sandbox:
            from .shadowing import check_workspace  # the checkout itself is what the tests import

            check_workspace(sandbox, recipe)  # EnvError install_failed / package_shadowed: env_error below
            verify_runs, defined_in = _repeated_runs(sandbox, recipe, b"", env.repeats, env.test_timeout_s)
            found = find_candidates(sandbox, recipe, milestone, verify_runs + base_runs, defined_in)
        reference_runs: list[TestRun] = []
        if unloaded_elsewhere(found.tests, base_runs, verify_runs) and not any(map(run_problem, verify_runs)):
            with open_sandbox(milestone.base_commit) as sandbox:  # the base's own tests, without the test patch
                reference_runs, _ = _repeated_runs(sandbox, recipe, b"", 1, env.test_timeout_s)
    except EnvError as e:
        return Validation(**common, status="env_error", reason=e.reason, detail=str(e))
    runs = {"base_runs": base_runs, "verify_runs": verify_runs, "reference_runs": reference_runs}
    # At base the new tests may not even import: only verify runs must be clean to trust a verdict.
    for side, side_runs in (("verify", verify_runs), ("base", base_runs)):
        for run in side_runs:
            problem = run_problem(run)
            if problem and (side == "verify" or problem in ("timeout", "oom") or not run.suite_ran):
                detail = f"{side} run: {problem}; {run.log_tail[-800:]}"
                return Validation(**common, **runs, status="env_error", reason=problem, detail=detail)
    if unbuilt := unbuilt_tests(found.tests, verify_runs):
        detail = f"verify run: the tests do not build or load with the reference solution ({unbuilt}); "
        return Validation(
            **common,
            **runs,
            status="env_error",
            reason="collection_error",
            detail=detail + verify_runs[-1].log_tail[-800:],
        )
    file_of = runner(recipe.runner).file_of
    verdict = classify(
        found.tests, base_runs, verify_runs, file_of, env.max_pass_to_pass, found.excluded, reference_runs
    )
    crowd = env.collateral_crowd if milestone.dependencies else 0  # the image holds the verify commit's
    needing = needing_new_code([run.log_tail for run in base_runs], found.go_spans) if found.go_spans else None
    collateral_tests = collateral(
        verdict.fail_to_pass, base_runs, file_of, _changed_and_needed(found.changed, needing), recipe.packages, crowd
    )
    verdict = set_aside(verdict, collateral_tests, leave_out=env.collateral_tests == "set_aside")
    if private and env.private_tests == "set_aside":
        verdict = set_aside_private(verdict, private)
    graded = [test for test in verdict.fail_to_pass if test not in verdict.collateral]
    owners = lambda test: found.owners.get(test, [])  # noqa: E731
    untested = untested_headlines(milestone.headlines, graded, owners)
    return Validation(
        **common,
        **runs,
        status=milestone_status(found.tests, verdict),
        detail=summary(milestone, found.tests, verdict),
        fail_to_pass=verdict.fail_to_pass,
        pass_to_pass=verdict.pass_to_pass,
        flaky=verdict.flaky,
        not_reproduced=verdict.not_reproduced,
        broken=verdict.broken,
        suite_pass_to_pass=verdict.suite_pass_to_pass,
        candidates=found.tests,
        collateral=verdict.collateral,
        untested_headlines=untested if verdict.fail_to_pass else [],
        ungraded_parts=uncovered(milestone.parts, graded, owners) if verdict.fail_to_pass else [],
        rejected=verdict.rejected,
        defined_in={test: f"{path}:{line}" for test, (path, line) in found.defined_in.items() if path != file_of(test)},
    )


def milestone_status(candidates: list[str], classification: Classification) -> MilestoneStatus:
    """valid with a FAIL_TO_PASS test; does_not_reproduce when every candidate that is neither flaky,
    excluded nor skipped at both ends already passes at base; else no_fail_to_pass."""
    if classification.fail_to_pass:
        return "valid"
    unusable = ("flaky", "excluded", "skipped")
    usable = [test for test in candidates if not classification.rejected.get(test, "").startswith(unusable)]
    if usable and set(usable) <= set(classification.not_reproduced):
        return "does_not_reproduce"
    return "no_fail_to_pass"


def summary(milestone: Milestone, candidates: list[str], classification: Classification) -> str:
    """One line: how many candidates, and how many of them fell out for which reason."""
    if not candidates:
        files = ", ".join(milestone.test_files[:5]) or "none"
        return f"the runner reported no test in the changed test files ({files})"
    kinds = Counter(why.split(":", 1)[0] for why in classification.rejected.values())
    rest = "".join(f", {count} {kind}" for kind, count in sorted(kinds.items()))
    graded = set(classification.collateral) & set(classification.fail_to_pass)
    if graded == set(classification.fail_to_pass) and graded:
        rest += " (all of them collateral, graded: nothing else goes FAIL -> PASS)"
    elif graded:
        rest += f" ({len(graded)} of them collateral, graded by the rules)"
    return f"{len(candidates)} candidates: {len(classification.fail_to_pass)} FAIL_TO_PASS{rest}"
