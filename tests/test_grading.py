"""The pure grading rules: FAIL_TO_PASS needs every run at both ends to agree; spoofed runs count for nothing."""

from harnessforge.envs.candidate_grading import filter_candidate, grade_run
from harnessforge.envs.classification import (
    classify,
    outcome,
    run_problem,
    title_without_untested,
    unbuilt_tests,
    untested_headlines,
)
from harnessforge.models.env import TestRun
from harnessforge.models.plan import Headline


def run(statuses, collect_errors=(), suite_ran=True, exit_code=None, **kw) -> TestRun:
    failed = any(s in ("failed", "error") for s in statuses.values()) or collect_errors
    code = (1 if failed else 0) if exit_code is None else exit_code
    return TestRun(
        runner="pytest",
        statuses=statuses,
        collect_errors=list(collect_errors),
        suite_ran=suite_ran,
        exit_code=code,
        **kw,
    )


def file_of(test: str) -> str:
    return test.split("::")[0]


def test_fail_to_pass_needs_failure_in_every_base_run_and_pass_in_every_verify_run():
    base = [run({"t.py::a": "failed", "t.py::b": "passed", "u.py::c": "passed"})] * 3
    verify = [run({"t.py::a": "passed", "t.py::b": "passed", "u.py::c": "passed"})] * 3
    c = classify(["t.py::a", "t.py::b"], base, verify, file_of, max_pass_to_pass=10)
    assert c.fail_to_pass == ["t.py::a"]
    assert c.not_reproduced == ["t.py::b"]
    assert c.pass_to_pass == ["t.py::b", "u.py::c"]
    assert c.flaky == [] and c.broken == []


def test_missing_at_base_counts_as_failing_and_collection_errors_as_errors():
    base = [run({"old.py::x": "passed"}, collect_errors=["new.py"])] * 3
    verify = [run({"old.py::x": "passed", "new.py::y": "passed"})] * 3
    assert outcome(base[0], "new.py::y", file_of) == "error"
    assert outcome(base[0], "other.py::z", file_of) == "missing"
    assert classify(["new.py::y"], base, verify, file_of, 10).fail_to_pass == ["new.py::y"]


def test_mixed_results_at_one_commit_are_flaky_and_never_counted():
    base = [run({"t.py::a": "failed", "t.py::p": "passed"})] * 3
    verify = [run({"t.py::a": "passed", "t.py::p": s}) for s in ("passed", "failed", "passed")]
    c = classify(["t.py::a", "t.py::p"], base, verify, file_of, 10)
    assert c.flaky == ["t.py::p"]
    assert c.fail_to_pass == ["t.py::a"] and "t.py::p" not in c.pass_to_pass


def test_an_id_holding_a_value_of_the_run_is_neither_flaky_nor_graded():
    """A parametrize id with the current time differs in every run: one test, never the same id twice."""
    stamps = [f"t.py::test_stamp[2026-12-05 10:00:0{second}]" for second in range(4)]
    base = [
        run({stamps[0]: "failed", "t.py::v[1]": "passed", "t.py::v[2]": "failed"}),
        run({stamps[1]: "failed", "t.py::v[1]": "passed", "t.py::v[2]": "failed"}),
    ]
    verify = [
        run({stamps[2]: "passed", "t.py::v[1]": "passed", "t.py::v[2]": "passed"}),
        run({stamps[3]: "passed", "t.py::v[1]": "passed", "t.py::v[2]": "passed"}),
    ]
    c = classify([*stamps, "t.py::v[2]"], base, verify, file_of, 10)
    assert c.flaky == [] and c.fail_to_pass == ["t.py::v[2]"]  # same-shaped ids present in every run stay tests
    assert all(c.rejected[stamp].startswith("run_dependent") for stamp in stamps)


def test_skips_and_xfails_are_not_passes():
    base = [run({"t.py::a": "failed", "t.py::s": "skipped"})] * 2
    verify = [run({"t.py::a": "skipped", "t.py::s": "skipped"})] * 2
    c = classify(["t.py::a"], base, verify, file_of, 10)
    assert c.fail_to_pass == [] and c.pass_to_pass == []


