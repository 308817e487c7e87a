"""The repos and milestone_plans assets, materialized on a real (ephemeral) Dagster instance."""

import subprocess
import sys
from pathlib import Path

import dagster as dg

from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge_assets.definitions import defs
from harnessforge_assets.plan import milestone_plans, repos
from resources import GitHubResource, StoreResource

ROOT = Path(__file__).resolve().parents[1]


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} >= {"repos", "milestone_plans"}


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
