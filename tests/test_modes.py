"""The seeds' experiments as run modes, through the real `openai` SDK against a local server: `probe` (only the
feature description, no hints, a short budget; the memorisation signal in the analytics, the report and the
dataset card) and `hard` (no L0, the Mentor off); each recorded on the run and on every distilled row."""

from __future__ import annotations

import json
import shlex

import pytest

from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.analytics import analyze
from harnessforge.analytics.database import connect_read_only
from harnessforge.analytics.rows import MemorisationRateRow, MilestoneSummaryRow, read_rows
from harnessforge.diffs import split_diff
from harnessforge.distill import distill
from harnessforge.errors import PlanningError
from harnessforge.export import export
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.report.report import build_report
from tests.llm_servers import OpenAIServer
from tests.test_shell_dev import MID, _rules, local  # noqa: F401  (fixture)

OC = OpenAIServer


def _turn(server: OpenAIServer, number: int, *calls: tuple[str, dict], text: str = "") -> None:
    tool_calls = [OC.tool_call(f"call_{number}_{index}", name, args) for index, (name, args) in enumerate(calls)]
    server.push(OC.completion(content=text or f"Step {number}.", tool_calls=tool_calls))


def _run(store, key, server: OpenAIServer, run_id: str, mode: str) -> list:
    agent = OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
    navigator = Navigator(store, key, agent, _rules(), run_id=run_id, backend="local", log=lambda *_: None, mode=mode)
    navigator.run([MID])
    return Recorder.open(store.milestone_run(key, run_id, MID).dir).events()


def _core_files(store, key) -> list[str]:
    ground_truth, _ = store.read_patches(key, MID)
    classifier = FileClassifier(_rules().planning)
    return [file_diff.path for file_diff in split_diff(ground_truth) if classifier.is_source(file_diff.path)]


def test_probe_mode_gives_only_the_description_no_hints_and_a_short_budget_and_flags_a_straight_find(local):  # noqa: F811
    store, key = local
    core = _core_files(store, key)
    with OpenAIServer() as server:
        _turn(server, 1, *[("bash", {"command": f"cat {shlex.quote(path)}"}) for path in core])
        _turn(server, 2, ("request_hint", {"reason": "which file?"}), text="I am stuck.")
        _turn(server, 3, ("bash", {"command": "ls -R tests"}))
        for number in range(4, 12):
            _turn(server, number, ("bash", {"command": "ls"}))
        events = _run(store, key, server, "probe", "probe")
    task = events[0].action.content
    milestone = store.load_milestone(key, MID)
    assert task.startswith(f"# {milestone.title}") and "[hint L0]" not in task and "Earlier milestones" not in task
    assert not [event for event in events if event.action.type == "hint"]  # asked, and nothing came
    summary = json.loads(store.milestone_run(key, "probe", MID).summary.read_text())
    assert summary["status"] == "STUCK" and summary["stopped_by"] == "max_turns: 10 turns"
    metadata = json.loads(store.run_metadata(key, "probe").read_text())
    assert (metadata["mode"], metadata["harness_profile"]) == ("probe", "V0")
    # issue 33: the new tests in the workspace would name the feature's files: the probe runs with them hidden
    assert metadata["test_visibility"] == "hidden"
    new_files = {test.split("::")[0].rsplit("/", 1)[-1] for test in milestone.fail_to_pass} - {"test_store.py"}
    listed = next(event.observation for event in events if event.action.args.get("command") == "ls -R tests")
    assert "test_store.py" in listed and new_files and not any(name in listed for name in new_files)

    analyze(store, _rules())
    with connect_read_only(store) as con:
        (row,) = read_rows(con, MilestoneSummaryRow, {"run_id": "probe"})
        rates = read_rows(con, MemorisationRateRow)
        columns = [column for column, *_ in con.execute("DESCRIBE memorisation_rates").fetchall()]
    assert columns == list(MemorisationRateRow.model_fields)
    assert row.mode == "probe" and row.located_ground_truth and row.located_turn == 1
    (rate,) = rates
    assert (rate.repo, rate.model, rate.probe_runs, rate.located_runs, rate.warning) == (key, "local-model", 1, 1, True)
    report = build_report(store, store.report_file()).read_text()
    assert "Memorisation probe" in report and "has likely seen this repository" in report

    distill(store, _rules(), log=lambda *_: None)
    out = store.root.parent / "probe-export"
    export(store, ["all"], out)
    card = (out / "README.md").read_text()
    assert "| probe | V0 | 1 |" in card
    assert "**Warning**: local-model located the ground truth in 1 of 1 probe runs" in card
    run_rows = [path for kind in ("sft", "dpo", "kto", "stuck_slices") for path in (out / kind).glob("*.jsonl")]
    rows = [json.loads(line) for path in run_rows for line in path.read_text().splitlines()]
    assert rows and all(row["mode"] == "probe" and row["harness_profile"] == "V0" for row in rows)
    # issue 32: every row names the plan whose milestone its run attempted (a re-plan archives the old one)
    plan_id = store.load_plan(key).plan_id
    assert row.plan_id == plan_id and all(row["plan_id"] == plan_id for row in rows)


