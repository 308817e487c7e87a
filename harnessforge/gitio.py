"""Git access: resolving repository arguments, the clone cache, and fast history reads.

History is read with one `git log --first-parent --numstat` call rather than a per-commit diff
walk: on a 30,000-commit history that is the difference between seconds and many minutes
(see benchmarks/). Paths are `str` decoded with surrogateescape, so `os.fsencode` gives back
the exact bytes git printed even for non-UTF-8 names; `display()` makes them JSON-safe.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import git
from git.exc import GitCommandError

from .atomic import disk_full, file_lock
from .errors import RepoError
from .models import RepoSpec

GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never hang on a credential prompt for a bad URL
    "GIT_ASKPASS": "true",
    "LC_ALL": "C",
}
URL_RE = re.compile(r"^(?:https?|ssh|git|file)://|^[\w.-]+@[\w.-]+:")
OWNER_NAME_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?$")
GITHUB_URL_RE = re.compile(r"github\.com[/:]([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?/?$")


def display(text: str) -> str:
    """A surrogateescaped string made JSON-safe (undecodable bytes become U+FFFD)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _message(raw: bytes) -> str:
    """A commit subject or body: a squash-merged PR's body keeps the web form's CRLF line ends, and its paragraphs
    must still split on blank lines."""
    return _decode(raw).replace("\r\n", "\n").strip()


def _safe(part: str) -> str:
    part = re.sub(r"[^A-Za-z0-9._-]+", "-", part).strip("-.") or "repo"
    return part if part[0].isalnum() else f"r{part}"


def _key(owner: str, name: str) -> str:
    return f"{_safe(owner)}__{_safe(name.removesuffix('.git'))}"


# ---------------------------------------------------------------------------------------------
# Resolving what the user typed
# ---------------------------------------------------------------------------------------------


def resolve_repo(arg: str) -> RepoSpec:
    """A local work tree, a bare git directory, a git URL, or `owner/name` -> RepoSpec."""
    path = Path(arg).expanduser()
    if path.exists():
        path = path.resolve()
        if (path / ".git").exists():
            kind = "worktree"
        elif (path / "HEAD").is_file() and (path / "objects").is_dir():
            kind = "bare"
        else:
            raise RepoError(f"{arg}: this directory is not a git repository (no .git, no HEAD/objects)")
        origin = _origin_url(path)
        found = GITHUB_URL_RE.search(origin) if origin else None
        github = f"{found[1]}/{found[2]}" if found else None
        key = _key(found[1], found[2]) if found else _key("local", path.name)
        return RepoSpec(input=arg, kind=kind, url=str(path), key=key, github=github)
    if URL_RE.match(arg):
        found = GITHUB_URL_RE.search(arg)
        if found:
            return RepoSpec(
                input=arg, kind="url", url=arg, key=_key(found[1], found[2]), github=f"{found[1]}/{found[2]}"
            )
        parts = [part for part in re.split(r"[/:]", arg.rstrip("/")) if part]
        owner, name = (parts[-2], parts[-1]) if len(parts) >= 2 else ("remote", parts[-1])
        return RepoSpec(input=arg, kind="url", url=arg, key=_key(owner, name))
    match = OWNER_NAME_RE.match(arg)
    if match:
        owner, name = match[1], match[2]
        return RepoSpec(
            input=arg,
            kind="github",
            url=f"https://github.com/{owner}/{name}.git",
            key=_key(owner, name),
            github=f"{owner}/{name}",
        )
    raise RepoError(
        f"{arg!r} is not a local git repository, a git URL (https://, ssh://, file://, git@host:) "
        "or a GitHub owner/name"
    )


def _origin_url(path: Path) -> str | None:
    try:
        return git.Git(path).execute(["git", "config", "--get", "remote.origin.url"], env=GIT_ENV) or None
    except GitCommandError:
        return None


