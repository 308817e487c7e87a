"""When assets materialize by themselves: the automation conditions every asset picks from.

A new release reaches the datasets with no click: the release sensor plans the repo, and each
later stage follows its upstream through Declarative Automation (the `harnessforge_automation`
sensor evaluates these conditions; it is on from the start). Two conditions, one per kind of stage:

- `follows_upstream`: Dagster's `eager()`, gated by the upstream blocking checks. A partition runs
  when it becomes missing or a partition it reads gets a new data version, once nothing it reads is
  missing or still running. Costly stages (images, agent runs) use it: a rule change only marks
  them unsynced, and a person backfills (README, "Rules changed").
- `rebuilds_on_new_rules`: the same, and a materialized partition whose code version changed
  (its rules or SQL) rebuilds once. Cheap, deterministic stages (analytics, distillation) use it;
  partitions never materialized are left alone (`code_version_changed` alone would take all).
- `gathers_upstream`: for an asset that reads many partitions of its upstream (the datasets, the
  repo rollups): it runs when any of them updates, once none is running. Not `eager()`: the repo x
  milestone cross product always has keys a plan lacks, which stay missing forever, and `eager()`
  waits for missing upstream keys; it also rebuilds when its code version changes. Only its own
  request resets it, not its materialization (as `since_last_handled()` does): a run that started
  before an upstream update may end after it, and must not count as having read it. (It can start
  beside upstream partitions the same tick requests, in runs of their own: `will_be_requested()`
  only sees the ones that share its run. It then runs once more after them.)
"""

import dagster as dg

AC = dg.AutomationCondition


def follows_upstream() -> dg.AutomationCondition:
    return (AC.eager() & AC.all_deps_blocking_checks_passed()).with_label("follows upstream")


def rebuilds_on_new_rules() -> dg.AutomationCondition:
    changed = AC.code_version_changed().since_last_handled() & ~AC.missing() & ~AC.any_deps_missing()
    rebuild = changed & ~AC.any_deps_in_progress() & ~AC.in_progress()
    return (follows_upstream() | rebuild.with_label("code version changed")).with_label("follows upstream or rules")


def gathers_upstream() -> dg.AutomationCondition:
    requested = (AC.newly_requested() | AC.initial_evaluation()).with_label("requested")
    updated = (AC.any_deps_updated() | AC.code_version_changed()).since(requested)
    return (updated & ~AC.any_deps_in_progress() & ~AC.in_progress()).with_label("gathers upstream")
