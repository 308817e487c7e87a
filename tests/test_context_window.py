"""Long milestones inside the Dev model's context window (issue 34): the real `openai` SDK against a local server
that, like llama.cpp or vLLM, counts each request's prompt and refuses one over its window with HTTP 400."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessforge.agents.factory import make_agent
from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.distill import distill
from harnessforge.export import export
from harnessforge.harness.context_budget import STUB, SUMMARIZE, ContextBudget, elide, window_of
from harnessforge.harness.conversation import rebuild
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.models.trajectory import AgentTurn
from harnessforge.rules import ContextRules, Window, load_rules
from tests.llm_servers import OpenAIServer, Reply
from tests.test_shell_dev import MID, _rules, local  # noqa: F401  (fixture)

MODEL = "local-model"
CHARS_PER_TOKEN = 3  # how the server counts


class WindowedServer(OpenAIServer):
    """Answers the script while the prompt fits `window` tokens; past it, HTTP 400 as a real server says it
    (the scripted answer waits for the next request)."""

    def __init__(self, window: int):
        super().__init__()
        self.window, self.overflows = window, 0

    @staticmethod
    def tokens(body: dict) -> int:
        sent = [body["messages"], body.get("tools") or []]  # (the tool schemas count, as in a real server's prompt)
        return sum(len(json.dumps(part, ensure_ascii=False)) for part in sent) // CHARS_PER_TOKEN

    def answer(self, body: Any, reply: Reply) -> Reply:
        used = self.tokens(body)
        if used > self.window:
            self.overflows += 1
            with self._lock:
                self._queue.appendleft(reply)
            message = f"This model's maximum context length is {self.window} tokens. However, you requested {used}"
            return self.error(400, message)
        if reply.status == 200 and isinstance(reply.body, dict):
            reply.body["usage"]["prompt_tokens"] = used
        return reply


def _rules_for(window: int, output: int = 1000, turns: int = 100):
    rules = _rules()
    context = rules.harness.context.model_copy(update={"windows": {MODEL: Window(context=window, output=output)}})
    harness = rules.harness.model_copy(update={"context": context, "max_turns": turns})
    return rules.model_copy(update={"harness": harness})


def _script(server: OpenAIServer, turns: int, chars: int) -> None:
    for number in range(1, turns + 1):
        command = f"head -c {chars} /dev/zero | tr '\\0' x; echo {number}"  # each its own (no loop, no hint)
        call = OpenAIServer.tool_call(f"call_{number}", "bash", {"command": command})
        server.push(OpenAIServer.completion(content=f"Step {number}.", tool_calls=[call], model=MODEL))


def _run(store, key, server, rules, run_id: str, said: list[str]) -> list:
    agent = OpenAIBackend(MODEL, api_key="EMPTY", base_url=server.base_url, max_retries=0, timeout=30.0)
    Navigator(store, key, agent, rules, run_id=run_id, backend="local", log=said.append).run([MID])
    return Recorder.open(store.milestone_run(key, run_id, MID).dir).events()


def _view(messages: list[dict]) -> list[tuple[str, str]]:
    return [(message["role"], message.get("content") or "") for message in messages]


def _long_passing_script(server: OpenAIServer, store, key, chars: int) -> None:
    """97 turns of `chars`-character outputs, then the milestone's patch applied, its tests run, and `submit`."""
    _script(server, 97, chars)
    patch = store.read_patches(key, MID)[0].decode()
    steps = (
        ("bash", {"command": f"git apply <<'PATCH'\n{patch}PATCH"}),
        ("bash", {"command": "python -m pytest -q tests"}),
        ("submit", {"summary": "Done."}),
    )
    for number, (name, args) in enumerate(steps, 98):
        call = OpenAIServer.tool_call(f"call_{number}", name, args)
        server.push(OpenAIServer.completion(content=f"Step {number}.", tool_calls=[call], model=MODEL))


