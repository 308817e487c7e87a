"""Contamination risk: could the Dev model have seen this milestone's solution while it was trained?

Every distilled row carries the repository's creation date, the milestone's base and verify commit
dates and the Dev model's training-data cutoff (the rules' `distill.contamination.cutoffs`, by the
longest model-name prefix). The risk is `high` when the verify commit (the solution) is older than
the cutoff, `medium` when it is newer by less than `margin_days` (cutoffs are fuzzy, and code spreads
through forks and mirrors), `low` when newer still, and `unknown` with no cutoff or no dates (an
unlisted model, which is warned about once; a run whose repository is not in the store). A synthetic
run (the offline oracle) read the solution itself: `high`.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from ..errors import ArtifactError, HarnessForgeError
from ..gitio import GitRepo
from ..rules import ContaminationRules
from ..store import Store


def with_contamination(runs: list, store: Store, rules: ContaminationRules, log=lambda message: None) -> None:
    """Set each run's provenance dates and risk (one git lookup per repository and milestone); `log` says when a
    damaged milestone.json was read from its plan instead."""
    dates: dict[tuple[str, str], tuple[str | None, str | None, str | None]] = {}
    unlisted = sorted(
        {
            run.provenance.model
            for run in runs
            if not run.provenance.synthetic and not model_cutoff(run.provenance.model, rules)
        }
    )
    for model in unlisted:
        log(
            f"warning: no training-data cutoff for model {model or '(none)'}: its rows' contamination_risk is unknown; "
            "add it to the rules' distill.contamination.cutoffs"
        )
    for run in runs:
        where = (run.provenance.repo, run.provenance.milestone_id)
        if where not in dates:
            dates[where] = _dates(store, *where, log)
        created, base, verify = dates[where]
        cutoff = model_cutoff(run.provenance.model, rules)
        update = {
            "repo_created_at": created,
            "base_commit_date": base,
            "verify_commit_date": verify,
            "model_cutoff": cutoff.isoformat() if cutoff else None,
            "contamination_risk": "high" if run.provenance.synthetic else risk(verify, cutoff, rules.margin_days),
        }
        run.provenance = run.provenance.model_copy(update=update)


def model_cutoff(model: str, rules: ContaminationRules) -> date | None:
    """The cutoff of the longest listed prefix of `model` (claude-sonnet-4-5-20250929 -> claude-sonnet-4-5)."""
    matches = [prefix for prefix in rules.cutoffs if model and model.startswith(prefix)]
    return rules.cutoffs[max(matches, key=len)] if matches else None


def risk(verify_commit_date: str | None, cutoff: date | None, margin_days: int) -> str:
    if cutoff is None or not verify_commit_date:
        return "unknown"
    solved = datetime.fromisoformat(verify_commit_date).date()
    if solved < cutoff:
        return "high"
    return "medium" if solved < cutoff + timedelta(days=margin_days) else "low"


def _dates(store: Store, key: str, milestone_id: str, log) -> tuple[str | None, str | None, str | None]:
    """(repository created, base commit, verify commit) as ISO dates; None where the store cannot say.
    The creation date is GitHub's when screening fetched it, else the first commit's."""
    if not store.git_cache(key).exists():
        return None, None, None
    try:
        milestone = _milestone(store, key, milestone_id, log)
        repo = GitRepo(store.git_cache(key))
        base, verify = (
            repo.text("log", "-1", "--format=%cI", c) for c in (milestone.base_commit, milestone.verify_commit)
        )
    except HarnessForgeError:
        return None, None, None
    created = None
    try:
        github = store.load_screening(key).github
        created = github.created_at.isoformat() if github and github.created_at else None
    except ArtifactError:
        pass
    if created is None:
        roots = repo.text("log", "--max-parents=0", "--format=%cI", milestone.base_commit).split()
        created = min(roots) if roots else None
    return created, base, verify


def _milestone(store: Store, key: str, milestone_id: str, log):
    """The milestone's file, or (damaged) its entry in the plan it was written from, said with its path."""
    try:
        return store.load_milestone(key, milestone_id)
    except ArtifactError as e:
        if not store.milestone_file(key, milestone_id).exists():
            raise
        log(f"{e}; its commits are read from {store.plan_file(key)}")
        return store.load_plan(key).milestone(milestone_id)
