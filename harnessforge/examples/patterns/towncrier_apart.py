"""`towncrier-apart`: towncrier news fragments that land apart from their code, amid chores.

`beacon` 1.0.0, then: PR #21 (a merge) adds delivery retries but no tests; a direct commit
afterwards adds the retries' tests together with `changelog.d/21.feature.md`. PR #23 (squash)
adds delivery receipts with its tests and a fragment named after its issue (`22.feature.md`).
Between them: a docs-build OS bump, a type-checker pin, a pre-commit autoupdate and a CI tweak.
Release 1.1.0 renders the fragments into CHANGELOG.md and deletes them, as `towncrier build` does.

What the factory should make of 1.0.0 -> 1.1.0: milestones titled and described by the two
features (never by a chore), and the retries' tests accepted: the commit that wrote them added
the feature's fragment, so it is tied to the entry although no PR links it.
"""

from __future__ import annotations

from pathlib import Path

from .common import PYPROJECT, builder, feature_files

TOWNCRIER = PYPROJECT + '\n[tool.towncrier]\ndirectory = "changelog.d"\nfilename = "CHANGELOG.md"\n'
RETRIES = "Failed deliveries are retried with an exponential backoff."
RECEIPTS = "Every delivery can return a receipt that says when and where it arrived."
RELEASE_110 = f"""## 1.1.0 (2026-02-10)

### Features

- {RETRIES} ([#21](https://github.com/harnessforge-examples/beacon/issues/21))
- {RECEIPTS} ([#22](https://github.com/harnessforge-examples/beacon/issues/22))

"""


def build(dest: Path) -> Path:
    b = builder(dest, "beacon")
    b.commit(
        "Initial commit",
        {
            "pyproject.toml": TOWNCRIER.format(name="beacon", version="1.0.0"),
            "beacon/__init__.py": '"""beacon: deliver messages."""\n',
            "CHANGELOG.md": "# Changelog\n\n## 1.0.0 (2026-01-05)\n\n- First release.\n",
            "changelog.d/.gitignore": "!.gitignore\n",
            ".readthedocs.yaml": "build:\n  os: ubuntu-22.04\n",
        },
    )
    b.tag("1.0.0", "beacon 1.0.0")
    retries = feature_files("beacon", "retries")
    test = retries.pop("tests/test_retries.py")
    b.merge_pr(21, "retries", "Retry failed deliveries", [("Add retries with backoff", retries)])
    b.commit("Bump the docs build OS to ubuntu-24.04", {".readthedocs.yaml": "build:\n  os: ubuntu-24.04\n"})
    b.commit(
        "Add tests and a news fragment for retries",
        {"tests/test_retries.py": test, "changelog.d/21.feature.md": RETRIES + "\n"},
    )
    b.squash_pr(24, "Pin mypy to 1.11", {"requirements-dev.txt": "mypy==1.11.2\n"})
    b.squash_pr(
        23,
        "Add delivery receipts",
        {**feature_files("beacon", "receipts"), "changelog.d/22.feature.md": RECEIPTS + "\n"},
        body="Receipts record the time and the endpoint of a delivery.\n\nCloses #22",
    )
    b.squash_pr(25, "[pre-commit.ci] pre-commit autoupdate", {".pre-commit-config.yaml": "repos: []\n"})
    b.commit("ci: test on Python 3.13", {".github/workflows/ci.yml": "on: [push]\n"})
    changelog = (b.path / "CHANGELOG.md").read_text().replace("# Changelog\n\n", "# Changelog\n\n" + RELEASE_110)
    b.commit(
        "Release 1.1.0",
        {
            "CHANGELOG.md": changelog,
            "changelog.d/21.feature.md": None,
            "changelog.d/22.feature.md": None,
            "pyproject.toml": TOWNCRIER.format(name="beacon", version="1.1.0"),
        },
    )
    b.tag("1.1.0", "beacon 1.1.0")
    return dest
