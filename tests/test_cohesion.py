"""Boundaries on features (issue 31): below the minimum size a milestone takes in the next feature only when
their code shares a source file, so small unrelated features stay apart (flagged undersized) instead of
sharing a grab-bag; each milestone says why its parts belong together."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import package_pyproject
from harnessforge.mining.planner import plan
from harnessforge.rules import load_rules
from harnessforge.store import Store

# Three small features in one release, in this order: units (a.py), colours (b.py), then units again (a.py).
FEATURES = [
    (3, "Lengths convert to metres", "calc/a.py", "def metres(feet):\n    return feet * 0.3048\n"),
    (5, "Colours have names", "calc/b.py", "def name(rgb):\n    return {(0, 0, 0): 'black'}.get(rgb, '?')\n"),
    (7, "Weights convert to grams", "calc/a.py", "def grams(pounds):\n    return pounds * 453.6\n"),
]


def build(dest, features) -> str:
    b = RepoBuilder(dest, datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    b.git("remote", "add", "origin", "https://github.com/harnessforge-examples/calc.git")
    pyproject = package_pyproject("calc", "Small conversions")
    b.commit("Initial commit", {"pyproject.toml": pyproject.format(version="0.1.0"), "calc/__init__.py": ""})
    b.tag("v0.1.0")
    sources: dict[str, str] = {}
    notes = "## 0.2.0\n\n"
    for number, title, path, code in features:
        sources[path] = sources.get(path, "") + code
        name = code.split("(")[0].removeprefix("def ")
        test = f"from {path[:-3].replace('/', '.')} import {name}\n\n\ndef test_{name}():\n    assert {name}\n"
        notes += f"- {title} (#{number})\n"
        b.squash_pr(number, title, {path: sources[path], f"tests/test_{name}.py": test})
    b.commit("Release 0.2.0", {"CHANGELOG.md": notes, "pyproject.toml": pyproject.format(version="0.2.0")})
    b.tag("v0.2.0")
    return str(b.path)


@pytest.fixture(scope="module")
def small_features(tmp_path_factory):
    return build(tmp_path_factory.mktemp("cohesion") / "calc", FEATURES)


def test_small_unrelated_features_stay_apart_and_say_why(small_features, tmp_path):
    milestones = plan(Store(tmp_path / "store"), small_features, load_rules(), "v0.1.0", "v0.2.0").plan.milestones
    assert [milestone.title for milestone in milestones] == [title for _, title, _, _ in FEATURES]
    assert all(milestone.cohesion == "one feature" for milestone in milestones)
    assert all("undersized" in milestone.flags and "unrelated_parts" not in milestone.flags for milestone in milestones)


def test_without_the_rule_they_share_a_milestone_flagged_unrelated(small_features, tmp_path):
    rules = load_rules()
    rules = rules.model_copy(update={"planning": rules.planning.model_copy(update={"related_features_only": False})})
    (milestone,) = plan(Store(tmp_path / "store"), small_features, rules, "v0.1.0", "v0.2.0").plan.milestones
    assert "unrelated_parts" in milestone.flags
    # the two unit conversions share calc/a.py: one part; the colours another
    assert milestone.cohesion == "2 parts sharing no code: Colours have names (#5) | Lengths convert to metres (#3)"


def test_small_features_sharing_code_grow_one_milestone(tmp_path):
    related_first = [FEATURES[0], FEATURES[2], FEATURES[1]]  # both conversions, then the colours
    repo = build(tmp_path / "calc", related_first)
    first, second = plan(Store(tmp_path / "store"), repo, load_rules(), "v0.1.0", "v0.2.0").plan.milestones
    assert first.title == "Lengths convert to metres; Weights convert to grams"
    assert first.cohesion == "2 features sharing code (calc/a.py)" and "unrelated_parts" not in first.flags
    assert (second.title, second.cohesion) == ("Colours have names", "one feature")


def test_a_refactor_beside_a_feature_rides_along(tmp_path):
    """A behaviour-preserving change (gorilla/mux's "Simplify code", merged untested into a CORS fix) is nothing a
    user sees: beside a user-facing feature it is no part of the milestone's cohesion."""
    rules = load_rules()
    rules = rules.model_copy(update={"planning": rules.planning.model_copy(update={"related_features_only": False})})
    refactor = (5, "Simplify the colour table", "calc/b.py", "def name(rgb):\n    return {(0, 0, 0): 'black'}[rgb]\n")
    repo = build(tmp_path / "calc", [FEATURES[0], refactor])
    (milestone,) = plan(Store(tmp_path / "store"), repo, rules, "v0.1.0", "v0.2.0").plan.milestones
    assert (milestone.cohesion, "unrelated_parts" in milestone.flags) == ("one feature", False)
