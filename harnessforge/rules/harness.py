"""The harness's rules: the Mentor's ladders, the modes and profiles a run is made in, and the memory between
milestones (`harness:` in the rules file)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..errors import ConfigError
from ..models.common import Model
from .context import ContextRules, SamplingRules
from .patterns import compiles

Ladder = Literal["escalation", "seed000"]
TestFileEdits = Literal["warn", "block"]
HINT_PLACEHOLDERS = ("level", "hint", "rule", "turn")  # what a framing template may name


class Seed000Ladder(Model):
    """Seed 000's ladder: level k once `failures[k-1]` test runs in a row have failed with no rise in passing
    tests, and level `same_file_level` as soon as one file is edited `same_file_edits` times with none."""

    failures: list[int] = Field(min_length=4, max_length=4)
    same_file_edits: int = Field(ge=2)
    same_file_level: int = Field(ge=1, le=4)

    @field_validator("failures")
    @classmethod
    def _rising(cls, value: list[int]) -> list[int]:
        if any(count < 1 for count in value) or value != sorted(set(value)):
            raise ValueError(f"failures per level must rise from at least 1, got {value}")
        return value


class MentorRules(Model):
    ladder: Ladder = Field("escalation", description="Which ladder decides when the next level is released.")
    cooldown_turns: int = Field(ge=0)
    cooldown_test_runs: int = Field(ge=0)
    same_error_runs: int = Field(ge=1)
    thrash_cycles: int = Field(ge=1)
    wrong_direction_files: int = Field(ge=1)
    escalate_after_turns: int = Field(ge=1)
    seed000: Seed000Ladder = Field(
        default_factory=lambda: Seed000Ladder(failures=[3, 5, 8, 12], same_file_edits=4, same_file_level=2)
    )
    response_window_turns: int = Field(ge=1)
    max_level: int = Field(ge=0, le=4)
    stuck_phrases: list[str] = Field(
        default_factory=list, description="Regexes (case-insensitive) that make a Dev's text or reasoning a request."
    )
    framing: str = Field("plain", description="Which set of `framings` words the hints.")
    framings: dict[str, dict[int, str]] = Field(default_factory=lambda: {"plain": {}})

    @field_validator("stuck_phrases")
    @classmethod
    def _phrases_compile(cls, value: list[str]) -> list[str]:
        compiles(value, "stuck phrase")
        return value

    @field_validator("framings")
    @classmethod
    def _templates_format(cls, value: dict[str, dict[int, str]]) -> dict[str, dict[int, str]]:
        for name, templates in value.items():
            for level, template in templates.items():
                if not 0 <= level <= 4:
                    raise ValueError(f"framings.{name}: level {level} is not 0-4")
                try:
                    template.format(**{placeholder: "" for placeholder in HINT_PLACEHOLDERS})
                except (KeyError, IndexError, ValueError) as e:
                    raise ValueError(
                        f"framings.{name}.{level}: bad placeholder {e}; use {{{'}, {'.join(HINT_PLACEHOLDERS)}}}"
                    ) from None
        return value

    @model_validator(mode="after")
    def _framing_exists(self) -> MentorRules:
        if self.framing not in self.framings:
            raise ValueError(f"framing {self.framing!r} is not one of framings: {', '.join(sorted(self.framings))}")
        return self

    def frame(self, level: int, hint: str, rule: str, turn: int) -> str:
        """The hint as the Dev reads it: the `[hint L<n>]` mark (how a hint is told apart from other text),
        then the level's template of the chosen framing."""
        template = self.framings[self.framing].get(level, "{hint}")
        return f"[hint L{level}] " + template.format(level=level, hint=hint, rule=rule, turn=turn)


