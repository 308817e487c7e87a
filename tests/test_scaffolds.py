"""Devs in a scaffold's own agent loop and tools (mini-swe-agent, OpenHarness, Claude Code's native
tools), each the real package against the local wire-protocol servers, on the example repository:
the milestone passes, every tool call is recorded, a Mentor hint reaches the model mid-run, and the
scaffold's name and version are on the run."""

import base64
import json
import subprocess
import sys

import pytest

from harnessforge.agents.anthropic_backend import chat_messages
from harnessforge.agents.claude_code_native import ClaudeCodeNative, cli_version, self_contained
from harnessforge.agents.errors import AgentError
from harnessforge.agents.factory import make_agent, sampling_of
from harnessforge.agents.mini_swe_agent_backend import MiniSweAgent
from harnessforge.agents.openharness_backend import OpenHarnessAgent
from harnessforge.agents.scaffold_link import DRIVERS, GO_ON
from harnessforge.diffs import split_diff
from harnessforge.distill import distill
from harnessforge.export import export
from harnessforge.gitio import GitRepo
from harnessforge.harness.conversation import rebuild, texts_read
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.report.report import build_report
from harnessforge.report.scaffolds import scaffold_comparison
from harnessforge.rules import Sampling, Window, load_rules
from harnessforge.store import Store
from tests.llm_servers import AnthropicServer, OpenAIServer, Reply
from tests.test_analytics import OWN_DIFF, explore
from tests.test_context_window import WindowedServer
from tests.test_run_with_api import _solution
from tests.trajectories import CraftedRun

A, O = AnthropicServer, OpenAIServer  # noqa: E741 - the servers' short names, as in the other tests
SECRET = "sk-ant-hf-scaffold-secret-0123456789"


def mentor_rules():
    """The Mentor answers a stuck phrase at once (no cooldown), so one stuck answer releases L1."""
    rules = load_rules()
    mentor = rules.harness.mentor.model_copy(update={"cooldown_turns": 1, "cooldown_test_runs": 1})
    return rules.model_copy(update={"harness": rules.harness.model_copy(update={"mentor": mentor})})


def solution_commands(store, key, mid) -> list[str]:
    """Shell commands writing the ground truth's files, as a bash-only model writes them."""
    milestone = store.load_milestone(key, mid)
    ground_truth, _ = store.read_patches(key, mid)
    repo = GitRepo(store.git_cache(key))
    commands = []
    for file_diff in split_diff(ground_truth):
        data = base64.b64encode(repo.show(milestone.verify_commit, file_diff.path)).decode()
        commands.append(f"mkdir -p $(dirname {file_diff.path}) && echo {data} | base64 -d > {file_diff.path}")
    return commands


def _texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


