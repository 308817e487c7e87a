"""Releases, changelog formats and PR attribution on small purpose-built repositories."""

from datetime import datetime, timezone

import pytest

from harnessforge.examples.builder import RepoBuilder
from harnessforge.gitio import GitRepo
from harnessforge.mining.changelog_text import ChangelogFile, find_changelog_files, parse_changelog
from harnessforge.mining.planner import plan
from harnessforge.mining.pulls import attribute
from harnessforge.mining.releases import find_releases, parse_version
from harnessforge.refs import extract_refs, linked_issues

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "tag, version",
    [
        ("v1.2.3", "1.2.3"),
        ("1.2", "1.2"),
        ("release-2.0.1", "2.0.1"),
        ("mypkg@3.1.0", "3.1.0"),
        ("2024.01.15", "2024.1.15"),
        ("v0.3.0rc1", "0.3.0rc1"),
        ("V2.0", "2.0"),
        ("release/4.1", "4.1"),
        ("sub/v1.2.0", None),
        ("latest", None),
        ("nightly-build", None),
    ],
)
def test_parse_version(tag, version):
    v = parse_version(tag)
    assert (str(v) if v else None) == version


def _repo(tmp_path) -> RepoBuilder:
    return RepoBuilder(tmp_path / "repo", T0)


def test_backport_and_side_branch_tags(tmp_path):
    builder = _repo(tmp_path)
    builder.commit("init", {"a.py": "x = 1\n"})
    builder.tag("v1.0.0")
    builder.git("checkout", "-q", "-b", "maint-1.0")
    builder.commit("backport fix", {"a.py": "x = 2\n"})
    builder.tag("v1.0.1")  # lives only on the maintenance branch, never merged: not in HEAD's history
    builder.git("checkout", "-q", "main")
    builder.commit("feature", {"b.py": "y = 1\n"})
    builder.tag("v1.1.0")
    builder.git("checkout", "-q", "-b", "rel")
    side = builder.commit("release prep on a branch", {"c.py": "z = 1\n"})
    builder.tag("v1.2.0")  # on a branch that is merged back: maps to the merge commit
    builder.git("checkout", "-q", "main")
    builder.git("merge", "-q", "--no-ff", "rel", "-m", "Merge branch 'rel'")
    merge = builder.git("rev-parse", "HEAD")
    builder.commit("more", {"d.py": "w = 1\n"})
    builder.tag("v1.1.1")  # a later patch tag with a lower version: history order disagrees
    repo = GitRepo(builder.path / ".git")
    mainline = repo.text("rev-list", "--first-parent", "--reverse", "HEAD").split()
    releases, warnings = find_releases(repo, repo.tags(), mainline)
    assert [r.tag for r in releases] == ["v1.0.0", "v1.1.0", "v1.2.0"]
    v120 = releases[-1]
    assert v120.commit == side and v120.mainline_commit == merge
    assert not any(r.maintenance for r in releases)
    assert not any("v1.0.1" in w for w in warnings)  # never merged into HEAD: simply outside every range of it
    assert any("v1.1.1" in w and "backport" in w for w in warnings)


KEEP_A_CHANGELOG = """# Changelog

## [Unreleased]
- Upcoming thing (#40)

## [2.1.0] - 2026-02-01
### Added
- Streaming responses, see https://github.com/acme/lib/pull/31 and
  issue #30 for the motivation.
  - nested detail stays with its parent
### Fixed
- Crash on empty input (GH-33)

## 2.0.0 (2026-01-01)
* Initial rewrite.
"""

RST = """Changes
=======

Version 3.2.0
-------------

Released 2026-03-01

-   Add ``async`` support. :issue:`101` :pr:`102`
-   Fix a leak. {issue}`103`

Version 3.1.0
-------------

-   Older work. :pr:`90`
"""

DJANGO = """===========================
Django 4.2 release notes
===========================

What's new in Django 4.2
========================

Psycopg 3 support
-----------------

Django now supports psycopg version 3.1.8 or higher.

Comments on columns
-------------------

Tables and columns can carry comments.
"""


def test_keep_a_changelog_markdown():
    entries = parse_changelog(ChangelogFile("CHANGELOG.md", KEEP_A_CHANGELOG), "markdown")
    assert [(e.release, e.category) for e in entries] == [
        (None, None),
        ("2.1.0", "Added"),
        ("2.1.0", "Fixed"),
        ("2.0.0", None),
    ]
    streaming = entries[1]
    assert streaming.prs == [31] and streaming.refs == [30] and "nested detail" in streaming.text
    assert entries[2].refs == [33]


