"""Stage 2 run records: `metadata.json` of a run and `summary.json` of each milestone it attempted.

A run is one agent configuration (backend, model, rules, seed) walking one repository's milestone chain;
these two files are what a reader needs to tell runs apart and to total them without replaying events.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from harnessforge import __version__

from .common import Model, utcnow
from .plan import TestVisibility
from .trajectory import Usage

# ENV_ERROR: the sandbox was lost (e.g. the Docker engine restarted) and a retry failed too; not the Dev's
# outcome, so a rerun of the same run resumes the milestone.
MilestoneStatus = Literal["PASS", "FAIL", "STUCK", "ENV_ERROR"]


class RunMeta(Model):
    """`trajectories/<repo_key>/<run_id>/metadata.json`: what produced every file under the run."""

    run_id: str
    repo: str = Field(description="repo_key (owner__name)")
    agent: str = Field(description="AgentBackend.name, e.g. anthropic | openai | claude-code | oracle")
    model: str = ""
    harness_version: str = __version__
    rules_hash: str = ""
    plan_id: str = Field("", description="The plan whose milestones it ran (`MilestonePlan.plan_id`)")
    config: dict[str, Any] = Field(default_factory=dict, description="Budgets, seed, backend options: the run's knobs")
    mode: str = Field("standard", description="`run --mode`: what the Dev was given (rules: harness.modes)")
    harness_profile: str = Field("V0", description="`run --harness-profile` (rules: harness.harness_profiles)")
    test_visibility: TestVisibility = Field(
        "visible",
        description="`run --tests`: visible (the acceptance tests in the workspace) or hidden (applied only when "
        "grading; a failed submission returns the failing ids and their messages)",
    )
    started_at: datetime = Field(default_factory=utcnow)
    synthetic: bool = Field(False, description="True when the agent is not a model (the oracle): label, never train")
    scaffold: dict[str, Any] = Field(
        default_factory=lambda: {"name": "harnessforge", "version": __version__},
        description="Whose agent loop and tools the Dev worked in: name, version and (a scaffold's own) tool schemas",
    )


class MilestoneSummary(Model):
    """`<run_id>/<mid>/summary.json`: the outcome and cost of one milestone attempt, for reports and budgets."""

    run_id: str
    milestone_id: str
    status: MilestoneStatus
    turns: int = Field(0, ge=0, description="Dev turns (model calls)")
    hints_released: list[int] = Field(default_factory=list, description="Hint levels shown, in order")
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = Field(0.0, ge=0)
    wall_s: float = Field(0.0, ge=0)
    reset_to: str | None = Field(None, description="Commit the chain continued from when this one did not pass")
    carried_from: str | None = Field(
        None, description="The milestone whose Dev's final state this one started from (None: from its base commit)"
    )
    error: str | None = Field(None, description="ENV_ERROR: what failed in the environment (one line)")
    stopped_by: str | None = Field(
        None, description="STUCK: the budget rule the milestone ran out of, with the numbers (None: not a budget stop)"
    )
    synthetic: bool = False
    cost_unknown: bool = Field(
        False,
        exclude_if=lambda value: not value,
        description="Some model call had no price: cost_usd counts it as $0 (written only when true)",
    )
    cli_cost_usd: float | None = Field(
        None,
        ge=0,
        exclude_if=lambda value: value is None,
        description="claude-code: what the claude CLI itself reported spending, over its invocations (absent for "
        "other backends); cost_usd is ours, from agents/pricing.py",
    )
    cost_mismatch: bool = Field(
        False,
        exclude_if=lambda value: not value,
        description="cli_cost_usd and cost_usd differ by more than harness.cost_tolerance (written only when true)",
    )
