"""Test runs the Dev starts from the shell are recognised and counted as `run_tests` counts them.

Pytest really runs here, with the environment the harness gives every shell command (`shell_test_env`). The
other runners' outputs in tests/fixtures/shell_tests/ were captured from the real tools: go 1.19 (the
harnessforge/base:bookworm-go image; `Time` fields dropped from the JSON), cargo 1.95 (and 1.65 from the
bookworm-rust image, the old panic format), jest 30.5 and vitest 4.1 (vitest colours even a pipe: kept as is).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.envs import shell_tests
from harnessforge.envs.shell_tests import PYTEST_REPORT, ShellTestRun, runners_started, shell_test_env, shell_test_run

FIXTURES = Path(__file__).parent / "fixtures" / "shell_tests"
PLUGINS = Path(shell_tests.__file__).parent / "plugins"


def sample(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


# ---------------------------------------------------------------------------------------------------- pytest


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run_in_shell(project: Path, results: Path, command: str, with_plugin: bool = True) -> tuple[int, str, dict]:
    """Run `command` with bash from the project root as the sandbox runs the Dev's shell commands."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HF_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # `python` is this venv's
    if with_plugin:
        env |= shell_test_env(str(results))
    results.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    reports = {path.name: path.read_text() for path in results.iterdir()}
    return proc.returncode, proc.stdout + proc.stderr, reports


@pytest.fixture
def project(tmp_path) -> Path:
    return _write(
        tmp_path / "repo",
        {
            "tests/test_calc.py": "def test_adds():\n    assert 1 + 1 == 2\n\n"
            "def test_subtracts():\n    assert 3 - 1 == 1\n",
            "Makefile": "check:\n\tpython -m pytest -q tests\n",
        },
    )


def test_shell_test_env_names_only_the_report():
    assert shell_test_env("/hf/shell/") == {"HF_RESULTS": f"/hf/shell/{PYTEST_REPORT}"}


def test_a_command_that_sets_its_own_pythonpath_still_reports(project, tmp_path):
    """Seen on pallets/click: `PYTHONPATH=src pytest` replaced ours, and a plugin named by PYTEST_PLUGINS then
    failed every pytest ("Error importing plugin"). The plugin is an installed entry point instead."""
    command = "PYTHONPATH=/nowhere python -m pytest -q"
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", command)
    assert "Error importing plugin" not in output and "test_subtracts" in output, output
    run = shell_test_run(command, exit_code, output, reports)
    assert run is not None and (run.runner, run.passed, run.failed, run.total) == ("pytest", 1, 1, 2), output


def test_a_real_pytest_started_from_the_shell_is_read_from_our_report(project, tmp_path):
    command = "python -m pytest -q"
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", command)
    assert exit_code == 1 and PYTEST_REPORT in reports, output
    run = shell_test_run(command, exit_code, output, reports)
    assert run == ShellTestRun(
        runner="pytest",
        passed=1,
        failed=1,
        total=2,
        failing=("tests/test_calc.py::test_subtracts",),
        last_error="assert (3 - 1) == 1",
    ), output


def test_a_collection_error_stops_pytest_and_is_the_failure(project, tmp_path):
    _write(project, {"tests/test_broken.py": "import module_that_does_not_exist\n"})
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "python -m pytest -q")
    assert "Interrupted: 1 error during collection" in output
    run = shell_test_run("python -m pytest -q", exit_code, output, reports)
    missing = "ModuleNotFoundError: No module named 'module_that_does_not_exist'"
    assert run == ShellTestRun("pytest", 0, 1, 0, ("tests/test_broken.py",), missing), output
    # where the Dev lets the healthy files run, failing tests come first, then the collection error
    command = "pytest --continue-on-collection-errors"
    exit_code, output, reports = run_in_shell(project, tmp_path / "again", command)
    run = shell_test_run(command, exit_code, output, reports)
    assert run.failing == ("tests/test_calc.py::test_subtracts", "tests/test_broken.py") and run.failed == 2


def test_pytest_behind_a_makefile_target_is_still_read_from_the_report(project, tmp_path):
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "make check")
    run = shell_test_run("make check", exit_code, output, reports)
    assert run is not None and run.runner == "pytest" and (run.passed, run.failed) == (1, 1), output


