"""Validation's classification: pure rules turning repeated test runs into FAIL_TO_PASS /
PASS_TO_PASS / flaky, finding a milestone's candidate tests among a runner's ids, and judging
whether a run proves anything at all (`run_problem`, shared with candidate grading).

No containers here: every rule is a function of `TestRun`s, so each one is tested directly.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..models.env import EnvErrorReason, TestRun, TestStatus
from ..models.plan import AcceptanceCriterion, Headline, Milestone, title_headlines
from ..models.task import asked, compose
from .declared_tests import TestSpan, title_template

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
    failures = any(status in ("failed", "error") for status in run.statuses.values()) or run.collect_errors
    if run.exit_code != 0 and not failures and run.exit_code != 5:
        return "no_tests_ran"
    if not run.statuses and not run.collect_errors:
        return "no_tests_ran"
    return None


def unbuilt_tests(candidates: list[str], verify_runs: list[TestRun]) -> str | None:
    """What did not build or load when, with the reference solution, the changed test files report no test
    and a run names collection errors: the environment cannot run the milestone's tests (a toolchain or a
    dependency it lacks), which is no verdict on the milestone. None otherwise."""
    errors = sorted({error for run in verify_runs for error in run.collect_errors})
    if candidates or not errors:
        return None
    return ", ".join(errors[:5]) + (f" and {len(errors) - 5} more" if len(errors) > 5 else "")


@dataclass
class Classification:
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    not_reproduced: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # candidate -> "kind: detail", for each non-F2P one
    collateral: list[str] = field(default_factory=list)  # F2P by their results, proving nothing (see `collateral`)
    suite_pass_to_pass: list[str] = field(default_factory=list)  # every test passing at both ends (P2P: a sample)


def sample(tests: list[str], limit: int) -> list[str]:
    """A deterministic, file-spread sample: order by a hash of the id, keep `limit`, sort back."""
    if len(tests) <= limit:
        return sorted(tests)
    return sorted(sorted(tests, key=lambda test: hashlib.sha256(test.encode()).hexdigest())[:limit])


def _tally(statuses: list[TestStatus]) -> str:
    """`failed x3` or `passed x2, failed x1`: a test's statuses over the runs of one side."""
    counts = Counter(statuses)
    return ", ".join(f"{status} x{count}" for status, count in counts.most_common())


def _why_not(base: list[TestStatus], verify: list[TestStatus]) -> str | None:
    """Why a candidate with these statuses is not FAIL_TO_PASS (None when it is)."""
    if len({status == "passed" for status in base}) > 1 or len({status == "passed" for status in verify}) > 1:
        return f"flaky: passed in some runs and not in others (base {_tally(base)}; verify {_tally(verify)})"
    if base[0] == "passed":
        return f"not_reproduced: passes at base ({_tally(base)})"
    # e.g. it needs a package that is not installed
    if all(status in ("skipped", "xfailed") for status in base + verify):
        return f"skipped: {_tally(base + verify)} at base and at verify"
    if verify[0] != "passed":
        return f"not_passing_at_verify: {_tally(verify)} at verify"
    if any(status not in FAILING for status in base):
        return f"not_failing_at_base: {_tally(base)} at base"
    return None


def classify(
    candidates: list[str],
    base_runs: list[TestRun],
    verify_runs: list[TestRun],
    file_of: Callable[[str], str],
    max_pass_to_pass: int,
    excluded: dict[str, str] | None = None,
    reference_runs: list[TestRun] = (),
) -> Classification:
    """F2P: a candidate failing (failed, error, missing) in every base run and passing in every verify
    run. Mixed results at one commit: flaky, reported and never counted. A candidate passing at base
    did not reproduce. `excluded` candidates (test -> why the static trace left it out) are left out
    whatever their results; every candidate that is not F2P gets its reason in `rejected`. A test that is no
    candidate and did not load in any base run is PASS_TO_PASS by its `reference_runs` (the base without the test
    patch) instead."""
    excluded = excluded or {}
    chosen = set(candidates)
    seen = set(candidates)
    for run in base_runs + verify_runs:
        seen.update(run.statuses)
    classification = Classification()
    changing = run_dependent(base_runs + verify_runs)
    for test in sorted(changing & chosen):
        classification.rejected[test] = "run_dependent: its id changes from run to run (a time or a random value)"
    p2p = []
    for test in sorted(seen - changing):
        base = [outcome(run, test, file_of) for run in base_runs]
        if reference_runs and test not in chosen and all(run.status(test) == "missing" for run in base_runs):
            base = [outcome(run, test, file_of) for run in reference_runs]
        verify = [outcome(run, test, file_of) for run in verify_runs]
        base_ok, verify_ok = {status == "passed" for status in base}, {status == "passed" for status in verify}
        if len(base_ok) > 1 or len(verify_ok) > 1:
            classification.flaky.append(test)
        elif base_ok == {True}:
            (p2p if verify_ok == {True} else classification.broken).append(test)
        if test not in chosen:
            continue
        why = f"excluded: {excluded[test]}" if test in excluded else _why_not(base, verify)
        if why is None:
            classification.fail_to_pass.append(test)
        else:
            classification.rejected[test] = why
            if why.startswith("not_reproduced"):
                classification.not_reproduced.append(test)
    classification.pass_to_pass = sample(p2p, max_pass_to_pass)
    classification.suite_pass_to_pass = sorted(p2p)
    return classification