def test_restructuredtext_sections_and_roles():
    entries = parse_changelog(ChangelogFile("CHANGES.rst", RST), "restructuredtext")
    assert [e.release for e in entries] == ["3.2.0", "3.2.0", "3.1.0"]  # "Released ..." prose is not an entry
    assert (entries[0].issues, entries[0].prs) == ([101], [102])
    assert entries[1].issues == [103] and entries[2].prs == [90]


def test_per_release_notes_use_paragraphs():
    entries = parse_changelog(ChangelogFile("docs/releases/4.2.txt", DJANGO, release="4.2"), "restructuredtext")
    texts = [e.text for e in entries]
    assert texts == ["Django now supports psycopg version 3.1.8 or higher.", "Tables and columns can carry comments."]
    assert {e.release for e in entries} == {"4.2"}
    assert {e.category for e in entries} == {"Psycopg 3 support", "Comments on columns"}


def test_finding_changelog_files():
    singles, per_release = find_changelog_files(
        [
            "CHANGES.rst",
            "docs/changelog.md",
            "src/news.py",
            "docs/releases/4.2.txt",
            "docs/releases/index.txt",
            "docs/whatsnew/v1.3.0.md",
            "HISTORY.md",
        ]
    )
    assert singles == ["CHANGES.rst", "HISTORY.md", "docs/changelog.md"]
    assert per_release == ["docs/releases/4.2.txt", "docs/whatsnew/v1.3.0.md"]


def test_reference_spellings():
    refs = extract_refs("Fix (#12), GH-13, :issue:`14`, {pr}`15`, https://github.com/a/b/issues/16, &#17; #x")
    assert (refs.prs, refs.issues, refs.bare) == ({15}, {14, 16}, {12, 13})
    assert refs.resolve(known_prs={12}) == ([12, 15], [13, 14, 16])
    assert linked_issues("Closes #3, fixes: #4; part of acme/lib#5; see GH-6; mentions #7") == {3, 4, 5, 6}


def test_pr_attribution_styles_and_interleaved_branches(tmp_path):
    builder = _repo(tmp_path)
    start = builder.commit("init", {"a.py": "1\n"})
    # two branches developed at the same time; their commits interleave in time
    builder.git("checkout", "-q", "-b", "feat-a")
    a1 = builder.commit("A part 1\n\nFixes #100", {"a.py": "2\n"})
    builder.git("checkout", "-q", "main")
    builder.git("checkout", "-q", "-b", "feat-b")
    b1 = builder.commit("B part 1", {"b.py": "1\n"})
    builder.git("checkout", "-q", "feat-a")
    a2 = builder.commit("A part 2", {"a.py": "3\n"})
    builder.git("checkout", "-q", "feat-b")
    b2 = builder.commit("B part 2", {"b.py": "2\n"})
    builder.git("checkout", "-q", "main")
    builder.git("merge", "-q", "--no-ff", "feat-a", "-m", "Merge pull request #7 from x/feat-a\n\nFeature A")
    builder.git("merge", "-q", "--no-ff", "feat-b", "-m", "Merge #8\n\nFeature B via bors")
    builder.squash_pr(9, "Squashed change", {"c.py": "1\n"}, body="Part of #100")
    builder.git("checkout", "-q", "-b", "mr")
    builder.commit("mr work", {"d.py": "1\n"})
    builder.git("checkout", "-q", "main")
    builder.git(
        "merge",
        "-q",
        "--no-ff",
        "mr",
        "-m",
        "Merge branch 'mr' into 'main'\n\nGitLab title\n\nSee merge request grp/proj!11",
    )
    builder.commit("Direct fix", {"a.py": "4\n"})
    repo = GitRepo(builder.path / ".git")
    units = attribute(repo, repo.first_parent_log(start, "HEAD"), start)
    got = [(u.pr, u.kind, u.title) for u in units]
    assert got == [
        (7, "merge", "Feature A"),
        (8, "merge", "Feature B via bors"),
        (9, "squash", "Squashed change"),
        (11, "merge", "Merge branch 'mr' into 'main'"),
        (None, "direct", "Direct fix"),
    ]
    assert units[0].side_commits == [a1, a2] and units[1].side_commits == [b1, b2]
    assert units[0].issues == {100} and units[2].issues == {100}
    assert units[0].to_pull().commits == [a1, a2]


