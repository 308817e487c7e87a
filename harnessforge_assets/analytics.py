"""Stage 3 analytics as assets: the loaded trajectories and every SQL model of `dbt_like_sql/`.

- `raw_events`, `raw_milestones`, `raw_runs` (repo x milestone, one step): a milestone's trajectories
  loaded into Parquet and DuckDB, read from `raw_trajectories`' same partition.
- one asset per model that declares `-- partitioned_by: repo, milestone_id` (repo x milestone, one
  step for those selected): the milestone's rows rebuilt from its rows alone, tables swapped in,
  views kept views; lineage from the SQL's `ref()`s and `source()`s.
- `memorisation_rates` and any model partitioned by repo (repo): the repo's rows, from every
  milestone of it. A model with no `partitioned_by` would be one unpartitioned asset, rebuilt whole.

Each asset's code version is its model's hash (SQL, the thresholds it reads, its upstream hashes),
from the rules the code location passes in: a threshold change marks exactly the models that read
it and those below them. Each partition's data version is a hash of its rows, so a re-run that
changes nothing marks nothing below it unsynced, and one new milestone run changes only its own
partitions (and its repo's). The checks come from the models' declarations (`unique`, `one_row_per`),
one result per partition, blocking. Every step writes the DuckDB file: pool `duckdb`. A range of
partitions runs as one step (`BackfillPolicy.single_run()`), which rebuilds them in one pass.

Connections: through `harnessforge.analytics.database`, as the CLI's, not `dagster_duckdb`'s
`DuckDBResource` (always read-write, its own ~100 s lock backoff, no full-disk message), so a step
and a CLI run wait for each other the same way and fail with the same one line.
"""

import dagster as dg

from harnessforge.analytics import (
    MILESTONE,
    REPO,
    SliceBuild,
    build_milestones,
    build_repos,
    build_whole,
    load_milestones,
    load_version,
    model_versions,
)
from harnessforge.analytics.sqlmodels import SOURCES, SQL_DIR, SqlModel, discover, order
from harnessforge.distill.runs import ANALYTICS_READ
from harnessforge.errors import HarnessForgeError
from harnessforge.rules import Rules
from resources import StoreResource

from .automation import gathers_upstream, rebuilds_on_new_rules
from .events import check_evaluation, materialization
from .partitions import repo_milestone_key, repo_milestone_partitions, repo_partitions, split_repo_milestone
from .runs import raw_trajectories

AC = dg.AutomationCondition
GROUP = "analytics"
KINDS = {"duckdb", "sql"}
PARTITIONS = {MILESTONE: repo_milestone_partitions, REPO: repo_partitions, (): None}
STEP = {MILESTONE: "analytics_by_milestone", REPO: "analytics_by_repo", (): "analytics_whole"}
# The models the distilled assets read, per (repo, milestone): their `deps`, identity-mapped.
DISTILLED_READS = [dg.AssetKey(table) for table in ANALYTICS_READ]
SOURCE_DESCRIPTIONS = {
    "raw_events": "Every event of the milestone's runs, parsed once (keys, tool arguments and each event's "
    "neighbours computed at load), in Parquet under analytics/events/; a DuckDB view over the files.",
    "raw_milestones": "The milestone's finished runs: summary, what grading compared, the final diff and the "
    "ground truth.",
    "raw_runs": "The metadata of the runs that finished the milestone (agent, model, mode, harness profile).",
}


def with_its_asset() -> dg.AutomationCondition:
    """A check's: requested whenever its asset is (it runs in the asset's step anyway). So a model below a
    blocking check is requested in the same tick as the model above it, and the run stops it if the
    check fails, instead of automation waiting a tick per checked model."""
    return AC.any_deps_match(AC.will_be_requested()).with_label("with its asset")


def milestone_assets() -> list[str]:
    """The analytics assets partitioned by (repo, milestone), sources first: the ones a milestone's
    run of the distill job materializes with its distilled rows."""
    models = discover(SQL_DIR)
    return [*SOURCES, *(name for name in order(models) if models[name].partitioned_by == MILESTONE)]


def analytics_assets(rules: Rules) -> list:
    """The loading asset and one asset per SQL model, versioned by `rules` (the code location's)."""
    models = discover(SQL_DIR)
    digest = model_versions(rules)
    grains = sorted({model.partitioned_by for model in models.values()}, key=len, reverse=True)
    return [_load_asset(), *(_models_asset(models, digest, grain) for grain in grains)]