def test_our_own_run_tests_flag_and_the_entry_point_together_register_the_plugin_once(project, tmp_path):
    command = f"PYTHONPATH={PLUGINS} python -m pytest -q -p hf_results"  # as our runner starts pytest
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", command)
    calls = [r["nodeid"] for r in map(json.loads, reports[PYTEST_REPORT].splitlines()) if r.get("when") == "call"]
    assert sorted(calls) == ["tests/test_calc.py::test_adds", "tests/test_calc.py::test_subtracts"], output
    assert reports[PYTEST_REPORT].count('"session_start"') == 1


def test_a_suite_running_pytest_itself_does_not_add_its_inner_tests(tmp_path):
    # pytester runs inner sessions inline and in a subprocess, both loading the installed plugin.
    inner = "pytester.makepyfile('def test_inner():\\n    assert 0\\n')"
    project = _write(
        tmp_path / "repo",
        {
            "tests/test_nest.py": "pytest_plugins = ['pytester']\n\n"
            f"def test_inline(pytester):\n    {inner}\n    pytester.runpytest().assert_outcomes(failed=1)\n\n"
            f"def test_subprocess(pytester):\n    {inner}\n"
            "    pytester.runpytest_subprocess().assert_outcomes(failed=1)\n"
        },
    )
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "python -m pytest -q tests")
    run = shell_test_run("python -m pytest -q tests", exit_code, output, reports)
    assert run == ShellTestRun("pytest", 2, 0, 2, (), ""), output
    assert reports[PYTEST_REPORT].count('"session_start"') == 1


def test_a_conftest_that_fails_to_import_is_a_collection_error_read_from_the_console(tmp_path):
    # pytest stops before its session starts, so our report is never written.
    files = {"tests/conftest.py": "import nope\n", "tests/test_a.py": "def test_a():\n    pass\n"}
    project = _write(tmp_path / "repo", files)
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "pytest tests")
    assert PYTEST_REPORT not in reports
    run = shell_test_run("pytest tests", exit_code, output, reports)
    assert run == ShellTestRun(
        "pytest", 0, 1, 0, (str(project / "tests" / "conftest.py"),), "ModuleNotFoundError: No module named 'nope'"
    ), output


def test_without_our_report_pytest_is_read_from_its_console_summary(project, tmp_path):
    # As under tox, which passes the Dev's environment on filtered.
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "python -m pytest", with_plugin=False)
    assert reports == {}
    run = shell_test_run("python -m pytest", exit_code, output, reports)
    expected = ShellTestRun("pytest", 1, 1, 2, ("tests/test_calc.py::test_subtracts",), "assert (3 - 1) == 1")
    assert run == expected, output
    assert shell_test_run("tox -e py311", exit_code, output, {}) == expected


@pytest.mark.parametrize("command", ["python -m pytest -q --collect-only", "python -m pytest -q -k nothing_matches"])
def test_a_pytest_session_without_tests_is_no_test_run(project, tmp_path, command):
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", command + " tests/test_calc.py")
    assert '"session_start"' in reports[PYTEST_REPORT]
    assert shell_test_run(command, exit_code, output, reports) is None
    assert shell_test_run(command, exit_code, output, {}) is None  # nor its console


def test_the_last_error_falls_back_to_the_report_when_the_console_has_no_tracebacks(project, tmp_path):
    _write(project, {"tests/test_broken.py": "import module_that_does_not_exist\n"})
    exit_code, output, reports = run_in_shell(project, tmp_path / "results", "pytest -q --tb=no tests/test_broken.py")
    run = shell_test_run("pytest", exit_code, output, reports)
    assert run.failing == ("tests/test_broken.py",)
    assert run.last_error == "ModuleNotFoundError: No module named 'module_that_does_not_exist'", output


def test_commands_that_only_mention_pytest_are_no_test_runs(project, tmp_path):
    _, output, reports = run_in_shell(project, tmp_path / "results", "python -m pytest -q tests/test_calc.py")
    for command in ("grep -rn pytest .", "cat pytest.log", "echo python -m pytest", "python run.py -m pytest"):
        assert shell_test_run(command, 0, output, {}) is None, command
    assert shell_test_run("pytest --version", 0, "pytest 9.2.0\n", {}) is None


# ---------------------------------------------------------------------------------------------------- go

GO_FAILING = ("example.com/m/calc::TestSub", "example.com/m/calc::TestSub/neg_one", "example.com/m/store::TestPanics")
BUILD_ERROR = "broken/broken_test.go:6:10: too many arguments in call to Name"


