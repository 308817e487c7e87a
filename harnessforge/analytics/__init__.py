"""Stage 3 analytics: trajectories loaded into DuckDB and the `dbt_like_sql/` models built over them."""

from __future__ import annotations

from dataclasses import dataclass

from ..rules import Rules
from ..store import Store
from .load import LoadReport, connect, load
from .sqlmodels import BuiltModel, build


@dataclass
class AnalyticsReport:
    load: LoadReport
    models: list[BuiltModel]


def analyze(store: Store, rules: Rules, progress=None) -> AnalyticsReport:
    """Load new or changed trajectories, then rebuild every SQL model with the rules' thresholds."""
    with connect(store) as con:
        loaded = load(store, con, progress)
        models = build(con, rules.analytics.model_dump())
    return AnalyticsReport(loaded, models)
