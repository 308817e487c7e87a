"""The Navigator: drives the Dev through a repo's milestone chain, in order, continuously.

Per milestone (`MilestoneRun`): a fresh conversation (task, L0 hint, the memory of earlier
milestones: what each built, its outcome, its key errors and their fixes), a sandbox with its
acceptance tests in place, the Dev's turns with tools, the Mentor watching every event, the Verifier
on `submit`. A milestone that passes ends and the next one starts from the Dev's own final state (its
non-test files carried onto the next base as `start.patch`); one that runs out of budget is STUCK and
the chain goes on from its verify commit.

Runs resume: the event log is the source of truth. Re-running the same `run_id` skips finished
milestones and rebuilds an unfinished one from its events (`ResumePoint`) — the conversation, the
Mentor (by replay), the counters, and the workspace from the diff snapshot saved before the last
recorded edit — then runs the tool calls of the interrupted turn that have no event yet.

A sandbox lost under a milestone (the Docker engine restarted, the container vanished) is not the
Dev's doing: it is recorded (`env_error`) and, once the engine answers again, the milestone is
retried once in a fresh sandbox by that same resume path. If the engine stays away or the retry is
lost too, the milestone's summary is ENV_ERROR with the reason and the run stops; running it again
resumes the milestone.
"""

from __future__ import annotations

import hashlib
import uuid

from .. import __version__
from ..agents.base import AgentBackend
from ..agents.pricing import priced, unpriced_warning
from ..diffs import split_diff
from ..envs.candidate_grading import filter_candidate
from ..envs.environment import Environment
from ..errors import ConfigError, SandboxLost
from ..files import FileClassifier
from ..mining.granularity import require_granularity
from ..models.plan import Milestone
from ..models.run import MilestoneSummary, RunMeta
from ..repos import spec_for
from ..rules import Rules
from ..store import Store
from .chain import finished_summary
from .context_budget import ContextBudget
from .conversation import NUDGE
from .hint_rewriter import HintRewriter
from .jobs import check_milestone_ids
from .memory import MilestoneMemory, applied, remember
from .milestone_run import MilestoneRun
from .recorder import Recorder, read_summary, write_run_metadata
from .run_context import Inheritance, RunContext
from .tools import TOOLS
from .verifier import Verifier