def _failure(e: HarnessForgeError) -> dg.Failure:
    return dg.Failure(description=str(e), allow_retries=False)


def _load_asset() -> dg.AssetsDefinition:
    @dg.multi_asset(
        name="analytics_load",
        specs=[
            dg.AssetSpec(
                name,
                group_name=GROUP,
                deps=[raw_trajectories],  # the same (repo, milestone): an identity mapping
                description=SOURCE_DESCRIPTIONS[name],
                code_version=load_version(),
                kinds={"duckdb", "parquet"},
                skippable=True,  # a milestone with no trajectory: a no-op, nothing materialized
                automation_condition=rebuilds_on_new_rules(),
            )
            for name in SOURCES
        ],
        partitions_def=repo_milestone_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool="duckdb",
        can_subset=True,  # a no-op yields nothing, its check no result; a subset records only what it selected
        check_specs=[
            dg.AssetCheckSpec(
                "lines_parse",
                asset="raw_events",
                partitions_def=repo_milestone_partitions,
                description="Every line of the milestone's trajectory.jsonl files is an event (a line that is "
                "not is left out, named in the materialization's metadata).",
            )
        ],
    )
    def analytics_load(context: dg.AssetExecutionContext, store: StoreResource):
        """Load the partitions' trajectories alone (their rows replaced, every other row left as it is)."""
        keys = [split_repo_milestone(key) for key in context.partition_keys]
        try:
            loaded = load_milestones(store.store(), keys)
        except HarnessForgeError as e:
            raise _failure(e) from None
        bad = {}
        for line in loaded.report.bad_lines:
            parts = line.path.split("/")
            bad.setdefault((parts[1], parts[3]), []).append(str(line))
        for key in keys:
            partition = str(repo_milestone_key(*key))
            if key not in loaded.present and not _was_materialized(context, "raw_events", partition):
                context.log.info(f"{partition}: no trajectory of this milestone is recorded: nothing to load (no-op)")
                continue
            files = [source for source in loaded.report.loaded if tuple(source.split("/")[1:4:2]) == key]
            for name in (name for name in SOURCES if dg.AssetKey(name) in context.selected_asset_keys):
                rows, version = loaded.sources[name][key]
                metadata = {"dagster/row_count": rows, "trajectories_loaded": len(files)}
                yield _recorded(context, name, partition, metadata, version)
            if dg.AssetKey("raw_events") not in context.selected_asset_keys:
                continue
            problems = bad.get(key, [])
            left_out = loaded.present.get(key, 0)
            metadata = {"lines_left_out": left_out, "lines": dg.MetadataValue.json(problems[:50])}
            yield _check(context, "raw_events", "lines_parse", partition, left_out == 0, metadata, blocking=False)

    return analytics_load


def _models_asset(models: dict[str, SqlModel], digest: dict[str, str], grain: tuple[str, ...]):
    names = [name for name in order(models) if models[name].partitioned_by == grain]
    partitions = PARTITIONS[grain]
    specs = [
        dg.AssetSpec(
            name,
            group_name=GROUP,
            deps=[*models[name].sources, *models[name].refs],
            description=f"{models[name].description} ({models[name].materialization}, dbt_like_sql/{name}.sql)",
            code_version=digest[name],
            kinds=KINDS,
            skippable=True,
            # a repo's rollup: not "no dependency missing", which never holds (its plan lacks some milestone keys)
            automation_condition=gathers_upstream() if grain == REPO else rebuilds_on_new_rules(),
            metadata={"materialization": models[name].materialization, "partitioned_by": ", ".join(grain) or "-"},
        )
        for name in names
    ]
    check_specs = [
        dg.AssetCheckSpec(
            check,
            asset=name,
            partitions_def=partitions,
            blocking=True,
            description=description,
            automation_condition=with_its_asset(),
        )
        for name in names
        for check, description in models[name].checks().items()
    ]

    @dg.multi_asset(
        name=STEP[grain],
        specs=specs,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run() if partitions else None,
        can_subset=True,  # the models selected (and their partitions) are rebuilt, the others read
        pool="duckdb",
        check_specs=check_specs or None,
    )
    def analytics_models(context: dg.AssetExecutionContext, store: StoreResource):
        """The partitions' rows of the selected models, in dependency order, each partition recorded with
        a hash of its rows and its checks."""
        rules = _rules(context, store)
        selected = [key.to_user_string() for key in context.selected_asset_keys]
        keys = _keys(context, grain)
        try:
            if grain == MILESTONE:
                built = build_milestones(store.store(), rules, keys, selected)
            elif grain == REPO:
                built = build_repos(store.store(), rules, [key for (key,) in keys], selected)
            else:
                built = build_whole(store.store(), rules, selected)
        except HarnessForgeError as e:
            raise _failure(e) from None
        yield from _events(context, built, keys, grain)

    return analytics_models


