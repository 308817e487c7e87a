"""The invariants behind the Dagster asset checks: each one passes on good artifacts and names the
problem on bad ones."""

import json
import shutil

from harnessforge.analytics.load import connect
from harnessforge.checks import dataset_problems, plan_problems, trajectory_problems, unreviewed_cheating
from harnessforge.distill import distill
from harnessforge.models.distill import Review
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import explore
from tests.trajectories import GROUND_TRUTH, CraftedRun

TEST_EDIT = (
    "diff --git a/tests/test_app.py b/tests/test_app.py\n--- a/tests/test_app.py\n+++ b/tests/test_app.py\n"
    "@@ -1 +1 @@\n-assert run([]) == []\n+assert True\n"
)


def test_plan_problems_find_a_broken_chain_and_a_patch_that_does_not_apply(planned, tmp_path):
    source, result = planned
    store = Store(tmp_path / "store")
    shutil.copytree(source.root, store.root)
    key = result.plan.repo.key
    assert plan_problems(store, key) == []

    (store.milestone_dir(key, "m03") / "test.patch").write_text(TEST_EDIT)  # not what m03's base has
    (problem,) = plan_problems(store, key)
    assert problem.startswith("m03: applying a patch to"), problem

    # a hand-edited plan whose chain has a gap
    path = store.repo_dir(key) / "plan.json"
    data = json.loads(path.read_text())
    data["milestones"][1]["base_commit"] = data["milestones"][0]["base_commit"]
    path.write_text(json.dumps(data))
    (problem,) = plan_problems(store, key)
    assert "milestone m02 base" in problem and "!= previous verify" in problem, problem


def test_trajectory_problems_refuse_a_pass_that_credited_a_test_edit(tmp_path):
    store, rules = Store(tmp_path / "store"), load_rules()
    explore(CraftedRun(store, "clean")).say().edit(sha="c1").say().test(1, 0).finish("PASS", GROUND_TRUTH)
    explore(CraftedRun(store, "cheat")).say().edit(sha="t1").say().test(1, 0).finish("PASS", GROUND_TRUTH + TEST_EDIT)
    assert trajectory_problems(store.milestone_run("acme__app", "clean", "m01").dir, rules) == []
    mdir = store.milestone_run("acme__app", "cheat", "m01").dir
    assert trajectory_problems(mdir, rules) == [
        "test-file edits were graded as part of the solution: tests/test_app.py"
    ]
    # the Verifier dropped it before grading: nothing was credited
    report = json.loads((mdir / "test_results.json").read_text())
    (mdir / "test_results.json").write_text(json.dumps({**report, "excluded_files": ["tests/test_app.py"]}))
    assert trajectory_problems(mdir, rules) == []
    # a damaged log line in the middle is a schema problem, and a missing summary is one too
    lines = (mdir / "trajectory.jsonl").read_text().splitlines()
    (mdir / "trajectory.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    assert "trajectory.jsonl" in trajectory_problems(mdir, rules)[0]
    (mdir / "trajectory.jsonl").write_text("\n".join(lines) + "\n")
    (mdir / "summary.json").unlink()
    assert "summary.json: unreadable" in trajectory_problems(mdir, rules)[0]


def test_every_cheating_flag_needs_a_review_that_rejects_it(tmp_path):
    store, rules = Store(tmp_path / "store"), load_rules()
    run = explore(CraftedRun(store, "probe")).say().bash("git log --all --oneline | head", "abc123 fix")
    run.say().edit(sha="g1").say().test(1, 0).finish("PASS", GROUND_TRUTH)
    distill(store, rules, log=lambda *_: None)
    reviews = [Review.model_validate_json(x) for x in store.distilled_file("reviews").read_text().splitlines()]
    with connect(store) as con:
        assert unreviewed_cheating(con, reviews, "acme__app", "m01") == []  # the Reviewer rejected it
        passed = [x.model_copy(update={"discard_reasons": []}) for x in reviews]
        assert unreviewed_cheating(con, passed, "acme__app", "m01") == [
            "run probe: 1 cheating probe(s) but no review rejects it"
        ]


def test_dataset_problems_find_synthetic_rows_and_repeated_ids(tmp_path):
    out = tmp_path / "datasets"
    (out / "dpo").mkdir(parents=True)
    (out / "dpo" / "trl.jsonl").write_text('{"id": "a", "synthetic": false}\n{"id": "b", "synthetic": false}\n')
    (out / "instances.jsonl").write_text('{"instance_id": "x-1"}\n')
    assert dataset_problems(out, allow_synthetic=False) == []
    (out / "dpo" / "trl.jsonl").write_text('{"id": "a", "synthetic": true}\n{"id": "a", "synthetic": false}\n')
    (out / "instances.jsonl").write_text('{"instance_id": "x-1"}\n{"instance_id": "x-1"}\n')
    assert dataset_problems(out, allow_synthetic=False) == [
        "dpo/trl.jsonl: 1 synthetic row(s), and synthetic rows are not allowed",
        "dpo/trl.jsonl: duplicate id(s) a",
        "instances.jsonl: duplicate id(s) x-1",
    ]
    assert dataset_problems(out, allow_synthetic=True) == [
        "dpo/trl.jsonl: duplicate id(s) a",
        "instances.jsonl: duplicate id(s) x-1",
    ]
