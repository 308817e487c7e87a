"""deploy/: the three deploys' instances loaded as real Dagster instances and compared (one machine's
dagster.yaml; the Docker deploy's, on a real PostgreSQL; the Helm chart's instance ConfigMap rendered
from deploy/k8s/values.yaml by tests/helm_instance.py and loaded on that PostgreSQL), one retry
layer, the pools' limits, the docker_executor run config, the Helm values' keys, the wheel, and the
Docker deploy itself (compose.yaml: webserver, daemon, code location, PostgreSQL, DockerRunLauncher)
brought up with real Docker and made to run an asset in a run container."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from importlib.metadata import version
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._config import process_config
from dagster._core.definitions.dependency import NodeHandle
from dagster._core.errors import DagsterInvalidConfigError
from dagster._core.instance.config import PoolGranularity
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_docker import DockerRunLauncher, docker_executor
from dagster_docker.utils import validate_docker_config
from dagster_k8s import K8sRunLauncher
from packaging.version import Version

from harnessforge.analytics import analytics_version
from harnessforge.envs.engine import LABEL
from harnessforge.envs.images import HOST_CA
from harnessforge.rules import load_rules
from harnessforge_assets import jobs as jobs_module
from harnessforge_assets.definitions import defs
from tests.helm_instance import ChartRenderError, render_instance
from tests.helpers import EXAMPLE_RULES, free_port

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
DOCKER_DEPLOY = DEPLOY / "docker"
DAGSTER = Path(sys.executable).parent / "dagster"
# The pools' limits every deploy sets: default_limit for duckdb, `dagster instance concurrency set`
# for the others (Dagster 1.13's instance schema has no per-pool limits).
POOL_LIMITS = {"agent": 2, "docker": 2, "duckdb": 1}


def load(name: str):
    return yaml.safe_load((DEPLOY / name).read_text())


@dg.asset(pool="duckdb")
def uses_duckdb() -> None: ...


@dg.asset(pool="agent")
def uses_agent() -> None: ...


@dg.asset(pool="docker")
def uses_docker() -> None: ...


def one_machine_instance(home: Path) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(home))


@pytest.fixture
def instance(tmp_path):
    """A real instance whose DAGSTER_HOME holds deploy/dagster.yaml and nothing else."""
    inst = one_machine_instance(tmp_path / "home")
    yield inst
    inst.dispose()


@pytest.fixture
def docker_deploy_instance(postgres_server, tmp_path, monkeypatch):
    """deploy/docker/dagster.yaml as its containers load it, with its PostgreSQL variables pointing
    at the test server (trust auth: the password is not checked)."""
    monkeypatch.setenv("DAGSTER_POSTGRES_HOST", postgres_server.host)
    monkeypatch.setenv("DAGSTER_POSTGRES_PORT", str(postgres_server.port))
    monkeypatch.setenv("DAGSTER_POSTGRES_USER", postgres_server.user)
    monkeypatch.setenv("DAGSTER_POSTGRES_PASSWORD", "unused")
    monkeypatch.setenv("DAGSTER_POSTGRES_DB", postgres_server.create_database("docker"))
    home = tmp_path / "docker_home"
    home.mkdir()
    shutil.copy(DOCKER_DEPLOY / "dagster.yaml", home / "dagster.yaml")
    inst = dg.DagsterInstance.from_config(str(home))
    yield inst
    inst.dispose()


def helm_values_on(postgres_server, database: str) -> dict:
    """deploy/k8s/values.yaml with the chart's PostgreSQL pointed at the test server, as
    `helm template -f deploy/k8s/values.yaml --set postgresql.enabled=false,...` would."""
    values = load("k8s/values.yaml")
    values["postgresql"] = {
        **values.get("postgresql", {}),
        "enabled": False,
        "postgresqlHost": postgres_server.host,
        "postgresqlUsername": postgres_server.user,
        "postgresqlDatabase": database,
        "service": {"port": postgres_server.port},
    }
    return values


@pytest.fixture
def helm_instance(postgres_server, tmp_path, monkeypatch):
    """The instance the chart's pods load: its ConfigMap's dagster.yaml, rendered from our values."""
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "unused")
    home = tmp_path / "helm_home"
    home.mkdir()
    rendered = render_instance(helm_values_on(postgres_server, postgres_server.create_database("helm")))
    (home / "dagster.yaml").write_text(rendered)
    inst = dg.DagsterInstance.from_config(str(home))
    yield inst
    inst.dispose()


def effective(instance: dg.DagsterInstance) -> dict:
    """What decides how runs queue, retry and share pools, read from the loaded instance."""
    concurrency = instance.get_concurrency_config()
    queue = concurrency.run_queue_config
    return {
        "coordinator": type(instance.run_coordinator).__name__,
        "max_concurrent_runs": queue.max_concurrent_runs,
        "tag_concurrency_limits": list(queue.tag_concurrency_limits or []),
        "block_op_concurrency_limited_runs": queue.should_block_op_concurrency_limited_runs,
        "op_concurrency_slot_buffer": queue.op_concurrency_slot_buffer,
        "pool_default_limit": concurrency.pool_config.default_pool_limit,
        "pool_granularity": concurrency.pool_config.pool_granularity,
        "run_retries": instance.run_retries_enabled,
        "run_max_retries": instance.run_retries_max_retries,
        "retry_on_asset_or_op_failure": instance.run_retries_retry_on_asset_or_op_failure,
        "run_monitoring": instance.run_monitoring_enabled,
    }


# ---- dagster.yaml (one machine) --------------------------------------------------------------------


def test_dagster_yaml_queues_runs_retries_once_and_monitors(instance):
    assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
    assert effective(instance) == {
        "coordinator": "QueuedRunCoordinator",
        "max_concurrent_runs": 6,
        "tag_concurrency_limits": [],  # the stage tags missed UI materializations: pools instead
        "block_op_concurrency_limited_runs": True,  # a run whose first steps wait on full pools stays queued
        "op_concurrency_slot_buffer": 0,
        "pool_default_limit": POOL_LIMITS["duckdb"],
        "pool_granularity": PoolGranularity.OP,
        "run_retries": True,
        "run_max_retries": 1,  # a failing agent run is tried at most twice
        "retry_on_asset_or_op_failure": True,
        "run_monitoring": True,
    }
    assert instance.run_monitoring_poll_interval_seconds == 60


def test_no_asset_or_job_has_an_op_retry_policy():
    """One retry layer: op retries inside a run that the instance then retries again would multiply
    (the old RetryPolicy(max_retries=2) with two run retries: up to 9 agent attempts)."""
    assets = [asset for asset in defs.assets if isinstance(asset, dg.AssetsDefinition)]
    assert assets
    with_policy = [asset.op.name for asset in assets if asset.op.retry_policy is not None]
    assert with_policy == []
    for job in [*defs.resolve_all_job_defs(), defs.resolve_job_def("__ASSET_JOB")]:
        assert job._op_retry_policy is None, job.name  # noqa: SLF001 (define_asset_job(op_retry_policy=))
        for node in job.graph.nodes:
            assert job.get_retry_policy_for_handle(NodeHandle(node.name, None)) is None, (job.name, node.name)
    assert all(getattr(job, "op_retry_policy", None) is None for job in defs.jobs)


def test_pools_of_the_assets_have_limits_and_the_documented_widening_sticks(instance, tmp_path):
    """Every pool an asset names has a limit in the deploys. A pool gets `default_limit` (1) when a
    step first claims it; the documented `dagster instance concurrency set agent 2` / `docker 2`
    then hold (an explicit limit is not reset to the default) while duckdb stays at 1."""
    pools = {asset.op.pool for asset in defs.assets if isinstance(asset, dg.AssetsDefinition) and asset.op.pool}
    assert pools == set(POOL_LIMITS), f"pools used vs limited in deploy/: {pools} vs {set(POOL_LIMITS)}"
    storage = instance.event_log_storage
    assert storage.get_concurrency_keys() == set()  # nothing until a step claims a slot
    assert dg.materialize([uses_duckdb, uses_agent, uses_docker], instance=instance).success
    assert {pool: storage.get_concurrency_info(pool).slot_count for pool in POOL_LIMITS} == dict.fromkeys(
        POOL_LIMITS, 1
    )

    env = {**os.environ, "DAGSTER_HOME": str(instance.root_directory)}
    widened = {pool: limit for pool, limit in POOL_LIMITS.items() if limit != POOL_LIMITS["duckdb"]}
    for pool, limit in widened.items():
        cmd = [str(DAGSTER), "instance", "concurrency", "set", pool, str(limit)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert dg.materialize([uses_duckdb, uses_agent, uses_docker], instance=instance).success
    assert {pool: storage.get_concurrency_info(pool).slot_count for pool in POOL_LIMITS} == POOL_LIMITS
    # The deploys run or document exactly these commands.
    compose = (DOCKER_DEPLOY / "compose.yaml").read_text()
    readme, values = (DEPLOY / "README.md").read_text(), (DEPLOY / "k8s/values.yaml").read_text()
    for pool, limit in widened.items():
        command = f"dagster instance concurrency set {pool} {limit}"
        assert command in compose and command in readme and command in values, command


# ---- the Docker deploy's and the Helm chart's instances -----------------------------------------------


def test_the_docker_deploy_instance_loads_on_postgres_and_launches_runs_in_containers(docker_deploy_instance):
    from dagster_postgres import PostgresRunStorage

    assert isinstance(docker_deploy_instance.run_storage, PostgresRunStorage)
    launcher = docker_deploy_instance.run_launcher
    assert isinstance(launcher, DockerRunLauncher)
    # Every variable the launcher copies is one compose.yaml gives the daemon (else every launch fails).
    compose = yaml.safe_load((DOCKER_DEPLOY / "compose.yaml").read_text())
    daemon_env = compose["services"]["daemon"]["environment"]
    assert set(launcher.env_vars) <= set(daemon_env), set(launcher.env_vars) - set(daemon_env)
    assert dg.materialize([uses_agent], instance=docker_deploy_instance).success  # storage really works


def test_the_rendered_helm_instance_loads_and_records_runs_in_postgres(helm_instance):
    from dagster_postgres import PostgresEventLogStorage

    assert isinstance(helm_instance.event_log_storage, PostgresEventLogStorage)
    result = dg.materialize([uses_duckdb], instance=helm_instance)
    assert result.success and helm_instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS
    # K8sRunLauncher needs a cluster to start; its rendered config is checked against its schema.
    launcher = helm_instance.get_ref().run_launcher_data
    assert (launcher.module_name, launcher.class_name) == ("dagster_k8s", "K8sRunLauncher")
    checked = process_config(K8sRunLauncher.config_type(), yaml.safe_load(launcher.config_yaml))
    assert checked.success, [error.message for error in checked.errors]


def test_the_three_deploys_queue_retry_and_pool_alike(instance, docker_deploy_instance, helm_instance):
    one_machine = effective(instance)
    assert effective(docker_deploy_instance) == one_machine
    helm = effective(helm_instance)
    # Kubernetes waits longer for a run's pod (image pulls); everything else is the same.
    assert helm == one_machine
    assert helm_instance.run_monitoring_start_timeout_seconds == 300


def test_the_helm_values_set_run_retries_once_and_no_run_limit_in_the_run_coordinator():
    daemon = load("k8s/values.yaml")["dagsterDaemon"]
    assert daemon["runRetries"] == {"enabled": True, "maxRetries": 1}  # retryOnAssetOrOpFailure: Dagster's default
    rendered = yaml.safe_load(render_instance(load("k8s/values.yaml")))
    assert "config" not in rendered["run_coordinator"] or not {
        "max_concurrent_runs",
        "tag_concurrency_limits",
        "block_op_concurrency_limited_runs",
    } & set(rendered["run_coordinator"]["config"])
    assert rendered["run_retries"] == {"enabled": True, "max_retries": 1}


def test_the_old_helm_values_render_an_instance_dagster_refuses(postgres_server, tmp_path, monkeypatch):
    """The values this replaced (limits in queuedRunCoordinator next to a pools block): the render
    is refused by Dagster the way the issue reported, so the test above is not vacuous."""
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "unused")
    values = helm_values_on(postgres_server, "unused")
    values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"] = {
        "maxConcurrentRuns": 6,
        "tagConcurrencyLimits": [{"key": "harnessforge/stage", "value": "agent", "limit": 2}],
    }
    del values["concurrency"]["runs"]
    (tmp_path / "dagster.yaml").write_text(render_instance(values))
    with pytest.raises(DagsterInvalidConfigError, match="incompatible with the `concurrency > runs` config"):
        dg.DagsterInstance.from_config(str(tmp_path))
    # and the chart's own check refuses a run limit in both places
    values["concurrency"]["runs"] = {"maxConcurrentRuns": 6}
    with pytest.raises(ChartRenderError, match="Cannot set both concurrency.runs.maxConcurrentRuns"):
        render_instance(values)


# ---- docker_executor.yaml and factory_in_docker -------------------------------------------------------


def test_factory_in_docker_is_defined_only_where_the_docker_deploy_asks_for_it():
    assert "factory_in_docker" not in {job.name for job in defs.jobs}  # Kubernetes, one machine
    compose = yaml.safe_load((DOCKER_DEPLOY / "compose.yaml").read_text())
    assert compose["services"]["code"]["environment"][jobs_module.DOCKER_EXECUTOR] == "1"
    launcher_env = yaml.safe_load((DOCKER_DEPLOY / "dagster.yaml").read_text())["run_launcher"]["config"]["env_vars"]
    assert jobs_module.DOCKER_EXECUTOR in launcher_env  # run containers load the same job
    (deployment,) = load("k8s/values.yaml")["dagster-user-deployments"]["deployments"]
    assert jobs_module.DOCKER_EXECUTOR not in {variable["name"] for variable in deployment["env"]}


def test_docker_executor_run_config_fits_the_executor_and_the_factory_in_docker_job():
    cfg = load("docker_executor.yaml")
    executor_cfg = cfg["execution"]["config"]
    result = process_config(docker_executor.config_schema.config_type, executor_cfg)
    assert result.success, [error.message for error in result.errors]
    typo = copy.deepcopy(executor_cfg)
    typo["max_concurent"] = typo.pop("max_concurrent")
    assert not process_config(docker_executor.config_schema.config_type, typo).success
    validate_docker_config(
        executor_cfg.get("network"), executor_cfg.get("networks"), executor_cfg.get("container_kwargs")
    )
    docker_defs = dg.Definitions(assets=defs.assets, jobs=[jobs_module.factory_in_docker()], resources=defs.resources)
    job = docker_defs.resolve_job_def("factory_in_docker")
    assert job.executor_def is docker_executor
    dg.validate_run_config(job, cfg)


# ---- k8s/values.yaml: the chart's key names (a misspelled key is silently ignored by the templates) ----
USER_DEPLOYMENT_KEYS = {
    "name",
    "image",
    "dagsterApiGrpcArgs",
    "codeServerArgs",
    "includeConfigInLaunchedRuns",
    "port",
    "env",
    "envConfigMaps",
    "envSecrets",
    "annotations",
    "nodeSelector",
    "affinity",
    "tolerations",
    "podSecurityContext",
    "securityContext",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "labels",
    "volumeMounts",
    "volumes",
    "schedulerName",
}


def test_helm_values_serve_the_code_location_with_a_reloadable_code_server():
    values = load("k8s/values.yaml")
    deployments = values["dagster-user-deployments"]
    assert deployments["enabled"] is True
    (dep,) = deployments["deployments"]
    assert set(dep) <= USER_DEPLOYMENT_KEYS, set(dep) - USER_DEPLOYMENT_KEYS
    assert dep["image"]["repository"] and isinstance(dep["image"]["tag"], str) and dep["image"]["tag"]
    assert "dagsterApiGrpcArgs" not in dep  # `dagster api grpc` cannot reload
    args = dep["codeServerArgs"]
    assert args[args.index("--module-name") + 1] == "harnessforge_assets.definitions"
    assert args[args.index("--attribute") + 1] == "defs"
    assert dep["includeConfigInLaunchedRuns"]["enabled"] is True  # env, secret and store reach run pods
    assert {"name": "harnessforge-secrets"} in dep["envSecrets"]
    assert values["runLauncher"]["type"] == "K8sRunLauncher"


def test_helm_values_mount_the_store_and_reach_the_engine_that_infra_yaml_creates():
    values = load("k8s/values.yaml")
    (dep,) = values["dagster-user-deployments"]["deployments"]
    infra = {
        (document["kind"], document["metadata"]["name"]): document
        for document in yaml.safe_load_all((DEPLOY / "k8s/infra.yaml").read_text())
    }
    env = {variable["name"]: variable["value"] for variable in dep["env"]}
    (volume,) = dep["volumes"]
    (mount,) = dep["volumeMounts"]
    assert mount["name"] == volume["name"]
    claim = infra[("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]  # run and step pods land on any node
    assert env["HARNESSFORGE_HOME"].startswith(mount["mountPath"].rstrip("/") + "/")
    host, port = env["DOCKER_HOST"].removeprefix("tcp://").split(":")
    service = infra[("Service", host)]
    assert [entry["port"] for entry in service["spec"]["ports"]] == [int(port)]
    engine = infra[("StatefulSet", host)]["spec"]["template"]["spec"]["containers"][0]
    assert engine["securityContext"]["privileged"] is True


# ---- the distribution -----------------------------------------------------------------------------
# What the deploy image installs: the wheel, with the SQL models of dbt_like_sql/ as package data.
DISTRIBUTED = ("pyproject.toml", "README.md", "harnessforge", "harnessforge_assets", "resources", "sensors")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of the sources (so the build leaves nothing in the tree)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in (*DISTRIBUTED, "dbt_like_sql"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(source)]
    if Version(version("setuptools")) >= Version("77"):  # the build-system's floor: build without fetching it
        command.append("--no-build-isolation")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (built,) = (work / "dist").glob("harnessforge-*.whl")
    return built


def test_the_wheel_ships_every_sql_model_as_package_data(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    models = sorted(path.name for path in (ROOT / "dbt_like_sql").glob("*.sql"))
    assert len(models) == 14
    assert {f"dbt_like_sql/{name}" for name in models} | {"dbt_like_sql/__init__.py"} <= names


def test_a_non_editable_install_builds_the_sql_models_it_ships(wheel, tmp_path):
    """Installed into a bare target directory (no source tree on the path), the analytics find the SQL
    models inside the installed distribution and build every one of them over an empty store."""
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", str(target)]
    proc = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    probe = (
        "import json, sys\n"
        "import harnessforge\n"
        "from harnessforge.analytics import analytics_version, analyze\n"
        "from harnessforge.analytics.sqlmodels import SQL_DIR\n"
        "from harnessforge.rules import load_rules\n"
        "from harnessforge.store import Store\n"
        "report = analyze(Store(sys.argv[1]), load_rules())\n"
        "print(json.dumps({'package': harnessforge.__file__, 'sql_dir': str(SQL_DIR),\n"
        "                  'built': [model.name for model in report.models],\n"
        "                  'version': analytics_version(load_rules())}))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(target)}  # the worktree is not on the path
    command = [sys.executable, "-c", probe, str(tmp_path / "store")]
    proc = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["package"] == str(target / "harnessforge" / "__init__.py")
    assert found["sql_dir"] == str(target / "dbt_like_sql")
    assert sorted(found["built"]) == sorted(path.stem for path in (ROOT / "dbt_like_sql").glob("*.sql"))
    assert found["version"] == analytics_version(load_rules())  # the same SQL, byte for byte


# ---- Dockerfile -----------------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), " ".join(rest.split())))
        pending = ""
    return out


def test_dockerfile_takes_the_base_image_as_an_arg_and_serves_a_reloadable_code_location():
    steps = dockerfile_instructions((DEPLOY / "Dockerfile").read_text())
    (from_at,) = [i for i, (word, _) in enumerate(steps) if word == "FROM"]
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.11-slim") and 0 < from_at
    assert steps[from_at] == ("FROM", "${BASE_IMAGE}")
    (copy_all,) = [index for index, (word, arguments) in enumerate(steps) if word == "COPY" and arguments[:2] == ". "]
    sources = steps[copy_all][1].split()[1]
    installs = [arguments for word, arguments in steps[copy_all:] if word == "RUN" and "pip install" in arguments]
    # the project is installed non-editable from a copy that is then removed: nothing imports the sources
    assert installs == [f"pip install --no-deps {sources} && rm -rf {sources}"]
    deps = [
        index
        for index, (word, arguments) in enumerate(steps)
        if word == "RUN" and "pyproject.toml" in arguments and "pip install" in arguments
    ]
    assert deps and deps[0] < copy_all  # dependencies in their own layer, before the code
    (cmd,) = [json.loads(arguments) for word, arguments in steps if word == "CMD"]
    assert cmd[:3] == ["dagster", "code-server", "start"]  # reloadable, unlike `dagster api grpc`
    assert cmd[cmd.index("--module-name") + 1] == "harnessforge_assets.definitions"
    assert cmd[cmd.index("--attribute") + 1] == "defs"
    assert ("EXPOSE", cmd[cmd.index("--port") + 1]) in steps
    # The Docker deploy's code service serves the same code location under the workspace's name.
    code = yaml.safe_load((DOCKER_DEPLOY / "compose.yaml").read_text())["services"]["code"]["command"][-1]
    assert "dagster code-server start" in code and "-m harnessforge_assets.definitions -a defs" in code
    (server,) = [
        entry["grpc_server"] for entry in yaml.safe_load((DOCKER_DEPLOY / "workspace.yaml").read_text())["load_from"]
    ]
    assert server["location_name"] == cmd[cmd.index("--location-name") + 1] and "--location-name harnessforge" in code
    # The context the Dockerfile copies holds the sources and the SQL models, and not the venv.
    context = build_context_files()
    assert {"pyproject.toml", "README.md", "harnessforge_assets/definitions.py", "workspace.yaml"} <= context
    assert any(f.startswith("dbt_like_sql/") for f in context)
    assert not any(f.startswith((".venv/", ".git/")) for f in context)


def build_context_files() -> set[str]:
    from docker.utils.build import exclude_paths

    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [pattern.strip() for pattern in lines if pattern.strip() and not pattern.startswith("#")]
    return set(exclude_paths(str(ROOT), patterns, dockerfile="deploy/Dockerfile"))


TEST_IMAGE = "harnessforge-deploy-test:latest"  # kept between sessions: its layers are the build cache
POSTGRES_TEST_IMAGE = "harnessforge-deploy-test-postgres:latest"


@pytest.fixture(scope="module")
def project_image(docker_client, base_image) -> str:
    """deploy/Dockerfile built FROM the debootstrapped base (BASE_IMAGE), once per module. ~3 minutes
    on a cold cache (the dependencies), seconds after."""
    from docker.utils.build import create_archive

    lines, extra = (DEPLOY / "Dockerfile").read_text().splitlines(), []
    if HOST_CA.exists():  # the host's CA bundle for pip (a TLS-intercepting proxy), as envs/images.py does
        at = next(i for i, line in enumerate(lines) if line.startswith("FROM ")) + 1
        lines[at:at] = ["COPY hf-build-ca.crt /tmp/hf-build-ca.crt", "ENV PIP_CERT=/tmp/hf-build-ca.crt"]
        extra.append(("hf-build-ca.crt", HOST_CA.read_text()))
    extra.append(("Dockerfile.test", "\n".join(lines) + "\n"))
    context = create_archive(files=sorted(build_context_files()), root=str(ROOT), extra_files=extra)
    previous = [i.id for i in docker_client.images.list(name=TEST_IMAGE)]
    image, _ = docker_client.images.build(
        fileobj=context,
        custom_context=True,
        dockerfile="Dockerfile.test",
        tag=TEST_IMAGE,
        rm=True,
        forcerm=True,
        buildargs={"BASE_IMAGE": base_image},
        network_mode="host",
        timeout=900,
    )
    for stale in set(previous) - {image.id}:  # the last session's image, now untagged; shared layers stay
        try:
            docker_client.images.remove(stale, noprune=False)
        except Exception:  # still used by another session's container: it goes with that container
            pass
    return TEST_IMAGE


@pytest.mark.slow
def test_image_serves_the_code_location_with_what_docker_runs_need(docker_client, project_image):
    """The image's CMD serving the code location, with no network, and reporting what runs and
    docker_executor steps need: its image name and the `dagster` entry point."""
    container = docker_client.containers.run(project_image, detach=True, network_mode="none", labels={LABEL: "deploy"})
    try:
        deadline = time.monotonic() + 90
        while True:
            code, out = container.exec_run(["dagster", "api", "grpc-health-check", "-p", "4000"])
            if code == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert code == 0, f"{out.decode()}\n{container.logs().decode()[-2000:]}"
        probe = (
            "import json, shutil\n"
            "from dagster._grpc.client import DagsterGrpcClient\n"
            "from dagster_shared.serdes import deserialize_value\n"
            "from harnessforge.analytics.sqlmodels import SQL_DIR, discover\n"
            "served = deserialize_value(DagsterGrpcClient(port=4000, host='localhost').list_repositories())\n"
            "print(json.dumps({'image': served.container_image, 'entry_point': served.entry_point,\n"
            "                  'git': shutil.which('git'), 'sql_dir': str(SQL_DIR),\n"
            "                  'sql': sorted(f'{name}.sql' for name in discover())}))\n"
        )
        code, out = container.exec_run(["python", "-c", probe], stderr=False)
        assert code == 0, out.decode()
        served = json.loads(out.decode().strip().splitlines()[-1])
    finally:
        container.remove(force=True)
    assert served["image"] == "harnessforge:latest"  # DAGSTER_CURRENT_IMAGE: what runs and steps start
    assert served["entry_point"] == ["dagster"]  # steps run `dagster api execute_step` from the image's venv
    assert served["git"]
    # the SQL models come from the installed distribution, not from a source tree
    assert served["sql_dir"].startswith("/opt/venv/lib/") and served["sql_dir"].endswith("/site-packages/dbt_like_sql")
    assert served["sql"] == sorted(path.name for path in (ROOT / "dbt_like_sql").glob("*.sql"))


# ---- the Docker deploy, brought up ----------------------------------------------------------------
WORKSPACE_QUERY = """
{ workspaceOrError { ... on Workspace { locationEntries {
    name loadStatus
    locationOrLoadError { __typename ... on RepositoryLocation { repositories { name jobs { name } } }
                          ... on PythonError { message } } } } } }
