"""Small helpers for tests: git repositories they build, and the installed command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


BIN = Path(sys.executable).parent / "harnessforge"


def cli_command(store, arguments: str, *extra: str, rules: Path | None = None) -> list[str]:
    """The installed `harnessforge` command on `store` (and `rules`): `arguments` split on spaces, then `extra`."""
    return [
        str(BIN),
        "--store",
        str(store.root),
        *(["--rules", str(rules)] if rules else []),
        *arguments.split(),
        *extra,
    ]
