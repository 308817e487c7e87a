"""Stage 2 assets: each repo's Docker environment images, and each milestone validated in them."""

import hashlib

import dagster as dg

from harnessforge.envs.environment import build, validate
from harnessforge.errors import HarnessForgeError
from harnessforge.mining.merging import merge_untested
from harnessforge.models.env import RepoImages, Validation
from harnessforge.store import Store
from resources import GitHubResource, SandboxResource, StoreResource

from .automation import follows_upstream
from .events import model_version
from .partitions import plan_with, repo_milestone_partitions, repo_partitions, split_repo_milestone
from .plan import milestone_plans
from .versions import rules_for


def images_markdown(images: RepoImages) -> str:
    rows = ["| milestone | image | build seconds |", "|---|---|---|"]
    by_hash = {image.env_hash: image for image in images.images}
    for milestone_id, env_hash in sorted(images.milestone_images.items()):
        record = by_hash.get(env_hash)
        tag, seconds = (record.tag, record.build_seconds) if record else (env_hash, "")
        rows.append(f"| {milestone_id} | {tag} | {seconds} |")
    for milestone_id, why in sorted(images.failures.items()):
        rows.append(f"| {milestone_id} | **failed**: {why.splitlines()[0][:200]} | |")
    return "\n".join(rows)


@dg.asset(
    partitions_def=repo_partitions,
    group_name="environments",
    deps=[milestone_plans],
    kinds={"docker"},
    description="Docker images of a repo's dependency epochs: one per distinct recipe, reused across milestones.",
    pool="docker",  # image builds share one engine, its disk and the CPU
    automation_condition=follows_upstream(),
    check_specs=[
        dg.AssetCheckSpec(
            "every_milestone_has_image",
            asset="docker_images",
            partitions_def=repo_partitions,
            description="Every milestone of the plan has an image; the others are validated as env_error with the "
            "build's reason, so one broken epoch does not hold back the rest.",
        )
    ],
)
def docker_images(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    forge_store = store.store()
    key = context.partition_key
    try:
        images = build(forge_store, key, rules_for(context, store), log=context.log.info)
    except HarnessForgeError as e:  # no Docker engine, no plan, unknown repo: say so in one line
        raise dg.Failure(description=f"{key}: environment build failed: {e}", allow_retries=False) from None
    metadata = {
        "images": len(images.images),
        "milestones_with_image": len(images.milestone_images),
        "tags": dg.MetadataValue.json(sorted(image.tag for image in images.images)),
        "env_hashes": dg.MetadataValue.json(dict(sorted(images.milestone_images.items()))),
        "build_seconds": round(sum(image.build_seconds for image in images.images), 1),
        "failures": dg.MetadataValue.json(images.failures),
        "table": dg.MetadataValue.md(images_markdown(images)),
        "path": dg.MetadataValue.path(str(forge_store.images_file(key))),
    }
    milestones = forge_store.load_plan(key).milestones
    missing = [milestone.id for milestone in milestones if milestone.id not in images.milestone_images]
    reasons = [f"{milestone_id}: {images.failures.get(milestone_id, 'no image')}" for milestone_id in missing]
    why = "; ".join(reason.splitlines()[0] for reason in reasons)
    if missing:  # the milestones with an image go on to validation; the others get env_error there
        context.log.warning(f"{key}: {len(missing)} milestone(s) have no environment image: {why}")
    check = dg.AssetCheckResult(
        check_name="every_milestone_has_image",
        passed=not missing,
        metadata={"missing": dg.MetadataValue.json(missing)},
        description=f"{len(missing)} milestone(s) have no environment image: {why}" if missing else None,
    )
    # Downstream validations go stale only when an image actually changes, not on a cached rebuild.
    image_ids = ",".join(sorted(image.image_id for image in images.images))
    version = hashlib.sha256(image_ids.encode()).hexdigest()[:16]
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata, check_results=[check])


