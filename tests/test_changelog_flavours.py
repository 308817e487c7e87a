"""Every changelog text flavour in the wild becomes ChangelogEntry objects with the right release,
category and PR/issue references. Samples are written in the style of real projects' files
(Keep a Changelog, pallets' CHANGES.rst, towncrier's rendered output...); fragments, reno notes and
GitHub release bodies read from repositories: test_changelog_repositories.py."""

import pytest

from harnessforge.mining.changelog_text import ChangelogFile, find_changelog_files, parse_changelog
from harnessforge.mining.kinds import KindReader
from harnessforge.mining.markup import render
from harnessforge.refs import Refs, extract_refs, strip_refs
from harnessforge.rules import load_rules

entry_kind = KindReader(load_rules().planning).entry  # the planner's reading of an entry's kind


def _parse(path: str, text: str, fmt: str = "markdown", release: str | None = None):
    return parse_changelog(ChangelogFile(path, text, release=release), fmt)


def _by_release(entries):
    out: dict = {}
    for entry in entries:
        out.setdefault(entry.release, []).append(entry)
    return out


# ---- Markdown ----------------------------------------------------------------------------------
KEEP_A_CHANGELOG = """# Changelog

All notable changes are documented here; see [the policy](https://github.com/acme/lumber/blob/main/SECURITY.md).

<!-- changelog follows -->


## [Unreleased](https://github.com/acme/lumber/compare/4.2.0...HEAD)

### Added

- Colourless output for dumb terminals.
  [#120](https://github.com/acme/lumber/pull/120)


## [4.2.0](https://github.com/acme/lumber/compare/4.1.0...4.2.0) - 2026-03-02

### Removed

- Python 3.9 support.


### Added

- `lumber.FileSink` now has a `name` attribute.
  [#101](https://github.com/acme/lumber/pull/101)

- `lumber.Renderer()` can swap its formatter at run time:

  ```python
  # this comment is code, not a heading
  r = lumber.Renderer.get_active()
  ```

  Same goes for *colors* and *sort_keys*.

  [#97](https://github.com/acme/lumber/pull/97)
  [#98](https://github.com/acme/lumber/pull/98)


### Fixed

- Sinks hold *weak* references to their files.
  [#88](https://github.com/acme/lumber/issues/88)
  [#91](https://github.com/acme/lumber/pull/91)


## [4.1.0](https://github.com/acme/lumber/compare/4.0.0...4.1.0) - 2025-12-01

### Changed

- The renderer no longer warns about pre-rendered exceptions. Fixes a crash on Windows.
"""


def test_keep_a_changelog_with_compare_links_and_code_blocks():
    entries = _parse("CHANGELOG.md", KEEP_A_CHANGELOG)
    releases = _by_release(entries)
    assert [len(releases[r]) for r in (None, "4.2.0", "4.1.0")] == [1, 4, 1]  # compare URLs name no release
    assert [(entry.category, entry.prs) for entry in releases["4.2.0"]] == [
        ("Removed", []),
        ("Added", [101]),
        ("Added", [97, 98]),
        ("Fixed", [91]),
    ]
    swap = releases["4.2.0"][2]
    # the example is the entry's own: it stays with it, as code (never a heading of its own)
    assert "Same goes for *colors*" in swap.text and "```python\n# this comment is code" in swap.text
    assert "```python\n# this comment is code, not a heading\nr = lumber" in render(swap.text, "markdown").text
    fixed = releases["4.2.0"][3]
    assert fixed.refs == [88] and fixed.issues == []  # an /issues/ URL: a PR if history has one, else an issue
    assert releases[None][0].prs == [120]
    assert releases["4.1.0"][0].category == "Changed"


FREE_FORM = """# Changelog

## [UNRELEASED]

### Added

* Expose `TokenAuth` from the public API. (#3699)

## 0.9.0 (28th November, 2025)

Be aware that request bodies *now use a compact representation*. This may need test updates.

**Deprecations**:

We are simplifying the TLS configuration API.

* The `verify` string argument is now deprecated.

**The following changes are also included**:

* Review URL escape sets, based on the WHATWG spec. (#3371, #3373)
* Treat `socks5h` as a valid proxy scheme. gh-3178
* Retry on `ECONNRESET` (GH-3180, PR #3181).
1. Numbered entries count too #3190

## 0.8.2 (27th August, 2025)

* Fix SSL when `verify=False` is used with client certificates.
"""


