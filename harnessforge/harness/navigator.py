"""The Navigator: drives the Dev through a repo's milestone chain, in order, continuously.

Per milestone: a fresh conversation (task, L0 hint, one-line memories of earlier milestones), a
sandbox at the milestone's base with its acceptance tests in place, the Dev's turns with tools,
the Mentor watching every event, the Verifier on `submit`. A milestone that passes ends; one that
runs out of budget is STUCK and the chain goes on from its verify commit.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..agents.base import AgentBackend
from ..agents.oracle import OracleAgent, task_from_patch
from ..envs.environment import Environment
from ..mining.classify import FileClassifier
from ..models.plan import Milestone
from ..models.trajectory import Action, AgentTurn, Event, Message, Usage
from ..repos import spec_for
from ..rules import Rules
from ..store import Store
from .atif import to_atif
from .mentor import Mentor
from .recorder import MilestoneSummary, Recorder, RunMeta, write_run_metadata
from .tools import EDIT_TOOLS, TOOLS, ToolBox
from .verifier import Verifier

SYSTEM = """You are a software engineer working in a git repository at {workdir}.
Implement the feature described by the user. Use the tools to explore, edit and run the tests;
the network is off. Test files are given and must not be changed: changes to them are ignored.
When the feature is done and the tests pass, call `submit`. If you are stuck, call `request_hint`."""


@dataclass
class Dev:
    """Where the Dev stands inside one milestone: counters the events carry."""

    turn: int = 0
    edits: int = 0
    test_runs: int = 0
    files: set[str] = field(default_factory=set)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0


def _truncate(text: str, limit: int) -> str:
    return (
        text
        if len(text) <= limit
        else text[: limit // 2] + f"\n[... {len(text) - limit} chars cut ...]\n" + text[-limit // 2 :]
    )


class Navigator:
    def __init__(self, store: Store, repo: str, agent: AgentBackend, rules: Rules, run_id: str | None = None,
                 backend: str = "auto", log=print):  # fmt: skip
        self.store, self.agent, self.rules, self.log = store, agent, rules, log
        self.spec = spec_for(store, repo)
        self.key = self.spec.key
        self.plan = store.load_plan(self.key)
        self.env = Environment(store, self.spec, rules, backend)
        self.verifier = Verifier(self.env, store)
        self.classify = FileClassifier(rules.planning)
        self.run_id = run_id or f"{agent.name}-{uuid.uuid4().hex[:8]}"
        self.run_dir = store.root / "trajectories" / self.key / self.run_id
        self.memory: list[str] = []

    def run(self, milestones: list[str] | None = None) -> list[MilestoneSummary]:
        write_run_metadata(
            self.run_dir,
            RunMeta(
                run_id=self.run_id, repo=self.key, agent=self.agent.name, model=self.agent.model,
                harness_version=__version__, rules_hash=self.rules.hash, synthetic=self.agent.synthetic,
                config={"backend": self.env.backend, "milestones": milestones or "all"},
            ),
        )  # fmt: skip
        out = []
        for m in self.plan.milestones:
            if milestones and m.id not in milestones:
                continue
            if m.status != "valid":
                self.log(f"{m.id}: skipped ({m.status or 'not validated'}); the chain goes on from its verify commit")
                continue
            summary = self.run_milestone(m)
            self.memory.append(f"{m.id} {m.title}: {summary.status}")
            out.append(summary)
        return out

    # ---- one milestone ----------------------------------------------------------------------------
    def run_milestone(self, m: Milestone) -> MilestoneSummary:
        mdir = self.run_dir / m.id
        rec = Recorder(mdir)
        ladder = self.store.load_hints(self.key, m.id)
        mentor = Mentor(m.id, ladder, self.rules.harness.mentor)
        ground_truth, test_patch = self.store.read_patches(self.key, m.id)
        h = self.rules.harness
        if isinstance(self.agent, OracleAgent):
            self.agent.prepare(m.id, task_from_patch(ground_truth, lambda p: self.env.repo.show(m.verify_commit, p)))
        start, dev, status, report = time.monotonic(), Dev(), "STUCK", None
        pending: list[str] = []  # user messages (hints, verifier feedback) waiting for the turn to end

        def record(role: str, action: Action, **kw) -> Event:
            ev = Event(
                run_id=self.run_id, repo=self.key, milestone_id=m.id, seq=rec.next_seq, turn_id=dev.turn, role=role,
                action=action, cumulative_edits=dev.edits, cumulative_test_runs=dev.test_runs,
                synthetic=self.agent.synthetic, **kw,
            )  # fmt: skip
            rec.append(ev)
            decision = mentor.observe(ev)
            if decision is not None:  # shown to the Dev once the current turn's tool results are in
                text = f"[hint L{decision.level}] {decision.hint}"
                pending.append(text)
                rec.append(Event(
                    run_id=self.run_id, repo=self.key, milestone_id=m.id, seq=rec.next_seq, turn_id=dev.turn,
                    role="mentor", action=Action(type="hint", content=text, args={"rule": decision.rule}),
                    mentor_hint=decision.hint, hint_level=decision.level, synthetic=self.agent.synthetic,
                ))  # fmt: skip
            return ev

        with self.env.opener(m, {"harnessforge.stage": "run", "harnessforge.run": self.run_id})(m.base_commit) as sb:
            sb.apply_patch(test_patch)  # the acceptance tests the Dev has to make pass
            tools = ToolBox(
                sb, self.env.recipe(m), m.acceptance_tests, self.classify, self.rules.environments.test_timeout_s
            )
            memory = "\n".join(f"- {line}" for line in self.memory) or "- (this is the first milestone)"
            l0 = ladder.levels[0].content
            task = f"# {m.title}\n\n{m.description}\n\n[hint L0] {l0}\n\nEarlier milestones:\n{memory}"
            messages: list[Message] = [
                {"role": "system", "content": SYSTEM.format(workdir=sb.workdir)},
                {"role": "user", "content": task},
            ]
            record("navigator", Action(type="milestone_start", content=task, args={"base": m.base_commit}))
            while dev.turn < h.max_turns and status == "STUCK":
                if time.monotonic() - start > h.max_wall_s_per_milestone or dev.cost > h.max_cost_per_milestone_usd:
                    break
                if dev.usage.input + dev.usage.output > h.max_tokens_per_milestone:
                    break
                dev.turn += 1
                t = self.agent.turn(messages, TOOLS)
                dev.usage, dev.cost = dev.usage + t.usage, dev.cost + t.cost_usd
                messages.append(_assistant(t))
                record("dev", Action(type="message", content=t.text, args={"reasoning": t.reasoning}), model=t.model,
                       usage=t.usage, latency_s=t.latency_s, cost_usd=t.cost_usd)  # fmt: skip
                if not t.tool_calls:
                    messages.append({"role": "user", "content": "Continue: use a tool, or call `submit` when done."})
                for call in t.tool_calls:
                    res = tools.call(call)
                    dev.files |= set(res.files_touched)
                    dev.edits += call.name in EDIT_TOOLS and res.ok
                    dev.test_runs += res.test_status is not None
                    obs = _truncate(res.observation, h.observation_max_chars)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})
                    record("dev", Action(type=call.name, args={**call.args, **res.extra}), observation=obs,
                           observation_chars=len(res.observation), files_touched=res.files_touched,
                           test_status=res.test_status, error_signature=res.error_signature)  # fmt: skip
                    if call.name == "submit":
                        report = self.verifier.verify(m, sb.diff())
                        verdict = "PASS" if report.passed else Verifier.feedback(report)
                        record("verifier", Action(type="verify", content=verdict), test_status=report.acceptance)
                        if report.passed:
                            status = "PASS"
                            break
                        pending.append(verdict)
                messages += [{"role": "user", "content": text} for text in pending]
                pending.clear()
            final_diff = sb.diff()
        reset_to = None if status == "PASS" else m.verify_commit
        record("navigator", Action(type="milestone_end", content=status, args={"reset_to": reset_to}))
        summary = MilestoneSummary(
            run_id=self.run_id, milestone_id=m.id, status=status, turns=dev.turn,
            hints_released=[d.level for d in mentor.decisions], tokens=dev.usage, cost_usd=round(dev.cost, 6),
            wall_s=round(time.monotonic() - start, 2), reset_to=reset_to, synthetic=self.agent.synthetic,
        )  # fmt: skip
        rec.write_patch("final_diff.patch", final_diff)
        rec.write_patch("ground_truth.patch", ground_truth)
        rec.write_json("test_results.json", report.model_dump(mode="json") if report else {"submitted": False})
        rec.write_json("mentor_log.json", mentor.log())
        rec.write_summary(summary)
        rec.write_json("trajectory.atif.json", to_atif(rec.events(), messages, self._meta(), TOOLS))
        self.log(f"{m.id}: {status} in {dev.turn} turns, hints {summary.hints_released or 'none'}")
        return summary

    def _meta(self) -> dict:
        return json.loads((self.run_dir / "metadata.json").read_text())


def _assistant(t: AgentTurn) -> Message:
    msg: Message = {"role": "assistant", "content": t.text}
    if t.reasoning:
        msg["reasoning_content"] = t.reasoning
    if t.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
            for c in t.tool_calls
        ]
    return msg


def run_dir_of(store: Store, key: str, run_id: str) -> Path:
    return store.root / "trajectories" / key / run_id
