"""One milestone of a run: start it (or resume it from its log), let the Dev work in turns, finish it.

The loop, as mini-swe-agent's: while the milestone has not passed and no budget is spent, ask the agent for a
turn, run its tool calls in the sandbox, deliver what the turn produced (tool results, then held hints and Verifier
feedback). Every action is recorded before the next one happens; the Mentor watches each recorded event; `submit`
is graded by the Verifier in a fresh sandbox. A resumed milestone starts from its `ResumePoint` (conversation,
counters, workspace snapshot), finishes the interrupted turn and goes on with the same loop. A lost sandbox is
recorded and the milestone retried once in a fresh sandbox by that path; if that is lost too, the milestone's
summary is ENV_ERROR (no `milestone_end`: a rerun resumes it).
"""

from __future__ import annotations

import time
from dataclasses import replace

from ..agents.errors import AgentError
from ..diffs import split_diff
from ..envs.sandbox import Sandbox
from ..errors import EnvError, SandboxLost
from ..models.plan import Milestone
from ..models.run import MilestoneStatus, MilestoneSummary
from ..models.task import asked_hint
from ..models.trajectory import Action, AgentTurn, Event, MentorDecision, Message, TestCounts, ToolCall, VerifierReport
from ..store import RunFiles
from . import conversation, stopping
from .atif import to_atif
from .context_budget import ContextBudget, ContextExhausted, compacted, overflowed
from .conversation import NUDGE, assistant_message, message_args, rebuild, scaffold_actions, seen_after, system_prompt
from .harness_profiles import HarnessProfile
from .loops import LoopThresholds
from .memory import render
from .mentor import Mentor
from .recorder import Recorder, summarize, with_scaffold
from .resume import Counters, ResumePoint
from .run_context import Inheritance, RunContext
from .tools import MUTATING_TOOLS, TOOLS, ToolBox, ToolResult, dev_view, failure_signature, is_edit
from .verifier import Verifier