def unloaded_elsewhere(candidates: list[str], base_runs: list[TestRun], verify_runs: list[TestRun]) -> bool:
    """Whether a test that is no candidate passed at verify yet was absent from every base run: the test patch
    broke loading beyond its own files (a Go package's new test does not compile), so the base's own tests say
    nothing there; a base run without the patch (`reference_runs` of `classify`) says what passed before."""
    chosen = set(candidates)
    passed = {test for test, status in verify_runs[0].statuses.items() if status == "passed"} if verify_runs else set()
    return any(test not in chosen and all(run.status(test) == "missing" for run in base_runs) for test in passed)


_PARAMETERS = re.compile(r"\[.*\]$|\(.*\)$")  # a parametrised test's id: `test_x[...]`, Go's and JS's `name (…)`


def run_dependent(runs: list[TestRun]) -> set[str]:
    """Test ids that hold a value of the run (`test_stamp[2026-12-05 10:00:01]`): ids that are absent from some
    run, whose shape (digits aside, in their parameters) is shared by another id of another run, and no id of that
    shape is in every run. Such a test is neither flaky nor new: it cannot be named the same way twice."""
    if len(runs) < 2:
        return set()
    every = set.intersection(*(set(run.statuses) for run in runs))
    shapes: dict[str, set[str]] = {}
    for run in runs:
        for test in run.statuses:
            found = _PARAMETERS.search(test)
            if found and re.search(r"\d", found[0]):
                shapes.setdefault(test[: found.start()] + re.sub(r"\d+", "#", found[0]), set()).add(test)
    return {test for tests in shapes.values() if len(tests) > 1 and not tests & every for test in tests}


def uncovered(items: list, graded: list[str], files_of: Callable[[str], list[str]]) -> list[int]:
    """The positions of `items` (headlines, task parts: each with `tests` and `test_files`) that no graded
    (non-collateral) FAIL_TO_PASS test covers: none is a test their own commits add or change (by name: its
    function, class or title), or, when no name was read from their diffs, none lives in a test file they changed."""
    covered_files = {path for test in graded for path in files_of(test)}
    covered_names = {name for test in graded for name in names_in_test_id(test)}
    covered_leaves = {name for test in graded for name in _leaf_names(test)}
    said = " ".join(_squeezed(test) for test in graded)

    def covers(item) -> bool:
        # a Go test file compiles whole: what a part's tests there call, a graded test of the file needs to build
        # (progressbar's `OptionShowTotalBytes`, called "not part of this task" beside the graded theme test)
        if not getattr(item, "housekeeping", False) and set(go_test_files(item.test_files)) & covered_files:
            return True
        if not item.tests:
            return bool(set(item.test_files) & covered_files)
        # a part that touched test functions covers those, not every test of their class (a class alone: all of it)
        functions = any(name.startswith("test") for name in item.tests)
        return named_by(item.tests, covered_leaves if functions else covered_names)

    return [
        position for position, item in enumerate(items) if not covers(item) and not data_named(item.test_files, said)
    ]


def go_test_files(paths: list[str]) -> list[str]:
    return [path for path in paths if path.endswith("_test.go")]


def _leaf_names(test: str) -> set[str]:
    """The names a graded test is by itself, not its class's or suite's: parsel's "Migrate to ruff" reformatted one
    test of `SelectorTestCase` and so "covered" every test of the class, a new one of another part's included."""
    parts = test.split("::")[1:]
    if len(parts) >= 2:  # `file::Class::test_x[p]`
        return {re.sub(r"\[.*$", "", parts[-1])}
    if "::" not in test and " > " in test:  # `file > suite > does x`
        return {test.rsplit(" > ", 1)[-1]}
    return names_in_test_id(test)


