"""Example repositories for tests and the demo, built by scripts rather than stored."""

from __future__ import annotations

from pathlib import Path

from . import tasklite


def build_example_repo(dest: str | Path, *, tags: bool = True, changelog: bool = True, odd_files: bool = False) -> Path:
    """Build the `tasklite` example repository at `dest` (see `tasklite.py` for its history)."""
    return tasklite.build(Path(dest), tags=tags, changelog=changelog, odd_files=odd_files)


__all__ = ["build_example_repo"]
