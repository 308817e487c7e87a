"""The Navigator: drives the Dev through a repo's milestone chain, in order, continuously.

Per milestone: a fresh conversation (task, L0 hint, one-line memories of earlier milestones), a
sandbox with its acceptance tests in place, the Dev's turns with tools, the Mentor watching every
event, the Verifier on `submit`. A milestone that passes ends and the next one starts from the
Dev's own final state (its non-test files carried onto the next base as `start.patch`); one that
runs out of budget is STUCK and the chain goes on from its verify commit.

Runs resume: the event log is the source of truth. Re-running the same `run_id` skips finished
milestones and rebuilds an unfinished one from its events — the conversation, the Mentor (by
replay), the counters, and the workspace from the diff snapshot saved before the last recorded
edit — then runs the tool calls of the interrupted turn that have no event yet.

A sandbox lost under a milestone (the Docker engine restarted, the container vanished) is not the
Dev's doing: it is recorded (`env_error`) and, once the engine answers again, the milestone is
retried once in a fresh sandbox by that same resume path. If the engine stays away or the retry is
lost too, the milestone's summary is ENV_ERROR with the reason and the run stops; running it again
resumes the milestone.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from .. import __version__
from ..agents.base import AgentBackend
from ..agents.oracle import OracleAgent, task_from_patch
from ..envs.candidate_grading import filter_candidate
from ..envs.environment import Environment
from ..envs.sandbox import Sandbox
from ..errors import SandboxLost
from ..files import FileClassifier
from ..models.plan import Milestone
from ..models.run import MilestoneSummary, RunMeta
from ..models.trajectory import Action, Event, MentorDecision, Message, ToolCall, Usage
from ..repos import spec_for
from ..rules import Rules
from ..store import RunFiles, Store
from .atif import to_atif
from .conversation import NUDGE, assistant_message, rebuild, system_prompt, turn_of
from .mentor import Mentor
from .recorder import Recorder, read_summary, write_run_metadata
from .tools import EDIT_TOOLS, TOOLS, ToolBox
from .verifier import Verifier

MUTATING = EDIT_TOOLS | {"bash"}  # tools after which the workspace snapshot is refreshed


@dataclass
class Dev:
    """Where the Dev stands inside one milestone: counters the events carry."""

    turn: int = 0
    edits: int = 0
    test_runs: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n[... {len(text) - limit} chars cut ...]\n" + text[-limit // 2 :]


class Navigator:
    def __init__(
        self,
        store: Store,
        repo: str,
        agent: AgentBackend,
        rules: Rules,
        run_id: str | None = None,
        backend: str = "auto",
        log=print,
        on_turn=None,
    ):
        """`on_turn(milestone_id, turn, max_turns, hint_level, tests)` is called after every Dev turn
        (for progress displays); `tests` is the last run's TestCounts or None."""
        self.store, self.agent, self.rules, self.log = store, agent, rules, log
        self.on_turn = on_turn
        self.spec = spec_for(store, repo)
        self.key = self.spec.key
        self.plan = store.load_plan(self.key)
        self.env = Environment(store, self.spec, rules, backend)
        self.run_id = run_id or f"{agent.name}-{uuid.uuid4().hex[:8]}"
        self.verifier = Verifier(self.env, store, {"harnessforge.run": self.run_id})
        self.classify = FileClassifier(rules.planning)
        self.run_dir = store.run_dir(self.key, self.run_id)
        self.memory: list[str] = []
        self.carry: tuple[str, bytes] | None = None  # (milestone id, patch): the Dev state the next one starts from
        self.spent = 0.0  # USD this run spent before the current milestone: the run budget's counter

    def run(self, milestones: list[str] | None = None) -> list[MilestoneSummary]:
        if not self.store.run_metadata(self.key, self.run_id).exists():
            write_run_metadata(
                self.run_dir,
                RunMeta(
                    run_id=self.run_id, repo=self.key, agent=self.agent.name, model=self.agent.model,
                    harness_version=__version__, rules_hash=self.rules.hash, synthetic=self.agent.synthetic,
                    config={"backend": self.env.backend, "milestones": milestones or "all"},
                ),
            )  # fmt: skip
        out: list[MilestoneSummary] = []
        for i, m in enumerate(self.plan.milestones):
            done = self.store.milestone_run(self.key, self.run_id, m.id).summary
            if milestones and m.id not in milestones:  # not asked for: only its outcome, if it ran, counts
                summary = read_summary(done.parent) if done.exists() else None
                self._after(m, summary)
                continue
            self.spent = sum(s.cost_usd for s in out)
            if self.spent > self.rules.harness.max_cost_per_run_usd:
                budget = self.rules.harness.max_cost_per_run_usd
                left = ", ".join(x.id for x in self.plan.milestones[i:] if not milestones or x.id in milestones)
                self.log(f"run budget spent: ${self.spent:.2f} > max_cost_per_run_usd ${budget:g}; not started: {left}")
                break
            if m.status != "valid":
                self.log(f"{m.id}: skipped ({m.status or 'not validated'}); the chain goes on from its verify commit")
                self._after(m, None)
                continue
            summary = read_summary(done.parent) if done.exists() else None
            if summary is None or summary.status == "ENV_ERROR":  # ENV_ERROR: unfinished, resumed from its log
                summary = MilestoneRun(self, m).run()
            else:  # finished: snapshots a kill right after its summary left behind go
                for _, snap in self.store.milestone_run(self.key, self.run_id, m.id).snapshots():
                    snap.unlink(missing_ok=True)
            self._after(m, summary)
            out.append(summary)
            if summary.status == "ENV_ERROR":
                again = "run the same command again to resume"
                raise SandboxLost(f"{self.key} {m.id}: ENV_ERROR: {summary.error}; {again}")
        return out

    def _after(self, m: Milestone, summary: MilestoneSummary | None) -> None:
        """What the next milestone inherits: a memory line, and the Dev's state if this one passed."""
        if summary:
            self.memory.append(f"{m.id} {m.title}: {summary.status}")
        self.carry = (m.id, self._dev_state(m)) if summary and summary.status == "PASS" else None

    def _dev_state(self, m: Milestone) -> bytes:
        """The Dev's final state of `m` as a patch on its verify commit (the next milestone's base),
        test files and test configuration left as the repo has them."""
        final = self.store.milestone_run(self.key, self.run_id, m.id).final_diff.read_bytes()
        tree = self.env.repo.tree_with(m.base_commit, final)
        kept, _ = filter_candidate(self.env.repo.diff(m.verify_commit, tree), self.rules)
        return kept


