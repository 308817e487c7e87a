"""Model-API faults are retried or recorded as an error event, never a crash that loses turns; budgets
stop a runaway run.

The real `anthropic` and `openai` SDKs against the local wire-protocol servers (`tests/llm_servers.py`),
which inject the faults; the harness runs in the local sandbox on the example repository.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from harnessforge.agents.anthropic_backend import AnthropicBackend
from harnessforge.agents.errors import AgentError
from harnessforge.agents.factory import make_agent, sampling_of
from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.diffs import split_diff
from harnessforge.gitio import GitRepo
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.rules import load_rules
from tests.helpers import BIN, validated_copy

from .llm_servers import AnthropicServer, OpenAIServer, Reply

A, OC = AnthropicServer, OpenAIServer
START = [{"role": "system", "content": "You are the Dev."}, {"role": "user", "content": "Fix the bug."}]
BROKEN = '{"path": "tasklite/core.py", "content": "def add(self'  # tool JSON cut off mid-string


@pytest.fixture(params=[AnthropicServer, OpenAIServer], ids=["anthropic", "openai"])
def server(request):
    with request.param() as s:
        yield s


def backend(server, **kw):
    if isinstance(server, AnthropicServer):
        return AnthropicBackend("claude-haiku-4-5", api_key="test", base_url=server.url, **kw)
    return OpenAIBackend("gpt-4.1", api_key="EMPTY", base_url=server.base_url, **kw)


def answer(server, text: str) -> dict:
    return A.message(A.text(text)) if isinstance(server, AnthropicServer) else OC.completion(text)


# ---- the SDKs' own retries ------------------------------------------------------------------------
def test_a_429_retry_after_is_waited_out_before_the_retry(server):
    """The SDK's own backoff before a first retry is at most 0.5 s; `retry-after: 1` makes it wait 1 s."""
    server.push(server.error(429, "rate limited", retry_after="1"), answer(server, "after the wait"))
    assert backend(server, max_retries=2, timeout=5.0).turn(START, []).text == "after the wait"
    first, retry = server.requests
    assert retry.at - first.at >= 1.0
    assert retry.headers["x-stainless-retry-count"] == "1"


def test_a_long_retry_after_is_capped_and_then_retried(server):
    """A proxy asking for an hour: the Anthropic SDK would sleep the hour, the OpenAI SDK would give up.
    Capped at `max_retry_after_s`, both wait that long and retry."""
    server.push(server.error(429, "come back in an hour", retry_after="3600"), answer(server, "after the cap"))
    assert backend(server, max_retries=2, timeout=5.0, max_retry_after_s=1.0).turn(START, []).text == "after the cap"
    first, retry = server.requests
    assert 1.0 <= retry.at - first.at < 3.0

    with pytest.raises(AgentError, match="max_retry_after_s must be >= 0"):
        backend(server, max_retry_after_s=-1)


def test_an_answer_trickling_past_the_timeout_is_cut_off_and_retried(server):
    """Every read gets bytes within the SDK's per-read timeout, but the whole answer would take ~5 s:
    the answer's total deadline (`timeout`) cuts it off, and the SDK retries it like a silent server."""
    slow = answer(server, "SLOW " * 40)
    server.push(Reply(body=slow, trickle_s=0.1), answer(server, "the retry's answer"))
    t = backend(server, max_retries=2, timeout=1.0).turn(START, [])
    assert t.text == "the retry's answer"
    first, retry = server.requests
    assert 1.0 <= retry.at - first.at < 5.0 and retry.headers["x-stainless-retry-count"] == "1"

    server.push(Reply(body=slow, trickle_s=0.1))  # no retries left: the timeout's one line
    with pytest.raises(AgentError, match=r"did not answer within 1 s"):
        backend(server, max_retries=0, timeout=1.0).turn(START, [])


CUTS = {
    "stall after the headers": {"cut": 0, "stall_s": 30},
    "stall mid-body": {"cut": 60, "stall_s": 30},
    "reset mid-body": {"cut": 60, "reset": True},
}


