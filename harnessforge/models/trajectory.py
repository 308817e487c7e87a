"""Stage 2 records: agent turns, the one `Event` type the Recorder writes, and Mentor decisions.

Conversations are OpenAI-style chat messages (`{"role", "content", "tool_calls", "tool_call_id"}`):
the format trainers read, so the trajectory *is* the message list.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from .common import Model, utcnow

Role = Literal["dev", "mentor", "verifier", "navigator"]
Message = dict[str, Any]


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
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Backend facts recorded with the turn (the claude CLI's session and events)."
    )


class Action(Model):
    type: str = Field(
        description="A tool name, or message | hint | verify | milestone_start | milestone_end | reset | env_error"
    )
    content: str = ""
    args: dict[str, Any] = Field(default_factory=dict)


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
    ground_truth_files: list[str] = []
    candidate_files: list[str] = []
    missing_core_files: list[str] = Field([], description="Source files the ground truth changes and the Dev did not.")
    extra_files: list[str] = Field([], description="Files the Dev changed that the ground truth does not touch.")
    excluded_files: list[str] = Field([], description="Dev changes dropped before grading (tests, test config).")
    reason: str | None = None
