"""Chains without dead links (issue 31): a milestone validation finds untested merges into the next one,
whose task then holds its work and is validated again; the chain and the report show the merge.

The pattern: wrapx v0.4.0..v0.6.0 cut at each release. v0.5.0 ("Faster wrapping", a test of what already
held) does not reproduce; v0.6.0 ("Indent the first line") has a test that fails at base.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from pydantic import ValidationError

from harnessforge.agents.oracle import OracleAgent
from harnessforge.envs.environment import validate
from harnessforge.errors import EnvError, PlanningError
from harnessforge.examples.patterns import build_pattern
from harnessforge.harness import chain
from harnessforge.harness.navigator import Navigator
from harnessforge.mining.merging import merge_untested
from harnessforge.mining.planner import plan
from harnessforge.models import MilestonePlan, Validation
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import cli_command, one_run_per_side

INDENT = "tests/test_wrap.py::test_the_first_line_is_indented"


def per_release(**environments):
    """The shipped rules cutting a milestone at each of the pattern's small releases, one run per side."""
    rules = load_rules()
    planning = rules.planning.model_copy(update={"min_source_files": 1, "min_lines": 5})
    rules = one_run_per_side(rules.model_copy(update={"planning": planning}))
    return rules.model_copy(update={"environments": rules.environments.model_copy(update=environments)})


def validate_and_merge(store: Store, key: str, rules) -> list:
    validate(store, key, rules, backend="local", log=lambda *_: None)

    def again(milestone_id: str):
        (validation,) = validate(store, key, rules, milestone=milestone_id, backend="local", log=lambda *_: None)
        return validation

    return merge_untested(store, key, rules, again, log=lambda *_: None)


@pytest.fixture(scope="module")
def wrapx(tmp_path_factory):
    root = tmp_path_factory.mktemp("merges")
    return build_pattern("private-import", root / "wrapx")


@pytest.fixture(scope="module")
def merged(wrapx, tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("merged") / "store")
    rules = per_release()
    planned = plan(store, str(wrapx), rules, from_ref="v0.4.0", to_ref="v0.6.0").plan
    assert [milestone.release for milestone in planned.milestones] == ["v0.5.0", "v0.6.0"]
    key = planned.repo.key
    validations = validate_and_merge(store, key, rules)
    return store, key, planned, validations


def test_an_untested_milestone_merges_into_the_next_whose_task_holds_its_work(merged):
    store, key, before, (revalidated,) = merged
    after = store.load_plan(key)
    first, second = after.milestones
    # the untested one stays for the record, with its own verdict and files
    assert (first.status, first.merged_into) == ("merged", "m02")
    assert store.load_validation(key, "m01").status == "does_not_reproduce"
    assert first.base_commit == before.milestones[0].base_commit
    # the next one starts from its base, holds its work and release note, and is validated again
    assert second.base_commit == before.milestones[0].base_commit
    assert second.verify_commit == before.milestones[1].verify_commit
    assert [(part.id, part.status) for part in second.merged] == [("m01", "does_not_reproduce")]
    assert second.commits == before.milestones[0].commits + before.milestones[1].commits
    assert revalidated.milestone_id == "m02" and revalidated.status == "valid"
    assert second.status == "valid" and second.fail_to_pass == [INDENT]
    assert "each line is joined once" in second.task() and "indents the first line" in second.task()
    # the merged work is described, but its untested feature never heads the title (nothing could grade it)
    assert second.title == '`wrap(text, width, indent="  ")` indents the first line'
    assert [headline.text for headline in second.headlines] == [second.title] and not revalidated.untested_headlines
    ground_truth, _ = store.read_patches(key, "m02")
    assert b"words, size = [word], len(word)" in ground_truth  # m01's code is part of the task's solution
    assert after.report.merged == ["m01 into m02 (does_not_reproduce)"]


