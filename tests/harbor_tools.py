"""Harbor's own tools on files we wrote: its ATIF validator and task loader (harnessforge/export/harbor_check.py)
and `harbor lint`, run from the Harbor virtualenv scripts/install.sh makes (Harbor needs Python >= 3.12,
the tests run on 3.11)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARBOR_VENV = ROOT / ".venv-harbor"
CHECK = ROOT / "harnessforge" / "export" / "harbor_check.py"
# `harbor lint` rules left out, each with why (the dataset card says the same): none so far.
LINT_IGNORED: dict[str, str] = {}


def check(venv: Path, paths: list[Path]) -> dict:
    """{"atif": {path: [errors]}, "tasks": {path: error or null}} from Harbor's validator and loader."""
    proc = subprocess.run(
        [str(venv / "bin" / "python"), str(CHECK), *map(str, paths)], capture_output=True, text=True, timeout=300
    )
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise AssertionError(f"harbor_check.py failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def lint(venv: Path, folders: list[Path]) -> tuple[int, list[dict]]:
    """`harbor lint --json` on task folders: its exit code and findings."""
    ignored = [arg for rule in LINT_IGNORED for arg in ("--ignore", rule)]
    proc = subprocess.run(
        [str(venv / "bin" / "harbor"), "lint", "--json", *ignored, *map(str, folders)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode not in (0, 1):
        raise AssertionError(f"harbor lint failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.returncode, json.loads(proc.stdout or "[]")