def test_pass_at_base_then_fail_at_verify_is_broken():
    c = classify([], [run({"t.py::a": "passed"})], [run({"t.py::a": "failed"})], file_of, 10)
    assert c.broken == ["t.py::a"]


def test_pass_to_pass_is_a_bounded_deterministic_sample():
    statuses = {f"t{i}.py::x": "passed" for i in range(50)}
    one = classify([], [run(statuses)], [run(statuses)], file_of, 7).pass_to_pass
    two = classify([], [run(statuses)], [run(statuses)], file_of, 7).pass_to_pass
    assert len(one) == 7 and one == two and one == sorted(one)


def test_untrustworthy_runs_are_named():
    assert run_problem(run({}, suite_ran=False)) == "no_tests_ran"
    assert run_problem(run({}, suite_ran=False, collect_errors=["a.py"])) == "collection_error"
    assert run_problem(run({"a": "passed"}, timed_out=True)) == "timeout"
    assert run_problem(run({"a": "passed"}, oom_killed=True)) == "oom"
    # exit code says failure but the report shows none: a forged report, or a crash after it
    assert run_problem(run({"a": "passed"}, exit_code=1)) == "no_tests_ran"
    assert run_problem(run({"a": "passed"})) is None


def test_tests_that_do_not_build_with_the_reference_solution_are_the_environment():
    """spf13/pflag on Go 1.19: its new tests call flag.FlagSet.BoolFunc (Go 1.21), so the package does not
    build at verify and reports no test. That is the environment, not a milestone without a test."""
    unbuilt = run({}, exit_code=2, collect_errors=["github.com/spf13/pflag"])
    assert unbuilt_tests([], [unbuilt, unbuilt]) == "github.com/spf13/pflag"
    assert unbuilt_tests(["pkg::TestA"], [unbuilt]) is None  # some tests ran: the verdict is theirs
    assert unbuilt_tests([], [run({"pkg::TestOther": "passed"})]) is None  # built, nothing changed was a test
    many = run({}, collect_errors=[f"m{index}.py" for index in range(7)])
    assert unbuilt_tests([], [many]) == "m0.py, m1.py, m2.py, m3.py, m4.py and 2 more"


def test_an_untested_headline_leaves_the_title_when_another_is_tested():
    """Flask 3.1.0's first milestone: "Add encoding parameter to open resource; Provide a configuration option
    to control automatic option responses", and only the first is graded: the title keeps what is."""
    encoding, options = (Headline(text=text, commits=[], test_files=[]) for text in ("Encoding", "Options"))
    title, kept = title_without_untested("Encoding; Options", [encoding, options], ["Options"])
    assert (title, kept) == ("Encoding (+1 more)", [encoding])
    assert (
        title_without_untested("Encoding; Options (+2 more)", [encoding, options], ["Encoding"])[0]
        == "Options (+3 more)"
    )
    assert title_without_untested("Encoding; Options", [encoding, options], []) is None  # all tested: as it is
    assert (
        title_without_untested("Encoding; Options", [encoding, options], ["Encoding", "Options"]) is None
    )  # weak instead


def test_a_headline_is_covered_by_a_test_its_own_commits_touch():
    """more-itertools 10.7.0: `derangements` and `argmin` both change tests/test_more.py, and only derangements'
    tests go FAIL -> PASS; by file both looked covered, by name only derangements is."""
    derangements = Headline(text="derangements", commits=[], test_files=["t.py"], tests=["DerangementsTests"])
    argmin = Headline(text="argmin", commits=[], test_files=["t.py"], tests=["ArgminTests", "test_argmin"])
    unnamed = Headline(text="unnamed", commits=[], test_files=["t.py"])  # no name read: by file, as before
    graded = ["t.py::DerangementsTests::test_unique_values[x-1]"]
    assert untested_headlines([derangements, argmin, unnamed], graded, lambda test: ["t.py"]) == ["argmin"]
    go = Headline(text="durations", commits=[], test_files=["d_test.go"], tests=["TestParseDuration"])
    assert untested_headlines([go], ["example.org/m::TestParseDuration/days"], lambda test: ["d_test.go"]) == []


