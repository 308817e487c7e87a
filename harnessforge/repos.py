"""Repositories known to a store: registering what the user typed, opening the cached clone."""

from __future__ import annotations

from pathlib import Path

from .errors import RepoError
from .gitio import GitRepo, ensure_clone, resolve_repo
from .models import RepoSpec
from .models.repo import REPO_KEY_RE
from .store import Store


def spec_for(store: Store, arg: str | RepoSpec) -> RepoSpec:
    """A registered repo key, or anything `resolve_repo` accepts."""
    if isinstance(arg, RepoSpec):
        return arg
    if REPO_KEY_RE.match(arg) and not Path(arg).exists():
        if (store.repo_dir(arg) / "repo.json").exists():
            return store.load_repo(arg)
        raise RepoError(
            f"no repository is registered under key {arg!r} in {store.root}; "
            "pass its path, URL or owner/name once to register it"
        )
    return resolve_repo(arg)


def open_repo(store: Store, spec: RepoSpec, progress=None) -> GitRepo:
    """The store's bare clone of `spec`, cloned on first use and fetched afterwards.

    The repo is registered (`repos/<key>/repo.json`) only once its clone succeeded.
    """
    repo = ensure_clone(spec, store.git_cache(spec.key), progress=progress)
    store.save_repo(spec)
    return repo


def spec_for_partition(store: Store, key: str) -> RepoSpec:
    """A Dagster partition key: a repo registered in the store, else `owner__name` on GitHub."""
    if (store.repo_dir(key) / "repo.json").exists():
        return store.load_repo(key)
    owner, sep, name = key.partition("__")
    if not sep:
        raise RepoError(f"partition {key!r} is neither a registered repo nor owner__name")
    return resolve_repo(f"{owner}/{name}")
