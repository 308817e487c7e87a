"""ATIF v1.7 (Harbor's Agent Trajectory Interchange Format) of one milestone attempt, and a validator.

Built from the **message list, joined with the events**. The messages are the spine because they are
exactly what the model saw and said: system prompt, task, reasoning, tool-call ids, tool results as
delivered, hint wording; events have no reasoning and no call ids. Events add what messages lack:
per-turn tokens, cost, latency, model and time; hint level and rule; observation length and test counts.

The join (the run loop's side of the contract):
- the k-th assistant message is Dev turn k (`Event.turn_id == k`, counting from 1);
- a turn's metrics sum the `usage` / `cost_usd` of its `dev` events (usage is set once per model call);
- the i-th call of tool `name` in turn k is the i-th `dev` event of turn k with `action.type == name`;
- a hint event (`action.type == "hint"`) is the next user message containing the text it delivered.
Inputs that do not join (more turns in the events than assistant messages, a hint never shown, a tool
result answering no call) raise `ValueError` rather than export a trajectory that lies.

A synthetic run's steps (the offline oracle's) are deterministic: `llm_call_count` 0 and, as ATIF
requires then, no `metrics` or `reasoning_content` (kept in `extra.harnessforge`); `upgrade` does the
same to documents written before that rule. Harbor's own validator accepts what this module writes
(tests/test_harbor_tools.py).

Token accounting follows ATIF: `prompt_tokens` counts all input tokens and `cached_tokens` is a subset
of it, so backends must report `Usage.input` including cache reads.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..models.run import RunMeta
from ..models.trajectory import Event, Message, Usage

SCHEMA_VERSION = "ATIF-v1.7"
AGENT_NAME = "harnessforge"
LLM_ONLY_FIELDS = {"metrics": "metrics", "reasoning_content": "reasoning"}  # -> their key in extra.harnessforge


# ---- conversion ---------------------------------------------------------------------------------
def to_atif(
    events: list[Event],
    messages: list[Message],
    metadata: RunMeta | dict,
    tools: list[dict],
    outcome: dict | None = None,
) -> dict:
    """The ATIF document of one milestone attempt (see the module docstring for how inputs join).

    `metadata` is the run's `RunMeta` (or `metadata.json` as read); `outcome` (status, grade, final patch,
    ...) goes to the root's `extra.harnessforge.outcome`.
    """
    metadata = RunMeta.model_validate(metadata)
    if not events:
        raise ValueError("no events: nothing to export")
    if any(event.run_id != metadata.run_id for event in events):
        raise ValueError(f"events of another run than {metadata.run_id}")
    milestone_id = events[0].milestone_id
    synthetic = metadata.synthetic or any(event.synthetic for event in events)
    dev_turns: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        if event.role == "dev":
            dev_turns[event.turn_id].append(event)
    hints = [event for event in events if event.action.type == "hint"]

    steps: list[dict] = []
    turn = 0
    agent: dict | None = None  # the agent step tool results attach to
    call_events: dict[str, Event] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            _attach_result(agent, message, call_events, where=f"messages[{index}]")
            continue
        if role in ("system", "developer"):
            step = {"source": "system", "message": _message(message.get("content"))}
            agent = None
        elif role == "user":
            step = {"source": "user", "message": _message(message.get("content"))}
            if hints and _shows(message, hints[0]):
                step.update(_hint_fields(hints.pop(0)))
            agent = None
        elif role == "assistant":
            turn += 1
            step, call_events = _agent_step(message, turn, dev_turns.get(turn, []), synthetic)
        else:
            raise ValueError(f"messages[{index}]: unknown role {role!r}")
        steps.append({"step_id": len(steps) + 1, **step})
        if role == "assistant":
            agent = steps[-1]

    if hints:
        raise ValueError(f"hint event seq {hints[0].seq} (level {hints[0].hint_level}) is in no user message")
    if dev_turns and max(dev_turns) > turn:
        raise ValueError(f"events reach Dev turn {max(dev_turns)} but the messages hold {turn} assistant turns")

    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": metadata.run_id,
        "trajectory_id": f"{metadata.run_id}/{milestone_id}",
        "agent": _drop_empty(
            {
                "name": AGENT_NAME,
                "version": metadata.harness_version,
                "model_name": metadata.model,
                "tool_definitions": tools,
                "extra": {
                    "backend": metadata.agent,
                    "rules_hash": metadata.rules_hash,
                    "scaffold": {k: v for k, v in metadata.scaffold.items() if k != "tools"},
                },
            }
        ),
        "steps": steps,
        "final_metrics": _final_metrics(steps),
        "extra": {
            "harnessforge": {
                "repo": metadata.repo,
                "milestone_id": milestone_id,
                "synthetic": synthetic,
                "outcome": outcome,
            }
        },
    }
    return doc


def _message(content: Any) -> str | list:
    """ATIF `message`: a string, or content parts kept as they are; None (tool-call-only turns) is ''."""
    return "" if content is None else content


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _drop_empty(data: dict) -> dict:
    return {key: value for key, value in data.items() if value not in (None, "", [], {})}


def _shows(message: Message, hint: Event) -> bool:
    """The user message delivering a hint: it holds the text the Dev read (or, in old logs, the raw hint)."""
    content = _text(message.get("content"))
    return any(text and text in content for text in (hint.action.content.strip(), (hint.mentor_hint or "").strip()))


def _hint_fields(hint: Event) -> dict:
    info = {"kind": "hint", "level": hint.hint_level, "rule": hint.action.args.get("rule"), "event_seq": hint.seq}
    return {"timestamp": hint.ts.isoformat(), "extra": {"harnessforge": info}}


def _tool_call(raw: dict) -> dict:
    """OpenAI `{id, function: {name, arguments}}` (arguments a JSON string or an object) -> ATIF."""
    function = raw.get("function") or {}
    args = function.get("arguments")
    call = {"tool_call_id": raw.get("id", ""), "function_name": function.get("name", ""), "arguments": args or {}}
    if isinstance(args, str):
        try:
            call["arguments"] = json.loads(args) if args.strip() else {}
        except ValueError:
            call["arguments"] = None
    if not isinstance(call["arguments"], dict):  # ATIF needs an object: keep what the model wrote aside
        call["arguments"] = {}
        call["extra"] = {"raw_arguments": args if isinstance(args, str) else json.dumps(args)}
    return call


def _agent_step(
    message: Message, turn: int, turn_events: list[Event], synthetic: bool
) -> tuple[dict, dict[str, Event]]:
    """One assistant message = one model call; returns the step and its tool calls' events by call id."""
    calls = [_tool_call(call) for call in message.get("tool_calls") or []]
    by_name: dict[str, list[Event]] = defaultdict(list)
    for event in turn_events:
        by_name[event.action.name].append(event)
    call_events = {}
    for call in calls:
        if by_name[call["function_name"]]:
            call_events[call["tool_call_id"]] = by_name[call["function_name"]].pop(0)

    step: dict[str, Any] = {"source": "agent", "message": _message(message.get("content"))}
    if turn_events:
        step["timestamp"] = min(event.ts for event in turn_events).isoformat()
    if model := next((event.model for event in turn_events if event.model), ""):
        step["model_name"] = model
    if reasoning := message.get("reasoning_content") or message.get("reasoning") or "":
        step["reasoning_content"] = reasoning
    if calls:
        step["tool_calls"] = calls
    usages = [event.usage for event in turn_events if event.usage is not None]
    cost = sum(event.cost_usd for event in turn_events)
    if usages or cost:
        usage = sum(usages, Usage())
        step["metrics"] = {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "cached_tokens": usage.cached,
            "cost_usd": round(cost, 6),
        }
    step["llm_call_count"] = 0 if synthetic else 1  # ATIF: deterministic (oracle) steps are kept out of SFT
    info = {
        "turn_id": turn,
        "event_seqs": [event.seq for event in turn_events],
        "latency_s": round(sum(event.latency_s for event in turn_events), 3),
    }
    step["extra"] = {"harnessforge": info}
    return _without_llm_fields(step), call_events