def test_mini_swe_agent_passes_a_milestone_with_a_hint_mid_run(validated):
    store, key, _ = validated
    bash = lambda id, command: O.tool_call(id, "bash", {"command": command})  # noqa: E731
    with OpenAIServer() as server:
        server.push(
            O.completion("THOUGHT: look around.", [bash("call_1", "ls")], model="gpt-4.1"),
            O.completion("I will run the tests next.", model="gpt-4.1"),  # no tool call: mini's own format error
            O.completion("THOUGHT: run the tests.", [bash("call_2", "python -m pytest -q tests")], model="gpt-4.1"),
            O.completion("THOUGHT: I'm stuck and need a hint.", [bash("call_3", "ls tasklite")], model="gpt-4.1"),
            O.completion(
                "THOUGHT: write it.",
                [bash("call_4", " && ".join(solution_commands(store, key, "m01")))],
                model="gpt-4.1",
            ),
            O.completion(
                "THOUGHT: done.", [bash("call_5", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], model="gpt-4.1"
            ),
        )
        with MiniSweAgent("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            nav = Navigator(store, key, agent, mentor_rules(), run_id="mini-local", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = server.bodies
    assert summary.status == "PASS" and summary.turns == 6 == len(bodies), [_texts(b)[-1:] for b in bodies]
    assert summary.hints_released[:1] == [1]
    # mini's own prompts and its one tool: the scaffold is not ours
    assert bodies[0]["messages"][0]["role"] == "system" and "bash" in json.dumps(bodies[0]["tools"])
    assert [tool["function"]["name"] for tool in bodies[0]["tools"]] == ["bash"]
    assert "Please solve this issue" in bodies[0]["messages"][1]["content"]
    # the hint released on the stuck answer reached the model before its next call, after the test output
    assert "No tool calls found" in bodies[2]["messages"][-1]["content"]  # mini answered its format slip itself
    fifth = bodies[4]["messages"]
    assert fifth[-2]["role"] == "tool" and "[hint L1]" in fifth[-1]["content"]
    events = Recorder.open(nav.run_dir / "m01").events()
    calls = [e for e in events if e.role == "dev" and e.call_id]
    assert [e.call_id for e in calls] == ["call_1", "call_2", "call_3", "call_4", "call_5"]
    assert all(e.action.type == "bash" for e in calls)
    assert "tasklite" in calls[0].observation
    assert calls[1].test_status is not None and calls[1].test_status.failed > 0  # its pytest, counted as ours
    turns = [e for e in events if e.action.type == "message"]
    assert len(turns) == 6 and turns[1].action.content == "I will run the tests next." and turns[1].usage.output == 5
    hint = next(e for e in events if e.role == "mentor" and e.action.type == "hint")
    assert hint.turn_id == 4 and hint.action.args["rule"] == "explicit_request"
    assert set(calls[3].files_touched) >= {f.path for f in split_diff(store.read_patches(key, "m01")[0])}
    verify = next(e for e in events if e.role == "verifier")
    assert verify.action.verdict == "PASS"
    metadata = json.loads((nav.run_dir / "metadata.json").read_text())
    assert metadata["scaffold"]["name"] == "mini-swe-agent" and metadata["scaffold"]["version"].startswith("2.")
    own = json.loads((nav.run_dir / "m01" / "scaffold_trajectory.json").read_text())
    assert own["trajectory_format"] == "mini-swe-agent-1.1"
    assert any("[hint L1]" in str(m.get("content")) for m in own["messages"])
    # the model's view is the record: mini's format-error feedback is an event, and at every call the user and
    # assistant texts the model got are those the log rebuilds (the system prompt, the task's wrapper and the tool
    # output format are mini's own)
    feedback = [e for e in events if e.action.type == "scaffold_message"]
    assert len(feedback) == 1 and "No tool calls found" in feedback[0].action.content
    assert feedback[0].action.args == {"scaffold": "mini-swe-agent"}
    for body, turn in zip(bodies, turns, strict=True):
        view = rebuild([e for e in events if e.seq < turn.seq])
        view.deliver()
        said = [(m["role"], m["content"]) for m in body["messages"][2:] if m["role"] in ("user", "assistant")]
        recorded = [(m["role"], m["content"]) for m in view.messages[2:] if m["role"] in ("user", "assistant")]
        assert said == recorded, turn.turn_id
    assert [m["content"] for m in own["messages"] if m["role"] == "assistant"][1] == "I will run the tests next."
    assert not list((nav.run_dir / "m01").glob(".partial-*"))  # saved atomically, nothing left behind


def test_a_scaffold_loop_that_gives_up_is_recorded_with_what_the_model_read_next(validated):
    """Prose only: mini answers its model's format slips itself, and after 3 in a row ends its own loop
    (RepeatedFormatError), which the model never reads; the link's "keep working" that follows is a scaffold message,
    and the answer that read it says why mini's loop had ended (`loop_ended` with the scaffold's facts)."""
    store, key, _ = validated
    rules = load_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 4})})
    with OpenAIServer() as server:
        server.push(*[O.completion(f"I think it is number {n}.") for n in range(1, 5)])
        with MiniSweAgent("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            nav = Navigator(store, key, agent, rules, run_id="mini-gives-up", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
    assert summary.status == "STUCK" and summary.turns == 4
    events = Recorder.open(nav.run_dir / "m01").events()
    said = [e.action.content for e in events if e.action.type == "scaffold_message"]
    assert sum("No tool calls found" in text for text in said) == 3 and said[-1] == GO_ON
    turns = [e for e in events if e.action.type == "message"]
    assert [t.action.args.get("backend", {}).get("loop_ended") for t in turns] == [
        None,
        None,
        None,
        ["RepeatedFormatError"],
    ]


def test_a_budget_that_ends_mid_run_leaves_minis_record_complete_with_its_last_answer(validated):
    """The harness stops mini right after an answer (max_turns 2): it closes the link, mini saves its record as it
    ends, so the record holds the last answer (a kill at once left 0 bytes, or the save before it)."""
    store, key, _ = validated
    rules = load_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 2})})
    with OpenAIServer() as server:
        for number in (1, 2):
            server.push(O.completion(f"Look {number}.", [O.tool_call(f"call_{number}", "bash", {"command": "ls"})]))
        with MiniSweAgent("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            nav = Navigator(store, key, agent, rules, run_id="mini-budget", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
    assert summary.status == "STUCK" and summary.stopped_by.startswith("max_turns")
    own = json.loads((nav.run_dir / "m01" / "scaffold_trajectory.json").read_text())
    assert [m["content"] for m in own["messages"] if m["role"] == "assistant"] == ["Look 1.", "Look 2."]
    assert not list((nav.run_dir / "m01").glob(".partial-*"))


@pytest.mark.parametrize("scaffold", [MiniSweAgent, OpenHarnessAgent])
def test_a_scaffold_whose_conversation_outgrows_the_window_ends_the_milestone_stuck(validated, scaffold):
    """The model's server answers 400 "maximum context length" (a scaffold keeps its own context): the milestone
    ends STUCK `stopped_by: context_window` with the turns before it, not an error that stops the chain."""
    store, key, _ = validated
    overflow = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    with OpenAIServer() as server:
        server.push(O.completion("Look.", [O.tool_call("call_1", "bash", {"command": "ls"})]))
        server.push(*[server.error(400, overflow) for _ in range(8)])  # (its client may retry)
        with scaffold("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            nav = Navigator(store, key, agent, load_rules(), run_id=f"{agent.scaffold}-window", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
    assert summary.status == "STUCK" and summary.stopped_by.startswith("context_window: the scaffold's"), summary
    assert "maximum context length" in summary.stopped_by and summary.turns == 2
    events = Recorder.open(nav.run_dir / "m01").events()
    assert [e.call_id for e in events if e.call_id] == ["call_1"] and events[-1].action.type == "milestone_end"


@pytest.mark.parametrize("scaffold", ["mini-swe-agent", "openharness"])
def test_the_rules_output_cap_reaches_a_scaffolds_requests(validated, scaffold, monkeypatch):
    """A scaffold keeps its own settings but the answer's cap, which a self-hosted server otherwise takes as
    "until the context is full" (OpenHarness asks for 16,384 tokens): `run --max-output-tokens` reaches it."""
    store, key, _ = validated
    rules = load_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 1})})
    with OpenAIServer() as server:
        server.push(O.completion("Look.", [O.tool_call("call_1", "bash", {"command": "ls"})]))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        sampling = sampling_of(scaffold, "openai/gpt-4.1", rules.harness, Sampling(max_output_tokens=77))
        with make_agent(scaffold, "openai/gpt-4.1", sampling=sampling) as agent:
            Navigator(store, key, agent, rules, run_id=f"{scaffold}-cap", log=lambda *_: None).run(["m01"])
        (body,) = server.bodies
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 77


