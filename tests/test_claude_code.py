"""The claude-code backend with the real `claude` CLI, pointed at a local Messages API server.

The CLI streams from `tests.llm_servers.AnthropicServer` (SSE), calls our tools through the MCP
bridge, and resumes its own session with `--resume`: every part is the real one except the model.
"""

import json
import os
import threading
import time

import pytest

from harnessforge.agents.anthropic_backend import chat_messages
from harnessforge.agents.claude_code_backend import ClaudeCodeAgent, find_claude, invocation_cost
from harnessforge.agents.errors import AgentError
from harnessforge.agents.mcp_bridge import PREFIX
from harnessforge.agents.pricing import PRICES, Price
from harnessforge.harness.navigator import NUDGE, Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.harness.tools import TOOLS
from harnessforge.rules import load_rules
from tests.llm_servers import AnthropicServer, Reply
from tests.test_run_with_api import _solution

A = AnthropicServer


@pytest.fixture
def claude_env(monkeypatch):
    """A local Messages server the CLI reaches through ANTHROPIC_BASE_URL, with a dummy key."""
    try:
        find_claude()
    except AgentError as e:
        pytest.fail(f"{e} (scripts/install.sh installs it)")  # CI installs the CLI: missing is a failure
    with AnthropicServer() as server:
        # The CLI may make background calls of its own (no tools offered): answer them apart, so they
        # never take a scripted Dev answer.
        server.main = lambda body: isinstance(body, dict) and bool(body.get("tools"))
        server.side_reply = Reply(body=A.message(A.text("ok")))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        yield server


def tool(id: str, name: str, args: dict) -> dict:
    return A.tool_use(id, PREFIX + name, args)


def _tool_results(body: dict) -> list[dict]:
    return [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def _user_text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def test_tool_turns_hints_and_a_resumed_session(claude_env):
    server = claude_env
    server.push(
        A.message(A.text("Looking."), tool("toolu_1", "list_dir", {"path": "."}), stop_reason="tool_use"),
        A.message(
            A.text("I am not sure how to go on."), input_tokens=2000, output_tokens=7, cache_read=500, cache_write=300
        ),
        A.message(
            tool("toolu_2", "submit", {"message": "done"}), stop_reason="tool_use", input_tokens=4000, output_tokens=50
        ),
    )
    messages = [{"role": "system", "content": "You work in /workspace."}, {"role": "user", "content": "Add x."}]
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60) as agent:
        first = agent.turn(messages, TOOLS)
        # one model answer: text plus our tool, without the MCP prefix, with the id the model gave
        assert first.text == "Looking." and [(c.id, c.name, c.args) for c in first.tool_calls] == [
            ("toolu_1", "list_dir", {"path": "."})
        ]
        assert first.usage.input == 10 and first.usage.output == 5 and first.stop_reason == "tool_use"
        assert first.extra["cli_events"][0]["subtype"] == "init"
        assert first.extra["cli_events"][0]["tools"] == sorted(PREFIX + t["function"]["name"] for t in TOOLS)
        messages += [
            {"role": "assistant", "content": first.text, "tool_calls": []},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "src/\ntests/"},
            {"role": "user", "content": "[hint L1] Look at the parser."},  # a hint while the CLI waits
        ]
        second = agent.turn(messages, TOOLS)
        assert second.text == "I am not sure how to go on." and not second.tool_calls and second.usage.output == 7
        messages += [
            {"role": "assistant", "content": second.text},
            {"role": "user", "content": NUDGE},
            {"role": "user", "content": "[hint L2] The parser is in src/parse.py."},  # between CLI turns
        ]
        third = agent.turn(messages, TOOLS)
        assert [c.name for c in third.tool_calls] == ["submit"]
        sessions = {t.extra["session_id"] for t in (first, second, third)}
        # what the CLI reported spending: the first invocation's cost comes with the first turn after its
        # result line, the last one's when the harness ends the conversation (the CLI is interrupted)
        assert "cli_cost_usd" not in first.extra and "cli_cost_usd" not in second.extra
        assert third.extra["cli_cost_usd"] == pytest.approx(first.cost_usd + second.cost_usd)
        end = agent.end_conversation()
        assert agent.proc is None and end["session_id"] in sessions
        assert end["cli_cost_usd"] == pytest.approx(third.cost_usd)  # this invocation's own, not the session's
        (result,) = [e for e in end["cli_events"] if e["type"] == "result"]
        assert result["total_cost_usd"] == pytest.approx(first.cost_usd + second.cost_usd + third.cost_usd)
        assert agent.end_conversation() == {}  # nothing more to say
        bodies = server.bodies
    assert len(bodies) == 3  # interrupting the CLI made no further model call
    # the tool result and the hint that rode on it reached the model as one tool_result
    (result,) = _tool_results(bodies[1])
    texts = [b["text"] for b in result["content"]]
    assert result["tool_use_id"] == "toolu_1" and texts[0] == "src/\ntests/" and "[hint L1]" in texts[1]
    # the third request is the same session resumed: the whole history, then the new prompt
    assert len(sessions) == 1
    history = json.dumps(bodies[2]["messages"])
    assert "toolu_1" in history and "I am not sure how to go on." in history
    last = _user_text(bodies[2]["messages"][-1])
    assert NUDGE in last and "[hint L2] The parser is in src/parse.py." in last
    # the CLI has no built-in tools: only ours are offered to the model
    assert {t["name"] for t in bodies[0]["tools"]} == {PREFIX + t["function"]["name"] for t in TOOLS}
    assert "You work in /workspace." in json.dumps(bodies[0]["system"])


