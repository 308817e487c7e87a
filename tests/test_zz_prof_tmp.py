import time
import dagster as dg
from tests.test_dagster import _plan_in_dagster, repo_milestone_key, docker_images, validated_milestones, raw_trajectories, AgentResource

def test_prof(example_repo, store, docker_client, base_image):
    t=time.monotonic()
    def lap(what):
        nonlocal t
        n=time.monotonic(); print(f"{what}: {n-t:.1f}s"); t=n
    key, instance, resources = _plan_in_dagster(example_repo, store, sandbox="docker"); lap("plan")
    resources = {**resources, "agent": AgentResource(run_id="p")}
    dg.materialize([docker_images], instance=instance, partition_key=key, resources=resources); lap("images")
    for mid in ("m01","m02"):
        dg.materialize([validated_milestones], instance=instance, partition_key=repo_milestone_key(key, mid), resources=resources); lap("val "+mid)
    for mid in ("m01","m02"):
        r=dg.materialize([raw_trajectories], instance=instance, partition_key=repo_milestone_key(key, mid), resources=resources); lap("run "+mid)
        print({k: v.value for k, v in r.get_asset_materialization_events()[0].materialization.metadata.items() if k in ("turns","wall_s")})
