"""Acceptance tests established by running them: the runner's own ids of a milestone's changed test
files are the candidates (unittest classes of any name, tests inherited from mixins, parametrised ids),
FAIL_TO_PASS is what fails at base and passes at verify in every run, and the static blame trace only
filters and annotates. Pure rules first, then the `unittest-mixins` example repository in Docker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.checks import plan_problems
from harnessforge.envs.classification import (
    candidate_tests,
    classify,
    excluded_candidates,
    owner_files,
    static_ids,
)
from harnessforge.envs.declared_tests import declared_tests, python_tests
from harnessforge.envs.validation import definitions, milestone_status, summary
from harnessforge.examples.patterns import build_pattern
from harnessforge.models.env import TestRun, Validation
from harnessforge.rules import load_rules
from harnessforge.store import Store

PLUGINS = Path(__file__).parents[1] / "harnessforge" / "envs" / "plugins"
KEY = "harnessforge-examples__kvstash"


def run(statuses: dict, collect_errors=()) -> TestRun:
    failed = any(s in ("failed", "error") for s in statuses.values()) or bool(collect_errors)
    return TestRun(
        runner="pytest", statuses=statuses, collect_errors=list(collect_errors), suite_ran=True, exit_code=int(failed)
    )


def file_of(test: str) -> str:
    return test.split("::")[0]


# ---- the static parse ---------------------------------------------------------------------------
MIXINS = """import unittest

import pytest


class StoreContract:
    def make(self):
        raise NotImplementedError

    def test_roundtrip(self):
        assert self.make() is not None

    @pytest.mark.skip
    def test_expiry(self):
        pass


class MemoryStoreChecks(StoreContract, unittest.TestCase):
    def test_expiry(self):
        pass


class DiskChecks(StoreContract, unittest.TestCase):
    pass


class Helper:
    def run(self):
        pass


class TestOuter:
    class TestInner:
        def test_in(self):
            pass


def test_plain():
    pass