class MilestoneRun:
    """One milestone of a run: its conversation, sandbox, Mentor, Recorder and counters."""

    def __init__(self, context: RunContext, milestone: Milestone, inherited: Inheritance):
        self.context, self.milestone, self.inherited = context, milestone, inherited
        harness = context.rules.harness
        self.mode = harness.mode(context.mode)
        self.budget = harness.model_copy(update={"max_turns": self.mode.max_turns}) if self.mode.max_turns else harness
        self.files = context.store.milestone_run(context.repo_key, context.run_id, milestone.id)
        self.recorder = Recorder.open(self.files.dir, on_warning=context.log)
        self.ground_truth, self.test_patch = context.store.read_patches(context.repo_key, milestone.id)
        self.counters = Counters()
        self.passed = False
        self.ended = False  # milestone_end is recorded
        self.report: VerifierReport | None = None  # the last grading
        self.stopped_by: str | None = None  # the budget a STUCK milestone ran out of
        self.last_failure: list[str] = []  # the tool call of the latest failing test run
        self.last_tests: TestCounts | None = None  # the Dev's latest run_tests, for progress displays
        self.messages: list[Message] = []
        self.pending: list[str] = []  # user messages (hints, verifier feedback) held until the turn ends
        self.mentor: Mentor  # replayed from the log by every attempt
        self.responses_logged: set[int] = set()  # levels whose hint_response is recorded
        self.started_at: float  # monotonic time the milestone's wall clock counts from (resumes included)
        self.ending: dict = {}  # what `agent.end_conversation()` returned, recorded with milestone_end

    @property
    def hidden(self) -> bool:
        """The acceptance tests are applied only when grading (`run --tests hidden`)."""
        return self.context.test_visibility == "hidden"

    # ---- the milestone --------------------------------------------------------------------------
    def run(self) -> MilestoneSummary:
        """The milestone, retried once from its event log in a fresh sandbox if its sandbox is lost."""
        context, milestone, wait_s = self.context, self.milestone, self.budget.engine_wait_s
        labels = {
            "harnessforge.repo": context.repo_key,
            "harnessforge.milestone": milestone.id,
            "harnessforge.run": context.run_id,
        }
        if self.recorder.next_seq:  # resumed: sandboxes an earlier, interrupted attempt left behind go first
            context.environment.recover(labels, 0)
        try:
            return self._attempt()
        except SandboxLost as e:
            lost = self._lost(e, attempt=1)
        except EnvError as e:  # the sandbox stands but cannot grade (a test runner that cannot start): stop, said
            return self._env_error(str(e))
        if not context.environment.recover(labels, wait_s):
            return self._env_error(f"{lost}; the Docker engine did not answer within {wait_s:.0f}s")
        context.log(f"{milestone.id}: retrying in a fresh sandbox from the event log")
        retry = MilestoneRun(context, milestone, self.inherited)
        try:
            return retry._attempt()
        except SandboxLost as e:
            lost = retry._lost(e, attempt=2)
        context.environment.recover(labels, 0)  # remove the lost sandbox, if the engine answers
        return retry._env_error(f"{lost} (again, after a retry in a fresh sandbox)")

    def _attempt(self) -> MilestoneSummary:
        """One sandbox: start the milestone or resume it, then Dev turns until it passes or a budget is spent."""
        context, milestone = self.context, self.milestone
        environment = context.environment
        context.agent.begin_milestone(
            milestone.id, self.ground_truth, lambda path: environment.repo.show(milestone.verify_commit, path)
        )
        events = self.recorder.events()
        ladder = context.store.load_hints(context.repo_key, milestone.id)
        loops = LoopThresholds.of(context.rules.analytics)
        self.mentor = Mentor.replay(
            milestone.id, ladder, self.budget.mentor, events, enabled=self.mode.mentor, loops=loops
        )
        self.profile = HarnessProfile(
            context.harness_profile,
            self.budget.harness_profile(context.harness_profile),
            self.budget,
            context.classifier,
            [file_diff.path for file_diff in split_diff(self.ground_truth)],
        )
        self.profile.replay(events)
        # hint responses in the log (by level: each is released once); one the replay settled and the log lacks
        # (killed in between) is written after the next event
        self.responses_logged = {event.hint_level for event in events if event.action.type == "hint_response"}
        self.started_at = time.monotonic() - sum(event.latency_s for event in events)
        labels = {"harnessforge.stage": "run", "harnessforge.run": context.run_id}
        opener = environment.opener(milestone, labels, mounts=context.agent.sandbox_mounts())
        with opener(milestone.base_commit) as sandbox:
            context.agent.enter(sandbox, self.files.dir)
            tests = milestone.fail_to_pass or milestone.acceptance_tests  # validated, else the static trace
            if self.hidden:  # not in the workspace: `run_tests` runs the suite the Dev has
                tests = []
            timeout_s = context.rules.environments.test_timeout_s
            recipe, test_file_edits = environment.recipe(milestone), self.budget.test_file_edits
            tools = ToolBox(sandbox, recipe, tests, context.classifier, timeout_s, test_file_edits)
            resume = ResumePoint.read(events, self.files.snapshots(), sandbox.workdir)
            if resume.started:
                self._resume(sandbox, tools, resume)
            else:
                self._prepare(sandbox)
                self._start(sandbox)
            while not self.passed:
                self.stopped_by = self.stopped_by or self.counters.spent(
                    self.budget, time.monotonic() - self.started_at, self.inherited.spent_usd
                )
                if self.stopped_by:
                    break
                stopping.check()  # Ctrl-C, SIGTERM: the sandbox closes on the way out, the log resumes
                self._turn(sandbox, tools)
            # while the sandbox lives: a scaffold running inside it (the claude CLI) is interrupted there
            self.ending = context.agent.end_conversation() if not self.ended else {}
            final_diff = sandbox.diff()
        return self._finish(final_diff)

    def _prepare(self, sandbox: Sandbox) -> None:
        """The start state: the Dev's carried work (if the last milestone passed), then the acceptance
        tests the Dev has to make pass."""
        if self.inherited.start_patch:
            self.recorder.write_patch(RunFiles.START_PATCH, self.inherited.start_patch)
            sandbox.apply_patch(self.inherited.start_patch)
        if not self.hidden:
            sandbox.apply_patch(self.test_patch)

    def _start(self, sandbox: Sandbox) -> None:
        milestone, carried_from = self.milestone, self.inherited.carried_from
        memory = render(self.inherited.memory, self.budget.memory)
        first_hint = self.mentor.ladder.levels[0]
        content = asked_hint(first_hint.content, milestone.parts)  # not the titles of work it names as context
        framed = self.budget.mentor.frame(0, content, "milestone_start", 0)
        hint = "" if first_hint.empty or not content or not self.mode.first_hint else framed
        memory = memory if self.mode.memory else None  # (the probe mode gives only the feature description)
        task = conversation.opening(milestone, self.context.test_visibility, hint, memory, carried_from)
        task += self.profile.task_note()
        self.messages = [system_prompt(sandbox.workdir), {"role": "user", "content": task}]
        start = {"base": milestone.base_commit, "carried_from": carried_from, "workdir": sandbox.workdir}
        start["test_visibility"] = self.context.test_visibility
        recalled = self.inherited.memory if self.mode.memory else []  # what the Dev was told
        start["memory"] = [milestone_memory.model_dump(mode="json") for milestone_memory in recalled]
        self.record("navigator", Action(type="milestone_start", content=task, args=start))

    def _resume(self, sandbox: Sandbox, tools: ToolBox, resume: ResumePoint) -> None:
        """Continue from the log: conversation, counters and workspace as recorded, then what the
        interruption cut off (a hint decided but not recorded, a grading, the turn's remaining calls)."""
        self.messages, self.pending = list(resume.messages), list(resume.pending)
        self.counters = replace(resume.counters)
        self.passed, self.ended = resume.passed, resume.ended
        if resume.snapshot is not None:
            sandbox.apply_patch(resume.snapshot.read_bytes())
        else:
            self._prepare(sandbox)
        self.context.log(f"{self.milestone.id}: resumed at event {resume.next_seq} (turn {self.counters.turn})")
        for decision in self.mentor.decisions[resume.hints_logged :]:  # decided on the last event, then killed
            self._hint(decision)
        if resume.passed:  # passed before the interruption: grade again for the report
            self.report = self.context.verifier.verify(self.milestone, sandbox.diff(), self.inherited.start_patch)
            return
        if resume.unverified and self._verify(sandbox):  # a submission whose grading was cut off
            return
        self._calls(sandbox, tools, resume.unanswered)  # finish the interrupted turn
        self._end_turn()

    # ---- one turn -------------------------------------------------------------------------------
    def _turn(self, sandbox: Sandbox, tools: ToolBox) -> None:
        """One model call, its tool calls, then what the turn delivers."""
        counters = self.counters
        counters.turn += 1
        answer = self._ask()
        if answer is None:  # it cannot fit the context window: the milestone ends (stopped_by)
            return
        counters.spend(answer)
        agent = self.context.agent
        for action in scaffold_actions(answer, agent.scaffold):  # its own compaction and words to its model: events
            self.messages = seen_after(self.messages, action)
            self.record("navigator", action)
        self.messages.append(assistant_message(answer))
        nudged = not answer.tool_calls and not agent.ends_with_answer and agent.scaffold == "harnessforge"
        message = self.record(
            "dev",
            Action(type="message", content=answer.text, args=message_args(answer, nudged)),
            model=answer.model,
            usage=answer.usage,
            latency_s=answer.latency_s,
            cost_usd=answer.cost_usd,
        )
        self._plan(message)
        if not answer.tool_calls and agent.ends_with_answer:  # the scaffold's final answer: its submission
            self._submission(sandbox, answer.text)
        elif nudged:  # (a scaffold answers format slips itself)
            self.messages.append({"role": "user", "content": NUDGE})
        self._calls(sandbox, tools, answer.tool_calls)
        self._end_turn()
        if self.context.on_turn:
            self.context.on_turn(
                self.milestone.id, counters.turn, self.budget.max_turns, self.mentor.level, self.last_tests
            )

    def _ask(self) -> AgentTurn | None:
        """The model's answer to a conversation that fits its context window: compacted before the call when it
        would not fit, and once more (the latest output alone kept whole) when the API says it overflowed. None,
        with `stopped_by` set, when it cannot fit: the milestone ends STUCK and the chain goes on."""
        budget, agent = self.context.context_budget, self.context.agent
        for attempt in range(2 if budget else 1):
            try:
                if budget:
                    self._compact(budget, keep_recent=None if attempt == 0 else 1, shrink=attempt == 1)
                answer = agent.turn(self.messages, TOOLS)
            except ContextExhausted as e:
                self.stopped_by = f"context_window: {e}"
                return None
            except AgentError as e:  # over the window: once more compacted, or (a scaffold's own context) the end
                if not overflowed(e):
                    raise
                said = "the API refused the compacted conversation too" if budget else "the scaffold's conversation"
                self.stopped_by = f"context_window: {said} ({e})"
                continue
            budget and budget.calibrate(self.messages, answer.usage.input)  # (the whole prompt: cached is part of it)
            self.stopped_by = None  # (an overflow the retry got past)
            return answer
        return None

    def _compact(self, budget: ContextBudget, keep_recent: int | None, shrink: bool) -> None:
        """Elide old tool outputs so the conversation fits (after an overflow, to half its size), as an event."""
        limit = budget.tokens(self.messages) // 2 if shrink else None
        ask = lambda request: self.context.agent.turn(request, [])  # noqa: E731 (summarize: the Dev's own model)
        compaction = budget.fit(self.messages, self.last_failure, limit=limit, keep_recent=keep_recent, ask=ask)
        if compaction is not None:
            args = compaction.args(budget.rules.policy, budget.window)
            self.messages = compacted(self.messages, args)
            said = f"{len(compaction.elided)} outputs elided, {compaction.summarized} messages summarized"
            self.counters.spend(compaction.turn)
            self.record("navigator", Action(type="compaction", content=said, args=args), **compaction.costs())

    def _calls(self, sandbox: Sandbox, tools: ToolBox, calls: list[ToolCall]) -> None:
        """Run the calls in order, each recorded as it returns; a passing `submit` ends the turn."""
        agent = self.context.agent
        for native in calls:
            call = agent.canonical(native)  # our vocabulary: what the profile, the counters and the log read
            refusal = self.profile.refusal(call)
            started = time.monotonic()  # the call's real latency: a resumed milestone's wall budget adds it up
            if agent.executes(native):  # the scaffold runs it in the sandbox; the harness watches
                result = tools.watched(call, lambda native=native, refusal=refusal: agent.execute(native, refusal))
                result.ok = result.ok and not refusal
            else:
                result = ToolResult(refusal, ok=False) if refusal else tools.call(call)
            self.counters.edits += is_edit(result.files_touched, self.context.classifier)
            self.counters.test_runs += result.test_status is not None
            if result.test_status is not None and result.test_status.failed:
                self.last_failure = [call.id]  # the latest failing test run survives compaction
            self.last_tests = result.test_status or self.last_tests
            observation = dev_view(result.observation, self.budget.observation_max_chars)
            cut = observation != result.observation
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
            if call.name in MUTATING_TOOLS:
                self._snapshot(sandbox)
            native_name = {"tool": native.name} if native.name != call.name else {}
            self.record(
                "dev",
                Action(type=call.name, args={**native_name, **call.args, **result.extra}),
                full_observation=result.observation if cut else None,
                call_id=call.id,
                observation=observation,
                observation_chars=len(result.observation),
                observation_cut=cut,
                ok=result.ok,
                files_touched=result.files_touched,
                test_status=result.test_status,
                error_signature=result.error_signature,
                latency_s=round(time.monotonic() - started, 3),
            )
            stopping.check()
            self.profile.count_shell_edit(call, result.files_touched)
            if finished := self.profile.finished_module(result.files_touched):
                self._checkpoint(tools, finished)
            if agent.submitted(native, result.observation) and self._verify(sandbox):
                return

    # ---- harness profiles (V1-V3) ---------------------------------------------------------------
    def _plan(self, message: Event) -> None:
        """V1/V2: the first plan the Dev states is a `plan` event; V2 reviews it against the change's modules."""
        plan = self.profile.plan_in(message)
        if plan is None:
            return
        args = {"files": plan.files, "modules": plan.modules}
        if self.profile.shell_edits_before_plan:
            args["shell_edits_before_plan"] = self.profile.shell_edits_before_plan
        self.record("navigator", Action(type="plan", content=plan.text, args=args))
        review = self.profile.review(plan)
        if review is None:
            return
        args = {"overlap": review.overlap, "covered": review.covered, "total": review.total, "missing": review.missing}
        self.pending += [review.message] if review.message else []  # before a hint its event may release
        self.record("mentor", Action(type="plan_review", content=review.message or "", args=args))

    def _checkpoint(self, tools: ToolBox, module: str) -> None:
        """V3: the Dev moved on from `module`: the acceptance tests covering it run, and it is told how they do
        (not with the tests hidden: they are not in the workspace)."""
        if self.hidden:
            return
        selected = self.profile.covering(module, tools.tests)
        counts = tools.run_acceptance(selected).test_status
        if counts is not None and counts.total:
            progress = f"{counts.passed}/{counts.total} of the acceptance tests covering it pass"
        else:  # nothing ran: the test files do not load yet
            progress = "the acceptance tests covering it do not run yet (their files fail to load)"
        text = f"[Checkpoint] after your work on {module}: {progress}."
        args = {"module": module, "tests": selected}
        self.pending.append(text)  # before a hint its event may release: the order the log rebuilds
        self.record("navigator", Action(type="checkpoint", content=text, args=args), test_status=counts)

    def _submission(self, sandbox: Sandbox, text: str) -> None:
        """A scaffold without a submit tool ended its turn: recorded as the Dev's `submit` (`implicit`), graded."""
        args = {"message": text, "implicit": True}
        self.record("dev", Action(type="submit", content=text, args=args), observation="submitted for verification")
        self._verify(sandbox)

    def _verify(self, sandbox: Sandbox) -> bool:
        """Grade the workspace in a fresh sandbox; record and deliver the verdict. True if it passed."""
        report = self.report = self.context.verifier.verify(self.milestone, sandbox.diff(), self.inherited.start_patch)
        content = "PASS" if report.passed else Verifier.feedback(report)
        verdict = "PASS" if report.passed else "FAIL"
        signature = None if report.passed else failure_signature(report.failing_acceptance + report.regressions)
        action = Action(type="verify", content=content, verdict=verdict)
        self.pending += [] if report.passed else [content]  # before a hint its event may release, as the log orders
        self.record("verifier", action, test_status=report.acceptance, error_signature=signature)
        self.passed = report.passed
        return report.passed

    def _end_turn(self) -> None:
        self.messages += [{"role": "user", "content": text} for text in self.pending]
        self.pending.clear()

    # ---- recording ------------------------------------------------------------------------------
    def _event(self, role: str, action: Action, **fields) -> Event:
        context = self.context
        return Event(
            run_id=context.run_id,
            repo=context.repo_key,
            milestone_id=self.milestone.id,
            seq=self.recorder.next_seq,
            turn_id=self.counters.turn,
            role=role,
            action=action,
            synthetic=context.agent.synthetic,
            **fields,
        )

    def record(self, role: str, action: Action, full_observation: str | None = None, **fields) -> Event:
        """Append an event with the Dev's counters; the responses to hints whose window it closed, and a hint
        the Mentor releases on it, follow it."""
        counters = self.counters
        event = self._event(
            role, action, cumulative_edits=counters.edits, cumulative_test_runs=counters.test_runs, **fields
        )
        self.recorder.append(event, full_observation)
        decision = self.mentor.observe(event)
        self._responses()
        if decision is not None:
            self._hint(decision)
        return event

    def _responses(self) -> None:
        """Record each hint response the Mentor settled: `direction_change` in the log, not only in mentor_log."""
        for decision in self.mentor.settled():
            if decision.level in self.responses_logged or decision.response is None:
                continue
            response = decision.response
            args = {"hint_turn": decision.turn_id, "level": decision.level, "rule": decision.rule, **response}
            action = Action(type="hint_response", args=args)
            changed = bool(response.get("direction_changed"))
            self.recorder.append(self._event("mentor", action, hint_level=decision.level, direction_change=changed))
            self.responses_logged.add(decision.level)

    def _hint(self, decision: MentorDecision) -> None:
        """Hold a released hint for the end of the turn and record it (with the model Mentor's wording, if any)."""
        wording, args, costs = decision.hint, {"rule": decision.rule}, {}
        if self.context.hint_rewriter is not None:
            files = [*self.milestone.changed_files, *self.milestone.test_files]
            rewritten = self.context.hint_rewriter.rewrite(decision, self.milestone.title, self.messages, files)
            wording = rewritten.text
            args |= {"rewritten_by": rewritten.model, "rewrite_accepted": rewritten.accepted}
            args |= {"rewrite_refused": rewritten.reason} if rewritten.reason else {}
            costs = {"cost_usd": rewritten.cost_usd, "usage": rewritten.usage, "model": rewritten.model}
            self.counters.cost += rewritten.cost_usd  # the Mentor's calls count against the budgets too
        text = self.budget.mentor.frame(decision.level, wording, decision.rule, decision.turn_id)
        self.pending.append(text)
        if decision.skipped_levels:
            args["skipped_levels"] = decision.skipped_levels
        action = Action(type="hint", content=text, args=args)
        event = self._event("mentor", action, mentor_hint=decision.hint, hint_level=decision.level, **costs)
        self.recorder.append(event)

    def _snapshot(self, sandbox: Sandbox) -> None:
        """The workspace as a diff, saved *before* the event it belongs to: a resume restores the
        snapshot of the last recorded event and re-runs only calls that have no event."""
        seq = self.recorder.next_seq
        self.recorder.write_patch(RunFiles.snapshot_name(seq), sandbox.diff())
        older = [path for number, path in self.files.snapshots() if number < seq]
        for path in older[:-1]:  # the newest older one stays until event `seq` is on disk: a kill resumes there
            path.unlink(missing_ok=True)

    def _lost(self, error: SandboxLost, attempt: int) -> SandboxLost:
        """Record a lost sandbox in the event log: what happened, and which attempt it ended."""
        args = {"reason": error.reason, "attempt": attempt}
        self.record("navigator", Action(type="env_error", content=str(error), args=args))
        self.context.log(f"{self.milestone.id}: {error}")
        return error

    # ---- the end --------------------------------------------------------------------------------
    def _summary(self, status: MilestoneStatus, **fields) -> MilestoneSummary:
        return summarize(
            self.recorder.events(),
            status=status,
            wall_s=round(time.monotonic() - self.started_at, 2),
            carried_from=self.inherited.carried_from,
            synthetic=self.context.agent.synthetic,
            cost_tolerance=self.budget.cost_tolerance,
            warn=self.context.log,
            **fields,
        )

    def _finish(self, final_diff: bytes) -> MilestoneSummary:
        milestone, recorder = self.milestone, self.recorder
        status = "PASS" if self.passed else "STUCK"
        reset_to = None if self.passed else milestone.verify_commit
        if not self.ended:
            self.mentor.close()  # the hints whose response window is still open: their responses come first
            self._responses()
            end = {"reset_to": reset_to, "stopped_by": self.stopped_by}
            if self.ending:  # what the backend learnt at the end, e.g. the claude CLI's last stated cost
                end["backend"] = self.ending
            self.record("navigator", Action(type="milestone_end", content=status, args=end))
        summary = self._summary(status, reset_to=reset_to, stopped_by=self.stopped_by)
        recorder.write_patch(RunFiles.FINAL_DIFF, final_diff)
        recorder.write_patch(RunFiles.GROUND_TRUTH, self.ground_truth)
        unsubmitted = Verifier.unsubmitted(self.profile.ground_truth_files, self.context.classifier)
        report = self.report.model_dump(mode="json") if self.report else unsubmitted
        recorder.write_json(RunFiles.TEST_RESULTS, report)
        recorder.write_json(RunFiles.MENTOR_LOG, self.mentor.log())
        scaffold = self.context.agent.scaffold_info()
        metadata = with_scaffold(self.files.run_dir, scaffold)
        tools = scaffold.get("tools") or TOOLS  # the scaffold's own, if it has them
        events = recorder.events()
        view = rebuild(events, compactions=False)  # every step, whole: a summary or a stub is no step
        view.deliver()
        recorder.write_json(RunFiles.ATIF, to_atif(events, view.messages, metadata, tools))
        recorder.write_summary(summary)  # last: its presence marks the milestone finished
        for _, snapshot in self.files.snapshots():
            snapshot.unlink(missing_ok=True)
        why = f" (out of budget: {self.stopped_by})" if self.stopped_by else ""
        hints = summary.hints_released or "none"
        self.context.log(f"{milestone.id}: {status}{why} in {summary.turns} turns, hints {hints}")
        return summary

    def _env_error(self, error: str) -> MilestoneSummary:
        """The milestone could not finish for the environment's sake: a summary saying so. No
        `milestone_end` and the workspace snapshots stay, so a rerun resumes it from its log."""
        summary = self._summary("ENV_ERROR", error=error)
        self.recorder.write_summary(summary)
        self.context.log(f"{self.milestone.id}: ENV_ERROR: {error}")
        return summary
