"""A Dev that works only through the shell, as real models do, is seen as the structured-tool oracle is.

The offline oracle (profile `needs_hints`: it re-runs the failing tests until the Mentor's L2, then solves) runs
m01 of the example repository with our structured tools. Its calls, each translated into the shell command a
model would type (`cat`, `grep -rn`, `python -m pytest <files>`, `printf ... > file`), are then served by a
local OpenAI-compatible server to the real `openai` SDK: only `submit` is not a shell call. Both runs must get
the same hints (levels and rules, turns within one) and the same stuck points, with the shell run's test runs
counted and parsed and its shell edits listed as files touched.
"""

from __future__ import annotations

import json
import shlex

import pytest

from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.agents.oracle import OracleAgent
from harnessforge.analytics import analyze
from harnessforge.analytics.database import connect_read_only
from harnessforge.analytics.rows import MilestoneSummaryRow, StuckPointRow, read_rows
from harnessforge.distill.reviewer import Reviewer
from harnessforge.envs.runners import test_files_of
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.store import Store
from tests.helpers import one_run_per_side, validated_copy
from tests.llm_servers import OpenAIServer

MID = "m01"


@pytest.fixture(scope="module")
def local(planned, tmp_path_factory) -> tuple[Store, str]:
    """The planned example store with m01 validated in the local sandbox (one run per side)."""
    return validated_copy(planned, tmp_path_factory.mktemp("shell_dev"), [MID])


def _rules():
    return one_run_per_side()


def _run(store: Store, key: str, agent, run_id: str) -> list:
    Navigator(store, key, agent, _rules(), run_id=run_id, backend="local", log=lambda *_: None).run([MID])
    return Recorder.open(store.milestone_run(key, run_id, MID).dir).events()


def _as_shell(name: str, args: dict, test_files: list[str]) -> tuple[str, dict]:
    """The shell command a model would type for one structured call (`submit` stays a tool)."""
    if name == "list_dir":
        return "bash", {"command": f"ls -p {shlex.quote(args.get('path', '.'))}"}
    if name == "search":
        return "bash", {"command": f"grep -rn --exclude-dir=.git -e {shlex.quote(args['pattern'])} ."}
    if name == "read_file":
        return "bash", {"command": f"cat {shlex.quote(args['path'])}"}
    if name == "write_file":
        return "bash", {"command": f"printf %s {shlex.quote(args['content'])} > {shlex.quote(args['path'])}"}
    if name == "run_tests":
        return "bash", {"command": "python -m pytest -q " + " ".join(map(shlex.quote, test_files))}
    assert name in ("bash", "submit"), name
    return name, args


def _decisions(store: Store, key: str, run_id: str) -> list[dict]:
    return json.loads(store.milestone_run(key, run_id, MID).mentor_log.read_text())


