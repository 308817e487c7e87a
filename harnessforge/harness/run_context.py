"""What the milestones of one run share (`RunContext`), and what each takes from the chain before it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..agents.base import AgentBackend
from ..envs.environment import Environment
from ..files import FileClassifier
from ..models.trajectory import TestCounts
from ..rules import Rules
from ..store import Store
from .context_budget import ContextBudget
from .hint_rewriter import HintRewriter
from .memory import MilestoneMemory
from .verifier import Verifier


@dataclass(frozen=True)
class RunContext:
    """What every milestone of one run shares: the run, its collaborators and its rules."""

    run_id: str
    repo_key: str
    store: Store
    environment: Environment
    verifier: Verifier
    agent: AgentBackend
    rules: Rules
    classifier: FileClassifier
    log: Callable[[str], None]
    # after every Dev turn: (milestone id, turn, max turns, hint level, last TestCounts or None)
    on_turn: Callable[[str, int, int, int, TestCounts | None], None] | None = None
    hint_rewriter: HintRewriter | None = None  # the model Mentor that words each hint for the Dev's situation
    mode: str = "standard"  # `run --mode` (rules: harness.modes)
    harness_profile: str = "V0"  # `run --harness-profile` (rules: harness.harness_profiles)
    test_visibility: str = "visible"  # `run --tests`: hidden applies the acceptance tests only when grading
    context_budget: ContextBudget | None = None  # the Dev model's context window (None: a scaffold keeps its own)


@dataclass(frozen=True)
class Inheritance:
    """What a milestone takes from the chain before it."""

    memory: list[MilestoneMemory]  # each earlier milestone that ran: what it built, its outcome, its key errors
    carried_from: str | None = None  # the passed milestone whose Dev's final state this one starts from
    start_patch: bytes = b""  # that state, as a patch on this milestone's base
    spent_usd: float = 0.0  # what the run spent before this milestone: the run budget's counter