def test_a_scaffold_killed_mid_save_leaves_its_last_complete_record(tmp_path):
    """The drivers' save (`link.save_atomically`): SIGKILL while the new record is half written (mini's own
    `Path.write_text` had truncated the file by then) leaves the previous record whole."""
    record = tmp_path / "scaffold_trajectory.json"
    script = f"""
import sys, time
sys.path.insert(0, {str(DRIVERS)!r})
from link import save_atomically
save_atomically(sys.argv[1], {{"messages": ["first"]}})
def slow(value):
    print("saving", flush=True)
    time.sleep(60)
save_atomically(sys.argv[1], {{"messages": ["first", "x" * 100_000], "late": object()}}, default=slow)
"""
    process = subprocess.Popen([sys.executable, "-c", script, str(record)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "saving"  # half of the new record is written
    (partial,) = tmp_path.glob(".partial-*")
    assert partial.stat().st_size > 100_000
    process.kill()
    process.wait()
    assert json.loads(record.read_text()) == {"messages": ["first"]}


def test_a_missing_scaffold_and_a_wrong_version_are_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSFORGE_MINI_SWE_AGENT_PYTHON", str(tmp_path / "no-python"))
    with pytest.raises(AgentError, match="cannot run .*no-python"):
        MiniSweAgent("gpt-4.1", "openai", api_key="test")
    monkeypatch.delenv("HARNESSFORGE_MINI_SWE_AGENT_PYTHON")
    monkeypatch.setattr(MiniSweAgent, "supported", ">=99")
    with pytest.raises(AgentError, match=r"mini-swe-agent 2\.[\d.]+ .* not a supported version \(>=99\)"):
        MiniSweAgent("gpt-4.1", "openai", api_key="test")


def test_openharness_passes_a_milestone_with_a_hint_mid_run(validated):
    store, key, _ = validated
    writes = [
        A.tool_use(f"toolu_w{i}", "write_file", {"path": block["input"]["path"], "content": block["input"]["content"]})
        for i, block in enumerate(_solution(store, key, "m01"))
    ]
    with AnthropicServer() as server:
        server.push(
            A.message(A.text("Let me look."), A.tool_use("toolu_1", "bash", {"command": "ls"}), stop_reason="tool_use"),
            A.message(  # two calls in one answer: OpenHarness runs them concurrently, the harness in order
                A.tool_use("toolu_2", "bash", {"command": "python -m pytest -q tests"}),
                A.tool_use("toolu_g", "grep", {"pattern": "class TaskStore", "root": "tasklite"}),
                stop_reason="tool_use",
            ),
            A.message(
                A.text("I'm stuck and need a hint."),
                A.tool_use("toolu_3", "read_file", {"path": "tasklite/store.py", "limit": 5}),
                stop_reason="tool_use",
            ),
            A.message(*writes, stop_reason="tool_use"),
            A.message(A.text("Done: the tests should pass now.")),  # a final answer: its submission
        )
        with OpenHarnessAgent(
            "claude-sonnet-4-6", "anthropic", api_key="test", base_url=server.url, timeout=120
        ) as agent:
            nav = Navigator(store, key, agent, mentor_rules(), run_id="openharness-local", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = server.bodies
    assert summary.status == "PASS" and summary.turns == 5 == len(bodies)
    # OpenHarness' own system prompt and tool schemas, not ours
    assert {tool["name"] for tool in bodies[0]["tools"]} == {"bash", "read_file", "write_file", "edit_file", "grep"}
    assert "read_file" in json.dumps(bodies[0]["tools"]) and "old_str" in json.dumps(bodies[0]["tools"])
    # read_file as OpenHarness shows it: numbered lines, its window of 5
    fourth = bodies[3]["messages"][-1]["content"]
    result = next(block for block in fourth if block["type"] == "tool_result")
    assert result["tool_use_id"] == "toolu_3" and str(result["content"]).count("\t") == 5
    # the hint rode into the same user message, after the tool result
    assert any(block.get("type") == "text" and "[hint L1]" in block["text"] for block in fourth)
    events = Recorder.open(nav.run_dir / "m01").events()
    calls = [e for e in events if e.role == "dev" and e.call_id]
    kinds = [(e.call_id, e.action.type) for e in calls[:4]]
    assert kinds == [("toolu_1", "bash"), ("toolu_2", "bash"), ("toolu_g", "search"), ("toolu_3", "read_file")]
    assert calls[1].test_status is not None and calls[1].test_status.failed > 0
    # grep is recorded as our search, its own name and arguments kept; the grep really ran in the sandbox
    assert calls[2].action.args["tool"] == "grep" and calls[2].action.args["path"] == "tasklite"
    assert "store.py" in calls[2].observation
    assert all(e.action.type == "write_file" and "tool" not in e.action.args for e in calls[4:])
    submit = next(e for e in events if e.action.type == "submit")
    assert submit.action.args["implicit"] and "tests should pass" in submit.action.content
    metadata = json.loads((nav.run_dir / "metadata.json").read_text())
    assert metadata["scaffold"]["name"] == "openharness" and metadata["scaffold"]["version"] == "0.1.9"
    own = json.loads((nav.run_dir / "m01" / "scaffold_trajectory.json").read_text())
    assert own["format"] == "openharness-messages" and len(own["messages"]) >= 9


@pytest.fixture
def anthropic_for_claude(monkeypatch):
    """A local Messages server; the CLI's own side calls (no tools offered) are answered apart."""
    with AnthropicServer() as server:
        server.main = lambda body: isinstance(body, dict) and bool(body.get("tools"))
        server.side_reply = Reply(body=A.message(A.text("ok")))
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
        yield server


def test_claude_code_native_passes_a_milestone_in_the_sandbox_with_a_hint_mid_run(validated, anthropic_for_claude):
    store, key, _ = validated
    server = anthropic_for_claude
    writes = [
        A.tool_use(
            f"toolu_w{i}", "Write", {"file_path": f"/workspace/{b['input']['path']}", "content": b["input"]["content"]}
        )
        for i, b in enumerate(_solution(store, key, "m01"))
    ]
    server.push(
        A.message(A.text("Looking."), A.tool_use("toolu_1", "Bash", {"command": "ls; env"}), stop_reason="tool_use"),
        A.message(A.tool_use("toolu_2", "Bash", {"command": "python -m pytest -q tests"}), stop_reason="tool_use"),
        A.message(
            A.text("I'm stuck and need a hint."),
            A.tool_use("toolu_3", "Read", {"file_path": "/workspace/tasklite/store.py"}),
            stop_reason="tool_use",
        ),
        A.message(*writes, stop_reason="tool_use"),
        A.message(A.text("Done: the feature is in and the tests pass.")),
    )
    with ClaudeCodeNative("claude-sonnet-4-6", base_url=server.url, timeout=180) as agent:
        nav = Navigator(store, key, agent, mentor_rules(), run_id="claude-native-local", log=lambda *_: None)
        (summary,) = nav.run(["m01"])
        refused = list(agent.relay.refused)
    bodies = [b for b in server.bodies if isinstance(b, dict) and b.get("tools")]
    assert summary.status == "PASS" and summary.turns == 5 == len(bodies)
    # Claude Code's own tools, no MCP server of ours
    names = {tool["name"] for tool in bodies[0]["tools"]}
    print("NATIVE TOOLS", sorted(names))
    assert {"Bash", "Read", "Edit", "Write"} <= names and not any(n.startswith("mcp__") for n in names)
    events = Recorder.open(nav.run_dir / "m01").events()
    calls = [e for e in events if e.role == "dev" and e.call_id]
    assert [(e.call_id, e.action.type, e.action.args.get("tool")) for e in calls[:3]] == [
        ("toolu_1", "bash", "Bash"),
        ("toolu_2", "bash", "Bash"),
        ("toolu_3", "read_file", "Read"),
    ]
    # the commands ran inside the sandbox, as its user, with no key but the relay's placeholder
    assert "tasklite" in calls[0].observation and "ANTHROPIC_API_KEY=ssh-placeholder" in calls[0].observation
    assert SECRET not in json.dumps([e.observation for e in events])
    assert calls[1].test_status is not None and calls[1].test_status.failed > 0  # its pytest, counted as ours
    assert calls[2].action.args["path"] == "tasklite/store.py" and "class TaskStore" in calls[2].observation
    ground_truth = {f.path for f in split_diff(store.read_patches(key, "m01")[0])}
    assert {path for e in calls[3:] for path in e.files_touched} >= ground_truth
    # the hint released on the stuck answer reached the model with the Read's result, mid-run
    hint = next(e for e in events if e.action.type == "hint")
    assert hint.turn_id == 3 and "[hint L1]" in json.dumps(bodies[3]["messages"][-1])
    submit = next(e for e in events if e.action.type == "submit")
    assert submit.action.args["implicit"] and next(e for e in events if e.role == "verifier").action.verdict == "PASS"
    metadata = json.loads((nav.run_dir / "metadata.json").read_text())
    assert metadata["scaffold"]["name"] == "claude-code" and metadata["scaffold"]["version"] == agent.version
    atif = json.loads((nav.run_dir / "m01" / "trajectory.atif.json").read_text())
    assert "Bash" in {tool["function"]["name"] for tool in atif["agent"]["tool_definitions"]}
    assert refused == [] or all(not r.startswith("POST /v1/messages") for r in refused)


# ---- the sandbox attacks, from inside each scaffold's own tool ------------------------------------
ATTACK = r"""python3 - <<'PY'
import socket
try:
    s = socket.socket(); s.settimeout(5); s.connect(("151.101.0.223", 443)); print("NET:open")
except OSError:
    print("NET:blocked")
try:
    socket.getaddrinfo("pypi.org", 443); print("DNS:open")
except OSError:
    print("DNS:blocked")
try:  # the relay's socket, where there is one: anything but the Messages API is refused
    u = socket.socket(socket.AF_UNIX); u.connect("/run/hf/api.sock")
    u.sendall(b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    print("RELAY:" + u.recv(200).decode().split("\r\n")[0])
except OSError:
    print("RELAY:none")
PY
pip="python -m pip download --no-deps --retries 0 --timeout 5 -d /tmp/dl --index-url https://pypi.org/simple"
env -u PIP_NO_INDEX $pip requests >/dev/null 2>&1 && echo PIP:open || echo PIP:blocked
git cat-file -e VERIFY 2>/dev/null && echo GIT:future || echo GIT:clean
echo "TAGS:$(git tag | wc -l)"
rm -f /run/hf/api.sock 2>/dev/null; test -S /run/hf/api.sock && echo SOCKET:kept || echo SOCKET:none
echo "SECRETS:$( (env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n') | grep -c sk-ant-hf-scaffold)"
"""


def one_turn_rules():
    rules = load_rules()
    return rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 1})})


