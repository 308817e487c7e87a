"""Boundaries on features (issues 30 and 31): below the minimum size a milestone takes in the next feature only
when their code shares a definition (a function, a class; not merely a file: more-itertools keeps everything in
`more.py`), so small unrelated features stay apart (flagged undersized) instead of sharing a grab-bag; each
milestone says why its parts belong together; tested work the release notes leave out opens its own."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import package_pyproject
from harnessforge.mining.footprint import footprint, shared
from harnessforge.mining.planner import plan
from harnessforge.rules import load_rules
from harnessforge.store import Store

# Three small features in one release, in this order: lengths (a.py), colours (b.py), then lengths again (a.py's
# `metres` grows an argument).
FEATURES = [
    (3, "Lengths convert to metres", "calc/a.py", "def metres(feet):\n    return feet * 0.3048\n"),
    (5, "Colours have names", "calc/b.py", "def name(rgb):\n    return {(0, 0, 0): 'black'}.get(rgb, '?')\n"),
    (
        7,
        "Lengths take inches too",
        "calc/a.py",
        "def metres(feet, inches=0):\n    return (feet + inches / 12) * 0.3048\n",
    ),
]
WEIGHTS = (9, "Weights convert to grams", "calc/a.py", "def grams(pounds):\n    return pounds * 453.6\n")


def _define(source: str, code: str) -> str:
    """`source` with `code`'s function added, or replacing the function of that name."""
    name = code.split("(")[0]
    kept = [block for block in source.split("\n\n\n") if block.strip() and block.split("(")[0] != name]
    return "\n\n\n".join([*kept, code.strip()]) + "\n"