@pytest.mark.parametrize("cut", CUTS.values(), ids=list(CUTS))
def test_an_answer_cut_off_mid_body_is_retried_and_the_retry_is_used(server, cut):
    """Status line and headers arrive (Content-Length promising more), then the body stops: a stall
    past the client's timeout, or a TCP reset. The SDK retries; the retry's answer is the turn."""
    lost = answer(server, "LOST " * 40)
    assert len(json.dumps(lost)) > 60  # the cut is inside the body
    server.push(Reply(body=lost, **cut), answer(server, "the retry's answer"))
    t = backend(server, max_retries=2, timeout=0.5).turn(START, [])
    assert t.text == "the retry's answer" and "LOST" not in t.text
    first, retry = server.requests
    assert retry.headers["x-stainless-retry-count"] == "1"
    if not cut.get("reset"):
        assert retry.at - first.at >= 0.5  # the client waited its timeout out, then retried
    # our code path does not stream (see anthropic_backend): the cut bodies above are what can break
    assert not any(b.get("stream") for b in server.bodies)

    server.push(Reply(body=lost, **cut))  # no retries left: one clear line, no traceback
    with pytest.raises(AgentError) as e:
        backend(server, max_retries=0, timeout=0.5).turn(START, [])
    expected = "could not be reached" if cut.get("reset") else "did not answer within 0.5 s"
    assert expected in str(e.value) and server.url in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("body", ["<html><body>502 Bad Gateway</body></html>", {"content": "x"}, {"id": 1}])
def test_a_200_that_is_not_an_api_answer_is_one_clear_error(server, body):
    """A proxy's page or a broken server's JSON under status 200: an AgentError naming the URL and
    showing what came, not an AttributeError from deep in the parsing."""
    server.push(Reply(body=body))
    with pytest.raises(AgentError) as e:
        backend(server, max_retries=0).turn(START, [])
    msg = str(e.value)
    assert server.url in msg and "\n" not in msg
    assert "answered HTTP 200 but not with a usable response" in msg or "answered without choices" in msg
    if isinstance(body, str):
        assert "502 Bad Gateway" in msg


# ---- through the harness ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local(planned, tmp_path_factory):
    """A copy of the planned example store with m01 and m02 validated in the local sandbox (one run each)."""
    root = tmp_path_factory.mktemp("llm_faults")
    return validated_copy(planned, root, ("m01", "m02"), load_rules(rules_file(root)))


def rules_file(directory, **harness) -> str:
    """A rules file overriding harness budgets (one test run per side keeps verification fast)."""
    path = directory / f"rules-{len(list(directory.glob('rules-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump({"environments": {"repeats": 1}, "harness": harness}))
    return str(path)


def solution(store, key, mid) -> list[tuple[str, str]]:
    """(path, content) of the files the ground truth changes, as a capable model would write them."""
    m = store.load_milestone(key, mid)
    gt, _ = store.read_patches(key, mid)
    repo = GitRepo(store.git_cache(key))
    return [(f.path, repo.show(m.verify_commit, f.path).decode()) for f in split_diff(gt)]


def assert_log_is_whole(events, calls: list[list[str]]) -> None:
    """No gap and no duplicate: seqs are 0..n-1, one Dev message per turn (1..N) with the expected
    tool call ids, and exactly one event per tool call."""
    assert [e.seq for e in events] == list(range(len(events)))
    messages = [e for e in events if e.role == "dev" and e.action.type == "message"]
    assert [e.turn_id for e in messages] == list(range(1, len(calls) + 1))
    assert [[c["id"] for c in e.action.args["tool_calls"]] for e in messages] == calls
    answered = [e.call_id for e in events if e.role == "dev" and e.call_id]
    assert answered == [i for ids in calls for i in ids]


