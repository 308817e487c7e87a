"""Towncrier fragments (`changelog.d/123.feature.md`) and reno notes (`releasenotes/notes/*.yaml`):
one change each, tied to the commit (and so the PR) that added the file, even when the code landed
elsewhere.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import PurePosixPath

import yaml

from ..gitio import GitRepo, display
from ..models import ChangelogEntry
from ..refs import extract_refs

FRAGMENT_DIRS = ("changelog.d", "changelog", "newsfragments", "changes", ".changelog", "news", "docs/changelog.d")
FRAGMENT_NAME = re.compile(r"^(?:\+[\w-]*|(\d+))\.([A-Za-z][\w-]*)(?:\.\d+)?(?:\.(?:md|markdown|rst|txt))?$")
RENO_DIR = "releasenotes/notes"


def towncrier_config(repo: GitRepo, end: str, paths: set[str]) -> tuple[tuple[str, ...], str | None]:
    """(fragment directories, rendered changelog file) from towncrier's configuration; without one,
    the usual directory names."""
    dirs, filename = list(FRAGMENT_DIRS), None
    for name in ("towncrier.toml", ".towncrier.toml", "pyproject.toml"):
        if name not in paths:
            continue
        try:
            config = tomllib.loads((repo.show(end, name) or b"").decode("utf-8", "replace"))
        except tomllib.TOMLDecodeError:
            continue  # pyproject.toml is not ours to report on; the usual names still apply
        section = config.get("tool", {}).get("towncrier")
        if not isinstance(section, dict):
            continue
        if isinstance(section.get("directory"), str):
            dirs = [section["directory"].strip("/")]
        elif isinstance(section.get("package"), str):  # towncrier's default: next to the package
            dirs = [f"{str(section.get('package_dir', '')).strip('/')}/{section['package']}/newsfragments".lstrip("/")]
        if isinstance(section.get("filename"), str):
            filename = section["filename"].strip("/")
        break
    return tuple(dict.fromkeys(dirs)), filename


def fragment_parts(path: str, dirs: tuple[str, ...] = FRAGMENT_DIRS) -> tuple[int | None, str] | None:
    """(number or None for an orphan, type) of a towncrier fragment path, or None."""
    pure = PurePosixPath(path)
    if str(pure.parent) not in dirs:
        return None
    match = FRAGMENT_NAME.match(pure.name)
    return (int(match[1]) if match[1] else None, match[2]) if match else None


def is_fragment(path: str, dirs: tuple[str, ...] = FRAGMENT_DIRS) -> bool:
    return fragment_parts(path, dirs) is not None


def is_reno_note(path: str) -> bool:
    return path.startswith(RENO_DIR + "/") and path.endswith((".yaml", ".yml"))


def parse_fragment(
    path: str, text: str, release: str | None, pr: int | None, commit: str | None = None
) -> ChangelogEntry | None:
    """A towncrier fragment: the file name gives the issue or PR number (either, as on GitHub) and
    the type; the commit that added it ties it to that commit's PR."""
    parts = fragment_parts(path) or fragment_parts(path, (str(PurePosixPath(path).parent),))
    if not parts or not text.strip():
        return None
    number, category = parts
    text = " ".join(text.split())
    prs, issues, bare = extract_refs(text).for_entry()
    return ChangelogEntry(
        text=text,
        release=release,
        category=category,
        source=f"{display(path)} (towncrier fragment)",
        prs=sorted(set(prs) | ({pr} if pr else set())),
        issues=issues,
        refs=sorted((set(bare) | ({number} if number else set())) - {pr}),
        commits=[commit] if commit else [],
    )


def parse_reno_note(
    path: str, text: str, release: str | None, pr: int | None, commit: str | None = None
) -> list[ChangelogEntry]:
    """A reno note: one entry per item of each section (`features`, `fixes`, `upgrade`...).
    Raises ValueError when the note is not a YAML mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        problem = str(getattr(e, "problem", None) or e).splitlines()[0]
        mark = getattr(e, "problem_mark", None)
        raise ValueError(f"not valid YAML ({problem}{f' at line {mark.line + 1}' if mark else ''})") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ValueError(f"a reno note is a mapping of sections, not a {type(data).__name__}")
    entries = []
    for section, value in data.items():
        for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if not isinstance(item, str) or not item.strip():
                continue
            item = " ".join(item.split())
            prs, issues, bare = extract_refs(item).for_entry()
            entries.append(
                ChangelogEntry(
                    text=item,
                    release=release,
                    category=str(section),
                    source=f"{display(path)} (reno)",
                    prs=sorted(set(prs) | ({pr} if pr else set())),
                    issues=issues,
                    refs=sorted(set(bare) - {pr}),
                    commits=[commit] if commit else [],
                )
            )
    return entries
