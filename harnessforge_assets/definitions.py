"""The code location: `dagster dev -w workspace.yaml` loads `defs`."""

from __future__ import annotations

import os

import dagster as dg

from harnessforge.rules import load_rules
from resources import AgentResource, GitHubResource, SandboxResource, StoreResource, UpstreamResource
from sensors import distill_sensor, new_release_sensor

from .analytics import analytics_assets
from .demo import demo
from .distill import stage3_assets
from .environments import docker_images, validated_milestones
from .jobs import jobs
from .plan import milestone_plans, repos
from .runs import raw_trajectories

assets = [
    repos,
    milestone_plans,
    docker_images,
    validated_milestones,
    raw_trajectories,
    *analytics_assets(load_rules(os.environ.get("HARNESSFORGE_RULES"))),
    *stage3_assets(load_rules(os.environ.get("HARNESSFORGE_RULES"))),
    demo,
]

defs = dg.Definitions(
    assets=assets,
    jobs=jobs,
    sensors=[new_release_sensor, distill_sensor],
    # Steps in their own processes; run-level and pool limits live in the instance's dagster.yaml.
    executor=dg.multiprocess_executor,
    resources={
        "store": StoreResource(),
        # The token reaches the run through EnvVar (never shown in the UI); no token, no GitHub.
        "github": GitHubResource(token=dg.EnvVar("GITHUB_TOKEN"))
        if os.environ.get("GITHUB_TOKEN")
        else GitHubResource(),
        "sandbox": SandboxResource(),
        # The offline oracle by default; pick anthropic/openai, a model and a run_id in the launchpad.
        "agent": AgentResource(),
        "upstream": UpstreamResource(),
    },
)