def test_a_long_milestone_stays_inside_the_window_and_the_rows_are_what_the_model_saw(local, tmp_path):  # noqa: F811
    """100 turns whose outputs total about 5x the window, then a pass: every request fits (no 400 reaches the run),
    the oldest outputs became stubs by `compaction` events, and the conversation rebuilt from the log (what resume,
    the distilled rows and ATIF read) is, request by request, the one the server received; every exported SFT row
    holds, before each turn it trains, exactly the request that turn answered (a row spanning a compaction would
    show a turn stubs it never read: it is cut there)."""
    store, key = local
    window = 40_000  # (at 20,000 the Dev's 100 own turns and their stubs alone leave masking too little room)
    rules = _rules_for(window)
    with WindowedServer(window) as server:
        _long_passing_script(server, store, key, 6500)
        said: list[str] = []
        events = _run(store, key, server, rules, "long", said)
        requests = [request.body for request in server.requests]
    summary = json.loads(store.milestone_run(key, "long", MID).summary.read_text())
    assert summary["status"] == "PASS" and len(requests) == 100, summary
    outputs = sum(len(event.observation) for event in events if event.action.type == "bash")
    assert outputs / CHARS_PER_TOKEN > 5 * window  # what the turns produced: five windows' worth
    assert server.overflows == 0
    assert all(WindowedServer.tokens(body) <= window for body in requests)
    compactions = [event for event in events if event.action.type == "compaction"]
    # rare, each down to `compact_to` of the budget (not one output a turn: a prompt cache holds between them)
    assert 3 <= len(compactions) <= 30, len(compactions)
    assert all(c.action.args["after_tokens"] < c.action.args["before_tokens"] for c in compactions)
    assert compactions[0].action.args["after_tokens"] <= 0.6 * (window - 1000 - 512)  # the Dev's own turns then grow
    assert all(c.action.args["policy"] == "mask" and c.action.args["elided"] for c in compactions)
    # the log's view, at each model call, is the request the model got (its messages, role and text)
    calls = [event.seq for event in events if event.role == "dev" and event.action.type == "message"]
    for body, seq in zip(requests, calls, strict=True):
        conversation = rebuild([event for event in events if event.seq < seq])
        conversation.deliver()  # what the turn's end delivered (hints)
        assert _view(conversation.messages) == _view(body["messages"]), seq
    last = requests[-1]["messages"]
    assert last[1]["role"] == "user" and "Step" not in last[1]["content"]  # the task survives
    stubs = [
        message for message in last if message["role"] == "tool" and message["content"].startswith("[output elided")
    ]
    said = {event.call_id: event.observation for event in events if event.call_id}
    assert stubs and all(
        message["content"] == STUB.format(chars=len(said[message["tool_call_id"]])) for message in stubs
    )
    recent = [message for message in last if message["role"] == "tool"][-4:]
    assert all(message["content"] == said[message["tool_call_id"]] for message in recent)  # the latest whole
    assert "x" * 6500 in recent[0]["content"]

    # (the Reviewer rightly rejects this Dev: 97 outputs never used, then the patch at once; let it through)
    gates = rules.distill.gates | {"suspected_memorisation": ["sft", "kto"]}
    rules = rules.model_copy(update={"distill": rules.distill.model_copy(update={"gates": gates})})
    distill(store, rules, log=lambda *_: None)
    export(store, ["sft", "kto"], tmp_path / "out", rules=rules)
    rows = [row for row in _jsonl(tmp_path / "out" / "sft" / "trl.jsonl") if row["run_id"] == "long"]
    kinds = {row["kind"] for row in rows}
    assert {"milestone", "explore", "implement", "verify"} <= kinds, kinds
    assert sum(row["kind"] == "milestone" for row in rows) == len(compactions) + 1  # one per stretch
    answered = {}  # call id of an answer -> the request it answered
    for number, body in enumerate(requests, 1):
        answered[f"call_{number}"] = body["messages"]
    trained = 0
    for row in rows:
        messages = row["prompt"] + row["completion"]
        for index in range(len(row["prompt"]), len(messages)):
            if messages[index]["role"] == "assistant":
                request = answered[messages[index]["tool_calls"][0]["id"]]
                assert _view(messages[:index]) == _view(request), (row["id"], index)
                trained += 1
    assert trained >= 100  # every turn, in the milestone rows, once
    for row in _jsonl(tmp_path / "out" / "kto" / "trl.jsonl"):  # a KTO prompt: the request of its turn
        if row["run_id"] == "long":
            assert _view(row["prompt"]) == _view(answered[row["completion"][0]["tool_calls"][0]["id"]]), row["id"]


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_server_smaller_than_the_rules_say_gets_one_compaction_and_a_retry(local):  # noqa: F811
    """The rules think the window is 40,000 tokens; the server holds 12,000. Its 400 ("maximum context length")
    makes the harness compact to half and ask again: the run goes on and no 400 ends it."""
    store, key = local
    with WindowedServer(12_000) as server:
        _script(server, 14, 3000)
        said: list[str] = []
        events = _run(store, key, server, _rules_for(40_000, turns=14), "smaller", said)
    summary = json.loads(store.milestone_run(key, "smaller", MID).summary.read_text())
    assert summary["status"] == "STUCK" and summary["stopped_by"] == "max_turns: 14 turns"
    assert server.overflows >= 1
    assert [event for event in events if event.action.type == "compaction"]
    assert len([event for event in events if event.action.type == "message"]) == 14


