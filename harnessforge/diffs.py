"""A milestone's diff, split by file into the ground-truth patch and the test patch.

One `git diff --binary` per milestone; file sections are split on their `diff --git` headers so
the bytes stay exactly as git wrote them (binary and non-UTF-8 content apply cleanly).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

_HEADER = re.compile(rb"^diff --git ", re.M)


@dataclass
class FileDiff:
    path: str  # new path (old path for deletions), surrogateescaped
    raw: bytes
    deleted: bool
    binary: bool


def _unquote(spelled: bytes) -> bytes:
    if spelled.startswith(b'"') and spelled.endswith(b'"'):
        return codecs.escape_decode(spelled[1:-1])[0]
    return spelled


def _path_of(section: bytes) -> tuple[bytes, bool]:
    lines = section.split(b"\n")
    header = lines[0][len(b"diff --git ") :]
    minus = plus = None
    for line in lines[1:8]:
        if line.startswith(b"--- "):
            minus = line[4:]
        elif line.startswith(b"+++ "):
            plus = line[4:]
            break
    if plus and plus != b"/dev/null":
        return _unquote(plus)[2:], False
    if minus and minus != b"/dev/null":
        return _unquote(minus)[2:], plus == b"/dev/null"
    # binary or mode-only section: "a/P b/P" with the same P twice (no renames: --no-renames)
    if header.startswith(b'"'):
        end = header.index(b'" ', 1)
        return _unquote(header[: end + 1])[2:], b"deleted file mode" in section
    return header[2 : 2 + (len(header) - 5) // 2], b"deleted file mode" in section


def split_diff(diff: bytes) -> list[FileDiff]:
    """One FileDiff per `diff --git` section, its bytes exactly as git wrote them."""
    starts = [match.start() for match in _HEADER.finditer(diff)]
    files = []
    for start, end in zip(starts, starts[1:] + [len(diff)]):
        section = diff[start:end]
        path, deleted = _path_of(section)
        binary = b"\nGIT binary patch\n" in section or b"\nBinary files " in section
        files.append(FileDiff(path.decode("utf-8", "surrogateescape"), section, deleted, binary))
    return files


def parse_text(files: list[FileDiff], errors: list[str] | None = None) -> PatchSet:
    """unidiff view of the text (non-binary) sections, for hunks and line numbers; one unidiff cannot
    read is empty, and why goes to `errors` when given."""
    text = b"".join(file_diff.raw for file_diff in files if not file_diff.binary).decode("utf-8", "replace")
    try:
        return PatchSet(text)
    except UnidiffParseError as e:
        if errors is not None:
            errors.append(str(e))
        return PatchSet("")
