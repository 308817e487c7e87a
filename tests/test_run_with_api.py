"""The harness driven by the real `anthropic` SDK against a local Messages API server."""

import json

import pytest

from harnessforge.agents.anthropic_backend import AnthropicBackend
from harnessforge.agents.errors import AgentError
from harnessforge.diffs import split_diff
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.rules import load_rules
from tests.llm_servers import AnthropicServer

A = AnthropicServer


def _solution(store, key, mid):
    """tool_use blocks writing the ground truth's files, as a capable model would."""
    m = store.load_milestone(key, mid)
    gt, _ = store.read_patches(key, mid)
    repo_dir = store.git_cache(key)
    from harnessforge.gitio import GitRepo

    repo = GitRepo(repo_dir)
    return [
        A.tool_use(
            f"toolu_w{i}", "write_file", {"path": f.path, "content": repo.show(m.verify_commit, f.path).decode()}
        )
        for i, f in enumerate(split_diff(gt))
    ]


def _script(server, store, key, model: str = "claude-sonnet-4-5"):
    look = (A.text("Let me look around."), A.tool_use("toolu_1", "list_dir", {"path": "."}))
    done = (A.text("All green."), A.tool_use("toolu_4", "submit", {"message": "done"}))
    server.push(
        A.message(*look, stop_reason="tool_use", model=model),
        A.message(*_solution(store, key, "m01"), stop_reason="tool_use", cache_read=6, model=model),
        A.message(A.tool_use("toolu_3", "run_tests", {}), stop_reason="tool_use", model=model),
        A.message(*done, stop_reason="tool_use", model=model),
    )


def test_a_model_backend_runs_a_milestone_end_to_end(validated):
    store, key, _ = validated
    with AnthropicServer() as server:
        _script(server, store, key)
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=0)
        turns = []
        nav = Navigator(
            store,
            key,
            agent,
            load_rules(),
            run_id="anthropic-local",
            log=lambda *_: None,
            on_turn=lambda *args: turns.append(args),
        )
        (summary,) = nav.run(["m01"])
        bodies = server.bodies
    assert summary.status == "PASS" and summary.turns == 4 and not summary.synthetic
    assert summary.cost_usd > 0 and not summary.cost_unknown  # a priced model: its cost, and no flag on disk
    written = json.loads(store.milestone_run(key, "anthropic-local", "m01").summary.read_text())
    assert summary.cli_cost_usd is None and not summary.cost_mismatch  # no claude CLI: nothing to reconcile
    assert not {"cost_unknown", "cli_cost_usd", "cost_mismatch"} & written.keys()
    assert [t[:2] for t in turns] == [("m01", 1), ("m01", 2), ("m01", 3), ("m01", 4)]
    assert turns[-1][4].passed > 0 and turns[-1][4].failed == 0  # after run_tests: the counts the display shows
    # input counts every prompt token, cache reads included (the same meaning as OpenAI's prompt_tokens)
    assert summary.tokens.input == 46 and summary.tokens.cached == 6 and summary.tokens.output == 20
    # the second request answers the first tool call with its result, paired by id
    results = [
        b
        for m in bodies[1]["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    ]
    assert results and results[0]["tool_use_id"] == "toolu_1" and "tasklite/" in str(results[0]["content"])
    assert bodies[0]["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    events = Recorder.open(nav.run_dir / "m01").events()
    assert not any(e.synthetic for e in events)
    assert [e.usage.input for e in events if e.role == "dev" and e.action.type == "message"] == [10, 16, 10, 10]


def test_an_api_outage_stops_the_run_clearly_and_a_rerun_resumes(validated):
    store, key, _ = validated
    with AnthropicServer() as server:
        server.push(A.message(A.tool_use("toolu_1", "list_dir", {"path": "."}), stop_reason="tool_use"))
        server.always = server.error(500, "overloaded upstream")
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=1)
        nav = Navigator(store, key, agent, load_rules(), run_id="anthropic-outage", log=lambda *_: None)
        with pytest.raises(AgentError, match="HTTP 500.*overloaded upstream"):
            nav.run(["m01"])
    kept = Recorder.open(nav.run_dir / "m01").events()
    assert [e.action.type for e in kept] == ["milestone_start", "message", "list_dir"]

    with AnthropicServer() as server:
        server.push(*[A.message(*_solution(store, key, "m01"), stop_reason="tool_use")])
        server.push(A.message(A.tool_use("toolu_4", "submit", {}), stop_reason="tool_use"))
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=0)
        (summary,) = Navigator(store, key, agent, load_rules(), run_id="anthropic-outage", log=lambda *_: None).run(
            ["m01"]
        )
        first = server.bodies[0]
    assert summary.status == "PASS" and summary.turns == 3
    # the resumed conversation is the recorded one: the list_dir result is in the first new request
    assert "toolu_1" in str(first["messages"])
    events = Recorder.open(nav.run_dir / "m01").events()
    assert [e.seq for e in events] == list(range(len(events))) and events[:3] == kept


def test_the_next_milestone_starts_from_the_devs_own_state(validated):
    """m01 passes with an extra file of the Dev's own; m02 sees it, keeps it, and is not blamed for it."""
    store, key, _ = validated
    notes = A.tool_use("toolu_n", "write_file", {"path": "NOTES.md", "content": "my design notes\n"})
    with AnthropicServer() as server:
        server.push(
            A.message(*_solution(store, key, "m01"), notes, stop_reason="tool_use"),
            A.message(A.tool_use("toolu_s1", "submit", {}), stop_reason="tool_use"),
            A.message(A.tool_use("toolu_l", "list_dir", {"path": "."}), stop_reason="tool_use"),
            A.message(*_solution(store, key, "m02"), stop_reason="tool_use"),
            A.message(A.tool_use("toolu_s2", "submit", {}), stop_reason="tool_use"),
        )
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=0)
        nav = Navigator(store, key, agent, load_rules(), run_id="carry", log=lambda *_: None)
        first, second = nav.run(["m01", "m02"])
    assert first.status == second.status == "PASS" and second.carried_from == "m01" and first.carried_from is None
    d = nav.run_dir / "m02"
    assert b"NOTES.md" in (d / "start.patch").read_bytes() and b"NOTES.md" in (d / "final_diff.patch").read_bytes()
    events = Recorder.open(d).events()
    assert events[0].action.args["carried_from"] == "m01" and "Your own work on m01" in events[0].action.content
    assert "NOTES.md" in next(e for e in events if e.action.type == "list_dir").observation
    report = json.loads((d / "test_results.json").read_text())
    assert report["passed"] and "NOTES.md" not in report["candidate_files"] and report["candidate_files"]