def test_hard_mode_has_no_l0_and_no_mentor_and_still_passes_on_its_own(local):  # noqa: F811
    store, key = local
    milestone = store.load_milestone(key, MID)
    ground_truth, _ = store.read_patches(key, MID)
    repo = GitRepo(store.git_cache(key))
    writes = [
        ("write_file", {"path": file_diff.path, "content": repo.show(milestone.verify_commit, file_diff.path).decode()})
        for file_diff in split_diff(ground_truth)
        if not file_diff.deleted
    ]
    with OpenAIServer() as server:
        for number in range(1, 12):  # past the Mentor's cooldown, asking every turn
            _turn(server, number, ("bash", {"command": "python -m pytest -q tests"}), ("request_hint", {}))
        _turn(server, 12, *writes)
        _turn(server, 13, ("submit", {"message": "done"}))
        events = _run(store, key, server, "hard", "hard")
    task = events[0].action.content
    assert "[hint L0]" not in task and "Earlier milestones" in task
    assert not [event for event in events if event.action.type == "hint"]
    summary = json.loads(store.milestone_run(key, "hard", MID).summary.read_text())
    assert summary["status"] == "PASS" and summary["hints_released"] == []
    assert json.loads(store.run_metadata(key, "hard").read_text())["mode"] == "hard"


def test_an_unknown_mode_or_profile_and_a_plan_of_the_wrong_granularity_are_one_clear_error(local, run_cli):  # noqa: F811
    store, key = local
    for option, value, words in (
        ("--mode", "fast", "unknown mode 'fast'; the rules' harness.modes has: hard, per-pr, probe, standard"),
        ("--harness-profile", "V9", "unknown harness profile 'V9'; the rules' harness.harness_profiles has: V0"),
    ):
        proc = run_cli("run", key, option, value, "--sandbox", "local", "--run-id", "refused", store=store.root)
        lines = proc.stderr.splitlines()
        assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"error: {words}"), proc.stderr
        assert not store.run_dir(key, "refused").exists()  # refused before any work
    with pytest.raises(PlanningError, match=r"--mode per-pr needs a plan made with granularity pr.*--granularity pr"):
        Navigator(store, key, None, _rules(), run_id="x", backend="local", mode="per-pr")


