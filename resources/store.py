"""The store and the rules, as one Dagster resource (both are plain paths in config)."""

from __future__ import annotations

from typing import Optional

import dagster as dg
from pydantic import Field

from harnessforge.rules import Rules, load_rules
from harnessforge.store import Store, default_store_dir


class StoreResource(dg.ConfigurableResource):
    """Where HarnessForge keeps its artifacts, and which rules file overrides the defaults."""

    root: str = Field(
        default_factory=lambda: str(default_store_dir().resolve()),
        description="Store directory (default: $HARNESSFORGE_HOME or ./forge_store)",
    )
    rules_path: Optional[str] = Field(None, description="YAML overriding rule thresholds")

    def store(self) -> Store:
        return Store(self.root)

    def rules(self) -> Rules:
        return load_rules(self.rules_path)
