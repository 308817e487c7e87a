"""The Anthropic and OpenAI backends, driven through the real SDKs against local wire-protocol servers."""

from __future__ import annotations

import json
import time

import anthropic
import pytest

from harnessforge.agents.anthropic_backend import AnthropicBackend
from harnessforge.agents.errors import AgentError
from harnessforge.agents.openai_backend import OpenAIBackend
from harnessforge.agents.pricing import cost_usd, price_of
from harnessforge.models.trajectory import AgentTurn, Usage

from .llm_servers import AnthropicServer, OpenAIServer, PromptCache, Reply

A, OC = AnthropicServer, OpenAIServer  # answer builders: Anthropic messages, OpenAI completions
MODEL = "claude-haiku-4-5"  # priced at $1 / $5 per million tokens; not deprecated in the SDK
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
        },
    },
    {"type": "function", "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}},
]
START = [
    {"role": "system", "content": "You are the Dev."},
    {"role": "user", "content": "Fix the bug."},
]


def assistant(t: AgentTurn) -> dict:
    """The assistant message the harness appends for a turn (as `navigator._assistant` does)."""
    msg = {"role": "assistant", "content": t.text, "reasoning_content": t.reasoning}
    if t.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
            for c in t.tool_calls
        ]
    return msg


@pytest.fixture
def claude():
    with AnthropicServer() as server:
        yield server


@pytest.fixture
def oai():
    with OpenAIServer() as server:
        yield server


def anthropic_backend(server: AnthropicServer, **kw) -> AnthropicBackend:
    kw = {"api_key": "test", "base_url": server.url, "max_retries": 2, "timeout": 5.0, **kw}
    return AnthropicBackend(MODEL, **kw)


def openai_backend(server: OpenAIServer, model: str = "gpt-4.1", **kw) -> OpenAIBackend:
    kw = {"api_key": "EMPTY", "base_url": server.base_url, "max_retries": 2, "timeout": 5.0, **kw}
    return OpenAIBackend(model, **kw)


# ---- Anthropic --------------------------------------------------------------------------------
def test_anthropic_tool_use_round_trip_converts_messages_caching_and_thinking(claude):
    claude.push(
        A.message(
            A.thinking("The test fails in parse().", signature="sig-1"),
            A.text("Let me look."),
            A.tool_use("toolu_1", "bash", {"cmd": "pytest -x"}),
            A.tool_use("toolu_2", "bash", {"cmd": "cat parse.py"}),
            stop_reason="tool_use",
        ),
        A.message(A.text("Fixed."), stop_reason="end_turn"),
    )
    backend = anthropic_backend(claude, thinking_budget=2048)
    t1 = backend.turn(START, TOOLS)
    assert (t1.reasoning, t1.text, t1.stop_reason) == ("The test fails in parse().", "Let me look.", "tool_use")
    assert [(c.id, c.name, c.args, c.error) for c in t1.tool_calls] == [
        ("toolu_1", "bash", {"cmd": "pytest -x"}, None),
        ("toolu_2", "bash", {"cmd": "cat parse.py"}, None),
    ]

    messages = [
        *START,
        assistant(t1),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "1 failed"},
        {"role": "user", "content": "[hint L1] Look at parse()."},  # a Mentor hint between two results
        {"role": "tool", "tool_call_id": "toolu_2", "content": "def parse(): ..."},
    ]
    t2 = backend.turn(messages, TOOLS)
    assert (t2.text, t2.tool_calls, t2.stop_reason) == ("Fixed.", [], "end_turn")

    first, second = claude.bodies
    assert first["model"] == MODEL and first["max_tokens"] == 8192
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first["system"] == [{"type": "text", "text": "You are the Dev.", "cache_control": {"type": "ephemeral"}}]
    assert first["tools"] == [
        {
            "name": "bash",
            "description": "Run a shell command.",
            "input_schema": TOOLS[0]["function"]["parameters"],
        },
        {
            "name": "submit",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug.", "cache_control": {"type": "ephemeral"}}]}
    ]

    user, answer, results = second["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]}  # same prefix as sent
    assert answer == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The test fails in parse().", "signature": "sig-1"},  # replayed, signed
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "pytest -x"}},
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "bash",
                "input": {"cmd": "cat parse.py"},
            },
        ],
    }
    assert results == {
        "role": "user",
        "content": [  # both results in one message, first, and the hint after them
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "def parse(): ..."},
            {"type": "text", "text": "[hint L1] Look at parse().", "cache_control": {"type": "ephemeral"}},
        ],  # the breakpoint on the newest message: the next call reads this whole conversation
    }
    assert sum(json.dumps(b).count("cache_control") for b in second.values()) == 3


