"""The live Mentor sees every kind of stuck the analytics see (issue 34): a real-SDK Dev that loops without running a
test (the same `list_dir` again and again, or turns that call no tool) gets a hint, by the rule that fired."""

from __future__ import annotations

import json

import pytest

from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.harness.conversation import rebuild
from harnessforge.harness.loops import LoopThresholds, LoopWatch
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.models.trajectory import Action, Event
from tests.llm_servers import OpenAIServer
from tests.test_shell_dev import MID, _rules, local  # noqa: F401  (fixture)

OC = OpenAIServer


def _run(store, key, server, run_id: str, turns: int) -> list[dict]:
    rules = _rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": turns})})
    agent = OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
    Navigator(store, key, agent, rules, run_id=run_id, backend="local", log=lambda *_: None).run([MID])
    return json.loads(store.milestone_run(key, run_id, MID).mentor_log.read_text())


@pytest.mark.parametrize(
    ("behaviour", "rule"),
    [("list_dir", "repeat_action_observation"), ("prose", "turns_without_tool_calls")],
)
def test_a_dev_that_loops_without_running_tests_gets_a_hint(local, behaviour, rule):  # noqa: F811
    """20 identical `list_dir` calls, or 15 turns of prose without a tool call, got no hint: the live rules counted
    only test runs and edits, while the analytics flagged `repeat_action_observation` at turn 4."""
    store, key = local
    with OpenAIServer() as server:
        for number in range(1, 16):
            if behaviour == "list_dir":
                server.push(OC.completion(f"Look {number}.", [OC.tool_call(f"c{number}", "list_dir", {"path": "."})]))
            else:
                server.push(OC.completion("I think the store needs a change somewhere, let me think more."))
        decisions = _run(store, key, server, f"loop-{behaviour}", 15)
        last = server.bodies[-1]["messages"]
    assert decisions, "no hint for a Dev that loops"
    # the log is what the model saw: the nudges after prose, the hints, in order; each answer's finish_reason kept
    events = Recorder.open(store.milestone_run(key, f"loop-{behaviour}", MID).dir).events()
    calls = [event for event in events if event.action.type == "message"]
    conversation = rebuild([event for event in events if event.seq < calls[-1].seq])
    conversation.deliver()  # what the turn's end delivered (a hint)
    seen = conversation.messages
    assert [(m["role"], m.get("content") or "") for m in seen] == [(m["role"], m.get("content") or "") for m in last]
    reason = "stop" if behaviour == "prose" else "tool_calls"
    assert all(event.action.args["finish_reason"] == reason for event in calls)
    first = decisions[0]
    assert first["rule"] == rule and first["level"] == 1
    assert first["turn_id"] == _rules().harness.mentor.cooldown_turns  # as soon as the cooldown's turns are over
    assert first["snapshot"]["test_runs"] == 0  # it never ran a test


def _event(seq: int, kind: str, args: dict, observation: str = "", ok: bool = True) -> Event:
    call = f"c{seq}" if kind != "message" else None
    return Event(
        run_id="r",
        repo="acme__app",
        milestone_id="m01",
        seq=seq,
        turn_id=seq,
        role="dev",
        action=Action(type=kind, args=args),
        call_id=call,
        observation=observation,
        ok=ok,
    )


def test_the_detectors_count_as_the_analytics_do():
    watch = LoopWatch(
        LoopThresholds(
            repeat_action_observation=4, repeat_action_error=3, alternating_steps=6, turns_without_tool_calls=3
        )
    )
    for seq in range(3):
        watch.take(_event(seq, "bash", {"command": "ls"}, "a"))
    assert watch.fired() is None  # three of a kind: under four
    watch.take(_event(3, "bash", {"command": "ls"}, "a"))
    assert watch.fired() == ("repeat_action_observation", {"action": 'bash {"command": "ls"}', "times": 4})
    watch.reset()
    for seq in range(3):
        watch.take(_event(seq, "bash", {"command": "make"}, f"error {seq}", ok=False))
    assert watch.fired()[0] == "repeat_action_error"  # other outputs, the same failing call
    watch.reset()
    for seq in range(6):
        watch.take(_event(seq, "read_file", {"path": "a.py" if seq % 2 else "b.py"}, "x" if seq % 2 else "y"))
    assert watch.fired() == (
        "alternating",
        {"actions": ['read_file {"path": "a.py"}', 'read_file {"path": "b.py"}'], "steps": 6},
    )
    watch.reset()
    for seq in range(3):
        watch.take(_event(seq, "message", {"tool_calls": []}))
    assert watch.fired() == ("turns_without_tool_calls", {"turns": 3})
    watch.take(_event(4, "message", {"tool_calls": [{"id": "x"}]}))
    assert watch.fired() is None


def test_answers_cut_at_the_token_cap_and_malformed_calls_are_recorded_as_the_model_sent_them(local):  # noqa: F811
    """A weak model's answers: cut at the output cap mid tool call (`finish_reason: length`, arguments cut off) and
    malformed arguments again and again. The run ends by its budget (not an error), each answer keeps its
    finish_reason, each malformed call is an error the Dev reads, a live rule hints, and at every model call the
    conversation the log rebuilds is the request the model got."""
    store, key = local
    cut = OC.tool_call("c1", "bash", '{"command": "python -m pytest -q tes')  # cut off at the cap
    with OpenAIServer() as server:
        server.push(OC.completion("I will run the tests and then ed", [cut], finish_reason="length"))
        for number in range(2, 11):
            server.push(OC.completion("Reading it.", [OC.tool_call(f"c{number}", "read_file", "{path: tasklite}")]))
        decisions = _run(store, key, server, "malformed", 10)
        bodies = server.bodies
    summary = json.loads(store.milestone_run(key, "malformed", MID).summary.read_text())
    assert summary["status"] == "STUCK" and summary["stopped_by"].startswith("max_turns")
    events = Recorder.open(store.milestone_run(key, "malformed", MID).dir).events()
    answers = [event for event in events if event.action.type == "message"]
    assert [event.action.args["finish_reason"] for event in answers] == ["length"] + ["tool_calls"] * 9
    calls = [event for event in events if event.call_id]
    assert len(calls) == 10 and not any(event.ok for event in calls)
    assert all("not a valid JSON object" in event.observation for event in calls)
    assert [(d["level"], d["rule"]) for d in decisions] == [
        (1, "repeat_action_observation"),
        (2, "repeat_action_error"),
    ]
    for body, answer in zip(bodies, answers, strict=True):
        conversation = rebuild([event for event in events if event.seq < answer.seq])
        conversation.deliver()
        assert [(m["role"], m.get("content") or "") for m in conversation.messages] == [
            (m["role"], m.get("content") or "") for m in body["messages"]
        ], answer.turn_id
    sent = bodies[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert sent == "{}"  # a malformed call goes back as `{}` (servers json-load earlier calls' arguments)
