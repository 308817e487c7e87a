"""The per-instance baseline of the corpus benchmark (the SWE-bench harness's way), and the removal of the
images a measurement made under fresh tags.

Per milestone: one image from a Dockerfile that copies in a git bundle of the repository (made on the host: no
network clone), checks out the base commit and installs the requirements our recipe installs plus the project
itself, built with `docker build --network host`; then K runs of the suite at base + test.patch and K at base +
ground_truth.patch + test.patch, each in a fresh `--network none` container, read with our runners' parsers so
the verdicts compare with ours (compare_seconds: wall seconds per validated milestone, ours and theirs).
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import docker
from corpus_entries import EntryResult, Log, Options, one_line
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from harnessforge.envs.classification import candidate_tests, classify, run_problem
from harnessforge.envs.images import CA_VARS, HOST_CA, OFFLINE_VARS, PLUGINS
from harnessforge.envs.recipes import DEPS_DIR, dependency_files
from harnessforge.envs.runners import PLUGIN_DIR, RESULTS_DIR, runner, test_files_of
from harnessforge.envs.sandbox import BASE_ENV, Limits
from harnessforge.envs.workspace import WORKSPACE
from harnessforge.gitio import GitRepo
from harnessforge.models.env import ImageRecord, Recipe, TestRun, Validation
from harnessforge.repos import open_repo
from harnessforge.rules import Rules
from harnessforge.store import Store

BASELINE_LABEL = "harnessforge.corpus"  # every baseline image and container carries it
BUILD_CA = "/tmp/hf-baseline-ca.crt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # docker build colours a step's stderr


# ---- the per-instance baseline (the SWE-bench harness's way) --------------------------------------------------------
def baseline_dockerfile(recipe: Recipe, base_commit: str, with_ca: bool) -> str:
    """Per instance: the repository from a bundle at the base commit, our recipe's install, then the project."""
    quote = json.dumps
    # The base's /workspace belongs to the sandbox user; root clones into it, as SWE-bench's /testbed.
    checkout = (
        f"git config --global --add safe.directory '*' && git clone -q --no-checkout /tmp/repo.bundle {WORKSPACE} "
        f"&& cd {WORKSPACE} && git checkout -q {base_commit} && rm /tmp/repo.bundle"
    )
    # Every layer carries the label, so the layers of a build that failed can be found and removed.
    lines = [f"FROM {recipe.base_image}", f"LABEL {BASELINE_LABEL}=baseline", 'SHELL ["/bin/bash", "-c"]']
    if with_ca:  # build arguments are in every RUN's environment and not in the image
        lines += [f"ARG {name}={BUILD_CA}" for name in CA_VARS] + [f"COPY ca.crt {BUILD_CA}"]
    lines += [
        f"COPY deps/ {DEPS_DIR}/",
        f"COPY plugins/ {PLUGIN_DIR}/",
        "COPY repo.bundle /tmp/repo.bundle",
        f"RUN {quote(['bash', '-c', checkout])}",
    ]
    online = {name: value for name, value in recipe.env.items() if name not in OFFLINE_VARS}
    lines += [f"ENV {name}={quote(value)}" for name, value in online.items()]
    lines += [f"RUN {quote(['bash', '-c', step])}" for step in recipe.install]
    lines.append(f"WORKDIR {WORKSPACE}")
    if recipe.language == "python":  # the project itself, as `pip install -e .` (build isolation, the index)
        install = "[ -f setup.py ] || [ -f pyproject.toml ] || exit 0; pip install -q --disable-pip-version-check -e ."
        lines.append(f"RUN {quote(['bash', '-c', install])}")
    # Other languages' prepare steps (a go.mod for a GOPATH-era checkout, the node_modules link) run per
    # test run after the patches, as an eval script's setup: a go.mod made here would block a patch adding one.
    lines += [f"ENV {name}={quote(value)}" for name, value in recipe.env.items() if name in OFFLINE_VARS]
    lines.append(f"RUN mkdir -p {RESULTS_DIR}")
    return "\n".join(lines) + "\n"