def _git_error(e: GitCommandError) -> str:
    """The line of git's stderr that says what went wrong."""
    text = str(e.stderr or "").strip().removeprefix("stderr:").strip().strip("'")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.lower().startswith(("fatal", "error"))]
    return fatal[0] if fatal else (lines or [f"git exited with status {e.status}"])[-1]


# ---------------------------------------------------------------------------------------------
# The clone cache
# ---------------------------------------------------------------------------------------------


@contextmanager
def _locked(dest: Path) -> Iterator[None]:
    """One clone or fetch of a cache at a time: parallel chains and Dagster steps share it, and git
    refuses concurrent ref updates."""
    # beside the clones: a failed clone leaves no trace among them
    with file_lock(dest.parent.parent / "locks" / f"{dest.name}.lock"):
        yield


def ensure_clone(spec: RepoSpec, dest: Path, progress=None) -> "GitRepo":
    """A bare clone of `spec` at `dest`: cloned once, fetched on every later call.

    A shallow source is unshallowed when its remote allows; otherwise it is a clear error,
    because truncated history would give wrong releases and milestones.
    """
    with _locked(dest):
        return _ensure_clone(spec, dest, progress)


def _readable(dest: Path) -> bool:
    try:
        git.Git(dest).execute(["git", "rev-parse", "--verify", "--quiet", "HEAD^{tree}"], env=GIT_ENV)
        return True
    except GitCommandError:
        return False


def _ensure_clone(spec: RepoSpec, dest: Path, progress) -> "GitRepo":
    if (dest / "HEAD").is_file() and not _readable(dest):
        shutil.rmtree(dest)  # a damaged cache (e.g. objects lost): it is only a cache, so clone it again
    if (dest / "HEAD").is_file():
        try:
            client = git.Git(dest)
            client.execute(["git", "remote", "set-url", "origin", spec.url], env=GIT_ENV)
            client.execute(
                ["git", "fetch", "--prune", "--tags", "--force", "origin", "+refs/heads/*:refs/heads/*"], env=GIT_ENV
            )
        except GitCommandError as e:
            raise disk_full(dest, RepoError(f"cannot fetch {spec.input}: {_git_error(e)}")) from None
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
        try:
            git.Repo.clone_from(spec.url, tmp, bare=True, env=GIT_ENV, progress=progress)
        except GitCommandError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if progress is not None and not str(e.stderr or "").strip("' \n"):
                e.stderr = "\n".join(progress.error_lines + progress.other_lines)  # progress consumed stderr
            raise disk_full(dest, RepoError(f"cannot clone {spec.url}: {_git_error(e)}")) from None
        try:  # a reachability bitmap makes every sandbox workspace's pack fast to write (envs.workspace)
            git.Git(tmp).execute(["git", "repack", "-a", "-d", "-b", "-q"], env=GIT_ENV)
        except GitCommandError:
            pass  # e.g. a shallow source: packs without a bitmap work too, only slower
        os.replace(tmp, dest)
    if (dest / "shallow").exists():
        try:  # the source may itself be shallow, in which case this "succeeds" and changes nothing
            git.Git(dest).execute(["git", "fetch", "--unshallow", "--tags", "origin"], env=GIT_ENV)
        except GitCommandError:
            pass
        if (dest / "shallow").exists():
            shutil.rmtree(dest, ignore_errors=True)
            raise RepoError(
                f"{spec.input} is a shallow clone: its history is cut off, so releases and milestones "
                "cannot be mined. Run `git fetch --unshallow` in it, or pass the upstream URL instead."
            ) from None
    return GitRepo(dest)


# ---------------------------------------------------------------------------------------------
# Reading history
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Change:
    path: str
    added: int
    deleted: int
    binary: bool = False
    old_path: str | None = None


@dataclass(slots=True)
class Commit:
    sha: str
    parents: list[str]
    author: str
    email: str
    time: datetime
    subject: str
    body: str
    files: list[Change] = field(default_factory=list)

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


@dataclass(slots=True)
class Tag:
    name: str
    commit: str
    date: datetime