def test_grade_resolves_only_when_every_test_passes_in_a_trustworthy_run():
    f2p, p2p = ["t.py::a"], ["t.py::b"]
    ok = grade_run("m01", run({"t.py::a": "passed", "t.py::b": "passed"}), f2p, p2p, file_of, [])
    assert ok.resolved
    assert not grade_run("m01", run({"t.py::a": "passed", "t.py::b": "failed"}), f2p, p2p, file_of, []).resolved
    assert not grade_run("m01", run({"t.py::a": "skipped", "t.py::b": "passed"}), f2p, p2p, file_of, []).resolved
    assert not grade_run("m01", run({"t.py::b": "passed"}), f2p, p2p, file_of, []).resolved  # missing is not a pass
    forged = grade_run("m01", run({"t.py::a": "passed", "t.py::b": "passed"}, exit_code=1), f2p, p2p, file_of, [])
    assert not forged.resolved and forged.reason == "no_tests_ran"


def _section(path: str, body: str) -> bytes:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x\n+{body}\n".encode()


def test_candidate_changes_to_tests_and_test_configuration_are_dropped(rules):
    patch = b"".join(
        _section(p, "y")
        for p in ("pkg/core.py", "tests/test_core.py", "conftest.py", "pkg/conftest.py", "pytest.ini", "x.pth")
    )
    kept, dropped = filter_candidate(patch, rules)
    assert kept == _section("pkg/core.py", "y")
    assert dropped == ["conftest.py", "pkg/conftest.py", "pytest.ini", "tests/test_core.py", "x.pth"]


def test_validation_asks_for_the_graded_parts_and_names_the_others_as_context():
    """Issue 44: a milestone of three parts whose FAIL_TO_PASS tests grade one: the title, text and release-note
    criteria ask for that one; the others are named once, as context; none graded is `weak_acceptance`."""
    from harnessforge.envs.classification import regraded, uncovered
    from harnessforge.models import AcceptanceCriterion, Milestone
    from harnessforge.models.task import TaskPart

    parts = [
        TaskPart(
            heading="Deprecate `old()`",
            promises=["Deprecate `old()`"],
            tested=True,
            test_files=["t/test_old.py"],
            tests=["test_old_warns"],
            releases=["2.0"],
        ),
        TaskPart(
            heading="Typing for `Schema`",
            promises=["Typing for `Schema`"],
            tested=True,
            test_files=["t/test_typing.py"],
            releases=["2.0"],
        ),
        TaskPart(
            heading="`many` option",
            promises=["`many` option"],
            tested=True,
            test_files=["t/test_many.py"],
            tests=["test_many_by_default"],
            releases=["2.1"],
        ),
    ]
    milestone = Milestone(
        id="m01",
        ordinal=1,
        title="Deprecate `old()`; Typing for `Schema` (+1 more)",
        description="...",
        base_commit="a",
        verify_commit="b",
        release="2.1",
        source_prs=[],
        issues=[],
        commits=[],
        changed_files=[],
        test_files=[],
        lines_added=1,
        lines_deleted=1,
        difficulty=1,
        acceptance_tests=[],
        parts=parts,
        acceptance_criteria=[AcceptanceCriterion(text="`t/test_many.py::test_many_by_default`: many", source="test")],
    )
    graded = ["t/test_many.py::test_many_by_default"]
    ungraded = uncovered(parts, graded, lambda test: [test.split("::")[0]])
    assert ungraded == [0, 1]
    update = regraded(milestone, ungraded)
    assert update["title"] == "`many` option" and [part.graded for part in update["parts"]] == [False, False, True]
    assert update["description"] == (
        "`many` option.\n\nAlso in this change, not graded and not part of this task: Deprecate `old()`; Typing for "
        "`Schema`.\n\nThis shipped in release 2.1."
    )
    assert [criterion.text for criterion in update["acceptance_criteria"]] == [
        "`many` option",
        "`t/test_many.py::test_many_by_default`: many",
    ]
    assert "untested_features" in update["flags"] and "weak_acceptance" not in update["flags"]
    parts[1] = parts[1].model_copy(update={"housekeeping": True})  # freezegun's "Improved static typing definitions"
    quiet = regraded(milestone.model_copy(update={"parts": parts}), ungraded)
    assert "Also in this change, not graded and not part of this task: Deprecate `old()`." in quiet["description"]
    none = regraded(milestone, [0, 1, 2])
    assert "weak_acceptance" in none["flags"] and none["title"] == "Deprecate `old()`; Typing for `Schema` (+1 more)"


