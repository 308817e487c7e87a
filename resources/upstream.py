"""Which upstream repositories the release sensor watches, and how many it checks per tick."""

from __future__ import annotations

import dagster as dg
from pydantic import Field


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
    github_releases: bool = Field(
        True, description="With a GitHub token, watch a GitHub repo's published releases instead of its tags"
    )
