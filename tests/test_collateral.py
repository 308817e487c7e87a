"""Acceptance tests that test the promise (issue 31). A collateral FAIL_TO_PASS test (the milestone did not
change it; at base it fails only because its module does not load or on a private name the milestone adds)
proves nothing of the feature: it is set aside from grading, with its reason, unless nothing else goes
FAIL -> PASS. A title feature that no graded test covers makes the milestone `weak_acceptance`. A test that
hangs fails alone under the per-test timeout."""

from __future__ import annotations

import pytest

from harnessforge.envs.classification import classify
from harnessforge.envs.collateral import collateral, set_aside
from harnessforge.envs.environment import validate
from harnessforge.envs.validation import summary
from harnessforge.examples.patterns import build_pattern
from harnessforge.mining.planner import plan
from harnessforge.models.env import TestRun
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import one_run_per_side


def file_of(test: str) -> str:
    return test.split("::", 1)[0]


def run(statuses: dict[str, str], messages: dict[str, str] | None = None, collect_errors=()) -> TestRun:
    return TestRun(
        runner="pytest", statuses=statuses, messages=messages or {}, collect_errors=list(collect_errors), suite_ran=True
    )


PRIVATE_IMPORT = "E   ImportError: cannot import name '_HYPHEN' from 'wrapx.core' (/w/wrapx/core.py)"
ARITY = "TypeError: _split() takes 2 positional arguments but 3 were given"
ATTRIBUTE = "AttributeError: module 'wrapx' has no attribute '_cache'"
ASSERTION = "assert ['abcdefghij'] == ['abcd-', 'efgh-', 'ij']"
KEYWORD = "TypeError: wrap() got an unexpected keyword argument 'hyphenate'"
CONSTRUCTOR = "TypeError: Wrapper.__init__() takes 1 positional argument but 2 were given"


def failing(message: str) -> TestRun:
    return run({"t.py::a": "failed"}, {"t.py::a": message})


@pytest.mark.parametrize(
    "base, changed, reason",
    [
        # its module does not load: the unchanged test is absent from the report
        (run({}, {"t.py": PRIVATE_IMPORT}, ["t.py"]), False, "t.py does not load at base (E   ImportError: cannot"),
        (failing(ARITY), False, "fails at base on a private name (TypeError: _split() takes 2"),
        (failing(ATTRIBUTE), False, "fails at base on a private name (AttributeError"),
        # a test that ran its check, or failed on public API (a constructor is public): not collateral
        (failing(ASSERTION), False, None),
        (failing(KEYWORD), False, None),
        (failing(CONSTRUCTOR), False, None),
        (run({}, {"t.py": PRIVATE_IMPORT}, ["t.py"]), True, None),  # the milestone changed the test itself
    ],
)
def test_a_test_is_collateral_when_unchanged_and_failing_at_base_only_to_load(base, changed, reason):
    why = collateral(["t.py::a"], [base, base], file_of, lambda test: changed).get("t.py::a")
    if reason is None:
        assert why is None
    else:
        assert why is not None and why.startswith(reason), why


# pytest's collection reports, as filelock's tests gave them at a base without the change's test infrastructure
HELPER_MODULE = """ImportError while importing test module '/workspace/tests/test_lock.py'.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_lock.py:18: in <module>
    from coverage_pragmas import CAPABILITIES
E   ModuleNotFoundError: No module named 'coverage_pragmas'"""
UNKNOWN_MARK = """tests/test_lock.py:24: in <module>
    @pytest.mark.requires_hard_links
/opt/hf/venv/lib/python3.11/site-packages/_pytest/mark/structures.py:652: in __getattr__
    warnings.warn(
E   pytest.PytestUnknownMarkWarning: Unknown pytest.mark.requires_hard_links - is this a typo?"""
PLUGIN_KEY = """tests/test_lock.py:24: in <module>
    from tests.capability_marks import NEEDS_FORK
tests/capability_marks.py:35: in <module>
    not CAPABILITIES["register-at-fork"], reason="installed through os.register_at_fork"
E   KeyError: 'register-at-fork'"""
NEW_PUBLIC_NAME = """tests/test_lock.py:3: in <module>
    from filelock import SoftLease
E   ImportError: cannot import name 'SoftLease' from 'filelock' (/workspace/src/filelock/__init__.py)"""
NEW_KEYWORD = """tests/test_lock.py:49: in Conditioned
    @cachedmethod(lambda self: self.cache, condition=lambda self: self)
E   TypeError: cachedmethod() got an unexpected keyword argument 'condition'"""
RAISED_IN_PACKAGE = """tests/test_lock.py:9: in <module>
    DEFAULT = make_lock()
src/filelock/_api.py:40: in make_lock
    from ._soft import lease
E   ImportError: cannot import name 'lease' from 'soft_backend' (/workspace/src/soft_backend.py)"""


