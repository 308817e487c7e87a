"""Test runners: pytest is really run with our plugin, and the runner registry; go, cargo, jest and
vitest (canned reports of the real tools) are in test_go_cargo_js_runners.py."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.envs import runners
from harnessforge.envs.runners import PLUGIN_DIR, RESULTS_DIR, parse_junit, runner
from harnessforge.errors import ConfigError

PLUGINS = Path(runners.__file__).parent / "plugins"

# ---------------------------------------------------------------------------------------------------- pytest

MIX = """
import pytest

def test_pass():
    assert True

def test_fail():
    assert 1 == 2

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_fixture_error(broken):
    pass

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_teardown_error(bad_teardown):
    pass

@pytest.mark.parametrize("word", ["a b", "c"])
def test_words(word):
    assert word == "a b"

class TestGroup:
    def test_method(self):
        pass
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run_pytest(project: Path, out: Path, test_ids: list[str] | None = None):
    """Run the runner's command with bash from the project root, as a sandbox would, and parse the report."""
    spec = runner("pytest")
    command = spec.command(test_ids or [], out_dir=str(out), plugin_dir=str(PLUGINS))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # `python` is this venv's
    proc = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    files = {p.name: p.read_text() for p in out.iterdir()} if out.exists() else {}
    return spec.parse(files, proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def mix_project(tmp_path_factory) -> Path:
    # addopts `-x` would stop at the first failure: the command must undo it without dropping addopts.
    return _write(
        tmp_path_factory.mktemp("mix"),
        {
            "pytest.ini": "[pytest]\naddopts = -x\n",
            "tests/test_mix.py": MIX,
            "tests/test_broken.py": "import module_that_does_not_exist\n\ndef test_never():\n    pass\n",
        },
    )


def test_pytest_real_run_reports_every_status(mix_project, tmp_path):
    run = run_pytest(mix_project, tmp_path / "out")
    m = "tests/test_mix.py::"
    assert run.statuses == {
        m + "test_pass": "passed",
        m + "test_fail": "failed",
        m + "test_fixture_error": "error",
        m + "test_skipped": "skipped",
        m + "test_xfail": "xfailed",
        m + "test_xpass_strict": "failed",
        m + "test_teardown_error": "error",
        m + "test_words[a b]": "passed",
        m + "test_words[c]": "failed",
        m + "TestGroup::test_method": "passed",
    }, run.log_tail
    assert run.collect_errors == ["tests/test_broken.py"]
    assert run.status("tests/test_broken.py::test_never") == "missing"
    assert run.suite_ran and run.exit_code == 1 and run.runner == "pytest"
    assert "module_that_does_not_exist" in run.log_tail


def test_pytest_selected_ids_run_alone(mix_project, tmp_path):
    ids = ["tests/test_mix.py::test_words[a b]", "tests/test_mix.py::TestGroup::test_method"]
    run = run_pytest(mix_project, tmp_path / "out", ids)
    assert run.statuses == dict.fromkeys(ids, "passed")
    assert run.collect_errors == [] and run.suite_ran and run.exit_code == 0


def test_pytest_fake_passed_lines_on_stdout_are_ignored(tmp_path):
    conftest = (
        "def pytest_sessionfinish(session):\n"
        "    print('tests/test_x.py::test_x PASSED')\n"
        "    print('PASSED tests/test_x.py::test_x')\n"
        "    print('===== 1 passed in 0.01s =====')\n"
    )
    project = _write(
        tmp_path / "p",
        {"conftest.py": conftest, "tests/test_x.py": "def test_x():\n    print('PASSED')\n    assert 0\n"},
    )
    run = run_pytest(project, tmp_path / "out")
    assert "PASSED tests/test_x.py::test_x" in run.log_tail  # the forgery really reached the log
    assert run.statuses == {"tests/test_x.py::test_x": "failed"}


def test_pytest_ids_stay_relative_to_the_repo_when_rootdir_is_a_subdirectory(tmp_path):
    # With tests/pytest.ini and a path argument, pytest's rootdir becomes tests/; ids must not change with it.
    project = _write(tmp_path / "p", {"tests/pytest.ini": "[pytest]\n", "tests/test_x.py": "def test_a():\n    pass\n"})
    run = run_pytest(project, tmp_path / "out", ["tests/test_x.py::test_a"])
    assert run.statuses == {"tests/test_x.py::test_a": "passed"}, run.log_tail


def test_pytest_command_shape():
    cmd = runner("pytest").command(["tests/t.py::test_p[a b]"])
    assert f"HF_RESULTS={RESULTS_DIR}/pytest.jsonl PYTHONPATH={PLUGIN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}" in cmd
    words = shlex.split(cmd.split("python -m pytest", 1)[1])
    assert words[:2] == ["-p", "hf_results"] and words[-1] == "tests/t.py::test_p[a b]"
    assert "--continue-on-collection-errors" in words and "--maxfail=0" in words


def _jsonl(*lines: str) -> dict[str, str]:
    return {"pytest.jsonl": "\n".join(lines) + "\n"}


START = '{"event": "session_start", "pytest": "9.2.0", "rootdir": "/repo"}'
FINISH = '{"event": "session_finish", "exitstatus": 1}'


def _t(nodeid: str, when: str, outcome: str, wasxfail: bool = False) -> str:
    xfail = "true" if wasxfail else "false"
    return f'{{"event": "test", "nodeid": "{nodeid}", "when": "{when}", "outcome": "{outcome}", "wasxfail": {xfail}}}'


def test_pytest_truncated_report_keeps_what_was_written_but_the_suite_did_not_finish():
    files = _jsonl(START, _t("t.py::a", "setup", "passed"), _t("t.py::a", "call", "passed"), '{"event": "test", "no')
    run = runner("pytest").parse(files, 137, "Killed")
    assert run.statuses == {"t.py::a": "passed"} and not run.suite_ran and run.exit_code == 137


def test_pytest_garbage_lines_are_skipped():
    files = _jsonl(START, "[1, 2]", "\x00\x00garbage", '"text"', _t("t.py::a", "call", "failed"), FINISH)
    run = runner("pytest").parse(files, 1, "")
    assert run.statuses == {"t.py::a": "failed"} and run.suite_ran


def test_pytest_phase_rules():
    files = _jsonl(
        START,
        _t("t.py::xpass", "call", "passed", wasxfail=True),  # non-strict XPASS counts as a pass
        _t("t.py::norun", "setup", "skipped", wasxfail=True),  # xfail(run=False) is decided at setup
        _t("t.py::flaky", "call", "rerun"),  # pytest-rerunfailures: only the last attempt counts
        _t("t.py::flaky", "call", "passed"),
        _t("t.py::both", "call", "failed"),  # a failing call and teardown stays a failure
        _t("t.py::both", "teardown", "failed"),
        '{"event": "collect_error", "nodeid": "pkg/test_c.py::TestC", "longrepr": "boom"}',
        FINISH,
    )
    run = runner("pytest").parse(files, 1, "")
    assert run.statuses == {
        "t.py::xpass": "passed",
        "t.py::norun": "xfailed",
        "t.py::flaky": "passed",
        "t.py::both": "failed",
    }
    assert run.collect_errors == ["pkg/test_c.py"]


def test_pytest_without_any_report_did_not_run():
    run = runner("pytest").parse({}, 4, "ERROR: usage: ...\n" + "x" * 5000)
    assert run.statuses == {} and not run.suite_ran and len(run.log_tail) == 4000


# JUnit written by pytest 9.2 for the MIX project (trimmed).
PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="3" failures="3" skipped="2" tests="12" time="0.088">
<testcase classname="" name="tests.test_broken" time="0.000"><error message="collection failure"
>ImportError while importing test module</error></testcase>
<testcase classname="tests.test_a" name="test_pass" time="0.000" />
<testcase classname="tests.test_a" name="test_fail" time="0.000"><failure message="assert False"
>E   assert False</failure></testcase>
<testcase classname="tests.test_a" name="test_err" time="0.000"><error
message="failed on setup with &quot;RuntimeError: x&quot;">E   RuntimeError: x</error></testcase>
<testcase classname="tests.test_a" name="test_skip" time="0.000"><skipped type="pytest.skip" message="no"
>/tmp/pt1/tests/test_a.py:8: no</skipped></testcase>
<testcase classname="tests.test_a" name="test_xfail" time="0.000"><skipped type="pytest.xfail" message="known"
/></testcase>
<testcase classname="tests.test_a" name="test_param[a b]" time="0.001" />
<testcase classname="tests.test_a.TestK" name="test_m" time="0.000" /></testsuite></testsuites>"""


def test_junit_fallback():
    run = parse_junit(PYTEST_JUNIT, "pytest", exit_code=1, log="log")
    assert run.statuses == {
        "tests.test_a::test_pass": "passed",
        "tests.test_a::test_fail": "failed",
        "tests.test_a::test_err": "error",
        "tests.test_a::test_skip": "skipped",
        "tests.test_a::test_xfail": "xfailed",
        "tests.test_a::test_param[a b]": "passed",
        "tests.test_a.TestK::test_m": "passed",
    }
    assert run.collect_errors == ["tests/test_broken.py"] and run.suite_ran and run.exit_code == 1
    # The pytest runner falls back to a JUnit file when its own report is absent.
    assert runner("pytest").parse({"junit.xml": PYTEST_JUNIT}, 1, "").statuses == run.statuses


@pytest.mark.parametrize("text", ["", "<testsuites><testsuite", "not xml", "<html/>"])
def test_junit_unreadable(text):
    run = parse_junit(text, "pytest")
    assert run.statuses == {} and not run.suite_ran


# ---------------------------------------------------------------------------------------------------- registry


def test_test_files_of_matches_collect_error_spelling():
    assert runners.test_files_of("pytest", ["tests/t.py::K::test[a::b]", "t2.py::x"]) == ["tests/t.py", "t2.py"]
    assert runners.test_files_of("go", ["example.com/m/calc::TestSub/neg_one"]) == ["example.com/m/calc"]
    assert runners.test_files_of("cargo", ["it::tests::ok", "doctest:my_crate::src/lib.rs - add (line 3)"]) == [
        "it",
        "my_crate",
    ]
    assert runners.test_files_of("vitest", ["v/a.test.ts > d > t"]) == ["v/a.test.ts"]


def test_unknown_runner_is_a_config_error():
    assert sorted(runners.RUNNERS) == ["ava", "cargo", "go", "jest", "mocha", "node", "pytest", "tap", "tape", "vitest"]
    with pytest.raises(ConfigError, match="unknown test runner 'jasmine'"):
        runner("jasmine")