"""


def test_static_parse_sees_unittest_classes_of_any_name_mixins_and_nested_classes():
    spans = {s.test_id: (s.first, s.last) for s in python_tests("t.py", MIXINS)}
    # the mixin's method runs as each heir that does not override it, at the mixin's lines
    assert spans["t.py::MemoryStoreChecks::test_roundtrip"] == spans["t.py::DiskChecks::test_roundtrip"] == (10, 11)
    assert spans["t.py::DiskChecks::test_expiry"] == (13, 15)  # decorators belong to the test
    assert spans["t.py::MemoryStoreChecks::test_expiry"] == (19, 20)  # its own override
    assert "t.py::MemoryStoreChecks::test_expiry" not in [i for i, s in spans.items() if s == (13, 15)]
    assert "t.py::TestOuter::TestInner::test_in" in spans and "t.py::test_plain" in spans
    assert not any("StoreContract" in i or "Helper" in i for i in spans)  # a mixin with heirs has no id of its own


def test_a_mixin_without_heirs_in_its_file_keeps_its_own_id():
    source = "class StoreContract:\n    def test_set(self):\n        pass\n\n    def helper(self):\n        pass\n"
    assert [(s.test_id, s.first, s.last) for s in python_tests("tests/contracts.py", source)] == [
        ("tests/contracts.py::StoreContract::test_set", 2, 3)
    ]


def test_go_declarations_include_examples_and_fuzz_targets_but_not_test_main():
    source = "package x\n\nfunc TestMain(m *testing.M) {}\n\nfunc TestA(t *testing.T) {}\n\nfunc ExampleB() {}\n"
    assert [s.test_id for s in declared_tests("x_test.go", source)] == ["x_test.go::TestA", "x_test.go::ExampleB"]


# ---- candidates from the runner's ids -------------------------------------------------------------
def test_pytest_candidates_are_every_id_of_the_changed_files_and_tests_inheriting_a_changed_mixin():
    ids = [
        "tests/test_parser.py::ParserChecks::test_pairs",
        "tests/test_parser.py::test_sections[one [section]]",
        "tests/test_parser.py::test_sections[two  spaces-[x]]",
        "tests/test_memory.py::MemoryStoreChecks::test_expiry",  # defined in tests/contracts.py
        "tests/test_memory.py::MemoryStoreChecks::test_own",  # defined in its own, unchanged file
        "tests/test_other.py::test_unrelated",
    ]
    defined_in = {
        "tests/test_memory.py::MemoryStoreChecks::test_expiry": ("tests/contracts.py", 12),
        "tests/test_memory.py::MemoryStoreChecks::test_own": ("tests/test_memory.py", 9),
    }
    changed = ["tests/contracts.py", "tests/test_parser.py"]
    assert candidate_tests("pytest", ids, changed, defined_in, {}) == [
        "tests/test_memory.py::MemoryStoreChecks::test_expiry",
        "tests/test_parser.py::ParserChecks::test_pairs",
        "tests/test_parser.py::test_sections[one [section]]",
        "tests/test_parser.py::test_sections[two  spaces-[x]]",
    ]
    assert owner_files("pytest", ids[3], changed, defined_in, {}) == ["tests/contracts.py"]


def test_go_jest_and_cargo_candidates_map_ids_to_their_files():
    go_ids = ["example.com/m/sub::TestNew/case one", "example.com/m/sub::TestOld", "example.com/m::TestNew"]
    declared = {"sub/new_test.go": ["TestNew"]}
    assert candidate_tests("go", go_ids, ["sub/new_test.go"], {}, declared, "example.com/m") == [
        "example.com/m/sub::TestNew/case one"
    ]
    root = candidate_tests("go", go_ids, ["new_test.go"], {}, {"new_test.go": ["TestNew"]}, "example.com/m")
    assert root == ["example.com/m::TestNew"]
    jest_ids = ["src/a.test.ts > parse > handles [brackets]", "src/b.test.ts > other"]
    assert candidate_tests("jest", jest_ids, ["src/a.test.ts"], {}, {}) == [jest_ids[0]]
    cargo_ids = ["parse::float::rounds", "itoa::tests::small", "doctest:itoa::Buffer", "api_v2::works"]
    changed = ["tests/parse.rs", "tests/api-v2/main.rs", "tests/common/mod.rs"]
    assert candidate_tests("cargo", cargo_ids, changed, {}, {}) == ["api_v2::works", "parse::float::rounds"]


def test_static_ids_of_runtime_ids():
    spans = {"tests/contracts.py": python_tests("tests/contracts.py", MIXINS)}
    test = "tests/test_memory.py::MemoryStoreChecks::test_roundtrip"  # a class elsewhere inheriting the mixin
    ids = static_ids("pytest", test, [], {test: ("tests/contracts.py", 11)}, spans)
    assert ids == {
        test,
        "tests/contracts.py::DiskChecks::test_roundtrip",
        "tests/contracts.py::MemoryStoreChecks::test_roundtrip",
    }
    assert static_ids("pytest", "a.py::C::test_x[1 - [2]]", [], {}, {}) == {"a.py::C::test_x"}
    assert static_ids("jest", "src/a.test.ts > parse > ok", [], {}, {}) == {"src/a.test.ts::ok"}
    assert static_ids("go", "m/sub::TestA/x", ["sub/a_test.go"], {}, {}) == {"sub/a_test.go::TestA"}


def test_excluded_static_ids_leave_their_runtime_candidates_out_with_the_reason():
    source = "class StoreContract:\n    def test_overwrite(self):\n        pass\n\n"
    source += "    def test_expiry(self):\n        pass\n"
    spans = {"tests/contracts.py": python_tests("tests/contracts.py", source)}
    overwrite = "tests/test_files.py::FileStoreChecks::test_overwrite"
    expiry = "tests/test_files.py::FileStoreChecks::test_expiry"
    param = "tests/test_files.py::test_tidy[a b]"
    defined_in = {overwrite: ("tests/contracts.py", 2), expiry: ("tests/contracts.py", 5)}
    reason = "changed only by commit abc (tidy), which the description does not cover"
    excluded = {"tests/contracts.py::StoreContract::test_overwrite": reason, "tests/test_files.py::test_tidy": reason}
    accepted = ["tests/contracts.py::StoreContract::test_expiry"]
    got = excluded_candidates("pytest", [overwrite, expiry, param], excluded, accepted, {}, defined_in, spans)
    assert got == {overwrite: reason, param: reason}
    # an id also traced as accepted under another name stays in
    both = {**excluded, "tests/contracts.py::StoreContract::test_expiry": reason}
    assert expiry not in excluded_candidates("pytest", [expiry], both, accepted, {}, defined_in, spans)


# ---- classification from runs, with a reason for every candidate that is not FAIL_TO_PASS ------------
def test_every_non_fail_to_pass_candidate_gets_its_reason():
    # test -> (status in base run 1, in base run 2, at verify); "gone" is in no run at all
    table = {
        "t.py::new": ("failed", "error", "passed"),
        "t.py::old": ("passed", "passed", "passed"),
        "t.py::skip": ("skipped", "skipped", "passed"),
        "t.py::trio": ("skipped", "skipped", "skipped"),
        "t.py::wobbly": ("failed", "passed", "passed"),
        "t.py::broken": ("failed", "failed", "failed"),
        "t.py::tidy": ("failed", "failed", "passed"),
    }
    base = [run({t: row[i] for t, row in table.items()}) for i in (0, 1)]
    verify = [run({t: row[2] for t, row in table.items()})] * 2
    candidates = sorted([*table, "t.py::gone"])
    c = classify(candidates, base, verify, file_of, 10, excluded={"t.py::tidy": "changed only by commit x"})
    assert c.fail_to_pass == ["t.py::new"]  # failed, then an error: failing in every base run
    kinds = {t: why.split(":", 1)[0] for t, why in c.rejected.items()}
    assert kinds == {
        "t.py::broken": "not_passing_at_verify",
        "t.py::gone": "not_passing_at_verify",  # missing in every run
        "t.py::old": "not_reproduced",
        "t.py::skip": "not_failing_at_base",
        "t.py::tidy": "excluded",
        "t.py::trio": "skipped",  # at both ends: it needs something that is not installed
        "t.py::wobbly": "flaky",
    }
    assert c.rejected["t.py::tidy"] == "excluded: changed only by commit x"
    assert c.rejected["t.py::old"] == "not_reproduced: passes at base (passed x2)"
    assert "failed x1" in c.rejected["t.py::wobbly"] and c.flaky == ["t.py::wobbly"]
    assert c.not_reproduced == ["t.py::old"]
    assert set(c.rejected) | set(c.fail_to_pass) == set(candidates)


def test_milestone_status_from_candidates():
    passing = [run({"t.py::a": "passed", "t.py::b": "passed"})]
    c = classify(["t.py::a", "t.py::b"], passing, passing, file_of, 10)
    assert milestone_status(["t.py::a", "t.py::b"], c) == "does_not_reproduce"
    skipped = [run({"t.py::a": "passed", "t.py::s": "skipped"})]
    c = classify(["t.py::a", "t.py::s"], skipped, skipped, file_of, 10)
    assert milestone_status(["t.py::a", "t.py::s"], c) == "does_not_reproduce"  # a test that never runs proves nothing
    failing = [run({"t.py::a": "passed", "t.py::b": "failed"})]  # b fails at both ends: no proof either way
    c = classify(["t.py::a", "t.py::b"], failing, failing, file_of, 10)
    assert milestone_status(["t.py::a", "t.py::b"], c) == "no_fail_to_pass"
    c = classify(["t.py::a"], [run({"t.py::a": "failed"})], passing, file_of, 10)
    assert milestone_status(["t.py::a"], c) == "valid"
    c = classify(["t.py::a"], [run({"t.py::a": "failed"})], passing, file_of, 10, excluded={"t.py::a": "tidy"})
    assert milestone_status(["t.py::a"], c) == "no_fail_to_pass"  # the only candidate was left out
    assert milestone_status([], classify([], passing, passing, file_of, 10)) == "no_fail_to_pass"


def test_plugin_reports_where_each_test_is_defined(tmp_path):
    """Our pytest plugin, run for real: an inherited test's definition is the mixin's file and line."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "contracts.py").write_text("class StoreContract:\n    def test_set(self):\n        pass\n")
    (tmp_path / "tests" / "test_memory.py").write_text(
        "import unittest\n\nimport pytest\n\nfrom tests.contracts import StoreContract\n\n\n"
        "class MemoryStoreChecks(StoreContract, unittest.TestCase):\n    pass\n\n\n"
        "@pytest.mark.parametrize('x', ['a b', '[c]'])\ndef test_param(x):\n    pass\n"
    )
    report = tmp_path / "out.jsonl"
    env = {**os.environ, "HF_RESULTS": str(report), "PYTHONPATH": f"{PLUGINS}:{tmp_path}"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "hf_results", "-p", "no:cacheprovider", "-q", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    where = definitions(report.read_text() + "\nnot json\n")
    assert where == {
        "tests/test_memory.py::MemoryStoreChecks::test_set": ("tests/contracts.py", 2),
        "tests/test_memory.py::test_param[a b]": ("tests/test_memory.py", 12),
        "tests/test_memory.py::test_param[[c]]": ("tests/test_memory.py", 12),
    }


def test_old_validation_files_still_load():
    old = {"milestone_id": "m01", "status": "valid", "repeats": 3, "fail_to_pass": ["t.py::a"]}
    validation = Validation.model_validate_json(json.dumps(old))
    assert validation.candidates == [] and validation.rejected == {} and validation.defined_in == {}


# ---- the unittest-mixins example repository ------------------------------------------------------
@pytest.fixture(scope="module")
def mixins_plan(tmp_path_factory):
    """The `unittest-mixins` pattern repository planned with the current planner."""
    from harnessforge.mining.planner import plan

    root = tmp_path_factory.mktemp("mixins")
    repo = build_pattern("unittest-mixins", root / "kvstash")
    store = Store(root / "store")
    return store, plan(store, str(repo), load_rules()).plan


def _milestone_testing(plan, path: str):
    return next(milestone for milestone in plan.milestones if path in milestone.test_files)


def test_pattern_plan_keeps_the_static_trace_as_an_annotation(mixins_plan):
    store, plan = mixins_plan
    expiry = _milestone_testing(plan, "tests/contracts.py")
    assert expiry.test_files == ["tests/contracts.py"]  # only the mixin's module changes
    assert "tests/contracts.py::StoreContract::test_expiry" in expiry.acceptance_tests
    (excluded,) = expiry.excluded_tests
    assert excluded.test == "tests/contracts.py::StoreContract::test_overwrite" and "Tidy" in excluded.reason
    quoting = _milestone_testing(plan, "tests/test_parser.py")
    assert "tests/test_parser.py::StrictParserChecks::test_escaped_quote" in quoting.acceptance_tests
    assert "tests/test_parser.py::ParserChecks::test_escaped_quote" in quoting.acceptance_tests


def test_a_milestone_with_test_files_but_no_static_acceptance_test_is_no_plan_problem(mixins_plan, tmp_path):
    source, plan = mixins_plan
    store = Store(tmp_path / "store")
    shutil.copytree(source.root, store.root)
    path = store.repo_dir(KEY) / "plan.json"
    data = json.loads(path.read_text())
    data["milestones"][0]["acceptance_tests"] = []
    path.write_text(json.dumps(data))
    assert plan_problems(store, KEY) == []
    data["milestones"][0]["test_files"] = []
    path.write_text(json.dumps(data))
    assert plan_problems(store, KEY) == [f"{plan.milestones[0].id}: changes no test file"]


def test_summary_names_the_changed_files_when_the_runner_reported_none_of_their_tests(mixins_plan):
    _, plan = mixins_plan
    milestone = _milestone_testing(plan, "tests/contracts.py")
    c = classify([], [run({})], [run({})], file_of, 10)
    assert summary(milestone, [], c) == "the runner reported no test in the changed test files (tests/contracts.py)"


@pytest.fixture(scope="module")
def mixins_validated(mixins_plan, base_image, docker_client):
    """The pattern repository's one image built, and every milestone validated in Docker (K from the rules)."""
    from harnessforge.envs.environment import build, validate

    store, plan = mixins_plan
    images = build(store, KEY, load_rules(), log=lambda *_: None)
    assert len(images.images) == 1 and not images.failures, images.failures
    results = validate(store, KEY, load_rules(), backend="docker", log=lambda *_: None, workers=2)
    return store, plan, {validation.milestone_id: validation for validation in results}


def test_mixin_tests_are_fail_to_pass_under_the_concrete_classes_of_both_files(mixins_validated):
    store, plan, results = mixins_validated
    milestone = _milestone_testing(plan, "tests/contracts.py")
    validation = results[milestone.id]
    assert validation.status == "valid", (validation.reason, validation.detail)
    new = ("test_expiry", "test_keys_skip_expired", "test_ttl_must_be_positive")
    assert validation.fail_to_pass == sorted(
        [f"tests/test_files.py::FileStoreChecks::{t}" for t in new]
        + [f"tests/test_memory.py::MemoryStoreChecks::{t}" for t in new]
    )
    assert len(validation.base_runs) == len(validation.verify_runs) == load_rules().environments.repeats
    # the candidates are the mixin's tests as each class runs them; the classes' own tests are not candidates
    assert len(validation.candidates) == 16
    assert "tests/test_memory.py::MemoryStoreChecks::test_stores_are_independent" not in validation.candidates
    assert validation.defined_in["tests/test_memory.py::MemoryStoreChecks::test_expiry"].startswith(
        "tests/contracts.py:"
    )
    # the tidied test is left out by the static trace, with its reason; unchanged ones did not reproduce
    for heir in ("tests/test_files.py::FileStoreChecks", "tests/test_memory.py::MemoryStoreChecks"):
        assert validation.rejected[f"{heir}::test_overwrite"].startswith("excluded: changed only by commit")
        assert validation.rejected[f"{heir}::test_set_then_get"].startswith("not_reproduced: passes at base")
    assert set(validation.rejected) | set(validation.fail_to_pass) == set(validation.candidates)
    assert store.load_milestone(KEY, milestone.id).fail_to_pass == validation.fail_to_pass


def test_same_file_mixins_and_parametrised_ids_with_spaces_and_brackets(mixins_validated):
    _, plan, results = mixins_validated
    validation = results[_milestone_testing(plan, "tests/test_parser.py").id]
    assert validation.status == "valid", (validation.reason, validation.detail)
    for test in (
        "tests/test_parser.py::ParserChecks::test_escaped_quote",
        "tests/test_parser.py::StrictParserChecks::test_escaped_quote",
        "tests/test_parser.py::StrictParserChecks::test_unquoted_spaces_are_refused",
        "tests/test_parser.py::test_sections_prefix_keys[one [section]]",
        "tests/test_parser.py::test_sections_prefix_keys[two sections]",
        "tests/test_loader.py::LoaderBehaviour::test_loads_pairs_in_order",  # a new file: it fails to import at base
    ):
        assert test in validation.fail_to_pass, test
    assert validation.rejected["tests/test_parser.py::ParserChecks::test_pairs"].startswith("not_reproduced")
    assert (
        validation.detail
        == f"{len(validation.candidates)} candidates: {len(validation.fail_to_pass)} FAIL_TO_PASS, 3 not_reproduced"
    )


def test_without_static_acceptance_tests_the_milestone_is_still_validated_by_running(mixins_validated):
    """What the old static parse gave this repository: no acceptance test and the no_acceptance_tests flag."""
    from harnessforge.envs.environment import Environment
    from harnessforge.envs.validation import validate_milestone

    store, plan, results = mixins_validated
    milestone = _milestone_testing(plan, "tests/contracts.py")
    bare = milestone.model_copy(update={"acceptance_tests": [], "excluded_tests": [], "flags": ["no_acceptance_tests"]})
    rules = load_rules()
    rules = rules.model_copy(update={"environments": rules.environments.model_copy(update={"repeats": 1})})
    env = Environment(store, KEY, rules, backend="docker")
    _, test_patch = store.read_patches(KEY, milestone.id)
    validation = validate_milestone(env.opener(bare), bare, test_patch, env.recipe(bare), rules)
    assert validation.status == "valid" and validation.repeats == 1
    # without the trace's exclusion the tidied test is judged on its results alone: it passes at base
    assert set(validation.fail_to_pass) == set(results[milestone.id].fail_to_pass)
    assert validation.rejected["tests/test_files.py::FileStoreChecks::test_overwrite"].startswith("not_reproduced")


def test_grading_uses_the_validated_fail_to_pass_ids(mixins_validated):
    from harnessforge.envs.environment import grade_patch

    store, plan, results = mixins_validated
    milestone = _milestone_testing(plan, "tests/test_parser.py")
    ground_truth, _ = store.read_patches(KEY, milestone.id)
    good = grade_patch(store, KEY, milestone.id, ground_truth, load_rules(), backend="docker")
    assert good.resolved and set(good.fail_to_pass) == set(results[milestone.id].fail_to_pass)
    assert good.fail_to_pass["tests/test_parser.py::test_sections_prefix_keys[one [section]]"] == "passed"
    nothing = grade_patch(store, KEY, milestone.id, b"", load_rules(), backend="docker")
    assert not nothing.resolved
    assert nothing.fail_to_pass["tests/test_parser.py::StrictParserChecks::test_escaped_quote"] == "failed"
    assert nothing.fail_to_pass["tests/test_loader.py::LoaderBehaviour::test_loads_pairs_in_order"] == "error"