def _tar(files: dict[str, bytes], dirs: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for directory in dirs:
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build_context(recipe: Recipe, base_commit: str, bundle: bytes, deps: dict[str, bytes]) -> bytes:
    with_ca = HOST_CA.exists()
    files = {"Dockerfile": baseline_dockerfile(recipe, base_commit, with_ca).encode(), "repo.bundle": bundle}
    files.update({f"deps/{path}": data for path, data in deps.items()})
    files.update({f"plugins/{plugin.name}": plugin.read_bytes() for plugin in PLUGINS.glob("*.py")})
    if with_ca:
        files["ca.crt"] = HOST_CA.read_bytes()
    return _tar(files, dirs=("deps", "plugins"))


def docker_build(client: docker.DockerClient, context: bytes, tag: str, log_path: Path) -> None:
    """`docker build --network host` (from scratch: no layer cache), its output kept in `log_path`."""
    with open(log_path, "w") as out:
        fresh = {"rm": True, "forcerm": True, "nocache": True, "pull": False}  # no cache, no leftovers
        stream = client.api.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            network_mode="host",
            decode=True,
            **fresh,
            labels={BASELINE_LABEL: "baseline"},
        )
        tail: list[str] = []
        for chunk in stream:
            text = ANSI.sub("", chunk.get("stream") or chunk.get("status") or "")
            out.write(text)
            tail = (tail + [line for line in text.splitlines() if line.strip()])[-15:]
            if "error" in chunk:
                out.write(chunk["error"])
                raise RuntimeError(
                    f"docker build {tag} failed: {chunk['error'].strip()[:300]} (log {log_path}; "
                    f"last lines: {' | '.join(tail[-5:])[:600]})"
                )


def _results(container) -> dict[str, str]:
    """The runner's report files under RESULTS_DIR (name -> text)."""
    try:
        stream, _ = container.get_archive(RESULTS_DIR)
    except NotFound:
        return {}
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        return {
            Path(member.name).name: tar.extractfile(member).read().decode(errors="replace")
            for member in tar.getmembers()
            if member.isfile()
        }


def baseline_run(
    client: docker.DockerClient, image: str, recipe: Recipe, patches: list[bytes], rules: Rules
) -> TestRun:
    """One run in a fresh `--network none` container: apply the patches, run the whole suite, parse the report."""
    env = rules.environments
    limits = Limits.from_rules(env)
    container = client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        init=True,
        working_dir=WORKSPACE,
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        shm_size="256m",
        labels={BASELINE_LABEL: "run"},
        environment={**BASE_ENV, "HOME": "/root"},
    )
    try:
        names = [f"/tmp/hf-{i}.patch" for i, patch in enumerate(patches) if patch.strip()]
        if names:
            applied = [patch for patch in patches if patch.strip()]
            data = {name.lstrip("/"): patch for name, patch in zip(names, applied)}
            container.put_archive("/", _tar(data))
            code, out = container.exec_run(["git", "apply", "--whitespace=nowarn", "--binary", *names])
            if code != 0:
                raise RuntimeError(f"patch does not apply: {out.decode(errors='replace').strip()[-300:]}")
        for step in recipe.prepare if recipe.language != "python" else []:
            code, out = container.exec_run(["bash", "-c", step])
            if code != 0:
                raise RuntimeError(f"prepare step {step!r} failed: {out.decode(errors='replace').strip()[-300:]}")
        spec = runner(recipe.runner)
        if recipe.test_cmd:
            cmd = recipe.test_cmd.format(tests="", out=RESULTS_DIR, plugins=PLUGIN_DIR)
        else:
            cmd = spec.command([], RESULTS_DIR, PLUGIN_DIR)
        start = time.monotonic()
        code, out = container.exec_run(["timeout", "-k", "5", str(env.test_timeout_s), "bash", "-c", cmd])
        elapsed = time.monotonic() - start
        text = out.decode(errors="replace")
        run = spec.parse(_results(container), code, text)
        return run.model_copy(
            update={"timed_out": code == 124, "duration_s": round(elapsed, 2), "log_tail": text[-2000:]}
        )
    finally:
        container.remove(force=True)


def _remove_image(client: docker.DockerClient, tag: str) -> None:
    try:
        client.images.remove(tag, force=True)
    except (ImageNotFound, NotFound):
        pass
    except APIError as e:  # in use by someone's container: leave it, say so
        print(f"could not remove {tag}: {e.explanation}", file=sys.stderr)


