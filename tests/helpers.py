"""Small helpers for tests that build their own git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def copy_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest
