"""Changelogs read from whole repositories: towncrier fragments and reno notes tied to the commit
that added them, files that cannot be parsed, and GitHub release bodies for releases no file
describes (the text formats themselves: test_changelog_flavours.py)."""

from datetime import datetime, timezone

import pytest

from harnessforge.examples.builder import RepoBuilder
from harnessforge.github import GitHubClient
from harnessforge.gitio import GitRepo
from harnessforge.mining.changelog import read_changelog
from harnessforge.mining.changelog_fragments import is_fragment, parse_fragment, parse_reno_note
from harnessforge.mining.kinds import KindReader
from harnessforge.mining.pulls import attribute
from harnessforge.refs import strip_refs
from harnessforge.rules import load_rules
from tests.github_server import FakeGitHub

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
entry_kind = KindReader(load_rules().planning).entry  # the planner's reading of an entry's kind


# ---- fragments, notes and whole repositories --------------------------------------------------------
def _read(repo_path, start_tag, end_tag, release_texts=None):
    repo = GitRepo(repo_path / ".git")
    start, end = repo.rev(start_tag), repo.rev(end_tag)
    units = attribute(repo, repo.first_parent_log(start, end), start)
    mainline = repo.text("rev-list", "--first-parent", "--reverse", end).split()
    index = {sha: i for i, sha in enumerate(mainline)}
    tags = sorted((index[t.commit], t.name.lstrip("v")) for t in repo.tags() if t.commit in index)

    def release_of(sha):
        return next((v for i, v in tags if i >= index[sha]), None)

    warnings: list[str] = []
    entries, sources = read_changelog(repo, end, units, release_of, release_texts, warnings=warnings)
    return entries, sources, warnings, units


@pytest.fixture(scope="module")
def towncrier_repo(tmp_path_factory):
    """Fragments in every usual place, one landing apart from its code, one edited after it landed."""
    builder = RepoBuilder(tmp_path_factory.mktemp("towncrier") / "repo", T0)
    builder.commit("init", {"pkg/core.py": "A = 1\n", "pyproject.toml": '[tool.towncrier]\ndirectory = "changelog"\n'})
    builder.tag("v1.0.0")
    builder.merge_pr(
        40,
        "streaming",
        "Streaming responses",
        [("code", {"pkg/stream.py": "S = 1\n"}), ("news", {"changelog/31.feature.rst": "Streaming responses.\n"})],
    )
    builder.squash_pr(41, "Fix a leak", {"pkg/core.py": "A = 2\n", "changelog/41.bugfix.rst": "Fix a leak on close.\n"})
    code = builder.commit("Add retries (#35)", {"pkg/retry.py": "R = 1\n"})
    news = builder.commit(
        "Add the changelog entry for retries", {"changelog/35.feature.1.rst": "Retries with backoff.\n"}
    )
    builder.commit("orphan", {"changelog/+tidy.misc.rst": "Tidy internals.\n"})
    # reworded before the release removed them: the newest wording is the one rendered
    builder.commit(
        "reword",
        {
            "changelog/41.bugfix.rst": "Fix a file handle leak on close.\n",
            "changelog/+tidy.misc.rst": "Tidy the internals.\n",
        },
    )
    builder.commit(
        "not a fragment", {"changelog/README.rst": "How to write fragments.\n", "changelog/_template.rst": "x\n"}
    )
    builder.commit(
        "Release 1.1.0",
        {
            "changelog/31.feature.rst": None,
            "changelog/41.bugfix.rst": None,
            "changelog/35.feature.1.rst": None,
            "changelog/+tidy.misc.rst": None,
            "CHANGELOG.rst": "pkg 1.1.0 (2026-02-01)\n======================\n\nFeatures\n--------\n\n"
            "- `#31 <https://github.com/acme/pkg/issues/31>`_: Streaming responses.\n"
            "- `#35 <https://github.com/acme/pkg/issues/35>`_: Retries with exponential backoff.\n\n"
            "Bug Fixes\n---------\n\n"
            "- `#41 <https://github.com/acme/pkg/issues/41>`_: Fix a file handle leak on close.\n\n"
            "Trivial/Internal Changes\n------------------------\n\n- Tidy the internals.\n",
        },
    )
    builder.tag("v1.1.0")
    builder.commit("next", {"newsfragments/50.feature.md": "Not in the configured directory.\n"})
    builder.commit("next", {"changelog/51.feature.md": "Unreleased work.\n"})
    builder.tag("v1.2.0.dev0")
    return builder, code, news