def test_a_task_that_cannot_fit_ends_the_milestone_as_context_window_and_the_chain_goes_on(local):  # noqa: F811
    """A window smaller than the task itself: nothing can be elided, so the milestone ends STUCK with
    `stopped_by: context_window` (one line), never a run that errors out and fails the same way on every resume."""
    store, key = local
    with WindowedServer(300) as server:
        _script(server, 3, 10)
        said: list[str] = []
        _run(store, key, server, _rules_for(400, output=100, turns=3), "tiny", said)
        assert server.requests == []  # nothing was sent that could not fit
    summary = json.loads(store.milestone_run(key, "tiny", MID).summary.read_text())
    assert summary["status"] == "STUCK" and summary["stopped_by"].startswith("context_window: the conversation needs")
    assert [line for line in said if "context_window" in line]


class SummarizingServer(WindowedServer):
    """Answers a summary request (the budget's own system prompt) apart from the script: one short summary each."""

    def __init__(self, window: int):
        super().__init__(window)
        self.summaries = 0

    def answer(self, body: Any, reply: Reply) -> Reply:
        if body["messages"][0]["content"] == SUMMARIZE:
            self.summaries += 1
            with self._lock:
                self._queue.appendleft(reply)
            summary = OpenAIServer.completion(f"Summary {self.summaries}: I listed files and thought.", model=MODEL)
            return super().answer(body, Reply(body=summary))
        return super().answer(body, reply)


def _thinker(server: OpenAIServer, turns: int, chars: int) -> None:
    """A Dev whose own answers are long (its reasoning), each with a small call: masking has little to elide."""
    for number in range(1, turns + 1):
        call = OpenAIServer.tool_call(f"call_{number}", "bash", {"command": f"echo {number}"})
        server.push(OpenAIServer.completion(f"Step {number}: " + "thinking " * (chars // 9), [call], model=MODEL))


@pytest.mark.parametrize("policy", ["mask", "summarize"])
def test_a_dev_whose_own_turns_outgrow_the_window_is_summarized_by_its_own_model(local, policy):  # noqa: F811
    """40 turns of 2,000-character answers (about 2.5x a 12,000-token window) with one-line outputs: masking alone
    ends the milestone `context_window` within a dozen turns; `summarize` has the Dev's model summarize the older turns
    (a costed call, on the compaction event) and the milestone runs its 40 turns, each request under the window and,
    call by call, the conversation the log rebuilds."""
    store, key = local
    window = 12_000
    rules = _rules_for(window, output=500, turns=40)
    context = rules.harness.context.model_copy(update={"policy": policy})
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"context": context})})
    with SummarizingServer(window) as server:
        _thinker(server, 40, 2000)
        events = _run(store, key, server, rules, policy, [])
        requests = [r.body for r in server.requests if r.body["messages"][0]["content"] != SUMMARIZE]
    summary = json.loads(store.milestone_run(key, policy, MID).summary.read_text())
    answers = [event for event in events if event.action.type == "message"]
    if policy == "mask":
        assert summary["stopped_by"].startswith("context_window") and len(answers) < 15
        return
    assert summary["stopped_by"] == "max_turns: 40 turns" and len(answers) == 40 and server.overflows == 0
    summarized = [e for e in events if e.action.type == "compaction" and e.action.args.get("summarized")]
    assert summarized and server.summaries == len(summarized)
    # each compaction well under the budget, so the next is turns away (masking short of its target had compacted
    # at every turn, each breaking a prompt cache and a row): summarized instead
    compacting = [event.turn_id for event in events if event.action.type == "compaction"]
    assert all(later - earlier >= 3 for earlier, later in zip(compacting, compacting[1:])), compacting
    assert all(
        e.usage is not None and e.usage.input > 0 and e.action.args["summary"].startswith("[Your earlier")
        for e in summarized
    )
    assert all(WindowedServer.tokens(body) <= window for body in requests)
    for body, answer in zip(requests, answers, strict=True):
        conversation = rebuild([event for event in events if event.seq < answer.seq])
        conversation.deliver()
        assert _view(conversation.messages) == _view(body["messages"]), answer.turn_id
    last = requests[-1]["messages"]
    assert last[1]["content"] == requests[0]["messages"][1]["content"]  # the task stays
    assert "Summary" in last[2]["content"] and "Step 40" not in last[2]["content"]
    assert sum(m["role"] == "assistant" for m in last) >= rules.harness.context.keep_recent_turns  # the latest whole
    said: list[str] = []
    distill(store, rules, log=said.append)  # a summarized run distils (its rows read the view the log rebuilds)
    assert not [line for line in said if "error" in line.lower() or "skipped" in line.lower()], said


