"""The `dagster.yaml` the dagster/dagster Helm chart renders into its instance ConfigMap, reproduced
in Python: no helm binary ships in a registry package this project can install, so the test renders
the chart's templates itself.

How: each function below follows one template of the chart (dagster-io/dagster, helm/dagster/,
read at the versions that carry the `concurrency` block: templates/configmap-instance.yaml and the
helpers it includes, templates/helpers/instance/_run-coordinator.tpl, _concurrency.tpl,
_run-launcher.tpl, _postgresql.tpl) branch for branch, with Go templates' truthiness (`if x` is
false for nil, false, 0, "", empty lists and maps), `kindIs "invalid"` as "is nil", `hasKey`, and
Helm's value merge (a user value of null deletes the chart's default). Only the branches for the
types HarnessForge selects (DagsterDaemonScheduler, K8sRunLauncher, QueuedRunCoordinator,
NoOpComputeLogManager) are reproduced; any other type raises. CHART_DEFAULTS holds the chart's
values.yaml defaults for the keys these templates read; deploy/k8s/values.yaml sets (or nulls) every
key that decides whether the instance loads, so those defaults do not decide the outcome.

Checked once against real Helm (Helm 4.2.3's engine, from the helm-python-sdk 0.2.2 wheel) on a
scratch chart made of those template texts and CHART_DEFAULTS: identical dagster.yaml for
deploy/k8s/values.yaml and seven variations (the old values, concurrency off, retry options, tag
limits with and without values, the chart's run-coordinator defaults kept, an external
PostgreSQL with params and launcher secrets), and the same `fail` for run limits set twice."""

from __future__ import annotations

import copy
from typing import Any

import yaml

RELEASE, NAMESPACE, CHART = "harnessforge", "harnessforge", "dagster"

CHART_DEFAULTS: dict[str, Any] = {
    "global": {"dagsterHome": "/opt/dagster/dagster_home", "postgresqlSecretName": "dagster-postgresql-secret"},
    "imagePullSecrets": [],
    "serviceAccount": {"create": True, "name": ""},
    "scheduler": {"type": "DagsterDaemonScheduler"},
    "runLauncher": {
        "type": "K8sRunLauncher",
        "config": {
            "k8sRunLauncher": {
                "loadInclusterConfig": True,
                "kubeconfigFile": None,
                "jobNamespace": None,
                "imagePullPolicy": "Always",
                "envConfigMaps": [],
                "envSecrets": [],
                "envVars": [],
                "volumeMounts": [],
                "volumes": [],
                "labels": {},
                "resources": {},
                "failPodOnRunFailure": False,
                "runK8sConfig": {},
            }
        },
    },
    "postgresql": {
        "enabled": True,
        "postgresqlHost": "",
        "postgresqlUsername": "test",
        "postgresqlDatabase": "test",
        "postgresqlParams": {},
        "postgresqlScheme": "",
        "service": {"port": 5432},
    },
    "computeLogManager": {"type": "NoOpComputeLogManager"},
    "pythonLogs": {},
    "dagsterDaemon": {
        "enabled": True,
        "runCoordinator": {
            "enabled": True,
            "type": "QueuedRunCoordinator",
            "config": {
                "queuedRunCoordinator": {
                    "maxConcurrentRuns": None,
                    "tagConcurrencyLimits": [],
                    "dequeueIntervalSeconds": None,
                    "dequeueUseThreads": True,
                    "dequeueNumWorkers": 4,
                    # The pessimistic reading: a default here renders op_concurrency_slot_buffer,
                    # which Dagster refuses next to `concurrency`. Our values null it.
                    "blockOpConcurrencyLimitedRuns": {"enabled": False, "opConcurrencySlotBuffer": 0},
                }
            },
        },
        "runMonitoring": {
            "enabled": True,
            "startTimeoutSeconds": 300,
            "cancelTimeoutSeconds": 300,
            "maxResumeRunAttempts": 0,
            "pollIntervalSeconds": 120,
            "freeSlotsAfterRunEndSeconds": 0,
        },
        "runRetries": {"enabled": True, "maxRetries": 0},
        "sensors": {"useThreads": True, "numWorkers": 4},
        "schedules": {"useThreads": True, "numWorkers": 4},
    },
    "telemetry": {"enabled": True},
    "retention": {"enabled": False},
    "concurrency": {
        "enabled": False,
        "pools": {"defaultLimit": None, "granularity": None, "opGranularityRunBuffer": None},
        "runs": {"maxConcurrentRuns": None, "tagConcurrencyLimits": []},
    },
    "additionalInstanceConfig": {},
}