def test_a_run_through_mixed_api_faults_passes_with_every_turn_recorded_once(local, tmp_path):
    """429, 500, 529 overloaded, a reset, a stall mid-body and a reset mid-body between good answers
    (Anthropic SDK), and one answer whose tool JSON is broken: the milestone passes; the broken call
    is an error observation the Dev is shown; no answer is lost or recorded twice."""
    store, key = local
    writes = [
        A.tool_use(f"toolu_w{i}", "write_file", {"path": p, "content": c})
        for i, (p, c) in enumerate(solution(store, key, "m01"))
    ]
    lost = A.message(A.tool_use("toolu_lost", "submit", {}), stop_reason="tool_use")
    with AnthropicServer() as server:
        server.push(
            server.error(429, "rate limited"),
            A.message(A.text("Looking."), A.tool_use("toolu_1", "list_dir", {"path": "."}), stop_reason="tool_use"),
            server.error(500, "internal error"),
            server.error(529, "Overloaded"),
            A.message(A.tool_use("toolu_bad", "write_file", BROKEN), stop_reason="tool_use"),
            Reply(reset=True),
            A.message(*writes, stop_reason="tool_use"),
            Reply(body=lost, cut=60, stall_s=30),
            A.message(A.tool_use("toolu_t", "run_tests", {}), stop_reason="tool_use"),
            Reply(body=lost, cut=60, reset=True),
            A.message(A.text("Done."), A.tool_use("toolu_s", "submit", {"message": "done"}), stop_reason="tool_use"),
        )
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=3, timeout=1.0)
        nav = Navigator(
            store,
            key,
            agent,
            load_rules(rules_file(tmp_path)),
            run_id="anthropic-faults",
            backend="local",
            log=lambda *_: None,
        )
        (summary,) = nav.run(["m01"])
        requests = server.requests
    assert summary.status == "PASS" and summary.turns == 5 and summary.tokens.output == 5 * 5  # answers only
    assert [r.headers["x-stainless-retry-count"] for r in requests] == list("01012010101")
    events = Recorder.open(nav.run_dir / "m01").events()
    assert_log_is_whole(events, [["toolu_1"], ["toolu_bad"], [w["id"] for w in writes], ["toolu_t"], ["toolu_s"]])
    assert "toolu_lost" not in json.dumps([e.model_dump(mode="json") for e in events])
    bad = next(e for e in events if e.call_id == "toolu_bad")
    assert bad.action.type == "write_file" and bad.ok is False
    assert bad.observation.startswith("error: the arguments of write_file are not a valid JSON object")
    # the Dev is shown the error: the next request (and its retry) carries it as the call's result
    for r in requests[5:7]:
        results = [
            b
            for m in r.body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result" and b["tool_use_id"] == "toolu_bad"
        ]
        assert len(results) == 1 and "not a valid JSON object" in results[0]["content"]
    assert events[-1].action.type == "milestone_end" and events[-1].action.content == "PASS"


