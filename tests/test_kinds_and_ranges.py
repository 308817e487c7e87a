"""The pure parts of planning real histories: work kinds and housekeeping, default ranges, and the
commit that wrote a changelog entry."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from harnessforge.errors import PlanningError
from harnessforge.examples.builder import RepoBuilder
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.mining.entry_commits import link_entry_commits
from harnessforge.mining.kinds import KindReader, strongest, without_prefix
from harnessforge.mining.pulls import attribute
from harnessforge.mining.ranges import plan_range
from harnessforge.models import ChangelogEntry
from harnessforge.rules import load_rules

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
KINDS = KindReader(load_rules().planning)

# Subjects seen in the trial repositories' histories (flask, structlog, httpx, pyparsing, humanize, ky...).
CHORES = [
    "Merge commit from fork",  # GitHub's merge of a security advisory's fix (send 1.2.0): no statement
    "[pre-commit.ci] pre-commit autoupdate (#5541)",
    "Bump the github-actions group with 3 updates (#5539)",
    "Bump actions/checkout from 4.1.4 to 4.1.6 in the github-actions group",
    "fix mypy findings",
    "fix pyright type errors (#5620)",
    "use ruff linter and formatter (#5331)",
    "update dev dependencies",
    "update min blinker version (#5633)",
    "drop support for Python 3.8 (#5623)",
    "release version 3.1.0",
    "start version 3.1.0",
    "update CHANGES.rst",
    "set up pre-commit lite workflow",
    "Bump the docs build OS to ubuntu-24.04",
    "Pin mypy to 1.11",
    "Blackening",
    "Prep for 3.2.1 work",
    "Update version timestamp, change version to 3.3.0a2",
    "Update license file reference",
    "Benchmark on CodSpeed",
    "1.2.1",
    "v2.0.0-beta.1",
    "docs: describe CSV imports",
    "chore(deps): bump pytest from 8.2 to 8.3",
    "Add missing type annotations",
]
WORK = [
    ("add SESSION_COOKIE_PARTITIONED config (#5499)", "feature"),
    ("enable secret key rotation (#5632)", "feature"),
    ("Add encoding parameter to open resource (#5526)", "feature"),
    ("Fix how host matching interacts with SERVER_NAME", "bug fix"),
    ("feat(cli): add --json", "feature"),
    ("fix: keep counts when a tally is merged twice", "bug fix"),
    ("refactor: split the reader into sources and parsers", "refactor"),
    ("Speed up _complex_sumprod", "performance"),
    ("Preallocate seen map capacity.", "performance"),  # lo: a speed-up in words that say none
    ("Avoid extra allocations in Chunk", "performance"),
    ("Formatter for money values", None),  # nothing says: a feature by default where it matters
    ("Add 1.5 support for the wire protocol", "feature"),
]


@pytest.mark.parametrize("subject", CHORES)
def test_chores_are_housekeeping(subject):
    assert KINDS.title(subject) == "housekeeping"


@pytest.mark.parametrize("subject, kind", WORK)
def test_work_titles_have_their_kind(subject, kind):
    assert KINDS.title(subject) == kind


def test_labels_and_prefixes_come_before_words():
    assert KINDS.title("Add a retry option", labels=["bug"]) == "bug fix"
    assert KINDS.title("Add a retry option", labels=["dependencies"]) == "housekeeping"
    assert KINDS.title("perf: add a cache") == "performance"
    assert KINDS.without_prefix("feat(cli)!: add --json") == "add --json"
    assert KINDS.without_prefix("[docs] Typos") == "Typos"
    # A component is no commit type: it stays, as the only words of the title that name anything.
    assert KINDS.without_prefix("DurationSlice: implementation and tests") == "DurationSlice: implementation and tests"
    assert without_prefix("router: add Allow", ["router"]) == "add Allow"
    # multer's gitmoji subjects: the picture is no word of the statement (and hid the `fix` that says the kind)
    assert KINDS.without_prefix("🔒️ fix orphaned files issue") == "fix orphaned files issue"
    assert KINDS.without_prefix(":bug: fix x") == "fix x" and KINDS.without_prefix("feat: ✨ add y") == "add y"
    assert KINDS.without_prefix("Fix 🐛 in the middle") == "Fix 🐛 in the middle"
    assert strongest(["refactor", "bug fix", "housekeeping"]) == "bug fix"
    assert strongest(["housekeeping"]) == "housekeeping" and strongest([]) is None


@pytest.mark.parametrize(
    "category, text, kind",
    [
        ("Changed", "Fix the renderer's width on Windows.", "bug fix"),  # an ambiguous section: the text decides
        ("Changed", "The renderer no longer warns.", "feature"),
        ("Trivial/Internal Changes", "Use ruff.", "housekeeping"),  # naming housekeeping at all
        ("Bug Fixes", "Add a guard against None.", "bug fix"),  # the section outranks the words
        (None, "Drop support for Python 3.8. :pr:`5623`", "housekeeping"),
        (None, "``Request.trusted_hosts`` is checked during routing.", "feature"),  # in the notes: a feature
    ],
)
def test_entry_kinds(category, text, kind):
    assert KINDS.entry(category, text) == kind


# ---- default ranges ------------------------------------------------------------------------------------


def _release_history(tmp_path, versions: list[str], commits_between: int) -> GitRepo:
    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"a.py": "x = 0\n"})
    for n, version in enumerate(versions):
        for k in range(commits_between):
            builder.commit(f"change {n}.{k}", {"a.py": f"x = {n * 100 + k + 1}\n"})
        builder.tag(version)
    return GitRepo(builder.path / ".git")


def test_default_range_reaches_back_over_feature_releases_to_the_minimum(tmp_path):
    repo = _release_history(tmp_path, ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "1.3.0"], commits_between=25)
    rng = plan_range(repo, repo.tags(), load_rules(), None, None)
    # 1.3.0 is the newest feature release; 1.2.0 is 25 commits back, 1.1.0 75 (1.1.1, a patch, is no stop)
    assert (rng.from_ref, rng.to_ref) == ("1.1.0", "1.3.0")
    assert "feature release range 1.1.0 → 1.3.0, 75 mainline commits" in rng.notes[0] and "at least 60" in rng.notes[0]


def test_default_range_follows_patch_releases_where_development_went_on_in_them(tmp_path):
    versions = ["1.0.0", *(f"1.0.{n}" for n in range(1, 9))]  # one feature release, then eight patches
    repo = _release_history(tmp_path, versions, commits_between=10)
    rng = plan_range(repo, repo.tags(), load_rules(), None, None)
    assert rng.to_ref == "1.0.8" and rng.from_ref == "1.0.2"  # 60 commits back over patch releases
    assert "the release range 1.0.2 → 1.0.8" in rng.notes[0]


def test_default_range_needs_two_releases(tmp_path):
    repo = _release_history(tmp_path, ["1.0.0"], commits_between=3)
    with pytest.raises(PlanningError, match="only one release"):
        plan_range(repo, repo.tags(), load_rules(), None, None)


# ---- the commit that wrote an entry ----------------------------------------------------------------------


def test_an_entry_is_tied_to_the_code_commit_that_wrote_its_line(tmp_path):
    builder = RepoBuilder(tmp_path / "repo", T0)
    builder.commit("init", {"pkg/a.py": "A = 1\n", "CHANGES.rst": "Version 1.1.0\n-------------\n\nUnreleased\n\n"})
    start = builder.git("rev-parse", "HEAD")
    feature = builder.commit(
        "add partitioned cookies",
        {
            "pkg/a.py": "A = 2\n",
            "CHANGES.rst": "Version 1.1.0\n-------------\n\nUnreleased\n\n"
            "-   Add support for partitioned cookies. :issue:`5472`\n",
        },
    )
    entries_text = "".join(f"-   Entry number {n} of the release notes. :issue:`{n}`\n" for n in range(7))
    builder.commit(
        "Release 1.1.0 with notes",
        {"pkg/a.py": "A = 3\n", "CHANGES.rst": (builder.path / "CHANGES.rst").read_text() + entries_text},
    )
    repo = GitRepo(builder.path / ".git")
    units = attribute(repo, repo.first_parent_log(start, repo.head()), start)
    source = "CHANGES.rst (restructuredtext)"
    entries = [
        ChangelogEntry(text="Add support for partitioned cookies. :issue:`5472`", release="1.1.0", source=source),
        *(
            ChangelogEntry(text=f"Entry number {n} of the release notes. :issue:`{n}`", release="1.1.0", source=source)
            for n in range(7)
        ),
    ]
    linked = link_entry_commits(repo, units, entries, FileClassifier(load_rules().planning), KINDS)
    assert linked[0].commits == [feature]  # the issue alone could not have tied it to this commit
    assert all(e.commits == [] for e in linked[1:])  # a commit writing seven entries is consolidating notes


def test_a_generated_changelogs_conventional_prefix_is_no_part_of_the_entry_as_the_dev_reads_it():
    """node-jsonwebtoken (fourteenth held-out set): release-please wrote "feat: add PS JWA support for applicable node
    versions", named as context with its prefix ("Feat: add PS JWA support ..."); a component before a colon stays."""
    from harnessforge.mining.features import entry_source
    from harnessforge.models.history import ChangelogEntry

    def said(text: str) -> str:
        entry = ChangelogEntry(text=text, release="8.5.0", source="CHANGELOG.md (markdown)", context="Old code:")
        return entry_source(entry, KINDS, context=False).text

    assert (
        said("feat: add PS JWA support for applicable node versions")
        == "Add PS JWA support for applicable node versions"
    )
    assert said("Sign: accept a `Buffer` secret") == "Sign: accept a `Buffer` secret"
    entry = ChangelogEntry(text="feat: add x", release="1.0", source="CHANGELOG.md (markdown)", context="Old code:")
    assert entry_source(entry, KINDS).text == "Add x\n\nOld code:" and entry_source(entry).text.startswith(
        "feat: add x"
    )


def test_go_golden_files_and_jest_snapshots_are_the_tests():
    """lipgloss (seventeenth held-out set): the `table/testdata/*.golden` files its hidden tests compare against went
    into the reference solution, so a Dev had to write byte-exact copies of output no test showed."""
    classify = FileClassifier(load_rules().planning)
    assert classify.is_test("table/testdata/TestWrapPreStyledContent.golden")
    assert classify.is_test("testdata/input.toml") and classify.is_test("src/__snapshots__/render.test.js.snap")
    assert not classify.is_test("table/resizing.go") and not classify.is_test("data/testdata.go")