def test_free_form_markdown_with_bold_labels_and_every_reference_spelling():
    releases = _by_release(_parse("CHANGELOG.md", FREE_FORM))
    assert [entry.prs for entry in releases[None]] == [[]] and releases[None][0].refs == [3699]
    v09 = releases["0.9.0"]
    assert [entry.category for entry in v09] == ["Deprecations"] + ["The following changes are also included"] * 4
    assert not any(
        "compact representation" in entry.text or "simplifying" in entry.text for entry in v09
    )  # release prose
    assert [(entry.prs, entry.refs) for entry in v09[1:]] == [
        ([], [3371, 3373]),
        ([], [3178]),
        ([3181], [3180]),
        ([], [3190]),
    ]
    assert [entry.text for entry in releases["0.8.2"]] == [
        "Fix SSL when `verify=False` is used with client certificates."
    ]


# ---- reStructuredText and plain text ---------------------------------------------------------------
PALLETS = """Version 4.1.0
-------------

Unreleased

-   Drop support for Python 3.9. :pr:`5730`
-   ``RequestContext`` has merged with ``AppContext``. It is now
    a deprecated alias. :issue:`5639`


Version 4.0.1
-------------

Released 2026-02-18

-   Sessions are marked as accessed for ``in`` and ``len``. :ghsa:`68rp-wp8r-4726`


Version 4.0.0
-------------

Released 2025-11-13

-   Update minimum dependency versions. :pr:`5624,5633`
-   Provide a configuration option to control automatic option
    responses. :pr:`5496`
-   Remove previously deprecated code. :pr:`4995`

    -   The ``push`` and ``pop`` methods are removed.
    -   Calling setup methods after registration is an error. :pr:`4997`

-   Add support for the ``Partitioned`` cookie attribute. :issue:`5472`
    Written with :user:`someone`.
"""


def test_pallets_rst_with_roles_unreleased_and_nested_details():
    releases = _by_release(_parse("CHANGES.rst", PALLETS, "restructuredtext"))
    assert [entry.prs for entry in releases[None]] == [[5730], []] and releases[None][1].issues == [5639]
    [advisory] = releases["4.0.1"]  # "Released ..." is not an entry; an advisory is no GitHub number
    assert (advisory.prs, advisory.issues, advisory.refs) == ([], [], [])
    v4 = releases["4.0.0"]
    assert [entry.prs for entry in v4] == [[5624, 5633], [5496], [4995, 4997], []]
    assert "push" in v4[2].text and "after registration" in v4[2].text  # details stay with their entry
    assert v4[3].issues == [5472] and v4[3].category is None


VERSIONS_RST = """===============
Version History
===============

.. automodule:: widgets
   :noindex:

Unreleased
----------

* Changes to existing functions:
    * :func:`spread` accepts negative *start* (thanks to someone)

3.1.0
-----

* New functions
    * :func:`interleave_evenly`: interleaves iterables by their
      lengths (thanks to alice)
    * :func:`sized`: wraps an iterable with a known length

* Changes to existing functions
    * A bug in :func:`chunked`'s handling of zero was fixed (thanks to bob)

* Other changes
    * The docstrings for several functions were improved

3.0.2
-----

* Updates
    * This release restores :func:`pairwise`, which was mistakenly removed
      in 3.0.0.
"""


def test_rst_versions_with_label_bullets_grouping_nested_entries():
    releases = _by_release(_parse("docs/versions.rst", VERSIONS_RST, "restructuredtext"))
    assert [entry.category for entry in releases[None]] == ["Changes to existing functions"]
    v31 = releases["3.1.0"]
    assert [(entry.category, entry.text.split()[0]) for entry in v31] == [
        ("New functions", ":func:`interleave_evenly`:"),
        ("New functions", ":func:`sized`:"),
        ("Changes to existing functions", "A"),
        ("Other changes", "The"),
    ]
    assert v31[0].text.endswith("lengths (thanks to alice)")
    assert [entry_kind(entry.category, entry.text) for entry in v31] == [
        "feature",
        "feature",
        "bug fix",
        "housekeeping",
    ]
    assert len(releases["3.0.2"]) == 1 and "mistakenly removed in 3.0.0." in " ".join(releases["3.0.2"][0].text.split())


