"""Repositories known to a store: registering what the user typed, opening the cached clone."""

from __future__ import annotations

from .gitio import GitRepo, ensure_clone, resolve_repo
from .models import RepoSpec
from .models.repo import REPO_KEY_RE
from .store import Store


def spec_for(store: Store, arg: str) -> RepoSpec:
    """A registered repo key, or anything `resolve_repo` accepts (registered on the way)."""
    if REPO_KEY_RE.match(arg) and (store.repo_dir(arg) / "repo.json").exists():
        return store.load_repo(arg)
    spec = resolve_repo(arg)
    store.save_repo(spec)
    return spec


def open_repo(store: Store, spec: RepoSpec, progress=None) -> GitRepo:
    """The store's bare clone of `spec`, cloned on first use and fetched afterwards."""
    return ensure_clone(spec, store.git_cache(spec.key), progress=progress)
