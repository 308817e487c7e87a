"""`new_release_sensor`: a new release upstream adds the repo's partition and requests its screening
and planning, in one run: `repos`' blocking check `screening_passed` stops a repo that fails
screening before it is planned. Every later stage follows by automation (`harnessforge_automation`).

Each tick checks a page of the watch list (`upstream.per_tick` repos, round robin, several at once,
each remote bounded by a timeout: `resources/upstream.py`), so a long list stays inside the
sensor's deadline; the cursor keeps the page position and the newest release seen per repo. Tags
come from `git ls-remote` (no clone), or from GitHub's published releases when a token is set. A
request's `run_key` is `<repo>:<tag>`, so the same release never requests a second run, even if the
cursor were lost.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import dagster as dg
from pydantic import BaseModel

from harnessforge.errors import HarnessForgeError
from harnessforge.mining.releases import newest_release, remote_tags
from harnessforge.models import RepoSpec
from harnessforge.repos import spec_for
from harnessforge.store import Store
from harnessforge_assets.partitions import repo_partitions
from resources import GitHubResource, StoreResource, UpstreamResource


class ReleaseCursor(BaseModel):
    next: int = 0  # where the next tick's page starts in the watch list
    seen: dict[str, str] = {}  # repo key -> newest release already requested


def newest_upstream(spec: RepoSpec, store: Store, github: GitHubResource, upstream: UpstreamResource) -> str | None:
    """The newest release tag upstream: GitHub's published releases when watched and a token is set, else
    the remote's tags."""
    client = github.factory(store)(spec) if upstream.github_releases and spec.github else None
    tags = client.release_tags(spec.github) if client else remote_tags(spec.url, timeout=upstream.remote_timeout_s)
    return newest_release(tags)


def _check(watched: str, store: Store, github: GitHubResource, upstream: UpstreamResource):
    """(spec, newest tag, None) or (None, None, why it could not be checked)."""
    try:
        spec = spec_for(store, watched)
        return spec, newest_upstream(spec, store, github, upstream), None
    except HarnessForgeError as e:  # one unreachable remote does not stop the others
        return None, None, f"{watched}: {e}"


@dg.sensor(
    target=dg.AssetSelection.assets("repos", "milestone_plans"),
    minimum_interval_seconds=int(os.environ.get("HARNESSFORGE_RELEASE_INTERVAL_S") or 300),
    description="New release tags upstream: add the repo partition, screen and plan it (run key repo:tag).",
)
def new_release_sensor(
    context: dg.SensorEvaluationContext, store: StoreResource, github: GitHubResource, upstream: UpstreamResource
) -> dg.SensorResult:
    cursor = ReleaseCursor.model_validate_json(context.cursor) if context.cursor else ReleaseCursor()
    forge_store = store.store()
    watch = upstream.repos or forge_store.repo_keys()
    if not watch:
        return dg.SensorResult(skip_reason="nothing to watch: set the upstream resource's repos, or register a repo")
    start = cursor.next % len(watch)
    page = [watch[(start + offset) % len(watch)] for offset in range(min(upstream.per_tick, len(watch)))]
    cursor.next = (start + len(page)) % len(watch)
    with ThreadPoolExecutor(max_workers=upstream.parallel_checks) as pool:
        checked = list(pool.map(lambda watched: _check(watched, forge_store, github, upstream), page))
    known = set(context.instance.get_dynamic_partitions(repo_partitions.name))
    new_keys, requests = [], []
    for spec, tag, problem in checked:
        if problem:
            context.log.warning(problem)
        if spec is None or tag is None or cursor.seen.get(spec.key) == tag:
            continue
        cursor.seen[spec.key] = tag
        forge_store.save_repo(spec)  # the `repos` asset resolves the partition key through the store
        if spec.key not in known:
            new_keys.append(spec.key)
        requests.append(
            dg.RunRequest(
                partition_key=spec.key,
                run_key=f"{spec.key}:{tag}",
                tags={"harnessforge/release": tag, "harnessforge/stage": "plan"},
            )
        )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[repo_partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=cursor.model_dump_json(),
        skip_reason=None if requests else f"no new release among {len(page)} repo(s) checked",
    )
