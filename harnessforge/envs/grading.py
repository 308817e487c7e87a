"""Pure rules turning repeated test runs into FAIL_TO_PASS / PASS_TO_PASS / flaky, and grades.

No containers here: every rule is a function of `TestRun`s, so each one is tested directly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..models.env import EnvErrorReason, Grade, TestRun, TestStatus

FAILING = {"failed", "error", "missing"}  # xfailed and skipped are neither a pass nor a failure here


def outcome(run: TestRun, test: str, file_of: Callable[[str], str]) -> TestStatus:
    """A test's status in one run; a test absent because its file failed to load counts as an error."""
    status = run.status(test)
    if status == "missing" and file_of(test) in run.collect_errors:
        return "error"
    return status


def run_problem(run: TestRun) -> EnvErrorReason | None:
    """Why a run proves nothing about its tests (None when it is trustworthy).

    A run without the runner's own start/finish records, or whose exit code says "failed" while
    the report shows no failure, is rejected: that is what a suite that never ran, or a
    candidate printing its own results, looks like.
    """
    if run.oom_killed:
        return "oom"
    if run.timed_out:
        return "timeout"
    if not run.suite_ran:
        return "collection_error" if run.collect_errors else "no_tests_ran"
    failures = any(s in ("failed", "error") for s in run.statuses.values()) or run.collect_errors
    if run.exit_code != 0 and not failures and run.exit_code != 5:
        return "no_tests_ran"
    if not run.statuses and not run.collect_errors:
        return "no_tests_ran"
    return None


@dataclass
class Classification:
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    not_reproduced: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def _passes(runs: list[TestRun], test: str, file_of) -> list[bool]:
    return [outcome(r, test, file_of) == "passed" for r in runs]


def _sample(tests: list[str], limit: int) -> list[str]:
    """A deterministic, file-spread sample: order by a hash of the id, keep `limit`, sort back."""
    if len(tests) <= limit:
        return sorted(tests)
    return sorted(sorted(tests, key=lambda t: hashlib.sha256(t.encode()).hexdigest())[:limit])


def classify(
    candidates: list[str],
    base_runs: list[TestRun],
    verify_runs: list[TestRun],
    file_of: Callable[[str], str],
    max_pass_to_pass: int,
) -> Classification:
    """F2P: fails in every base run and passes in every verify run. Mixed results at one commit:
    flaky, reported and never counted. A candidate passing at base did not reproduce."""
    seen = set(candidates)
    for r in base_runs + verify_runs:
        seen.update(r.statuses)
    c = Classification()
    p2p = []
    for test in sorted(seen):
        base, verify = _passes(base_runs, test, file_of), _passes(verify_runs, test, file_of)
        if len(set(base)) > 1 or len(set(verify)) > 1:
            c.flaky.append(test)
            continue
        base_ok, verify_ok = base[0], verify[0]
        if test in candidates:
            if base_ok:
                c.not_reproduced.append(test)
            elif verify_ok:
                c.fail_to_pass.append(test)
        if base_ok and verify_ok:
            p2p.append(test)
        elif base_ok and not verify_ok:
            c.broken.append(test)
    c.pass_to_pass = _sample(p2p, max_pass_to_pass)
    return c


def grade(
    milestone_id: str,
    run: TestRun,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    file_of: Callable[[str], str],
    excluded_files: list[str],
) -> Grade:
    """Resolved only if the run is trustworthy and every F2P and P2P test passed (skips do not)."""
    problem = run_problem(run)
    f2p = {t: outcome(run, t, file_of) for t in fail_to_pass}
    p2p = {t: outcome(run, t, file_of) for t in pass_to_pass}
    resolved = problem is None and all(s == "passed" for s in [*f2p.values(), *p2p.values()]) and bool(f2p)
    return Grade(
        milestone_id=milestone_id,
        resolved=resolved,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        excluded_files=excluded_files,
        reason=problem,
        run=run,
    )