def test_one_writer_per_run_and_a_resume_keeps_the_runs_policy(local, run_cli):  # noqa: F811
    """Issue 32: a second `run` on a live run id force-removed the first's container before any check; a resume
    with another mode (agent, model, profile, test visibility, rules) mixed two policies in one log."""
    from harnessforge.agents.factory import make_agent
    from harnessforge.errors import ConfigError

    store, key = local
    with store.chain_lock(key, "held"):
        proc = run_cli("run", key, "--sandbox", "local", "--run-id", "held", "--milestones", MID, store=store.root)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "held.lock is held by pid" in said, said
    assert not store.run_dir(key, "held").exists()  # refused before it touched the run
    started = Navigator(store, key, make_agent("oracle"), _rules(), run_id="mixed", backend="local", mode="hard")
    started._write_metadata([MID])
    resumed = Navigator(store, key, make_agent("oracle"), _rules(), run_id="mixed", backend="local")
    with pytest.raises(ConfigError, match=r"run mixed of .* was started with mode 'hard', not 'standard'"):
        resumed.run([MID])
    assert json.loads(store.run_metadata(key, "mixed").read_text())["mode"] == "hard"  # untouched
    assert [path.name for path in store.run_dir(key, "mixed").iterdir()] == ["metadata.json"]  # nothing ran
    # the oracle's seed and profiles are its policy too
    seeded = Navigator(store, key, make_agent("oracle", seed=7), _rules(), run_id="seeded", backend="local")
    seeded._write_metadata([MID])
    reseeded = Navigator(store, key, make_agent("oracle", seed=8), _rules(), run_id="seeded", backend="local")
    with pytest.raises(ConfigError, match=r"run seeded of .* was started with agent_policy .*'seed': 7"):
        reseeded.run([MID])
    same = Navigator(store, key, make_agent("oracle", seed=7), _rules(), run_id="seeded", backend="local")
    same._write_metadata([MID])  # the same policy resumes


def test_a_test_runner_that_cannot_start_stops_the_run_with_its_cause(local, monkeypatch):  # noqa: F811
    """Issue 32: with pytest unable to load (`No module named 'harnessforge'`), every submission was graded
    "not usable", and `run` burned every turn of every milestone, exiting 0. The Verifier now tries the base:
    validated, its tests ran there, so a runner that starts on neither is the environment's failure: the
    milestone is ENV_ERROR with the runner's own words, and the run stops (resumable once fixed)."""
    from harnessforge.agents.factory import make_agent
    from harnessforge.envs import candidate_grading
    from harnessforge.errors import SandboxLost
    from harnessforge.models.env import TestRun

    store, key = local
    calls = []

    def broken(sandbox, recipe, tests, timeout_s):
        calls.append(tests)
        return TestRun(runner=recipe.runner, log_tail="ModuleNotFoundError: No module named 'harnessforge'")

    monkeypatch.setattr(candidate_grading, "run_tests", broken)
    navigator = Navigator(store, key, make_agent("oracle"), _rules(), run_id="broken", backend="local")
    with pytest.raises(SandboxLost, match=r"ENV_ERROR: the test runner could not start.*No module named 'harness"):
        navigator.run([MID])
    summary = json.loads(store.milestone_run(key, "broken", MID).summary.read_text())
    assert summary["status"] == "ENV_ERROR" and "could not start" in summary["error"]
    assert len(calls) == 2  # the submission, then the base: one submission, not every turn


def test_a_tool_event_records_how_long_the_call_took(local):  # noqa: F811
    """Issue 32: tool events said `latency_s: 0.0` for a 20 s call, so a resumed milestone undercounted its wall
    budget (it adds up the events' latencies)."""
    store, key = local
    with OpenAIServer() as server:
        _turn(server, 1, ("bash", {"command": "sleep 1.5; echo slept"}))
        for number in range(2, 12):
            _turn(server, number, ("bash", {"command": "ls"}))
        events = _run(store, key, server, "latency", "probe")
    slept = next(event for event in events if event.action.type == "bash" and "sleep" in event.action.args["command"])
    listed = next(event for event in events if event.action.type == "bash" and event.action.args["command"] == "ls")
    assert slept.latency_s >= 1.5 and listed.latency_s < slept.latency_s