PLAIN_CHANGES = """==========
Change Log
==========

RELEASE PLANNING NOTES:

Legacy names go away in 4.0, later in 2027.

Required Python versions by version
-----------------------------------

+--------------------+-----------------+
| 3.3.0 and later    | 3.9 or later    |
+--------------------+-----------------+


Version 3.4.1 - in development
------------------------------
- Added support for Python 3.15.


Version 3.4.0 - December, 2025
------------------------------
===========================================================================
 The 3.4.0 release emits `DeprecationWarnings` for legacy names. A tool in
 the package converts them.
===========================================================================

- Fixed `Dict` returning an empty nested result as `[]`. Incorporates a partial
  solution submitted in PR #635 by someone.

  Additional fixes found along the way:

  - Removed an unused attribute.

- Fixed `QuotedString` stripping whitespace of a multi-character quote.
  Reported in issue #492.

- Added performance benchmarking tools:
  - `run_perf.sh` runs the benchmark across versions.
  - See the README for usage.

- POSSIBLE BREAKING CHANGES

    The following bugfixes may change results.

    - Fixed bug where an `IndexError` in a parse action was reraised as a
      `ParseException`. (Issue #573, reported by someone)

    - Fixed `transform_string()` losing whitespace.
"""


def test_plain_text_changes_with_banners_tables_and_label_bullets():
    releases = _by_release(_parse("CHANGES", PLAIN_CHANGES, "text"))
    assert set(releases) == {None, "3.4.0"}  # "in development" is unreleased; the table is no release
    assert [entry.text for entry in releases[None]] == ["Added support for Python 3.15."]
    v34 = releases["3.4.0"]
    assert len(v34) == 5 and not any("DeprecationWarnings" in entry.text for entry in v34)
    assert v34[0].prs == [635] and "unused attribute" in v34[0].text
    assert v34[1].refs == [492]
    assert "See the README" in v34[2].text  # "Added X:" is an entry with details, not a label
    assert [entry.category for entry in v34[3:5]] == ["POSSIBLE BREAKING CHANGES"] * 2 and v34[3].refs == [573]
    assert "may change results" not in v34[3].text


def test_myst_roles_and_other_trackers():
    text = """# Changes

## v2.0.0

### Features

- New `retry` option {pr}`1234` {issue}`1200`.
- Faster parsing :gh:`1301`.

### Bug fixes

- Crash on empty input (:bpo:`4567`, :cve:`2025-1234`).
"""
    feature, faster, crash = _parse("docs/changelog.md", text)
    assert (feature.release, feature.category, feature.prs, feature.issues) == ("2.0.0", "Features", [1234], [1200])
    assert faster.refs == [1301]  # :gh: is a GitHub number of either kind
    assert (crash.prs, crash.issues, crash.refs) == ([], [], [])  # bugs.python.org and CVE numbers are not GitHub's
    assert strip_refs(feature.text) == "New `retry` option."


TOWNCRIER_RENDERED = """=========
Changelog
=========

..
    You should *NOT* be adding new change log entries to this file, this
    file is managed by towncrier.

.. towncrier release notes start

hooky 1.5.0 (2024-04-19)
========================

Features
--------

- `#178 <https://github.com/acme/hk/issues/178>`_: Add support for deprecating specific hook parameters.

  See :ref:`warn_on_impl` for details.



Bug Fixes
---------

- `#481 <https://github.com/acme/hk/issues/481>`_, `#482 <https://github.com/acme/hk/issues/482>`_: Blocked is not None.


hooky 1.1.0 (YANKED)
====================

.. note::

  This release was yanked because the new wrappers broke downstream projects.
  See `#403 <https://github.com/acme/hk/issues/403>`__ for more information.

Deprecations and Removals
-------------------------

- `#364 <https://github.com/acme/hk/issues/364>`_: Python 3.6 is no longer supported.
"""


def test_towncrier_rendered_rst_and_issue_links_that_are_prs():
    entries = _parse("CHANGELOG.rst", TOWNCRIER_RENDERED, "restructuredtext")
    assert [(entry.release, entry.category, entry.refs) for entry in entries] == [
        ("1.5.0", "Features", [178]),
        ("1.5.0", "Bug Fixes", [481, 482]),
        ("1.1.0", "Deprecations and Removals", [364]),  # the yank note is not an entry
    ]
    assert all(entry.issues == [] for entry in entries) and "warn_on_impl" in entries[0].text
    # towncrier links PRs through /issues/ URLs: a number history knows as a PR is a PR
    bugfix = entries[1]
    assert Refs(set(bugfix.prs), set(bugfix.issues), set(bugfix.refs)).resolve({481}) == ([481], [482])
    assert strip_refs(bugfix.text) == "Blocked is not None."


