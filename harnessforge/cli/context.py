"""What every command shares: the store and rules the global options chose, and the two consoles
(tables and paths on stdout, progress, notes and errors on stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from rich.console import Console

from ..models import RepoSpec
from ..rules import Rules, load_rules
from ..store import Store

if TYPE_CHECKING:
    from ..github import GitHubClient

console = Console(stderr=True)
out = Console()


class State:
    """Set by the app's callback from `--store` and `--rules` before any command runs."""

    store: Store
    rules_path: Optional[Path]

    @property
    def rules(self) -> Rules:
        return load_rules(self.rules_path)


state = State()


def github_factory(spec: RepoSpec) -> GitHubClient | None:
    """A GitHub client for the repo, caching under the store (None without a token)."""
    from ..github import GitHubClient  # PyGithub takes a second to import: only when a command needs it

    return GitHubClient.from_env(cache_dir=state.store.github_cache(spec.key))


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/] {message}", highlight=False)