def test_the_clis_own_compaction_is_the_view_of_the_answer_after_it(claude_env):
    """The CLI compacts its conversation at the window it is given (100,000 tokens, reached by the third answer's
    usage) with a summary call of its own, no answer of the Dev's: the answer after it carries the view the model
    read (the request, as the relay in front of the API saw it), whose opening the backend follows from then on
    instead of starting a new session."""
    server = claude_env
    numbers = iter(range(100))

    def message(*blocks, **fields) -> dict:  # (one id per message: the CLI merges messages that share one)
        return A.message(*blocks, **fields) | {"id": f"msg_{next(numbers)}"}

    for number, used in ((1, 30_000), (2, 60_000), (3, 90_000)):
        server.push(message(tool(f"toolu_{number}", "bash", {"command": f"echo {number}"}), input_tokens=used))
    server.push(message(A.text("<summary>I echoed three numbers.</summary>")))  # its summary call: no Dev turn
    server.push(message(tool("toolu_4", "submit", {"message": "done"}), stop_reason="tool_use"))
    messages = [{"role": "system", "content": "You work in /workspace."}, {"role": "user", "content": "Add x."}]
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60, context_window=100_000) as agent:
        turns = []
        for _ in range(4):
            turn = agent.turn(messages, TOOLS)
            turns.append(turn)
            if turn.compacted is not None:  # what the harness does with it (`seen_after`)
                messages = messages[:1] + turn.compacted
            messages.append({"role": "assistant", "content": turn.text, "tool_calls": []})
            messages += [{"role": "tool", "tool_call_id": call.id, "content": "ok"} for call in turn.tool_calls]
        sessions = {turn.extra["session_id"] for turn in turns}
        bodies = [body for body in server.bodies if body.get("tools")]
    assert [turn.tool_calls[0].name for turn in turns] == ["bash", "bash", "bash", "submit"] and len(sessions) == 1
    assert [turn.compacted is not None for turn in turns] == [False, False, False, True]
    view = turns[3].compacted
    assert "continued from a previous conversation" in json.dumps(view)
    assert not any(m.get("tool_call_id") == "toolu_1" for m in view)  # what it no longer read
    assert [(m["role"], m.get("tool_call_id")) for m in view] == [
        (m["role"], m.get("tool_call_id")) for m in chat_messages(bodies[4]["messages"])
    ]


def test_a_tool_the_cli_runs_before_the_answer_ends_waits_for_the_harness(claude_env):
    """The CLI runs a tool as soon as the model has written the call, while the answer still streams:
    that call waits for the harness's result (answered "no result" at once, the model went on without
    the harness: its next answer was no recorded turn)."""
    server = claude_env
    answer = A.message(tool("toolu_1", "list_dir", {"path": "."}), A.text("Reading on."), stop_reason="tool_use")
    server.push(Reply(body=answer, pause_before_stop_s=1.5), A.message(A.text("Done.")))
    messages = [{"role": "user", "content": "Add x."}]
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60) as agent:
        first = agent.turn(messages, TOOLS)
        assert [c.id for c in first.tool_calls] == ["toolu_1"] and len(server.requests) == 1
        messages += [
            {"role": "assistant", "content": first.text, "tool_calls": []},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "src/\ntests/"},
        ]
        assert agent.turn(messages, TOOLS).text == "Done."
    (result,) = _tool_results(server.bodies[1])
    assert not result.get("is_error") and result["content"][0]["text"].rstrip() == "src/\ntests/"