@pytest.mark.parametrize(
    "message, packages, reason",
    [
        (HELPER_MODULE, ["filelock"], "tests/test_lock.py does not load at base, on test infrastructure (E   Module"),
        (UNKNOWN_MARK, ["filelock"], "tests/test_lock.py does not load at base, on test infrastructure (E   pytest."),
        # the change's own public name, a failure raised inside the package, a call with the new keyword: the
        # test checks the work; a key missing from a helper's table is not told from one of the package's
        (NEW_PUBLIC_NAME, ["filelock"], None),
        (RAISED_IN_PACKAGE, ["filelock"], None),
        (NEW_KEYWORD, ["cachetools"], None),
        (PLUGIN_KEY, ["filelock"], None),
        (HELPER_MODULE, [], None),  # no import names known (a language other than Python): nothing is said
    ],
)
def test_a_changed_test_is_collateral_when_its_file_fails_to_load_on_test_infrastructure(message, packages, reason):
    test = "tests/test_lock.py::test_claim"
    base = run({}, {"tests/test_lock.py": message}, ["tests/test_lock.py"])
    why = collateral([test], [base, base], file_of, lambda test: True, packages).get(test)
    if reason is None:
        assert why is None
    else:
        assert why is not None and why.startswith(reason), why


def test_collateral_tests_leave_grading_unless_nothing_else_is_fail_to_pass():
    base = [run({"t.py::new": "failed"}, {"t.py::new": "assert 1 == 2", "u.py": PRIVATE_IMPORT}, ["u.py"])] * 2
    verify = [run({"t.py::new": "passed", "u.py::old": "passed"})] * 2
    verdict = classify(["t.py::new", "u.py::old"], base, verify, file_of, 10)
    assert verdict.fail_to_pass == ["t.py::new", "u.py::old"]
    found = collateral(verdict.fail_to_pass, base, file_of, lambda test: False)
    assert list(found) == ["u.py::old"]  # t.py::new ran its assertion at base
    aside = set_aside(verdict, found, leave_out=True)
    assert aside.fail_to_pass == ["t.py::new"] and aside.collateral == ["u.py::old"]
    assert aside.rejected["u.py::old"].startswith("collateral: u.py does not load at base")
    graded = set_aside(verdict, found, leave_out=False)  # environments.collateral_tests: graded
    assert graded.fail_to_pass == verdict.fail_to_pass and graded.collateral == ["u.py::old"]
    alone = classify(["u.py::old"], base, verify, file_of, 10)
    kept = set_aside(alone, collateral(alone.fail_to_pass, base, file_of, lambda test: False), leave_out=True)
    assert kept.fail_to_pass == kept.collateral == ["u.py::old"] and "u.py::old" not in kept.rejected
    candidates = ["t.py::new", "u.py::old"]  # the one line validation.json's detail and the log say
    assert summary(None, candidates, aside) == "2 candidates: 1 FAIL_TO_PASS, 1 collateral"
    assert (
        summary(None, candidates, graded) == "2 candidates: 2 FAIL_TO_PASS (1 of them collateral, graded by the rules)"
    )


