"""Dagster sensors: new upstream releases start a repo's planning; new trajectories start distillation.
`harnessforge_assets.definitions` collects them from here."""

from .distill import distill_sensor
from .releases import new_release_sensor

__all__ = ["distill_sensor", "new_release_sensor"]
