"""The Dagster assets (plans, environments, agent runs), materialized on a real (ephemeral) Dagster instance."""

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from pydantic import ValidationError

from harnessforge.gitio import resolve_repo
from harnessforge.repos import open_repo
from harnessforge.store import RunFiles
from harnessforge_assets.definitions import defs
from harnessforge_assets.environments import docker_images, validated_milestones
from harnessforge_assets.partitions import repo_milestone_key, repo_milestone_partitions
from harnessforge_assets.plan import milestone_plans, repos
from harnessforge_assets.runs import chain_predecessor, raw_trajectories
from resources import AgentResource, GitHubResource, SandboxResource, StoreResource
from tests.helpers import EXAMPLE_RULES

ROOT = Path(__file__).resolve().parents[1]


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} >= {
        "repos",
        "milestone_plans",
        "docker_images",
        "validated_milestones",
        "raw_trajectories",
    }
    # (repo, mNN) depends on partition `repo` of its per-repo upstreams, not on all of them.
    for upstream in ("docker_images", "milestone_plans"):
        mapping = graph.get_partition_mapping(dg.AssetKey("validated_milestones"), dg.AssetKey(upstream))
        assert isinstance(mapping, dg.MultiToSingleDimensionPartitionMapping), mapping
    # (repo, mNN) of a trajectory reads the same (repo, mNN) of validated_milestones.
    mapping = graph.get_partition_mapping(dg.AssetKey("raw_trajectories"), dg.AssetKey("validated_milestones"))
    assert isinstance(mapping, dg.IdentityPartitionMapping), mapping
    assert graph.get(dg.AssetKey("raw_trajectories")).group_name == "runs"
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert checks == {
        ("repos", "screening_passed"),
        ("milestone_plans", "plan_is_a_chain"),
        ("milestone_plans", "task_texts_read_whole"),
        ("docker_images", "every_milestone_has_image"),
        ("validated_milestones", "environment_ran"),
        ("validated_milestones", "valid_has_fail_to_pass"),
        ("raw_trajectories", "trajectory_integrity"),
        ("raw_events", "lines_parse"),
        *(
            (model, "unique")
            for model in (
                "stg_events",
                "stg_test_runs",
                "progress_curves",
                "stuck_points",
                "first_ground_truth_edits",
                "hint_responses",
                "located_ground_truth",
                "memorisation_flags",
                "efficient_paths",
                "cheating_flags",
                "milestone_summary",
                "memorisation_rates",
            )
        ),
        ("memorisation_flags", "one_row_per_raw_milestones"),
        ("milestone_summary", "one_row_per_raw_milestones"),
        ("reviews", "cheating_reviewed"),
        ("verified_tasks", "tasks_reproduce"),
        ("training_datasets", "dataset_clean"),
        ("training_datasets", "formats_load"),
    }
    # the checks that must stop downstream work block it
    blocking = {k.name for k in graph.asset_check_keys if graph.get_check_spec(k).blocking}
    assert blocking == {
        "screening_passed",
        "plan_is_a_chain",
        "valid_has_fail_to_pass",
        "trajectory_integrity",
        "unique",  # an analytics model's key repeated: the distilled rows would count it twice
        "one_row_per_raw_milestones",
        "cheating_reviewed",
        "dataset_clean",
    }
    # every (repo, milestone) asset of the issue is partitioned by both
    for name in (
        "validated_milestones",
        "raw_trajectories",
        "raw_events",
        "stuck_points",
        "stuck_slices",
        "dpo_pairs",
        "verified_tasks",
    ):
        assert graph.get(dg.AssetKey(name)).partitions_def == repo_milestone_partitions, name
    # a range of milestones runs as one run (in chain order, see test_single_run_backfill_...)
    assert graph.get(dg.AssetKey("raw_trajectories")).backfill_policy == dg.BackfillPolicy.single_run()
    # each check reports per partition of its asset, not one status for every milestone
    for check_key in graph.asset_check_keys:
        assert graph.get_check_spec(check_key).partitions_def == graph.get(check_key.asset_key).partitions_def
    assert {s.name for s in defs.sensors} == {"new_release_sensor", "harnessforge_automation"}
    # every asset has a code version, from the rules it reads; stage limits are pools on the assets
    assert all(graph.get(key).code_version for key in graph.get_all_asset_keys())
    pools = {key.to_user_string(): graph.get(key).pools for key in graph.get_all_asset_keys()}
    assert pools["raw_trajectories"] == {"agent"}
    assert pools["docker_images"] == pools["validated_milestones"] == pools["verified_tasks"] == {"docker"}
    assert pools["dpo_pairs"] == {"duckdb"} and pools["repos"] == set()
    # after the release sensor's planning, every stage follows by automation
    automated = {key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).automation_condition}
    assert automated >= {"milestone_plans", "docker_images", "validated_milestones", "dpo_pairs", "training_datasets"}
    # the demo lives in its own code location (and store), not in the factory's "Materialize all"
    assert "demo" not in {key.to_user_string() for key in graph.get_all_asset_keys()}
    # every job's runs carry a stage tag (factory_in_docker only in the Docker deploy: test_deploy.py)
    stages = {job.name: job.tags["harnessforge/stage"] for job in defs.jobs}
    assert stages == {
        "plan_repo": "plan",
        "build_environments": "env",
        "validate_milestones": "env",
        "run_agent": "agent",
        "distill": "distill",
    }