def _keys(context: dg.AssetExecutionContext, grain: tuple[str, ...]) -> list[tuple[str, ...]]:
    if grain == MILESTONE:
        return [split_repo_milestone(key) for key in context.partition_keys]
    if grain == REPO:
        return [(key,) for key in context.partition_keys]
    return [()]


def _partition(key: tuple[str, ...], grain: tuple[str, ...]) -> str | None:
    if grain == MILESTONE:
        return str(repo_milestone_key(*key))
    return key[0] if key else None


def _events(context: dg.AssetExecutionContext, built: SliceBuild, keys: list, grain: tuple[str, ...]):
    """Per model (in dependency order) and partition: its materialization, then its checks' results."""
    checks = {(key.asset_key.to_user_string(), key.name) for key in context.selected_asset_check_keys}
    for model in built.models:
        for key in keys:
            stats, partition = model.slices[key], _partition(key, grain)
            if key not in built.present and not stats.rows and not _was_materialized(context, model.name, partition):
                continue  # no trajectory of this partition: a no-op
            metadata = {"dagster/row_count": stats.rows, "rebuilt_whole": model.whole}
            yield _recorded(context, model.name, partition, metadata, stats.version)
            for check, problems in stats.problems.items():
                if (model.name, check) in checks:
                    metadata = {"problems": dg.MetadataValue.json(problems)}
                    yield _check(context, model.name, check, partition, not problems, metadata, blocking=True)


def _rules(context: dg.AssetExecutionContext, store: StoreResource) -> Rules:
    """The run's rules, refused when they give a model another hash than the code location recorded
    (the rules file changed since it loaded: reload it, then materialize)."""
    rules = store.rules()
    now = model_versions(rules)
    for key in context.selected_asset_keys:
        loaded = context.assets_def.code_versions_by_key.get(key)
        name = key.to_user_string()
        if loaded and name in now and now[name] != loaded:
            raise dg.Failure(
                description=f"{name}: the rules changed since the code location loaded (code version {loaded}, "
                f"the rules now give {now[name]}): reload the code location, then materialize",
                allow_retries=False,
            )
    return rules


def _was_materialized(context: dg.AssetExecutionContext, asset: str, partition: str | None) -> bool:
    """Has this partition a materialization (then an empty one now is a change to record)?"""
    records_filter = dg.AssetRecordsFilter(
        asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
    )
    return bool(context.instance.fetch_materializations(records_filter, limit=1).records)


def _recorded(context: dg.AssetExecutionContext, asset: str, partition: str | None, metadata: dict, data_version: str):
    """One partition's materialization. A step of one partition returns it as the asset's result (Dagster
    records where its inputs came from, and the steps after it in the run go on); a step of a range
    (a backfill) records each partition on its own instead, with its own data version (`events`):
    Dagster would record one result for every key of the range, keys without trajectories included.
    (Steps after a range step in the same run then do not run: a backfill runs each level as its own run.)"""
    if context.assets_def.partitions_def is None or len(context.partition_keys) == 1:
        return dg.MaterializeResult(asset_key=asset, metadata=metadata, data_version=dg.DataVersion(data_version))
    return materialization(context, asset, partition, metadata, data_version)


def _check(
    context: dg.AssetExecutionContext,
    asset: str,
    check: str,
    partition: str | None,
    passed: bool,
    metadata: dict,
    blocking: bool,
):
    """A check's result for one partition, yielded after its materialization: in a step of one partition
    the check's own result (so a failed blocking one stops what reads the asset in the same run); in a
    range's step one result per partition, on that partition's latest materialization (`events`)."""
    severity = dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN
    if context.assets_def.partitions_def is None or len(context.partition_keys) == 1:
        return dg.AssetCheckResult(
            asset_key=asset, check_name=check, passed=passed, metadata=metadata, severity=severity
        )
    return check_evaluation(
        context.instance, asset, check, partition, passed, metadata, blocking=blocking, severity=severity
    )