def test_the_chain_runs_the_merged_task_and_merging_again_changes_nothing(merged, tmp_path):
    store, key, _, _ = merged
    copy = Store(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    plan_before = copy.plan_file(key).read_bytes()
    assert merge_untested(copy, key, per_release(), lambda milestone_id: pytest.fail("validated again")) == []
    assert copy.plan_file(key).read_bytes() == plan_before
    with pytest.raises(EnvError, match="m01 is merged into m02 .*validate that one"):
        validate(copy, key, per_release(), milestone="m01", backend="local", log=lambda *_: None)
    logs: list[str] = []
    summaries = Navigator(
        copy, key, OracleAgent(), per_release(), run_id="merged", backend="local", log=logs.append
    ).run()
    assert [(summary.milestone_id, summary.status) for summary in summaries] == [("m02", "PASS")]
    assert any("m01: merged into m02" in line for line in logs)
    assert chain.chain_predecessor(copy, copy.load_plan(key), "m02", "merged") is None


def test_with_no_verdict_to_merge_the_untested_milestone_stays_as_it_was(wrapx, tmp_path):
    store = Store(tmp_path / "store")
    rules = per_release(merge_untested=[])
    key = plan(store, str(wrapx), rules, from_ref="v0.4.0", to_ref="v0.6.0").plan.repo.key
    assert validate_and_merge(store, key, rules) == []
    assert [milestone.status for milestone in store.load_plan(key).milestones] == ["does_not_reproduce", "valid"]


def test_a_plan_the_rules_no_longer_cut_is_not_merged_and_nothing_is_lost(merged, tmp_path):
    store, key, _, _ = merged
    copy = Store(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    planned = copy.load_plan(key)
    undone = planned.model_copy(
        update={"milestones": [m.model_copy(update={"status": None}) for m in planned.milestones]}
    )
    undone.milestones[0] = undone.milestones[0].model_copy(update={"status": "does_not_reproduce", "merged_into": None})
    undone.milestones[1] = undone.milestones[1].model_copy(update={"base_commit": undone.milestones[0].verify_commit})
    copy.write_model(copy.plan_file(key), MilestonePlan.model_validate(undone.model_dump()))
    before = copy.plan_file(key).read_bytes()
    with pytest.raises(PlanningError, match="not what the rules cut today .* plan the repository again"):
        merge_untested(copy, key, load_rules(), lambda milestone_id: pytest.fail("validated"))  # default sizes
    assert copy.plan_file(key).read_bytes() == before


def test_a_plan_keeps_merges_in_order(merged):
    store, key, _, _ = merged
    data = store.load_plan(key).model_dump()
    last = {
        **data,
        "milestones": [data["milestones"][0], {**data["milestones"][1], "status": "merged", "merged_into": "m03"}],
    }
    with pytest.raises(ValidationError, match="the last milestone m02 cannot be merged: no milestone follows it"):
        MilestonePlan.model_validate(last)
    elsewhere = {**data, "milestones": [{**data["milestones"][0], "merged_into": "m05"}, data["milestones"][1]]}
    with pytest.raises(ValidationError, match="merged milestone m01 must be merged into m02, the task after it"):
        MilestonePlan.model_validate(elsewhere)


def test_the_validate_command_merges_and_shows_it(wrapx, tmp_path):
    store = Store(tmp_path / "store")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text("planning:\n  min_source_files: 1\n  min_lines: 5\nenvironments:\n  repeats: 1\n")
    planned = subprocess.run(
        cli_command(store, f"plan {wrapx} --from v0.4.0 --to v0.6.0", rules=rules_file), capture_output=True, text=True
    )
    assert planned.returncode == 0, planned.stderr
    key = store.repo_keys()[0]
    validated = subprocess.run(
        cli_command(store, f"validate {key} --sandbox local", rules=rules_file),
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},  # the table's rows on one line each
    )
    assert validated.returncode == 0, validated.stderr
    said = " ".join((validated.stderr + validated.stdout).split())  # the log, then the table
    assert "m01: does_not_reproduce, no FAIL_TO_PASS test: merged into m02, validated again" in said
    assert "does_not_reproduce, merged into m02" in said  # the table
    assert store.load_plan(key).milestone("m02").status == "valid"


def test_in_dagster_the_untested_milestones_partition_merges_it_and_validates_the_next(wrapx, tmp_path):
    import dagster as dg

    from harnessforge_assets.environments import validated_milestones
    from harnessforge_assets.partitions import repo_milestone_key
    from resources import GitHubResource, SandboxResource, StoreResource

    store = Store(tmp_path / "store")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text("planning:\n  min_source_files: 1\n  min_lines: 5\nenvironments:\n  repeats: 1\n")
    key = plan(store, str(wrapx), per_release(), from_ref="v0.4.0", to_ref="v0.6.0").plan.repo.key
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [key])
    instance.add_dynamic_partitions("milestone", ["m01", "m02"])
    resources = {
        "store": StoreResource(root=str(store.root), rules_path=str(rules_file)),
        "sandbox": SandboxResource(backend="local"),
        "github": GitHubResource(),
    }

    def materialize_m01() -> dict:
        partition = repo_milestone_key(key, "m01")
        result = dg.materialize([validated_milestones], instance=instance, partition_key=partition, resources=resources)
        assert result.success
        return result.get_asset_materialization_events()[0].materialization.metadata

    meta = materialize_m01()
    assert meta["status"].value == "does_not_reproduce" and meta["merged_into"].value == "m02"
    assert store.load_plan(key).milestone("m02").status == "valid" and store.load_plan(key).milestone("m02").merged
    validated_at = store.validation_file(key, "m02").stat().st_mtime_ns
    again = materialize_m01()  # a merged milestone's partition keeps its verdict: nothing runs, nothing merges
    assert again["status"].value == "does_not_reproduce" and again["merged_into"].value == "m02"
    assert store.validation_file(key, "m02").stat().st_mtime_ns == validated_at