def test_a_shell_only_dev_gets_the_oracles_hints_and_stuck_points(local):
    store, key = local
    oracle_events = _run(store, key, OracleAgent(profiles={MID: "needs_hints"}), "oracle")
    milestone = store.load_milestone(key, MID)
    test_files = sorted(set(test_files_of("pytest", milestone.fail_to_pass)))
    turns = [event.action.args["tool_calls"] for event in oracle_events if event.action.type == "message"]
    with OpenAIServer() as server:
        for number, calls in enumerate(turns, 1):
            shell_calls = [_as_shell(call["name"], call["args"], test_files) for call in calls]
            server.push(
                OpenAIServer.completion(
                    content=f"Step {number}.",
                    tool_calls=[
                        OpenAIServer.tool_call(f"call_{number}_{index}", name, args)
                        for index, (name, args) in enumerate(shell_calls)
                    ],
                )
            )
        agent = OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
        shell_events = _run(store, key, agent, "shell")
    tools = {event.action.type for event in shell_events if event.role == "dev" and event.call_id}
    assert tools == {"bash", "submit"}  # the shell only

    # the Mentor saw the same Dev: same levels and rules, turns within one
    oracle, shell = _decisions(store, key, "oracle"), _decisions(store, key, "shell")
    assert [(hint["level"], hint["rule"]) for hint in oracle][:2] == [(1, "same_error"), (2, "no_progress_after_hint")]
    assert [(hint["level"], hint["rule"]) for hint in shell] == [(hint["level"], hint["rule"]) for hint in oracle]
    assert all(abs(a["turn_id"] - b["turn_id"]) <= 1 for a, b in zip(oracle, shell, strict=True))

    # the shell's test runs are parsed as run_tests' are, and its edits are files touched with content hashes
    oracle_runs = [event.test_status for event in oracle_events if event.action.type == "run_tests"]
    shell_runs = [event.test_status for event in shell_events if event.action.type == "bash" and event.test_status]
    assert len(shell_runs) == len(oracle_runs) and all(run.failed for run in shell_runs[:-1])
    assert [run.total for run in shell_runs] == [run.total for run in oracle_runs]
    assert shell_runs[-1].failed == 0 and shell_runs[-1].passed == oracle_runs[-1].passed
    assert all(event.error_signature for event in shell_events if event.test_status and event.test_status.failed)
    oracle_edits = [event for event in oracle_events if event.action.type == "write_file"]
    shell_edits = [event for event in shell_events if event.action.type == "bash" and event.files_touched]
    assert [event.files_touched for event in shell_edits] == [event.files_touched for event in oracle_edits]
    assert [event.action.args["content_sha"] for event in shell_edits] == [
        event.action.args["content_sha"] for event in oracle_edits
    ]  # one hash scheme, whichever tool wrote the file
    assert all(
        event.action.args.get("test_runner") == "pytest"
        for event in shell_events
        if event.role == "dev" and event.test_status
    )

    # the analytics find the same stuck points (kinds, signal turns within one)
    analyze(store, _rules())
    with connect_read_only(store) as con:
        points = {
            run_id: [(row.kind, row.signal_turn) for row in read_rows(con, StuckPointRow, {"run_id": run_id})]
            for run_id in ("oracle", "shell")
        }
        summaries = {
            run_id: read_rows(con, MilestoneSummaryRow, {"run_id": run_id})[0] for run_id in ("oracle", "shell")
        }
    # issue 33: one notion of an edit and an iteration, so the same Review (`cumulative_edits` counted only the
    # edit tools: a shell Dev had 0 edits, 0 iterations, and a difficulty that ignored all it went through)
    oracle_row, shell_row = summaries["oracle"], summaries["shell"]
    assert oracle_row.edits == len(oracle_edits) and oracle_row.iterations >= 1
    assert (shell_row.status, shell_row.edits, shell_row.iterations) == (
        oracle_row.status,
        oracle_row.edits,
        oracle_row.iterations,
    )
    reviewer = Reviewer(_rules().distill.reviewer, _rules().hash)
    grades = {run_id: reviewer.review(row) for run_id, row in summaries.items()}
    fields = ("status", "difficulty", "rl_value", "discard_reasons")
    assert [getattr(grades["shell"], name) for name in fields] == [getattr(grades["oracle"], name) for name in fields]
    assert points["oracle"], "the oracle's repeated failures are stuck points"
    assert sorted(kind for kind, _ in points["shell"]) == sorted(kind for kind, _ in points["oracle"])
    for (_, oracle_turn), (_, shell_turn) in zip(sorted(points["oracle"]), sorted(points["shell"]), strict=True):
        assert abs(oracle_turn - shell_turn) <= 1


def test_a_shell_only_dev_that_stays_stuck_is_neither_easy_nor_a_positive(local):
    """Issue 33: the Reviewer never read the outcome: a STUCK run with no hint and at most one edit -> test cycle was
    "difficulty 1, solved in one go", `too_easy`, which the gates admit to SFT, DPO, KTO, ATIF and tasks. A Dev that
    edits through `sed` and runs pytest from the shell, and never gets there, is a hard, unresolved run."""
    store, key = local
    rules = _rules()
    harness = rules.harness.model_copy(update={"max_turns": 6})
    rules = rules.model_copy(update={"harness": harness})
    milestone = store.load_milestone(key, MID)
    test_files = sorted(set(test_files_of("pytest", milestone.fail_to_pass)))
    pytest_command = "python -m pytest -q " + " ".join(map(shlex.quote, test_files))
    with OpenAIServer() as server:
        server.push(
            OpenAIServer.completion(
                content="Look.", tool_calls=[OpenAIServer.tool_call("c1", "bash", {"command": "ls tasklite"})]
            )
        )
        edit = {"command": "sed -i '1i # edited' tasklite/store.py"}  # a source file's edit, through the shell
        server.push(OpenAIServer.completion(content="Edit.", tool_calls=[OpenAIServer.tool_call("c2", "bash", edit)]))
        for number in range(3, 8):
            call = OpenAIServer.tool_call(f"c{number}", "bash", {"command": pytest_command})
            server.push(OpenAIServer.completion(content="Test.", tool_calls=[call]))
        agent = OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
        Navigator(store, key, agent, rules, run_id="shell-stuck", backend="local", log=lambda *_: None).run([MID])
    analyze(store, rules)
    with connect_read_only(store) as con:
        (row,) = read_rows(con, MilestoneSummaryRow, {"run_id": "shell-stuck"})
    assert row.status == "STUCK" and row.edits == 1 and row.iterations == 1 and row.max_hint_level == 0
    review = Reviewer(rules.distill.reviewer, rules.hash).review(row)
    assert review.difficulty >= 4 and "too_easy" not in review.discard_reasons, review
    assert "unresolved" in review.discard_reasons and review.rl_value == "reject"
