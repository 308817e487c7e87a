"""The repos and milestone_plans assets, materialized on a real (ephemeral) Dagster instance."""

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from pydantic import ValidationError

from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge_assets.definitions import defs
from harnessforge_assets.environments import docker_images, validated_milestones
from harnessforge_assets.partitions import repo_milestone_key
from harnessforge_assets.plan import milestone_plans, repos
from resources import GitHubResource, SandboxResource, StoreResource

ROOT = Path(__file__).resolve().parents[1]


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} >= {
        "repos",
        "milestone_plans",
        "docker_images",
        "validated_milestones",
    }
    # (repo, mNN) depends on partition `repo` of its per-repo upstreams, not on all of them.
    for upstream in ("docker_images", "milestone_plans"):
        mapping = graph.get_partition_mapping(dg.AssetKey("validated_milestones"), dg.AssetKey(upstream))
        assert isinstance(mapping, dg.MultiToSingleDimensionPartitionMapping), mapping
    checks = {k.name for k in graph.asset_check_keys if k.asset_key == dg.AssetKey("validated_milestones")}
    assert checks == {"environment_ran", "valid_has_fail_to_pass"}


def test_materialize_repos_and_plans(example_repo, store):
    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)  # what `harnessforge add` does: register the local repo in the store
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    resources = {"store": StoreResource(root=str(store.root)), "github": GitHubResource()}
    result = dg.materialize([repos, milestone_plans], instance=instance, partition_key=spec.key, resources=resources)
    assert result.success
    by_asset = {e.asset_key.to_user_string(): e.materialization for e in result.get_asset_materialization_events()}
    assert by_asset["repos"].metadata["newest_release"].value == "v0.5.0"
    assert by_asset["milestone_plans"].metadata["milestones"].value == 6
    assert "| m01 |" in by_asset["milestone_plans"].metadata["plan"].value
    assert "| m06 |" in by_asset["milestone_plans"].metadata["plan"].value
    assert by_asset["repos"].tags["dagster/data_version"] == "v0.5.0"
    assert (store.repo_dir(spec.key) / "plan.json").exists()
    assert (store.milestone_dir(spec.key, "m05") / "hints.json").exists()
    assert (store.milestone_dir(spec.key, "m06") / "hints.json").exists()