"""
ADD_PARTITION = """
mutation ($selector: RepositorySelector!, $partitionKey: String!) {
  addDynamicPartition(repositorySelector: $selector, partitionsDefName: "repo", partitionKey: $partitionKey) {
    __typename ... on PythonError { message } } }
"""


def compose(project: str, env: dict, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    command = ["docker-compose", "-f", str(DOCKER_DEPLOY / "compose.yaml"), "-p", project, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def docker_compose() -> str:
    """docker-compose (Debian's package, scripts/install.sh): required like Docker in CI."""
    from tests.conftest import REQUIRE_DOCKER

    found = shutil.which("docker-compose")
    if not found:
        if REQUIRE_DOCKER:
            pytest.fail("HARNESSFORGE_REQUIRE_DOCKER=1 but docker-compose is not installed (scripts/install.sh)")
        pytest.skip("docker-compose is not installed (scripts/install.sh installs it)")
    return found


@pytest.mark.slow
def test_the_docker_deploy_serves_reloads_and_runs_an_asset_in_a_run_container(
    docker_client, docker_compose, base_image, project_image, example_repo, tmp_path
):
    """compose.yaml up with real Docker (the project image, a PostgreSQL image built from the same
    base): the webserver answers GraphQL, the code location loads and reloads, and `repos` of the
    example repository, launched through the webserver, runs in its own container (DockerRunLauncher)
    on the host network and succeeds, writing into the shared store."""
    from dagster_graphql import DagsterGraphQLClient, ReloadRepositoryLocationStatus

    from harnessforge.repos import open_repo, resolve_repo
    from harnessforge.store import Store

    store_dir = tmp_path / "store"
    shutil.copytree(example_repo, store_dir / "sources" / "tasklite", symlinks=True)  # inside the mounted store
    spec = resolve_repo(str(store_dir / "sources" / "tasklite"))
    open_repo(Store(store_dir), spec)
    rules = store_dir / "rules.yaml"  # the example is below real repositories' screening thresholds
    shutil.copy(EXAMPLE_RULES, rules)
    ports = {name: free_port() for name in ("postgres", "code", "webserver")}
    env = {
        **os.environ,
        "HARNESSFORGE_IMAGE": project_image,
        "HARNESSFORGE_BASE_IMAGE": base_image,
        "HARNESSFORGE_POSTGRES_IMAGE": POSTGRES_TEST_IMAGE,
        "HARNESSFORGE_STORE": str(store_dir),
        "HARNESSFORGE_RULES": str(rules),
        "HARNESSFORGE_POSTGRES_PORT": str(ports["postgres"]),
        "HARNESSFORGE_CODE_PORT": str(ports["code"]),
        "HARNESSFORGE_WEBSERVER_PORT": str(ports["webserver"]),
        "GITHUB_TOKEN": "",
    }
    project = f"hf-deploy-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    built = compose(project, env, "build", "postgres")
    assert built.returncode == 0, built.stderr[-3000:]
    run_ids: list[str] = []
    try:
        up = compose(project, env, "up", "-d", "--no-build")
        assert up.returncode == 0, up.stderr[-3000:]
        client = DagsterGraphQLClient("127.0.0.1", port_number=ports["webserver"], timeout=30)
        deadline = time.monotonic() + 240
        while True:  # the webserver, then the code location behind it
            try:
                entries = client._execute(WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
                if entries and entries[0]["loadStatus"] == "LOADED" and entries[0]["locationOrLoadError"]:
                    break
            except Exception:
                pass
            assert time.monotonic() < deadline, compose(project, env, "logs", "--tail", "80").stdout[-6000:]
            time.sleep(2)
        print(f"deploy up in {time.monotonic() - started:.0f}s")
        (entry,) = entries
        location = entry["locationOrLoadError"]
        assert entry["name"] == "harnessforge" and location["__typename"] == "RepositoryLocation", location
        (repository,) = location["repositories"]
        assert "factory_in_docker" in {job["name"] for job in repository["jobs"]}  # the Docker deploy's job
        reloaded = client.reload_repository_location("harnessforge")
        assert reloaded.status == ReloadRepositoryLocationStatus.SUCCESS, reloaded.message

        selector = {"repositoryLocationName": "harnessforge", "repositoryName": repository["name"]}
        added = client._execute(ADD_PARTITION, {"selector": selector, "partitionKey": spec.key})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
        run_id = client.submit_job_execution(
            "__ASSET_JOB",
            repository_location_name="harnessforge",
            repository_name=repository["name"],
            asset_selection=["repos"],
            tags={"dagster/partition": spec.key},
        )
        run_ids.append(run_id)
        deadline = time.monotonic() + 300
        while (status := client.get_run_status(run_id)) not in (
            dg.DagsterRunStatus.SUCCESS,
            dg.DagsterRunStatus.FAILURE,
        ):
            assert time.monotonic() < deadline, f"run {run_id} still {status}"
            time.sleep(2)
        (container,) = docker_client.containers.list(all=True, filters={"label": f"dagster/run_id={run_id}"})
        assert status == dg.DagsterRunStatus.SUCCESS, container.logs().decode()[-4000:]
        assert container.image.tags == [project_image] and container.attrs["HostConfig"]["NetworkMode"] == "host"
        assert (Store(store_dir).repo_dir(spec.key) / "screening.json").exists()  # the run wrote the shared store
        print(f"deploy up, reloaded and ran `repos` in {time.monotonic() - started:.0f}s")
    finally:
        for run_id in run_ids:
            for container in docker_client.containers.list(all=True, filters={"label": f"dagster/run_id={run_id}"}):
                container.remove(force=True)
        down = compose(project, env, "down", "-v", "--remove-orphans", timeout=300)
        assert down.returncode == 0, down.stderr[-2000:]
