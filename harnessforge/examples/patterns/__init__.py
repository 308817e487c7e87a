"""Small example repositories, one per shape real repositories have and tasklite lacks.

Each module builds one repository with a `build(dest) -> Path` function and says in its docstring
which real-world pattern it reproduces and what the factory should make of it. They are separate
from tasklite so that tasklite's six milestones (which the demo and many tests pin) stay as they are.
`harnessforge example-repo DEST --pattern NAME` builds one; the tests build them once per session.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

# pattern name -> module in this package (each exposes `build(dest: Path) -> Path`)
PATTERNS: dict[str, str] = {
    "maintenance-branch": "maintenance_branch",
    "off-mainline-tags": "off_mainline_tags",
    "towncrier-apart": "towncrier_apart",
    "squash-only": "squash_only",
    "housekeeping-heavy": "housekeeping_heavy",
    "self-extras": "self_extras",
    "unittest-mixins": "unittest_mixins",
    "private-import": "private_import",
    "go-module": "go_module",
    "ts-package": "ts_package",
    "rust-crate": "rust_crate",
}


def build_pattern(name: str, dest: str | Path) -> Path:
    """Build the example repository of pattern `name` at `dest` (which must not exist or be empty)."""
    if name not in PATTERNS:
        raise KeyError(f"unknown example pattern {name!r}; known: {', '.join(sorted(PATTERNS)) or 'none'}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} already exists and is not empty")
    builder: Callable[[Path], Path] = importlib.import_module(f"{__name__}.{PATTERNS[name]}").build
    return builder(dest)


__all__ = ["PATTERNS", "build_pattern"]