def test_a_crowd_of_unchanged_tests_failing_alike_on_a_moved_dependency_is_collateral():
    """pillarjs/router (eleventh held-out set): array-flatten 3 in the image made 684 old tests fail "flatten is not
    a function" at base until two `require` lines changed; all were graded. With `crowd` (the milestone moves a
    dependency) such a crowd is collateral; fewer tests alike, a changed test, or no dependency moved: graded."""
    broken = "flatten is not a function\nTypeError: flatten is not a function"
    old = [f"test/router.js::Router old {number}" for number in range(12)]
    tests = [*old, "test/router.js::Router new"]
    messages = {test: broken for test in old} | {"test/router.js::Router new": "AssertionError: 1 == 2"}
    base = [run({test: "failed" for test in tests}, messages)] * 2
    unchanged = lambda test: test == "test/router.js::Router new"  # noqa: E731
    found = collateral(tests, base, file_of, unchanged, crowd=10)
    assert sorted(found) == sorted(old)
    assert (
        found[old[0]] == "fails at base as 11 others do, on a moved dependency (TypeError: flatten is not a function)"
    )
    assert collateral(tests, base, file_of, unchanged, crowd=0) == {}  # no dependency moved
    assert collateral(tests, base, file_of, unchanged, crowd=13) == {}  # not a crowd
    assert collateral(tests, base, file_of, lambda test: True, crowd=10) == {}  # the milestone changed them all
    varied = [run({test: "failed" for test in tests}, messages), run({test: "failed" for test in tests}, {})]
    assert collateral(tests, varied, file_of, unchanged, crowd=10) == {}  # not the same failure in every run


# ---- the private-import pattern repository, planned and validated in the local sandbox ------------------
@pytest.fixture(scope="module")
def wrapx(tmp_path_factory):
    """Each release of the pattern repository planned and validated on its own: release -> its validations."""
    root = tmp_path_factory.mktemp("wrapx")
    repo = build_pattern("private-import", root / "wrapx")
    out = {}
    for start, end in (("v0.1.0", "v0.2.0"), ("v0.2.0", "v0.3.0")):
        store = Store(root / end / "store")
        result = plan(store, str(repo), load_rules(), from_ref=start, to_ref=end)
        key = result.plan.repo.key
        validations = validate(store, key, one_run_per_side(), backend="local", log=lambda *_: None)
        out[end] = validations, store.load_plan(key)
    return out


def test_the_feature_is_graded_by_its_own_test_and_the_old_ones_are_set_aside(wrapx):
    (validation,), plan_ = wrapx["v0.2.0"]
    assert validation.status == "valid", validation.detail
    assert validation.fail_to_pass == ["tests/test_wrap.py::test_hyphenate_cuts_long_words"]
    assert validation.collateral == [
        "tests/test_split.py::test_long_words_stay_whole_by_default",
        "tests/test_split.py::test_words_split_on_whitespace",
        "tests/test_wrap.py::test_empty_text_has_no_line",
        "tests/test_wrap.py::test_lines_break_at_the_width",
        "tests/test_wrap.py::test_short_text_is_one_line",
    ]
    reasons = {test: validation.rejected[test] for test in validation.collateral}
    assert (
        reasons["tests/test_wrap.py::test_short_text_is_one_line"].startswith(
            "collateral: tests/test_wrap.py does not load at base ("
        )
        and "_HYPHEN" in reasons["tests/test_wrap.py::test_short_text_is_one_line"]
    )
    assert reasons["tests/test_split.py::test_words_split_on_whitespace"].startswith(
        "collateral: fails at base on a private name (TypeError: _split() takes 2 positional arguments"
    )
    assert "1 FAIL_TO_PASS" in validation.detail and "5 collateral" in validation.detail
    (milestone,) = plan_.milestones
    assert [(headline.text, headline.test_files) for headline in milestone.headlines] == [
        ("Hyphenate long words", ["tests/test_wrap.py"])  # test_split.py: changed in a helper, no test of it
    ]
    assert validation.untested_headlines == [] and "weak_acceptance" not in milestone.flags