def _without_llm_fields(step: dict) -> dict:
    """ATIF v1.7: a deterministic step (`llm_call_count` 0) has no `metrics` or `reasoning_content`; the
    oracle's scripted reasoning and its (zero) usage move to `extra.harnessforge` instead of being lost."""
    if step.get("source") != "agent" or step.get("llm_call_count") != 0:
        return step
    info = {key: step.pop(field) for field, key in LLM_ONLY_FIELDS.items() if field in step}
    if info:
        step["extra"] = {**(step.get("extra") or {})}
        step["extra"]["harnessforge"] = {**step["extra"].get("harnessforge", {}), **info}
    return step


def upgrade(doc: dict) -> dict:
    """A document of an earlier writer as this one writes it: deterministic steps lose `metrics` and
    `reasoning_content` (kept in `extra.harnessforge`) and `final_metrics` is summed again. Stores
    written before that rule still export ATIF that Harbor's validator accepts."""
    steps = [_without_llm_fields(dict(step)) for step in doc.get("steps", [])]
    upgraded = {**doc, "steps": steps}
    if "final_metrics" in doc:
        upgraded["final_metrics"] = {**doc["final_metrics"], **_final_metrics(steps)}
    return upgraded


def _attach_result(agent: dict | None, message: Message, call_events: dict[str, Event], where: str) -> None:
    call_id = message.get("tool_call_id")
    ids = [call["tool_call_id"] for call in (agent or {}).get("tool_calls", [])]
    if call_id not in ids:
        raise ValueError(f"{where}: tool result for call {call_id!r}, which the preceding assistant turn did not make")
    result: dict[str, Any] = {"source_call_id": call_id, "content": _text(message.get("content"))}
    if (event := call_events.get(call_id)) is not None:
        extra: dict[str, Any] = {
            "event_seq": event.seq,
            "observation_chars": event.observation_chars,
            "truncated": event.observation_chars > len(event.observation),
        }
        if event.test_status is not None:
            extra["tests"] = event.test_status.model_dump()
        if event.files_touched:
            extra["files_touched"] = event.files_touched
        if event.error_signature:
            extra["error_signature"] = event.error_signature
        result["extra"] = extra
    agent.setdefault("observation", {"results": []})["results"].append(result)


