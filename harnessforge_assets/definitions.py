"""The code location: `dagster dev -w workspace.yaml` loads `defs` (and the demo's own location).

One rules source: the `store` resource's rules file ($HARNESSFORGE_RULES) gives every asset its code
version here, and each run checks its rules still give the same (`versions.rules_for`).

Automation runs the Dev agent only when one is configured: `HARNESSFORGE_AGENT` names the backend
(oracle, anthropic, openai, claude-code) that `raw_trajectories` runs with when validations land.
Unset, automation stops after `validated_milestones`, and the asset's description says so.
"""

from __future__ import annotations

import os

import dagster as dg

from resources import AgentResource, GitHubResource, SandboxResource, StoreResource, UpstreamResource
from sensors import automation_sensor, new_release_sensor

from .analytics import analytics_assets
from .automation import follows_upstream
from .distill import stage3_assets
from .environments import docker_images, validated_milestones
from .jobs import jobs
from .plan import milestone_plans, repos
from .runs import raw_trajectories
from .versions import with_code_versions

AGENT = os.environ.get("HARNESSFORGE_AGENT")
NO_AGENT = (
    " Automation stops before this asset: no agent is configured (set HARNESSFORGE_AGENT to a backend, e.g. "
    "oracle or anthropic, and reload the code location); materialize it by hand meanwhile."
)


def agent_automation(spec: dg.AssetSpec) -> dg.AssetSpec:
    if AGENT:
        return spec.replace_attributes(automation_condition=follows_upstream())
    return spec.replace_attributes(description=(spec.description or "") + NO_AGENT)


store = StoreResource()
rules = store.rules()
assets = with_code_versions(
    [
        repos,
        milestone_plans,
        docker_images,
        validated_milestones,
        *dg.map_asset_specs(agent_automation, [raw_trajectories]),
        *analytics_assets(rules),
        *stage3_assets(rules),
    ],
    rules,
)

defs = dg.Definitions(
    assets=assets,
    jobs=jobs,
    sensors=[new_release_sensor, automation_sensor],
    # Steps in their own processes; run and pool limits live in the instance's dagster.yaml.
    executor=dg.multiprocess_executor,
    resources={
        "store": store,
        # The token reaches the run through EnvVar (never shown in the UI); no token, no GitHub.
        "github": GitHubResource(token=dg.EnvVar("GITHUB_TOKEN"))
        if os.environ.get("GITHUB_TOKEN")
        else GitHubResource(),
        # HARNESSFORGE_SANDBOX: docker, local, ... (default: auto, Docker when an engine answers)
        "sandbox": SandboxResource(backend=os.environ.get("HARNESSFORGE_SANDBOX") or "auto"),
        # HARNESSFORGE_AGENT's backend (default: the offline oracle); a model and a run_id in the launchpad.
        "agent": AgentResource(backend=AGENT or "oracle"),
        "upstream": UpstreamResource(),
    },
)
