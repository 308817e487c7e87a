"""The harness loop on its own: the resume point a crafted event log implies, the chain rule, the event
kinds, and the Navigator driving the oracle (or a scripted agent) through the example chain in the local
sandbox: an invalid milestone skipped, memory and the Dev's state carried on, the run budget, resumes."""

from __future__ import annotations

import json
import shutil
from typing import get_args

import pytest

from harnessforge.agents.base import AgentBackend
from harnessforge.agents.oracle import WRONG, OracleAgent
from harnessforge.diffs import split_diff
from harnessforge.harness import chain
from harnessforge.harness.conversation import NUDGE
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder, read_summary
from harnessforge.harness.resume import ResumePoint
from harnessforge.harness.tools import TOOL_NAMES, ToolBox
from harnessforge.models.run import MilestoneSummary
from harnessforge.models.trajectory import Action, AgentTurn, Event, ToolName, Usage
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import validated_copy

MID = "m01"


# ---- crafted event logs -------------------------------------------------------------------------
class Log:
    """One milestone's events as the run loop records them, built step by step."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.turn = self.edits = self.test_runs = 0

    def add(self, role: str, kind: str, content: str = "", args: dict | None = None, verdict=None, **fields) -> Log:
        action = Action(type=kind, content=content, args=args or {}, verdict=verdict)
        self.events.append(
            Event(
                run_id="r1",
                repo="acme__app",
                milestone_id=MID,
                seq=len(self.events),
                turn_id=self.turn,
                role=role,
                action=action,
                cumulative_edits=self.edits,
                cumulative_test_runs=self.test_runs,
                **fields,
            )
        )
        return self

    def start(self) -> Log:
        return self.add("navigator", "milestone_start", "# the task", {"workdir": "/old"})

    def say(self, *calls: tuple[str, str], cost: float = 0.5) -> Log:
        """A Dev turn asking for `calls` (call id, tool name)."""
        self.turn += 1
        listed = [{"id": call_id, "name": name, "args": {}} for call_id, name in calls]
        usage = Usage(input=100, output=10)
        return self.add("dev", "message", "thinking", {"tool_calls": listed}, usage=usage, cost_usd=cost)

    def answer(self, call_id: str, name: str, **fields) -> Log:
        self.edits += name in ("write_file", "edit_file")
        self.test_runs += name == "run_tests"
        return self.add("dev", name, call_id=call_id, observation=f"{name} done", **fields)

    def verdict(self, passed: bool) -> Log:
        content = "PASS" if passed else "verification failed: 0/1 acceptance tests pass."
        return self.add("verifier", "verify", content, verdict="PASS" if passed else "FAIL")


def test_a_fresh_milestone_starts_from_nothing():
    point = ResumePoint.read([], [])
    assert not point.started and point.next_seq == 0 and point.counters.turn == 0
    assert point.unanswered == [] and point.snapshot is None and not point.passed


def test_a_sandbox_lost_before_the_start_starts_the_milestone_again():
    log = Log().add("navigator", "env_error", "the container vanished", {"reason": "sandbox_lost", "attempt": 1})
    point = ResumePoint.read(log.events, [])
    assert not point.started and point.next_seq == 1


def test_mid_turn_the_calls_without_an_event_are_what_is_left_to_do(tmp_path):
    log = Log().start().say(("c1", "list_dir")).answer("c1", "list_dir")
    log.say(("c2", "write_file"), ("c3", "run_tests"), ("c4", "submit"), cost=0.25)
    log.answer("c2", "write_file", files_touched=["src/app.py"])
    log.add("mentor", "hint", "[hint L1] look at the filter", {"rule": "same_error"}, hint_level=1)
    snapshots = [(n, tmp_path / f"workspace.{n}.patch") for n in (2, 5, 9)]  # 9: saved, its event never written
    point = ResumePoint.read(log.events, snapshots, workdir="/new")
    assert point.started and point.next_seq == 6
    assert [call.id for call in point.unanswered] == ["c3", "c4"]
    assert (point.counters.turn, point.counters.edits, point.counters.test_runs) == (2, 1, 0)
    assert point.counters.usage == Usage(input=200, output=20) and point.counters.cost == 0.75
    assert point.snapshot == tmp_path / "workspace.5.patch"  # the newest one that belongs to a recorded event
    assert point.hints_logged == 1 and point.pending == ["[hint L1] look at the filter"]  # delivered at turn's end
    assert point.messages[0]["content"].startswith("You are a software engineer working in a git repository at /new")
    assert [message["role"] for message in point.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert not (point.passed or point.ended or point.unverified)


def test_a_submission_whose_grading_was_cut_off_is_unverified():
    log = Log().start().say(("c1", "submit")).answer("c1", "submit")
    assert ResumePoint.read(log.events, []).unverified
    log.verdict(passed=False)
    point = ResumePoint.read(log.events, [])
    assert not point.unverified and not point.passed
    assert point.pending == ["verification failed: 0/1 acceptance tests pass."]  # the Dev has yet to read it


def test_passed_but_not_ended_and_ended_without_a_summary():
    log = Log().start().say(("c1", "submit")).answer("c1", "submit").verdict(passed=True)
    point = ResumePoint.read(log.events, [])
    assert point.passed and not point.ended and not point.unverified and point.unanswered == []
    log.add("navigator", "milestone_end", "PASS", {"reset_to": None, "stopped_by": None})
    assert ResumePoint.read(log.events, []).ended


def test_after_env_error_the_interrupted_turn_goes_on_and_the_lost_attempts_stay_in_the_log():
    log = Log().start().say(("c1", "write_file"), ("c2", "bash")).answer("c1", "write_file")
    log.add("navigator", "env_error", "the container vanished", {"reason": "sandbox_lost", "attempt": 1})
    log.add("navigator", "env_error", "again", {"reason": "sandbox_lost", "attempt": 2})
    point = ResumePoint.read(log.events, [])
    assert point.started and point.next_seq == 5 and [call.id for call in point.unanswered] == ["c2"]
    assert (point.counters.turn, point.counters.edits) == (1, 1) and not point.ended


# ---- the event kinds ----------------------------------------------------------------------------
def test_every_tool_is_an_action_type_and_an_unknown_tool_is_stored_under_its_own_name():
    assert TOOL_NAMES == set(get_args(ToolName))
    invented = Action(type="str_replace_editor", args={"path": "a.py"})
    assert invented.type == "unknown_tool" and invented.name == "str_replace_editor"
    stored = json.loads(invented.model_dump_json())
    assert stored == {"type": "str_replace_editor", "content": "", "args": {"path": "a.py"}}  # as logs always had it
    assert Action.model_validate(stored) == invented
    with pytest.raises(ValueError):
        Action(type=3)


def test_the_verdict_is_a_field_and_older_logs_without_it_read_the_same():
    line = {"run_id": "r1", "repo": "acme__app", "milestone_id": MID, "seq": 0, "turn_id": 1, "role": "verifier"}
    old_pass = Event.model_validate({**line, "action": {"type": "verify", "content": "PASS"}})
    old_fail = Event.model_validate({**line, "action": {"type": "verify", "content": "verification failed: ..."}})
    assert (old_pass.action.verdict, old_pass.passed_verification) == ("PASS", True)
    assert (old_fail.action.verdict, old_fail.passed_verification) == ("FAIL", False)
    bash = Event.model_validate({**line, "role": "dev", "action": {"type": "bash", "content": "PASS"}})
    assert bash.action.verdict is None and not bash.passed_verification
    assert "verdict" not in bash.model_dump_json()  # events other than verify are written as before


# ---- the chain rule -----------------------------------------------------------------------------
@pytest.fixture
def copied(planned, tmp_path) -> tuple[Store, str]:
    source, result = planned
    store = Store(tmp_path / "store")
    shutil.copytree(source.root, store.root)
    return store, result.plan.repo.key


def _set_status(store: Store, key: str, **statuses) -> None:
    for mid, status in statuses.items():
        store.update_milestone(key, store.load_milestone(key, mid).model_copy(update={"status": status}))


def _summary(store: Store, key: str, run_id: str, mid: str, status: str = "PASS") -> None:
    files = store.milestone_run(key, run_id, mid)
    Recorder.open(files.dir).write_summary(MilestoneSummary(run_id=run_id, milestone_id=mid, status=status))


def test_the_chain_predecessor_skips_invalid_milestones_and_names_what_to_do_first(copied):
    store, key = copied
    _set_status(store, key, m01="does_not_reproduce", m02="valid", m03="valid")  # m04: never validated
    assert chain.chain_predecessor(store, store.load_plan(key), "m02", "r1") is None  # m01 is skipped
    with pytest.raises(chain.ChainOrderError) as raised:
        chain.chain_predecessor(store, store.load_plan(key), "m05", "r1")  # m02 comes first, and has not run
    error = raised.value
    assert (error.earlier, error.stage, error.milestone_id, error.repo_key) == ("m02", "run", "m05", key)
    assert str(error) == (
        f"{key} m05: the chain runs in order, and run 'r1' has no finished trajectory for m02 yet: "
        "run it first in the same run"
    )
    _summary(store, key, "r1", "m02")
    _summary(store, key, "r1", "m03")
    with pytest.raises(
        chain.ChainOrderError, match="earlier milestone m04 is not validated yet: validate it"
    ) as raised:
        chain.chain_predecessor(store, store.load_plan(key), "m05", "r1")
    assert (raised.value.earlier, raised.value.stage) == ("m04", "validate")
    assert chain.chain_predecessor(store, store.load_plan(key), "m04", "r1") == "m03"


def test_the_attempt_kind_is_the_navigators_resume_rule(copied):
    store, key = copied
    files = store.milestone_run(key, "r1", "m01")
    assert chain.attempt_kind(files) == "new" and chain.finished_summary(files) is None
    recorder = Recorder(files.dir)
    recorder.append(Log().start().events[0].model_copy(update={"run_id": "r1", "milestone_id": "m01"}))
    assert chain.attempt_kind(files) == "resumed"
    _summary(store, key, "r1", "m01", status="ENV_ERROR")  # not the Dev's outcome: resumed from its log
    assert chain.attempt_kind(files) == "resumed" and chain.finished_summary(files) is None
    _summary(store, key, "r1", "m01", status="STUCK")
    assert chain.attempt_kind(files) == "reused" and chain.finished_summary(files).status == "STUCK"


# ---- the Navigator in the local sandbox ---------------------------------------------------------
@pytest.fixture(scope="module")
def local(planned, tmp_path_factory) -> tuple[Store, str]:
    """The planned example store with m01 and m02 validated in the local sandbox (one run per side)."""
    return validated_copy(planned, tmp_path_factory.mktemp("navigator"), ("m01", "m02"), _rules())


@pytest.fixture
def chain_store(local, tmp_path) -> tuple[Store, str]:
    store, key = local
    copy = Store(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    return copy, key


def _rules(**harness):
    rules = load_rules()
    return rules.model_copy(
        update={
            "environments": rules.environments.model_copy(update={"repeats": 1}),
            "harness": rules.harness.model_copy(update=harness),
        }
    )


def _navigator(store, key, agent, run_id, logs=None, **harness) -> Navigator:
    log = logs.append if logs is not None else lambda *_: None
    return Navigator(store, key, agent, _rules(**harness), run_id=run_id, backend="local", log=log)


def _start_event(store, key, run_id, mid) -> Event:
    return Recorder.open(store.milestone_run(key, run_id, mid).dir).events()[0]


def test_an_invalid_milestone_is_skipped_and_the_next_one_starts_from_its_base(chain_store):
    store, key = chain_store
    _set_status(store, key, m01="does_not_reproduce")
    logs: list[str] = []
    summaries = _navigator(store, key, OracleAgent(), "skip", logs).run()
    assert [summary.milestone_id for summary in summaries] == ["m02"] and summaries[0].status == "PASS"
    assert "m01: skipped (does_not_reproduce); the chain goes on from its verify commit" in logs
    assert "m03: skipped (not validated); the chain goes on from its verify commit" in logs
    start = _start_event(store, key, "skip", "m02")
    assert start.action.args["carried_from"] is None and summaries[0].carried_from is None
    m01 = store.load_milestone(key, "m01").title  # skipped, its reference solution applied: said so
    applied = f"- m01 {m01}: not given to you; its reference solution is in your workspace"
    assert f"Earlier milestones:\n{applied}" in start.action.content
    assert start.action.args["memory"][0]["applied"] is True
    assert not store.milestone_run(key, "skip", "m01").dir.exists()
    assert not (store.milestone_run(key, "skip", "m02").dir / "start.patch").exists()


class NoteTaker(OracleAgent):
    """The oracle, leaving a NOTES.md of its own in m01 before it submits (the verify commit has none)."""

    def turn(self, messages, tools) -> AgentTurn:
        turn = super().turn(messages, tools)
        (call,) = turn.tool_calls
        noted = any("NOTES.md" in json.dumps(message.get("tool_calls", [])) for message in messages)
        if call.name == "submit" and self.milestone == "m01" and not noted:
            notes = {"path": "NOTES.md", "content": "my notes\n"}
            turn.tool_calls = [call.model_copy(update={"name": "write_file", "args": notes})]
        return turn


def test_a_passed_milestone_leaves_a_memory_line_and_its_work_to_the_next(chain_store):
    store, key = chain_store
    summaries = _navigator(store, key, NoteTaker(), "carry").run(["m01", "m02"])
    assert [(summary.milestone_id, summary.status) for summary in summaries] == [("m01", "PASS"), ("m02", "PASS")]
    assert summaries[1].carried_from == "m01"
    start = _start_event(store, key, "carry", "m02")
    title = store.load_milestone(key, "m01").title
    assert f"Earlier milestones:\n- m01 {title}: PASS" in start.action.content
    assert "Your own work on m01 is in the working tree, uncommitted." in start.action.content
    m02 = store.milestone_run(key, "carry", "m02")
    carried = (m02.dir / "start.patch").read_bytes()  # m01's work beyond its verify commit: the notes alone
    assert [file_diff.path for file_diff in split_diff(carried)] == ["NOTES.md"]
    assert "NOTES.md" in {file_diff.path for file_diff in split_diff(m02.final_diff.read_bytes())}

    # Asked for m02 alone, a new Navigator of the same run reads m01's outcome for the memory and reuses m02.
    again = _navigator(store, key, OracleAgent(), "carry").run(["m02"])
    assert again == [read_summary(m02.dir)]


class Spender(AgentBackend):
    """A model that thinks at $4 a turn and never calls a tool."""

    name, model = "spender", "spender-1"

    def __init__(self) -> None:
        self.calls = 0

    def turn(self, messages, tools) -> AgentTurn:
        self.calls += 1
        assert messages[-1]["content"] == NUDGE or self.calls == 1
        return AgentTurn(text="Let me think.", model=self.model, cost_usd=4.0, usage=Usage(input=10, output=1))


def test_the_run_budget_ends_the_milestone_and_starts_no_other(chain_store):
    store, key = chain_store
    logs: list[str] = []
    agent = Spender()
    summaries = _navigator(store, key, agent, "budget", logs, max_cost_per_run_usd=5).run()
    (summary,) = summaries
    assert summary.status == "STUCK" and summary.turns == agent.calls == 2 and summary.cost_usd == 8.0
    assert summary.stopped_by == "max_cost_per_run_usd: $8.00 spent by the run > $5"
    assert summary.reset_to == store.load_milestone(key, "m01").verify_commit
    assert logs[-1] == "run budget spent: $8.00 > max_cost_per_run_usd $5; not started: m02, m03, m04, m05, m06"
    end = Recorder.open(store.milestone_run(key, "budget", "m01").dir).events()[-1]
    assert (end.action.type, end.action.content, end.action.args["stopped_by"]) == (
        "milestone_end",
        "STUCK",
        summary.stopped_by,
    )


class Killed(Exception):
    """The process dies here (what SIGKILL does, without leaving the test)."""


def _steps(store, key, run_id) -> list[tuple]:
    events = Recorder.open(store.milestone_run(key, run_id, "m01").dir).events()
    return [(event.role, event.action.type, event.call_id, event.turn_id, event.hint_level) for event in events]


def _kill_mid_turn(monkeypatch):
    """Die in the first real write: its turn is recorded, the call is not."""
    call = ToolBox.call

    def dying(self, tool_call):
        if tool_call.name == "write_file" and tool_call.args.get("content") != WRONG:
            monkeypatch.setattr(ToolBox, "call", call)
            raise Killed
        return call(self, tool_call)

    monkeypatch.setattr(ToolBox, "call", dying)


def _kill_before_the_end(monkeypatch):
    """Die after the passing verdict, before `milestone_end` is written."""
    append = Recorder.append

    def dying(self, event, *rest):
        if event.action.type == "milestone_end":
            monkeypatch.setattr(Recorder, "append", append)
            raise Killed
        append(self, event, *rest)

    monkeypatch.setattr(Recorder, "append", dying)


@pytest.mark.parametrize("kill", [_kill_mid_turn, _kill_before_the_end], ids=["mid-turn", "passed-not-ended"])
def test_an_interrupted_milestone_resumes_to_the_clean_runs_steps_and_work(chain_store, monkeypatch, kill):
    store, key = chain_store
    (clean,) = _navigator(store, key, OracleAgent(), "clean").run(["m01"])
    kill(monkeypatch)
    with pytest.raises(Killed):
        _navigator(store, key, OracleAgent(), "killed").run(["m01"])
    files = store.milestone_run(key, "killed", "m01")
    assert files.started() and not files.finished()
    logs: list[str] = []
    (resumed,) = _navigator(store, key, OracleAgent(), "killed", logs).run(["m01"])
    assert any(line.startswith("m01: resumed at event") for line in logs)
    assert _steps(store, key, "killed") == _steps(store, key, "clean")
    assert (resumed.status, resumed.turns, resumed.hints_released) == (clean.status, clean.turns, clean.hints_released)
    assert files.final_diff.read_bytes() == store.milestone_run(key, "clean", "m01").final_diff.read_bytes()
    assert json.loads(files.test_results.read_text())["passed"] is True  # graded again for the report
    assert not files.snapshots()


def test_hidden_tests_are_applied_only_when_grading_and_a_failed_submission_says_what_failed(chain_store):
    """`--tests hidden` (seed 000's Verifier): the Dev's workspace has no acceptance test, the task says how it
    will be graded, and a failed submission returns the failing ids with what each said."""
    store, key = chain_store
    agent = OracleAgent(profiles={"m01": "partial"})  # submits half the work first
    [summary] = _navigator(store, key, agent, "hidden", test_visibility="hidden").run(["m01"])
    assert summary.status == "PASS"
    files = store.milestone_run(key, "hidden", "m01")
    events = Recorder.open(files.dir).events()
    start = events[0]
    assert start.action.args["test_visibility"] == "hidden"
    task = start.action.content
    assert "## What to build" in task and "## Acceptance criteria" in task
    assert "The acceptance tests are not in your workspace" in task
    milestone = store.load_milestone(key, "m01")
    checked = {test.split("[", 1)[0] for test in milestone.fail_to_pass}  # (parametrised ones named once)
    assert checked and all(f"`{test}`" in task for test in checked)  # what the tests check, named
    # the Dev never had the tests: its workspace diff holds none of the milestone's test files
    touched = {file_diff.path for file_diff in split_diff(files.final_diff.read_bytes())}
    assert touched and not touched & set(milestone.test_files)
    verdicts = [event for event in events if event.action.type == "verify"]
    assert [verdict.action.verdict for verdict in verdicts] == ["FAIL", "PASS"]
    failed = verdicts[0].action.content.splitlines()
    assert any(line.startswith("FAILING tests/") for line in failed)
    assert any(line.startswith("    E ") for line in failed)  # and why each failed, as the runner said it
    feedback = next(event for event in events[events.index(verdicts[0]) :] if event.action.type == "message")
    assert feedback.turn_id > verdicts[0].turn_id  # the Dev's next turn came after it read the feedback
    assert json.loads((files.run_dir / "metadata.json").read_text())["test_visibility"] == "hidden"


def test_the_next_milestone_gets_the_files_the_dev_changed_and_the_rest_as_the_repository_has_them(chain_store):
    """Issue 44: work a task names as context, not asked for, is in the reference solution; a Dev that passed
    without writing it must not carry its absence on (the next milestone's tests may use it)."""
    store, key = chain_store
    m01 = store.load_milestone(key, "m01")
    ground_truth, _ = store.read_patches(key, "m01")
    changes = split_diff(ground_truth)
    assert len(changes) >= 2, "the example's m01 changes several source files"
    kept, left = changes[0], changes[1:]
    navigator = _navigator(store, key, OracleAgent(), "partial")
    final = navigator.store.milestone_run(key, "partial", "m01").final_diff
    final.parent.mkdir(parents=True, exist_ok=True)
    final.write_bytes(
        kept.raw
        + b"diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.md\n"
        + b"@@ -0,0 +1 @@\n+mine\n"
    )
    carried = {change.path for change in split_diff(navigator._dev_state(m01))}
    assert carried == {"NOTES.md"}  # the Dev's file; m01's other changes stay, not reverted
    assert not carried & {change.path for change in left}