class MilestoneRun:
    """One milestone of a run: its conversation, sandbox, Mentor, Recorder and counters."""

    def __init__(self, nav: Navigator, m: Milestone):
        self.nav, self.m, self.h = nav, m, nav.rules.harness
        self.files = nav.store.milestone_run(nav.key, nav.run_id, m.id)
        self.dir = self.files.dir
        self.rec = Recorder.open(self.dir, on_warning=nav.log)
        self.ladder = nav.store.load_hints(nav.key, m.id)
        self.ground_truth, self.test_patch = nav.store.read_patches(nav.key, m.id)
        self.dev, self.status, self.report, self.ended = Dev(), "STUCK", None, False
        self.stopped_by: str | None = None  # the budget a STUCK milestone ran out of
        self.last_tests = None  # TestCounts of the Dev's latest run_tests, for progress displays
        self.messages: list[Message] = []
        self.pending: list[str] = []  # user messages (hints, verifier feedback) held until the turn ends
        self.synthetic = nav.agent.synthetic
        self.carried_from, self.start_patch = nav.carry or (None, b"")

    # ---- recording ------------------------------------------------------------------------------
    def record(self, role: str, action: Action, **kw) -> Event:
        ev = Event(
            run_id=self.nav.run_id, repo=self.nav.key, milestone_id=self.m.id, seq=self.rec.next_seq,
            turn_id=self.dev.turn, role=role, action=action, cumulative_edits=self.dev.edits,
            cumulative_test_runs=self.dev.test_runs, synthetic=self.synthetic, **kw,
        )  # fmt: skip
        self.rec.append(ev)
        decision = self.mentor.observe(ev)
        if decision is not None:
            self._hint(decision)
        return ev

    def _hint(self, decision: MentorDecision) -> None:
        """Hold a released hint for the end of the turn and record it."""
        text = f"[hint L{decision.level}] {decision.hint}"
        self.pending.append(text)
        self.rec.append(Event(
            run_id=self.nav.run_id, repo=self.nav.key, milestone_id=self.m.id, seq=self.rec.next_seq,
            turn_id=self.dev.turn, role="mentor", action=Action(type="hint", content=text,
            args={"rule": decision.rule, **({"skipped_levels": decision.skipped_levels} if decision.skipped_levels
            else {})}), mentor_hint=decision.hint, hint_level=decision.level,
            synthetic=self.synthetic,
        ))  # fmt: skip

    def _snapshot(self, sb: Sandbox) -> None:
        """The workspace as a diff, saved *before* the event it belongs to: a resume restores the
        snapshot of the last recorded event and re-runs only calls that have no event."""
        seq = self.rec.next_seq
        self.rec.write_patch(RunFiles.snapshot_name(seq), sb.diff())
        older = [path for n, path in self.files.snapshots() if n < seq]
        for path in older[:-1]:  # the newest older one stays until event `seq` is on disk: a kill resumes there
            path.unlink(missing_ok=True)

    # ---- the milestone --------------------------------------------------------------------------
    def run(self) -> MilestoneSummary:
        """The milestone, retried once from its event log in a fresh sandbox if its sandbox is lost."""
        nav, m = self.nav, self.m
        labels = {"harnessforge.repo": nav.key, "harnessforge.milestone": m.id, "harnessforge.run": nav.run_id}
        if self.rec.next_seq:  # resumed: sandboxes an earlier, interrupted attempt left behind go first
            nav.env.recover(labels, 0)
        try:
            return self._attempt()
        except SandboxLost as e:
            lost = self._lost(e, attempt=1)
        if not nav.env.recover(labels, self.h.engine_wait_s):
            return self._env_error(f"{lost}; the Docker engine did not answer within {self.h.engine_wait_s:.0f}s")
        nav.log(f"{m.id}: retrying in a fresh sandbox from the event log")
        retry = MilestoneRun(nav, m)
        try:
            return retry._attempt()
        except SandboxLost as e:
            lost = retry._lost(e, attempt=2)
        nav.env.recover(labels, 0)  # remove the lost sandbox, if the engine answers
        return retry._env_error(f"{lost} (again, after a retry in a fresh sandbox)")

    def _lost(self, e: SandboxLost, attempt: int) -> SandboxLost:
        """Record a lost sandbox in the event log: what happened, and which attempt it ended."""
        args = {"reason": e.reason, "attempt": attempt}
        self.record("navigator", Action(type="env_error", content=str(e), args=args))
        self.nav.log(f"{self.m.id}: {e}")
        return e

    def _attempt(self) -> MilestoneSummary:
        nav, m = self.nav, self.m
        if isinstance(nav.agent, OracleAgent):
            nav.agent.prepare(m.id, task_from_patch(self.ground_truth, lambda p: nav.env.repo.show(m.verify_commit, p)))
        events = self.rec.events()
        self.mentor = Mentor.replay(m.id, self.ladder, nav.rules.harness.mentor, events)
        self.start = start = time.monotonic() - sum(e.latency_s for e in events)
        opener = nav.env.opener(m, {"harnessforge.stage": "run", "harnessforge.run": nav.run_id})
        with opener(m.base_commit) as sb:
            tests = m.fail_to_pass or m.acceptance_tests  # validated FAIL_TO_PASS; the static trace before that
            tools = ToolBox(sb, nav.env.recipe(m), tests, nav.classify, nav.rules.environments.test_timeout_s)
            if any(e.action.type == "milestone_start" for e in events):
                unanswered, unverified = self._resume(sb, events)
                logged = sum(e.role == "mentor" for e in events)
                for decision in self.mentor.decisions[logged:]:  # decided on the last event, killed before its hint
                    self._hint(decision)
                if unverified and self.status == "STUCK":  # a submission whose grading was cut off
                    self._verify(sb)
                if self.status == "STUCK":  # finish the interrupted turn: its calls, then what it delivers
                    self._calls(sb, tools, unanswered)
                    self._end_turn()
                if self.status == "PASS":  # passed before the interruption: grade again for the report
                    self.report = nav.verifier.verify(m, sb.diff(), self.start_patch)
            else:
                self._prepare(sb)
                self._start(sb)
            self._loop(sb, tools, start)
            final_diff = sb.diff()
        return self._finish(final_diff, start)

    def _prepare(self, sb: Sandbox) -> None:
        """The start state: the Dev's carried work (if the last milestone passed), then the acceptance
        tests the Dev has to make pass."""
        if self.start_patch:
            self.rec.write_patch(RunFiles.START_PATCH, self.start_patch)
            sb.apply_patch(self.start_patch)
        sb.apply_patch(self.test_patch)

    def _start(self, sb: Sandbox) -> None:
        memory = "\n".join(f"- {line}" for line in self.nav.memory) or "- (this is the first milestone)"
        l0 = self.ladder.levels[0]
        hint = "" if l0.empty else f"[hint L0] {l0.content}\n\n"
        task = f"# {self.m.title}\n\n{self.m.brief}\n\n{hint}Earlier milestones:\n{memory}"
        if self.carried_from:
            task += f"\n\nYour own work on {self.carried_from} is in the working tree, uncommitted."
        self.messages = [system_prompt(sb.workdir), {"role": "user", "content": task}]
        start = {"base": self.m.base_commit, "carried_from": self.carried_from, "workdir": sb.workdir}
        self.record("navigator", Action(type="milestone_start", content=task, args=start))

    def _loop(self, sb: Sandbox, tools: ToolBox, start: float) -> None:
        h, dev = self.h, self.dev
        while self.status == "STUCK":
            self.stopped_by = self._budget_spent(start)
            if self.stopped_by:
                break
            dev.turn += 1
            t = self.nav.agent.turn(self.messages, TOOLS)
            dev.usage, dev.cost = dev.usage + t.usage, dev.cost + t.cost_usd
            self.messages.append(assistant_message(t))
            args = {"reasoning": t.reasoning, "tool_calls": [c.model_dump() for c in t.tool_calls]}
            if t.extra:
                args["backend"] = t.extra
            self.record("dev", Action(type="message", content=t.text, args=args), model=t.model, usage=t.usage,
                        latency_s=t.latency_s, cost_usd=t.cost_usd)  # fmt: skip
            if not t.tool_calls:
                self.messages.append({"role": "user", "content": NUDGE})
            self._calls(sb, tools, t.tool_calls)
            self._end_turn()
            if self.nav.on_turn:
                self.nav.on_turn(self.m.id, dev.turn, h.max_turns, self.mentor.level, self.last_tests)

    def _budget_spent(self, start: float) -> str | None:
        """The budget rule this milestone has run out of, with the numbers (it ends STUCK), or None."""
        h, dev = self.h, self.dev
        wall, tokens, run_cost = time.monotonic() - start, dev.usage.input + dev.usage.output, self.nav.spent + dev.cost
        if dev.turn >= h.max_turns:
            return f"max_turns: {dev.turn} turns"
        if wall > h.max_wall_s_per_milestone:
            return f"max_wall_s_per_milestone: {wall:.1f} s > {h.max_wall_s_per_milestone:g} s"
        if dev.cost > h.max_cost_per_milestone_usd:
            return f"max_cost_per_milestone_usd: ${dev.cost:.2f} > ${h.max_cost_per_milestone_usd:g}"
        if run_cost > h.max_cost_per_run_usd:
            return f"max_cost_per_run_usd: ${run_cost:.2f} spent by the run > ${h.max_cost_per_run_usd:g}"
        if tokens > h.max_tokens_per_milestone:
            return f"max_tokens_per_milestone: {tokens} tokens > {h.max_tokens_per_milestone}"
        return None

    def _calls(self, sb: Sandbox, tools: ToolBox, calls: list[ToolCall]) -> None:
        for call in calls:
            res = tools.call(call)
            self.dev.edits += call.name in EDIT_TOOLS and res.ok
            self.dev.test_runs += res.test_status is not None
            self.last_tests = res.test_status or self.last_tests
            obs = _truncate(res.observation, self.h.observation_max_chars)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})
            if call.name in MUTATING:
                self._snapshot(sb)
            self.record("dev", Action(type=call.name, args={**call.args, **res.extra}), call_id=call.id,
                        observation=obs, observation_chars=len(res.observation), ok=res.ok,
                        files_touched=res.files_touched, test_status=res.test_status,
                        error_signature=res.error_signature)  # fmt: skip
            if call.name == "submit" and self._verify(sb):
                return

    def _verify(self, sb: Sandbox) -> bool:
        """Grade the workspace in a fresh sandbox; record and deliver the verdict. True if it passed."""
        self.report = self.nav.verifier.verify(self.m, sb.diff(), self.start_patch)
        verdict = "PASS" if self.report.passed else Verifier.feedback(self.report)
        self.record("verifier", Action(type="verify", content=verdict), test_status=self.report.acceptance)
        if self.report.passed:
            self.status = "PASS"
        else:
            self.pending.append(verdict)
        return self.report.passed

    def _end_turn(self) -> None:
        self.messages += [{"role": "user", "content": text} for text in self.pending]
        self.pending.clear()

    def _resume(self, sb: Sandbox, events: list[Event]) -> tuple[list[ToolCall], bool]:
        """Rebuild the conversation and counters from the log; restore the workspace; return the
        tool calls of the last turn that have no event yet, and whether the last `submit` has no verdict."""
        conversation = rebuild(events, sb.workdir)
        self.messages, self.pending = conversation.messages, [text for text, _ in conversation.pending]
        last_calls: list[ToolCall] = []
        answered: set[str] = set()
        unverified = False
        for e in events:
            if e.role == "dev" and e.action.type == "submit":
                unverified = True
            elif e.role == "verifier":
                unverified = False
            if e.role == "dev" and e.action.type == "message":
                last_calls, answered = turn_of(e).tool_calls, set()
                self.dev.turn = e.turn_id
                self.dev.usage, self.dev.cost = self.dev.usage + (e.usage or Usage()), self.dev.cost + e.cost_usd
            elif e.role == "dev" and e.call_id:
                answered.add(e.call_id)
                self.dev.edits, self.dev.test_runs = e.cumulative_edits, e.cumulative_test_runs
            elif e.role == "verifier" and e.action.content == "PASS":
                self.status = "PASS"
            elif e.role == "navigator" and e.action.type == "milestone_end":
                self.ended = True
        snapshots = [(seq, path) for seq, path in self.files.snapshots() if seq < len(events)]
        if snapshots:
            sb.apply_patch(snapshots[-1][1].read_bytes())
        else:
            self._prepare(sb)
        self.nav.log(f"{self.m.id}: resumed at event {len(events)} (turn {self.dev.turn})")
        return [c for c in last_calls if c.id not in answered], unverified

    def _finish(self, final_diff: bytes, start: float) -> MilestoneSummary:
        m, rec = self.m, self.rec
        reset_to = None if self.status == "PASS" else m.verify_commit
        if not self.ended:
            end = {"reset_to": reset_to, "stopped_by": self.stopped_by}
            self.record("navigator", Action(type="milestone_end", content=self.status, args=end))
        summary = MilestoneSummary(
            run_id=self.nav.run_id, milestone_id=m.id, status=self.status, turns=self.dev.turn,
            hints_released=[d.level for d in self.mentor.decisions], tokens=self.dev.usage,
            cost_usd=round(self.dev.cost, 6), wall_s=round(time.monotonic() - start, 2), reset_to=reset_to,
            carried_from=self.carried_from, stopped_by=self.stopped_by, synthetic=self.synthetic,
        )  # fmt: skip
        rec.write_patch(RunFiles.FINAL_DIFF, final_diff)
        rec.write_patch(RunFiles.GROUND_TRUTH, self.ground_truth)
        report = self.report.model_dump(mode="json") if self.report else {"submitted": False}
        rec.write_json(RunFiles.TEST_RESULTS, report)
        rec.write_json(RunFiles.MENTOR_LOG, self.mentor.log())
        rec.write_json(RunFiles.ATIF, to_atif(rec.events(), self.messages, self._meta(), TOOLS))
        rec.write_summary(summary)  # last: its presence marks the milestone finished
        for _, snap in self.files.snapshots():
            snap.unlink(missing_ok=True)
        why = f" (out of budget: {self.stopped_by})" if self.stopped_by else ""
        self.nav.log(f"{m.id}: {self.status}{why} in {self.dev.turn} turns, hints {summary.hints_released or 'none'}")
        return summary

    def _env_error(self, error: str) -> MilestoneSummary:
        """The milestone could not finish for the environment's sake: a summary saying so. No
        `milestone_end` and the workspace snapshots stay, so a rerun resumes it from its log."""
        summary = MilestoneSummary(
            run_id=self.nav.run_id, milestone_id=self.m.id, status="ENV_ERROR", turns=self.dev.turn,
            hints_released=[d.level for d in self.mentor.decisions], tokens=self.dev.usage,
            cost_usd=round(self.dev.cost, 6), wall_s=round(time.monotonic() - self.start, 2),
            carried_from=self.carried_from, synthetic=self.synthetic, error=error,
        )  # fmt: skip
        self.rec.write_summary(summary)
        self.nav.log(f"{self.m.id}: ENV_ERROR: {error}")
        return summary

    def _meta(self) -> dict:
        return json.loads(self.files.metadata.read_text())
