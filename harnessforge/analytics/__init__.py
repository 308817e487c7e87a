"""Stage 3 analytics: trajectories loaded into DuckDB and the `dbt_like_sql/` models built over them.

Two ways, same tables: `analyze` loads what changed and rebuilds every model whole (the CLI);
`load_milestones`, `build_milestones` and `build_repos` do the same for some milestones (or repos)
only, reading and writing their rows alone (the Dagster partitions; `analyze_milestones` is the three
in a row). A new milestone run then costs its milestone's share of the store, not the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..rules import Rules
from ..store import Store
from .database import connect, transaction, writing
from .load import LoadReport, Milestone, events_of, load, load_version, loaded, source_stats
from .slices import Slice, build_slices, whole_stats
from .sqlmodels import MILESTONE, REPO, SQL_DIR, BuiltModel, SliceStats, build, discover, hashes


@dataclass
class AnalyticsReport:
    load: LoadReport
    models: list[BuiltModel]


@dataclass
class MilestonesLoad:
    """A load of some milestones: the report, those that have trajectories now (-> how many of their
    lines were left out), and per source (`raw_events`, ...) each milestone's rows and data version."""

    report: LoadReport
    present: dict[Milestone, int]
    sources: dict[str, dict[Milestone, tuple[int, str]]] = field(default_factory=dict)


@dataclass
class SliceBuild:
    """A build of some milestones' (or repos') rows: each model built, and the keys that have
    trajectories loaded (a key without is a no-op to the Dagster assets)."""

    models: list[BuiltModel]
    present: set[tuple[str, ...]]


def analyze(store: Store, rules: Rules, progress=None) -> AnalyticsReport:
    """Load new or changed trajectories, then rebuild every SQL model with the rules' thresholds."""
    with connect(store) as con, writing(store):
        loaded_now = load(store, con, progress)
        models = build(con, rules.analytics.model_dump())
    return AnalyticsReport(loaded_now, models)


def load_milestones(store: Store, milestones: Iterable[Milestone], progress=None) -> MilestonesLoad:
    """Load the trajectories of these (repo key, milestone id) milestones alone."""
    where = Slice.of_milestones(milestones)
    with connect(store) as con, writing(store), transaction(con):
        report = load(store, con, progress, only=where.keys)
        return MilestonesLoad(report, loaded(con, where), source_stats(store, con, where))


def build_milestones(
    store: Store, rules: Rules, milestones: Iterable[Milestone], models: Iterable[str] | None = None
) -> SliceBuild:
    """Rebuild these milestones' rows of the models partitioned by milestone (or of `models`)."""
    return _build_slices(store, rules, Slice.of_milestones(milestones), models)


def build_repos(store: Store, rules: Rules, repos: Iterable[str], models: Iterable[str] | None = None) -> SliceBuild:
    """Rebuild these repos' rows of the models partitioned by repo (or of `models`)."""
    return _build_slices(store, rules, Slice.of_repos(repos), models)


def _build_slices(store: Store, rules: Rules, where: Slice, models: Iterable[str] | None) -> SliceBuild:
    with connect(store) as con, writing(store), transaction(con):
        events = {"raw_events": events_of(store, con, where)}
        built = build_slices(con, rules.analytics.model_dump(), where, models, sources=events)
        return SliceBuild(built, set(loaded(con, where)))


def build_whole(store: Store, rules: Rules, models: Iterable[str] | None = None) -> SliceBuild:
    """Rebuild the models partitioned by nothing (or `models`) whole, each with one data version."""
    names = list(models) if models is not None else partitioned_models(())
    with connect(store) as con, writing(store), transaction(con):
        built = build(con, rules.analytics.model_dump(), only=names)
        stats = whole_stats(con, [model.name for model in built])
        present = {()} if con.execute("SELECT count(*) FROM hf_loads").fetchone()[0] else set()
    models_built = [replace(model, slices={(): SliceStats(*stats[model.name])}) for model in built]
    return SliceBuild(models_built, present)


def analyze_milestones(store: Store, rules: Rules, milestones: Iterable[Milestone]) -> AnalyticsReport:
    """What the Dagster assets run when these milestones' runs change: their load, their rows of every
    model partitioned by milestone, then their repos' rows of the models partitioned by repo."""
    milestones = sorted(set(milestones))
    loaded_now = load_milestones(store, milestones).report
    built = build_milestones(store, rules, milestones).models
    built += build_repos(store, rules, {repo for repo, _ in milestones}).models
    return AnalyticsReport(loaded_now, built)


def partitioned_models(grain: tuple[str, ...]) -> list[str]:
    """The models partitioned by `grain` (`MILESTONE`, `REPO`, or () for those rebuilt whole)."""
    return [model.name for model in discover(SQL_DIR).values() if model.partitioned_by == grain]


def model_versions(rules: Rules) -> dict[str, str]:
    """Each model's hash with these rules' thresholds: its Dagster code version."""
    return hashes(discover(SQL_DIR), rules.analytics.model_dump())


def analytics_version(rules: Rules) -> str:
    """What the analytics outputs depend on: every model's SQL and the thresholds it reads."""
    digest = model_versions(rules)
    return hashlib.sha256(json.dumps(digest, sort_keys=True).encode()).hexdigest()[:12]


def distill_version(rules: Rules) -> str:
    """What distilled rows depend on besides the analytics rows they read: the `distill` rules. (Those
    rows are assets with their own versions: a threshold reaches the distilled rows only where it
    changed the rows they read.)"""
    return hashlib.sha256(json.dumps(rules.distill.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:12]


__all__ = [
    "MILESTONE",
    "REPO",
    "AnalyticsReport",
    "MilestonesLoad",
    "SliceBuild",
    "analytics_version",
    "analyze",
    "analyze_milestones",
    "build_milestones",
    "build_repos",
    "build_whole",
    "distill_version",
    "load_milestones",
    "load_version",
    "model_versions",
    "partitioned_models",
]