def _squeezed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def data_named(test_files: list[str], said: str, min_length: int = 8) -> bool:
    """Whether a test data file of an item is named in a graded test's id: a suite parametrised by its data files
    (python-multipart's `test_http[name=mixed_case_headers...]` reads `tests/test_data/http/mixed_case_headers.yaml`)
    grades the part that added the file, though its test function is older than the part."""
    stems = {_squeezed(path.rsplit("/", 1)[-1].split(".", 1)[0]) for path in test_files if not _CODE.search(path)}
    return any(len(stem) >= min_length and stem in said for stem in stems)


_CODE = re.compile(r"\.(?:py|go|rs|[cm]?[jt]sx?|java|kt|rb)$")


def named_by(tests: list[str], names: set[str]) -> bool:
    """One of `tests` (a test's own name or title, as a diff declares it) among the names a runner's ids give, or
    the last of the titles mocha joins with spaces (`Router .all(path, fn) should not stack overflow ...`); a title
    template (`should error with value ${util.inspect(v)}`) names every title it makes."""
    if set(tests) & names or any(name.endswith(" " + test) for name in names for test in tests):
        return True
    templates = [title_template(test) for test in tests if "${" in test]
    return any(template.search(name) for template in templates for name in names)


def untested_headlines(headlines: list[Headline], graded: list[str], files_of: Callable[[str], list[str]]) -> list[str]:
    """The title's features that no graded FAIL_TO_PASS test covers (`uncovered`)."""
    return [headlines[position].text for position in uncovered(headlines, graded, files_of)]


def names_in_test_id(test: str) -> set[str]:
    """The function and class names in a test id: `t.py::Tests::test_a[x]` -> Tests, test_a; `mod::TestA/sub` ->
    TestA; a JavaScript runner's titles, `a.test.js > suite > does x` (jest, vitest) or `a.test.js::suite > does x`
    (TAP) -> suite, does x."""
    if "::" not in test and " > " in test:
        return set(test.split(" > ")[1:])
    parts = test.split("::")[1:] or [test]
    if " > " in test:
        return {title for part in parts for title in part.split(" > ")}
    return {re.sub(r"\[.*$", "", part).split("/")[0] for part in parts}


_MORE = re.compile(r" \(\+(\d+) more\)$")


def title_without_untested(
    title: str, headlines: list[Headline], untested: list[str]
) -> tuple[str, list[Headline]] | None:
    """For a milestone planned before task parts: the title with the untested headlines moved into its "+N more"
    when another headline is tested; None when nothing changes (every headline tested, or none)."""
    covered = [headline for headline in headlines if headline.text not in untested]
    if not covered or len(covered) == len(headlines):
        return None
    found = _MORE.search(title)
    more = (int(found[1]) if found else 0) + len(headlines) - len(covered)
    return "; ".join(headline.text for headline in covered) + f" (+{more} more)", covered


def regraded(milestone: Milestone, ungraded: list[int]) -> dict:
    """What validation changes in a milestone with task parts: each part graded or not (`ungraded`: the parts no
    graded test covers), and the title, text, headlines and release-note criteria asking for the graded ones only
    (`models.task.compose`); flags `untested_features` when a part the plan asked for is not graded, and
    `weak_acceptance` when none is."""
    parts = [part.model_copy(update={"graded": index not in ungraded}) for index, part in enumerate(milestone.parts)]
    composed = compose(parts, milestone.release)
    headlines = title_headlines(parts, composed)
    planned = set(asked(milestone.parts))
    flags = set(milestone.flags) - {"weak_acceptance", "untested_features"}
    if not any(part.graded for part in parts):
        flags.add("weak_acceptance")
    elif planned - set(composed.asked):
        flags.add("untested_features")
    notes = [AcceptanceCriterion(text=promise, source="release notes") for promise in composed.promises]
    tests = [criterion for criterion in milestone.acceptance_criteria if criterion.source == "test"]
    return {
        "parts": parts,
        "title": composed.title,
        "title_source": composed.title_source,
        "description": composed.description,
        "headlines": headlines,
        "acceptance_criteria": notes + tests,
        "flags": sorted(flags),
    }


# ---- candidates: the runner's ids of the milestone's changed test files -----------------------------
def _go_package(path: str, module: str) -> str:
    folder = posixpath.dirname(path)
    return f"{module}/{folder}" if module and folder else module or folder


def _cargo_binary(path: str) -> str | None:
    """The integration-test binary a file under `tests/` builds: `tests/NAME.rs`, `tests/NAME/main.rs`."""
    parts = path.split("/")
    if "tests" not in parts:
        return None
    rest = parts[len(parts) - parts[::-1].index("tests") :]
    if len(rest) == 1 and rest[0].endswith(".rs"):
        return rest[0][:-3].replace("-", "_")
    if len(rest) == 2 and rest[1] == "main.rs":
        return rest[0].replace("-", "_")
    return None


