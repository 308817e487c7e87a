"""The `environments` section: base images and their bootstrap, sandbox limits, validation's rules."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..models.common import Model


class BootstrapRules(Model):
    suite: str
    mirror: str
    packages: dict[str, list[str]]
    setup: dict[str, list[str]] = {}  # per language: commands run in the new root after its packages (warm caches)
    paths: dict[str, list[str]] = {}  # per language: directories put first on the base's PATH (that toolchain)
    public_image: str = Field(min_length=1)  # what exported task Dockerfiles build FROM by default instead


CollateralTests = Literal["set_aside", "graded"]


class EnvRules(Model):
    base_images: dict[str, str]
    bootstrap: BootstrapRules
    build_timeout_s: int = Field(gt=0)
    memory: str = Field(pattern=r"^\d+[kmg]?$")
    cpus: float = Field(gt=0)
    pids_limit: int = Field(gt=0)
    exec_timeout_s: int = Field(gt=0)
    test_timeout_s: int = Field(gt=0)
    test_case_timeout_s: int = Field(0, ge=0)
    repeats: int = Field(ge=1)
    max_pass_to_pass: int = Field(ge=0)
    regression_suite_max_tests: int = Field(
        5000,
        ge=0,
        description="A submission that passes its graded tests is checked on the whole passing suite for regressions;"
        " above this many tests on a sample of this many (by a hash of the test id); 0: no whole-suite check",
    )
    collateral_tests: CollateralTests = "set_aside"
    private_tests: CollateralTests = Field(
        "set_aside",
        description="A FAIL_TO_PASS test calling a private helper the change adds tests an implementation detail no "
        "release note states: `set_aside` leaves it out of grading unless it is all the milestone has; `graded` "
        "keeps it",
    )
    collateral_crowd: int = Field(
        10,
        ge=0,
        description="In a milestone that moves a dependency, this many unchanged FAIL_TO_PASS tests failing at base "
        "with one message are collateral: the dependency broke the old code, no task states that (0: never)",
    )
    merge_untested: list[Literal["no_fail_to_pass", "does_not_reproduce", "env_error"]] = Field(
        ["no_fail_to_pass", "does_not_reproduce"],
        description="Verdicts that merge a milestone into the next one (nothing grades it); [] keeps every one.",
    )
    keep_valid_carriers: bool = Field(
        True,
        description="Undo a merge that leaves the next milestone, valid alone, without a FAIL_TO_PASS test; the "
        "untested one stays apart (`kept_apart`) and the chain skips it. False: the carrier merges on.",
    )
    test_config_patterns: list[str]
    test_config_sections: dict[str, list[str]]
    overrides: dict[str, dict[str, Any]] = {}
