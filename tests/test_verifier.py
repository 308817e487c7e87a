"""The Verifier on its own: candidates for the example repository's m01 graded in the local sandbox, and
what the report and the Dev's feedback say about each."""

from __future__ import annotations

import difflib

import pytest

from harnessforge.diffs import split_diff
from harnessforge.envs.environment import Environment
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.harness.verifier import Verifier
from harnessforge.store import Store
from tests.helpers import one_run_per_side, validated_copy

MID = "m01"


def _rules():
    return one_run_per_side()


@pytest.fixture(scope="module")
def graded(planned, tmp_path_factory):
    """A Verifier for the planned example store, m01 validated in the local sandbox; and the milestone."""
    store, key = validated_copy(planned, tmp_path_factory.mktemp("verifier"), [MID], _rules())
    validation = store.load_validation(key, MID)
    verifier = Verifier(Environment(store, key, _rules(), "local"), store, {"harnessforge.run": "verifier-test"})
    return verifier, store, key, store.load_milestone(key, MID), validation


def _new_file(path: str, text: str) -> bytes:
    lines = text.splitlines(keepends=True)
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return (header + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}" for line in lines)).encode()


def _edit(store: Store, key: str, commit: str, path: str, text: str) -> bytes:
    """A git diff turning `path` at `commit` into `text`."""
    old = GitRepo(store.git_cache(key)).show(commit, path).decode()
    hunks = difflib.unified_diff(
        old.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return (f"diff --git a/{path} b/{path}\n" + "".join(hunks)).encode()


def test_the_ground_truth_passes_with_every_acceptance_test_and_nothing_missing(graded):
    verifier, store, key, milestone, validation = graded
    ground_truth, _ = store.read_patches(key, MID)
    report = verifier.verify(milestone, ground_truth)
    truth_files = sorted(file_diff.path for file_diff in split_diff(ground_truth))
    assert report.passed and report.milestone_id == MID and report.reason is None
    assert (report.acceptance.passed, report.acceptance.failed) == (len(validation.fail_to_pass), 0)
    assert report.acceptance.total == len(validation.fail_to_pass) == 28
    assert report.failing_acceptance == [] and report.regressions == []
    assert report.ground_truth_files == report.candidate_files == truth_files
    assert report.missing_core_files == report.extra_files == report.excluded_files == []


def test_an_empty_candidate_fails_every_acceptance_test_and_misses_the_core_files(graded):
    verifier, store, key, milestone, validation = graded
    report = verifier.verify(milestone, b"")
    assert not report.passed and report.acceptance.passed == 0
    assert report.failing_acceptance == sorted(validation.fail_to_pass) and report.candidate_files == []
    classifier = FileClassifier(_rules().planning)
    assert report.missing_core_files == [path for path in report.ground_truth_files if classifier.is_source(path)]
    assert "tasklite/serialize.py" in report.missing_core_files and "README.md" not in report.missing_core_files
    feedback = Verifier.feedback(report).splitlines()
    assert feedback[0] == "verification failed: 0/28 acceptance tests pass."
    failing = [line for line in feedback[1:] if not line.startswith("    ")]
    assert failing == [f"FAILING {test}" for test in sorted(validation.fail_to_pass)]
    # and why: each distinct message once, under the first test that said it (here: the test files cannot import)
    said = [line.strip() for line in feedback[1:] if line.startswith("    ")]
    assert said and all(line.startswith("E ") for line in said) and len(said) < len(failing)
    assert any("SerializationError" in line for line in said)


def test_a_broken_package_fails_and_names_the_regressions(graded):
    verifier, store, key, milestone, validation = graded
    broken = _edit(store, key, milestone.base_commit, "tasklite/__init__.py", "raise ImportError('broken')\n")
    report = verifier.verify(milestone, broken)
    assert not report.passed and report.regressions == sorted(validation.pass_to_pass) and report.regressions
    assert report.candidate_files == ["tasklite/__init__.py"] and report.extra_files == []
    assert f"REGRESSION {report.regressions[0]}" in Verifier.feedback(report)


def test_edits_to_test_files_are_dropped_before_grading(graded):
    verifier, store, key, milestone, _ = graded
    ground_truth, _ = store.read_patches(key, MID)
    cheat = _new_file("tests/test_tags.py", "def test_nothing():\n    pass\n")  # the acceptance file, emptied
    cheated = verifier.verify(milestone, cheat)
    assert not cheated.passed and cheated.acceptance.passed == 0  # the real tests ran, not the Dev's
    assert cheated.excluded_files == ["tests/test_tags.py"] and cheated.extra_files == []
    assert "ignored changes to tests/test configuration: tests/test_tags.py" in Verifier.feedback(cheated)

    with_the_fix = verifier.verify(milestone, ground_truth + cheat)
    assert with_the_fix.passed and with_the_fix.excluded_files == ["tests/test_tags.py"]
    assert "tests/test_tags.py" in with_the_fix.candidate_files and with_the_fix.extra_files == []


def test_files_beyond_the_ground_truth_are_extra_and_carried_work_is_not_the_candidates(graded):
    verifier, store, key, milestone, _ = graded
    ground_truth, _ = store.read_patches(key, MID)
    notes = _new_file("NOTES.md", "what I did\n")
    report = verifier.verify(milestone, ground_truth + notes)
    assert report.passed and report.extra_files == ["NOTES.md"] and report.excluded_files == []

    # The same work carried from the previous milestone: part of what is graded, not files this one touched.
    carried = verifier.verify(milestone, ground_truth + notes, start=ground_truth)
    assert carried.passed and carried.candidate_files == ["NOTES.md"] and carried.extra_files == ["NOTES.md"]
    classifier = FileClassifier(_rules().planning)
    sources = [path for path in report.ground_truth_files if classifier.is_source(path)]
    assert carried.missing_core_files == sources and "tasklite/serialize.py" in sources


def test_a_regression_outside_the_pass_to_pass_sample_fails_the_submission(planned, tmp_path):
    """Issue 33: grading checked only a sample of PASS_TO_PASS (`max_pass_to_pass`), so a solution could break the
    rest of the suite unseen, and SFT rows and RL rewards rested on it. A submission that passes its graded tests
    is checked on the whole suite that passed at base and verify; a test broken there fails it, by name."""
    rules = _rules()
    rules = rules.model_copy(update={"environments": rules.environments.model_copy(update={"max_pass_to_pass": 1})})
    store, key = validated_copy(planned, tmp_path, [MID], rules)
    validation, milestone = store.load_validation(key, MID), store.load_milestone(key, MID)
    broken = "tests/test_store.py::test_remove_deletes_task_and_forgets_it"
    assert broken in validation.suite_pass_to_pass and broken not in validation.pass_to_pass  # outside the sample
    ground_truth, _ = store.read_patches(key, MID)
    source = GitRepo(store.git_cache(key)).show(milestone.verify_commit, "tasklite/store.py").decode()
    assert "del self._tasks[task_id]" in source
    sabotaged = _edit(
        store, key, milestone.base_commit, "tasklite/store.py", source.replace("del self._tasks[task_id]", "pass")
    )
    candidate = b"".join(file.raw for file in split_diff(ground_truth) if file.path != "tasklite/store.py") + sabotaged
    verifier = Verifier(Environment(store, key, rules, "local"), store, {"harnessforge.run": "verifier-test"})
    report = verifier.verify(milestone, candidate)
    assert not report.passed and report.failing_acceptance == [] and report.regressions == [broken]
    assert report.suite_checked == len(validation.suite_pass_to_pass) > len(validation.pass_to_pass)
    assert f"REGRESSION {broken}" in Verifier.feedback(report)
    # the same rules with the check off: the sample alone lets it through (what grading did before)
    off = rules.model_copy(
        update={"environments": rules.environments.model_copy(update={"regression_suite_max_tests": 0})}
    )
    assert Verifier(Environment(store, key, off, "local"), store).verify(milestone, candidate).passed
    assert verifier.verify(milestone, ground_truth).passed  # the reference breaks nothing