class ModeRules(Model):
    """One `run --mode`: what the Dev is given and who helps it (seed 000's experiments)."""

    first_hint: bool = Field(True, description="L0 (the issue titles) in the task text")
    memory: bool = Field(True, description="what earlier milestones built, in the task text")
    mentor: bool = Field(True, description="the Mentor releases hints")
    max_turns: int | None = Field(None, gt=0, description="the turn budget (default: harness.max_turns)")
    granularity: Literal["feature", "pr"] = Field("feature", description="the plan it needs (`plan --granularity`)")
    test_visibility: Literal["visible", "hidden"] | None = Field(
        None, description="the acceptance tests' visibility it needs (None: the run's `--tests`)"
    )


class HarnessProfileRules(Model):
    """One `run --harness-profile` (seed 000 §4.8): plan first (V1), plan review (V2), checkpoints (V3)."""

    plan_first: bool = Field(False, description="the Dev states a plan before its first edit (a `plan` event)")
    plan_review_min_overlap: float | None = Field(
        None, ge=0, le=1, description="a Mentor message when the plan covers less of the ground truth's modules"
    )
    checkpoints: bool = Field(False, description="after the Dev finishes a module, the tests covering it run")


class MemoryRules(Model):
    """Bounds of what a milestone's task recalls of each earlier one (harness/memory.py)."""

    max_files: int = Field(ge=0)
    max_symbols: int = Field(ge=0)
    max_errors: int = Field(ge=0)
    max_error_chars: int = Field(gt=0)
    max_chars: int = Field(gt=0)
    max_total_chars: int = Field(gt=0)


class HarnessRules(Model):
    max_turns: int = Field(gt=0)
    max_tokens_per_milestone: int = Field(gt=0)
    max_cost_per_milestone_usd: float = Field(gt=0)
    max_cost_per_run_usd: float = Field(gt=0)
    cost_tolerance: float = Field(ge=0)  # a share: the claude CLI's reported cost may differ from ours by this much
    max_wall_s_per_milestone: float = Field(gt=0)
    observation_max_chars: int = Field(gt=0)
    engine_wait_s: float = Field(120, ge=0)  # a lost sandbox: wait this long for the engine, then retry once
    test_file_edits: TestFileEdits = "warn"
    test_visibility: Literal["visible", "hidden"] = Field(
        "visible", description="Whether the acceptance tests are in the Dev's workspace (`run --tests` overrides)."
    )
    memory: MemoryRules
    mentor: MentorRules
    context: ContextRules = Field(default_factory=ContextRules)
    sampling: SamplingRules = Field(default_factory=SamplingRules)
    modes: dict[str, ModeRules] = Field(default_factory=lambda: {"standard": ModeRules()})
    harness_profiles: dict[str, HarnessProfileRules] = Field(default_factory=lambda: {"V0": HarnessProfileRules()})
    plan_pattern: str = Field(r"(?im)^\W*plan\s*:", description="how a Dev message states its plan (V1-V3)")
    plan_prompt: str = Field("", description="what the task text asks of a Dev that must plan first")
    plan_review_message: str = Field("", description="the Mentor's words when a plan misses the change's modules")

    @field_validator("plan_pattern")
    @classmethod
    def _plan_patterncompiles(cls, value: str) -> str:
        compiles([value], "plan pattern")
        return value

    @field_validator("plan_review_message")
    @classmethod
    def _review_placeholders(cls, value: str) -> str:
        try:
            value.format(covered=0, total=0, missing="", overlap="")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"bad placeholder {e}; use {{covered}}, {{total}}, {{missing}}, {{overlap}}") from None
        return value

    def mode(self, name: str) -> ModeRules:
        if name not in self.modes:
            raise ConfigError(f"unknown mode {name!r}; the rules' harness.modes has: {', '.join(sorted(self.modes))}")
        return self.modes[name]

    def harness_profile(self, name: str) -> HarnessProfileRules:
        if name not in self.harness_profiles:
            known = ", ".join(sorted(self.harness_profiles))
            raise ConfigError(f"unknown harness profile {name!r}; the rules' harness.harness_profiles has: {known}")
        return self.harness_profiles[name]