def test_a_merge_that_costs_the_next_milestone_its_tests_is_undone_and_the_untested_one_kept_apart(tmp_path):
    """Three small unrelated features (tests/test_cohesion.py's repository): m01 does not reproduce; merged, its
    carrier m02, valid alone, is untested (typeguard's m11-m12 introduced the bug m13 fixes: from m11's base, m13's
    test passes). The merge is undone: m02 stays the task it was, m01 stays apart (the chain skips it) and is not
    merged again. The verdicts here are set as `validate` would."""
    from tests.test_cohesion import FEATURES, build

    store = Store(tmp_path / "store")
    key = plan(store, build(tmp_path / "calc", FEATURES), load_rules(), "v0.1.0", "v0.2.0").plan.repo.key
    before = store.load_plan(key)
    store.update_milestone(key, before.milestone("m01").model_copy(update={"status": "does_not_reproduce"}))
    for milestone_id in ("m02", "m03"):
        store.update_milestone(key, before.milestone(milestone_id).model_copy(update={"status": "valid"}))
        store.validation_file(key, milestone_id).write_text(
            Validation(milestone_id=milestone_id, status="valid", repeats=1).model_dump_json()
        )
    ground_truth = store.read_patches(key, "m02")
    asked: list[str] = []

    def revalidate(milestone_id: str):
        asked.append(milestone_id)
        status = "no_fail_to_pass" if milestone_id == "m02" else "valid"
        store.update_milestone(key, store.load_milestone(key, milestone_id).model_copy(update={"status": status}))
        if milestone_id == "m02":  # meanwhile a parallel validation writes m03's verdict: the undo keeps it
            store.update_milestone(key, store.load_milestone(key, "m03").model_copy(update={"flags": ["parallel"]}))
            store.validation_file(key, "m03").write_text(
                Validation(milestone_id="m03", status="valid", repeats=2).model_dump_json()
            )
        return Validation(milestone_id=milestone_id, status=status, repeats=1)

    assert merge_untested(store, key, load_rules(), revalidate, log=lambda *_: None) == []  # the undone verdict too
    assert store.load_plan(key).milestone("m03").flags == ["parallel"]
    assert store.load_validation(key, "m03").repeats == 2
    after = store.load_plan(key)
    assert asked == ["m02"]  # once: m01 is not merged again
    assert [(m.status, m.merged_into, m.flags.count("kept_apart")) for m in after.milestones] == [
        ("does_not_reproduce", None, 1),
        ("valid", None, 0),
        ("valid", None, 0),
    ]
    assert after.milestone("m02").base_commit == before.milestone("m02").base_commit
    assert store.read_patches(key, "m02") == ground_truth and store.load_validation(key, "m02").status == "valid"
    assert after.report.merged == [] and not after.milestone("m01").is_task
    assert merge_untested(store, key, load_rules(), revalidate, log=lambda *_: None) == [] and asked == ["m02"]
    # the rule off: the carrier, untested, merges on into m03 (the behaviour before)
    store.update_milestone(key, after.milestone("m01").model_copy(update={"flags": []}))
    merge_untested(store, key, per_release(keep_valid_carriers=False), revalidate, log=lambda *_: None)
    assert asked == ["m02", "m02", "m03"]
    assert [(m.status, m.merged_into) for m in store.load_plan(key).milestones] == [
        ("merged", "m03"),
        ("merged", "m03"),
        ("valid", None),
    ]