__all__ = ["NUDGE", "MilestoneRun", "Navigator"]


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
        mentor: AgentBackend | None = None,
        mode: str = "standard",
        harness_profile: str = "V0",
        test_visibility: str | None = None,
    ):
        """`on_turn(milestone_id, turn, max_turns, hint_level, tests)` is called after every Dev turn
        (for progress displays); `tests` is the last run's TestCounts or None. `mentor`: a model that words
        each hint for the Dev's situation (seed 000's model Mentor); the rules still decide when. `mode` and
        `harness_profile` name entries of the rules' harness.modes and harness.harness_profiles; `test_visibility`
        (visible or hidden; default: the rules' harness.test_visibility) whether the acceptance tests are in the
        Dev's workspace."""
        wanted, needs = rules.harness.mode(mode).granularity, rules.harness.mode(mode).test_visibility
        if needs and test_visibility and test_visibility != needs:
            raise ConfigError(
                f"--mode {mode} runs with the acceptance tests {needs} (rules harness.modes), not {test_visibility}"
            )
        rules.harness.harness_profile(harness_profile)  # an unknown name fails before any work
        self.store, self.agent, self.rules, self.log = store, agent, rules, log
        spec = spec_for(store, repo)
        self.key = spec.key
        self.plan = store.load_plan(self.key)
        require_granularity(self.plan, wanted, f"--mode {mode}")
        self.environment = Environment(store, spec, rules, backend)
        self.run_id = run_id or f"{agent.name}-{uuid.uuid4().hex[:8]}"
        self.run_dir = store.run_dir(self.key, self.run_id)
        self.context = RunContext(
            run_id=self.run_id,
            repo_key=self.key,
            store=store,
            environment=self.environment,
            verifier=Verifier(self.environment, store, {"harnessforge.run": self.run_id}),
            agent=agent,
            rules=rules,
            classifier=FileClassifier(rules.planning),
            log=log,
            on_turn=on_turn,
            hint_rewriter=HintRewriter(mentor, log) if mentor is not None else None,
            mode=mode,
            harness_profile=harness_profile,
            test_visibility=needs or test_visibility or rules.harness.test_visibility,
            context_budget=None
            if agent.synthetic or agent.scaffold != "harnessforge"  # a scaffold keeps its own context
            else ContextBudget(agent.model, rules.harness.context, log, TOOLS),
        )
        self.mentor = mentor
        self.memory: list[MilestoneMemory] = []  # each milestone that ran: what the next one's task recalls
        self.carry: tuple[str, bytes] | None = None  # (milestone id, patch): the Dev state the next one starts from

    def run(self, milestones: list[str] | None = None) -> list[MilestoneSummary]:
        """Run the chain (only `milestones`, if given; the others' outcomes still feed the memory)."""
        check_milestone_ids(self.plan, milestones or [], "milestones")
        self._write_metadata(milestones)
        if not self.agent.synthetic and self.agent.model and not priced(self.agent.model):
            self.log(unpriced_warning(self.agent.model))
        summaries: list[MilestoneSummary] = []
        for index, milestone in enumerate(self.plan.milestones):
            if milestone.status == "merged":  # the Dev state and memory go on to the task that holds its work
                self.log(
                    f"{milestone.id}: merged into {milestone.merged_into} (it had no test): its work is that task's"
                )
                continue
            files = self.store.milestone_run(self.key, self.run_id, milestone.id)
            if milestones and milestone.id not in milestones:  # not asked for: only its outcome, if it ran, counts
                self._after(milestone, read_summary(files.dir) if files.finished() else None)
                continue
            spent = sum(summary.cost_usd for summary in summaries)
            if spent > self.rules.harness.max_cost_per_run_usd:
                self._stop_for_budget(spent, index, milestones)
                break
            if not milestone.is_task:
                status = milestone.status or "not validated"
                status = f"held back: {'; '.join(milestone.held_back)}" if milestone.held_back else status
                self.log(f"{milestone.id}: skipped ({status}); the chain goes on from its verify commit")
                self._after(milestone, None)
                self.memory.append(applied(milestone.id, milestone.title))
                continue
            summary = finished_summary(files)
            if summary is None:  # not started, interrupted, or ENV_ERROR: resumed from its log
                summary = MilestoneRun(self.context, milestone, self._inheritance(spent)).run()
            else:  # finished: snapshots a kill right after its summary left behind go
                for _, snapshot in files.snapshots():
                    snapshot.unlink(missing_ok=True)
            self._after(milestone, summary)
            summaries.append(summary)
            if summary.status == "ENV_ERROR":
                again = "run the same command again to resume"
                raise SandboxLost(f"{self.key} {milestone.id}: ENV_ERROR: {summary.error}; {again}")
        return summaries

    def _write_metadata(self, milestones: list[str] | None) -> None:
        """The run's metadata, written when it starts; a resume must be the same policy (one log, one Dev)."""
        metadata = self._metadata(milestones)
        path = self.store.run_metadata(self.key, self.run_id)
        if path.exists():
            started = self.store.read_model(path, RunMeta)
            # the Dev's policy: who, in which mode and profile, seeing what, under which harness rules (budgets,
            # Mentor), on which plan (a rules change elsewhere, say in distill, leaves a run resumable)
            fields = ("agent", "model", "mode", "harness_profile", "test_visibility", "plan_id")
            for field in (*fields, "agent_policy", "harness_rules"):
                before, now = (
                    (getattr(started, field), getattr(metadata, field))
                    if field in fields
                    else (started.config.get(field), metadata.config.get(field))
                )
                if before is None or before == "":  # written before the field was
                    continue
                if before != now:
                    raise ConfigError(
                        f"run {self.run_id} of {self.key} was started with {field} {before!r}, not {now!r}: resuming "
                        "it so would mix two policies in one run; resume with the same settings, or another --run-id"
                    )
            return
        write_run_metadata(self.run_dir, metadata)

    def _metadata(self, milestones: list[str] | None) -> RunMeta:
        return RunMeta(
            run_id=self.run_id,
            repo=self.key,
            agent=self.agent.name,
            model=self.agent.model,
            harness_version=__version__,
            rules_hash=self.rules.hash,
            plan_id=self.plan.plan_id,
            synthetic=self.agent.synthetic,
            mode=self.context.mode,
            harness_profile=self.context.harness_profile,
            test_visibility=self.context.test_visibility,
            scaffold=self.agent.scaffold_info(),
            config={
                "backend": self.environment.backend,
                "milestones": milestones or "all",
                "harness_rules": hashlib.sha256(self.rules.harness.model_dump_json().encode()).hexdigest()[:12],
                **({"agent_policy": self.agent.policy()} if self.agent.policy() else {}),
                **({"mentor_model": f"{self.mentor.name}:{self.mentor.model}"} if self.mentor else {}),
            },
        )

    def _stop_for_budget(self, spent: float, index: int, milestones: list[str] | None) -> None:
        budget = self.rules.harness.max_cost_per_run_usd
        left = [later.id for later in self.plan.milestones[index:] if not milestones or later.id in milestones]
        self.log(f"run budget spent: ${spent:.2f} > max_cost_per_run_usd ${budget:g}; not started: {', '.join(left)}")

    def _inheritance(self, spent: float) -> Inheritance:
        carried_from, start_patch = self.carry or (None, b"")
        return Inheritance(list(self.memory), carried_from, start_patch, spent)

    def _after(self, milestone: Milestone, summary: MilestoneSummary | None) -> None:
        """What the next milestone inherits: its memory of this one, and the Dev's state if this one passed."""
        if summary:
            self.memory.append(self._remember(milestone, summary))
        passed = summary is not None and summary.status == "PASS"
        self.carry = (milestone.id, self._dev_state(milestone)) if passed else None

    def _remember(self, milestone: Milestone, summary: MilestoneSummary) -> MilestoneMemory:
        """The memory of a finished milestone, from its files in the store alone: the same whether it
        ran just now or in an earlier invocation of this run (resumes rebuild the same memory)."""
        files = self.store.milestone_run(self.key, self.run_id, milestone.id)
        events = Recorder.open(files.dir, repair=False).events() if files.trajectory.exists() else []
        final = files.final_diff.read_bytes() if files.final_diff.exists() else b""  # none after ENV_ERROR
        start = files.start_patch.read_bytes() if files.start_patch.exists() else b""
        classifier, rules = self.context.classifier, self.rules.harness.memory
        return remember(milestone.id, milestone.title, summary, events, final, start, classifier, rules)

    def _dev_state(self, milestone: Milestone) -> bytes:
        """The Dev's final state of `milestone` as a patch on its verify commit (the next milestone's base): the
        files the Dev changed as it left them; the rest as the repository has them (work the task did not ask for,
        named as context, stays), test files and test configuration too."""
        final = self.store.milestone_run(self.key, self.run_id, milestone.id).final_diff.read_bytes()
        touched = {change.path for change in split_diff(final)}
        tree = self.environment.repo.tree_with(milestone.base_commit, final)
        changes = split_diff(self.environment.repo.diff(milestone.verify_commit, tree))
        kept, _ = filter_candidate(b"".join(change.raw for change in changes if change.path in touched), self.rules)
        return kept