def test_a_mocha_id_of_joined_titles_covers_the_headline_its_test_title_names():
    """pillarjs/router (the eleventh held-out set): mocha ids a test `test/router.js::Router .all(path, fn) should not
    stack overflow ...` (its suites' titles and its own, joined), the diff declares the title alone; every headline
    was `untested`, every task held back as `weak_acceptance`. A title is covered by an id ending in it, whole."""
    from harnessforge.envs.classification import untested_headlines
    from harnessforge.models.plan import Headline

    headlines = [
        Headline(
            text="Fix hanging on large stack of sync routes",
            commits=[],
            test_files=[],
            tests=["should not stack overflow"],
        ),
        Headline(
            text="Fix routing requests without method", commits=[], test_files=[], tests=["should route without method"]
        ),
    ]
    graded = ["test/router.js::Router .all(path, fn) should not stack overflow"]
    files = lambda test: [test.split("::")[0]]  # noqa: E731
    assert untested_headlines(headlines, graded, files) == ["Fix routing requests without method"]
    assert untested_headlines(headlines, ["test/router.js::Router .all(path, fn) x should not stack"], files) == [
        "Fix hanging on large stack of sync routes",
        "Fix routing requests without method",
    ]  # a title inside another is no match
    assert untested_headlines(headlines[:1], ["test/router.js::should not stack overflow"], files) == []


def test_a_part_named_only_as_context_gives_no_first_hint():
    """python-dotenv: the zipfile task's first hint was the unrelated rewrite() fix's commit subject."""
    from types import SimpleNamespace

    from harnessforge.mining.hints import asked_names
    from harnessforge.models import Milestone
    from harnessforge.models.task import TaskPart

    parts = [
        TaskPart(heading="Handle code imported from a zipfile", tested=True, commits=["a"], graded=True),
        TaskPart(heading="Fix temporary file deleted before closing", tested=True, commits=["b"], graded=False),
    ]
    fields = dict(id="m01", ordinal=1, title="Zipfile", description="...", base_commit="x", verify_commit="y")
    empty = dict(source_prs=[], issues=[], commits=[], changed_files=[], test_files=[], acceptance_tests=[])
    milestone = Milestone(**fields, **empty, lines_added=1, lines_deleted=0, difficulty=1, parts=parts)
    named = [
        ("Find the .env from a zipfile", [SimpleNamespace(sha="a")]),
        ("Close it first", [SimpleNamespace(sha="b")]),
    ]
    assert [name for name, _ in asked_names(named, milestone)] == ["Find the .env from a zipfile"]
    assert asked_names(named, milestone.model_copy(update={"parts": []})) == named  # no parts: every name


def test_the_first_hint_names_no_work_the_task_calls_context():
    """packaging 25.0: a task graded on its PEP 751 markers only said the Android tags were "not part of this task",
    then its first hint (the work's titles, planned before validation) asked for them."""
    from harnessforge.models.task import TaskPart, asked_hint

    markers = TaskPart(heading="PEP 751: Add support for `extras` and `dependency_groups` markers", graded=True)
    android = TaskPart(heading="PEP 738: Add support for Android platform tags", graded=False)
    hint = "- support 'extras' and 'dependency_groups' markers\n- Add support for PEP 738 Android tags"
    assert asked_hint(hint, [markers, android]) == "- support 'extras' and 'dependency_groups' markers"
    assert asked_hint(hint, [markers, android.model_copy(update={"graded": True})]) == hint  # both asked
    assert asked_hint("- Speed up the parser", [markers, android]) == "- Speed up the parser"  # matches neither