def test_a_milestone_whose_every_fail_to_pass_is_collateral_keeps_them_and_its_headline_is_untested(wrapx):
    (validation,), plan_ = wrapx["v0.3.0"]
    assert validation.status == "valid"
    assert validation.fail_to_pass == validation.collateral and len(validation.collateral) == 4
    assert "4 FAIL_TO_PASS (all of them collateral, graded: nothing else goes FAIL -> PASS)" in validation.detail
    # its headline has no test of its own: the milestone says which, and is weak
    (milestone,) = plan_.milestones
    assert validation.untested_headlines == [milestone.title] == [headline.text for headline in milestone.headlines]
    # nothing it grades checks its work: the Dev is not given it
    assert milestone.held_back and milestone.held_back[-1].startswith("collateral: its 4 FAIL_TO_PASS tests all fail")
    assert "weak_acceptance" in milestone.flags and milestone.status == "valid"
    assert milestone.held_back[0].startswith("ungraded: no test it is graded by covers the work it asks for")


# ---- a test that hangs at base -----------------------------------------------------------------------------
def _timeouts(test_case_timeout_s: int, test_timeout_s: int):
    rules = one_run_per_side()
    environments = rules.environments.model_copy(
        update={"test_case_timeout_s": test_case_timeout_s, "test_timeout_s": test_timeout_s}
    )
    return rules.model_copy(update={"environments": environments})


def test_a_test_that_hangs_at_base_fails_alone_under_the_per_test_timeout(tmp_path):
    repo = build_pattern("private-import", tmp_path / "wrapx")
    store = Store(tmp_path / "store")
    key = plan(store, str(repo), load_rules(), from_ref="v0.3.0", to_ref="v0.4.0").plan.repo.key
    (timed,) = validate(store, key, _timeouts(3, 60), backend="local", log=lambda *_: None)
    assert timed.status == "valid", timed.detail
    assert timed.fail_to_pass == ["tests/test_words.py::test_a_missing_file_is_an_error"]
    (base,) = timed.base_runs
    assert not base.timed_out and base.suite_ran and base.duration_s < 30
    said = base.messages["tests/test_words.py::test_a_missing_file_is_an_error"]
    assert "ran longer than 3 s (per-test timeout)" in said
    # without it, the one hanging test stops the whole run
    (untimed,) = validate(store, key, _timeouts(0, 8), backend="local", log=lambda *_: None)
    assert (untimed.status, untimed.reason) == ("env_error", "timeout")


def test_tests_that_did_not_load_at_base_outside_the_changed_files_are_pass_to_pass_by_a_run_without_the_patch():
    """gjson: a new test calling a new function keeps the whole Go package from compiling at base, so its old tests
    were missing there and PASS_TO_PASS was empty while the text promised the suite still passes."""
    from harnessforge.envs.classification import unloaded_elsewhere

    def go_file(test: str) -> str:
        return "gjson_test.go"

    base = [run({}, {"gjson_test.go": "undefined: AppendJSONString"}, ["gjson_test.go"])]
    verify = [run({"pkg::TestNew": "passed", "pkg::TestOld": "passed", "pkg::TestBroken": "failed"})]
    reference = [run({"pkg::TestOld": "passed", "pkg::TestBroken": "passed"})]
    assert unloaded_elsewhere(["pkg::TestNew"], base, verify)  # TestOld is no candidate and did not load
    assert not unloaded_elsewhere(["pkg::TestNew", "pkg::TestOld"], base, verify)  # all missing ones are candidates
    without = classify(["pkg::TestNew"], base, verify, go_file, 10)
    assert without.fail_to_pass == ["pkg::TestNew"] and without.pass_to_pass == []
    verdict = classify(["pkg::TestNew"], base, verify, go_file, 10, reference_runs=reference)
    assert verdict.fail_to_pass == ["pkg::TestNew"] and verdict.pass_to_pass == ["pkg::TestOld"]
    assert verdict.broken == ["pkg::TestBroken"]  # passed before the change, fails after it: said, as any other


