"""Asset jobs by stage. Each run carries the tag `harnessforge/stage` (to find a stage's runs in the
UI; the limits are the assets' pools, in the deploys' dagster.yaml). `factory_in_docker` runs every
step in the project image (dagster-docker): only where a Docker engine serves the steps, so only
when the code location runs with HARNESSFORGE_DOCKER_EXECUTOR=1 (the Docker deploy sets it, the
Kubernetes one does not)."""

import os

import dagster as dg
from dagster_docker import docker_executor

from .analytics import milestone_assets

# a milestone's analytics (not the per-repo ones: a job has one partitioning), then its distilled rows
DISTILL = dg.AssetSelection.assets(*milestone_assets()) | (
    dg.AssetSelection.groups("distill") - dg.AssetSelection.assets("training_datasets")
)

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

DOCKER_EXECUTOR = "HARNESSFORGE_DOCKER_EXECUTOR"


def factory_in_docker():
    """The job, defined only on request: its steps need a Docker engine."""
    return dg.define_asset_job(
        "factory_in_docker",
        selection=dg.AssetSelection.assets("raw_trajectories"),
        executor_def=docker_executor,
        tags={"harnessforge/stage": "agent"},
        description="run_agent with each step in a container of the project image (deploy/docker_executor.yaml).",
    )


jobs = [
    dg.define_asset_job(name, selection=selection, tags={"harnessforge/stage": stage}, description=description)
    for name, stage, selection, description in STAGES
] + ([factory_in_docker()] if os.environ.get(DOCKER_EXECUTOR) == "1" else [])
