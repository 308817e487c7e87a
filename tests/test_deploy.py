"""deploy/: the instance config loaded as a real Dagster instance, the docker_executor run config
against the executor's schema and the code location's job, the Helm values against the chart's key
names and against dagster.yaml, and the Dockerfile built from the local base image and serving the
code location."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from importlib.metadata import version
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._config import process_config
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_docker import docker_executor
from dagster_docker.utils import validate_docker_config
from packaging.version import Version

from harnessforge.analytics import analytics_version
from harnessforge.envs.engine import LABEL
from harnessforge.envs.images import HOST_CA
from harnessforge.rules import load_rules
from harnessforge_assets.definitions import defs

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
DAGSTER = Path(sys.executable).parent / "dagster"
STAGE = "harnessforge/stage"


def load(name: str):
    return yaml.safe_load((DEPLOY / name).read_text())


@pytest.fixture
def instance(tmp_path):
    """A real instance whose DAGSTER_HOME holds deploy/dagster.yaml and nothing else."""
    shutil.copy(DEPLOY / "dagster.yaml", tmp_path / "dagster.yaml")
    inst = dg.DagsterInstance.from_config(str(tmp_path))
    yield inst
    inst.dispose()


# ---- dagster.yaml ---------------------------------------------------------------------------------


def test_dagster_yaml_is_a_queued_instance_with_stage_limits_retries_and_monitoring(instance):
    cfg = load("dagster.yaml")
    assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
    queue = instance.get_concurrency_config().run_queue_config
    assert queue.max_concurrent_runs == cfg["concurrency"]["runs"]["max_concurrent_runs"] == 6
    assert queue.tag_concurrency_limits == cfg["concurrency"]["runs"]["tag_concurrency_limits"]
    limits = {(limit["key"], limit["value"]): limit["limit"] for limit in queue.tag_concurrency_limits}
    assert limits == {(STAGE, "agent"): 2, (STAGE, "env"): 2, (STAGE, "distill"): 1}
    assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
    assert instance.run_retries_retry_on_asset_or_op_failure is False
    assert instance.run_monitoring_enabled and instance.run_monitoring_poll_interval_seconds == 60


def test_stage_limits_name_stages_the_code_locations_jobs_tag():
    """A limit on a stage no job tags (a typo, a renamed stage) would silently limit nothing."""
    limited = {limit["value"] for limit in load("dagster.yaml")["concurrency"]["runs"]["tag_concurrency_limits"]}
    tagged = {job.tags.get(STAGE) for job in defs.jobs} - {None}
    assert limited <= tagged, f"limits on stages no job tags: {limited - tagged}"


def test_pools_default_to_one_step_and_the_documented_agent_widening_sticks(instance, tmp_path):
    """The code location's pools get `default_limit` (1) when a step first claims them; the README's
    `dagster instance concurrency set agent 2` then holds (an explicit limit is not reset to the
    default), and duckdb stays at 1."""
    pools = {asset.op.pool for asset in defs.assets if isinstance(asset, dg.AssetsDefinition) and asset.op.pool}
    assert pools == {"duckdb", "agent"}, "a new pool gets default_limit 1: give it a limit in deploy/ docs"

    @dg.asset(pool="duckdb")
    def uses_duckdb() -> None: ...

    @dg.asset(pool="agent")
    def uses_agent() -> None: ...

    storage = instance.event_log_storage
    assert storage.get_concurrency_keys() == set()  # nothing until a step claims a slot
    assert dg.materialize([uses_duckdb, uses_agent], instance=instance).success
    assert {pool: storage.get_concurrency_info(pool).slot_count for pool in ("duckdb", "agent")} == {
        "duckdb": 1,
        "agent": 1,
    }

    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    cmd = [str(DAGSTER), "instance", "concurrency", "set", "agent", "2"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert dg.materialize([uses_duckdb, uses_agent], instance=instance).success
    assert {pool: storage.get_concurrency_info(pool).slot_count for pool in ("duckdb", "agent")} == {
        "duckdb": 1,
        "agent": 2,
    }


# ---- docker_executor.yaml -------------------------------------------------------------------------


def test_docker_executor_run_config_fits_the_executor_and_the_factory_in_docker_job():
    cfg = load("docker_executor.yaml")
    executor_cfg = cfg["execution"]["config"]
    result = process_config(docker_executor.config_schema.config_type, executor_cfg)
    assert result.success, [error.message for error in result.errors]
    # The same check rejects a misspelled key: the validation above is not vacuous.
    typo = copy.deepcopy(executor_cfg)
    typo["container_kwarg"] = typo.pop("container_kwargs")
    assert not process_config(docker_executor.config_schema.config_type, typo).success
    # What the executor checks at launch: no image/environment/network inside container_kwargs.
    validate_docker_config(executor_cfg.get("network"), executor_cfg.get("networks"), executor_cfg["container_kwargs"])
    job = defs.resolve_job_def("factory_in_docker")
    assert job.executor_def is docker_executor
    dg.validate_run_config(job, cfg)


def test_docker_executor_mounts_the_paths_it_points_the_steps_at():
    executor_cfg = load("docker_executor.yaml")["execution"]["config"]
    kwargs = executor_cfg["container_kwargs"]
    mounts = dict(volume.split(":")[1::-1] for volume in kwargs["volumes"])  # container path -> host path
    assert mounts["/var/run/docker.sock"] == "/var/run/docker.sock"  # steps start sandboxes
    env = dict(variable.split("=", 1) for variable in executor_cfg["env_vars"] if "=" in variable)
    for var in ("HARNESSFORGE_HOME", "DAGSTER_HOME"):
        assert mounts.get(env[var]) == env[var], f"{var}={env[var]} is not mounted at the same path"
    assert kwargs.get("network_mode") != "none"  # the agent step calls the model API
    # The image's defaults agree with the executor's paths.
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert all(f"{var}={env[var]}" in dockerfile for var in ("HARNESSFORGE_HOME", "DAGSTER_HOME"))
    # Variables passed by name are ones the code reads (a typo would fail every step launch).
    sources = "".join(
        path.read_text() for directory in ("harnessforge", "resources") for path in (ROOT / directory).rglob("*.py")
    )
    for name in (variable for variable in executor_cfg["env_vars"] if "=" not in variable):
        assert f'"{name}"' in sources, name


# ---- k8s/values.yaml ------------------------------------------------------------------------------
# Key names of the dagster/dagster chart (helm/dagster/schema/schema/charts/...: user_deployments.py,
# subschema/run_launcher.py, subschema/daemon.py, subschema/concurrency.py): a misspelled key there
# is silently ignored by the templates, so it is checked here.
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
K8S_RUN_LAUNCHER_KEYS = {
    "image",
    "imagePullPolicy",
    "jobNamespace",
    "loadInclusterConfig",
    "kubeconfigFile",
    "envConfigMaps",
    "envSecrets",
    "envVars",
    "volumeMounts",
    "volumes",
    "labels",
    "failPodOnRunFailure",
    "resources",
    "schedulerName",
    "securityContext",
    "runK8sConfig",
}
QUEUED_RUN_COORDINATOR_KEYS = {
    "maxConcurrentRuns",
    "tagConcurrencyLimits",
    "dequeueIntervalSeconds",
    "dequeueNumWorkers",
    "dequeueUseThreads",
    "blockOpConcurrencyLimitedRuns",
}


def test_helm_values_use_the_charts_keys_and_the_same_limits_as_dagster_yaml():
    values, instance_cfg = load("k8s/values.yaml"), load("dagster.yaml")
    deployments = values["dagster-user-deployments"]
    assert deployments["enabled"] is True
    (dep,) = deployments["deployments"]
    assert set(dep) <= USER_DEPLOYMENT_KEYS, set(dep) - USER_DEPLOYMENT_KEYS
    assert dep["image"]["repository"] and isinstance(dep["image"]["tag"], str) and dep["image"]["tag"]
    args = dep["dagsterApiGrpcArgs"]
    assert args[args.index("--module-name") + 1] == "harnessforge_assets.definitions"
    assert args[args.index("--attribute") + 1] == "defs"
    assert dep["includeConfigInLaunchedRuns"]["enabled"] is True  # env, secret and store reach run pods
    assert {"name": "harnessforge-secrets"} in dep["envSecrets"]

    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    assert set(launcher["config"]["k8sRunLauncher"]) <= K8S_RUN_LAUNCHER_KEYS

    coordinator = values["dagsterDaemon"]["runCoordinator"]
    assert coordinator["enabled"] is True and coordinator["type"] == "QueuedRunCoordinator"
    queued = coordinator["config"]["queuedRunCoordinator"]
    assert set(queued) <= QUEUED_RUN_COORDINATOR_KEYS
    runs = instance_cfg["concurrency"]["runs"]
    assert queued["tagConcurrencyLimits"] == runs["tag_concurrency_limits"]
    assert queued["maxConcurrentRuns"] == runs["max_concurrent_runs"]
    pools = instance_cfg["concurrency"]["pools"]
    assert values["concurrency"]["pools"] == {
        "defaultLimit": pools["default_limit"],
        "granularity": pools["granularity"],
    }
    assert values["dagsterDaemon"]["runRetries"] == {
        "enabled": instance_cfg["run_retries"]["enabled"],
        "maxRetries": instance_cfg["run_retries"]["max_retries"],
    }
    assert values["dagsterDaemon"]["runMonitoring"]["enabled"] is True


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


def test_dockerfile_takes_the_base_image_as_an_arg_and_serves_the_code_location():
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
    assert cmd[:3] == ["dagster", "api", "grpc"]
    assert cmd[cmd.index("--module-name") + 1] == "harnessforge_assets.definitions"
    assert cmd[cmd.index("--attribute") + 1] == "defs"
    (server,) = [entry["grpc_server"] for entry in load("workspace.yaml")["load_from"]]
    assert str(server["port"]) == cmd[cmd.index("--port") + 1] and ("EXPOSE", str(server["port"])) in steps
    assert server["location_name"] == cmd[cmd.index("--location-name") + 1]
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


@pytest.mark.slow
def test_image_builds_from_the_local_base_image_and_serves_the_code_location(docker_client, base_image):
    """deploy/Dockerfile built FROM the debootstrapped base (BASE_IMAGE), then its CMD serving the code
    location, with no network, and reporting what docker_executor needs: its image name and the
    `dagster` entry point. ~3 minutes on a cold cache (the dependencies), seconds after."""
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
        docker_client.images.remove(stale, noprune=False)
    container = docker_client.containers.run(TEST_IMAGE, detach=True, network_mode="none", labels={LABEL: "deploy"})
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