def test_reference_typing_rules():
    refs = extract_refs("see https://github.com/o/r/issues/7 and :issue:`8`, [#9](https://github.com/o/r/pull/9)")
    assert (refs.prs, refs.issues, refs.issue_links, refs.bare) == ({9}, {7, 8}, {7}, set())
    assert refs.resolve({7, 8}) == ([7, 9], [8])  # a role says issue; only the URL is open to being a PR
    assert refs.for_entry() == ([9], [8], [7])
    assert extract_refs("pull request #12, PR 13, issue #14, GH-15, gh-16, acme/other#17").for_entry() == (
        [12, 13],
        [],
        [14, 15, 16],
    )


def test_per_release_files_and_their_headings():
    singles, per_release = find_changelog_files(
        ["docs/versions.rst", "CHANGES", "NEWS.md", "doc/source/changelog.rst", "docs/releases/5.0.md", "src/news.py"]
    )
    assert singles == ["CHANGES", "NEWS.md", "docs/versions.rst", "doc/source/changelog.rst"]
    assert per_release == ["docs/releases/5.0.md"]
    # typeguard's docs/versionhistory.rst (fourteenth held-out set: its plan had no release notes at all)
    assert find_changelog_files(["docs/versionhistory.rst", "docs/release-history.md", "docs/history.py"])[0] == [
        "docs/release-history.md",
        "docs/versionhistory.rst",
    ]


def test_releases_named_in_bold_with_their_dates():
    """typeguard's version history names each release in bold, its date after it; a bold label stays a category."""
    text = (
        "Version history\n===============\n\n**UNRELEASED**\n\n- Dropped support for Python 3.9\n\n"
        "**4.5.2** (2026-05-14)\n\n- Fixed ``IndexError`` raised from ``check_signature_compatible``\n"
        "  when the method has no positional parameters\n\n**4.5.1** (2026-02-19)\n\n**Fixes**\n\n"
        "- Fixed the cut-off offset of the item list\n"
    )
    entries = parse_changelog(ChangelogFile("docs/versionhistory.rst", text), "rst")
    assert [(entry.release, entry.category, entry.text[:18]) for entry in entries] == [
        (None, None, "Dropped support fo"),
        ("4.5.2", None, "Fixed ``IndexError"),
        ("4.5.1", "Fixes", "Fixed the cut-off "),
    ]


# ---- categories -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "category, text, kind",
    [
        ("Added", "Colourless output.", "feature"),
        ("Enhancements", "Streaming bodies.", "feature"),
        ("Fixed", "Crash on empty input.", "bug fix"),
        ("Bug Fixes", "Wrappers pass StopIteration through.", "bug fix"),
        ("bugfix", "Wrappers pass StopIteration through.", "bug fix"),
        ("Changed", "The renderer no longer warns.", "feature"),
        ("Changed", "Fix the renderer's width on Windows.", "bug fix"),
        ("Deprecations and Removals", "The `app` shortcut is deprecated.", "feature"),
        ("removal", "The deprecated `proxies` argument is removed.", "feature"),
        ("removal", "Python 3.6 is no longer supported.", "housekeeping"),
        ("Removed", "Python 3.8 and 3.9 support.", "housekeeping"),
        ("Performance", "Parsing is faster.", "performance"),
        ("perf", "Less copying.", "performance"),
        ("Internal", "Split the parser module.", "refactor"),
        ("Improved Documentation", "Explain hook wrappers.", "housekeeping"),
        ("Trivial/Internal Changes", "Use ruff.", "housekeeping"),
        ("misc", "Anything.", "housekeeping"),
        ("Packaging", "Ship wheels.", "housekeeping"),
        ("features", "Async retry predicates.", "feature"),
        ("fixes", "Allow re.Pattern in match types.", "bug fix"),
        ("upgrade", "The minimum delay is now respected.", "feature"),
        ("other", "Use black for code formatting.", "housekeeping"),
        ("FIXES AND NEW FEATURES", "Added an `indent` argument.", "feature"),
        (None, "Add support for the Partitioned cookie attribute.", "feature"),
        (None, "Allow self as an argument to url_for.", "feature"),
        (None, "Fix how host matching interacts with SERVER_NAME.", "bug fix"),
        (None, "``Request.trusted_hosts`` is checked during routing.", "feature"),  # in the notes: a feature
        (None, ":func:`extract` now accepts a `monotonic` argument.", "feature"),
        (None, "Drop support for Python 3.8. :pr:`5623`", "housekeeping"),
        (None, "Performance for :func:`ichunked` was improved.", "performance"),
        ("What's Changed", "Fix typo in docs by @x in https://github.com/o/r/pull/5", "housekeeping"),
    ],
)
def test_entry_kind(category, text, kind):
    assert entry_kind(category, text) == kind


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("Add locking in reset_cache (Issue #591)", "Add locking in reset_cache"),  # pyparsing's CHANGES
        ("Faster parse (#4, #3).", "Faster parse."),
        ("Retry on timeout (see PR #12)", "Retry on timeout"),
        ("Keep (optional) arguments", "Keep (optional) arguments"),  # no reference: the brackets stay
        # npm's template-oss entries close with their credits, a name without its @ too
        ("diff: fix prerelease diff logic (#755) (@eminberkayd, berkay.daglar)", "diff: fix prerelease diff logic"),
        ("bump x (#852) (@dependabot[bot], @npm-cli-bot)", "bump x"),
        (
            "[`2471d75`](https://github.com/npm/node-semver/commit/2471d7543e2e63d9d95358e2405e7e1cde926c36) "
            "[#811](https://github.com/npm/node-semver/pull/811) x-range build metadata support (i529015)",
            "x-range build metadata support",
        ),
        ("Support the `--x` flag (Windows)", "Support the `--x` flag (Windows)"),  # no commit link: no credit
    ],
)
def test_brackets_left_with_only_reference_words_go(text, stripped):
    assert strip_refs(text) == stripped