def baseline_entry(store: Store, key: str, rules: Rules, result: EntryResult, options: Options, log: Log) -> dict:
    """The per-instance way on the same milestones as ours, and ours on them, in wall seconds."""
    client = docker.from_env(timeout=3600)  # committing large layers takes far longer than the default 10 s
    images = store.load_images(key)
    repo = open_repo(store, store.load_repo(key))
    milestones = store.load_plan(key).milestones
    chosen = [milestone for milestone in milestones if images.for_milestone(milestone.id) is not None]
    chosen = chosen[: options.baseline_milestones] if options.baseline_milestones else chosen
    out: dict = {"milestones": [], "bundle_s": 0.0}
    if not chosen:
        out["error"] = "no milestone has an image of ours: nothing to compare"
        return out
    start = time.perf_counter()
    bundle = _bundle(repo)
    out["bundle_s"] = round(time.perf_counter() - start, 2)
    out["bundle_bytes"] = len(bundle)
    logs = store.tool_dir("corpus-baseline", key)
    logs.mkdir(parents=True, exist_ok=True)
    rows_by_id = {milestone_row.id: milestone_row for milestone_row in result.rows}
    for milestone in chosen:
        image = images.for_milestone(milestone.id)
        row, ours = _our_side(store, key, milestone.id, rows_by_id, image)
        out["milestones"].append(row)
        tag = f"harnessforge-baseline/{key.lower()}:{milestone.id.lower()}"
        recipe = image.recipe
        ground_truth, test_patch = store.read_patches(key, milestone.id)
        started = time.perf_counter()
        try:
            files = repo.files(image.commit)
            deps = dependency_files(recipe, files, lambda path, commit=image.commit: repo.show(commit, path))
            context = build_context(recipe, milestone.base_commit, bundle, deps)
            docker_build(client, context, tag, logs / f"{milestone.id}.log")
            row["build_s"] = round(time.perf_counter() - started, 2)
            repeats = options.repeats
            base_runs, row["base_runs_s"] = _timed_runs(client, tag, recipe, [test_patch], rules, repeats)
            verify_patches = [ground_truth, test_patch]
            verify_runs, row["verify_runs_s"] = _timed_runs(client, tag, recipe, verify_patches, rules, repeats)
            _verdict(row, milestone, ours, recipe, base_runs, verify_runs, rules)
        except (DockerException, RuntimeError, OSError) as e:
            row["error"] = one_line(e)
            log(f"{result.name}: baseline {milestone.id}: {row['error']}")
        finally:
            row["total_s"] = round(time.perf_counter() - started, 2)
            if not options.keep_images:
                _remove_image(client, tag)
        log(
            f"{result.name}: baseline {milestone.id}: {row.get('status', 'error')}, "
            f"{row.get('fail_to_pass', 0)} FAIL_TO_PASS (ours {row['ours_status']}, {row['ours_fail_to_pass']}); "
            f"build {row.get('build_s', '-')}s, runs {row.get('base_runs_s', '-')}s + {row.get('verify_runs_s', '-')}s"
        )
    if not options.keep_images:
        _remove_leftover_layers(client)
    compare_seconds(out)
    return out


def _bundle(repo: GitRepo) -> bytes:
    """A git bundle of every ref: what each baseline image copies in instead of cloning over the network."""
    with tempfile.TemporaryDirectory(prefix="hf-corpus-bundle-") as tmp:
        bundle_path = Path(tmp) / "repo.bundle"
        repo.run("bundle", "create", str(bundle_path), "--all")
        return bundle_path.read_bytes()


def _our_side(
    store: Store, key: str, milestone_id: str, rows_by_id: dict, image: ImageRecord
) -> tuple[dict, Validation | None]:
    """A compared milestone's row, begun with our verdict, validation seconds and image; and our verdict."""
    ours_row = rows_by_id.get(milestone_id)
    row = {"milestone": milestone_id, "ours_status": ours_row.status if ours_row else "not validated"}
    try:
        ours = store.load_validation(key, milestone_id)
    except Exception:  # noqa: BLE001 - ours did not validate it: the baseline still runs
        ours = None
    row["ours_fail_to_pass"] = len(ours.fail_to_pass) if ours else 0
    row["ours_validation_s"] = ours_row.validation_s if ours_row else None
    row["ours_image"], row["ours_image_build_s"] = image.env_hash, image.build_seconds
    return row, ours


def _timed_runs(
    client: docker.DockerClient, tag: str, recipe: Recipe, patches: list[bytes], rules: Rules, repeats: int
) -> tuple[list[TestRun], float]:
    """K runs of the suite with these patches applied, and their wall seconds."""
    started = time.perf_counter()
    runs = [baseline_run(client, tag, recipe, patches, rules) for _ in range(repeats)]
    return runs, round(time.perf_counter() - started, 2)


