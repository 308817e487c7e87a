"""GitHub access for enrichment. Without a token, everything runs from git alone."""

from __future__ import annotations

from typing import Callable, Optional

import dagster as dg
from pydantic import Field

from harnessforge.github import GitHubClient
from harnessforge.models import RepoSpec
from harnessforge.store import Store


class GitHubResource(dg.ConfigurableResource):
    token: Optional[str] = Field(None, description="GitHub token; set it with EnvVar('GITHUB_TOKEN')")
    api_url: Optional[str] = Field(None, description="API base URL (default: $GITHUB_API_URL or api.github.com)")

    def factory(self, store: Store) -> Callable[[RepoSpec], Optional[GitHubClient]]:
        """What the core's `screen`/`plan` call to get a client per repository (None: no token)."""

        def make(spec: RepoSpec) -> Optional[GitHubClient]:
            if not self.token:
                return None
            return GitHubClient(self.token, base_url=self.api_url, cache_dir=store.github_cache(spec.key))

        return make
