"""What a tool call did to the workspace, whatever tool it was: the files it changed, each with the hash
of the content it left, and the files a shell command read.

Real models edit through the shell (`sed -i`, `cat >> f`, `git checkout -- f`) as often as through our
edit tools, so the files an edit touched come from the workspace itself: `Sandbox.changes()` before and
after the call, compared. One hash scheme (git's blob ids) for every tool means a file written by
`write_file` and restored by `git checkout` is seen going back to a content it had: thrashing.
"""

from __future__ import annotations

import re
import shlex

from ..envs.sandbox import FileChange, Sandbox
from ..errors import EnvError, SandboxLost

ABSENT = "0" * 40  # git's id for "no such file"
HASH_CHARS = 12  # as short as git's own abbreviations: enough to tell a file's contents apart
# Programs whose file arguments the Dev reads (`sed -n 1,20p f`, `head -50 f`). Searches (grep, rg) are
# not reads: they look for something rather than at a file.
READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "batcat", "view", "sed", "awk", "wc"})
_SEPARATORS = re.compile(r"\|\||&&|[|;&\n()]")


def _now(state: dict[str, FileChange], other: dict[str, FileChange], path: str) -> str:
    """A file's content id in `state`: its change if it differs from the commit, else the commit's blob."""
    if path in state:
        return state[path].after
    return other[path].before


class WorkspaceWatch:
    """The workspace state after the last watched call, to compare the next one with."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self._state: dict[str, FileChange] | None = None
        self._previous: dict[str, FileChange] = {}  # the state before the last watched call

    def before(self) -> None:
        """Know the state a call starts from (only read from the sandbox the first time)."""
        if self._state is None:
            self._state = self._read() or {}

    def after(self) -> dict[str, str]:
        """The files the call changed, each with the hash of its content now ("0…0": deleted)."""
        before = self._state if self._state is not None else {}
        after = self._read()
        if after is None:
            return {}
        self._state, self._previous = after, before
        changed = {}
        for path in sorted(set(before) | set(after)):
            now = _now(after, before, path)
            if now != _now(before, after, path):
                changed[path] = now[:HASH_CHARS]
        return changed

    def content_before(self, path: str) -> str | None:
        """The blob id a file had before the last watched call (None: it did not exist)."""
        state = self._state or {}
        if path not in self._previous and path not in state:
            return None
        blob = _now(self._previous, state, path)
        return None if blob == ABSENT else blob

    def refresh(self) -> None:
        """Read the state again (after the harness itself changed the workspace)."""
        self._state = self._read() or {}

    def _read(self) -> dict[str, FileChange] | None:
        """The state now; None when git cannot say (a broken repository is the Dev's to fix, not a crash)."""
        try:
            return self.sandbox.changes()
        except SandboxLost:
            raise
        except EnvError:
            return None


def files_read(command: str) -> list[str]:
    """The files a shell command reads by the common readers (`cat f`, `sed -n 1,9p f`, `head f`), in order.

    A heuristic for the Mentor's and the analytics' "which files did the Dev look at": words that are
    options, numbers, sed/awk scripts or globs are not files."""
    files: list[str] = []
    for segment in _SEPARATORS.split(command):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        if not words or words[0].rsplit("/", 1)[-1] not in READERS:
            continue
        program, arguments = words[0].rsplit("/", 1)[-1], _arguments(words[1:])
        if program in ("sed", "awk") and arguments:
            arguments = arguments[1:]  # the script
        for word in arguments:
            if re.fullmatch(r"[\w./@+-]+", word) and not re.fullmatch(r"[\d,.+-]+p?", word) and word not in files:
                files.append(word.removeprefix("./"))
    return files


def _arguments(words: list[str]) -> list[str]:
    """The words that are neither options nor redirections (`> out`, `2>&1`, `<<EOF`)."""
    kept, skip_next = [], False
    for word in words:
        if skip_next:
            skip_next = False
        elif re.fullmatch(r"\d*(>>?|<<?-?|&>)", word):
            skip_next = True  # the redirection's target follows
        elif not word.startswith("-") and not re.match(r"\d*[<>]|&>", word):
            kept.append(word)
    return kept
