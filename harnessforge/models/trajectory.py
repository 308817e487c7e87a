"""Stage 2 records: agent turns, the one `Event` type the Recorder writes, and Mentor decisions.

Conversations are OpenAI-style chat messages (`{"role", "content", "tool_calls", "tool_call_id"}`):
the format trainers read, so the trajectory *is* the message list.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import Field, model_serializer, model_validator

from .common import Model, utcnow

Role = Literal["dev", "mentor", "verifier", "navigator"]
Message = dict[str, Any]
# The Dev's tools (`harness/tools.py` gives each its schema).
ToolName = Literal[
    "read_file", "write_file", "edit_file", "list_dir", "search", "bash", "run_tests", "request_hint", "submit"
]
# Events that are not tool calls: the navigator's milestone_start / milestone_end / env_error, the Dev's
# message (one per model call), the Mentor's hint and hint_response (what the Dev did in the hint's response
# window, written when it closes), the Verifier's verify; the harness profiles' plan / plan_review / checkpoint; the
# navigator's compaction (tool outputs elided to fit the Dev's context window: `args.elided`, their call ids; older
# turns summarized: `args.summarized`; a scaffold's own, policy `native`: `args.view`, the messages it left); the
# navigator's scaffold_message (a user message a scaffold's own loop gave the model: its format-error feedback).
EventKind = Literal[
    "milestone_start",
    "message",
    "hint",
    "hint_response",
    "verify",
    "milestone_end",
    "env_error",
    "plan",
    "plan_review",
    "checkpoint",
    "compaction",
    "scaffold_message",
]
# A call to a tool the harness does not have (a model's invention): the name called is kept beside it.
UNKNOWN_TOOL = "unknown_tool"
ActionType = Literal[EventKind, ToolName, "unknown_tool"]
ACTION_TYPES = frozenset(get_args(EventKind) + get_args(ToolName) + (UNKNOWN_TOOL,))
Verdict = Literal["PASS", "FAIL"]


class ToolCall(Model):
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    error: str | None = Field(None, description="Set when the model's arguments were not valid JSON/object.")


class Usage(Model):
    input: int = 0
    cached: int = 0
    output: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input=self.input + other.input, cached=self.cached + other.cached, output=self.output + other.output
        )


class AgentTurn(Model):
    """One model call: what a backend returns, whatever its wire format."""

    reasoning: str = ""
    text: str = ""
    tool_calls: list[ToolCall] = []
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    cost_usd: float = 0.0
    stop_reason: str = ""
    received: list[str] = Field(
        default_factory=list,
        description="User messages the backend's own loop gave the model before this answer, which the harness did "
        "not send (mini-swe-agent's format-error feedback, the link's go-on): recorded as scaffold_message events.",
    )
    compacted: list[dict[str, Any]] | None = Field(
        None,
        description="When a scaffold compacted its own conversation before this answer: what its model read for it "
        "(the messages after the system prompt, the harness's of this turn included, OpenAI chat format), recorded "
        "as a `native` compaction event.",
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Backend facts recorded with the turn (the claude CLI's session and events)."
    )


def _unset(value: Any) -> bool:
    return value is None


class Action(Model):
    """What an event did. Stored as today: `type` is the tool name the Dev called, even an unknown one,
    and `verdict` appears on verify events only."""

    type: ActionType = Field(description="A tool name, or one of the event kinds (see `EventKind`)")
    content: str = Field("", description="The text: task, Dev message, hint, the verdict or the Verifier's feedback")
    args: dict[str, Any] = Field(default_factory=dict)
    verdict: Verdict | None = Field(None, exclude_if=_unset, description="verify events: the grade of the submission")
    unknown_tool: str | None = Field(
        None, exclude=True, description="type unknown_tool: the name the Dev called (written as the type)"
    )

    @model_validator(mode="before")
    @classmethod
    def _read_unknown_tool(cls, data: Any) -> Any:
        """A type that is none of ours is a call to a tool the harness lacks, as the Recorder wrote it."""
        name = data.get("type") if isinstance(data, dict) else None
        if isinstance(name, str) and name not in ACTION_TYPES:
            return {**data, "type": UNKNOWN_TOOL, "unknown_tool": name}
        return data

    @model_serializer(mode="wrap")
    def _write_unknown_tool(self, handler) -> dict[str, Any]:
        data = handler(self)
        if self.unknown_tool is not None:
            data["type"] = self.unknown_tool
        return data

    @property
    def name(self) -> str:
        """The action's name as the Dev wrote it: the type, or the unknown tool's own name."""
        return self.unknown_tool or self.type


class TestCounts(Model):
    __test__ = False

    passed: int = 0
    failed: int = 0
    total: int = 0


class Event(Model):
    """One line of `trajectory.jsonl`: written by the Recorder, read by the Mentor and by analytics."""

    run_id: str
    repo: str
    milestone_id: str
    seq: int = Field(ge=0, description="Position in the milestone's event log, from 0, no gaps.")
    turn_id: int = Field(ge=0, description="Dev turn (model call) the event belongs to; 0 before the first.")
    ts: datetime = Field(default_factory=utcnow)
    role: Role
    action: Action
    call_id: str | None = Field(None, description="The tool call this event answers (dev tool events).")
    observation: str = Field("", description="What the actor saw back, truncated to the rules' limit.")
    observation_chars: int = Field(0, description="Full length of the observation before truncation.")
    observation_cut: bool = Field(
        False, description="The observation is the Dev's cut view; the whole output is in the outputs sidecar."
    )
    mentor_hint: str | None = None
    hint_level: int | None = None
    ok: bool = Field(True, description="False when a tool call failed: an error, a non-zero exit, failing tests.")
    files_touched: list[str] = []
    test_status: TestCounts | None = None
    error_signature: str | None = Field(None, description="Normalised failure of a test run, for the Mentor.")
    cumulative_edits: int = 0
    cumulative_test_runs: int = 0
    direction_change: bool = False
    model: str = ""
    usage: Usage | None = None
    latency_s: float = 0.0
    cost_usd: float = 0.0
    synthetic: bool = False

    @model_validator(mode="after")
    def _verdict_of_older_logs(self) -> Event:
        """Logs written before the verdict was a field say it in `content` alone ("PASS" or the feedback)."""
        if self.role == "verifier" and self.action.verdict is None:
            self.action.verdict = "PASS" if self.action.content == "PASS" else "FAIL"
        return self

    @property
    def passed_verification(self) -> bool:
        """A Verifier event whose verdict is PASS."""
        return self.role == "verifier" and self.action.verdict == "PASS"


class MentorDecision(Model):
    """A hint release: when, which level, which rule fired, the Dev's state then, and its response."""

    milestone_id: str
    turn_id: int
    level: int = Field(ge=0, le=4)
    rule: str
    hint: str
    skipped_levels: list[dict[str, Any]] = Field(
        [], description="Levels passed over on the way to this one because the ladder has no material for them."
    )
    snapshot: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] | None = Field(None, description="Filled some turns later: did the Dev change course?")


class VerifierReport(Model):
    """`test_results.json`: a submission graded in a fresh sandbox."""

    milestone_id: str
    passed: bool
    acceptance: TestCounts
    failing_acceptance: list[str] = []
    regressions: list[str] = Field([], description="PASS_TO_PASS tests (passing at base) that now fail.")
    suite_checked: int = Field(
        0, description="Tests of the whole passing suite checked for regressions once the graded ones passed (0: none)"
    )
    messages: dict[str, str] = Field(
        {}, description="What each failing acceptance test and regression said (its assertion), when the runner tells."
    )
    ground_truth_files: list[str] = []
    core_files: list[str] = Field([], description="The ground truth's source files (no tests, docs, config).")
    candidate_files: list[str] = []
    missing_core_files: list[str] = Field([], description="Source files the ground truth changes and the Dev did not.")
    extra_files: list[str] = Field([], description="Files the Dev changed that the ground truth does not touch.")
    excluded_files: list[str] = Field([], description="Dev changes dropped before grading (tests, test config).")
    reason: str | None = None