def test_unknown_partition_fails_with_a_clear_message(store):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", ["nokey"])
    result = dg.materialize(
        [repos],
        instance=instance,
        partition_key="nokey",
        raise_on_error=False,
        resources={"store": StoreResource(root=str(store.root)), "github": GitHubResource()},
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "neither a registered repo nor owner__name" in failure.step_failure_data.error.to_string()


def _plan_in_dagster(example_repo, store, sandbox: str = "auto"):
    """Register the example repo, materialize repos + milestone_plans; (key, instance, resources)."""
    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    resources = {
        "store": StoreResource(root=str(store.root)),
        "github": GitHubResource(),
        "sandbox": SandboxResource(backend=sandbox),
    }
    result = dg.materialize([repos, milestone_plans], instance=instance, partition_key=spec.key, resources=resources)
    assert result.success
    return spec.key, instance, resources


def _failure_message(result) -> str:
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.step_failure_data.error.to_string()


def test_docker_images_then_validated_milestone_in_docker(example_repo, store, docker_client, base_image):
    key, instance, resources = _plan_in_dagster(example_repo, store, sandbox="docker")
    # milestone_plans registered its milestone ids as the milestone dimension's partitions.
    assert instance.get_dynamic_partitions("milestone") == ["m01", "m02", "m03", "m04", "m05", "m06"]

    built = dg.materialize([docker_images], instance=instance, partition_key=key, resources=resources)
    assert built.success
    (images,) = [e.materialization for e in built.get_asset_materialization_events()]
    meta = {k: v.value for k, v in images.metadata.items()}
    assert meta["images"] >= 1 and meta["milestones_with_image"] == 6
    assert meta["failures"] == {}
    assert set(meta["env_hashes"]) == {"m01", "m02", "m03", "m04", "m05", "m06"}
    assert all(t.startswith(f"harnessforge/{key}:") for t in meta["tags"]) and len(meta["tags"]) == meta["images"]
    assert all(docker_client.images.list(name=t) for t in meta["tags"])
    assert "dagster/data_version" in images.tags
    tags = meta["tags"]

    partition = repo_milestone_key(key, "m03")
    assert str(partition) == f"m03|{key}"  # dimensions sort by name: the UI and backfills use this string
    result = dg.materialize([validated_milestones], instance=instance, partition_key=partition, resources=resources)
    assert result.success
    (event,) = result.get_asset_materialization_events()
    assert event.partition == f"m03|{key}"
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    path = store.milestone_dir(key, "m03") / "validation.json"
    assert path.exists() and meta["path"] == str(path)
    validation = store.load_validation(key, "m03")
    assert validation.status == "valid" and meta["status"] == "valid" and meta["reason"] == ""
    assert meta["image"] == validation.image and validation.image in tags
    assert meta["fail_to_pass"] == len(validation.fail_to_pass) > 0
    assert meta["pass_to_pass"] == len(validation.pass_to_pass) > 0
    assert meta["flaky"] == len(validation.flaky) == 0
    assert meta["fail_to_pass_tests"] == validation.fail_to_pass
    assert store.load_milestone(key, "m03").status == "valid"  # recorded in the plan too
    assert {c.check_name: c.passed for c in result.get_asset_check_evaluations()} == {
        "environment_ran": True,
        "valid_has_fail_to_pass": True,
    }


def test_a_milestone_the_plan_does_not_have_fails_clearly(example_repo, store):
    key, instance, resources = _plan_in_dagster(example_repo, store)
    # The milestone dimension is shared by all repos: a longer plan elsewhere registered m07.
    instance.add_dynamic_partitions("milestone", ["m07"])
    result = dg.materialize(
        [validated_milestones],
        instance=instance,
        partition_key=repo_milestone_key(key, "m07"),
        resources=resources,
        raise_on_error=False,
    )
    message = _failure_message(result)
    assert f"{key} has no milestone 'm07': its plan has 6 milestones (m01, m02, m03, m04, m05, m06)" in message
    assert not (store.milestone_dir(key, "m07") / "validation.json").exists()


def test_docker_images_fails_when_a_milestone_has_no_image(example_repo, store, monkeypatch):
    from harnessforge.models.env import RepoImages
    from harnessforge_assets import environments

    key, instance, resources = _plan_in_dagster(example_repo, store)

    def build(store, key, rules, log):  # the core reports an epoch whose install failed
        return RepoImages(repo_key=key, failures={"m05": "install_failed: pip exited 1\nlog ..."})

    monkeypatch.setattr(environments, "build", build)
    result = dg.materialize([docker_images], instance=instance, partition_key=key, resources=resources,
                            raise_on_error=False)  # fmt: skip
    message = _failure_message(result)
    assert f"{key}: 6 milestone(s) have no environment image: m01: no image;" in message
    assert "m05: install_failed: pip exited 1;" in message


def test_docker_images_without_a_plan_fails_clearly(example_repo, store):
    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    result = dg.materialize(
        [docker_images],
        instance=instance,
        partition_key=spec.key,
        resources={"store": StoreResource(root=str(store.root))},
        raise_on_error=False,
    )
    message = _failure_message(result)
    assert f"{spec.key}: environment build failed" in message and "plan.json: missing" in message


def test_sandbox_backend_is_validated():
    assert SandboxResource().backend == "auto"
    assert SandboxResource(backend="local").backend == "local"
    with pytest.raises(ValidationError, match="not one of auto, docker, local"):
        SandboxResource(backend="vm")


def test_workspace_yaml_loads_the_code_location():
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "harnessforge" in proc.stdout + proc.stderr


def test_core_library_never_imports_dagster():
    code = (
        "import pkgutil, importlib, sys, harnessforge\n"
        "for m in pkgutil.walk_packages(harnessforge.__path__, 'harnessforge.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'dagster' or n.startswith('dagster'))\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in (ROOT / "harnessforge").rglob("*.py"):
        assert "import dagster" not in path.read_text() and "from dagster" not in path.read_text(), path