def test_the_cli_run_survives_faults_stops_clearly_on_a_bad_answer_and_resumes(local, run_cli, tmp_path):
    """`harnessforge run --agent openai` against the local server: faults between answers are retried,
    a broken tool call is an error event; a 200 that is no answer (a proxy's page) stops the run with
    one line; the rerun (in-process, to save a second CLI start) resumes with nothing lost or repeated
    and the milestone passes."""
    store, key = local
    writes = [
        OC.tool_call(f"call_w{i}", "write_file", {"path": p, "content": c})
        for i, (p, c) in enumerate(solution(store, key, "m01"))
    ]
    rules = rules_file(tmp_path)
    args = (
        "--rules",
        rules,
        "run",
        key,
        "--agent",
        "openai",
        "--sandbox",
        "local",
        "--milestones",
        "m01",
        "--run-id",
        "openai-faults",
    )
    with OpenAIServer() as server:
        env = {"OPENAI_API_KEY": "EMPTY", "OPENAI_BASE_URL": server.base_url}
        server.push(
            server.error(429, "rate limited"),
            OC.completion("Looking around.", [OC.tool_call("call_1", "list_dir", {"path": "."})]),
            server.error(503, "overloaded"),
            Reply(reset=True),
            OC.completion(None, [OC.tool_call("call_bad", "write_file", BROKEN)]),
            server.error(500, "internal error"),
            OC.completion(None, writes),
        )
        server.always = Reply(body="<html><body>502 Bad Gateway</body></html>")
        first = run_cli(*args, store=store.root, env=env)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "answered HTTP 200 but not with a usable response" in first.stderr and "Traceback" not in first.stderr
        run_dir = store.root / "trajectories" / key / "openai-faults"
        kept = Recorder.open(run_dir / "m01").events()
        assert_log_is_whole(kept, [["call_1"], ["call_bad"], [w["id"] for w in writes]])
        assert not (run_dir / "m01" / "summary.json").exists()

        server.always = None
        server.push(
            server.error(500, "internal error"),
            OC.completion(None, [OC.tool_call("call_t", "run_tests", {})]),
            Reply(reset=True),
            OC.completion("Done.", [OC.tool_call("call_s", "submit", {})]),
        )
        logs: list[str] = []
        sampling = sampling_of("openai", None, load_rules(rules).harness)  # as `run` asks: the same policy
        agent = make_agent("openai", api_key="EMPTY", base_url=server.base_url, sampling=sampling)
        (summary,) = Navigator(
            store, key, agent, load_rules(rules), run_id="openai-faults", backend="local", log=logs.append
        ).run(["m01"])
        resumed = server.requests[-4]
    assert summary.status == "PASS" and summary.turns == 5 and summary.tokens.output == 5 * 5
    assert any("m01: resumed at event" in line for line in logs)
    events = Recorder.open(run_dir / "m01").events()
    assert events[: len(kept)] == kept
    calls = [["call_1"], ["call_bad"], [w["id"] for w in writes], ["call_t"], ["call_s"]]
    assert_log_is_whole(events, calls)
    bad = next(e for e in events if e.call_id == "call_bad")
    assert bad.ok is False and "not a valid JSON object" in bad.observation
    # the resumed conversation is the recorded one: the broken call's error result is in it
    sent = [m for m in resumed.body["messages"] if m.get("tool_call_id") == "call_bad"]
    assert len(sent) == 1 and "not a valid JSON object" in sent[0]["content"]


# ---- budgets ------------------------------------------------------------------------------------
def idle(i: int, output_tokens: int = 200_000) -> dict:
    """A turn of a model that never submits: it looks around and reports a big bill
    (claude-sonnet-4-6: 200k output tokens at $15/M = $3.00)."""
    return A.message(
        A.tool_use(f"toolu_{i}", "list_dir", {"path": "."}), stop_reason="tool_use", output_tokens=output_tokens
    )


# (harness rules, reply delay, turns taken, the summary's `stopped_by`); $3.00 a turn, 200k tokens a turn
BUDGETS = {
    "cost": ({"max_cost_per_milestone_usd": 5}, 0.0, 2, "max_cost_per_milestone_usd: $6.00 > $5"),
    "turns": ({"max_turns": 3}, 0.0, 3, "max_turns: 3 turns"),
    "tokens": ({"max_tokens_per_milestone": 500_000}, 0.0, 3, "max_tokens_per_milestone: 600030 tokens > 500000"),
    "wall": ({"max_wall_s_per_milestone": 3, "max_cost_per_milestone_usd": 1000}, 0.4, None, "max_wall_s_per_"),
}