def _final_metrics(steps: list[dict]) -> dict:
    metrics = [step["metrics"] for step in steps if "metrics" in step]
    return {
        "total_prompt_tokens": sum(metric["prompt_tokens"] for metric in metrics),
        "total_completion_tokens": sum(metric["completion_tokens"] for metric in metrics),
        "total_cached_tokens": sum(metric["cached_tokens"] for metric in metrics),
        "total_cost_usd": round(sum(metric["cost_usd"] for metric in metrics), 6),
        "total_steps": len(steps),
    }


# ---- validation ---------------------------------------------------------------------------------
class _Strict(BaseModel):
    """The subset of ATIF v1.7 this module emits; unknown fields are errors, so emitter typos show up."""

    model_config = ConfigDict(extra="forbid")


class AtifToolCall(_Strict):
    tool_call_id: str = Field(min_length=1)
    function_name: str = Field(min_length=1)
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class AtifResult(_Strict):
    source_call_id: str | None = None
    content: str | None = None
    extra: dict[str, Any] | None = None


class AtifObservation(_Strict):
    results: list[AtifResult]


class AtifMetrics(_Strict):
    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)
    cached_tokens: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _cached_is_part_of_prompt(self) -> AtifMetrics:
        if (self.cached_tokens or 0) > (self.prompt_tokens or 0):
            raise ValueError("cached_tokens exceeds prompt_tokens (ATIF counts cached input inside prompt_tokens)")
        return self


class AtifStep(_Strict):
    step_id: int = Field(ge=1)
    timestamp: datetime | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    message: str | list[dict[str, Any]]
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    llm_call_count: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _agent_fields_on_agent_steps(self) -> AtifStep:
        if self.source != "agent":
            agent_only = ("model_name", "reasoning_content", "tool_calls", "metrics", "llm_call_count")
            if present := [f for f in agent_only if getattr(self, f) is not None]:
                raise ValueError(f"step {self.step_id}: {', '.join(present)} only belong on agent steps")
            if self.source == "user" and self.observation is not None:
                raise ValueError(f"step {self.step_id}: a user step has no observation")
        elif self.llm_call_count == 0 and (present := [f for f in LLM_ONLY_FIELDS if getattr(self, f) is not None]):
            raise ValueError(f"step {self.step_id}: {', '.join(present)} must be absent when llm_call_count is 0")
        ids = {call.tool_call_id for call in self.tool_calls or []}
        for result in self.observation.results if self.observation else []:
            if result.source_call_id is not None and result.source_call_id not in ids:
                raise ValueError(f"step {self.step_id}: result for {result.source_call_id!r}, not a call of this step")
        return self


class AtifAgent(_Strict):
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Strict):
    total_prompt_tokens: int | None = Field(None, ge=0)
    total_completion_tokens: int | None = Field(None, ge=0)
    total_cached_tokens: int | None = Field(None, ge=0)
    total_cost_usd: float | None = Field(None, ge=0)
    total_steps: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Strict):
    schema_version: Literal["ATIF-v1.7"]
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> AtifTrajectory:
        if [step.step_id for step in self.steps] != list(range(1, len(self.steps) + 1)):
            raise ValueError("step_id must run 1, 2, 3, ... in order")
        call_ids = [call.tool_call_id for step in self.steps for call in step.tool_calls or []]
        if len(call_ids) != len(set(call_ids)):
            raise ValueError("tool_call_id values repeat across the trajectory")
        final = self.final_metrics
        if final is not None:
            step_metrics = [step.metrics for step in self.steps if step.metrics is not None]
            sums = {
                "total_prompt_tokens": sum(metric.prompt_tokens or 0 for metric in step_metrics),
                "total_completion_tokens": sum(metric.completion_tokens or 0 for metric in step_metrics),
                "total_cached_tokens": sum(metric.cached_tokens or 0 for metric in step_metrics),
            }
            for name, total in sums.items():
                if getattr(final, name) is not None and getattr(final, name) != total:
                    raise ValueError(f"final_metrics.{name} is {getattr(final, name)}, the steps sum to {total}")
            cost = sum(metric.cost_usd or 0 for metric in step_metrics)
            if final.total_cost_usd is not None and abs(final.total_cost_usd - cost) > 1e-6:
                raise ValueError(f"final_metrics.total_cost_usd is {final.total_cost_usd}, the steps sum to {cost}")
            if final.total_steps is not None and final.total_steps != len(self.steps):
                raise ValueError(f"final_metrics.total_steps is {final.total_steps}, there are {len(self.steps)} steps")
        return self


def validate_atif(doc: dict) -> AtifTrajectory:
    """Check `doc` against the ATIF subset above plus cross-field rules; raises pydantic's ValidationError."""
    return AtifTrajectory.model_validate(doc)