_REC, _SEP = b"\x1e", b"\x1f"
_LOG_FORMAT = "%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%ct%x1f%s%x1f%b%x1f"


def _parse_numstat(blob: bytes) -> list[Change]:
    """`-z --numstat` records: `A\\tD\\tpath\\0`, or `A\\tD\\t\\0old\\0new\\0` for renames."""
    changes: list[Change] = []
    parts = blob.lstrip(b"\n\0").split(b"\0")
    i = 0
    while i < len(parts):
        record = parts[i].lstrip(b"\n")
        i += 1
        if not record:
            continue
        added, deleted, path = record.split(b"\t", 2)
        binary = added == b"-"
        added_lines, deleted_lines = (0, 0) if binary else (int(added), int(deleted))
        if path:
            changes.append(Change(_decode(path), added_lines, deleted_lines, binary))
        else:  # rename/copy: old and new path follow as their own NUL-terminated fields
            old, new = parts[i], parts[i + 1]
            i += 2
            changes.append(Change(_decode(new), added_lines, deleted_lines, binary, old_path=_decode(old)))
    return changes


class GitRepo:
    """Domain reads over one (bare) repository. All shas are full 40-hex strings."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._git = git.Git(self.path)

    def run(self, *args: str, check: bool = True) -> bytes:
        try:
            return self._git.execute(
                ["git", "-c", "core.quotePath=false", *args],
                stdout_as_string=False,
                strip_newline_in_stdout=False,
                env=GIT_ENV,
            )
        except GitCommandError as e:
            if not check:
                return b""
            raise RepoError(f"git {' '.join(args[:3])} failed in {self.path}: {_git_error(e)}") from None

    def text(self, *args: str) -> str:
        return _decode(self.run(*args)).strip()

    # ---- refs --------------------------------------------------------------------------------
    def rev(self, ref: str) -> str:
        found = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if not found.strip():
            raise RepoError(f"{ref!r} is not a commit, tag or branch in {self.path.name}")
        return found.decode().strip()

    def head(self) -> str:
        return self.rev("HEAD")

    def tags(self) -> list[Tag]:
        format_spec = (
            "%(refname:strip=2)%00%(objectname)%00%(*objectname)%00%(committerdate:unix)%00%(*committerdate:unix)"
        )
        found = []
        for line in self.run("for-each-ref", "refs/tags", f"--format={format_spec}").splitlines():
            name, target, peeled, date, peeled_date = line.split(b"\0")
            timestamp = int(peeled_date or date or 0)
            found.append(
                Tag(_decode(name), (peeled or target).decode(), datetime.fromtimestamp(timestamp, timezone.utc))
            )
        return found

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        try:
            self._git.execute(["git", "merge-base", "--is-ancestor", ancestor, descendant], env=GIT_ENV)
            return True
        except GitCommandError:
            return False

    # ---- history -----------------------------------------------------------------------------
    def first_parent_log(self, start: str | None, end: str) -> list[Commit]:
        """Mainline commits in (start, end], oldest first, each with its diff stat against
        its first parent (for merges: the whole merged change)."""
        revisions = f"{start}..{end}" if start else end
        raw = self.run(
            "log",
            "--first-parent",
            "--reverse",
            "--diff-merges=first-parent",
            "--numstat",
            "-z",
            f"--format={_LOG_FORMAT}",
            revisions,
        )
        commits = []
        for record in raw.split(_REC)[1:]:
            sha, parents, author, email, commit_time, subject, body, stat = record.split(_SEP, 7)
            commits.append(
                Commit(
                    sha.decode(),
                    parents.decode().split(),
                    _decode(author),
                    _decode(email),
                    datetime.fromtimestamp(int(commit_time), timezone.utc),
                    _message(subject),
                    _message(body),
                    _parse_numstat(stat),
                )
            )
        return commits

    def graph(self, start: str | None, end: str) -> dict[str, tuple[list[str], str, str]]:
        """Every commit in (start, end], not only the mainline: sha -> (parents, subject, body).

        One call however many side-branch commits there are (no shas on the command line).
        """
        revisions = [f"^{start}", end] if start else [end]
        commits = {}
        for record in self.run("log", "--format=%x1e%H%x1f%P%x1f%s%x1f%b", *revisions).split(_REC)[1:]:
            sha, parents, subject, body = record.split(_SEP, 3)
            commits[sha.decode()] = (parents.decode().split(), _message(subject), _message(body))
        return commits

    def commit_times(self, end: str) -> list[datetime]:
        return [
            datetime.fromtimestamp(int(stamp), timezone.utc) for stamp in self.run("log", "--format=%ct", end).split()
        ]

    # ---- trees and diffs -----------------------------------------------------------------------
    def diff(self, base: str, head: str, binary: bool = True) -> bytes:
        args = ["diff", "--no-color", "--no-ext-diff", "--full-index", "--no-renames"]
        return self.run(*args, *(["--binary"] if binary else []), base, head)

    def renamed(self, base: str, head: str) -> dict[str, str]:
        """The files `head` has under a new path, each with its path at `base` (git's rename detection)."""
        changes = _parse_numstat(self.run("diff", "-z", "--numstat", "-M", base, head, check=False))
        return {change.path: change.old_path for change in changes if change.old_path}

    def tree_with(self, commit: str, patch: bytes) -> str:
        """The tree of `commit` with `patch` applied, built in a throwaway index: no work tree, no ref
        moves, so the shared clone cache stays as it is."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {**GIT_ENV, "GIT_INDEX_FILE": f"{tmp}/index"}
            (Path(tmp) / "change.patch").write_bytes(patch)
            try:
                self._git.execute(["git", "read-tree", commit], env=env)
                if patch.strip():
                    self._git.execute(["git", "apply", "--cached", "--binary", f"{tmp}/change.patch"], env=env)
                return self._git.execute(["git", "write-tree"], env=env).strip()
            except GitCommandError as e:
                raise RepoError(f"applying a patch to {commit[:12]} failed in {self.path}: {_git_error(e)}") from None

    def show(self, rev: str, path: str) -> bytes | None:
        """A file's content at `rev` (None if absent), through GitPython's persistent
        `cat-file --batch` process: no new process per file."""
        try:
            _, kind, _, data = self._git.get_object_data(f"{rev}:{path}")
        except ValueError:
            return None
        except UnicodeEncodeError:  # a non-UTF-8 path: the batch protocol cannot carry it
            return self.run("cat-file", "blob", f"{rev}:{path}", check=False) or None
        return data if kind == b"blob" else None

    def files(self, rev: str) -> list[str]:
        return [_decode(path) for path in self.run("ls-tree", "-r", "-z", "--name-only", rev).split(b"\0") if path]

    def line_counts(self, rev: str, pathspecs: list[str]) -> dict[str, int]:
        """Lines per text file matching `pathspecs` at `rev`, without a checkout."""
        listing = self.run("grep", "-z", "-c", "-I", "-e", "", rev, "--", *pathspecs, check=False)
        counts = {}
        for line in listing.splitlines():
            name, _, count = line.rpartition(b"\0")
            counts[_decode(name.split(b":", 1)[1] if b":" in name else name)] = int(count or 0)
        return counts

    def blame_origins(self, base: str, head: str, path: str) -> list[str | None]:
        """For each line of `path` at `head`: the mainline commit in (base, head] that last
        changed it, or None when the line is older than `base`."""
        porcelain = self.run("blame", "--porcelain", "--first-parent", f"{base}..{head}", "--", path, check=False)
        origins: list[str | None] = []
        boundary: set[str] = set()
        current = None
        for line in porcelain.splitlines():
            if line.startswith(b"\t"):
                origins.append(None if current in boundary else current)
            elif line == b"boundary" and current:
                boundary.add(current)
            else:
                first_word = line.split(b" ", 1)[0]
                if len(first_word) == 40 and all(byte in b"0123456789abcdef" for byte in first_word):
                    current = first_word.decode()
        return origins