def test_a_merge_without_its_prs_title_is_named_by_the_prs_first_commit(tmp_path):
    """prettytable 3.10: `Merge pull request #299 from av-guy/bugfix-colortable-290` with no body; the task's whole
    statement read "Merge from av-guy/bugfix-colortable-290". The branch's first commit says the work (a merge of
    the mainline into the branch says nothing); nor does a merge whose body is only its trailer."""
    builder = _repo(tmp_path)
    start = builder.commit("init", {"a.py": "1\n"})
    builder.git("checkout", "-q", "-b", "fix")
    builder.git("checkout", "-q", "main")
    builder.commit("Unrelated", {"b.py": "1\n"})
    builder.git("checkout", "-q", "fix")
    builder.git("merge", "-q", "--no-ff", "main", "-m", "Merge branch 'main' into fix")
    builder.commit("Fix ColorTable title width with ANSI junctions", {"a.py": "2\n"})
    builder.commit("Add a test", {"t.py": "1\n"})
    builder.git("checkout", "-q", "main")
    builder.git("merge", "-q", "--no-ff", "fix", "-m", "Merge pull request #299 from av-guy/bugfix-colortable-290")
    repo = GitRepo(builder.path / ".git")
    units = attribute(repo, repo.first_parent_log(start, "HEAD"), start)
    assert [(unit.pr, unit.kind, unit.title) for unit in units][-1] == (
        299,
        "merge",
        "Fix ColorTable title width with ANSI junctions",
    )
    builder.git("checkout", "-q", "-b", "any")
    builder.commit("Add all/any for evaluating multiple conditions", {"c.py": "1\n"})
    builder.git("checkout", "-q", "main")
    message = "Merge pull request #268 from phuslu/master\n\nSigned-off-by: Matt Farina <matt@mattfarina.com>"
    builder.git("merge", "-q", "--no-ff", "any", "-m", message)  # sprig's: a trailer is no title (eleventh set)
    units = attribute(repo, repo.first_parent_log(start, "HEAD"), start)
    assert (units[-1].pr, units[-1].title, units[-1].body) == (
        268,
        "Add all/any for evaluating multiple conditions",
        "",
    )
    builder.git("checkout", "-q", "-b", "malawi")
    builder.commit("add lruCache cache", {"d.py": "1\n"})
    builder.git("checkout", "-q", "main")
    message = "Merge pull request #306 from olekukonko/malawi\n\nMalawi"  # tablewriter: the PR titled by its branch
    builder.git("merge", "-q", "--no-ff", "malawi", "-m", message)
    units = attribute(repo, repo.first_parent_log(start, "HEAD"), start)
    assert (units[-1].pr, units[-1].title) == (306, "add lruCache cache")
    builder.git("checkout", "-q", "-b", "dev")
    builder.commit("Preserve unsupported year tokens in format", {"e.py": "1\n"})
    builder.git("checkout", "-q", "main")
    message = "Merge pull request #2990 from iamkun/dev\n\nD2M"  # dayjs' release train (nineteenth set)
    builder.git("merge", "-q", "--no-ff", "dev", "-m", message)
    units = attribute(repo, repo.first_parent_log(start, "HEAD"), start)
    assert (units[-1].pr, units[-1].title) == (2990, "Preserve unsupported year tokens in format")


def test_towncrier_fragments_are_tied_to_their_prs(tmp_path, store, rules):
    builder = _repo(tmp_path)
    builder.commit("init", {"pkg/core.py": "A = 1\n", "tests/test_core.py": "def test_a():\n    assert True\n"})
    builder.tag("v1.0.0")
    big = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40))
    builder.squash_pr(
        21,
        "Add helpers",
        {
            "pkg/helpers.py": big,
            "pkg/core.py": "A = 2\n",
            "pkg/__init__.py": "from .helpers import *\n",
            "tests/test_helpers.py": "from pkg.helpers import f1\n\n\ndef test_f1():\n    assert f1(1) == 2\n",
            "changelog.d/20.feature.md": "Helper functions for everyday arithmetic.\n",
        },
    )
    builder.squash_pr(22, "Bump CI image", {".github/workflows/ci.yml": "on: push\n"})
    builder.commit(
        "Release 1.1.0",
        {
            "changelog.d/20.feature.md": None,
            "CHANGES.md": "## 1.1.0\n- Helper functions for everyday arithmetic. (#20)\n",
        },
    )
    builder.tag("v1.1.0")
    result = plan(store, str(builder.path), rules)
    [m] = result.plan.milestones
    assert m.source_prs == [21, 22] and 20 in m.issues
    assert "towncrier fragments" in result.plan.changelog_sources
    assert "Helper functions for everyday arithmetic" in m.description
    fragment = next(e for e in result.plan.changelog if "fragment" in e.source)
    assert fragment.prs == [21] and fragment.issues == [20] and fragment.category == "feature"
    assert m.acceptance_tests == ["tests/test_helpers.py::test_f1"]