def test_towncrier_fragments_tie_to_the_commit_that_added_them(towncrier_repo):
    builder, code, news = towncrier_repo
    entries, sources, warnings, units = _read(builder.path, "v1.0.0", "v1.1.0")
    assert sources == ["CHANGELOG.rst", "towncrier fragments"] and warnings == []
    by_text = {strip_refs(entry.text): entry for entry in entries}
    assert set(by_text) == {
        "Streaming responses.",
        "Retries with exponential backoff.",  # reworded when rendered: matched by its number
        "Fix a file handle leak on close.",
        "Tidy the internals.",
    }  # each fragment merged with its rendered line: one entry per change, README and template left alone
    merge = next(u for u in units if u.pr == 40)
    streaming = by_text["Streaming responses."]
    assert (streaming.prs, streaming.refs, streaming.commits) == ([40], [31], [merge.sha])
    assert streaming.release == "1.1.0" and streaming.category == "feature" and "fragment" in streaming.source
    retries = by_text["Retries with exponential backoff."]
    assert retries.commits == [news] and retries.refs == [35] and retries.prs == []  # code landed in `code`
    assert code not in retries.commits and retries.source == "changelog/35.feature.1.rst (towncrier fragment)"
    leak = by_text["Fix a file handle leak on close."]  # the edit made no second entry
    assert leak.prs == [41] and leak.category == "bugfix" and len(leak.commits) == 1
    assert by_text["Tidy the internals."].refs == [] and by_text["Tidy the internals."].category == "misc"


def test_towncrier_fragments_not_yet_released(towncrier_repo):
    builder, _, _ = towncrier_repo
    entries, _, _, _ = _read(builder.path, "v1.1.0", "v1.2.0.dev0")
    assert [(entry.text, entry.refs) for entry in entries if "fragment" in entry.source] == [("Unreleased work.", [51])]


def test_fragment_names():
    assert [is_fragment(p) for p in ("changelog.d/1.bugfix.md", "newsfragments/2.feature", "changes/3.doc.rst")] == [
        True,
        True,
        True,
    ]
    assert not is_fragment("src/changes/4.feature.md") and not is_fragment("changelog.d/template.md")
    assert parse_fragment("changelog.d/123.feature.1.md", "New *thing*.\n", "2.0", None).refs == [123]
    orphan = parse_fragment("newsfragments/+abc.misc.md", "Chore.\n", None, 7, "c0ffee")
    assert (orphan.refs, orphan.prs, orphan.category, orphan.commits) == ([], [7], "misc", ["c0ffee"])
    assert parse_fragment("changes/4.2.txt", "Not a fragment\n", None, None) is None
    assert parse_fragment("changes/77.removal", "  \n", None, None) is None  # an empty fragment is no entry


RENO_FEATURE = """---
prelude: >
    This release brings async predicates.
features:
  - |
    Added the ability to use async functions for retries
    (see PR #512).
  - Add ``retry_if_exception_cause_type``.
fixes:
  - "Respect the `min` argument of `wait_random_exponential`"
upgrade:
  - The minimum delay is now respected.
"""


def test_reno_note_sections_become_entries():
    entries = parse_reno_note("releasenotes/notes/async-b249c527d99723bb.yaml", RENO_FEATURE, "9.0.0", 600, "abc")
    assert [(entry.category, entry.release, entry.prs) for entry in entries] == [
        ("prelude", "9.0.0", [600]),
        ("features", "9.0.0", [512, 600]),
        ("features", "9.0.0", [600]),
        ("fixes", "9.0.0", [600]),
        ("upgrade", "9.0.0", [600]),
    ]
    assert entries[1].text == "Added the ability to use async functions for retries (see PR #512)."
    assert all(entry.commits == ["abc"] for entry in entries)
    with pytest.raises(ValueError, match="not valid YAML"):
        parse_reno_note("releasenotes/notes/bad.yaml", "features:\n  - [unclosed\n", None, None)
    with pytest.raises(ValueError, match="mapping of sections"):
        parse_reno_note("releasenotes/notes/list.yaml", "- just a list\n", None, None)
    assert parse_reno_note("releasenotes/notes/empty.yaml", "---\n", None, None) == []


def test_reno_notes_in_a_repository_with_a_broken_note(tmp_path):
    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"tenac/core.py": "A = 1\n", "releasenotes/notes/old-1111.yaml": "features:\n  - Old.\n"})
    builder.tag("8.0.0")
    feature = builder.squash_pr(
        425,
        "Async actions",
        {"tenac/aio.py": "B = 1\n", "releasenotes/notes/add-async-actions-b249c527d99723bb.yaml": RENO_FEATURE},
    )
    builder.squash_pr(430, "Typo", {"releasenotes/notes/old-1111.yaml": "features:\n  - Older.\n"})  # an edit, not new
    builder.tag("8.1.0")
    builder.commit("Broken note", {"releasenotes/notes/broken-2222.yaml": "fixes:\n  - 'unclosed\n"})
    fix = builder.squash_pr(431, "Fix wait", {"releasenotes/notes/fix-wait-3333.yaml": "fixes:\n  - Fix the wait.\n"})
    builder.tag("8.2.0")
    entries, sources, warnings, _ = _read(builder.path, "8.0.0", "8.2.0")
    assert sources == ["reno release notes"]
    assert [(entry.release, entry.category, entry.prs) for entry in entries] == [
        ("8.1.0", "prelude", [425]),
        ("8.1.0", "features", [425, 512]),
        ("8.1.0", "features", [425]),
        ("8.1.0", "fixes", [425]),
        ("8.1.0", "upgrade", [425]),
        ("8.2.0", "fixes", [431]),
    ]
    assert entries[0].commits == [feature] and entries[-1].commits == [fix]
    [warning] = warnings
    assert "releasenotes/notes/broken-2222.yaml" in warning and "not valid YAML" in warning


