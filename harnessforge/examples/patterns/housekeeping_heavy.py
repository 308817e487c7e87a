"""`housekeeping-heavy`: three features in a history dominated by chores.

`relay` 2.0.0, then three feature PRs (merge commits) described by a Keep-a-Changelog file, and
between and around them fourteen chores as real projects have them: dependabot bumps, pre-commit
autoupdates, a docs-build OS bump, type-checker and linter pins, a ruff reformat of the sources,
tox and CI edits, "fix mypy findings", version bumps. Release 2.1.0 closes it.

What the factory should make of 2.0.0 -> 2.1.0: every milestone titled and described by a
changelog feature; no chore's words in any title, description or hint L0-L2; the reformat and the
typing fixes ride along in a milestone's ground truth without counting towards its size.
"""

from __future__ import annotations

from pathlib import Path

from .common import PYPROJECT, builder, feature_files

FEATURES = [  # (PR, branch, PR title, changelog entry)
    (31, "routes", "Route messages by topic", "Messages can be routed by topic, with wildcards."),
    (34, "quotas", "Per-sender quotas", "Senders can be given a quota of messages per minute."),
    (38, "replay", "Replay from a checkpoint", "A relay can replay its messages from a checkpoint after a restart."),
]
CHORES = [  # (number or None, subject, files)
    (30, "Bump actions/checkout from 4.1.1 to 4.1.7", {".github/workflows/ci.yml": "uses: actions/checkout@v4.1.7\n"}),
    (None, "[pre-commit.ci] pre-commit autoupdate", {".pre-commit-config.yaml": "rev: v0.5.0\n"}),
    (32, "Bump the docs build OS to ubuntu-24.04", {".readthedocs.yaml": "os: ubuntu-24.04\n"}),
    (33, "Pin mypy to 1.11", {"requirements-dev.txt": "mypy==1.11.2\n"}),
    (None, "fix mypy findings", None),  # touches the sources
    (35, "Update ruff to 0.6 and reformat", None),  # touches the sources
    (None, "ci: test on Python 3.13", {".github/workflows/ci.yml": "python: ['3.12', '3.13']\n"}),
    (36, "Bump the github-actions group with 2 updates", {".github/workflows/ci.yml": "uses: setup-python@v5.2\n"}),
    (None, "Update tox.ini", {"tox.ini": "[tox]\nenv_list = py312, py313\n"}),
    (37, "[pre-commit.ci] pre-commit autoupdate", {".pre-commit-config.yaml": "rev: v0.6.1\n"}),
    (None, "update dev dependencies", {"requirements-dev.txt": "mypy==1.11.2\nruff==0.6.1\n"}),
    (None, "Fix typos in the README", {"README.md": "# relay\n\nRelays messages.\n"}),
    (39, "Bump pytest from 8.2.2 to 8.3.2", {"requirements-dev.txt": "mypy==1.11.2\nruff==0.6.1\npytest==8.3.2\n"}),
    (None, "Prepare release 2.1.0", None),  # the version bump
]
CHANGELOG = (
    "# Changelog\n\n## [2.1.0] - 2026-03-01\n\n### Added\n\n"
    + "".join(f"- {entry} (#{number})\n" for number, _, _, entry in FEATURES)
    + "\n## [2.0.0] - 2026-01-05\n\n- First stable release.\n"
)


def _touch_sources(b, stamp: str) -> dict[str, str]:
    """A chore that edits every source module (a reformat, a typing fix): a comment line appended."""
    out = {}
    for path in sorted((b.path / "relay").glob("*.py")):
        rel = f"relay/{path.name}"
        out[rel] = path.read_text() + f"# {stamp}\n"
    return out


def build(dest: Path) -> Path:
    b = builder(dest, "relay")
    b.commit(
        "Initial commit",
        {
            "pyproject.toml": PYPROJECT.format(name="relay", version="2.0.0"),
            "relay/__init__.py": '"""relay: move messages."""\n\n__version__ = "2.0.0"\n',
            "CHANGELOG.md": "# Changelog\n\n## [2.0.0] - 2026-01-05\n\n- First stable release.\n",
        },
    )
    b.tag("2.0.0", "relay 2.0.0")
    chores = iter(CHORES)
    for number, branch, title, _ in FEATURES:
        for _ in range(4 if number != FEATURES[-1][0] else 6):
            chore_number, subject, files = next(chores)
            if files is None and subject.startswith("Prepare"):
                files = {"relay/__init__.py": '"""relay: move messages."""\n\n__version__ = "2.1.0"\n'}
            elif files is None:
                files = _touch_sources(b, subject)
            if chore_number:
                b.squash_pr(chore_number, subject, files, author="dependabot[bot] <bot@example.org>")
            else:
                b.commit(subject, files)
        b.merge_pr(number, branch, title, [(title, feature_files("relay", branch))])
    b.commit("Release 2.1.0", {"CHANGELOG.md": CHANGELOG})
    b.tag("2.1.0", "relay 2.1.0")
    return dest
