"""The Verifier: grades a submission in a fresh sandbox and explains the verdict to the Dev."""

from __future__ import annotations

import re

from ..diffs import split_diff
from ..envs.candidate_grading import grade_candidate
from ..envs.classification import sample
from ..envs.environment import Environment
from ..errors import EnvError
from ..files import FileClassifier
from ..models.env import Validation
from ..models.plan import Milestone
from ..models.trajectory import TestCounts, VerifierReport
from ..store import Store


def regression_suite(validation: Validation, most: int) -> list[str]:
    """The tests a submission that passes its graded ones is checked on for regressions: every test that passed at
    base and verify, or above `most` a sample of that many (by a hash of the id) with the PASS_TO_PASS tests; []
    when that adds nothing to PASS_TO_PASS (a small suite, or validated before the suite was kept)."""
    suite = validation.suite_pass_to_pass
    if most == 0 or not set(suite) - set(validation.pass_to_pass):
        return []
    return suite if len(suite) <= most else sorted({*sample(suite, most), *validation.pass_to_pass})


class Verifier:
    def __init__(self, environment: Environment, store: Store, labels: dict[str, str] | None = None):
        """`labels` go on the grading sandboxes too (the run's id), so one a killed run left is its own."""
        self.environment, self.store, self.labels = environment, store, labels or {}
        self.classifier = FileClassifier(environment.rules.planning)

    def verify(self, milestone: Milestone, candidate: bytes, start: bytes = b"") -> VerifierReport:
        """Grade `candidate` (a diff on the milestone's base). `start` is the Dev's work carried from the
        previous milestone: part of the candidate, but not counted as files touched for this one."""
        validation = self.store.load_validation(self.environment.key, milestone.id)
        ground_truth, test_patch = self.store.read_patches(self.environment.key, milestone.id)
        opener = self.environment.opener(milestone, {"harnessforge.stage": "verify", **self.labels})
        recipe = self.environment.recipe(milestone)
        rules = self.environment.rules
        grade = grade_candidate(opener, milestone, validation, test_patch, candidate, recipe, rules)
        suite, checked = regression_suite(validation, rules.environments.regression_suite_max_tests), 0
        if grade.resolved and suite:  # the graded tests pass: does it break the rest of the suite?
            whole = grade_candidate(opener, milestone, validation, test_patch, candidate, recipe, rules, suite)
            checked = len(suite) if whole.reason is None else 0  # a whole run that proves nothing changes nothing
            if checked and any(status != "passed" for status in whole.pass_to_pass.values()):
                grade = whole
        if grade.reason == "no_tests_ran":  # the candidate's doing, or a runner that cannot start at all?
            base = grade_candidate(opener, milestone, validation, test_patch, b"", recipe, rules)
            if base.reason == "no_tests_ran":  # validation ran these tests at base: the environment broke since
                tail = (base.run.log_tail if base.run else "").strip()[-600:]
                raise EnvError(
                    f"the test runner could not start, even on the milestone's base (validated, it ran there): {tail}",
                    reason="no_tests_ran",
                )
        failing = sorted(test for test, status in grade.fail_to_pass.items() if status != "passed")
        ground_truth_files = sorted(file_diff.path for file_diff in split_diff(ground_truth))
        carried = {file_diff.path: _result_blob(file_diff.raw) for file_diff in split_diff(start)}
        candidate_files = sorted(
            file_diff.path
            for file_diff in split_diff(candidate)
            if not _same(carried.get(file_diff.path), _result_blob(file_diff.raw))
        )
        core = [path for path in ground_truth_files if self.classifier.is_source(path)]
        regressions = sorted(test for test, status in grade.pass_to_pass.items() if status != "passed")
        said = grade.run.messages if grade.run else {}
        messages = {test: said[test] for test in [*failing, *regressions] if said.get(test)}
        messages |= {  # a test file that failed to load: what it said instead
            test: said[path] for test in failing if test not in messages and (path := test.split("::", 1)[0]) in said
        }
        return VerifierReport(
            milestone_id=milestone.id,
            passed=grade.resolved,
            acceptance=TestCounts(
                passed=len(grade.fail_to_pass) - len(failing), failed=len(failing), total=len(grade.fail_to_pass)
            ),
            failing_acceptance=failing,
            regressions=regressions,
            messages=messages,
            ground_truth_files=ground_truth_files,
            core_files=core,
            candidate_files=candidate_files,
            missing_core_files=[path for path in core if path not in candidate_files],
            extra_files=[
                path for path in candidate_files if path not in ground_truth_files and path not in grade.excluded_files
            ],
            excluded_files=grade.excluded_files,
            reason=grade.reason,
            suite_checked=checked,
        )

    @staticmethod
    def unsubmitted(ground_truth_files, classifier: FileClassifier) -> dict:
        """`test_results.json` of a milestone never submitted: what the ground truth changes, for the analytics."""
        files = sorted(ground_truth_files)
        return {
            "submitted": False,
            "ground_truth_files": files,
            "core_files": [f for f in files if classifier.is_source(f)],
        }

    @staticmethod
    def feedback(report: VerifierReport) -> str:
        """What the Dev is told after a failed submission: which acceptance tests fail, which broke, and what
        each said (its assertion): with the tests hidden, this is all the Dev sees of them."""
        lines = [f"verification failed: {report.acceptance.passed}/{report.acceptance.total} acceptance tests pass."]
        shown: set[str] = set()
        for label, tests in (("FAILING", report.failing_acceptance[:30]), ("REGRESSION", report.regressions[:30])):
            for test in tests:
                said = report.messages.get(test, "").strip()
                lines.append(f"{label} {test}")
                if said and said not in shown:  # a file that fails to load says it once for all its tests
                    lines.append(f"    {_indented(said)}")
                    shown.add(said)
        if report.reason:
            lines.append(f"the test run was not usable: {report.reason}")
        if report.excluded_files:
            lines.append(f"ignored changes to tests/test configuration: {', '.join(report.excluded_files)}")
        return "\n".join(lines)


def _indented(message: str, limit: int = 600) -> str:
    """A failure message under its test id: its `E ` lines (pytest's error) or its end, indented."""
    errors = [line for line in message.splitlines() if line.startswith("E ")]
    message = "\n".join(errors) if errors else message
    message = message if len(message) <= limit else "..." + message[-limit:]
    return message.replace("\n", "\n    ")


def _result_blob(raw: bytes) -> bytes:
    """The id of a file diff's resulting blob (its `index a..b` line), else the diff itself."""
    match = re.search(rb"^index [0-9a-f]+\.\.([0-9a-f]+)", raw, re.M)
    return match.group(1) if match else raw


def _same(carried: bytes | None, now: bytes) -> bool:
    """Same resulting content: blob ids match, one possibly abbreviated."""
    return carried is not None and (carried.startswith(now) or now.startswith(carried))