def test_materialize_repos_and_plans(example_repo, store):
    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)  # what `harnessforge add` does: register the local repo in the store
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    resources = {"store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES), "github": GitHubResource()}
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
        "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES),
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


def test_a_milestone_the_plan_does_not_have_is_an_explicit_no_op(example_repo, store):
    key, instance, resources = _plan_in_dagster(example_repo, store)
    # The milestone dimension is shared by all repos: a longer plan elsewhere registered m07.
    instance.add_dynamic_partitions("milestone", ["m07"])
    before = sorted(p.relative_to(store.root) for p in store.root.rglob("*"))
    result = dg.materialize(
        [validated_milestones, raw_trajectories],
        instance=instance,
        partition_key=repo_milestone_key(key, "m07"),
        resources={**resources, "agent": AgentResource()},
    )
    assert result.success  # a no-op, not a failure
    assert result.get_asset_materialization_events() == []  # not a fake empty output
    skipped = [e.step_key for e in result.all_events if e.event_type_value == "STEP_SKIPPED"]
    assert skipped == ["raw_trajectories"]  # downstream of a no-op does not run
    logs = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any(
        f"{key} has no milestone 'm07': its plan has 6 milestones (m01, m02, m03, m04, m05, m06)" in m for m in logs
    )
    assert sorted(p.relative_to(store.root) for p in store.root.rglob("*")) == before  # nothing written
    for asset in ("validated_milestones", "raw_trajectories"):
        assert instance.get_latest_materialization_event(dg.AssetKey(asset)) is None


def test_docker_images_with_a_milestone_lacking_an_image_materializes_and_fails_its_check(
    example_repo, store, monkeypatch
):
    """One broken epoch must not hold back the rest: the asset materializes (validation then records
    env_error for the milestones without an image) and its non-blocking check says which and why."""
    from harnessforge.models.env import RepoImages
    from harnessforge_assets import environments

    key, instance, resources = _plan_in_dagster(example_repo, store)

    def build(store, key, rules, log):  # the core reports an epoch whose install failed
        return RepoImages(repo_key=key, failures={"m05": "install_failed: pip exited 1\nlog ..."})

    monkeypatch.setattr(environments, "build", build)
    result = dg.materialize(
        [docker_images], instance=instance, partition_key=key, resources=resources, raise_on_error=False
    )
    assert result.success
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "every_milestone_has_image" and not check.passed
    assert check.description.startswith("6 milestone(s) have no environment image: m01: no image;")
    assert "m05: install_failed: pip exited 1;" in check.description


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


def test_sandbox_limits_override_the_rules_and_are_validated_like_them():
    from harnessforge.envs.sandbox import Limits
    from harnessforge.rules import load_rules

    shipped = load_rules()
    assert SandboxResource().rules(shipped) is shipped  # no limit set: the rules as they are
    limited = SandboxResource(memory="3g", cpus=1.5, pids_limit=64, exec_timeout_s=30).rules(shipped)
    env = limited.environments
    assert (env.memory, env.cpus, env.pids_limit, env.exec_timeout_s) == ("3g", 1.5, 64, 30)
    assert env.base_images == shipped.environments.base_images  # the rest stays
    assert Limits.from_rules(env).memory_bytes == 3 * 1024**3  # what the sandboxes get
    with pytest.raises(ValidationError, match="memory"):
        SandboxResource(memory="lots").rules(shipped)


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


# ---- raw_trajectories: the Dev agent on one milestone -----------------------------------------------
TRAJECTORY_FILES = RunFiles.FILES


def test_raw_trajectories_run_the_chain_in_order_in_docker(example_repo, store, docker_client, base_image):
    from harnessforge.models.run import MilestoneSummary

    key, instance, resources = _plan_in_dagster(example_repo, store, sandbox="docker")
    resources = {**resources, "agent": AgentResource(run_id="oracle-dg")}
    assert dg.materialize([docker_images], instance=instance, partition_key=key, resources=resources).success
    for mid in ("m01", "m02"):
        validated = dg.materialize(
            [validated_milestones], instance=instance, partition_key=repo_milestone_key(key, mid), resources=resources
        )
        assert validated.success and store.load_milestone(key, mid).status == "valid"
    run_dir = store.root / "trajectories" / key / "oracle-dg"

    def materialize(mid: str, res=resources):
        return dg.materialize(
            [raw_trajectories],
            instance=instance,
            partition_key=repo_milestone_key(key, mid),
            resources=res,
            raise_on_error=False,
        )

    # m02 first: the chain runs up to it, m01 then m02, and both are recorded, each once.
    result = materialize("m02")
    assert result.success
    events = {event.partition: event for event in result.get_asset_materialization_events()}
    assert set(events) == {f"m01|{key}", f"m02|{key}"}
    meta = {k: v.value for k, v in events[f"m01|{key}"].materialization.metadata.items()}
    summary = MilestoneSummary.model_validate_json((run_dir / "m01" / "summary.json").read_text())
    assert summary.status == "PASS" and summary.run_id == "oracle-dg" and summary.synthetic
    assert all((run_dir / "m01" / f).exists() for f in TRAJECTORY_FILES)
    assert (run_dir / "metadata.json").exists()
    assert meta["status"] == "PASS" and meta["turns"] == summary.turns > 0
    assert meta["hints"] == len(summary.hints_released) and meta["hint_levels"] == summary.hints_released
    assert meta["tokens_input"] == summary.tokens.input and meta["cost_usd"] == summary.cost_usd
    assert meta["wall_s"] == summary.wall_s and meta["synthetic"] is True and meta["agent"] == "oracle"
    assert meta["model"] == "oracle-v1"
    assert meta["previous_milestone"] == "" and meta["run_id"] == "oracle-dg" and meta["attempt"] == "new"
    assert meta["stopped_by"] == "" and meta["reset_to"] == ""  # it passed: no budget ran out, no reset
    assert meta["path"] == str(run_dir / "m01") and meta["summary"] == str(run_dir / "m01" / "summary.json")
    assert meta["trajectory"] == str(run_dir / "m01" / "trajectory.jsonl")
    # Each partition carries Dagster's provenance: its code version and the validation it read.
    tags = events[f"m01|{key}"].materialization.tags
    assert tags["dagster/data_version"] and tags["dagster/input_data_version/validated_milestones"]
    # m02 continued the chain, remembering m01.
    meta = {k: v.value for k, v in events[f"m02|{key}"].materialization.metadata.items()}
    assert meta["previous_milestone"] == "m01" and meta["attempt"] == "new"
    start = json.loads((run_dir / "m02" / "trajectory.jsonl").read_text().splitlines()[0])
    m01_title = store.load_milestone(key, "m01").title
    assert start["action"]["type"] == "milestone_start" and f"- m01 {m01_title}: PASS" in start["action"]["content"]
    materialized = instance.get_materialized_partitions(dg.AssetKey("raw_trajectories"))
    assert materialized == {f"m01|{key}", f"m02|{key}"}  # m03..m06 (not valid here) are not

    # The same milestone again in the same run: not run twice (a new attempt is a new run id), and not
    # recorded twice: the trajectory Dagster has is the same.
    before = (run_dir / "m01" / "summary.json").read_bytes()
    again = materialize("m01")
    assert again.success and again.get_asset_materialization_events() == []
    assert (run_dir / "m01" / "summary.json").read_bytes() == before
    records = instance.fetch_materializations(dg.AssetKey("raw_trajectories"), limit=10).records
    assert sorted(record.partition_key for record in records) == [f"m01|{key}", f"m02|{key}"]


def _set_status(store, key: str, **statuses) -> None:
    for mid, status in statuses.items():
        store.update_milestone(key, store.load_milestone(key, mid).model_copy(update={"status": status}))


def test_raw_trajectories_skip_a_milestone_that_is_not_valid(example_repo, store):
    key, instance, resources = _plan_in_dagster(example_repo, store)
    resources = {**resources, "agent": AgentResource()}
    _set_status(store, key, m01="does_not_reproduce")  # what validated_milestones records for such a milestone
    result = dg.materialize(
        [raw_trajectories], instance=instance, partition_key=repo_milestone_key(key, "m01"), resources=resources
    )
    assert result.success
    (event,) = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    assert meta["status"] == "skipped" and meta["skipped"] is True
    assert meta["validation_status"] == "does_not_reproduce" and "not 'valid'" in meta["reason"]
    assert meta["run_id"] == "dagster-oracle"
    assert not (store.root / "trajectories").exists()

    # A milestone that was never validated: run validated_milestones first.
    result = dg.materialize(
        [raw_trajectories],
        instance=instance,
        partition_key=repo_milestone_key(key, "m02"),
        resources=resources,
        raise_on_error=False,
    )
    assert (
        f"{key} m02 is not validated yet: materialize validated_milestones partition 'm02|{key}' first"
        in _failure_message(result)
    )


def test_chain_predecessor_skips_invalid_milestones_and_names_the_first_missing_partition(example_repo, store):
    key, _, _ = _plan_in_dagster(example_repo, store)
    _set_status(store, key, m01="does_not_reproduce", m02="valid", m03="valid", m04="valid", m06="valid")
    plan = store.load_plan(key)  # m05: never validated (status None)
    run = store.root / "trajectories" / key / "r1"

    def finish(mid: str) -> None:
        (run / mid).mkdir(parents=True)
        (run / mid / "summary.json").write_text("{}")

    assert chain_predecessor(store, plan, "m01", "r1") is None  # the chain starts here
    assert chain_predecessor(store, plan, "m02", "r1") is None  # m01 is skipped by the chain
    with pytest.raises(dg.Failure, match=f"materialize raw_trajectories partition 'm02\\|{key}' first"):
        chain_predecessor(store, plan, "m04", "r1")  # the earliest missing one, not m03
    finish("m02")
    assert chain_predecessor(store, plan, "m03", "r1") == "m02"
    with pytest.raises(dg.Failure, match="run 'r2' has no finished trajectory for m02"):
        chain_predecessor(store, plan, "m03", "r2")  # another run id is another chain
    finish("m03")
    finish("m04")
    # m05's place in the chain is unknown until it is validated, so m06 waits for it.
    with pytest.raises(
        dg.Failure,
        match=f"earlier milestone m05 is not validated yet: materialize "
        f"validated_milestones partition 'm05\\|{key}' first",
    ):
        chain_predecessor(store, plan, "m06", "r1")
    _set_status(store, key, m05="does_not_reproduce")
    assert chain_predecessor(store, store.load_plan(key), "m06", "r1") == "m04"


def test_a_self_dependency_on_the_previous_milestone_is_not_expressible():
    """Why raw_trajectories enforces chain order in code: Dagster allows self-dependencies only
    through a time dimension, and the milestone dimension is dynamic."""
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="depends on itself"):

        @dg.asset(name="chain", partitions_def=repo_milestone_partitions, deps=["chain"])
        def chain() -> None: ...