@pytest.mark.parametrize("scaffold", ["mini-swe-agent", "openharness", "claude-code-native"])
def test_the_sandbox_holds_inside_each_scaffold(validated, scaffold, monkeypatch):
    store, key, _ = validated
    later = store.load_milestone(key, "m02").verify_commit  # an object of the future, for m01's sandbox
    command = ATTACK.replace("VERIFY", later)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = OpenAIServer() if scaffold == "mini-swe-agent" else AnthropicServer()
    with server:
        if scaffold == "mini-swe-agent":
            server.push(O.completion("THOUGHT: probe.", [O.tool_call("call_a", "bash", {"command": command})]))
            agent = MiniSweAgent("gpt-4.1", "openai", base_url=server.base_url, timeout=120)
        elif scaffold == "openharness":
            server.push(A.message(A.tool_use("call_a", "bash", {"command": command}), stop_reason="tool_use"))
            agent = OpenHarnessAgent("claude-sonnet-4-6", "anthropic", base_url=server.url, timeout=120)
        else:
            server.main = lambda body: isinstance(body, dict) and bool(body.get("tools"))
            server.side_reply = Reply(body=A.message(A.text("ok")))
            server.push(A.message(A.tool_use("call_a", "Bash", {"command": command}), stop_reason="tool_use"))
            agent = ClaudeCodeNative("claude-sonnet-4-6", base_url=server.url, timeout=180)
        with agent:
            nav = Navigator(store, key, agent, one_turn_rules(), run_id=f"attack-{scaffold}", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
    probe = next(e for e in Recorder.open(nav.run_dir / "m01").events() if e.call_id == "call_a")
    seen = dict(
        line.split(":", 1) for line in probe.observation.splitlines() if line.split(":", 1)[0].isupper() and ":" in line
    )
    assert seen["NET"] == "blocked" and seen["DNS"] == "blocked", probe.observation
    assert seen["PIP"] == "blocked" and seen["GIT"] == "clean" and seen["TAGS"] == "0", probe.observation
    assert seen["SECRETS"] == "0", probe.observation  # the key the scaffold was given is not in the sandbox
    if scaffold == "claude-code-native":
        assert seen["RELAY"].startswith("HTTP/1.1 403") and "GET /v1/models" in agent.relay.refused, probe.observation
        assert seen["SOCKET"] == "kept", probe.observation  # mounted read-only: the Dev cannot cut its own line
    else:
        assert seen["RELAY"] == "none" and seen["SOCKET"] == "none", probe.observation
    assert summary.status == "STUCK" and summary.turns == 1


def test_a_relay_socket_that_is_gone_stops_the_run_in_one_line_and_keeps_the_turns(validated, anthropic_for_claude):
    store, key, _ = validated
    server = anthropic_for_claude
    server.push(A.message(A.tool_use("toolu_1", "Bash", {"command": "ls"}), stop_reason="tool_use"))
    with ClaudeCodeNative("claude-sonnet-4-6", base_url=server.url, timeout=120, max_retries=0) as agent:
        gone = lambda *_: (agent.link / "api.sock").unlink()  # noqa: E731 - after the first turn
        nav = Navigator(store, key, agent, load_rules(), run_id="claude-native-gone", log=lambda *_: None, on_turn=gone)
        with pytest.raises(
            AgentError, match=r"(?s)claude CLI exited.*the API relay's socket .*api.sock is gone"
        ) as caught:
            nav.run(["m01"])
    assert "\n" not in str(caught.value)
    kept = Recorder.open(nav.run_dir / "m01").events()
    assert [e.action.type for e in kept] == ["milestone_start", "message", "bash"] and "tasklite" in kept[2].observation


def test_a_cli_too_old_or_not_a_binary_is_one_clear_line(tmp_path):
    old = tmp_path / "claude"
    old.write_text("#!/bin/sh\necho '1.0.44 (Claude Code)'\n")
    old.chmod(0o755)
    with pytest.raises(AgentError, match=r"version 1\.0\.44; the native mode needs >= 2\.1\.0"):
        cli_version(str(old))
    with pytest.raises(AgentError, match="not a self-contained binary"):
        self_contained(str(old))


# ---- what the data says of each scaffold ----------------------------------------------------------
BASH_ONLY = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def test_rows_name_their_scaffold_and_carry_its_tools_and_the_report_compares_scaffolds(tmp_path):
    store = Store(tmp_path / "store")
    mini = {"name": "mini-swe-agent", "version": "2.4.6", "tools": BASH_ONLY}
    for run_id, scaffold in (("ours", None), ("mini", mini)):
        run = explore(CraftedRun(store, run_id, scaffold=scaffold)).say().edit(sha="e1").say().test(1, 0)
        run.finish("PASS", OWN_DIFF)
    explore(CraftedRun(store, "mini-again", scaffold=mini)).say().edit(sha="e2").say().test(0, 1, "sig").finish(
        "STUCK", OWN_DIFF
    )
    distill(store, load_rules(), log=lambda *_: None)
    export(store, ["sft"], tmp_path / "out")
    rows = [json.loads(line) for line in (tmp_path / "out" / "sft" / "trl.jsonl").read_text().splitlines()]
    by_run = {row["run_id"]: row for row in rows}
    assert by_run["mini"]["scaffold"] == "mini-swe-agent" and by_run["mini"]["scaffold_version"] == "2.4.6"
    assert by_run["mini"]["tools"] == BASH_ONLY  # the schemas its Dev was given, not ours
    assert by_run["ours"]["scaffold"] == "harnessforge" and len(by_run["ours"]["tools"]) == 9
    page = build_report(store, tmp_path / "report.html").read_text()
    section = page[page.index('<section id="scaffolds">') :].split("</section>")[0]
    assert "mini-swe-agent 2.4.6" in section and "harnessforge" in section
    comparison = {row.scaffold.split()[0]: row for row in scaffold_comparison(read_summaries(store))}
    assert (comparison["mini-swe-agent"].runs, comparison["mini-swe-agent"].passed) == (2, 1)
    assert (comparison["harnessforge"].runs, comparison["harnessforge"].passed) == (1, 1)
    assert comparison["mini-swe-agent"].tokens > 0 and comparison["harnessforge"].turns > 0


def read_summaries(store):
    from harnessforge.analytics.database import connect_read_only
    from harnessforge.analytics.rows import MilestoneSummaryRow, read_rows

    with connect_read_only(store) as con:
        return read_rows(con, MilestoneSummaryRow)


@pytest.mark.parametrize("scaffold", ["mini-swe-agent", "openharness"])
def test_each_python_scaffold_speaks_the_other_api_too(validated, scaffold):
    """mini-swe-agent through litellm's Anthropic client, OpenHarness through its OpenAI-compatible one."""
    store, key, _ = validated
    commands = " && ".join(solution_commands(store, key, "m01"))
    if scaffold == "mini-swe-agent":
        server, provider = AnthropicServer(), "anthropic"
        answers = [
            A.message(A.tool_use("toolu_1", "bash", {"command": commands}), stop_reason="tool_use"),
            A.message(
                A.tool_use("toolu_2", "bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
                stop_reason="tool_use",
            ),
        ]
    else:
        server, provider = OpenAIServer(), "openai"
        answers = [
            O.completion("Writing it.", [O.tool_call("call_1", "bash", {"command": commands})]),
            O.completion("Done."),
        ]
    with server:
        server.push(*answers)
        url = server.url if provider == "anthropic" else server.base_url
        backend = MiniSweAgent if scaffold == "mini-swe-agent" else OpenHarnessAgent
        with backend(
            "claude-sonnet-4-6" if provider == "anthropic" else "gpt-4.1",
            provider,
            api_key="test",
            base_url=url,
            timeout=120,
        ) as agent:
            nav = Navigator(store, key, agent, load_rules(), run_id=f"{scaffold}-{provider}", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = server.bodies
    assert summary.status == "PASS" and summary.turns == 2 == len(bodies)
    assert "bash" in json.dumps(bodies[0]["tools"])
    events = Recorder.open(nav.run_dir / "m01").events()
    first = next(e for e in events if e.call_id)
    assert first.action.type == "bash" and first.files_touched
    assert [e.usage.input for e in events if e.action.type == "message"] == [10, 10]


def test_claude_code_native_compacts_itself_and_the_log_holds_what_its_model_read(validated, anthropic_for_claude):
    """Claude Code compacts its own conversation (at the window the rules give its model, here 100,000 tokens,
    reached by the third answer's usage): its summary call is no Dev turn, the CLI is not restarted, and the request
    after it, as the relay saw it, is a `native` compaction event: the conversation the log rebuilds opens with the
    CLI's summary from then on, call by call what the model read, and the milestone goes on to pass."""
    store, key, _ = validated
    server = anthropic_for_claude
    numbers = iter(range(100))

    def message(*blocks, **fields) -> dict:  # (one id per message: the CLI merges messages that share one)
        return A.message(*blocks, **fields) | {"id": f"msg_{next(numbers)}"}

    writes = [
        A.tool_use(
            f"toolu_w{i}", "Write", {"file_path": f"/workspace/{b['input']['path']}", "content": b["input"]["content"]}
        )
        for i, b in enumerate(_solution(store, key, "m01"))
    ]
    server.push(
        message(A.tool_use("toolu_1", "Bash", {"command": "ls tasklite"}), stop_reason="tool_use", input_tokens=30_000),
        message(A.tool_use("toolu_2", "Bash", {"command": "echo two"}), stop_reason="tool_use", input_tokens=60_000),
        message(A.tool_use("toolu_3", "Bash", {"command": "echo three"}), stop_reason="tool_use", input_tokens=90_000),
        message(A.text("<summary>I listed the package and echoed two words.</summary>")),  # its summary call
        message(*writes, stop_reason="tool_use"),
        message(A.text("Done: the feature is in and the tests pass.")),
    )
    with ClaudeCodeNative("claude-sonnet-4-6", base_url=server.url, timeout=180, context_window=100_000) as agent:
        nav = Navigator(store, key, agent, load_rules(), run_id="claude-native-compacts", log=lambda *_: None)
        (summary,) = nav.run(["m01"])
    bodies = [b for b in server.bodies if isinstance(b, dict) and b.get("tools")]
    assert summary.status == "PASS" and summary.turns == 5 and len(bodies) == 6, summary
    events = Recorder.open(nav.run_dir / "m01").events()
    (compaction,) = [e for e in events if e.action.type == "compaction"]
    turns = [e for e in events if e.action.type == "message"]
    assert turns[2].seq < compaction.seq < turns[3].seq and compaction.action.args["policy"] == "native"
    view = compaction.action.args["view"]
    assert "continued from a previous conversation" in json.dumps(view) and "<summary>" not in view[-1]["content"]
    assert not any(m.get("tool_call_id") == "toolu_1" for m in view)  # the CLI dropped it
    for body, turn in zip([bodies[i] for i in (0, 1, 2, 4, 5)], turns, strict=True):
        rebuilt = rebuild([e for e in events if e.seq < turn.seq])
        rebuilt.deliver()
        read = chat_messages(body["messages"])
        if turn.seq > compaction.seq:  # from the compaction on, the log's view is the request itself
            assert rebuilt.messages[1 : 1 + len(view)] == view and texts_read(read) == texts_read(rebuilt.messages, 1)
    assert "ls tasklite" not in json.dumps(rebuild(events).messages)  # what the model no longer read


def test_a_subagents_own_calls_do_not_hold_up_the_devs(validated, anthropic_for_claude):
    """An Agent call's subagent makes tool calls of its own: their hooks are let through at once (they
    are part of the Agent call, recorded as that one call), so neither waits on the other."""
    store, key, _ = validated
    server = anthropic_for_claude
    agent_call = {"description": "list files", "prompt": "List the files.", "run_in_background": False}
    server.push(
        A.message(A.tool_use("toolu_a", "Agent", agent_call), stop_reason="tool_use"),
        A.message(A.tool_use("toolu_s1", "Bash", {"command": "ls tasklite"}), stop_reason="tool_use"),  # the subagent
        A.message(A.text("The package holds store.py and cli.py.")),  # the subagent's report
        A.message(A.text("Done.")),
    )
    with ClaudeCodeNative("claude-sonnet-4-6", base_url=server.url, timeout=60) as agent:
        nav = Navigator(store, key, agent, one_turn_rules(), run_id="claude-native-subagent", log=lambda *_: None)
        (summary,) = nav.run(["m01"])
    events = Recorder.open(nav.run_dir / "m01").events()
    (call,) = [e for e in events if e.call_id]
    assert call.call_id == "toolu_a" and call.action.name == "Agent" and call.ok, call.observation
    assert "store.py and cli.py" in call.observation
    assert summary.turns == 1


def test_openharness_final_answers_and_hints_are_recorded_as_its_model_read_them(validated):
    """A weak model that only writes prose through OpenHarness: each answer is a final answer, graded; the
    Verifier's feedback and the Mentor's hints start its next message. At every call, the texts the model read are
    those the log rebuilds (found on a real model: 8 of 20 calls matched)."""
    store, key, _ = validated
    with OpenAIServer() as server:
        server.push(*[O.completion(f"I think the answer is number {n}.") for n in range(1, 6)])
        server.push(O.completion("I think the answer is numb", finish_reason="length"))  # cut at the cap
        with OpenHarnessAgent("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            rules = mentor_rules()
            rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 6})})
            nav = Navigator(store, key, agent, rules, run_id="openharness-prose", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = server.bodies
    assert summary.status == "STUCK" and len(bodies) == 6
    events = Recorder.open(nav.run_dir / "m01").events()
    assert any(e.action.type == "hint" for e in events)
    turns = [e for e in events if e.action.type == "message"]
    assert [e.action.args["finish_reason"] for e in turns] == ["stop"] * 5 + ["length"]  # the API's, as it said
    for body, turn in zip(bodies, turns, strict=True):
        view = rebuild([e for e in events if e.seq < turn.seq])
        view.deliver()
        assert texts_read(body["messages"], 2) == texts_read(view.messages, 2), turn.turn_id


def test_openharness_compacts_at_the_rules_window_before_its_server_refuses(validated):
    """The rules list the model's window (16,000 tokens) and an answer's cap: OpenHarness compacts its own
    conversation before a request would not fit (its own rule keeps 33,000 tokens free), so its server never refuses
    one; each compaction is a native event, and at every call the texts the model read are those the log rebuilds."""
    store, key, _ = validated
    rules = load_rules()
    context = rules.harness.context.model_copy(update={"windows": {"local-model": Window(context=16000, output=300)}})
    harness = rules.harness.model_copy(update={"context": context, "max_turns": 8})
    rules = rules.model_copy(update={"harness": harness})
    with WindowedServer(16000) as server:
        server.main = lambda body: bool(body.get("tools"))  # its summary call offers none
        server.side_reply = Reply(body=O.completion("<summary>I printed lines of x.</summary>"))
        for number in range(1, 9):
            command = f"head -c 3000 /dev/zero | tr '\\0' x; echo {number}"
            said = f"Step {number}: " + "thinking " * 330  # (long answers: clearing old outputs is not enough)
            server.push(O.completion(said, [O.tool_call(f"call_{number}", "bash", {"command": command})]))
        sampling = sampling_of("openharness", "openai/local-model", harness)  # (the window's output cap)
        agent = make_agent("openharness", "openai/local-model", api_key="test", sampling=sampling, context=context)
        agent.base_url = server.base_url
        with agent:
            nav = Navigator(store, key, agent, rules, run_id="openharness-rules-window", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = [body for body in server.bodies if body.get("tools")]
        refused, summaries = server.overflows, [request.body for request in server.side_requests]
    assert summary.stopped_by.startswith("max_turns") and refused == 0, (summary, refused)
    assert all(body["max_tokens"] <= 300 for body in summaries)  # the cap holds for its summaries too
    events = Recorder.open(nav.run_dir / "m01").events()
    natives = [e for e in events if e.action.type == "compaction" and e.action.args["policy"] == "native"]
    assert summaries and natives and natives[0].turn_id >= 3  # (its own rule: from its 2nd call)
    turns = [e for e in events if e.action.type == "message"]
    for body, turn in zip(bodies, turns, strict=True):
        view = rebuild([e for e in events if e.seq < turn.seq])
        view.deliver()
        assert texts_read(body["messages"], 2) == texts_read(view.messages, 2), turn.turn_id
        assert body["max_tokens"] <= 300  # the rules' cap


def test_openharness_recovers_from_one_prompt_too_long_itself_and_the_milestone_goes_on(validated):
    """OpenHarness keeps its own context (native): one "prompt too long" from its server is its to handle (it
    compacts and retries), and the milestone goes on to its budget, every call recorded."""
    store, key, _ = validated
    overflow = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    rules = mentor_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 3})})
    with OpenAIServer() as server:
        server.push(O.completion("Look.", [O.tool_call("call_1", "bash", {"command": "ls"})]))
        server.push(server.error(400, overflow))
        for number in (2, 3):
            server.push(O.completion(f"Look {number}.", [O.tool_call(f"call_{number}", "bash", {"command": "ls"})]))
        with OpenHarnessAgent("gpt-4.1", "openai", api_key="test", base_url=server.base_url, timeout=120) as agent:
            nav = Navigator(store, key, agent, rules, run_id="openharness-native", log=lambda *_: None)
            (summary,) = nav.run(["m01"])
        bodies = [body for body in server.bodies if body.get("tools")]  # (its summary call, if any, has none)
    assert summary.status == "STUCK" and summary.stopped_by.startswith("max_turns"), summary.stopped_by
    events = Recorder.open(nav.run_dir / "m01").events()
    assert [e.call_id for e in events if e.call_id] == ["call_1", "call_2", "call_3"]
    (compaction,) = [e for e in events if e.action.type == "compaction"]
    assert compaction.action.args["policy"] == "native" and compaction.action.args["view"]
    turns = [e for e in events if e.action.type == "message"]
    requests = [body for body in bodies if body is not bodies[1]]  # (the one refused: no answer came of it)
    for body, turn in zip(requests, turns, strict=True):  # what it read, its compaction's included, is the log's
        view = rebuild([e for e in events if e.seq < turn.seq])
        view.deliver()
        assert texts_read(body["messages"], 2) == texts_read(view.messages, 2), turn.turn_id
