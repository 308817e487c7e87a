"""`off-mainline-tags`: releases tagged on a line that the default branch took in as a second parent.

`gauge` is developed and released (v0.1.0, v0.2.0, v0.3.0) on `develop`. The default branch `main`
starts at the same initial commit and takes `develop` in with `Merge branch 'develop'` merges, so
every tag is off `main`'s first-parent line yet on each later tag's own. Features are squash
commits `Title (#N)`; the changelog is Markdown with `[#N](url)` links.

What the factory should make of `--from v0.1.0 --to v0.3.0`: the chain follows v0.3.0's
first-parent history (`develop`), whatever the default branch is; nothing is refused.
"""

from __future__ import annotations

from pathlib import Path

from .common import PYPROJECT, builder, feature_files

URL = "https://github.com/harnessforge-examples/gauge/pull"
RELEASES = [  # oldest first: (version, month, [(PR, changelog text)])
    ("0.1.0", 1, [(1, "First release: gauges and readings.")]),
    ("0.2.0", 2, [(5, "Gauges can be given alarm thresholds."), (6, "Alarms can be silenced for a while.")]),
    ("0.3.0", 3, [(8, "Gauges keep a history of their readings."), (9, "Readings can be averaged over a window.")]),
]


def _changelog_up_to(version: str) -> str:
    """The Keep-a-Changelog file as it stood at `version`: its section and the older ones, newest first."""
    sections = []
    for v, month, items in RELEASES:
        lines = "".join(f"- {text} ([#{n}]({URL}/{n}))\n" for n, text in items)
        sections.insert(0, f"## [{v}] - 2026-0{month}-01\n\n### Added\n\n{lines}\n")
        if v == version:
            break
    return "# Changelog\n\n" + "".join(sections)


def build(dest: Path) -> Path:
    b = builder(dest, "gauge")
    b.commit(
        "Initial commit", {"pyproject.toml": PYPROJECT.format(name="gauge", version="0.0.0"), "README.md": "# gauge\n"}
    )
    b.git("checkout", "-q", "-b", "develop")
    b.squash_pr(1, "Add gauges and readings", feature_files("gauge", "readings"))
    b.commit("Release 0.1.0", {"CHANGELOG.md": _changelog_up_to("0.1.0")})
    b.tag("v0.1.0", "gauge 0.1.0")
    b.git("checkout", "-q", "main")
    b.git("merge", "-q", "--no-ff", "develop", "-m", "Merge branch 'develop'")
    b.tick()
    b.git("checkout", "-q", "develop")
    features = {
        "0.2.0": [(5, "Add alarm thresholds", "alarms"), (6, "Silence alarms", "silences")],
        "0.3.0": [(8, "Keep reading history", "history"), (9, "Average readings", "averages")],
    }
    for version, prs in features.items():
        for number, title, feature in prs:
            b.squash_pr(number, title, feature_files("gauge", feature))
            b.commit("ci: run the tests on every push", {".github/workflows/ci.yml": f"on: [push]  # {number}\n"})
        b.commit(f"Release {version}", {"CHANGELOG.md": _changelog_up_to(version)})
        b.tag(f"v{version}", f"gauge {version}")
        b.git("checkout", "-q", "main")
        b.git("merge", "-q", "--no-ff", "develop", "-m", "Merge branch 'develop'")
        b.tick()
        b.git("checkout", "-q", "develop")
    b.git("checkout", "-q", "main")
    return dest