def test_go_json_is_read_by_the_go_runners_parser():
    run = shell_test_run("go test -json ./...", 2, sample("go_json"), {})
    assert run == ShellTestRun("go", 5, 4, 9, (*GO_FAILING, "example.com/m/broken"), BUILD_ERROR)
    assert shell_test_run("go test -json ./ok/", 0, sample("go_json_ok"), {}) == ShellTestRun("go", 2, 0, 2, (), "")


def test_go_verbose_text_counts_as_its_json_does():
    assert shell_test_run("go test -v ./...", 2, sample("go_v"), {}) == shell_test_run(
        "go test -json ./...", 2, sample("go_json"), {}
    )
    assert shell_test_run("go test -v ./ok/", 0, sample("go_ok_v"), {}) == ShellTestRun("go", 2, 0, 2, (), "")


def test_go_plain_text_counts_the_failures_it_shows():
    run = shell_test_run("cd svc && go test ./...", 2, sample("go_plain"), {})
    # without -v only failing tests are listed: TestAdd, TestSkip and the `ok` package's tests are not shown
    assert run == ShellTestRun("go", 0, 4, 3, (*GO_FAILING, "example.com/m/broken"), BUILD_ERROR)
    passing = shell_test_run("go test ./ok/", 0, "ok  \texample.com/m/ok\t(cached)\n", {})
    assert passing == ShellTestRun("go", 0, 0, 0, (), "")


def test_go_first_failure_message_of_a_test_and_of_a_panic():
    without_build = sample("go_v").split("=== RUN   TestAdd", 1)[1]
    assert shell_test_run("go test -v ./...", 1, without_build, {}).last_error == (
        "calc_test.go:19: Sub(1, 2) = 0, want -1"
    )
    store_only = sample("go_plain").split("ok  \texample.com/m/ok\t0.003s\n", 1)[1]
    run = shell_test_run("go test ./store/", 1, store_only, {})
    assert run.failing == ("example.com/m/store::TestPanics",)
    assert run.last_error == "panic: assignment to entry in nil map [recovered]"


def test_go_build_failure_and_timeout_are_errors_of_their_package():
    assert shell_test_run("go test ./broken/", 2, sample("go_broken"), {}) == ShellTestRun(
        "go", 0, 1, 0, ("example.com/m/broken",), BUILD_ERROR
    )
    assert shell_test_run("go test -timeout 1s ./slow/", 1, sample("go_timeout"), {}) == ShellTestRun(
        "go", 0, 1, 0, ("example.com/m/slow",), "panic: test timed out after 1s"
    )


def test_go_that_ran_no_test_is_none():
    assert shell_test_run("go test ./...", 1, "go: go.mod file not found in current directory\n", {}) is None
    assert shell_test_run("go test ./empty/", 0, "?   \texample.com/m/empty\t[no test files]\n", {}) is None
    assert shell_test_run("go vet ./...", 1, sample("go_plain"), {}) is None
    assert shell_test_run("cat go_plain.txt", 0, sample("go_plain"), {}) is None


# ---------------------------------------------------------------------------------------------------- cargo

CARGO_FAILING = ("calc::tests::panics", "calc::tests::subtracts")


def test_cargo_is_read_by_the_cargo_runners_parser():
    run = shell_test_run("cargo test --no-fail-fast", 101, sample("cargo_fail"), {})
    # the panicking test printed "test foo ... ok" into its captured output: not a result
    assert run == ShellTestRun("cargo", 3, 2, 6, CARGO_FAILING, "assertion `left == right` failed")
    assert shell_test_run("cargo test", 0, sample("cargo_pass"), {}) == ShellTestRun("cargo", 5, 0, 6, (), "")


def test_cargo_panic_message_before_rust_1_73_is_on_the_panicked_at_line():
    run = shell_test_run("cargo test", 101, sample("cargo_fail_1_65"), {})
    assert run == ShellTestRun("cargo", 3, 2, 6, CARGO_FAILING, "index out of bounds: the len is 0 but the index is 1")


def test_cargo_compile_error_of_a_test_target():
    assert shell_test_run("cargo test", 101, sample("cargo_build"), {}) == ShellTestRun(
        "cargo", 0, 1, 0, ("api",), "cannot find function `mul` in crate `calc`"
    )
    assert shell_test_run("cargo build", 101, sample("cargo_build"), {}) is None
    assert shell_test_run("cargo test", 101, "error: could not find `Cargo.toml` in `/repo`\n", {}) is None