class ChartRenderError(Exception):
    """What the chart's `fail` calls (or a type this reproduction does not cover) raise."""


def truthy(value: Any) -> bool:
    """Go templates' `if`."""
    return value not in (None, False, 0, "") and not (isinstance(value, (list, dict)) and not value)


def merge_values(defaults: dict, overrides: dict) -> dict:
    """Helm's coalescing of -f values over the chart's: maps merge, lists replace, null deletes."""
    merged = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):
            merged[key] = merge_values(merged[key] if isinstance(merged.get(key), dict) else {}, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def fullname(values: dict) -> str:
    """`dagster.fullname`: the release name, suffixed with the chart's unless it contains it."""
    name = values.get("nameOverride") or CHART
    return RELEASE if name in RELEASE else f"{RELEASE}-{name}"[:63].rstrip("-")


def postgresql_config(values: dict) -> dict:
    """helpers/instance/_postgresql.tpl `dagsterYaml.postgresql.config`."""
    pg, global_ = values["postgresql"], values["global"]
    db: dict[str, Any] = {}
    db["username"] = (
        {"env": "DAGSTER_PG_USERNAME"} if global_.get("postgresqlSecretUsernameKey") else pg["postgresqlUsername"]
    )
    if not global_.get("postgresqlAuthWifEnabled"):
        db["password"] = {"env": "DAGSTER_PG_PASSWORD"}
    else:
        raise ChartRenderError("postgresqlAuthWifEnabled is not reproduced")
    # `dagster.postgresql.host`: the bundled subchart's service, or the external host.
    db["hostname"] = f"{RELEASE}-postgresql" if pg["enabled"] else pg["postgresqlHost"]
    db["db_name"] = pg["postgresqlDatabase"]
    db["port"] = pg["service"]["port"]
    db["params"] = pg.get("postgresqlParams") or {}
    if truthy(pg.get("postgresqlScheme")):
        db["scheme"] = pg["postgresqlScheme"]
    return {"postgres_db": db}


def k8s_run_launcher(values: dict) -> dict:
    """helpers/instance/_run-launcher.tpl `dagsterYaml.runLauncher.k8s`."""
    cfg = values["runLauncher"]["config"]["k8sRunLauncher"]
    out: dict[str, Any] = {"load_incluster_config": cfg.get("loadInclusterConfig")}
    if truthy(cfg.get("kubeconfigFile")):
        out["kubeconfig_file"] = cfg["kubeconfigFile"]
    out["job_namespace"] = cfg.get("jobNamespace") or NAMESPACE
    out["image_pull_policy"] = cfg.get("imagePullPolicy")
    if truthy(values.get("imagePullSecrets")):
        out["image_pull_secrets"] = values["imagePullSecrets"]
    out["service_account_name"] = values["serviceAccount"].get("name") or fullname(values)
    if "image" in cfg:
        image = cfg["image"]
        out["job_image"] = f"{image['repository']}:{image['tag']}"
    out["dagster_home"] = values["global"]["dagsterHome"]
    out["instance_config_map"] = f"{fullname(values)}-instance"
    out["postgres_password_secret"] = values["global"]["postgresqlSecretName"]
    if truthy(cfg.get("envConfigMaps")):
        out["env_config_maps"] = [entry["name"] for entry in cfg["envConfigMaps"] if "name" in entry]
    if truthy(cfg.get("envSecrets")):
        out["env_secrets"] = [entry["name"] for entry in cfg["envSecrets"] if "name" in entry]
    for key, name in [("envVars", "env_vars"), ("volumeMounts", "volume_mounts"), ("volumes", "volumes")]:
        if truthy(cfg.get(key)):
            out[name] = cfg[key]
    for key, name in [("labels", "labels"), ("resources", "resources")]:
        if truthy(cfg.get(key)):
            out[name] = cfg[key]
    if truthy(cfg.get("failPodOnRunFailure")):
        out["fail_pod_on_run_failure"] = True
    if truthy(cfg.get("schedulerName")):
        out["scheduler_name"] = cfg["schedulerName"]
    if truthy(cfg.get("securityContext")):
        out["security_context"] = cfg["securityContext"]
    run_k8s = cfg.get("runK8sConfig")
    if truthy(run_k8s):
        keys = [
            ("containerConfig", "container_config"),
            ("podSpecConfig", "pod_spec_config"),
            ("podTemplateSpecMetadata", "pod_template_spec_metadata"),
            ("jobSpecConfig", "job_spec_config"),
            ("jobMetadata", "job_metadata"),
        ]
        out["run_k8s_config"] = {name: run_k8s[key] for key, name in keys if truthy(run_k8s.get(key))}
    return {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": out}


def queued_run_coordinator(values: dict) -> dict:
    """helpers/instance/_run-coordinator.tpl `dagsterYaml.runCoordinator.queued`."""
    qrc = values["dagsterDaemon"]["runCoordinator"]["config"].get("queuedRunCoordinator") or {}
    concurrency_enabled = truthy(values["concurrency"].get("enabled"))
    out: dict[str, Any] = {"module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator"}
    if not any(truthy(value) for value in qrc.values()):  # `empty (compact (values $qrc))`
        return out
    config: dict[str, Any] = {}
    if not concurrency_enabled or qrc.get("maxConcurrentRuns") is not None:
        config["max_concurrent_runs"] = -1 if qrc.get("maxConcurrentRuns") is None else qrc["maxConcurrentRuns"]
    if truthy(qrc.get("tagConcurrencyLimits")):
        config["tag_concurrency_limits"] = qrc["tagConcurrencyLimits"]
    for key, name in [
        ("dequeueIntervalSeconds", "dequeue_interval_seconds"),
        ("dequeueUseThreads", "dequeue_use_threads"),
        ("dequeueNumWorkers", "dequeue_num_workers"),
    ]:
        if truthy(qrc.get(key)):
            config[name] = qrc[key]
    block = qrc.get("blockOpConcurrencyLimitedRuns")
    if truthy(block):
        config["block_op_concurrency_limited_runs"] = {
            "enabled": block.get("enabled"),
            "op_concurrency_slot_buffer": block.get("opConcurrencySlotBuffer"),
        }
    out["config"] = config
    return out


def concurrency(values: dict) -> dict:
    """helpers/instance/_concurrency.tpl `dagsterYaml.concurrency`, its checks first."""
    pools, runs = values["concurrency"].get("pools") or {}, values["concurrency"].get("runs") or {}
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    if truthy(coordinator.get("enabled")) and coordinator.get("type") == "QueuedRunCoordinator":
        qrc = coordinator["config"].get("queuedRunCoordinator") or {}
        if runs.get("maxConcurrentRuns") is not None and qrc.get("maxConcurrentRuns") is not None:
            raise ChartRenderError(
                "Cannot set both concurrency.runs.maxConcurrentRuns and "
                "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.maxConcurrentRuns"
            )
        if runs.get("tagConcurrencyLimits") and qrc.get("tagConcurrencyLimits"):
            raise ChartRenderError(
                "Cannot set both concurrency.runs.tagConcurrencyLimits and "
                "dagsterDaemon.runCoordinator.config.queuedRunCoordinator.tagConcurrencyLimits"
            )
        block = qrc.get("blockOpConcurrencyLimitedRuns")
        if pools.get("opGranularityRunBuffer") is not None and truthy(block):
            if block.get("opConcurrencySlotBuffer") is not None:
                raise ChartRenderError("Cannot set both opGranularityRunBuffer and opConcurrencySlotBuffer")
    out: dict[str, Any] = {}
    if pools.get("defaultLimit") is not None or truthy(pools.get("granularity")):
        rendered: dict[str, Any] = {}
        if pools.get("defaultLimit") is not None:
            rendered["default_limit"] = pools["defaultLimit"]
        if truthy(pools.get("granularity")):
            rendered["granularity"] = pools["granularity"]
        if pools.get("opGranularityRunBuffer") is not None:
            rendered["op_granularity_run_buffer"] = pools["opGranularityRunBuffer"]
        out["pools"] = rendered
    limits = runs.get("tagConcurrencyLimits") or []
    if runs.get("maxConcurrentRuns") is not None or limits:
        rendered = {}
        if runs.get("maxConcurrentRuns") is not None:
            rendered["max_concurrent_runs"] = runs["maxConcurrentRuns"]
        if limits:
            rendered["tag_concurrency_limits"] = [
                {"key": str(limit["key"]), **({"value": limit["value"]} if truthy(limit.get("value")) else {})}
                | {"limit": limit["limit"]}
                for limit in limits
            ]
        out["runs"] = rendered
    return out


def render_instance(values: dict) -> str:
    """templates/configmap-instance.yaml's `dagster.yaml`, for `helm template -f` of `values`."""
    merged = merge_values(CHART_DEFAULTS, values)
    daemon = merged["dagsterDaemon"]
    if merged["scheduler"]["type"] != "DagsterDaemonScheduler":
        raise ChartRenderError(f"scheduler type {merged['scheduler']['type']!r} is not reproduced")
    if merged["runLauncher"]["type"] != "K8sRunLauncher":
        raise ChartRenderError(f"run launcher type {merged['runLauncher']['type']!r} is not reproduced")
    if merged["computeLogManager"]["type"] != "NoOpComputeLogManager":
        raise ChartRenderError(f"compute log manager {merged['computeLogManager']['type']!r} is not reproduced")
    storage = postgresql_config(merged)
    instance: dict[str, Any] = {
        "scheduler": {"module": "dagster.core.scheduler", "class": "DagsterDaemonScheduler"},
        "schedule_storage": {
            "module": "dagster_postgres.schedule_storage",
            "class": "PostgresScheduleStorage",
            "config": storage,
        },
        "run_launcher": k8s_run_launcher(merged),
        "run_storage": {"module": "dagster_postgres.run_storage", "class": "PostgresRunStorage", "config": storage},
        "event_log_storage": {
            "module": "dagster_postgres.event_log",
            "class": "PostgresEventLogStorage",
            "config": storage,
        },
    }
    if truthy(daemon["enabled"]) and truthy(daemon["runCoordinator"]["enabled"]):
        if daemon["runCoordinator"]["type"] != "QueuedRunCoordinator":
            raise ChartRenderError(f"run coordinator {daemon['runCoordinator']['type']!r} is not reproduced")
        instance["run_coordinator"] = queued_run_coordinator(merged)
    elif truthy(daemon["enabled"]):
        instance["run_coordinator"] = {
            "module": "dagster._core.run_coordinator.sync_in_memory_run_coordinator",
            "class": "SyncInMemoryRunCoordinator",
        }
    instance["compute_logs"] = {
        "module": "dagster.core.storage.noop_compute_log_manager",
        "class": "NoOpComputeLogManager",
    }
    if truthy(merged.get("pythonLogs")):
        raise ChartRenderError("pythonLogs is not reproduced")
    monitoring = daemon.get("runMonitoring") or {}
    if truthy(daemon["enabled"]) and truthy(monitoring.get("enabled")):
        rendered = {"enabled": monitoring["enabled"], "start_timeout_seconds": monitoring.get("startTimeoutSeconds")}
        for key, name in [
            ("cancelTimeoutSeconds", "cancel_timeout_seconds"),
            ("maxRuntimeSeconds", "max_runtime_seconds"),
            ("maxResumeRunAttempts", "max_resume_run_attempts"),
        ]:
            if monitoring.get(key) is not None:
                rendered[name] = monitoring[key]
        rendered["poll_interval_seconds"] = monitoring.get("pollIntervalSeconds")
        rendered["free_slots_after_run_end_seconds"] = monitoring.get("freeSlotsAfterRunEndSeconds")
        instance["run_monitoring"] = rendered
    retries = daemon.get("runRetries") or {}
    if truthy(daemon["enabled"]) and truthy(retries.get("enabled")):
        rendered = {"enabled": retries["enabled"]}
        if truthy(retries.get("maxRetries")):
            rendered["max_retries"] = retries["maxRetries"]
        if "retryOnAssetOrOpFailure" in retries:
            rendered["retry_on_asset_or_op_failure"] = retries["retryOnAssetOrOpFailure"]
        instance["run_retries"] = rendered
    for section in ("sensors", "schedules"):
        settings = daemon.get(section) or {}
        if truthy(daemon["enabled"]) and truthy(settings.get("useThreads")):
            rendered = {"use_threads": settings["useThreads"]}
            for key, name in [("numWorkers", "num_workers"), ("numSubmitWorkers", "num_submit_workers")]:
                if truthy(settings.get(key)):
                    rendered[name] = settings[key]
            instance[section] = rendered
    if truthy(daemon.get("backfills")):
        raise ChartRenderError("dagsterDaemon.backfills is not reproduced")
    instance["telemetry"] = {"enabled": merged["telemetry"]["enabled"]}
    if truthy(merged["retention"].get("enabled")):
        raise ChartRenderError("retention is not reproduced")
    if truthy(merged["concurrency"].get("enabled")):
        instance["concurrency"] = concurrency(merged)
    if truthy(merged.get("additionalInstanceConfig")):
        instance.update(merged["additionalInstanceConfig"])
    return yaml.safe_dump(instance, sort_keys=False)
