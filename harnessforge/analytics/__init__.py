"""Stage 3 analytics: trajectories loaded into DuckDB and the `dbt_like_sql/` models built over them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..rules import Rules
from ..store import Store
from .database import connect, writing
from .load import LoadReport, load
from .sqlmodels import SQL_DIR, BuiltModel, build, discover, hashes


@dataclass
class AnalyticsReport:
    load: LoadReport
    models: list[BuiltModel]


def analyze(store: Store, rules: Rules, progress=None) -> AnalyticsReport:
    """Load new or changed trajectories, then rebuild every SQL model with the rules' thresholds."""
    with connect(store) as con, writing(store):
        loaded = load(store, con, progress)
        models = build(con, rules.analytics.model_dump())
    return AnalyticsReport(loaded, models)


def analytics_version(rules: Rules) -> str:
    """What the analytics outputs depend on: every model's SQL and the thresholds it reads."""
    digest = hashes(discover(SQL_DIR), rules.analytics.model_dump())
    return hashlib.sha256(json.dumps(digest, sort_keys=True).encode()).hexdigest()[:12]


def distill_version(rules: Rules) -> str:
    """What distilled rows depend on: the analytics above and the `distill` rules."""
    parts = [analytics_version(rules), json.dumps(rules.distill.model_dump(mode="json"), sort_keys=True)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
