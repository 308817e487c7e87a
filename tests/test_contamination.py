"""Contamination risk on every distilled row: the milestone's commit dates against the Dev model's cutoff."""

import shutil
from datetime import date, datetime, timedelta

from harnessforge.distill import distill
from harnessforge.distill.contamination import model_cutoff, risk
from harnessforge.distill.outputs import SFT, read_distilled
from harnessforge.gitio import GitRepo
from harnessforge.rules import ContaminationRules, load_rules
from harnessforge.store import Store
from tests.test_analytics import OWN_DIFF, explore
from tests.trajectories import CraftedRun


def test_the_risk_follows_the_solution_date_against_the_cutoff():
    rules = ContaminationRules(
        margin_days=90, cutoffs={"claude": date(2024, 1, 1), "claude-sonnet-4-5": date(2025, 7, 31)}
    )
    assert model_cutoff("claude-sonnet-4-5-20250929", rules) == date(2025, 7, 31)  # the longest prefix
    assert model_cutoff("claude-3-haiku", rules) == date(2024, 1, 1)
    assert model_cutoff("gpt-4o", rules) is None and model_cutoff("", rules) is None
    cutoff = date(2025, 7, 31)
    assert risk("2025-07-30T12:00:00+00:00", cutoff, 90) == "high"
    assert risk("2025-08-01T00:00:00+00:00", cutoff, 90) == "medium"
    assert risk("2025-12-01T00:00:00+00:00", cutoff, 90) == "low"
    assert risk(None, cutoff, 90) == risk("2025-08-01T00:00:00+00:00", None, 90) == "unknown"


def test_every_row_carries_the_dates_and_the_risk_of_its_model(planned, tmp_path):
    source, result = planned
    store = Store(tmp_path / "store")
    shutil.copytree(source.root, store.root)
    key, milestone = result.plan.repo.key, result.plan.milestones[0]
    solved = datetime.fromisoformat(
        GitRepo(store.git_cache(key)).text("log", "-1", "--format=%cI", milestone.verify_commit)
    ).date()
    cutoffs = {
        "trained-after": solved + timedelta(days=200),  # it may have seen the solution
        "just-before": solved - timedelta(days=30),  # within the margin
        "long-before": solved - timedelta(days=400),
    }
    for model in (*cutoffs, "unlisted"):
        run = explore(CraftedRun(store, f"run-{model}", mid=milestone.id, repo=key, model=model))
        run.say().edit(sha="e1").say().test(1, 0).finish("PASS", OWN_DIFF)
    rules = load_rules()
    contamination = rules.distill.contamination.model_copy(update={"cutoffs": cutoffs})
    rules = rules.model_copy(update={"distill": rules.distill.model_copy(update={"contamination": contamination})})
    warned: list[str] = []
    distill(store, rules, log=warned.append)
    # issue 33: a model without a cutoff is said, once
    assert [line for line in warned if "no training-data cutoff" in line] == [
        "warning: no training-data cutoff for model unlisted: its rows' contamination_risk is unknown; add it to the "
        "rules' distill.contamination.cutoffs"
    ]
    by_model = {row.provenance.model: row.provenance for row in read_distilled(store, SFT)}
    expected = {"trained-after": "high", "just-before": "medium", "long-before": "low", "unlisted": "unknown"}
    assert {model: p.contamination_risk for model, p in by_model.items()} == expected
    first = by_model["trained-after"]
    assert (
        first.verify_commit_date.startswith(solved.isoformat())
        and first.model_cutoff == cutoffs["trained-after"].isoformat()
    )
    assert first.base_commit_date <= first.verify_commit_date and first.repo_created_at <= first.base_commit_date
    assert by_model["unlisted"].model_cutoff is None and by_model["unlisted"].verify_commit_date
    # issue 32: a damaged milestone.json silently nulled the dates; its plan's copy is read instead, and said
    damaged = store.milestone_file(key, milestone.id)
    damaged.write_text('{"id": ')
    said: list[str] = []
    distill(store, rules, log=said.append)
    again = {row.provenance.model: row.provenance for row in read_distilled(store, SFT)}
    assert again["trained-after"].verify_commit_date == first.verify_commit_date
    assert [line for line in said if str(damaged) in line and "plan.json" in line]


def test_a_run_of_a_repository_not_in_the_store_is_unknown(tmp_path):
    store = Store(tmp_path / "store")
    explore(CraftedRun(store, "lonely", model="claude-sonnet-4-5")).say().edit(sha="x").say().test(1, 0).finish(
        "PASS", OWN_DIFF
    )
    distill(store, load_rules(), log=lambda *_: None)
    (row, *_) = read_distilled(store, SFT)
    assert row.provenance.contamination_risk == "unknown" and row.provenance.verify_commit_date is None


def test_every_priced_and_default_model_has_a_cutoff():
    """Issue 33: the default Dev models had no cutoff, so their rows said `unknown`."""
    from harnessforge.agents.factory import DEFAULT_MODELS
    from harnessforge.agents.pricing import PRICES

    rules = load_rules().distill.contamination
    models = {*PRICES, *(model.rsplit("/", 1)[-1] for model in DEFAULT_MODELS.values())}
    assert [model for model in sorted(models) if model_cutoff(model, rules) is None] == []
    assert model_cutoff("claude-sonnet-4-5-20250929", rules) == date(2025, 7, 31)
    assert model_cutoff("gpt-4o-mini", rules) == model_cutoff("gpt-4o", rules)


def test_a_synthetic_run_read_the_solution_so_its_risk_is_high(planned, tmp_path):
    """The offline oracle reads the ground truth: its rows are as contaminated as rows can be (the demo's rows)."""
    source, result = planned
    store = Store(tmp_path / "store")
    shutil.copytree(source.root, store.root)
    key, milestone = result.plan.repo.key, result.plan.milestones[0]
    run = explore(CraftedRun(store, "oracle", mid=milestone.id, repo=key, model="oracle-v1", synthetic=True))
    run.say().edit(sha="e1").say().test(1, 0).finish("PASS", OWN_DIFF)
    warned: list[str] = []
    distill(store, load_rules(), log=warned.append)
    (row, *_) = read_distilled(store, SFT)
    assert row.provenance.contamination_risk == "high" and not [line for line in warned if "cutoff" in line]