class CachingServer(WindowedServer):
    """Reports, as llama.cpp and the OpenAI API do, the prompt tokens it had cached (a part of `prompt_tokens`)."""

    def answer(self, body: Any, reply: Reply) -> Reply:
        reply = super().answer(body, reply)
        if reply.status == 200:
            usage = reply.body["usage"]
            usage["prompt_tokens_details"] = {"cached_tokens": max(0, usage["prompt_tokens"] - 26)}
        return reply


def test_cached_prompt_tokens_are_not_counted_twice(local):  # noqa: F811
    """Found with llama.cpp: its usage says 1,903 prompt tokens of which 1,877 cached; counting them twice doubled the
    estimate, and 8 turns that fit an 8k window ended `context_window` at "7,745 tokens". 8 turns of 2,000 characters
    (about 9,300 tokens) fit a 12,000-token window without a compaction."""
    store, key = local
    with CachingServer(12_000) as server:
        _thinker(server, 8, 2000)
        events = _run(store, key, server, _rules_for(12_000, output=500, turns=8), "cached", [])
    summary = json.loads(store.milestone_run(key, "cached", MID).summary.read_text())
    assert summary["stopped_by"] == "max_turns: 8 turns"
    assert not [event for event in events if event.action.type == "compaction"]
    answers = [event for event in events if event.action.type == "message"]
    assert answers[-1].usage.cached > 0 and answers[-1].usage.cached < answers[-1].usage.input


def test_an_unknown_model_gets_the_default_window_and_a_warning():
    rules = ContextRules(windows={"gpt-4o": Window(context=128000, output=16384)})
    said: list[str] = []
    budget = ContextBudget("my-finetune-7b", rules, said.append)
    assert (budget.window, budget.output) == (rules.default.context, rules.default.output)
    assert said == [
        "warning: no context window known for model my-finetune-7b: using 32768 tokens (4096 for output); set it in "
        "the rules' harness.context.windows"
    ]
    assert window_of("openai/GPT-4o-2024-08-06", rules) == (128000, 16384, True)
    budget.calibrate([{"role": "user", "content": "x" * 3000}], prompt_tokens=1)  # a server's nonsense count
    assert 1 <= budget.chars_per_token <= 8


@pytest.mark.parametrize("keep", [0, 2])
def test_the_latest_failure_and_the_recent_outputs_survive(keep):
    rules = ContextRules(keep_recent_outputs=keep, margin_tokens=0, chars_per_token=1.0)
    budget = ContextBudget(MODEL, rules.model_copy(update={"windows": {MODEL: Window(context=4000, output=1)}}))
    messages: list[dict] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for number in range(6):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{number}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{number}", "content": "y" * 1000})
    compaction = budget.fit(messages, protect=["c0"])
    assert compaction is not None and "c0" not in compaction.elided
    assert not {f"c{number}" for number in range(6 - keep, 6)} & set(compaction.elided)