def build(dest, features, unlisted: tuple[int, ...] = ()) -> str:
    """A repository of `features` (the PR numbers in `unlisted` have no release-note entry)."""
    b = RepoBuilder(dest, datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    b.git("remote", "add", "origin", "https://github.com/harnessforge-examples/calc.git")
    pyproject = package_pyproject("calc", "Small conversions")
    b.commit("Initial commit", {"pyproject.toml": pyproject.format(version="0.1.0"), "calc/__init__.py": ""})
    b.tag("v0.1.0")
    sources: dict[str, str] = {}
    notes = "## 0.2.0\n\n"
    for number, title, path, code in features:
        sources[path] = _define(sources.get(path, ""), code)
        name = code.split("(")[0].removeprefix("def ")
        test = f"from {path[:-3].replace('/', '.')} import {name}\n\n\ndef test_{name}():\n    assert {name}\n"
        notes += "" if number in unlisted else f"- {title} (#{number})\n"
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
    # the two length features share `metres`: one part; the colours another
    assert milestone.cohesion == "2 parts sharing no code: Colours have names (#5) | Lengths convert to metres (#3)"


def test_small_features_sharing_code_grow_one_milestone(tmp_path):
    related_first = [FEATURES[0], FEATURES[2], FEATURES[1]]  # both conversions, then the colours
    repo = build(tmp_path / "calc", related_first)
    first, second = plan(Store(tmp_path / "store"), repo, load_rules(), "v0.1.0", "v0.2.0").plan.milestones
    assert first.title == "Lengths convert to metres"  # the inches changed no test: context, not asked (issue 44)
    assert first.description.startswith("Lengths convert to metres.\n\nAlso in this change, not graded")
    assert "not part of this task: Lengths take inches too." in first.description
    assert first.cohesion == "2 features sharing code (calc/a.py:metres)" and "unrelated_parts" not in first.flags
    assert (second.title, second.cohesion) == ("Colours have names", "one feature")


def test_new_functions_of_one_module_are_not_related(tmp_path):
    """Two features adding different functions to one module share the file, not code: apart."""
    repo = build(tmp_path / "calc", [FEATURES[0], WEIGHTS])
    milestones = plan(Store(tmp_path / "store"), repo, load_rules(), "v0.1.0", "v0.2.0").plan.milestones
    assert [milestone.title for milestone in milestones] == ["Lengths convert to metres", "Weights convert to grams"]


def test_tested_work_the_notes_leave_out_opens_its_own_milestone(tmp_path):
    """The colours PR has no entry but changes its tests: its own task, not a rider of the lengths. Without the
    rule it rides along in the lengths' milestone, undescribed in its title."""
    repo = build(tmp_path / "calc", [FEATURES[0], FEATURES[1]], unlisted=(5,))
    milestones = plan(Store(tmp_path / "store"), repo, load_rules(), "v0.1.0", "v0.2.0").plan.milestones
    assert [milestone.title for milestone in milestones] == ["Lengths convert to metres", "Colours have names"]
    rules = load_rules()
    rules = rules.model_copy(update={"planning": rules.planning.model_copy(update={"tested_work_opens": False})})
    (milestone,) = plan(Store(tmp_path / "store2"), repo, rules, "v0.1.0", "v0.2.0").plan.milestones
    assert milestone.title == "Lengths convert to metres" and milestone.source_prs == [3, 5]


def test_a_refactor_beside_a_feature_rides_along(tmp_path):
    """A behaviour-preserving change (gorilla/mux's "Simplify code", merged untested into a CORS fix) is nothing a
    user sees: beside a user-facing feature it is no part of the milestone's cohesion."""
    rules = load_rules()
    rules = rules.model_copy(update={"planning": rules.planning.model_copy(update={"related_features_only": False})})
    refactor = (5, "Simplify the colour table", "calc/b.py", "def name(rgb):\n    return {(0, 0, 0): 'black'}[rgb]\n")
    repo = build(tmp_path / "calc", [FEATURES[0], refactor])
    (milestone,) = plan(Store(tmp_path / "store"), repo, rules, "v0.1.0", "v0.2.0").plan.milestones
    assert (milestone.cohesion, "unrelated_parts" in milestone.flags) == ("one feature", False)


def test_footprints_name_the_definitions_a_change_touches():
    """Python by `ast` (`__all__` and imports name nothing), Go by its declarations (a method with its receiver),
    a file no reader knows counts whole and relates to any change of that file."""
    python = (
        "import os\n\n__all__ = ['a', 'b']\n\n\ndef a():\n    return 1\n\n\nclass B:\n    def m(self):\n        pass\n"
    )
    go = 'package mux\n\nimport "net/http"\n\nfunc (r *Router) Handle(p string) {\n\tr.x = p\n}\n\n'
    go += "type Route struct {\n\tname string\n}\n"
    files = {"pkg/more.py": python, "mux.go": go, "conf.xyz": "a = 1\n"}
    touched = {"pkg/more.py": [1, 3, 7, 12], "mux.go": [6, 10], "conf.xyz": [1]}
    found = footprint(touched, files, files.get)
    # the innermost definition: a method, a struct's field (a class or a struct whole would relate everything in it)
    assert found == {"pkg/more.py:a", "pkg/more.py:B.m", "mux.go:Router.Handle", "mux.go:Route.name", "conf.xyz:*"}
    assert shared({"pkg/more.py:a"}, {"pkg/more.py:c"}) == set()
    assert shared({"conf.xyz:*"}, {"conf.xyz:x"}) == {"conf.xyz:*"}
    broken = footprint({"pkg/bad.py": [1]}, ["pkg/bad.py"], lambda path: "def (:\n")
    assert broken == {"pkg/bad.py:*"}  # a file that does not parse counts whole


def test_entries_inserted_side_by_side_into_a_table_relate_nothing():
    """sprig (the eleventh held-out set): every template function adds one line to `genericMap`, so htpasswd and
    duration "shared code" and grew one grab-bag. Lines inserted into a table are that entry only; a changed line
    of the table (an entry edited or removed) or of a function is still the definition itself."""
    go = 'package sprig\n\nvar genericMap = map[string]interface{}{\n\t"htpasswd": htpasswd,\n'
    go += '\t"duration": duration,\n}\n'
    go += "\nfunc render(s string) string {\n\treturn s\n}\n"
    python = "TABLE = {\n    'a': 1,\n    'b': 2,\n}\n"
    files = {"functions.go": go, "table.py": python}
    first = footprint({"functions.go": [4]}, ["functions.go"], files.get, {"functions.go": [4]})
    second = footprint({"functions.go": [5]}, ["functions.go"], files.get, {"functions.go": [5]})
    assert first == {"functions.go:genericMap+"} and shared(first, second) == set()
    edited = footprint({"functions.go": [5]}, ["functions.go"], files.get)  # the hunk removed a line too
    assert shared(edited, footprint({"functions.go": [4]}, ["functions.go"], files.get)) == {"functions.go:genericMap"}
    inside = footprint({"functions.go": [9]}, ["functions.go"], files.get, {"functions.go": [9]})
    assert inside == {"functions.go:render"}  # lines inserted into a function are a change of it
    assert footprint({"table.py": [3]}, ["table.py"], files.get, {"table.py": [3]}) == {"table.py:TABLE+"}
