"""The Verifier: grades a submission in a fresh sandbox and explains the verdict to the Dev."""

from __future__ import annotations

import re

from ..diffs import split_diff
from ..envs.candidate_grading import grade_candidate
from ..envs.environment import Environment
from ..files import FileClassifier
from ..models.plan import Milestone
from ..models.trajectory import TestCounts, VerifierReport
from ..store import Store


class Verifier:
    def __init__(self, env: Environment, store: Store, labels: dict[str, str] | None = None):
        """`labels` go on the grading sandboxes too (the run's id), so one a killed run left is its own."""
        self.env, self.store, self.labels = env, store, labels or {}
        self.classify = FileClassifier(env.rules.planning)

    def verify(self, m: Milestone, candidate: bytes, start: bytes = b"") -> VerifierReport:
        """Grade `candidate` (a diff on the milestone's base). `start` is the Dev's work carried from the
        previous milestone: part of the candidate, but not counted as files touched for this one."""
        validation = self.store.load_validation(self.env.key, m.id)
        ground_truth, test_patch = self.store.read_patches(self.env.key, m.id)
        opener = self.env.opener(m, {"harnessforge.stage": "verify", **self.labels})
        g = grade_candidate(opener, m, validation, test_patch, candidate, self.env.recipe(m), self.env.rules)
        failing = sorted(t for t, s in g.fail_to_pass.items() if s != "passed")
        gt = sorted(f.path for f in split_diff(ground_truth))
        carried = {f.path: _result_blob(f.raw) for f in split_diff(start)}
        cand = sorted(f.path for f in split_diff(candidate) if not _same(carried.get(f.path), _result_blob(f.raw)))
        core = [f for f in gt if self.classify.is_source(f)]
        return VerifierReport(
            milestone_id=m.id,
            passed=g.resolved,
            acceptance=TestCounts(
                passed=len(g.fail_to_pass) - len(failing), failed=len(failing), total=len(g.fail_to_pass)
            ),
            failing_acceptance=failing,
            regressions=sorted(t for t, s in g.pass_to_pass.items() if s != "passed"),
            ground_truth_files=gt,
            candidate_files=cand,
            missing_core_files=[f for f in core if f not in cand],
            extra_files=[f for f in cand if f not in gt and f not in g.excluded_files],
            excluded_files=g.excluded_files,
            reason=g.reason,
        )

    @staticmethod
    def feedback(report: VerifierReport) -> str:
        """What the Dev is told after a failed submission: which acceptance tests fail, which broke."""
        lines = [f"verification failed: {report.acceptance.passed}/{report.acceptance.total} acceptance tests pass."]
        lines += [f"FAILING {t}" for t in report.failing_acceptance[:30]]
        lines += [f"REGRESSION {t}" for t in report.regressions[:30]]
        if report.reason:
            lines.append(f"the test run was not usable: {report.reason}")
        if report.excluded_files:
            lines.append(f"ignored changes to tests/test configuration: {', '.join(report.excluded_files)}")
        return "\n".join(lines)


def _result_blob(raw: bytes) -> bytes:
    """The id of a file diff's resulting blob (its `index a..b` line), else the diff itself."""
    m = re.search(rb"^index [0-9a-f]+\.\.([0-9a-f]+)", raw, re.M)
    return m.group(1) if m else raw


def _same(carried: bytes | None, now: bytes) -> bool:
    """Same resulting content: blob ids match, one possibly abbreviated."""
    return carried is not None and (carried.startswith(now) or now.startswith(carried))