def _remove_leftover_layers(client: docker.DockerClient) -> None:
    """The untagged layers a failed baseline build left behind (a removed image takes its own with it)."""
    try:
        labelled = client.images.list(all=True, filters={"label": BASELINE_LABEL})
        leftovers = [image for image in labelled if not image.tags]
    except DockerException:
        return
    for image in leftovers:
        try:
            client.images.remove(image.id, noprune=False)
        except DockerException:  # a parent of another leftover (gone with it), or in use
            pass


def _verdict(
    row: dict, milestone, ours: Validation | None, recipe: Recipe, base_runs, verify_runs, rules: Rules
) -> None:
    """The baseline's FAIL_TO_PASS over ours' candidates (else the changed files' tests), compared with ours."""
    ids = {test for run in base_runs + verify_runs for test in run.statuses}
    if ours and ours.candidates:
        candidates = list(ours.candidates)
    else:
        candidates = candidate_tests(recipe.runner, ids, milestone.test_files, {}, {})
    # The candidates our static trace left out (tests changed only by undescribed commits) are left out here too:
    # the comparison is of what each environment makes of the same tests.
    excluded = {test: why for test, why in (ours.rejected if ours else {}).items() if why.startswith("excluded")}
    problems = [problem for run in verify_runs if (problem := run_problem(run))]
    classified = classify(
        candidates,
        base_runs,
        verify_runs,
        lambda test: test_files_of(recipe.runner, [test])[0],
        rules.environments.max_pass_to_pass,
        excluded=excluded,
    )
    row["candidates"] = len(candidates)
    row["fail_to_pass"] = len(classified.fail_to_pass)
    row["status"] = "env_error" if problems else ("valid" if classified.fail_to_pass else "no_fail_to_pass")
    if problems:
        row["reason"] = problems[0]
        row["log_tail"] = verify_runs[0].log_tail[-400:]
    if ours is not None:
        # the SWE-bench way has no collateral rule: compare with ours before it set any test aside
        theirs, mine = set(classified.fail_to_pass), set(ours.fail_to_pass) | set(ours.collateral)
        row["same_fail_to_pass"] = theirs == mine
        row["only_ours"], row["only_baseline"] = sorted(mine - theirs)[:10], sorted(theirs - mine)[:10]


def compare_seconds(out: dict) -> None:
    """Wall seconds per validated milestone on the compared milestones: ours (our images' build, each
    dependency epoch once, plus validation) against the baseline (bundle, per-milestone builds and runs)."""
    rows = out["milestones"]
    epochs = {row["ours_image"]: row["ours_image_build_s"] for row in rows}
    ours_s = sum(epochs.values()) + sum(row["ours_validation_s"] or 0.0 for row in rows)
    base_s = out["bundle_s"] + sum(row.get("total_s", 0.0) for row in rows)
    ours_valid = sum(1 for row in rows if row["ours_status"] == "valid")
    base_valid = sum(1 for row in rows if row.get("status") == "valid")
    out.update(
        ours_s=round(ours_s, 2),
        baseline_s=round(base_s, 2),
        ours_valid=ours_valid,
        baseline_valid=base_valid,
        compared=len(rows),
        same_verdicts=sum(1 for row in rows if row.get("same_fail_to_pass")),
        ours_images_cached=sum(1 for seconds in epochs.values() if not seconds),
        ours_validation_timed=all(row["ours_validation_s"] is not None for row in rows),
    )
    out["ours_per_valid_s"] = round(ours_s / ours_valid, 2) if ours_valid else None
    out["baseline_per_valid_s"] = round(base_s / base_valid, 2) if base_valid else None
    ratio = None  # without our validation's seconds, ours would be only image builds: no ratio
    if out["ours_per_valid_s"] and out["baseline_per_valid_s"] and out["ours_validation_timed"]:
        ratio = out["baseline_per_valid_s"] / out["ours_per_valid_s"]
    out["speedup"] = round(ratio, 2) if ratio else None
    out["speedup_per_milestone"] = round(base_s / ours_s, 2) if ours_s and out["ours_validation_timed"] else None


# ---- images made under fresh tags ----------------------------------------------------------------------------------
def remove_fresh_images(key: str) -> int:
    """Our images of a fresh key (only those: other keys' images are shared with other stores)."""
    if ".fresh" not in key:
        return 0
    try:
        client = docker.from_env(timeout=600)
        images = client.images.list(name=f"harnessforge/{key.lower()}")
    except DockerException:
        return 0
    for image in images:
        for tag in image.tags:
            _remove_image(client, tag)
    return len(images)