def owner_files(
    runner: str,
    test_id: str,
    test_files: list[str],
    defined_in: dict[str, tuple[str, int | None]],
    declared: dict[str, list[str]],
    go_module: str = "",
) -> list[str]:
    """The changed test files that a runner's test id belongs to (empty: none of them).

    pytest: the file of the id, or the file defining the function (a mixin's, `defined_in`);
    jest/vitest: the file before the first ` > `; go: the changed `_test.go` files of the id's package
    that declare its top-level test (`declared`: file -> names); cargo: `tests/NAME.rs` for binary NAME.
    """
    if runner in ("jest", "vitest"):
        files = {test_id.split(" > ", 1)[0]}
    elif runner == "go":
        package, _, name = test_id.partition("::")
        top = name.split("/", 1)[0]
        files = {
            path for path in test_files if top in declared.get(path, []) and _go_package(path, go_module) == package
        }
        if not go_module:  # no go.mod read: the package path ends with the file's folder
            files = {
                path
                for path in test_files
                if top in declared.get(path, []) and package.endswith(posixpath.dirname(path))
            }
    elif runner == "cargo":
        binary = test_id.split("::", 1)[0]
        files = {path for path in test_files if _cargo_binary(path) == binary}
    else:
        files = {test_id.split("::", 1)[0]}
        if test_id in defined_in:
            files.add(defined_in[test_id][0])
    return sorted(files & set(test_files))


def candidate_tests(
    runner: str,
    test_ids,
    test_files: list[str],
    defined_in: dict[str, tuple[str, int | None]],
    declared: dict[str, list[str]],
    go_module: str = "",
) -> list[str]:
    """The ids the runner reported that belong to the milestone's changed test files: every test of a
    changed file (unittest classes of any name, parametrised ids), and the tests that classes elsewhere
    inherit from a changed mixin."""
    return sorted(
        test for test in set(test_ids) if owner_files(runner, test, test_files, defined_in, declared, go_module)
    )


def _unparametrised(test_id: str) -> str:
    """`a.py::C::test_x[1 - [2]]` -> `a.py::C::test_x` (the name itself never holds a bracket)."""
    head, sep, tail = test_id.partition("::")
    cut = tail.find("[")
    return head + sep + tail[:cut] if cut >= 0 and tail.endswith("]") else test_id


def static_ids(
    runner: str,
    test_id: str,
    owners: list[str],
    defined_in: dict[str, tuple[str, int | None]],
    spans: dict[str, list[TestSpan]],
) -> set[str]:
    """The ids the static trace (envs/declared_tests.py) gives the test a runner reports as `test_id`."""
    if runner in ("jest", "vitest"):
        return {f"{test_id.split(' > ', 1)[0]}::{test_id.rsplit(' > ', 1)[-1]}"}
    if runner in ("ava", "node", "tape", "tap", "mocha"):  # `file::suite > title`: the static trace names the title
        path, _, titles = test_id.partition("::")
        ids = {test_id, f"{path}::{titles.rsplit(' > ', 1)[-1]}"}
        # node-tap's subtests made in a loop (`t.test(`${input}`)`) are data: the declared test is the outermost
        return ids | {f"{path}::{titles.split(' > ', 1)[0]}"} if runner == "tap" else ids
    if runner == "go":
        return {f"{path}::{test_id.partition('::')[2].split('/', 1)[0]}" for path in owners}
    if runner == "cargo":
        return {f"{path}::{test_id.rsplit('::', 1)[-1]}" for path in owners}
    ids = {_unparametrised(test_id)}
    where, line = defined_in.get(test_id, ("", None))
    if line is not None:
        ids.update(span.test_id for span in spans.get(where, []) if span.first <= line <= span.last)
    return ids


def excluded_candidates(
    runner: str,
    candidates: list[str],
    excluded: dict[str, str],
    accepted: list[str],
    owners: dict[str, list[str]],
    defined_in: dict[str, tuple[str, int | None]],
    spans: dict[str, list[TestSpan]],
) -> dict[str, str]:
    """Candidates the static trace left out (test -> its reason): tests changed only by commits the
    description does not cover. A candidate also traced as accepted under another id stays in."""
    if not excluded:
        return {}
    out = {}
    for test in candidates:
        ids = static_ids(runner, test, owners.get(test, []), defined_in, spans)
        hits = sorted(ids & set(excluded))
        if hits and not ids & set(accepted):
            out[test] = excluded[hits[0]]
    return out