def test_anthropic_drops_reasoning_without_thinking_and_sanitises_foreign_ids(claude):
    claude.push(A.message(A.text("ok")))
    messages = [
        *START,
        {
            "role": "assistant",
            "content": "",  # no text: no empty text block
            "reasoning_content": "thought by another model",
            "tool_calls": [{"id": "call.1:x", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call.1:x", "content": ""},
    ]
    anthropic_backend(claude).turn(messages, [])
    body = claude.bodies[0]
    assert "thinking" not in body and "tools" not in body
    assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "call_1_x", "name": "bash", "input": {}}]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1_x",
            "content": "(no output)",
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_anthropic_usage_cache_tokens_cost_and_latency(claude):
    claude.push(A.message(A.text("hi"), input_tokens=100, cache_read=1000, cache_write=200, output_tokens=50))
    t = anthropic_backend(claude).turn(START, TOOLS)
    assert t.usage == Usage(input=1300, cached=1000, output=50)  # input counts every prompt token
    # 100 fresh x $1 + 1000 read x $0.10 + 200 written x $1.25 + 50 out x $5, per million
    assert t.cost_usd == pytest.approx(700e-6)
    assert t.model == "claude-sonnet-4-5"  # the answer's model
    assert 0 < t.latency_s < 5


def test_emulated_prompt_cache_reads_the_prefix_an_earlier_request_wrote():
    """The benchmark's cached share rests on this emulator: a prefix written at a breakpoint is read
    back by the next request that starts with it, and by nothing else."""
    cache = PromptCache()
    long_system = {"role": "system", "content": "You are the Dev. " + "Follow the house rules. " * 300}
    with AnthropicServer(cache=cache) as server:
        backend = anthropic_backend(server)
        server.push(
            A.message(A.tool_use("toolu_1", "bash", {"cmd": "cat app.py"}), stop_reason="tool_use"),
            A.message(A.tool_use("toolu_2", "bash", {"cmd": "pytest"}), stop_reason="tool_use"),
            A.message(A.text("Done.")),
            A.message(A.text("Other.")),
        )
        messages = [long_system, {"role": "user", "content": "Fix the bug."}]
        t1 = backend.turn(messages, TOOLS)
        messages += [assistant(t1), {"role": "tool", "tool_call_id": "toolu_1", "content": "x = 1\n" * 500}]
        t2 = backend.turn(messages, TOOLS)
        messages += [assistant(t2), {"role": "tool", "tool_call_id": "toolu_2", "content": "1 failed\n" * 300}]
        t3 = backend.turn(messages, TOOLS)
        other = backend.turn([{"role": "system", "content": "Another prompt. " * 400}, messages[1]], TOOLS)
    u1, u2, u3, u4 = cache.log
    # 1st: nothing cached yet; the whole request (tools, system, the newest message) is written
    assert t1.usage.cached == 0 and u1["cache_creation_input_tokens"] >= 1024 and u1["input_tokens"] == 0
    assert t1.usage.input == u1["cache_creation_input_tokens"]
    # 2nd: reads exactly what the 1st wrote and writes the rest, up to its breakpoint on the newest message
    assert t2.usage.cached == u2["cache_read_input_tokens"] == u1["cache_creation_input_tokens"]
    assert u2["cache_creation_input_tokens"] > 0 and u2["input_tokens"] == 0
    # 3rd: reads the 2nd's whole cached prefix (its breakpoint is 2 blocks back, within the lookback)
    assert t3.usage.cached == u2["cache_read_input_tokens"] + u2["cache_creation_input_tokens"]
    assert t3.usage.input == sum(
        u3[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert t3.usage.input > t2.usage.input > t1.usage.input
    # another system prompt: the tools alone are under the minimum, so nothing is read
    assert other.usage.cached == u4["cache_read_input_tokens"] == 0
    assert t3.cost_usd < cost_usd(MODEL, Usage(input=t3.usage.input, output=t3.usage.output))


def test_emulated_prompt_cache_looks_back_at_most_20_blocks_from_a_breakpoint():
    cache = PromptCache(min_tokens=1)
    first = [{"role": "user", "content": [{"type": "text", "text": "start", "cache_control": {"type": "ephemeral"}}]}]

    def body(n: int) -> dict:
        later = [{"role": "user", "content": [{"type": "text", "text": f"turn {i}"}]} for i in range(n)]
        later[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return {"model": MODEL, "messages": [{"role": "user", "content": "start"}] + later}

    cache.usage({"model": MODEL, "messages": first})
    assert cache.usage(body(25))["cache_read_input_tokens"] == 0  # the hit is 25 blocks back: not found
    assert cache.usage(body(10))["cache_read_input_tokens"] > 0  # 10 blocks back: read
    assert (
        cache.usage({"model": "claude-opus-4-5", **{"messages": body(10)["messages"]}})["cache_read_input_tokens"] == 0
    )


def test_anthropic_malformed_tool_input_becomes_a_tool_call_error(claude):
    claude.push(A.message(A.tool_use("t1", "bash", "{not json"), A.tool_use("t2", "bash", {"cmd": "ls"})))
    t = anthropic_backend(claude).turn(START, TOOLS)
    bad, good = t.tool_calls
    assert bad.name == "bash" and bad.args == {} and "not valid JSON" in bad.error
    assert good.args == {"cmd": "ls"} and good.error is None


def test_anthropic_retries_429_and_500(claude):
    claude.push(claude.error(429, "rate limited", retry_after="0"), claude.error(500, "boom"), A.message(A.text("ok")))
    assert anthropic_backend(claude).turn(START, TOOLS).text == "ok"
    assert len(claude.requests) == 3
    assert [r.headers["x-stainless-retry-count"] for r in claude.requests] == ["0", "1", "2"]


def test_anthropic_retries_a_connection_reset_and_overloaded(claude):
    overloaded = Reply(
        529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after-ms": "1"}
    )
    claude.push(Reply(reset=True), overloaded, A.message(A.text("ok")))
    assert anthropic_backend(claude).turn(START, TOOLS).text == "ok"
    assert len(claude.requests) == 3


def test_openai_retries_a_connection_reset(oai):
    oai.push(Reply(reset=True), OC.completion("ok"))
    assert openai_backend(oai).turn(START, TOOLS).text == "ok"
    assert len(oai.requests) == 2


def test_anthropic_persistent_failure_is_a_clear_error(claude):
    claude.always = claude.error(500, "internal meltdown")
    with pytest.raises(AgentError, match=r"answered HTTP 500 after 2 retries: internal meltdown") as e:
        anthropic_backend(claude).turn(START, TOOLS)
    assert e.value.status_code == 500 and claude.url in str(e.value)
    assert len(claude.requests) == 3


def test_anthropic_rejected_key_is_not_retried(claude):
    claude.push(claude.error(401, "invalid x-api-key"))
    with pytest.raises(AgentError, match=r"rejected the API key \(401\): invalid x-api-key"):
        anthropic_backend(claude).turn(START, TOOLS)
    assert len(claude.requests) == 1


def test_anthropic_timeout(claude):
    claude.push(Reply(body=A.message(A.text("too late")), delay_s=3))
    start = time.monotonic()
    with pytest.raises(AgentError, match=r"did not answer within 0.3 s \(without retries"):
        anthropic_backend(claude, timeout=0.3, max_retries=0).turn(START, TOOLS)
    assert time.monotonic() - start < 2


def test_anthropic_key_and_url_from_env_or_a_clear_error(claude, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AgentError, match="ANTHROPIC_API_KEY"):
        AnthropicBackend(MODEL)
    with pytest.raises(AgentError, match="thinking_budget"):
        AnthropicBackend(MODEL, api_key="k", thinking_budget=9000, max_tokens=8192)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
    claude.push(A.message(A.text("ok")))
    assert AnthropicBackend(MODEL).turn(START, []).text == "ok"
    assert "from-env" in claude.requests[0].headers.get("x-api-key", claude.requests[0].headers.get("authorization"))


def test_anthropic_server_streams_the_same_script_as_sse(claude):
    """The server is generic: a streaming client (the SDK here, the `claude` CLI later) gets SSE."""
    claude.push(A.message(A.thinking("hm"), A.text("hi"), A.tool_use("t1", "bash", {"cmd": "ls"}), output_tokens=7))
    client = anthropic.Anthropic(api_key="test", base_url=claude.url, max_retries=0)
    with client.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x"}]) as s:
        msg = s.get_final_message()
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use"]
    assert msg.content[2].input == {"cmd": "ls"} and msg.usage.output_tokens == 7
    assert claude.bodies[0]["stream"] is True


# ---- OpenAI-compatible ------------------------------------------------------------------------
def test_openai_tool_use_round_trip(oai):
    oai.push(
        OC.completion(
            "Running the tests.",
            [OC.tool_call("call_1", "bash", {"cmd": "pytest"}), OC.tool_call("call_2", "submit", "")],
            reasoning_content="Run tests first.",  # vLLM reasoning parser
        ),
        OC.completion("Done."),
    )
    backend = openai_backend(oai, temperature=0.2)
    t1 = backend.turn(START, TOOLS)
    assert (t1.reasoning, t1.text, t1.stop_reason) == ("Run tests first.", "Running the tests.", "tool_calls")
    assert [(c.id, c.name, c.args, c.error) for c in t1.tool_calls] == [
        ("call_1", "bash", {"cmd": "pytest"}, None),
        ("call_2", "submit", {}, None),  # "" arguments: a call without arguments
    ]
    messages = [
        *START,
        assistant(t1),
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "user", "content": "[hint L1] check"},
        {"role": "tool", "tool_call_id": "call_2", "content": "submitted"},
    ]
    t2 = backend.turn(messages, TOOLS)
    assert (t2.text, t2.tool_calls, t2.stop_reason) == ("Done.", [], "stop")

    first, second = oai.bodies
    assert first == {"model": "gpt-4.1", "messages": START, "tools": TOOLS, "temperature": 0.2}
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool", "user"]
    sent = second["messages"][2]
    assert "reasoning_content" not in sent  # OpenAI rejects it; vLLM templates opt in (send_reasoning)
    assert sent["tool_calls"][1]["function"] == {"name": "submit", "arguments": "{}"}
    assert oai.requests[0].headers["authorization"] == "Bearer EMPTY"
    assert oai.requests[0].path == "/v1/chat/completions"


def test_openai_usage_cached_tokens_cost_and_newer_vllm_reasoning_field(oai):
    oai.push(
        OC.completion("hi", prompt_tokens=1000, cached_tokens=800, completion_tokens=100),
        OC.completion("hi", model="Qwen/Qwen3-32B", reasoning="thinking..."),  # vLLM >= 0.10 names it `reasoning`
    )
    t = openai_backend(oai).turn(START, [])
    assert t.usage == Usage(input=1000, cached=800, output=100)
    assert t.cost_usd == pytest.approx((200 * 2 + 800 * 0.5 + 100 * 8) / 1e6)
    assert t.model == "local-model" and 0 < t.latency_s < 5
    t = openai_backend(oai, model="Qwen/Qwen3-32B").turn(START, [])
    assert (t.reasoning, t.cost_usd, t.usage) == ("thinking...", 0.0, Usage(input=10, output=5))
    assert "tools" not in oai.bodies[1]


def test_openai_malformed_arguments_and_send_reasoning(oai):
    oai.push(OC.completion(None, [OC.tool_call("c1", "bash", '{"cmd": "ls"'), OC.tool_call("c2", "bash", "[1]")]))
    oai.push(OC.completion("ok"))
    backend = openai_backend(oai, send_reasoning=True, max_tokens=512)
    t = backend.turn(START, TOOLS)
    assert [(c.args, c.error is not None) for c in t.tool_calls] == [({}, True), ({}, True)]
    assert "not valid JSON" in t.tool_calls[0].error and "not a JSON object" in t.tool_calls[1].error
    raw = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "r",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"'}}],
    }
    backend.turn([*START, raw, {"role": "tool", "tool_call_id": "c1", "content": "bad args"}], TOOLS)
    sent = oai.bodies[1]
    assert sent["max_completion_tokens"] == 512
    assert sent["messages"][2]["reasoning_content"] == "r"
    assert sent["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"  # vLLM would fail to parse it


def test_openai_retries_429_and_500(oai):
    oai.push(oai.error(429, "slow down", retry_after="0"), oai.error(503, "overloaded"), OC.completion("ok"))
    assert openai_backend(oai).turn(START, TOOLS).text == "ok"
    assert len(oai.requests) == 3


def test_openai_persistent_failure_timeout_and_missing_key(oai, monkeypatch):
    oai.always = oai.error(500, "model server crashed")
    with pytest.raises(AgentError, match=r"answered HTTP 500 after 2 retries: model server crashed") as e:
        openai_backend(oai).turn(START, TOOLS)
    assert e.value.status_code == 500 and len(oai.requests) == 3

    oai.always = None
    oai.push(Reply(body=OC.completion("late"), delay_s=3))
    with pytest.raises(AgentError, match=r"did not answer within 0.3 s"):
        openai_backend(oai, timeout=0.3, max_retries=0).turn(START, TOOLS)

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4.1")
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    monkeypatch.setenv("OPENAI_BASE_URL", oai.base_url)
    oai.push(OC.completion("ok"))
    assert OpenAIBackend("m").turn(START, []).text == "ok"


def test_unreachable_server_is_a_clear_error():
    with OpenAIServer() as gone:
        url = gone.base_url
    with pytest.raises(AgentError, match=r"could not be reached \(without retries"):
        OpenAIBackend("m", api_key="k", base_url=url, max_retries=0).turn(START, [])


# ---- pricing ----------------------------------------------------------------------------------
def test_pricing_names_snapshots_and_unknown_models():
    assert price_of("claude-haiku-4-5-20251001") == price_of("claude-haiku-4-5")
    assert price_of("anthropic/claude-sonnet-4-5") is not None
    assert price_of("gpt-4.1-2025-04-14").input == 2 and price_of("gpt-4.1-mini").input == 0.4
    assert price_of("Qwen/Qwen3-32B") is None
    assert cost_usd("my-finetune", Usage(input=10**6, output=10**6)) == 0.0
    assert cost_usd("gpt-4o", Usage(input=10**6, cached=0, output=10**6)) == pytest.approx(12.5)
