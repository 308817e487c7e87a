"""Headless Chromium for the UI tests (Debian's `chromium`, which scripts/install.sh installs): the DOM
after the page's scripts ran, and a screenshot kept as a test artifact."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    pytest.fail("no chromium on PATH: scripts/install.sh installs Debian's `chromium` (apt-get install chromium)")


def artifact_dir() -> Path:
    """$HARNESSFORGE_ARTIFACTS when set, else <repo>/test-artifacts/ (git-ignored)."""
    out = Path(os.environ.get("HARNESSFORGE_ARTIFACTS") or ROOT / "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def headless(
    url: str,
    profile: Path,
    size: tuple[int, int],
    screenshot: Path | None = None,
    budget_ms: int = 5000,
    timeout: int = 120,
) -> subprocess.CompletedProcess:
    """Chromium's `--dump-dom` of `url` (in `.stdout`), after `budget_ms` of virtual time; with a
    screenshot written to `screenshot` when given (an old one is removed first)."""
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={size[0]},{size[1]}",
        f"--virtual-time-budget={budget_ms}",  # virtual ms; pending network fetches pause virtual time
        "--run-all-compositor-stages-before-draw",
    ]
    if screenshot:
        screenshot.unlink(missing_ok=True)
        cmd.append(f"--screenshot={screenshot}")
    return subprocess.run(
        [*cmd, "--dump-dom", url], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