def test_sampling_settings_reach_the_wire_from_the_rules_and_the_command_line(local, tmp_path):  # noqa: F811
    """Issue 34: temperature, max_tokens, timeout and extra_body existed on the backend but nothing reached them, so a
    self-hosted server could write until its own limit. The rules set them per model prefix, `run` overrides them,
    the output cap is always sent (the model's window cap by default), and a resume under others is refused."""
    import os
    import subprocess

    import yaml

    from tests.conftest import BIN

    store, key = local
    rules = tmp_path / "rules.yaml"
    harness = {
        "max_turns": 1,
        "context": {"windows": {MODEL: {"context": 50_000, "output": 777}}},
        "sampling": {"models": {"local": {"temperature": 0.7, "extra_body": {"top_k": 20}}}},
    }
    rules.write_text(yaml.safe_dump({"environments": {"repeats": 1}, "harness": harness}))
    base = [str(BIN / "harnessforge"), "--store", str(store.root), "--rules", str(rules), "run", key]
    base += ["--agent", "openai", "--model", MODEL, "--sandbox", "local", "--milestones", MID, "--run-id", "tuned"]
    with OpenAIServer() as server:
        env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "OPENAI_BASE_URL": server.base_url, "COLUMNS": "200"}
        _script(server, 1, 10)
        done = subprocess.run(
            [*base, "--temperature", "0.2", "--top-p", "0.9", "--timeout", "30"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        (body,) = server.bodies
        assert (body["temperature"], body["top_p"], body["max_completion_tokens"], body["top_k"]) == (0.2, 0.9, 777, 20)
        again = subprocess.run([*base, "--temperature", "1.0"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "was started with agent_policy" in again.stdout + again.stderr
    refused = subprocess.run([*base, "--top-p", "0"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "top_p" in refused.stderr  # a bad value: a usage error, one line


@pytest.mark.parametrize("policy", ["mask", "summarize"])
def test_masking_short_of_its_target_summarizes_when_it_may(policy):
    """Ten long Dev turns and one old output: masking it gets under the budget (3,900) but not to the target (60%):
    `mask` takes that (the next turn will compact again), `summarize` summarizes instead, well under."""
    rules = ContextRules(policy=policy, keep_recent_outputs=0, keep_recent_turns=2, margin_tokens=0, chars_per_token=1)
    budget = ContextBudget(MODEL, rules.model_copy(update={"windows": {MODEL: Window(context=4000, output=100)}}))
    messages: list[dict] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": "c0", "content": "y" * 1000})
    for number in range(10):
        messages.append({"role": "assistant", "content": f"Turn {number}: " + "z" * 300})
    asked: list = []

    def ask(request):
        asked.append(request)
        return AgentTurn(text="What I did.")

    compaction = budget.fit(messages, ask=ask)
    assert compaction is not None and compaction.elided == ["c0"]
    assert budget.limit * rules.compact_to < budget.tokens(elide(messages, ["c0"])) <= budget.limit
    if policy == "mask":
        assert not asked and not compaction.summarized
    else:
        assert len(asked) == 1 and compaction.summarized == 10 and compaction.after_tokens < 1000


def test_a_scaffold_that_compacts_itself_gets_its_models_window_from_the_rules(monkeypatch):
    """OpenHarness and Claude Code compact their own conversations at the window they think their model has: the
    rules' window when the rules list the model (`HF_CONTEXT_WINDOW`, `CLAUDE_CODE_AUTO_COMPACT_WINDOW`), else
    their own knowledge (not the rules' default)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    context = ContextRules(windows={"local-model": Window(context=8192, output=256)})
    with make_agent("openharness", "openai/local-model", api_key="test", context=context) as listed:
        assert listed.context_window == 8192
    with make_agent("openharness", "openai/unlisted-model", api_key="test", context=context) as unlisted:
        assert unlisted.context_window is None
    with make_agent("claude-code-native", "claude-sonnet-4-6", context=load_rules().harness.context) as claude:
        assert claude.window_env == {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}
