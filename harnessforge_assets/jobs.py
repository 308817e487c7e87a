"""Asset jobs by stage. Each run carries the tag `harnessforge/stage`, which `deploy/dagster.yaml`
uses to limit how many runs of a kind go at once (LLM-bound agent runs apart from CPU-bound builds
and distillation). `factory_in_docker` runs every step in the project image (dagster-docker)."""

import dagster as dg
from dagster_docker import docker_executor

DISTILL = dg.AssetSelection.groups("distill") - dg.AssetSelection.assets("training_datasets")

# name, stage tag, selection, description
STAGES = [
    (
        "plan_repo",
        "plan",
        dg.AssetSelection.assets("repos", "milestone_plans"),
        "Screen a repo and mine its milestone plan (one repo partition).",
    ),
    (
        "build_environments",
        "env",
        dg.AssetSelection.assets("docker_images"),
        "Build a repo's Docker environment images.",
    ),
    (
        "validate_milestones",
        "env",
        dg.AssetSelection.assets("validated_milestones"),
        "Run a milestone's tests at base and verify: FAIL_TO_PASS / PASS_TO_PASS.",
    ),
    (
        "run_agent",
        "agent",
        dg.AssetSelection.assets("raw_trajectories"),
        "The Dev agent on milestones of a repo's chain (a range runs as one run, in chain order).",
    ),
    ("distill", "distill", DISTILL, "Analytics, then one milestone partition's distilled rows and verified task."),
]

jobs = [
    dg.define_asset_job(name, selection=selection, tags={"harnessforge/stage": stage}, description=description)
    for name, stage, selection, description in STAGES
] + [
    dg.define_asset_job(
        "factory_in_docker",
        selection=dg.AssetSelection.assets("raw_trajectories"),
        executor_def=docker_executor,
        tags={"harnessforge/stage": "agent"},
        description="run_agent with each step in a container of the project image (deploy/docker_executor.yaml).",
    )
]
