"""Dagster sensors: new upstream releases start a repo's planning (`new_release_sensor`); every later
stage follows by Declarative Automation, evaluated by `automation_sensor`.
`harnessforge_assets.definitions` collects them from here."""

from .automation import automation_sensor
from .releases import new_release_sensor

__all__ = ["automation_sensor", "new_release_sensor"]
