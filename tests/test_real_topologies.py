"""Planning the shapes real repositories have (harnessforge/examples/patterns): maintenance branches,
tags off the default branch's first-parent line, towncrier fragments apart from their code, squash-only
histories without a changelog, housekeeping-heavy histories; default ranges, and bad ranges."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml

from harnessforge.envs.environment import validate
from harnessforge.errors import PlanningError
from harnessforge.examples.patterns import PATTERNS, build_pattern
from harnessforge.mining.planner import plan
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import git, one_run_per_side

MINE = ["maintenance-branch", "off-mainline-tags", "towncrier-apart", "squash-only", "housekeeping-heavy"]


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("patterns")
    return {name: build_pattern(name, root / name) for name in MINE}


@pytest.fixture(scope="module")
def planned(repos, tmp_path_factory):
    """Each pattern planned once over its default range: name -> PlanResult."""
    store = Store(tmp_path_factory.mktemp("store"))
    return {name: plan(store, str(path), load_rules()) for name, path in repos.items()}


def _said(result) -> list[str]:
    """Every text a Dev is shown before L3: titles, descriptions, hints L0-L2."""
    out = []
    for milestone in result.plan.milestones:
        out += [milestone.title, milestone.description, *(h.content for h in result.hints[milestone.id].levels[:3])]
    return out


def test_every_pattern_is_registered_and_refuses_a_used_directory(repos, tmp_path):
    assert set(MINE) <= set(PATTERNS)
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    with pytest.raises(FileExistsError):
        build_pattern("squash-only", tmp_path / "used")
    with pytest.raises(KeyError, match="unknown example pattern 'nope'"):
        build_pattern("nope", tmp_path / "n")


# ---- maintenance branches ------------------------------------------------------------------------


def test_a_maintenance_release_starts_the_chain_at_its_fork_point(repos, store):
    repo = repos["maintenance-branch"]
    result = plan(store, str(repo), load_rules(), from_ref="1.0.1", to_ref="1.1.0")
    milestone_plan = result.plan
    fork = git(repo, "rev-parse", "1.0.0^{commit}")
    backport = git(repo, "log", "--first-parent", "--format=%H", "--grep=^Merge branch '1.0.x'", "1.1.0")
    assert (
        milestone_plan.from_commit == fork != backport
    )  # not the merge right before the release, where 1.0.1 shows up
    [warning] = [w for w in milestone_plan.warnings if "fork point" in w]
    assert "1.0.1" in warning and fork[:10] in warning
    # the three features of 1.1.0, in history order, each titling its own milestone
    assert [milestone.source_prs[0] for milestone in milestone_plan.milestones] == [11, 16, 19]
    assert all(
        milestone.title_source == "changelog" and milestone.type == "feature" for milestone in milestone_plan.milestones
    )
    first = milestone_plan.milestones[0]
    assert backport in first.commits  # folded into the milestone that holds it, never titling one
    assert not any(re.search(r"1\.0\.x|round", milestone.title, re.I) for milestone in milestone_plan.milestones)
    # the fork point lacks 1.0.1's fix: the milestone that merges it back describes it, and its test counts
    assert (
        "### Fixes released on the maintenance line in 1.0.1, merged back\n\n"
        "- Negative amounts are rounded towards zero, not down." in first.description
    )
    assert not any("round" in milestone.description for milestone in milestone_plan.milestones[1:])
    assert "tests/test_core.py::test_negative_amounts_round_towards_zero" in first.acceptance_tests
    assert {(r.tag, r.maintenance) for r in milestone_plan.releases} == {
        ("1.0.0", False),
        ("1.0.1", True),
        ("1.1.0", False),
    }
    assert [milestone.release for milestone in milestone_plan.milestones] == ["1.1.0"] * 3  # 1.0.1 bounds no milestone
    # 1.0.1's entry is no entry of the range, but it is merged back into it
    assert (
        milestone_plan.report.entries_citing,
        milestone_plan.report.entries_covered,
        milestone_plan.report.backport_entries,
    ) == (3, 3, 1)
    assert not [e for milestone in milestone_plan.milestones for e in milestone.excluded_tests]
    # validated: the merged-back fix's test fails at the fork point and passes once merged, as the text says
    (validation,) = validate(
        store, result.plan.repo.key, one_run_per_side(), "m01", backend="local", log=lambda *_: None
    )
    assert validation.status == "valid", validation.detail
    assert "tests/test_core.py::test_negative_amounts_round_towards_zero" in validation.fail_to_pass


def test_default_range_is_the_newest_feature_release_and_says_so(planned, repos, tmp_path):
    milestone_plan = planned["maintenance-branch"].plan
    assert (milestone_plan.from_ref, milestone_plan.to_ref) == (
        "1.0.0",
        "1.1.0",
    )  # 1.0.1 is a patch release, not a feature release
    assert milestone_plan.report.backport_entries == 1  # 1.0.1's entry: it came back in a maintenance merge
    assert "Negative amounts are rounded towards zero" in milestone_plan.milestones[0].description
    assert milestone_plan.report.entries_covered == milestone_plan.report.entries_citing == 3
    [note] = milestone_plan.notes
    assert "1.0.0 → 1.1.0" in note and "default_range_min_commits" in note
    # with a low minimum only the newest feature release is planned
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"planning": {"default_range_min_commits": 1}}))
    short = plan(Store(tmp_path / "s"), str(repos["off-mainline-tags"]), load_rules(rules_file)).plan
    assert (short.from_ref, short.to_ref) == ("v0.2.0", "v0.3.0") and "reaching back" in short.notes[0]


# ---- tags off the default branch's first-parent line ---------------------------------------------


def test_tags_off_the_default_branch_first_parent_line_plan_on_their_own_line(planned, repos, store):
    repo = repos["off-mainline-tags"]
    v010 = git(repo, "rev-parse", "v0.1.0^{commit}")
    assert v010 not in git(repo, "rev-list", "--first-parent", "HEAD").split()  # main took develop in as parent 2
    milestone_plan = plan(store, str(repo), load_rules(), from_ref="v0.1.0", to_ref="v0.3.0").plan
    assert milestone_plan.from_commit == v010 and not [w for w in milestone_plan.warnings if "fork point" in w]
    assert [milestone.source_prs for milestone in milestone_plan.milestones] == [[5], [6], [8], [9]]
    develop = git(repo, "rev-list", "--first-parent", "--reverse", "v0.1.0..v0.3.0").split()
    assert [c for milestone in milestone_plan.milestones for c in milestone.commits] == develop
    assert (
        planned["off-mainline-tags"].plan.milestones == milestone_plan.milestones
    )  # the default range is the same one


def test_a_from_ref_sharing_no_history_is_one_clear_line(repos, tmp_path, run_cli):
    repo = shutil.copytree(repos["off-mainline-tags"], tmp_path / "gauge")
    git(repo, "checkout", "-q", "--orphan", "elsewhere")
    git(repo, "commit", "-q", "--allow-empty", "-m", "unrelated root")
    git(repo, "tag", "v9.0.0")
    git(repo, "checkout", "-q", "main")
    with pytest.raises(PlanningError, match="--from v9.0.0 shares no history with v0.3.0's first-parent line"):
        plan(Store(tmp_path / "s"), str(repo), load_rules(), from_ref="v9.0.0", to_ref="v0.3.0")
    proc = run_cli("plan", str(repo), "--from", "v9.0.0", "--to", "v0.3.0")
    assert proc.returncode == 1 and "shares no history" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---- towncrier fragments apart from their code ------------------------------------------------------


def test_fragments_landing_apart_still_describe_their_feature_and_keep_its_tests(planned):
    result = planned["towncrier-apart"]
    milestone_plan = result.plan
    assert [milestone.title for milestone in milestone_plan.milestones] == [
        "Failed deliveries are retried with an exponential backoff",
        "Every delivery can return a receipt that says when and where it arrived",  # its fragment's line, whole
    ]
    m01, m02 = milestone_plan.milestones
    assert "Every delivery can return a receipt" in m02.description
    # the retries' tests were written by the commit that added the fragment, not by PR #21
    assert m01.acceptance_tests == [f"tests/test_retries.py::test_retries_{k}" for k in range(3)]
    assert not m01.excluded_tests
    assert "towncrier fragments" in milestone_plan.changelog_sources
    assert milestone_plan.report.entries_covered == milestone_plan.report.entries_citing == 2
    said = " ".join(_said(result)).lower()
    for chore in ("ubuntu", "mypy", "pre-commit", "3.13", "docs build"):
        assert chore not in said


# ---- squash-only histories without a changelog ----------------------------------------------------------


def test_squash_only_history_is_titled_and_typed_by_its_pull_requests(planned):
    result = planned["squash-only"]
    milestone_plan = result.plan
    assert milestone_plan.changelog_sources == []
    assert [(milestone.title, milestone.type) for milestone in milestone_plan.milestones] == [
        ("Import tallies from CSV files", "feature"),
        ("Keep counts when a tally is merged twice", "bug fix"),
        ("Split the reader into sources and parsers", "refactor"),
        ("Add a tally summary", "feature"),
    ]
    assert milestone_plan.report.type_mix == {"feature": 2, "bug fix": 1, "refactor": 1}
    assert milestone_plan.report.feature_titled == 4
    # without release notes, the PR descriptions (squash bodies) and commit bodies describe the milestones
    assert "Reads one tally per row; a header row names the columns." in milestone_plan.milestones[0].description
    assert "so a report reads at a glance" in milestone_plan.milestones[3].description  # a direct commit's own body
    ladders = [result.hints[milestone.id].levels for milestone in milestone_plan.milestones]
    assert "* parse rows" in ladders[0][2].content  # L2: what the PR description adds to the description
    assert ladders[1][2].empty and "no PR descriptions" in ladders[1][2].empty_reason  # it said nothing more
    assert ladders[0][1].empty and "commit message body" in ladders[0][1].empty_reason
    assert ladders[3][0].empty and ladders[3][1].empty  # nothing names or explains it beyond the description
    assert not any("bump" in text.lower() or "describe csv" in text.lower() for text in _said(result))


# ---- housekeeping-heavy histories -------------------------------------------------------------------------


def test_chores_never_title_describe_or_hint_a_milestone(planned, repos):
    result = planned["housekeeping-heavy"]
    milestone_plan = result.plan
    assert [milestone.title_source for milestone in milestone_plan.milestones] == ["changelog"] * 3
    assert milestone_plan.report.feature_titled == len(milestone_plan.milestones) == 3
    said = " ".join(_said(result)).lower()
    for chore in ("bump", "pre-commit", "ubuntu", "mypy", "ruff", "tox", "typo", "dependencies", "3.13"):
        assert chore not in said, chore
    # the chores ride along in the ground truth but not in the size: the reformat touches every module
    subjects = {
        git(repos["housekeeping-heavy"], "log", "-1", "--format=%s", c)
        for milestone in milestone_plan.milestones
        for c in milestone.commits
    }
    assert {"fix mypy findings", "Update ruff to 0.6 and reformat (#35)"} <= subjects
    assert all(not milestone.flags for milestone in milestone_plan.milestones)


def test_size_outliers_are_flagged_and_reported_by_the_expected_turns_rule(repos, tmp_path):
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"planning": {"expected_turns": {"target": [1, 2], "far_factor": 1.5}}}))
    milestone_plan = plan(Store(tmp_path / "s"), str(repos["squash-only"]), load_rules(rules_file)).plan
    assert all("expected_turns_far_from_target" in milestone.flags for milestone in milestone_plan.milestones)
    assert [o.split(":")[0] for o in milestone_plan.report.size_outliers] == [
        milestone.id for milestone in milestone_plan.milestones
    ]
    assert all(milestone.expected_turns and milestone.expected_turns > 3 for milestone in milestone_plan.milestones)


# ---- the command line ------------------------------------------------------------------------------------------


def test_global_options_work_before_or_after_the_command(repos, tmp_path, run_cli):
    import os
    import subprocess
    import sys
    from pathlib import Path

    hf = str(Path(sys.executable).parent / "harnessforge")
    env = {**os.environ, "GITHUB_TOKEN": "", "COLUMNS": "200"}
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"planning": {"default_range_min_commits": 1}}))
    after = subprocess.run(
        [hf, "plan", str(repos["off-mainline-tags"]), "--store", str(tmp_path / "a"), "--rules", str(rules_file)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert after.returncode == 0, after.stderr
    saved = Store(tmp_path / "a").load_plan("harnessforge-examples__gauge")
    assert saved.from_ref == "v0.2.0"  # --rules took effect although it came after the command
    equals = subprocess.run(
        [hf, "show", "harnessforge-examples__gauge", f"--store={tmp_path / 'a'}"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert equals.returncode == 0 and "v0.2.0 → v0.3.0" in equals.stdout
    missing = subprocess.run(
        [hf, "plan", str(repos["off-mainline-tags"]), "--store"], capture_output=True, text=True, env=env
    )
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "error: --store needs a value (e.g. --store DIR), before or after the command"
    )


def test_example_repo_builds_a_pattern_from_the_command_line(tmp_path, run_cli):
    proc = run_cli("example-repo", str(tmp_path / "tally"), "--pattern", "squash-only", check=True)
    assert proc.stdout.strip() == str(tmp_path / "tally")
    assert git(tmp_path / "tally", "tag", "--list") == "v0.1.0\nv0.2.0"
    bad = run_cli("example-repo", str(tmp_path / "x"), "--pattern", "nope")
    assert bad.returncode == 1 and "use one of" in bad.stderr and "squash-only" in bad.stderr


def test_a_changelog_that_cannot_be_parsed_is_a_warning_and_the_plan_goes_on(repos, tmp_path):
    repo = shutil.copytree(repos["towncrier-apart"], tmp_path / "beacon")
    (repo / "releasenotes" / "notes").mkdir(parents=True)
    (repo / "releasenotes" / "notes" / "broken-0a1b.yaml").write_text("features:\n  - [unclosed\n")
    (repo / "NEWS.rst").write_bytes(b"\x00\x01\x02 binary \xff\xfe")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add release notes that do not parse")
    git(repo, "tag", "1.2.0")
    milestone_plan = plan(Store(tmp_path / "s"), str(repo), load_rules(), from_ref="1.0.0", to_ref="1.2.0").plan
    warned = " ".join(milestone_plan.warnings)
    assert "broken-0a1b.yaml" in warned and "NEWS.rst" in warned
    assert [milestone.title for milestone in milestone_plan.milestones][:1] == [
        "Failed deliveries are retried with an exponential backoff"
    ]
