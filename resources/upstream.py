"""Which upstream repositories the release sensor watches, and how many it checks per tick.

A sensor tick must finish within Dagster's evaluation deadline (60 s by default), so a tick checks a
page of the watch list, `parallel_checks` remotes at a time, each given at most `remote_timeout_s`:
its worst case, `ceil(per_tick / parallel_checks) * remote_timeout_s`, must fit in `tick_budget_s`
(checked when the resource is configured).
"""

from __future__ import annotations

import math

import dagster as dg
from pydantic import Field, model_validator


class UpstreamResource(dg.ConfigurableResource):
    """The watch list of `new_release_sensor`."""

    repos: list[str] = Field(
        default_factory=list,
        description="Repositories to watch: URLs, local paths or owner/name (default: every repo registered "
        "in the store)",
    )
    per_tick: int = Field(
        25, ge=1, description="Repos checked per sensor tick; the rest wait for the next ticks (a paging cursor)"
    )
    parallel_checks: int = Field(8, ge=1, description="Remotes listed at once within a tick")
    remote_timeout_s: int = Field(10, ge=1, description="Longest wait for one remote's tag listing")
    tick_budget_s: int = Field(
        45, ge=1, description="Worst-case seconds of one tick; keep it well under the sensor deadline (60 s)"
    )
    github_releases: bool = Field(
        True, description="With a GitHub token, watch a GitHub repo's published releases instead of its tags"
    )

    @model_validator(mode="after")
    def _fits_the_tick(self) -> "UpstreamResource":
        worst = self.worst_tick_s()
        if worst > self.tick_budget_s:
            raise ValueError(
                f"a tick could take {worst} s (ceil(per_tick {self.per_tick} / parallel_checks "
                f"{self.parallel_checks}) x remote_timeout_s {self.remote_timeout_s}), over tick_budget_s "
                f"{self.tick_budget_s}: lower per_tick or remote_timeout_s, or raise parallel_checks"
            )
        return self

    def worst_tick_s(self) -> int:
        return math.ceil(self.per_tick / self.parallel_checks) * self.remote_timeout_s