def test_unparsable_changelogs_give_a_warning_and_the_rest_goes_on(tmp_path):
    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"a.py": "1\n"})
    builder.tag("v1.0")
    builder.squash_pr(
        3,
        "Add b",
        {
            "b.py": "1\n",
            "CHANGES.rst": b"Version 1.1\n-----------\n\n- Caf\xe9 support. :pr:`3`\n",  # Latin-1, not UTF-8
            "HISTORY.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary",
            "changelog.d/3.feature.md": b"\xff\xfe\x00\x00",
        },
    )
    builder.tag("v1.1")
    entries, sources, warnings, _ = _read(builder.path, "v1.0", "v1.1")
    assert sources == ["CHANGES.rst"] and [(entry.release, entry.prs) for entry in entries] == [("1.1", [3])]
    assert "Caf\ufffd support" in entries[0].text
    assert len(warnings) == 3
    assert "CHANGES.rst is not valid UTF-8" in warnings[0] and "replaced" in warnings[0]
    assert "HISTORY.md cannot be parsed: binary" in warnings[1]
    assert "changelog.d/3.feature.md cannot be parsed: binary" in warnings[2]


# ---- GitHub release bodies --------------------------------------------------------------------------
RELEASE_DRAFTER = """## Added

- Add Python 3.14 support (#250) @someone
- Support `intword()` for googol-sized numbers (#252) @other

## Fixed

* Fix `naturalsize()` rounding at unit boundaries (#258) @someone
"""

GENERATED_NOTES = """## What's Changed
* Lazy imports for faster start-up by @someone in https://github.com/acme/humane/pull/335
* Fix typo in docs by @other in https://github.com/acme/humane/pull/325

## New Contributors
* @other made their first contribution in https://github.com/acme/humane/pull/325

**Full Changelog**: https://github.com/acme/humane/compare/4.15.0...4.16.0
"""


def test_github_release_bodies_through_pygithub_and_the_markdown_parser(tmp_path):
    with FakeGitHub() as gh:
        gh.add_release("acme/humane", "4.15.0", RELEASE_DRAFTER)
        gh.add_release("acme/humane", "4.16.0", GENERATED_NOTES)
        gh.add_release("acme/humane", "4.17.0", "## Added\n- Not published yet\n", draft=True)
        client = GitHubClient("t", base_url=gh.url, cache_dir=tmp_path / "cache", retries=0, throttle=None)
        texts = client.releases("acme/humane")
        sent = len(gh.requests)
        assert client.releases("acme/humane") == texts and len(gh.requests) == sent  # cached
    assert [tag for tag, _ in texts] == ["4.16.0", "4.15.0"]  # newest first, no draft

    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"humane/__init__.py": "1\n"})
    builder.tag("4.14.0")
    builder.squash_pr(250, "Add Python 3.14 support", {"humane/a.py": "1\n"})
    builder.tag("4.15.0")
    builder.squash_pr(335, "Lazy imports", {"humane/b.py": "1\n"})
    builder.tag("4.16.0")
    entries, sources, warnings, _ = _read(builder.path, "4.14.0", "4.16.0", texts)
    assert sources == ["GitHub releases"] and warnings == []
    assert [(entry.release, entry.category, entry.prs, entry.refs) for entry in entries] == [
        ("4.16.0", "What's Changed", [335], []),
        ("4.16.0", "What's Changed", [325], []),
        ("4.15.0", "Added", [], [250]),
        ("4.15.0", "Added", [], [252]),
        ("4.15.0", "Fixed", [], [258]),
    ]  # "New Contributors" and "Full Changelog" are not entries
    assert entries[0].source == "GitHub release 4.16.0"
    assert [entry_kind(entry.category, entry.text) for entry in entries] == [
        "performance",
        "housekeeping",
        "housekeeping",
        "feature",
        "bug fix",
    ]


def test_release_bodies_fill_only_releases_no_file_describes(tmp_path):
    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"a.py": "1\n"})
    builder.tag("v1.0.0")
    builder.squash_pr(5, "Streams", {"b.py": "1\n", "CHANGELOG.md": "## 1.1.0\n- Streams (#5)\n"})
    builder.tag("v1.1.0")
    texts = [("v1.1.0", "## Added\n- Streams (#5)\n- Said differently (#5)\n"), ("v1.0.0", "* First release (#1)\n")]
    entries, sources, _, _ = _read(builder.path, "v1.0.0", "v1.1.0", texts)
    assert sources == ["CHANGELOG.md", "GitHub releases"]
    assert [(entry.release, entry.text) for entry in entries] == [
        ("1.1.0", "Streams (#5)"),
        ("1.0.0", "First release (#1)"),
    ]
