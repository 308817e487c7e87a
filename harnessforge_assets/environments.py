"""Stage 2 assets: each repo's Docker environment images, and each milestone validated in them."""

import hashlib

import dagster as dg

from harnessforge.envs.environment import build, validate
from harnessforge.errors import HarnessForgeError
from harnessforge.models.env import RepoImages, Validation
from harnessforge.store import Store
from resources import SandboxResource, StoreResource

from .partitions import plan_with, repo_milestone_partitions, repo_partitions, split_repo_milestone
from .plan import milestone_plans


def images_markdown(images: RepoImages) -> str:
    rows = ["| milestone | image | build seconds |", "|---|---|---|"]
    by_hash = {i.env_hash: i for i in images.images}
    for mid, h in sorted(images.milestone_images.items()):
        record = by_hash.get(h)
        rows.append(f"| {mid} | {record.tag if record else h} | {record.build_seconds if record else ''} |")
    for mid, why in sorted(images.failures.items()):
        rows.append(f"| {mid} | **failed**: {why.splitlines()[0][:200]} | |")
    return "\n".join(rows)


@dg.asset(
    partitions_def=repo_partitions,
    group_name="environments",
    deps=[milestone_plans],
    kinds={"docker"},
    description="Docker images of a repo's dependency epochs: one per distinct recipe, reused across milestones.",
    check_specs=[
        dg.AssetCheckSpec(
            "every_milestone_has_image",
            asset="docker_images",
            description="Every milestone of the plan has an image; the others are validated as env_error with the "
            "build's reason, so one broken epoch does not hold back the rest.",
        )
    ],
)
def docker_images(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    s = store.store()
    key = context.partition_key
    try:
        images = build(s, key, store.rules(), log=context.log.info)
    except HarnessForgeError as e:  # no Docker engine, no plan, unknown repo: say so in one line
        raise dg.Failure(description=f"{key}: environment build failed: {e}", allow_retries=False) from None
    metadata = {
        "images": len(images.images),
        "milestones_with_image": len(images.milestone_images),
        "tags": dg.MetadataValue.json(sorted(i.tag for i in images.images)),
        "env_hashes": dg.MetadataValue.json(dict(sorted(images.milestone_images.items()))),
        "build_seconds": round(sum(i.build_seconds for i in images.images), 1),
        "failures": dg.MetadataValue.json(images.failures),
        "table": dg.MetadataValue.md(images_markdown(images)),
        "path": dg.MetadataValue.path(str(s.images_file(key))),
    }
    missing = [m.id for m in s.load_plan(key).milestones if m.id not in images.milestone_images]
    why = "; ".join(f"{mid}: {images.failures.get(mid, 'no image')}".splitlines()[0] for mid in missing)
    if missing:  # the milestones with an image go on to validation; the others get env_error there
        context.log.warning(f"{key}: {len(missing)} milestone(s) have no environment image: {why}")
    check = dg.AssetCheckResult(
        check_name="every_milestone_has_image",
        passed=not missing,
        metadata={"missing": dg.MetadataValue.json(missing)},
        description=f"{len(missing)} milestone(s) have no environment image: {why}" if missing else None,
    )
    # Downstream validations go stale only when an image actually changes, not on a cached rebuild.
    version = hashlib.sha256(",".join(sorted(i.image_id for i in images.images)).encode()).hexdigest()[:16]
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata, check_results=[check])


def validation_path(s: Store, key: str, mid: str) -> str:
    return str(s.validation_file(key, mid))


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "validated_milestones",
            group_name="environments",
            # (repo, mNN) reads partition `repo` of both: Dagster infers MultiToSingleDimensionPartitionMapping
            # because `repo` is a dimension of the multi-partition (tests/test_dagster.py asserts it).
            deps=[docker_images, milestone_plans],
            kinds={"docker", "python"},
            skippable=True,  # a milestone the repo's plan does not have: a no-op, nothing materialized
            description="A milestone's tests run at its base and verify commits: FAIL_TO_PASS and PASS_TO_PASS sets.",
        )
    ],
    partitions_def=repo_milestone_partitions,
    can_subset=True,  # lets a no-op yield no check results either
    check_specs=[
        dg.AssetCheckSpec(
            "environment_ran",
            asset="validated_milestones",
            description="The milestone's tests ran: its status is not env_error.",
        ),
        dg.AssetCheckSpec(
            "valid_has_fail_to_pass",
            asset="validated_milestones",
            blocking=True,  # a "valid" milestone with nothing to solve must not reach the agent
            description="A valid milestone has at least one FAIL_TO_PASS test.",
        ),
    ],  # fmt: skip
)
def validated_milestones(context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource):
    s = store.store()
    key, mid = split_repo_milestone(context.partition_key)
    if plan_with(s, key, mid, context.log.info) is None:
        return
    try:
        (v,) = validate(
            s, key, sandbox.rules(store.rules()), milestone=mid, backend=sandbox.backend, log=context.log.info
        )
    except HarnessForgeError as e:
        raise dg.Failure(description=f"{key} {mid}: validation could not run: {e}", allow_retries=False) from None
    metadata = validation_metadata(v, validation_path(s, key, mid))
    yield dg.MaterializeResult(asset_key="validated_milestones", metadata=metadata, check_results=checks(v))


def validation_metadata(v: Validation, path: str) -> dict:
    return {
        "status": v.status,
        "reason": v.reason or "",
        "fail_to_pass": len(v.fail_to_pass),
        "pass_to_pass": len(v.pass_to_pass),
        "flaky": len(v.flaky),
        "not_reproduced": len(v.not_reproduced),
        "broken": len(v.broken),
        "repeats": v.repeats,
        "image": v.image,
        "fail_to_pass_tests": dg.MetadataValue.json(v.fail_to_pass),
        "detail": dg.MetadataValue.md(f"```\n{v.detail[-2000:]}\n```") if v.detail else "",
        "path": dg.MetadataValue.path(path),
    }


def checks(v: Validation) -> list[dg.AssetCheckResult]:
    return [
        dg.AssetCheckResult(
            check_name="environment_ran",
            passed=v.status != "env_error",
            metadata={"status": v.status, "reason": v.reason or ""},
        ),
        dg.AssetCheckResult(
            check_name="valid_has_fail_to_pass",
            passed=v.status != "valid" or bool(v.fail_to_pass),
            metadata={"fail_to_pass": len(v.fail_to_pass)},
        ),
    ]
