"""`squash-only`: a history of squash-merged PRs with conventional-commit titles and no changelog.

`tally` 0.1.0, then squash commits `feat: ... (#N)`, `fix: ... (#N)`, `refactor: ... (#N)` whose
bodies are their PR descriptions, direct commits with bodies of their own, and `chore(deps)` and
`docs:` housekeeping; 0.2.0 is tagged at the end. No changelog file exists.

What the factory should make of 0.1.0 -> 0.2.0: milestones titled by the PR titles (never by a
chore), typed feature / bug fix / refactor from the prefixes, with L2 from the squash bodies and
L1 from the direct commits' bodies.
"""

from __future__ import annotations

from pathlib import Path

from .common import PYPROJECT, builder, feature_files

PRS = [  # (number, title, feature, PR description)
    (
        3,
        "feat: import tallies from CSV files",
        "csv_import",
        "Reads one tally per row; a header row names the columns.\n\n* parse rows\n* add tests",
    ),
    (
        5,
        "fix: keep counts when a tally is merged twice",
        "merging",
        "Merging the same tally twice used to double its counts; merges are now idempotent.",
    ),
    (
        7,
        "refactor: split the reader into sources and parsers",
        "readers",
        "Sources yield raw records and parsers turn them into tallies, so new formats need only a parser.",
    ),
]


def build(dest: Path) -> Path:
    b = builder(dest, "tally")
    first = {"pyproject.toml": PYPROJECT.format(name="tally", version="0.1.0")}
    b.commit("Initial commit", {**first, "tally/__init__.py": '"""tally: count things."""\n'})
    b.tag("v0.1.0", "tally 0.1.0")
    for number, title, feature, body in PRS:
        b.squash_pr(number, title, feature_files("tally", feature), body=body)
        b.squash_pr(
            number + 1, "chore(deps): bump pytest from 8.2 to 8.3", {"requirements-dev.txt": f"pytest=={number}\n"}
        )
    b.commit(
        "Add a tally summary\n\nThe summary lists each tally with its total, largest first, so a report reads "
        "at a glance.",
        feature_files("tally", "summary"),
    )
    b.commit("docs: describe CSV imports", {"README.md": "# tally\n\nImports CSV files.\n"})
    b.commit("Release 0.2.0", {"pyproject.toml": PYPROJECT.format(name="tally", version="0.2.0")})
    b.tag("v0.2.0", "tally 0.2.0")
    return dest
