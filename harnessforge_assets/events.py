"""Per-partition events for steps that cover several partitions (a single-run backfill's range).

Dagster records a range step's `MaterializeResult` for every key of the range, including keys the
plan lacks. These steps yield one `AssetMaterialization` per partition really produced instead,
with the tags Dagster itself writes on an output (code version, data version, and the data version
of each upstream partition read), so staleness and automation see them like any materialization;
and one check evaluation per partition. Keys with nothing to do get no event at all.
"""

import hashlib
import json
from pathlib import Path

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluation,
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    NULL_EVENT_POINTER,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)

from .partitions import repo_milestone_key, split_repo_milestone


def content_version(*paths: Path) -> str:
    """A data version from files' bytes: an unchanged re-run gives the same one (a missing file counts as empty)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:16]


def model_version(model, **dump) -> str:
    """A data version from a record's fields (`dump`: pydantic's include/exclude, to leave out timestamps)."""
    canonical = json.dumps(model.model_dump(mode="json", **dump), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _parent_partitions(instance: dg.DagsterInstance, parent_def, partition: str) -> list[str] | None:
    """The partitions of an upstream asset a partition reads (the inferred mappings): a (repo x
    milestone) one reads the same one or its repo's; a repo one reads its repo's, or every milestone of
    it (None: the upstream is unpartitioned)."""
    if parent_def is None:
        return None
    milestone_key = "|" in partition  # a repo key has no `|`
    if isinstance(parent_def, dg.MultiPartitionsDefinition):
        if milestone_key:
            return [partition]
        return [
            str(repo_milestone_key(partition, milestone)) for milestone in instance.get_dynamic_partitions("milestone")
        ]
    return [split_repo_milestone(partition)[0] if milestone_key else partition]  # a per-repo upstream


def provenance(context: dg.AssetExecutionContext, asset: dg.AssetKey, partition: str) -> dict[str, str]:
    """The code version and each upstream partition's latest data version, as Dagster tags them."""
    graph = context.job_def.asset_layer.asset_graph
    tags = {CODE_VERSION_TAG: context.assets_def.code_versions_by_key.get(asset) or context.run.run_id}
    for parent in graph.get(asset).parent_keys:
        parents = _parent_partitions(context.instance, graph.get(parent).partitions_def, partition)
        records_filter = dg.AssetRecordsFilter(asset_key=parent, asset_partitions=parents)
        records = context.instance.fetch_materializations(records_filter, limit=1).records
        record = records[0] if records else None
        version = (record.asset_materialization.tags or {}).get(DATA_VERSION_TAG) if record else None
        tags[get_input_data_version_tag(parent)] = version or DEFAULT_DATA_VERSION.value
        tags[get_input_event_pointer_tag(parent)] = str(record.storage_id) if record else NULL_EVENT_POINTER
    return tags


def materialization(
    context: dg.AssetExecutionContext, asset: str, partition: str, metadata: dict, data_version: str
) -> dg.AssetMaterialization:
    key = dg.AssetKey(asset)
    tags = {**provenance(context, key, partition), DATA_VERSION_TAG: data_version}
    tags[DATA_VERSION_IS_USER_PROVIDED_TAG] = "true"
    return dg.AssetMaterialization(key, partition=partition, metadata=metadata, tags=tags)


def check_evaluation(
    instance: dg.DagsterInstance,
    asset: str,
    check: str,
    partition: str,
    passed: bool,
    metadata: dict | None = None,
    *,
    blocking: bool = False,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
    description: str | None = None,
) -> AssetCheckEvaluation:
    """One partition's check result on its latest materialization (yield it after that materialization):
    automation counts only a result that targets the latest one. A failed blocking one fails the step,
    as a returned result would."""
    records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition])
    records = instance.fetch_materializations(records_filter, limit=1).records
    target = (
        AssetCheckEvaluationTargetMaterializationData(
            run_id=records[0].event_log_entry.run_id, storage_id=records[0].storage_id, timestamp=records[0].timestamp
        )
        if records
        else None
    )
    return AssetCheckEvaluation(
        dg.AssetKey(asset),
        check,
        passed=passed,
        metadata=metadata,
        severity=severity,
        description=description,
        blocking=blocking,
        partition=partition,
        target_materialization_data=target,
    )


def latest_data_version(context: dg.AssetExecutionContext, asset: str, partition: str) -> str | None:
    """The data version last recorded for one partition (None: never materialized)."""
    records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition])
    records = context.instance.fetch_materializations(records_filter, limit=1).records
    return (records[0].asset_materialization.tags or {}).get(DATA_VERSION_TAG) if records else None