def test_a_go_test_its_package_never_reached_because_another_panicked_is_collateral_changed_or_not():
    """go-toml (fourteenth held-out set): a new test panicked at base and ended its package's binary; 102 tests
    after it, changed by the milestone or not, never ran there and were graded as FAIL_TO_PASS."""
    import json

    from harnessforge.envs.runners import runner

    package = "github.com/pelletier/go-toml/v2"
    events = [
        {"Action": "run", "Package": package, "Test": "TestIssue850"},
        {"Action": "output", "Package": package, "Test": "TestIssue850", "Output": "panic: subslice address (0)\n"},
        {"Action": "fail", "Package": package, "Test": "TestIssue850", "Elapsed": 0},
        {"Action": "fail", "Package": package, "Elapsed": 0.1},
    ]
    base = runner("go").parse({"go.jsonl": "\n".join(json.dumps(event) for event in events)}, 2, "")
    assert base.collect_errors == [package] and base.messages[package].startswith("a test panicked and ended")
    graded = [f"{package}::TestIssue850", f"{package}::TestUnmarshalDecodeErrors/array_with_comma_first"]
    found = collateral(graded, [base], file_of, changed=lambda test: True)
    assert list(found) == [graded[1]] and found[graded[1]].startswith("not reached at base: a test panicked")
    built = base.model_copy(update={"messages": {package: "undefined: NewDecoder"}})  # a build failure: new API
    assert collateral(graded, [built], file_of, changed=lambda test: True) == {}


def test_a_go_test_only_touched_is_collateral_when_its_package_does_not_build_for_another_tests_new_code():
    """charm log (eighteenth held-out set): `TestCustomLevel` calls the new `Logf`, so the package did not build at
    base and 100 `TestRace` cases, changed only from `Print` to `Printf`, were graded beside it. The build output
    names the lines that need new code: a test holding none of them is collateral, changed or not."""
    from harnessforge.envs.collateral import needing_new_code
    from harnessforge.envs.validation import _changed_and_needed

    package = "github.com/charmbracelet/log"
    log = f"# {package} [{package}.test]\n./logger_test.go:275:4: l.Logf undefined (type *Logger has no method Logf)\n"
    spans = {"logger_test.go": [("TestRace", 250, 270), ("TestCustomLevel", 272, 280)]}  # tests only, no helper
    assert needing_new_code([log], spans) == {"TestCustomLevel"}
    base = run({}, {package: "build failed"}, [package]).model_copy(update={"log_tail": log})
    graded = [f"{package}::TestRace/race#01", f"{package}::TestCustomLevel"]
    changed = _changed_and_needed(set(graded), needing_new_code([base.log_tail], spans))
    found = collateral(graded, [base], file_of, changed)
    assert list(found) == [graded[0]] and "does not load at base" in found[graded[0]]
    # an error it cannot tie to one test keeps every changed test graded, as before
    helper = log.replace("logger_test.go:275", "logger_test.go:285")
    for unreadable in (helper, log.replace(f"# {package} [{package}.test]\n", ""), log + "too many errors\n"):
        assert needing_new_code([unreadable], spans) is None
    assert collateral(graded, [base], file_of, _changed_and_needed(set(graded), None)) == {}


def test_the_per_test_timer_leaves_a_test_run_in_a_thread_alone():
    """bidict (nineteenth set): its base ran pytest-xdist (`--numprocesses=auto`), whose older workers run tests in a
    thread; arming the alarm there raised "signal only works in main thread" in every test, which then "passed" at
    verify once the change dropped xdist: whole suites graded on nothing. In a thread the timer stays off."""
    import signal
    import threading

    from harnessforge.envs.plugins.hf_results import _timer

    timer = _timer(5)
    failures: list[BaseException] = []

    def run_one() -> None:
        try:
            call = timer.pytest_runtest_call(None)
            next(call)
            next(call, None)
        except BaseException as error:  # noqa: BLE001 (what the test records)
            failures.append(error)

    worker = threading.Thread(target=run_one)
    worker.start()
    worker.join()
    assert failures == []
    call = timer.pytest_runtest_call(None)  # in the main thread the alarm is armed, then disarmed
    next(call)
    assert signal.getsignal(signal.SIGALRM) == timer._expired and signal.alarm(0) > 0
    next(call, None)
    assert signal.getsignal(signal.SIGALRM) is not timer._expired