def test_an_invocation_cost_is_its_own_calls_not_the_session_total():
    """A resumed session's `total_cost_usd` goes on from the last one: the CLI's per-result costs are
    summed; a CLI without them (an older version) counts what the total grew by."""
    since = {"claude-sonnet-4-6": {"costUSD": 0.25}, "claude-haiku-4-5": {"costUSD": 0.05}}
    assert invocation_cost({"total_cost_usd": 1.3, "model_usage_since_last_result": since}, 1.0) == pytest.approx(0.3)
    assert invocation_cost({"total_cost_usd": 1.3}, 1.0) == pytest.approx(0.3)
    assert invocation_cost({"total_cost_usd": 0.4}, 1.0) == pytest.approx(0.4)  # the total started again
    assert invocation_cost({"type": "result"}, 0.0) == 0.0


def test_an_api_error_from_the_cli_is_a_clear_agent_error(claude_env, monkeypatch):
    server = claude_env
    server.always = server.error(401, "invalid x-api-key")
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60, max_retries=1) as agent:
        with pytest.raises(AgentError, match="claude CLI exited.*Invalid API key.*HTTP 401"):
            agent.turn([{"role": "user", "content": "Add x."}], TOOLS)
    assert 1 <= len(server.requests) <= 2  # our retry setting reached the CLI


def test_an_answer_stream_cut_before_its_stop_reason_is_a_clear_agent_error(claude_env):
    """A stream that just ends mid-answer (a proxy closing it): the CLI takes what came as the whole
    answer, with no retry and no error (here: an empty text). Recorded, it would be a Dev turn the model
    never gave, so the backend refuses it and stops the CLI; a rerun resumes the milestone."""
    server = claude_env
    server.push(Reply(body=A.message(A.text("LOST " * 20)), stream_events=3))  # start, block start, one delta
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60, max_retries=1) as agent:
        with pytest.raises(AgentError, match="stream ended before its stop reason"):
            agent.turn([{"role": "user", "content": "Add x."}], TOOLS)
        assert agent.proc is None  # the CLI was stopped (its process group killed)
    assert len(server.requests) == 1


def test_a_closed_agent_leaves_no_thread_behind(claude_env):
    """Each agent listens for its MCP bridge on a thread; a factory runs many milestones in one process."""
    before = threading.active_count()
    for _ in range(3):
        with ClaudeCodeAgent("claude-sonnet-4-6", timeout=60):
            assert threading.active_count() > before  # its listener's thread
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before