def test_a_model_without_a_price_is_warned_about_and_flagged_and_the_token_budget_still_applies(validated):
    """An unpriced model costs $0, so cost budgets cannot stop it: the run says so once, every summary says
    `cost_unknown`, and max_tokens_per_milestone still ends a runaway milestone."""
    store, key, _ = validated
    logs: list[str] = []
    with AnthropicServer() as server:
        _script(server, store, key, model="claude-local-finetune")
        agent = AnthropicBackend("claude-local-finetune", api_key="test", base_url=server.url, max_retries=0)
        (summary,) = Navigator(store, key, agent, load_rules(), run_id="unpriced", log=logs.append).run(["m01"])
    assert summary.status == "PASS" and summary.cost_usd == 0 and summary.cost_unknown
    assert json.loads(store.milestone_run(key, "unpriced", "m01").summary.read_text())["cost_unknown"] is True
    warnings = [line for line in logs if "has no price" in line]
    assert len(warnings) == 1 and "'claude-local-finetune'" in warnings[0] and "max_tokens_per_milestone" in warnings[0]

    rules = load_rules().model_copy(deep=True)
    rules.harness.max_tokens_per_milestone = 30  # the first answer alone (10 + 5 tokens) leaves it under; two do not
    with AnthropicServer() as server:
        _script(server, store, key, model="claude-local-finetune")
        agent = AnthropicBackend("claude-local-finetune", api_key="test", base_url=server.url, max_retries=0)
        (stopped,) = Navigator(store, key, agent, rules, run_id="unpriced-budget", log=logs.append).run(["m01"])
    assert stopped.status == "STUCK" and stopped.cost_unknown
    assert stopped.stopped_by.startswith("max_tokens_per_milestone")