def test_a_data_file_a_graded_test_id_names_grades_the_part_that_added_it():
    """python-multipart (fourteenth held-out set): `test_http[...mixed_case_headers...]` is an old test function
    run over data files; the part that added `mixed_case_headers.yaml` is graded by it, not named as context."""
    from harnessforge.envs.classification import data_named, uncovered
    from harnessforge.models.task import TaskPart

    headers = TaskPart(
        heading="Handle headers case-insensitively",
        tested=True,
        test_files=["tests/test_data/http/mixed_case_headers.http", "tests/test_data/http/mixed_case_headers.yaml"],
    )
    other = TaskPart(heading="Emit `field_end`", tested=True, test_files=["tests/test_other.py"], tests=["test_end"])
    graded = ["tests/test_multipart.py::TestFormParser::test_http[name=mixed_case_headers-test]"]
    assert uncovered([headers, other], graded, lambda test: [test.split("::")[0]]) == [1]
    assert not data_named(["tests/test_data/http/mixed_case_headers.yaml"], "tests/test_multipart.py::test_http[empty]")
    assert not data_named(["tests/test_headers.py"], "teststestheaderspytestone")  # a code file is named by path
    assert not data_named(["tests/data/a.json"], "tests/test_x.py::test_a")  # too short a stem to mean anything


def test_a_part_that_touched_one_test_of_a_class_does_not_cover_the_others():
    """parsel (fifteenth held-out set): "Migrate to ruff" reformatted `SelectorTestCase.test_smart_strings`; the
    graded `SelectorTestCase.test_body_bytearray_support` is another part's new test, yet the lint migration was
    asked for, as graded, by the class name they share."""
    from harnessforge.envs.classification import uncovered
    from harnessforge.models.task import TaskPart

    bytearray_part = TaskPart(
        heading="Support bytearray bodies",
        tested=True,
        test_files=["tests/test_selector.py"],
        tests=["SelectorTestCase", "test_body_bytearray_support"],
    )
    ruff = TaskPart(
        heading="Migrate to ruff",
        tested=True,
        test_files=["tests/test_selector.py"],
        tests=["SelectorTestCase", "test_smart_strings"],
    )
    graded = ["tests/test_selector.py::SelectorTestCase::test_body_bytearray_support"]
    assert uncovered([bytearray_part, ruff], graded, lambda test: [test.split("::")[0]]) == [1]


def test_a_go_part_whose_tests_share_a_graded_tests_file_is_graded():
    """progressbar (nineteenth set): "Fix: Add OptionShowTotal" changed tests in `progressbar_test.go`, beside the
    graded theme test; the file compiles whole, so the graded test needs that work, yet the text called it "not
    graded and not part of this task". A housekeeping part there, or a Python part, is not covered by the file."""
    from harnessforge.envs.classification import uncovered
    from harnessforge.models.task import TaskPart

    theme = TaskPart(heading="Filled theme ends", tested=True, test_files=["progressbar_test.go"], tests=["TestTheme"])
    total = TaskPart(
        heading="Add OptionShowTotal", tested=True, test_files=["progressbar_test.go"], tests=["TestTotal"]
    )
    gofmt = total.model_copy(update={"heading": "Run gofmt", "housekeeping": True})
    python = TaskPart(heading="Other", tested=True, test_files=["tests/test_a.py"], tests=["test_other"])
    graded = ["github.com/x/progressbar::TestTheme"]
    owners = lambda test: ["progressbar_test.go", "tests/test_a.py"]  # noqa: E731
    assert uncovered([theme, total, gofmt, python], graded, owners) == [2, 3]