def test_agent_resource_is_validated_and_builds_the_agent():
    from harnessforge.agents.oracle import OracleAgent

    default = AgentResource()
    assert default.backend == "oracle" and default.run_name() == "dagster-oracle"
    assert AgentResource(backend="anthropic").run_name() == "dagster-anthropic"
    assert AgentResource(run_id="exp-1.a").run_name() == "exp-1.a"
    dev = AgentResource(seed=3, profiles={"m02": "needs_hints"}).build()
    assert isinstance(dev, OracleAgent) and dev.seed == 3 and dev.profiles == {"m02": "needs_hints"}
    assert dev.synthetic
    # a key from the resource (an EnvVar in the code location) reaches the real SDK client
    with AgentResource(backend="anthropic", api_key="sk-test", base_url="http://127.0.0.1:9/").build() as api:
        assert api.client.api_key == "sk-test" and api.base_url == "http://127.0.0.1:9/"
    with AgentResource(backend="openai", api_key="sk-o", base_url="http://127.0.0.1:9/v1").build() as api:
        assert api.client.api_key == "sk-o" and str(api.client.base_url) == "http://127.0.0.1:9/v1/"
    # with the rules, as `raw_trajectories` builds it: the rules' sampling, as `harnessforge run` asks (one policy)
    from harnessforge.rules import load_rules

    with AgentResource(backend="openai", model="gpt-4o", api_key="sk-o").build(load_rules()) as api:
        assert api.max_tokens == 16384 and api.policy() == {"sampling": {"max_tokens": 16384}}
    with pytest.raises(ValidationError, match="not one of oracle, anthropic, openai, claude-code"):
        AgentResource(backend="claude")
    with pytest.raises(ValidationError, match="unknown oracle profile"):
        AgentResource(profiles={"m01": "lazy"})
    with pytest.raises(ValidationError, match="a directory name"):
        AgentResource(run_id="../escape")