def test_missing_key_and_missing_cli_are_clear(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(AgentError, match="set ANTHROPIC_API_KEY"):
        ClaudeCodeAgent("claude-sonnet-4-6")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("harnessforge.agents.claude_code_backend.PROJECT_TOOLS", __import__("pathlib").Path("/none"))
    monkeypatch.delenv("HARNESSFORGE_CLAUDE_BIN", raising=False)
    with pytest.raises(AgentError, match="claude CLI was not found"):
        find_claude()


def test_the_harness_runs_a_milestone_through_the_claude_cli(validated, claude_env):
    store, key, _ = validated
    server = claude_env
    solution = [tool(b["id"], b["name"], b["input"]) for b in _solution(store, key, "m01")]
    server.push(
        A.message(A.text("Let me look around."), tool("toolu_1", "list_dir", {"path": "."}), stop_reason="tool_use"),
        A.message(tool("toolu_2", "run_tests", {}), stop_reason="tool_use"),
        A.message(A.text("I'm stuck and need a hint.")),  # ends the CLI's turn; the Mentor answers it
        A.message(*solution, stop_reason="tool_use"),
        A.message(tool("toolu_4", "run_tests", {}), stop_reason="tool_use"),
        A.message(A.text("All green."), tool("toolu_5", "submit", {"message": "done"}), stop_reason="tool_use"),
    )
    rules = load_rules()
    mentor = rules.harness.mentor.model_copy(update={"cooldown_turns": 1, "cooldown_test_runs": 1})
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"mentor": mentor})})
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=120) as agent:
        nav = Navigator(store, key, agent, rules, run_id="claude-code-local", log=lambda *_: None)
        (summary,) = nav.run(["m01"])
    bodies = server.bodies
    trace = [(_user_text(b["messages"][-1])[-80:], len(b["messages"])) for b in bodies]  # shown if an assert fails
    assert summary.status == "PASS" and summary.hints_released[0] == 1, trace
    # one model answer per turn; the CLI made no request of its own with our tools that took an answer
    assert summary.turns == len(bodies), trace
    events = Recorder.open(nav.run_dir / "m01").events()
    kinds = [e.action.type for e in events if e.role == "dev"]
    assert kinds[:5] == ["message", "list_dir", "message", "run_tests", "message"]
    assert kinds[-4:] == ["message", "run_tests", "message", "submit"]
    # every tool ran in the sandbox and was recorded with what it returned
    listing = next(e for e in events if e.action.type == "list_dir")
    assert listing.call_id == "toolu_1" and "tasklite/" in listing.observation
    assert next(e for e in events if e.action.type == "run_tests").test_status.failed > 0
    hint = next(e for e in events if e.role == "mentor")
    assert hint.action.args["rule"] == "explicit_request" and hint.hint_level == 1
    # the hint reached the model as the prompt of the resumed session, after the full history
    resumed = next(b for b in bodies if "[hint L1]" in _user_text(b["messages"][-1]))
    assert "toolu_2" in json.dumps(resumed["messages"]) and "I'm stuck" in json.dumps(resumed["messages"])
    sessions = {e.action.args["backend"]["session_id"] for e in events if e.action.type == "message"}
    assert len(sessions) == 1
    assert (nav.run_dir / "m01" / "trajectory.atif.json").exists()
    assert json.loads((nav.run_dir / "metadata.json").read_text())["agent"] == "claude-code"
    assert not os.path.exists(agent.home)  # closed: the CLI's session files are gone with it
    # the CLI's own account, over both invocations (the resumed one's total is cumulative), the last one
    # (interrupted when the milestone ended) included, agrees with ours
    turns = [e for e in events if e.action.type == "message"]
    reported = [e for e in turns if "cli_cost_usd" in e.action.args["backend"]]
    assert len(reported) == 1 and reported[0].turn_id == 4  # the first turn after the first invocation ended
    assert reported[0].action.args["backend"]["cli_cost_usd"] == pytest.approx(sum(e.cost_usd for e in turns[:3]))
    (end,) = [e for e in events if e.action.type == "milestone_end"]
    assert end.action.args["backend"]["cli_cost_usd"] == pytest.approx(sum(e.cost_usd for e in turns[3:]))
    assert summary.cost_usd > 0 and summary.cli_cost_usd == pytest.approx(summary.cost_usd, abs=1e-6)
    assert not summary.cost_mismatch
    written = json.loads((nav.run_dir / "m01" / "summary.json").read_text())
    assert written["cli_cost_usd"] == summary.cli_cost_usd and "cost_mismatch" not in written


def test_a_cli_cost_apart_from_ours_is_flagged_and_warned(validated, claude_env, monkeypatch):
    """Our price table says twice what the CLI's does (say, ours is out of date): the summary says
    cost_mismatch and the run logs a warning; the one invocation reports only when the milestone ends."""
    store, key, _ = validated
    server = claude_env
    solution = [tool(b["id"], b["name"], b["input"]) for b in _solution(store, key, "m01")]
    server.push(
        A.message(*solution, stop_reason="tool_use", input_tokens=3000, output_tokens=400),
        A.message(tool("toolu_9", "submit", {"message": "done"}), stop_reason="tool_use", input_tokens=3500),
    )
    monkeypatch.setitem(PRICES, "claude-sonnet-4-5", Price(6, 30, cache_read=0.6, cache_write=7.5))
    logs: list[str] = []
    with ClaudeCodeAgent("claude-sonnet-4-6", timeout=120) as agent:
        nav = Navigator(store, key, agent, load_rules(), run_id="claude-code-cost", log=logs.append)
        (summary,) = nav.run(["m01"])
    assert summary.status == "PASS" and summary.turns == 2
    assert summary.cli_cost_usd == pytest.approx(summary.cost_usd / 2, abs=1e-6) and summary.cost_mismatch
    (warning,) = [line for line in logs if "claude CLI reported" in line]
    assert f"${summary.cli_cost_usd:.4f}" in warning and f"${summary.cost_usd:.4f}" in warning and "5%" in warning
    written = json.loads((nav.run_dir / "m01" / "summary.json").read_text())
    assert written["cost_mismatch"] is True and written["cli_cost_usd"] == summary.cli_cost_usd
