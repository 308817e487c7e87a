"""Harness profiles V1-V3 (seed 000 §4.8) and the model Mentor, each shown by the events it writes, with a Dev
served by a local OpenAI-compatible server to the real `openai` SDK (and the Mentor by a local Anthropic one)."""

from __future__ import annotations

import json

from harnessforge.agents.anthropic_backend import AnthropicBackend
from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.diffs import split_diff
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from tests.llm_servers import AnthropicServer, OpenAIServer
from tests.test_shell_dev import MID, _rules, local  # noqa: F401  (fixture)

OC, A = OpenAIServer, AnthropicServer


def _turn(server: OpenAIServer, number: int, *calls: tuple[str, dict], text: str = "") -> None:
    tool_calls = [OC.tool_call(f"call_{number}_{index}", name, args) for index, (name, args) in enumerate(calls)]
    server.push(OC.completion(content=text or f"Step {number}.", tool_calls=tool_calls))


def _run(store, key, server, run_id: str, rules=None, **options) -> list:
    """The milestone with the Dev `server` scripts, for as many turns as it has replies queued."""
    agent = OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
    rules = rules or _rules()
    turns = len(server._queue)  # noqa: SLF001 - the script is the budget
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": turns})})
    Navigator(store, key, agent, rules, run_id=run_id, backend="local", log=lambda *_: None, **options).run([MID])
    return Recorder.open(store.milestone_run(key, run_id, MID).dir).events()


def _solution(store, key) -> list[tuple[str, dict]]:
    """write_file calls with the ground truth's source files, in the diff's order."""
    milestone = store.load_milestone(key, MID)
    ground_truth, _ = store.read_patches(key, MID)
    repo, classifier = GitRepo(store.git_cache(key)), FileClassifier(_rules().planning)
    return [
        ("write_file", {"path": diff.path, "content": repo.show(milestone.verify_commit, diff.path).decode()})
        for diff in split_diff(ground_truth)
        if not diff.deleted and classifier.is_source(diff.path)
    ]


def _of(events, kind: str) -> list:
    return [event for event in events if event.action.type == kind]


def test_v1_edits_wait_for_a_plan_and_the_plan_is_an_event(local):  # noqa: F811
    store, key = local
    first, *rest = _solution(store, key)
    with OpenAIServer() as server:
        _turn(server, 1, first)
        _turn(server, 2, first, text=f"Plan: implement the feature in {first[1]['path']}, then test it.")
        _turn(server, 3, ("submit", {}))
        events = _run(store, key, server, "v1", harness_profile="V1")
    assert "Before your first edit, state your plan" in events[0].action.content
    refused, allowed = _of(events, "write_file")
    assert not refused.ok and "state your plan before your first edit" in refused.observation
    (plan,) = _of(events, "plan")
    assert plan.turn_id == 2 and plan.seq < allowed.seq and allowed.ok
    assert plan.action.args["files"] == [first[1]["path"]] and plan.action.content.startswith("Plan:")
    assert json.loads(store.run_metadata(key, "v1").read_text())["harness_profile"] == "V1"


def test_v2_reviews_the_plan_against_the_changes_modules(local):  # noqa: F811
    store, key = local
    with OpenAIServer() as server:
        _turn(server, 1, ("bash", {"command": "ls"}), text="Plan: only the docs/ need a new page.")
        _turn(server, 2, ("submit", {}))
        events = _run(store, key, server, "v2", harness_profile="V2")
        second_request = server.bodies[1]["messages"]
    (review,) = _of(events, "plan_review")
    assert review.action.args["overlap"] < 0.5 and review.action.args["missing"] and review.role == "mentor"
    assert review.action.content.startswith("[Mentor] Your plan covers 0 of")
    assert any(message.get("content") == review.action.content for message in second_request)  # delivered


def test_v3_runs_the_tests_of_a_finished_module_and_reports_progress(local):  # noqa: F811
    store, key = local
    solution = _solution(store, key)
    assert len(solution) >= 2, "the example milestone changes two source files or more"
    with OpenAIServer() as server:
        for number, call in enumerate(solution, 1):
            _turn(server, number, call)
        _turn(server, len(solution) + 1, ("submit", {}))
        events = _run(store, key, server, "v3", harness_profile="V3")
    checkpoints = _of(events, "checkpoint")
    finished = [call[1]["path"] for call in solution[:-1]]
    assert [checkpoint.action.args["module"] for checkpoint in checkpoints] == finished
    assert all(checkpoint.test_status is not None for checkpoint in checkpoints)
    assert checkpoints[0].action.content.startswith(f"[Checkpoint] after your work on {finished[0]}: ")
    everything = len(checkpoints[0].action.args["tests"])
    assert any(len(checkpoint.action.args["tests"]) < everything for checkpoint in checkpoints)  # named after it
    last = checkpoints[-1]
    assert last.test_status.total == len(last.action.args["tests"]) and last.test_status.passed > 0
    assert f"{last.test_status.passed}/{last.test_status.total} of the acceptance tests" in last.action.content


def test_the_model_mentor_words_hints_refuses_leaks_and_falls_back_on_failure(local):  # noqa: F811
    store, key = local
    milestone = store.load_milestone(key, MID)
    rules = _rules()
    mentor_rules = rules.harness.mentor.model_copy(update={"cooldown_turns": 0, "cooldown_test_runs": 0})
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"mentor": mentor_rules})})
    leak = next(path for path in milestone.changed_files if path.endswith(".py"))
    with OpenAIServer() as dev, AnthropicServer() as mentor_server:
        for number in range(1, 4):
            _turn(dev, number, ("request_hint", {"reason": "lost"}))
        _turn(dev, 4, ("submit", {}))
        mentor_server.push(
            A.message(A.text("You keep asking; the issue asks for an export command."), model="claude-sonnet-4-5"),
            A.message(A.text(f"Open {leak} and add it there."), model="claude-sonnet-4-5"),
            mentor_server.error(500, "overloaded"),
        )
        mentor = AnthropicBackend("claude-sonnet-4-5", api_key="test", base_url=mentor_server.url, max_retries=0)
        events = _run(store, key, dev, "mentor", rules, mentor=mentor)
        dev_bodies = dev.bodies
    hints = _of(events, "hint")
    assert [hint.hint_level for hint in hints][:3] == [1, 2, 3]
    worded, leaked, failed = hints[:3]
    assert worded.action.content == "[hint L1] You keep asking; the issue asks for an export command."
    assert worded.mentor_hint != worded.action.content and worded.action.args["rewrite_accepted"] is True
    assert worded.action.args["rewritten_by"] == "claude-sonnet-4-5" and worded.cost_usd > 0
    assert not leaked.action.args["rewrite_accepted"] and leak in leaked.action.args["rewrite_refused"]
    assert leaked.action.content == f"[hint L2] {leaked.mentor_hint}"
    assert failed.action.content == f"[hint L3] {failed.mentor_hint}" and "rewrite_refused" in failed.action.args
    assert any(message.get("content") == worded.action.content for message in dev_bodies[1]["messages"])
    summary = json.loads(store.milestone_run(key, "mentor", MID).summary.read_text())
    assert summary["cost_usd"] >= worded.cost_usd + leaked.cost_usd  # the Mentor's calls are costed
    config = json.loads(store.run_metadata(key, "mentor").read_text())["config"]
    assert config["mentor_model"] == "anthropic:claude-sonnet-4-5"