# ---------------------------------------------------------------------------------------------------- jest

JS_FAILING = ("src/math.test.js > math > nested > throws", "src/math.test.js > math > subtracts", "src/broken.test.js")


@pytest.mark.parametrize(
    ("command", "name"),
    [("npx jest", "jest_fail"), ("npx jest --verbose", "jest_verbose"), ("npm test", "jest_npm_fail")],
)
def test_jest_failures_and_a_suite_that_failed_to_run(command, name):
    run = shell_test_run(command, 1, sample(name), {})
    assert run == ShellTestRun("jest", 3, 3, 6, JS_FAILING, "expect(received).toBe(expected) // Object.is equality")


def test_jest_pass_and_a_file_that_does_not_load():
    assert shell_test_run("npx jest src/other.test.js", 0, sample("jest_pass"), {}) == ShellTestRun(
        "jest", 1, 0, 1, (), ""
    )
    assert shell_test_run("yarn jest src/broken.test.js", 1, sample("jest_broken"), {}) == ShellTestRun(
        "jest", 0, 1, 0, ("src/broken.test.js",), "Cannot find module './nope' from 'src/broken.test.js'"
    )


# ---------------------------------------------------------------------------------------------------- vitest

NOPE = "Error: Cannot find module './nope.js' imported from /repo/src/broken.test.js"


def test_vitest_coloured_output_failures_and_a_failed_suite():
    assert "\x1b[" in sample("vitest_fail")
    run = shell_test_run("npx vitest run", 1, sample("vitest_fail"), {})
    assert run == ShellTestRun("vitest", 3, 3, 6, JS_FAILING, NOPE)
    run = shell_test_run("pnpm run test", 1, sample("vitest_fail"), {})
    assert run is not None and run.runner == "vitest"


def test_vitest_pass_behind_npm_test_and_a_file_that_does_not_load():
    assert shell_test_run("npm test -- src/other.test.js", 0, sample("vitest_pass"), {}) == ShellTestRun(
        "vitest", 1, 0, 1, (), ""
    )
    assert shell_test_run("npx vitest run src/broken.test.js", 1, sample("vitest_broken"), {}) == ShellTestRun(
        "vitest", 0, 1, 0, ("src/broken.test.js",), NOPE
    )


# ---------------------------------------------------------------------------------------------------- commands


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m pytest tests/ -x", [("pytest", False)]),
        ("cd app && PYTHONHASHSEED=0 timeout 60 python3 -X dev -m pytest -q", [("pytest", False)]),
        ("uv run py.test", [("pytest", False)]),
        ('bash -lc "go test ./... | tee log"', [("go", False)]),
        ("go build ./... && go test -v -run TestX ./pkg", [("go", False)]),
        ("cargo +nightly test -- --nocapture", [("cargo", False)]),
        ("npx --yes jest src", [("jest", False)]),
        ("pnpm exec vitest run", [("vitest", False)]),
        ("node node_modules/.bin/jest", [("jest", False)]),
        ("grep -rn pytest . ; cat Makefile", []),
        ("echo go test", []),
        ("npm install", []),
        ("bun test", []),
        ("git commit -m 'run pytest'", []),
    ],
)
def test_runners_are_recognised_from_the_command(command, expected):
    assert runners_started(command) == expected


@pytest.mark.parametrize("command", ["npm test", "npm run test:unit", "yarn test", "make test", "./scripts/test.sh"])
def test_test_scripts_wrap_every_runner(command):
    assert runners_started(command) == [(name, True) for name in ("pytest", "go", "cargo", "jest", "vitest")]


def test_a_wrapped_runner_needs_its_own_summary_in_the_output():
    assert shell_test_run("npm test", 1, "Error: no test specified\n", {}) is None
    assert shell_test_run("make test", 2, "make: *** No rule to make target 'test'.  Stop.\n", {}) is None
    assert shell_test_run("make test", 2, sample("go_plain"), {}).runner == "go"
    # a test file's failure header alone proves jest when jest was called, not behind a script
    cut_short = sample("jest_fail").split("Test Suites:", 1)[0]
    assert shell_test_run("npm test", 1, cut_short, {}) is None
    assert shell_test_run("npx jest", 1, cut_short, {}).failing == JS_FAILING
