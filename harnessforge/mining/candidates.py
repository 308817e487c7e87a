"""Where the repositories to screen come from: a candidates file, or a GitHub search restricted to
repositories active within the window the screening's recent-activity criterion counts over."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from ..models.common import first_error
from ..rules import ScreeningRules, read_yaml

if TYPE_CHECKING:
    from ..github import GitHubClient

DEFAULT_CANDIDATES = Path(__file__).parents[1] / "config" / "repos.yaml"  # what `screen --default-candidates` screens


class CandidatesFile(BaseModel):
    candidates: list[str]


def read_candidates(path: Path) -> list[str]:
    """The `candidates: [owner/name, ...]` list of a YAML file (ConfigError naming the file otherwise)."""
    data = read_yaml(path, "candidates file")
    try:
        return CandidatesFile.model_validate(data).candidates
    except ValidationError as e:
        raise ConfigError(
            f"candidates file {path}: {first_error(e)} (expected `candidates: [owner/name, ...]`)"
        ) from None


def search_window_start(rules: ScreeningRules, now: datetime) -> datetime:
    """The oldest last push a searched candidate may have: a repository idle for longer would fail the
    recent-activity criterion anyway."""
    return now - timedelta(days=rules.recent_window_days)


def search_candidates(
    client: GitHubClient,
    language: str,
    min_stars: int,
    limit: int,
    rules: ScreeningRules,
    now: datetime | None = None,
) -> list[str]:
    """`owner/name` of up to `limit` repositories in `language` with `min_stars`, pushed to within the
    window, and as new, as little starred and in the order `rules.search` asks."""
    now = now or datetime.now(timezone.utc)
    since = search_window_start(rules, now)
    search = rules.search
    created = now - timedelta(days=search.created_within_days) if search.created_within_days else None
    return client.search_candidates(
        language, min_stars, since, limit, created_after=created, max_stars=search.max_stars, sort=search.sort
    )