ARROW_STYLE = """Changelog
=========

1.3.0 (2024-01-01)
------------------

- [ADDED] Added ``humanize`` week granularity for the ``Arrow.humanize`` method.
- [FIX] Fixed a bug in parsing ISO weeks.

.. code-block:: python

    >>> arrow.utcnow().shift(weeks=2).humanize(granularity="week")
    'in 2 weeks'

- [INTERNAL] Moved the CI to GitHub Actions.
"""


def test_a_kind_tag_is_the_entrys_category_and_a_code_block_between_entries_its_context():
    entries = _parse("CHANGELOG.rst", ARROW_STYLE, "restructuredtext")
    assert [(entry.category, entry.text) for entry in entries] == [
        ("Added", "Added ``humanize`` week granularity for the ``Arrow.humanize`` method."),
        ("Fix", "Fixed a bug in parsing ISO weeks."),
        ("Internal", "Moved the CI to GitHub Actions."),
    ]
    assert [entry_kind(entry.category, entry.text) for entry in entries] == ["feature", "bug fix", "refactor"]
    # the example goes to the entry it shares words with, its lines kept as lines
    assert 'humanize(granularity="week")' in entries[0].context and not entries[1].context
    shown = render(f"{entries[0].text}\n\n{entries[0].context}", "rst").text
    example = ">>> arrow.utcnow().shift(weeks=2).humanize(granularity=\"week\")\n'in 2 weeks'"
    assert shown.endswith(f"```python\n{example}\n```")


def test_a_shouted_lead_in_is_not_part_of_the_entry():
    text = "## 1.0.0\n\n- IMPORTANT: Python 3.6 is no longer supported.\n- **Note:** `x` now returns a list.\n"
    entries = _parse("CHANGES.md", text)
    assert [entry.text for entry in entries] == ["Python 3.6 is no longer supported.", "`x` now returns a list."]
    assert entry_kind(entries[0].category, entries[0].text) == "housekeeping"


def test_a_template_oss_entry_renders_without_its_closing_credit():
    """The commit link's text is code (`2471d75`): rendering hides it before the references go, and the entry
    still reads as opening with its commit's link."""
    from harnessforge.mining.markup import render

    entry = (
        "[`2471d75`](https://github.com/npm/node-semver/commit/2471d7543e2e63d9d95358e2405e7e1cde926c36) "
        "[#811](https://github.com/npm/node-semver/pull/811) x-range build metadata support (i529015)"
    )
    assert render(entry, "markdown").text == "x-range build metadata support"


def test_a_link_alone_is_no_entry():
    """tablib's "3.9.0 and newer" section lists only its releases page: a task was titled
    "Https://github.com/jazzband/tablib/releases" (eighteenth held-out set)."""
    text = (
        "## 3.9.0 and newer\n\nSee GitHub Releases:\n\n- https://github.com/jazzband/tablib/releases\n"
        "- [releases](https://github.com/o/r/releases).\n\n## 3.8.0\n\n- Add column widths (#516)\n"
        "- Link <https://example.org/spec> support\n"
    )
    assert [entry.text for entry in _parse("HISTORY.md", text)] == [
        "Add column widths (#516)",
        "Link <https://example.org/spec> support",
    ]
