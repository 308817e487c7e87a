"""`maintenance-branch`: patch releases tagged on a maintenance branch that is merged back (pallets style).

`ledger` 1.0.0 is released from `main`; `1.0.x` branches off there and gets a fix, released as
1.0.1 on that branch. Meanwhile `main` gains three features, each a merge commit titled
`title (#N)` (as pallets merges PRs), plus a dependabot bump and a pre-commit autoupdate; then
`Merge branch '1.0.x'` brings 1.0.1 back, and 1.1.0 is released from `main`. The changelog is
reStructuredText with Sphinx roles (`:pr:`, `:issue:`).

What the factory should make of `--from 1.0.1 --to 1.1.0`: 1.0.1 is not on 1.1.0's first-parent
line (the first mainline commit containing it is the merge, right before the release), so the
chain starts at the fork point (1.0.0) with a warning, and holds the three features as titled
milestones; the merge of 1.0.x is a backport folded into its milestone, which never titles it: the
fork point lacks 1.0.1's fix, so that milestone describes it ("Fixes released on the maintenance line
in 1.0.1, merged back") and its test is an acceptance test, not a failure left unexplained.
"""

from __future__ import annotations

from pathlib import Path

from .common import PYPROJECT, builder, feature_files

CHANGES_100 = """Version 1.0.0
-------------

Released 2026-01-05

-   Initial release: accounts and postings.
"""

CHANGES_101 = """Version 1.0.1
-------------

Released 2026-01-20

-   Negative amounts are rounded towards zero, not down. :issue:`13`


"""

CHANGES_110 = """Version 1.1.0
-------------

Released 2026-02-02

-   Accounts report their balance at any date. :issue:`10` :pr:`11`
-   Money can be transferred between accounts in one posting. :pr:`16`
-   Statements can be exported as CSV files. :issue:`18` :pr:`19`


"""

CORE = '''"""Accounts and postings."""


def round_amount(amount: float) -> int:
    """Whole currency units."""
    return int(amount // 1)
'''

CORE_FIXED = CORE.replace("return int(amount // 1)", "return int(amount)  # towards zero")

TEST_CORE = """from ledger.core import round_amount


def test_round_amount():
    assert round_amount(2.7) == 2
"""

TEST_CORE_FIXED = (
    TEST_CORE
    + """

def test_negative_amounts_round_towards_zero():
    assert round_amount(-2.7) == -2
"""
)


def _merge(b, number: int, branch: str, title: str, files: dict, issue: int | None = None) -> None:
    """A PR branch merged with a merge commit whose subject is `title (#N)`, as pallets merges."""
    b.git("checkout", "-q", "-b", branch)
    b.commit(
        title[:1].upper() + title[1:] + (f"\n\nfixes #{issue}" if issue else ""),
        files,
        author="Bo Contributor <bo@example.org>",
    )
    b.git("checkout", "-q", "-")
    b.git("merge", "-q", "--no-ff", branch, "-m", f"{title} (#{number})")
    b.git("branch", "-q", "-D", branch)
    b.tick()


def build(dest: Path) -> Path:
    b = builder(dest, "ledger")
    b.commit(
        "Initial commit",
        {
            "pyproject.toml": PYPROJECT.format(name="ledger", version="1.0.0"),
            "ledger/__init__.py": '"""ledger: accounts and postings."""\n',
            "ledger/core.py": CORE,
            "tests/test_core.py": TEST_CORE,
            "CHANGES.rst": CHANGES_100,
            ".github/workflows/ci.yml": "on: [push]\n",
        },
    )
    b.commit(
        "Release version 1.0.0",
        {"ledger/__init__.py": '"""ledger: accounts and postings."""\n\n__version__ = "1.0.0"\n'},
    )
    b.tag("1.0.0", "ledger 1.0.0")
    b.git("branch", "1.0.x")

    _merge(b, 11, "balances", "add account balances at any date", feature_files("ledger", "balances"), issue=10)
    _merge(
        b,
        12,
        "dependabot",
        "Bump the github-actions group with 2 updates",
        {".github/workflows/ci.yml": "on: [push, pull_request]\n"},
    )

    b.git("checkout", "-q", "1.0.x")
    _merge(
        b,
        14,
        "rounding",
        "fix rounding of negative amounts",
        {"ledger/core.py": CORE_FIXED, "tests/test_core.py": TEST_CORE_FIXED},
        issue=13,
    )
    b.commit("Release version 1.0.1", {"CHANGES.rst": CHANGES_101 + CHANGES_100})
    b.tag("1.0.1", "ledger 1.0.1")
    b.git("checkout", "-q", "main")
    b.git("merge", "-q", "--no-ff", "1.0.x", "-m", "Merge branch '1.0.x'")
    b.tick()

    _merge(b, 16, "transfers", "add transfers between accounts", feature_files("ledger", "transfers"))
    _merge(b, 17, "pre-commit-ci", "[pre-commit.ci] pre-commit autoupdate", {".pre-commit-config.yaml": "repos: []\n"})
    _merge(b, 19, "csv", "support CSV statements", feature_files("ledger", "statements"), issue=18)
    changes = (b.path / "CHANGES.rst").read_text()
    b.commit("Release version 1.1.0", {"CHANGES.rst": CHANGES_110 + changes})
    b.tag("1.1.0", "ledger 1.1.0")
    return dest
