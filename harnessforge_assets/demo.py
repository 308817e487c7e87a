"""The demo as a Dagster asset in a code location of its own: `harnessforge demo` (the example
repository through every stage with the offline oracle), so `dagster dev` shows it materialized with
its report and counts.

It has its own store (`$HARNESSFORGE_DEMO_HOME`, default `forge_demo` beside the factory's store):
its synthetic export never lands in the factory's `datasets/`, and the factory's "Materialize all"
does not include it (`workspace.yaml` loads it as the `harnessforge_demo` location).
"""

import os
from pathlib import Path

import dagster as dg

from harnessforge.demo import run_demo
from harnessforge.errors import HarnessForgeError
from harnessforge.store import default_store_dir
from resources import SandboxResource, StoreResource


def demo_store_dir() -> Path:
    """The demo's store: never the factory's (a demo store equal to it is refused)."""
    factory = default_store_dir().resolve()
    demo_dir = Path(os.environ.get("HARNESSFORGE_DEMO_HOME") or factory.with_name(f"{factory.name}-demo")).resolve()
    if demo_dir == factory:
        raise ValueError(f"HARNESSFORGE_DEMO_HOME is the factory's store ({factory}): give the demo its own")
    return demo_dir


def hint_levels(levels: list[int]) -> str:
    return ",".join(f"L{level}" for level in levels) or "-"


@dg.asset(
    group_name="demo",
    kinds={"python"},
    description="The bundled example repository through every stage, offline, with the oracle Dev: plan, "
    "environment, validation, the chain, distillation, export (synthetic allowed) and the HTML report. "
    "Re-materializing reuses what exists.",
)
def demo(context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource) -> dg.MaterializeResult:
    try:
        result = run_demo(
            store.store(),
            sandbox.rules(store.rules()),
            sandbox.backend,
            log=context.log.info,
            stage=lambda name: context.log.info(f"stage: {name}"),
        )
    except HarnessForgeError as e:
        raise dg.Failure(description=f"demo: {e}", allow_retries=False) from None
    rows = "\n".join(
        f"| {summary.milestone_id} | {summary.status} | {summary.turns} | {hint_levels(summary.hints_released)} |"
        for summary in result.summaries
    )
    return dg.MaterializeResult(
        metadata={
            "repo": result.repo,
            "sandbox": result.sandbox,
            "chain": dg.MetadataValue.md(f"| milestone | status | turns | hints |\n|---|---|---|---|\n{rows}"),
            **{f"distilled/{name}": count for name, count in result.counts.items()},
            **{name.replace(" ", "_"): dg.MetadataValue.path(str(path)) for name, path in result.paths.items()},
        }
    )


demo_defs = dg.Definitions(
    assets=[demo],
    jobs=[dg.define_asset_job("run_demo", selection=[demo], description="`harnessforge demo`, every stage.")],
    resources={"store": StoreResource(root=str(demo_store_dir())), "sandbox": SandboxResource()},
)