def test_screening_blocks_planning_a_repo_below_the_thresholds(example_repo, store):
    """The shipped rules (screening.gate: block): the example repository is below real repositories'
    thresholds, so its screening check fails and planning does not run in the same run."""
    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    resources = {"store": StoreResource(root=str(store.root)), "github": GitHubResource()}
    result = dg.materialize(
        [repos, milestone_plans], instance=instance, partition_key=spec.key, resources=resources, raise_on_error=False
    )
    assert not result.success
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "screening_passed" and not check.passed
    assert check.severity == dg.AssetCheckSeverity.ERROR and "core_loc" in check.description
    assert [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()] == ["repos"]
    assert not store.plan_file(spec.key).exists()


def test_a_run_refuses_rules_that_changed_since_the_code_location_loaded(example_repo, store, tmp_path):
    """Code versions come from the rules the code location loaded; a run whose rules give another
    version fails in one line instead of recording its work under the old version."""
    from harnessforge.rules import load_rules
    from harnessforge_assets.versions import with_code_versions

    spec = resolve_repo(str(example_repo))
    open_repo(store, spec)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("repo", [spec.key])
    (versioned,) = with_code_versions([repos], load_rules(EXAMPLE_RULES))
    changed = tmp_path / "changed.yaml"
    changed.write_text("screening:\n  gate: warn\n  min_tests: 1\n")
    resources = {"store": StoreResource(root=str(store.root), rules_path=str(changed)), "github": GitHubResource()}
    result = dg.materialize(
        [versioned], instance=instance, partition_key=spec.key, resources=resources, raise_on_error=False
    )
    assert "repos: the rules changed since the code location loaded" in _failure_message(result)
    assert "reload the code location" in _failure_message(result)
    same = {**resources, "store": StoreResource(root=str(store.root), rules_path=EXAMPLE_RULES)}
    assert dg.materialize([versioned], instance=instance, partition_key=spec.key, resources=same).success


def test_the_demo_never_shares_the_factorys_store(monkeypatch, tmp_path):
    from harnessforge_assets.demo import demo_store_dir

    monkeypatch.setenv("HARNESSFORGE_HOME", str(tmp_path / "forge"))
    monkeypatch.delenv("HARNESSFORGE_DEMO_HOME", raising=False)
    assert demo_store_dir() == (tmp_path / "forge-demo").resolve()
    monkeypatch.setenv("HARNESSFORGE_DEMO_HOME", str(tmp_path / "forge"))
    with pytest.raises(ValueError, match="HARNESSFORGE_DEMO_HOME is the factory's store"):
        demo_store_dir()