@pytest.mark.parametrize("limits,delay,turns,reason", BUDGETS.values(), ids=list(BUDGETS))
def test_a_milestone_budget_stops_a_model_that_never_submits(local, tmp_path, limits, delay, turns, reason):
    """The milestone ends STUCK when a budget set in the rules file is spent; the summary, the
    milestone_end event and the log say which; no model call is made after it."""
    store, key = local
    logs: list[str] = []
    with AnthropicServer() as server:
        server.push(*[Reply(body=idle(i), delay_s=delay) for i in range(12)])
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=0)
        nav = Navigator(
            store,
            key,
            agent,
            load_rules(rules_file(tmp_path, **limits)),
            run_id=f"budget-{next(iter(limits))}",
            backend="local",
            log=logs.append,
        )
        (summary,) = nav.run(["m01"])
        calls = len(server.requests)
    assert summary.status == "STUCK" and summary.stopped_by.startswith(reason)
    if turns is None:  # the wall clock: some turns fit, the budget stops the rest
        turns = summary.turns
        assert 1 <= turns < 12 and summary.wall_s > 3
    assert summary.turns == turns == calls
    end = Recorder.open(nav.run_dir / "m01").events()[-1]
    assert end.action.type == "milestone_end" and end.action.content == "STUCK"
    assert end.action.args["stopped_by"] == summary.stopped_by
    assert f"m01: STUCK (out of budget: {summary.stopped_by})" in logs[-1]


def test_the_run_budget_stops_the_run_and_no_further_milestone_starts(local, tmp_path):
    """`max_cost_per_run_usd` (from a rules file) stops the running milestone once the run's bill passes
    it (below the milestone budget) and starts no further one; the log says so and names them."""
    store, key = local
    logs: list[str] = []
    with AnthropicServer() as server:
        server.push(*[idle(i) for i in range(6)])
        agent = AnthropicBackend("claude-sonnet-4-6", api_key="test", base_url=server.url, max_retries=0)
        nav = Navigator(
            store,
            key,
            agent,
            load_rules(rules_file(tmp_path, max_cost_per_run_usd=5)),
            run_id="run-budget",
            backend="local",
            log=logs.append,
        )
        (summary,) = nav.run()
        calls = len(server.requests)
    assert summary.status == "STUCK" and summary.turns == calls == 2 and summary.cost_usd > 5
    assert summary.stopped_by == "max_cost_per_run_usd: $6.00 spent by the run > $5"
    assert logs[-1] == "run budget spent: $6.00 > max_cost_per_run_usd $5; not started: m02, m03, m04, m05, m06"
    assert sorted(p.name for p in nav.run_dir.iterdir() if p.is_dir()) == ["m01"]  # m02 is valid, yet not started


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_after_the_current_tool_call_and_the_rerun_resumes(local, tmp_path, number):
    """Issue 32: Ctrl-C was silent and waited for the milestone to end (up to its budget, spending); SIGTERM left
    the sandbox. Now either says so, lets the running call finish and be recorded, closes the sandbox and exits 1;
    the same command resumes from the log and the milestone passes."""
    store, key = local
    run_id = f"stopped-{number.name.lower()}"
    args = [str(BIN), "--store", str(store.root), "--rules", rules_file(tmp_path), "run", key, "--agent", "openai"]
    args += ["--sandbox", "local", "--milestones", "m01", "--run-id", run_id]
    writes = [
        OC.tool_call(f"call_w{i}", "write_file", {"path": p, "content": c})
        for i, (p, c) in enumerate(solution(store, key, "m01"))
    ]
    with OpenAIServer() as server:
        env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "OPENAI_BASE_URL": server.base_url, "COLUMNS": "200"}
        server.push(OC.completion("Waiting.", [OC.tool_call("call_1", "bash", {"command": "sleep 3; echo slept"})]))
        server.always = Reply(body="never asked: the run stops first")
        started = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # inside the 3 s call
        started.send_signal(number)
        said, _ = started.communicate(timeout=60)
        assert started.returncode == 1, said
        assert "stopping after the current tool call; run again to resume" in said and "Traceback" not in said
        milestone_dir = store.run_dir(key, run_id) / "m01"
        events = Recorder.open(milestone_dir).events()
        assert events[-1].call_id == "call_1" and events[-1].observation.startswith("slept")
        assert not (milestone_dir / "summary.json").exists() and len(server.requests) == 1
        server.always = None
        server.push(OC.completion(None, writes), OC.completion("Done.", [OC.tool_call("call_s", "submit", {})]))
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    summary = json.loads((milestone_dir / "summary.json").read_text())
    assert summary["status"] == "PASS"
    assert Recorder.open(milestone_dir).events()[: len(events)] == events
