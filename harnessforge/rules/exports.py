"""The `export` section: the SWE-bench task repo, held-out repositories, token estimates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..models.common import Model


class SwebenchRules(Model):
    """The SWE-bench 5.x task repo (`export --format swebench`), as `swebench dataset check` accepts it."""

    dataset: str = Field(pattern=r"^[\w.-]+/[\w.-]+$", description="What sweb.yaml publishes (owner/name).")
    split: str = Field(pattern=r"^\w+$", description="The split every instance is in.")
    log_parser: Literal["parse_log_pytest_v2", "parse_log_pytest"] = Field(
        description="swebench's parser of the eval log; FAIL_TO_PASS / PASS_TO_PASS hold the ids as it reports them."
    )
    eval_type: Literal["pass_and_fail", "fail_only"]


class HeldoutRules(Model):
    repos: list[str] = Field(default_factory=list, description="Held-out repositories (owner/name or store key)")
    fraction: float = Field(0.0, ge=0, le=1, description="And this share of the others, by a hash of their key")


class ExportRules(Model):
    allow_synthetic: bool = Field(description="Dagster's export without run config: include synthetic runs")
    swebench: SwebenchRules
    heldout: HeldoutRules
    chars_per_token: float = Field(gt=0, description="The dataset card's token estimate without a tokenizer")
