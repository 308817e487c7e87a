"""The `distill` section: the Reviewer, the gates, contamination, the PoC criteria and the shapes."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..models.common import Model
from .patterns import compiles


class ReviewerRules(Model):
    hard_hint_level: int = Field(ge=1, le=4)
    hard_direction_changes: int = Field(ge=1, description="5 also needs at least this many direction changes")
    long_turns: int = Field(ge=1)
    meaningful_iterations: int = Field(ge=1)
    high_value_difficulty: int = Field(ge=1, le=5)
    medium_value_difficulty: int = Field(ge=1, le=5)
    fair_waste_share: float = Field(ge=0, le=1, description="Trajectory quality fair from this share of waste")
    poor_waste_share: float = Field(ge=0, le=1, description="... and poor from this one")
    judge_digest_chars: int = Field(ge=0, description="How much of the trajectory the LLM judge reads")


DiscardReason = Literal[
    "env_issue", "too_easy", "agent_loop", "flaky_test", "suspected_memorisation", "cheating", "unresolved"
]
# What a run's rows can be part of: `kto_negatives` are its KTO rows labelled false, `dpo_rejected` the
# rejected side of a DPO pair (the chosen side is `dpo`); `tasks`: the run can be a task card's reference,
# which makes its milestone a verified task (Harbor, SWE-bench).
GatedDataset = Literal["sft", "stuck_slices", "chains", "dpo", "dpo_rejected", "kto", "kto_negatives", "atif", "tasks"]


class SliceTurns(Model):
    """A stuck slice's Dev turns after the task: its stretch cut to its last `max`, context added up to `min`."""

    min: int = Field(ge=1)
    max: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SliceTurns:
        if self.min > self.max:
            raise ValueError(f"slice_turns: min {self.min} is more than max {self.max}")
        return self


class HintLevelPairRules(Model):
    """`low_vs_high_hint` pairs: two runs of one milestone with the same outcome, one needing higher hints."""

    enabled: bool = True
    min_level_gap: int = Field(1, ge=1, description="Their highest hint levels differ by at least this")
    only_passing: bool = Field(False, description="Pair only two passing runs (else also two that did not pass)")


class ChainRules(Model):
    """Chain rows: a run's consecutive passing milestones as one conversation, cut at whole milestones."""

    enabled: bool = True
    min_milestones: int = Field(2, ge=1, description="Fewer make no chain row (the milestone rows hold them)")
    max_messages: int = Field(gt=0)
    max_chars: int = Field(gt=0, description="Of the messages as JSON (about 3-4 characters a token)")


class ContaminationRules(Model):
    margin_days: int = Field(ge=0, description="A solution newer than the cutoff by less than this: medium risk")
    cutoffs: dict[str, date] = Field(
        default_factory=dict, description="Training-data cutoff per Dev model name prefix (the longest prefix wins)"
    )


class PocRules(Model):
    accepted_share: float = Field(ge=0, le=1, description="Share of milestone runs that must pass the Reviewer")
    min_task_difficulty: int = Field(ge=1, le=5, description="At least one verified task this hard")


class DistillRules(Model):
    slice_context_messages: int = Field(ge=0)
    slice_turns: SliceTurns
    plan_patterns: list[str] = Field(
        default_factory=list, description="Regexes (case-insensitive, per line) of a Dev message that states a plan"
    )
    hint_level_pairs: HintLevelPairRules = Field(default_factory=HintLevelPairRules)
    chains: ChainRules
    hint_in_prompt: Literal["drop", "keep"]
    hint_leaks: Literal["drop", "mark", "give_hint"] = Field(
        description="A trained turn that shows a hint its prompt lacks: drop the row, keep it marked, or add the hint."
    )
    hint_references: list[str] = Field(
        default_factory=list, description="Regexes (case-insensitive) by which a turn refers to a hint it got."
    )
    reviewer: ReviewerRules
    contamination: ContaminationRules
    poc: PocRules
    gates: dict[DiscardReason, list[GatedDataset]] = Field(
        default_factory=dict,
        description="Per discard reason, the datasets a run rejected for it still feeds (a reason not listed: none).",
    )

    @field_validator("hint_references", "plan_patterns")
    @classmethod
    def _references_compile(cls, value: list[str], info) -> list[str]:
        compiles(value, {"hint_references": "hint reference"}.get(info.field_name, "plan pattern"))
        return value

    def allows(self, reasons: list[str], dataset: str) -> bool:
        """Whether a run with these discard reasons feeds `dataset`: every reason must allow it."""
        wanted = {dataset, "kto"} if dataset == "kto_negatives" else {dataset}  # all of KTO: its negatives too
        return all(wanted & set(self.gates.get(reason, [])) for reason in reasons)
