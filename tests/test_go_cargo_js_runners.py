"""Test runners of other languages: go, cargo, jest and vitest parse canned reports captured from
the real tools (go 1.19 and the Go 1.24 build-failure events from Go's own test script, cargo 1.95,
jest 30, vitest 4); pytest, really run with our plugin, is in test_runners.py."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from harnessforge.envs.runner_spec import in_process
from harnessforge.envs.runners import JEST_TEST_FRAME, runner

# ---------------------------------------------------------------------------------------------------- go

# go 1.19 `go test -json -count=1 ./...` (Time fields dropped): a build failure is a plain text line, not JSON.
GO_119 = (
    "FAIL\texample.com/m/broken [build failed]\n"
    + r"""{"Action":"run","Package":"example.com/m/store","Test":"TestAdd"}
{"Action":"output","Package":"example.com/m/store","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Action":"output","Package":"example.com/m/store","Test":"TestAdd","Output":"    store_test.go:5: boom\n"}
{"Action":"output","Package":"example.com/m/store","Test":"TestAdd","Output":"--- FAIL: TestAdd (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/store","Test":"TestAdd","Elapsed":0}
{"Action":"output","Package":"example.com/m/store","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/store","Output":"FAIL\texample.com/m/store\t0.009s\n"}
{"Action":"fail","Package":"example.com/m/store","Elapsed":0.009}
{"Action":"run","Package":"example.com/m/calc","Test":"TestAdd"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestAdd","Output":"--- PASS: TestAdd (0.00s)\n"}
{"Action":"pass","Package":"example.com/m/calc","Test":"TestAdd","Elapsed":0}
{"Action":"run","Package":"example.com/m/calc","Test":"TestSub"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestSub","Output":"=== RUN   TestSub\n"}
{"Action":"run","Package":"example.com/m/calc","Test":"TestSub/zero"}
{"Action":"run","Package":"example.com/m/calc","Test":"TestSub/neg_one"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestSub/neg_one","Output":"    calc_test.go:9: bad\n"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestSub","Output":"--- FAIL: TestSub (0.00s)\n"}
{"Action":"pass","Package":"example.com/m/calc","Test":"TestSub/zero","Elapsed":0}
{"Action":"fail","Package":"example.com/m/calc","Test":"TestSub/neg_one","Elapsed":0}
{"Action":"fail","Package":"example.com/m/calc","Test":"TestSub","Elapsed":0}
{"Action":"run","Package":"example.com/m/calc","Test":"TestSkip"}
{"Action":"output","Package":"example.com/m/calc","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/calc","Test":"TestSkip","Elapsed":0}
{"Action":"output","Package":"example.com/m/calc","Output":"FAIL\texample.com/m/calc\t0.005s\n"}
{"Action":"fail","Package":"example.com/m/calc","Elapsed":0.005}
{"Action":"output","Package":"example.com/m/empty","Output":"?   \texample.com/m/empty\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m/empty","Elapsed":0}
"""
)

# Go >= 1.24: build failures are JSON (events from cmd/go/testdata/script/test_json_build.txt, trimmed); the failure
# of an imported package is attributed to the test package that could not build.
GO_124 = r"""
{"ImportPath":"m/builderror [m/builderror.test]","Action":"build-fail"}
{"Action":"start","Package":"m/builderror"}
{"Action":"output","Package":"m/builderror","Output":"FAIL\tm/builderror [build failed]\n"}
{"Action":"fail","Package":"m/builderror","Elapsed":0,"FailedBuild":"m/builderror [m/builderror.test]"}
{"ImportPath":"m/builderror2/x","Action":"build-output","Output":"builderror2/x/main.go:3:11: undefined: y\n"}
{"ImportPath":"m/builderror2/x","Action":"build-fail"}
{"Action":"start","Package":"m/builderror2"}
{"Action":"output","Package":"m/builderror2","Output":"FAIL\tm/builderror2 [build failed]\n"}
{"Action":"fail","Package":"m/builderror2","Elapsed":0,"FailedBuild":"m/builderror2/x"}
{"Action":"start","Package":"m/ok"}
{"Action":"run","Package":"m/ok","Test":"TestOK"}
{"Action":"pass","Package":"m/ok","Test":"TestOK","Elapsed":0}
{"Action":"pass","Package":"m/ok","Elapsed":0.01}
"""


def test_go_statuses_subtests_and_same_names_in_two_packages():
    run = runner("go").parse({"go.jsonl": GO_119}, 2, "# example.com/m/broken\nbroken_test.go:5:40: cannot use")
    assert run.statuses == {
        "example.com/m/store::TestAdd": "failed",
        "example.com/m/calc::TestAdd": "passed",
        "example.com/m/calc::TestSub": "failed",
        "example.com/m/calc::TestSub/zero": "passed",
        "example.com/m/calc::TestSub/neg_one": "failed",
        "example.com/m/calc::TestSkip": "skipped",
    }
    assert run.collect_errors == ["example.com/m/broken"] and run.suite_ran


def test_a_failing_go_test_says_what_it_printed():
    """What a failing test printed (its `t.Errorf` lines), never the runner's own frame lines: the message a task
    shows as what goes wrong at the base commit. A passing test says nothing."""
    run = runner("go").parse({"go.jsonl": GO_119}, 2, "")
    assert run.messages == {
        "example.com/m/store::TestAdd": "store_test.go:5: boom",
        "example.com/m/calc::TestSub/neg_one": "calc_test.go:9: bad",
    }


def test_go_124_build_failures_are_collect_errors():
    run = runner("go").parse({"go.jsonl": GO_124}, 1, "")
    assert run.statuses == {"m/ok::TestOK": "passed"}
    assert run.collect_errors == ["m/builderror", "m/builderror2"] and run.suite_ran


def test_go_package_that_fails_before_any_test_is_a_collect_error():
    # e.g. a TestMain that exits, or a panic in init(): the package fails without a single test event.
    text = r"""{"Action":"output","Package":"m/p","Output":"panic: init failed\n"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p\t0.003s\n"}
{"Action":"fail","Package":"m/p","Elapsed":0.003}
"""
    run = runner("go").parse({"go.jsonl": text}, 1, "")
    assert run.statuses == {} and run.collect_errors == ["m/p"] and run.suite_ran


def test_a_panicking_test_makes_its_package_a_collect_error_so_the_tests_it_cut_off_are_missing():
    """lo: one new test panicked at base (`count <= 0`) and ended the package's binary; the tests after it never ran
    and were graded as FAIL_TO_PASS. The panicking test fails; its package is a collect error (collateral)."""
    text = r"""{"Action":"run","Package":"m/lo","Test":"TestA"}
{"Action":"pass","Package":"m/lo","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"m/lo","Test":"TestSample"}
{"Action":"output","Package":"m/lo","Test":"TestSample","Output":"panic: runtime error: makeslice: len out of range\n"}
{"Action":"fail","Package":"m/lo","Test":"TestSample","Elapsed":0}
{"Action":"output","Package":"m/lo","Output":"FAIL\tm/lo\t0.010s\n"}
{"Action":"fail","Package":"m/lo","Elapsed":0.01}
{"Action":"run","Package":"m/ok","Test":"TestOK"}
{"Action":"fail","Package":"m/ok","Test":"TestOK","Elapsed":0}
{"Action":"fail","Package":"m/ok","Elapsed":0.01}
"""
    run = runner("go").parse({"go.jsonl": text}, 1, "")
    assert run.statuses == {"m/lo::TestA": "passed", "m/lo::TestSample": "failed", "m/ok::TestOK": "failed"}
    assert run.collect_errors == ["m/lo"] and run.suite_ran  # m/ok failed a test: no collect error
    assert run.status("m/lo::TestMin") == "missing"


def test_go_nothing_ran_when_every_package_failed_to_build_before_124():
    run = runner("go").parse({"go.jsonl": "FAIL\tm/p [setup failed]\n"}, 1, "")
    assert run.collect_errors == ["m/p"] and not run.suite_ran
    assert not runner("go").parse({}, 1, "").suite_ran


def test_go_tests_importing_a_package_their_milestone_adds_ran_and_failed_at_base():
    """spf13/cast: the tests import `github.com/spf13/cast/internal`, which the milestone creates. At base that is
    no broken environment but a test package that does not build; a third-party module missing is."""
    own = (
        "# github.com/spf13/cast\ntime_test.go:18:2: cannot find module providing package "
        "github.com/spf13/cast/internal: module lookup disabled by GOPROXY=off\n"
        "FAIL\tgithub.com/spf13/cast [setup failed]\n"
    )
    report, said = "FAIL\tgithub.com/spf13/cast [setup failed]\n", own  # the reason is on stderr, in the log
    run = runner("go").parse({"go.jsonl": report}, 1, said)
    assert run.collect_errors == ["github.com/spf13/cast"] and run.suite_ran
    other = said.replace("github.com/spf13/cast/internal", "github.com/frankban/quicktest")
    assert not runner("go").parse({"go.jsonl": report}, 1, other).suite_ran


def test_go_command_selects_packages_and_top_level_tests():
    ids = ["example.com/m/calc::TestSub/neg_one", "example.com/m/calc::TestAdd", "example.com/m/store::TestAdd"]
    cmd = runner("go").command(ids, out_dir="/o")
    words = shlex.split(cmd.split(" && ", 2)[2])
    assert words == ["go", "test", "-json", "-count=1", "-run", "^(TestSub|TestAdd)$"] + [
        "example.com/m/calc",
        "example.com/m/store",
        ">",
        "/o/go.jsonl",
    ]
    assert "go test -json -count=1 ./... > /o/go.jsonl" in runner("go").command([], out_dir="/o")


# ---------------------------------------------------------------------------------------------------- cargo

# cargo 1.95 `cargo test --no-fail-fast 2>&1` (backtraces trimmed). The failing test printed a fake result line,
# which libtest shows in the failures section; edition 2024 merges doctests into groups, each with its own result.
CARGO = """   Compiling my-crate v0.1.0 (/tmp/rt)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 1.24s
     Running unittests src/lib.rs (target/debug/deps/my_crate-8c1a648309b03e4d)

running 4 tests
test tests::ok ... ok
test tests::bad ... FAILED
test tests::panics - should panic ... ok
test tests::slow ... ignored, slow

failures:

---- tests::bad stdout ----
test tests::ok2 ... ok

thread 'tests::bad' (18115) panicked at src/lib.rs:22:52:
assertion `left == right` failed
  left: 4
 right: 5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    tests::bad

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.19s

error: test failed, to rerun pass `--lib`
     Running tests/it.rs (target/debug/deps/it-0d05a688098a578c)

running 2 tests
test ignored_plain ... ok
test tests::ok ... FAILED

failures:

---- tests::ok stdout ----
thread 'tests::ok' (18190) panicked at tests/it.rs:3:15:
boom

failures:
    tests::ok

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--test it`
   Doc-tests my_crate

running 2 tests
test src/lib.rs - add (line 3) ... ok
test src/lib.rs - add (line 7) ... FAILED

failures:

---- src/lib.rs - add (line 7) stdout ----
Test executable failed (exit status: 101).

failures:
    src/lib.rs - add (line 7)

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.12s


running 1 test
test src/lib.rs - add (line 11) - compile fail ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.07s

all doctests ran in 0.49s; merged doctests compilation took 0.29s
error: doctest failed, to rerun pass `--doc`
error: 3 targets failed:
    `--lib`
    `--test it`
    `--doc`
"""

CARGO_COMPILE_ERROR = """   Compiling my-crate v0.1.0 (/tmp/rt)
error[E0308]: mismatched types
 --> tests/it.rs:7:21
  |
7 | fn broken() -> u8 { "x" }
  |                --   ^^^ expected `u8`, found `&str`

For more information about this error, try `rustc --explain E0308`.
error: could not compile `my-crate` (test "it") due to 1 previous error
error: could not compile `my-crate` (lib test) due to 1 previous error
warning: build failed, waiting for other jobs to finish...
"""


def test_cargo_binaries_doctests_and_forged_lines():
    run = runner("cargo").parse({"cargo.txt": CARGO}, 101, "")
    assert run.statuses == {
        "my_crate::tests::ok": "passed",
        "my_crate::tests::bad": "failed",
        "my_crate::tests::panics": "passed",
        "my_crate::tests::slow": "skipped",
        "it::ignored_plain": "passed",
        "it::tests::ok": "failed",  # same name as in the lib binary, another test
        "doctest:my_crate::src/lib.rs - add (line 3)": "passed",
        "doctest:my_crate::src/lib.rs - add (line 7)": "failed",
        "doctest:my_crate::src/lib.rs - add (line 11)": "passed",
    }
    assert "my_crate::tests::ok2" not in run.statuses  # printed by a failing test, not a result
    assert run.collect_errors == [] and run.suite_ran


def test_cargo_repeated_line_keeps_the_worst_status():
    text = "     Running tests/it.rs (target/debug/deps/it-0d05a688098a578c)\n\nrunning 1 test\n"
    text += "test t ... ok\ntest t ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored\n"
    assert runner("cargo").parse({"cargo.txt": text}, 101, "").statuses == {"it::t": "failed"}


def test_cargo_compile_error_and_stdout_fallback():
    run = runner("cargo").parse({}, 101, CARGO_COMPILE_ERROR)  # no report file: the log is parsed
    assert run.statuses == {} and not run.suite_ran
    assert run.collect_errors == ["it", "my_crate"]


def test_cargo_old_header_without_source_path():
    text = "     Running target/debug/deps/my_lib-0123456789abcdef\n\nrunning 1 test\ntest a::b ... ok\n\n"
    text += "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    run = runner("cargo").parse({"cargo.txt": text}, 0, "")
    assert run.statuses == {"my_lib::a::b": "passed"} and run.suite_ran


def test_cargo_command_filters():
    spec = runner("cargo")
    cmd = spec.command(["my_crate::tests::ok", "it::tests::ok"], out_dir="/o")
    assert cmd.endswith("cargo test --no-fail-fast -- --exact tests::ok 2>&1 | tee /o/cargo.txt")
    assert "set -o pipefail" in cmd
    # rustdoc splits filters on spaces, so a doctest is selected by its file, and --exact must go.
    cmd = spec.command(["my_crate::tests::ok", "doctest:my_crate::src/lib.rs - add (line 3)"], out_dir="/o")
    assert "cargo test --no-fail-fast -- tests::ok src/lib.rs 2>&1" in cmd
    assert "cargo test --no-fail-fast 2>&1" in spec.command([], out_dir="/o")


# ---------------------------------------------------------------------------------------------------- jest / vitest

# jest 30 `--json` (noise fields trimmed): file names are absolute; cwd.txt holds the repository root.
JEST = r"""{"numFailedTestSuites":2,"numFailedTests":1,"numPassedTestSuites":1,"numPassedTests":3,
"numPendingTestSuites":0,"numPendingTests":1,"numRuntimeErrorTestSuites":1,"numTodoTests":1,"numTotalTestSuites":3,
"numTotalTests":6,"openHandles":[],"startTime":1796022779869,"success":false,"wasInterrupted":false,"testResults":[
{"assertionResults":[
 {"ancestorTitles":["math","add"],"duration":6,"failureMessages":[],"fullName":"math add adds","status":"passed",
  "title":"adds"},
 {"ancestorTitles":["math","add"],"duration":5,"failureMessages":["Error: expect(received).toBe(expected)"],
  "fullName":"math add fails (on purpose)","status":"failed","title":"fails (on purpose)"},
 {"ancestorTitles":["math","add"],"duration":null,"failureMessages":[],"fullName":"math add skipped one",
  "status":"pending","title":"skipped one"},
 {"ancestorTitles":["math","add"],"duration":null,"failureMessages":[],"fullName":"math add later","status":"todo",
  "title":"later"},
 {"ancestorTitles":[],"duration":1,"failureMessages":[],"fullName":"top level","status":"passed","title":"top level"}],
 "endTime":1796022780596,"message":"  \u25cf math \u203a add \u203a fails (on purpose)\n",
 "name":"/work/repo/src/a/math.test.js","startTime":1796022780045,"status":"failed","summary":""},
{"assertionResults":[
 {"ancestorTitles":["math","add"],"duration":1,"failureMessages":[],"fullName":"math add adds","status":"passed",
  "title":"adds"}],
 "endTime":1796022780600,"message":"","name":"/work/repo/src/b/math.test.js","startTime":1796022780100,
 "status":"passed"},
{"assertionResults":[],"endTime":1796022780610,
 "message":"  \u25cf Test suite failed to run\n\n    Cannot find module './does-not-exist' from 'src/b/broken.test.js'",
 "name":"/work/repo/src/b/broken.test.js","startTime":1796022780200,"status":"failed","summary":""}]}
"""

# vitest 4.1 `--reporter=json` (its schema follows jest's; skipped and todo have their own statuses).
VITEST = r"""{"numTotalTestSuites":4,"numPassedTestSuites":0,"numFailedTestSuites":4,"numPendingTestSuites":0,
"numTotalTests":5,"numPassedTests":2,"numFailedTests":1,"numPendingTests":1,"numTodoTests":1,"startTime":1796022790704,
"success":false,"testResults":[
{"assertionResults":[],"startTime":1796022790704,"endTime":1796022790704,"status":"failed",
 "message":"Cannot find module './does-not-exist.mjs' imported from /work/repo/v/broken.test.mjs",
 "name":"/work/repo/v/broken.test.mjs"},
{"assertionResults":[
 {"ancestorTitles":["math","add"],"fullName":"math add adds","status":"passed","title":"adds","duration":2.9,
  "failureMessages":[],"meta":{}},
 {"ancestorTitles":["math","add"],"fullName":"math add fails (on purpose)","status":"failed",
  "title":"fails (on purpose)","duration":11.9,"failureMessages":["AssertionError: expected 3 to be 4"],"meta":{}},
 {"ancestorTitles":["math","add"],"fullName":"math add skipped one","status":"skipped","title":"skipped one",
  "failureMessages":[],"meta":{}},
 {"ancestorTitles":["math","add"],"fullName":"math add later","status":"todo","title":"later","failureMessages":[],
  "meta":{}},
 {"ancestorTitles":[],"fullName":"top level","status":"passed","title":"top level","duration":0.4,
  "failureMessages":[],"meta":{}}],
 "startTime":1796022791351,"endTime":1796022791367.3823,"status":"failed","message":"",
 "name":"/work/repo/v/math.test.mjs"}]}
"""


def test_jest_nested_describes_same_titles_in_two_files_and_broken_suite():
    run = runner("jest").parse({"jest.json": JEST, "cwd.txt": "/work/repo\n"}, 1, "")
    assert run.statuses == {
        "src/a/math.test.js > math > add > adds": "passed",
        "src/a/math.test.js > math > add > fails (on purpose)": "failed",
        "src/a/math.test.js > math > add > skipped one": "skipped",
        "src/a/math.test.js > math > add > later": "skipped",
        "src/a/math.test.js > top level": "passed",
        "src/b/math.test.js > math > add > adds": "passed",
    }
    assert run.collect_errors == ["src/b/broken.test.js"] and run.suite_ran and run.runner == "jest"


def test_vitest_report():
    run = runner("vitest").parse({"vitest.json": VITEST, "cwd.txt": "/work/repo"}, 1, "")
    assert run.statuses == {
        "v/math.test.mjs > math > add > adds": "passed",
        "v/math.test.mjs > math > add > fails (on purpose)": "failed",
        "v/math.test.mjs > math > add > skipped one": "skipped",
        "v/math.test.mjs > math > add > later": "skipped",
        "v/math.test.mjs > top level": "passed",
    }
    assert run.collect_errors == ["v/broken.test.mjs"] and run.suite_ran


@pytest.mark.parametrize("text", ["", JEST[: len(JEST) // 2], '{"numTotalTestSuites": 0, "testResults": []}'])
def test_jest_unreadable_or_empty_report_did_not_run(text):
    run = runner("jest").parse({"jest.json": text}, 1, "")
    assert run.statuses == {} and not run.suite_ran


def test_js_commands_select_files_and_full_names():
    ids = ["src/a/math.test.js > math > add > fails (on purpose)", "src/[id].test.ts > top level"]
    jest = runner("jest").command(ids, out_dir="/o")
    assert jest.startswith("mkdir -p /o && rm -f /o/jest.json && pwd > /o/cwd.txt && printf ")
    words = shlex.split(jest.split(" && ")[-1])
    assert words[:4] == ["CI=true", "NODE_ENV=${NODE_ENV:-test}", "node", "/o/hf-jest.cjs"]  # CI: no new snapshot
    assert words[words.index("/o/hf-jest.cjs") + 1 : words.index("/o/hf-jest.cjs") + 3] == ["--ci", "--runInBand"]
    assert words[-3:] == ["--runTestsByPath", "src/a/math.test.js", "src/[id].test.ts"]
    pattern = re.compile(words[words.index("-t") + 1])  # the pattern only uses syntax JS and Python share
    assert pattern.match("math add fails (on purpose)") and pattern.match("top level")
    assert not pattern.match("math add fails (on purpose) twice") and not pattern.match("math add fails XonpurposeX")
    vitest = runner("vitest").command(ids, out_dir="/o")
    assert "npx vitest run --reporter=default --reporter=json --outputFile=/o/vitest.json -t " in vitest
    assert shlex.split(vitest)[-2:] == ["src/a/math.test.js", "src/[id].test.ts"]


FAKE_RUNNER = """const fs = require('fs');
exports.%s = (args) =>
  fs.writeFileSync('seen.json', JSON.stringify({argv: process.argv.slice(1), args, node: process.execArgv}));
"""


@pytest.mark.parametrize(
    ("package", "module", "call"), [("jest", "index.js", "run"), ("mocha", "lib/cli/cli.js", "main")]
)
def test_a_js_runners_options_never_reach_the_program_under_test(tmp_path, package, module, call):
    """The runner runs in the test process (jest in band, mocha always): a test reading process.argv (a CLI
    library's `program.parse()`) must see no `--ci` or `--reporter`; the runner still gets every option."""
    entry = tmp_path / "node_modules" / package / module
    entry.parent.mkdir(parents=True)
    entry.write_text(FAKE_RUNNER % call)
    (tmp_path / "node_modules" / package / "package.json").write_text(f'{{"name": "{package}", "main": "{module}"}}')
    command = in_process(package, package if call == "run" else f"{package}/lib/cli/cli", call, str(tmp_path))
    done = subprocess.run(["bash", "-c", f"{command} --ci --reporter tap 'a b.test.js'"], cwd=tmp_path, timeout=60)
    assert done.returncode == 0
    seen = json.loads((tmp_path / "seen.json").read_text())
    # nor does node's own `-e` (commander reads every argument as the user's when node runs `--eval`)
    assert seen == {"argv": [package], "args": ["--ci", "--reporter", "tap", "a b.test.js"], "node": []}


def test_a_test_that_calls_process_exit_fails_alone_and_the_run_goes_on(tmp_path):
    """A CLI library's code exits on an error (at base the feature is missing): jest, in the test process, would end
    the whole run with no report. Through the runner's test frame the exit throws in the test; the runner's own
    exit still ends the process."""
    modules = tmp_path / "node_modules"
    (modules / "jest-runner" / "build").mkdir(parents=True)
    (modules / "jest-runner" / "build" / "runTest.js").write_text("exports.call = (test) => test();\n")
    (modules / "jest").mkdir()
    (modules / "jest" / "index.js").write_text(
        "const fs = require('fs'), {call} = require('../jest-runner/build/runTest.js');\n"
        "exports.run = (args) => {\n"
        "  try { call(() => process.exit(3)); fs.writeFileSync('seen.txt', 'went on'); }\n"
        "  catch (error) { fs.writeFileSync('seen.txt', error.message); }\n"
        "  process.exit(7);\n};\n"
    )
    command = in_process("jest", "jest", "run", str(tmp_path), test_frame=JEST_TEST_FRAME)
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, timeout=60)
    assert (tmp_path / "seen.txt").read_text() == "process.exit(3) was called"
    assert done.returncode == 7


def test_a_memory_address_in_a_test_name_is_the_same_in_every_run():
    """testify: subtests named after their arguments hold pointers (`(*assert.A)(0xc0003a70e0)`), different in every
    run, so each run's tests were new and graded as FAIL_TO_PASS. Every address reads the same."""
    text = "\n".join(
        '{"Action":"%s","Package":"m/assert","Test":"TestContains/Contains([]*assert.A{(*assert.A)(%s)})"}'
        % (action, address)
        for action, address in (("run", "0xc0003a70e0"), ("pass", "0xc0003a70e0"), ("fail", "0xc000112233"))
    )
    run = runner("go").parse({"go.jsonl": text}, 1, "")
    assert run.statuses == {"m/assert::TestContains/Contains([]*assert.A{(*assert.A)(0x…)})": "failed"}


def test_a_go_line_test2json_cut_in_pieces_is_one_line_again():
    # mapstructure (twelfth held-out set): "...map[string]i" / "nterface {}(nil)..." read as two lines
    events = [
        {"Action": "run", "Package": "m/p", "Test": "TestMap"},
        {"Action": "output", "Package": "m/p", "Test": "TestMap", "Output": "    p_test.go:4: got map[string]i"},
        {"Action": "output", "Package": "m/p", "Test": "TestMap", "Output": "nterface {}(nil)\n"},
        {"Action": "output", "Package": "m/p", "Test": "TestMap", "Output": "    p_test.go:5: second  \n"},
        {"Action": "fail", "Package": "m/p", "Test": "TestMap", "Elapsed": 0},
    ]
    run = runner("go").parse({"go.jsonl": "\n".join(json.dumps(event) for event in events)}, 1, "")
    assert run.messages == {"m/p::TestMap": "p_test.go:4: got map[string]interface {}(nil)\n    p_test.go:5: second"}


def test_jest_run_in_process_sets_node_env_to_test_as_its_own_command_does(tmp_path):
    """dayjs (nineteenth set): its Babel config's presets are under `env.test`; jest's command sets NODE_ENV to
    `test`, jest run in this process did not, and every test file failed on `import`. A stand-in for jest's module
    (as jest would, it runs with the arguments given) writes what NODE_ENV it saw; one the sandbox sets is kept."""
    import os

    module = tmp_path / "node_modules" / "jest"
    module.mkdir(parents=True)
    (module / "package.json").write_text('{"name": "jest", "main": "index.js"}')
    (module / "index.js").write_text(
        "exports.run = (args) => require('fs').writeFileSync(args.find((arg) => arg.startsWith('--outputFile='))"
        ".split('=')[1], JSON.stringify({testResults: [], nodeEnv: process.env.NODE_ENV}));\n"
    )
    command = runner("jest").command([], out_dir=str(tmp_path / "out"))
    environment = {key: value for key, value in os.environ.items() if key != "NODE_ENV"}
    for preset, seen in ((None, "test"), ("production", "production")):
        run_environment = environment | ({"NODE_ENV": preset} if preset else {})
        subprocess.run(["bash", "-c", command], cwd=tmp_path, env=run_environment, timeout=60, check=True)
        assert json.loads((tmp_path / "out" / "jest.json").read_text())["nodeEnv"] == seen


def test_jest_titles_that_are_not_strings_read_as_javascript_shows_them():
    """dayjs (nineteenth set): `it(testArr, ...)` over an array; jest 22 reported the array as the title, and
    reading the report crashed validation."""
    report = {
        "numTotalTestSuites": 1,
        "testResults": [
            {
                "name": "/work/repo/test/plugin/arraySupport.test.js",
                "status": "passed",
                "assertionResults": [
                    {"ancestorTitles": ["parse array"], "title": [2018, 5, "x"], "status": "passed"},
                    {"ancestorTitles": None, "title": 7, "status": "failed"},
                ],
            }
        ],
    }
    run = runner("jest").parse({"jest.json": json.dumps(report), "cwd.txt": "/work/repo\n"}, 1, "")
    assert run.statuses == {
        "test/plugin/arraySupport.test.js > parse array > 2018,5,x": "passed",
        "test/plugin/arraySupport.test.js > 7": "failed",
    }