def validation_path(store: Store, key: str, milestone_id: str) -> str:
    return str(store.validation_file(key, milestone_id))


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
            automation_condition=follows_upstream(),
        )
    ],
    partitions_def=repo_milestone_partitions,
    can_subset=True,  # lets a no-op yield no check results either
    pool="docker",  # test runs in containers of the shared engine
    check_specs=[
        dg.AssetCheckSpec(
            "environment_ran",
            asset="validated_milestones",
            partitions_def=repo_milestone_partitions,
            description="The milestone's tests ran: its status is not env_error.",
        ),
        dg.AssetCheckSpec(
            "valid_has_fail_to_pass",
            asset="validated_milestones",
            partitions_def=repo_milestone_partitions,
            blocking=True,  # a "valid" milestone with nothing to solve must not reach the agent
            description="A valid milestone has at least one FAIL_TO_PASS test.",
        ),
    ],
)
def validated_milestones(
    context: dg.AssetExecutionContext, store: StoreResource, sandbox: SandboxResource, github: GitHubResource
):
    """Validate the milestone; untested, it merges into the next one, which is validated again in this run
    (`merge_untested`); already merged, its verdict stays as it was."""
    forge_store = store.store()
    key, milestone_id = split_repo_milestone(context.partition_key)
    plan = plan_with(forge_store, key, milestone_id, context.log.info)
    if plan is None:
        return
    rules = sandbox.rules(rules_for(context, store))

    def again(other: str) -> Validation:
        (validation,) = validate(
            forge_store, key, rules, milestone=other, backend=sandbox.backend, log=context.log.info
        )
        return validation

    try:
        if plan.milestone(milestone_id).status == "merged":
            validation = forge_store.load_validation(key, milestone_id)
        else:
            validation = again(milestone_id)
            spec = forge_store.load_repo(key)
            merge_untested(forge_store, key, rules, again, github.factory(forge_store)(spec), log=context.log.info)
    except HarnessForgeError as e:
        why = f"{key} {milestone_id}: validation could not run: {e}"
        raise dg.Failure(description=why, allow_retries=False) from None
    metadata = validation_metadata(validation, validation_path(forge_store, key, milestone_id))
    metadata["merged_into"] = forge_store.load_plan(key).milestone(milestone_id).merged_into or ""
    # What the agent and the grading read: an unchanged re-validation leaves the runs below it in sync.
    version = model_version(validation, include={"status", "reason", "fail_to_pass", "pass_to_pass", "image"})
    yield dg.MaterializeResult(
        asset_key="validated_milestones",
        metadata=metadata,
        check_results=checks(validation),
        data_version=dg.DataVersion(version),
    )


def validation_metadata(validation: Validation, path: str) -> dict:
    return {
        "status": validation.status,
        "reason": validation.reason or "",
        "fail_to_pass": len(validation.fail_to_pass),
        "pass_to_pass": len(validation.pass_to_pass),
        "flaky": len(validation.flaky),
        "not_reproduced": len(validation.not_reproduced),
        "broken": len(validation.broken),
        "repeats": validation.repeats,
        "image": validation.image,
        "fail_to_pass_tests": dg.MetadataValue.json(validation.fail_to_pass),
        "detail": dg.MetadataValue.md(f"```\n{validation.detail[-2000:]}\n```") if validation.detail else "",
        "path": dg.MetadataValue.path(path),
    }


def checks(validation: Validation) -> list[dg.AssetCheckResult]:
    return [
        dg.AssetCheckResult(
            check_name="environment_ran",
            passed=validation.status != "env_error",
            metadata={"status": validation.status, "reason": validation.reason or ""},
        ),
        dg.AssetCheckResult(
            check_name="valid_has_fail_to_pass",
            passed=validation.status != "valid" or bool(validation.fail_to_pass),
            metadata={"fail_to_pass": len(validation.fail_to_pass)},
        ),
    ]
