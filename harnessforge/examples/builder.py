"""A tiny scripted git author: commits, branches, merge and squash PRs, tags, fixed clock.

Dates are fixed (one step per commit) so the same script always yields the same shas.
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

Content = str | bytes | None  # None deletes the file


class RepoBuilder:
    def __init__(self, path: Path, start: datetime, step: timedelta = timedelta(hours=7)):
        self.path = Path(path)
        self.clock = start
        self.step = step
        self.path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "commit.gpgsign", "false")

    # ---- plumbing ----------------------------------------------------------------------------
    def git(self, *args: str | bytes, author: str = "Ada Maintainer <ada@example.org>") -> str:
        name, email = author[: author.index(" <")], author[author.index("<") + 1 : -1]
        stamp = self.clock.strftime("%Y-%m-%dT%H:%M:%S+00:00")
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": "Ada Maintainer",
            "GIT_COMMITTER_EMAIL": "ada@example.org",
            "GIT_COMMITTER_DATE": stamp,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        out = subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True)
        return out.stdout.decode("utf-8", "replace").strip()

    def tick(self) -> None:
        self.clock += self.step

    def write(self, files: dict[str | bytes, Content]) -> None:
        for rel, content in files.items():
            target = self.path / os.fsdecode(rel)
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())

    def edit(self, rel: str, old: str, new: str) -> dict[str, str]:
        """The file's new content with `old` (which must occur once) replaced by `new`."""
        text = (self.path / rel).read_text()
        if text.count(old) != 1:
            raise ValueError(f"{rel}: snippet occurs {text.count(old)} times: {old[:60]!r}")
        return {rel: text.replace(old, new)}

    # ---- authoring ---------------------------------------------------------------------------
    def commit(self, message: str, files, author: str = "Ada Maintainer <ada@example.org>") -> str:
        """`files` maps paths to contents, or is a function of the builder returning such a map
        (so a branch's second commit can edit what its first commit wrote)."""
        self.write(files(self) if callable(files) else files)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, author=author)
        self.tick()
        return self.git("rev-parse", "HEAD")

    def merge_pr(
        self,
        number: int,
        branch: str,
        title: str,
        commits: list[tuple[str, object]],
        author: str = "Bo Contributor <bo@example.org>",
    ) -> str:
        """A feature branch with `commits`, merged with GitHub's merge-commit message."""
        self.git("checkout", "-q", "-b", branch)
        for message, files in commits:
            self.commit(message, files, author=author)
        self.git("checkout", "-q", "main")
        self.git("merge", "-q", "--no-ff", branch, "-m", f"Merge pull request #{number} from bo/{branch}\n\n{title}")
        self.git("branch", "-q", "-D", branch)
        self.tick()
        return self.git("rev-parse", "HEAD")

    def squash_pr(
        self, number: int, title: str, files, body: str = "", author: str = "Cy Contributor <cy@example.org>"
    ) -> str:
        return self.commit(f"{title} (#{number})" + (f"\n\n{body}" if body else ""), files, author=author)

    def tag(self, name: str, message: str | None = None) -> None:
        if message:
            self.git("tag", "-a", name, "-m", message)
        else:
            self.git("tag", name)
