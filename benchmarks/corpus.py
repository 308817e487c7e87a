"""The real-repository corpus: each release range screened, planned, built and validated; a yield table.

    .venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\
        --store /tmp/corpus-store --out docs/corpus.md [--json FILE] [--only flask,mux] \\
        [--baseline pluggy,httprouter] [--baseline-milestones N] [--repeats 3] [--fresh] [--no-docker]

Per entry, every stage is timed and a failing stage is recorded with its error while the run goes
on: clone (the store's copy of the local clone, else of `repo` on GitHub), screen (its verdict; a
failure does not stop the entry), plan, env build, validate (K = --repeats runs per side). The table
per range: milestones, type mix, feature-titled share, changelog entries covered, valid milestones,
FAIL_TO_PASS tests, every non-valid status and reason with counts, and wall seconds; then totals per
language and overall, judged against the targets of issue 16 (item 6).

`--baseline a,b` also measures those repositories the per-instance way (as the SWE-bench harness
does): per milestone one image from a Dockerfile that copies in a git bundle of the repository
(made on the host: no network clone), checks out the base commit and installs the requirements our
recipe installs plus the project itself, built with `docker build --network host`; then K runs of
the suite at base + test.patch and K at base + ground_truth.patch + test.patch, each in a fresh
`--network none` container, read with our runners' parsers so the verdicts compare with ours. Our
side of that comparison is built from scratch (a fresh image tag), and both are reported in wall
seconds per validated milestone. Images made under fresh tags are removed afterwards (--keep-images).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Literal

import docker
import yaml
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harnessforge.envs.classification import candidate_tests, classify, run_problem
from harnessforge.envs.environment import build as build_envs
from harnessforge.envs.environment import validate as validate_milestones
from harnessforge.envs.images import CA_VARS, HOST_CA, OFFLINE_VARS, PLUGINS
from harnessforge.envs.recipes import DEPS_DIR, dependency_files
from harnessforge.envs.runners import PLUGIN_DIR, RESULTS_DIR, runner, test_files_of
from harnessforge.envs.sandbox import BASE_ENV, Limits
from harnessforge.envs.workspace import WORKSPACE
from harnessforge.gitio import resolve_repo
from harnessforge.mining.planner import plan as plan_range
from harnessforge.mining.screening import screen
from harnessforge.models import RepoSpec
from harnessforge.models.env import Recipe, TestRun, Validation
from harnessforge.repos import open_repo
from harnessforge.rules import Rules, load_rules
from harnessforge.store import Store

Log = Callable[[str], None]
LANGUAGES = ("python", "go", "typescript", "javascript", "rust")
# Targets of issue 16, item 6. Valid shares are judged per group; JavaScript counts with TypeScript
# (one Node toolchain, one recipe).
VALID_TARGETS = {"python": 0.60, "go": 0.50, "typescript": 0.50}
TITLED_TARGET, COVERED_TARGET, SPEEDUP_TARGET = 0.90, 0.70, 5.0
MIN_FEATURES, MIN_MILESTONES = 5, 3
BASELINE_LABEL = "harnessforge.corpus"  # every baseline image and container carries it
BUILD_CA = "/tmp/hf-baseline-ca.crt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # docker build colours a step's stderr


# ---- the corpus file ------------------------------------------------------------------------------------------------
class Entry(BaseModel):
    """One release range of one repository."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    repo: str | None = Field(None, description="owner/name on GitHub: cloned when there is no local clone.")
    path: str | None = Field(None, description="A local clone; else <--root>/<name>.")
    language: Literal["python", "go", "typescript", "javascript", "rust"]
    from_ref: str = Field("default", alias="from")
    to_ref: str = Field("default", alias="to")

    @field_validator("from_ref", "to_ref", mode="before")
    @classmethod
    def _text(cls, v):
        return str(v)  # YAML reads an unquoted 1.10 as the number 1.1: keep what was written when it is quoted

    @property
    def group(self) -> str:
        return "typescript" if self.language == "javascript" else self.language


class CorpusError(Exception):
    """A corpus file or an option that cannot be used: one line, and nothing runs."""


def load_entries(path: Path) -> list[Entry]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise CorpusError(f"{path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise CorpusError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    rows = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise CorpusError(f"{path}: expected a list of entries (or `entries:` holding one)")
    entries = []
    for i, row in enumerate(rows, start=1):
        try:
            entries.append(Entry.model_validate(row))
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "entry"
            raise CorpusError(f"{path}: entry {i}: {where}: {err['msg']}") from None
    names = Counter(e.name for e in entries)
    if twice := sorted(n for n, k in names.items() if k > 1):
        raise CorpusError(f"{path}: entry names must be unique; repeated: {', '.join(twice)}")
    return entries


def select(entries: list[Entry], only: list[str], baseline: list[str]) -> list[Entry]:
    known = {e.name for e in entries}
    for option, names in (("--only", only), ("--baseline", baseline)):
        if unknown := [n for n in names if n not in known]:
            raise CorpusError(f"{option}: no entry named {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    if only and (outside := [n for n in baseline if n not in only]):
        raise CorpusError(f"--baseline {', '.join(outside)}: not selected by --only")
    return [e for e in entries if not only or e.name in only]


# ---- results --------------------------------------------------------------------------------------------------------
@dataclass
class MilestoneRow:
    id: str
    title: str
    type: str | None
    title_source: str | None
    status: str = "not validated"
    reason: str | None = None
    fail_to_pass: int = 0
    candidates: int = 0
    validation_s: float | None = None
    detail: str = ""


@dataclass
class EntryResult:
    name: str
    language: str
    group: str
    source: str = ""
    key: str = ""
    requested: str = ""  # the range as written
    range: str = ""  # the range planned
    notes: list[str] = field(default_factory=list)
    screen_passed: bool | None = None
    screen_failed: list[str] = field(default_factory=list)
    primary_language: str | None = None
    milestones: int = 0
    type_mix: dict[str, int] = field(default_factory=dict)
    feature_titled: int = 0
    entries_citing: int = 0
    entries_covered: int = 0
    validated: bool = False
    valid: int = 0
    fail_to_pass: int = 0
    not_valid: dict[str, int] = field(default_factory=dict)
    images_built: int = 0
    images_cached: int = 0
    image_build_s: float = 0.0  # the sum of our images' own build seconds (0 for a cached one)
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    errors: dict[str, str] = field(default_factory=dict)  # stage -> error line
    rows: list[MilestoneRow] = field(default_factory=list)
    baseline: dict | None = None

    @property
    def env_s(self) -> float | None:
        return self.seconds.get("env build")

    @property
    def validation_s(self) -> float | None:
        return self.seconds.get("validate")

    @property
    def per_valid_s(self) -> float | None:
        if not self.valid or self.validation_s is None:
            return None
        return ((self.env_s or 0.0) + self.validation_s) / self.valid


@dataclass
class Options:
    build: bool = True  # env build in Docker
    backend: str | None = "docker"  # the validation backend; None: no validation
    repeats: int = 3
    workers: int = 1
    collect: bool = True  # screening runs the language's collector
    fresh: bool = False  # every entry under a fresh image tag (built from scratch)
    keep_images: bool = False  # keep the images made under fresh tags
    baseline: tuple[str, ...] = ()
    baseline_milestones: int | None = None  # the first N milestones with an image; None: all
    stamp: str = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S"))


def _one_line(e: BaseException) -> str:
    text = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return f"{type(e).__name__}: {text[:400]}" if text else type(e).__name__


def _stage(result: EntryResult, stage: str, fn: Callable[[], object], log: Log):
    """Run one stage, timed; its error is recorded in one line and None returned (never raised)."""
    start = time.perf_counter()
    try:
        return fn()
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - one bad entry (or stage) must not stop the corpus
        result.errors[stage] = _one_line(e)
        log(f"{result.name}: {stage} failed: {result.errors[stage]}")
        return None
    finally:
        result.seconds[stage] = round(time.perf_counter() - start, 2)


def source_of(entry: Entry, root: Path | None) -> str:
    """The local clone (an explicit path, else <root>/<name>), else owner/name on GitHub."""
    if entry.path:
        if not Path(entry.path).exists():
            raise FileNotFoundError(f"no local clone at {entry.path}")
        return entry.path
    if root is not None and (root / entry.name).exists():
        return str(root / entry.name)
    if entry.repo:
        return entry.repo
    raise FileNotFoundError(f"no local clone at {root / entry.name if root else entry.name} and no `repo` to clone")


def fresh_spec(spec: RepoSpec, stamp: str) -> RepoSpec:
    """The same repository under a key (and so an image tag) no earlier build used: built from scratch."""
    return spec.model_copy(update={"key": f"{spec.key}.fresh{stamp}"})


class _Clock:
    """Per-milestone validation seconds from validate's own log: with one worker, milestones are
    validated one after the other and each is logged when done (`m01: valid: ...`)."""

    def __init__(self, ids: list[str], log: Log, prefix: str):
        self.ids, self.log, self.prefix = set(ids), log, prefix
        self.last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def __call__(self, line: str) -> None:
        mid = line.split(":", 1)[0]
        if mid in self.ids and mid not in self.seconds:
            now = time.perf_counter()
            self.seconds[mid] = round(now - self.last, 2)
            self.last = now
        self.log(f"{self.prefix}{line}")


def measure_entry(
    entry: Entry, store: Store, rules: Rules, root: Path | None, options: Options, log: Log = print
) -> EntryResult:
    """Clone, screen, plan, build and validate one range; each stage's seconds and errors are recorded."""
    result = EntryResult(entry.name, entry.language, entry.group, requested=f"{entry.from_ref} → {entry.to_ref}")
    prefix = f"{entry.name}: "

    def sub(line: str) -> None:
        log(f"{prefix}  {line}")

    def clone():
        result.source = source_of(entry, root)
        spec = resolve_repo(result.source)
        if options.fresh or entry.name in options.baseline:
            spec = fresh_spec(spec, options.stamp)
        result.key = spec.key
        open_repo(store, spec)
        return spec

    spec = _stage(result, "clone", clone, log)
    if spec is None:
        return result
    log(f"{prefix}clone of {result.source} as {spec.key} ({result.seconds['clone']:.1f}s)")

    report = _stage(result, "screen", lambda: screen(store, spec, rules, collect=options.collect), log)
    if report is not None:
        result.screen_passed = report.passed
        result.screen_failed = [c.name for c in report.criteria if c.passed is False]
        result.primary_language = report.primary_language
        failed = ", ".join(result.screen_failed) or "none"
        log(
            f"{prefix}screen: {'passed' if report.passed else 'failed'} (failed: {failed}) "
            f"({result.seconds['screen']:.1f}s)"
        )

    start, end = (None if r == "default" else r for r in (entry.from_ref, entry.to_ref))
    planned = _stage(result, "plan", lambda: plan_range(store, spec, rules, start, end), log)
    if planned is None:
        return result
    p = planned.plan
    result.range = f"{p.from_ref} → {p.to_ref}"
    result.notes = list(p.notes)
    result.milestones = len(p.milestones)
    result.type_mix = dict(p.report.type_mix)
    result.feature_titled = p.report.feature_titled
    result.entries_citing, result.entries_covered = p.report.entries_citing, p.report.entries_covered
    result.rows = [MilestoneRow(m.id, m.title, m.type, m.title_source) for m in p.milestones]
    covered = f"{result.entries_covered}/{result.entries_citing}"
    log(
        f"{prefix}plan {result.range}: {result.milestones} milestones, {result.feature_titled} feature-titled, "
        f"{covered} citing entries covered ({result.seconds['plan']:.1f}s)"
    )
    if not p.milestones:
        return result

    if options.build:
        images = _stage(result, "env build", lambda: build_envs(store, spec.key, rules, log=sub), log)
        if images is None:
            return result
        result.images_built = sum(1 for i in images.images if i.build_seconds)
        result.images_cached = len(images.images) - result.images_built
        result.image_build_s = round(sum(i.build_seconds for i in images.images), 2)
        log(
            f"{prefix}env build: {result.images_built} image(s) built, {result.images_cached} cached, "
            f"{len(images.failures)} milestone(s) without one ({result.seconds['env build']:.1f}s)"
        )
    if options.backend is None:
        return result

    clock = _Clock([m.id for m in p.milestones], log, prefix + "  ")
    backend = options.backend
    # The baseline compares seconds per milestone, which only one worker gives.
    workers = 1 if entry.name in options.baseline else options.workers

    def run():
        return validate_milestones(store, spec.key, rules, backend=backend, log=clock, workers=workers)

    started = datetime.now(timezone.utc).replace(microsecond=0)  # validated_at has whole seconds
    validations = _stage(result, "validate", run, log)
    if validations is None:  # it stopped midway: keep the verdicts it saved before
        if saved := saved_validations(store, spec.key, [m.id for m in p.milestones], started):
            record(result, saved, clock.seconds if workers == 1 else {})
            log(f"{prefix}validate: kept the {len(saved)} verdict(s) saved before it stopped")
        return result
    record(result, validations, clock.seconds if workers == 1 else {})
    log(
        f"{prefix}validate: {result.valid}/{result.milestones} valid, {result.fail_to_pass} FAIL_TO_PASS "
        f"({result.seconds['validate']:.1f}s)"
    )
    return result


def saved_validations(store: Store, key: str, ids: list[str], since: datetime) -> list[Validation]:
    """The verdicts validate wrote since `since` (older ones in the store belong to an earlier run)."""
    out = []
    for mid in ids:
        try:
            v = store.load_validation(key, mid)
        except Exception:  # noqa: BLE001 - none written (or unreadable): that milestone stays unvalidated
            continue
        if v.validated_at >= since:
            out.append(v)
    return out


def record(result: EntryResult, validations: list[Validation], seconds: dict[str, float]) -> None:
    """Fill the yield columns from validate's verdicts (a milestone it did not return stays 'not validated')."""
    by_id = {v.milestone_id: v for v in validations}
    result.validated = True
    for row in result.rows:
        v = by_id.get(row.id)
        if v is None:
            continue
        row.status, row.reason = v.status, v.reason
        row.fail_to_pass, row.candidates = len(v.fail_to_pass), len(v.candidates)
        row.validation_s = seconds.get(row.id)
        row.detail = v.detail.splitlines()[0][:300] if v.detail and v.status != "valid" else ""
    result.valid = sum(1 for r in result.rows if r.status == "valid")
    result.fail_to_pass = sum(r.fail_to_pass for r in result.rows)
    result.not_valid = dict(
        Counter(f"{r.status}: {r.reason}" if r.reason else r.status for r in result.rows if r.status != "valid")
    )


# ---- the per-instance baseline (the SWE-bench harness's way) --------------------------------------------------------
def baseline_dockerfile(recipe: Recipe, base_commit: str, with_ca: bool) -> str:
    """Per instance: the repository from a bundle at the base commit, our recipe's install, then the project."""
    q = json.dumps
    # The base's /workspace belongs to the sandbox user; root clones into it, as SWE-bench's /testbed.
    checkout = (
        f"git config --global --add safe.directory '*' && git clone -q --no-checkout /tmp/repo.bundle {WORKSPACE} "
        f"&& cd {WORKSPACE} && git checkout -q {base_commit} && rm /tmp/repo.bundle"
    )
    # Every layer carries the label, so the layers of a build that failed can be found and removed.
    lines = [f"FROM {recipe.base_image}", f"LABEL {BASELINE_LABEL}=baseline", 'SHELL ["/bin/bash", "-c"]']
    if with_ca:  # build arguments are in every RUN's environment and not in the image
        lines += [f"ARG {k}={BUILD_CA}" for k in CA_VARS] + [f"COPY ca.crt {BUILD_CA}"]
    lines += [
        f"COPY deps/ {DEPS_DIR}/",
        f"COPY plugins/ {PLUGIN_DIR}/",
        "COPY repo.bundle /tmp/repo.bundle",
        f"RUN {q(['bash', '-c', checkout])}",
    ]
    online = {k: v for k, v in recipe.env.items() if k not in OFFLINE_VARS}
    lines += [f"ENV {k}={q(v)}" for k, v in online.items()]
    lines += [f"RUN {q(['bash', '-c', step])}" for step in recipe.install]
    lines.append(f"WORKDIR {WORKSPACE}")
    if recipe.language == "python":  # the project itself, as `pip install -e .` (build isolation, the index)
        install = "[ -f setup.py ] || [ -f pyproject.toml ] || exit 0; pip install -q --disable-pip-version-check -e ."
        lines.append(f"RUN {q(['bash', '-c', install])}")
    # Other languages' prepare steps (a go.mod for a GOPATH-era checkout, the node_modules link) run per
    # test run after the patches, as an eval script's setup: a go.mod made here would block a patch adding one.
    lines += [f"ENV {k}={q(v)}" for k, v in recipe.env.items() if k in OFFLINE_VARS]
    lines.append(f"RUN mkdir -p {RESULTS_DIR}")
    return "\n".join(lines) + "\n"


def _tar(files: dict[str, bytes], dirs: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
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
    files.update({f"deps/{p}": data for p, data in deps.items()})
    files.update({f"plugins/{p.name}": p.read_bytes() for p in PLUGINS.glob("*.py")})
    if with_ca:
        files["ca.crt"] = HOST_CA.read_bytes()
    return _tar(files, dirs=("deps", "plugins"))


def docker_build(client: docker.DockerClient, context: bytes, tag: str, log_path: Path) -> None:
    """`docker build --network host` (from scratch: no layer cache), its output kept in `log_path`."""
    with open(log_path, "w") as out:
        stream = client.api.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            network_mode="host",
            rm=True,
            forcerm=True,
            nocache=True,
            pull=False,
            decode=True,
            labels={BASELINE_LABEL: "baseline"},
        )
        tail: list[str] = []
        for chunk in stream:
            text = ANSI.sub("", chunk.get("stream") or chunk.get("status") or "")
            out.write(text)
            tail = (tail + [ln for ln in text.splitlines() if ln.strip()])[-15:]
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
            Path(m.name).name: tar.extractfile(m).read().decode(errors="replace")
            for m in tar.getmembers()
            if m.isfile()
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
        names = [f"/tmp/hf-{i}.patch" for i, p in enumerate(patches) if p.strip()]
        if names:
            data = {n.lstrip("/"): p for n, p in zip(names, [p for p in patches if p.strip()])}
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
    plan = store.load_plan(key)
    images = store.load_images(key)
    repo = open_repo(store, store.load_repo(key))
    chosen = [m for m in plan.milestones if images.for_milestone(m.id) is not None]
    chosen = chosen[: options.baseline_milestones] if options.baseline_milestones else chosen
    out: dict = {"milestones": [], "bundle_s": 0.0}
    if not chosen:
        out["error"] = "no milestone has an image of ours: nothing to compare"
        return out
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hf-corpus-bundle-") as tmp:
        bundle_path = Path(tmp) / "repo.bundle"
        repo.run("bundle", "create", str(bundle_path), "--all")
        bundle = bundle_path.read_bytes()
    out["bundle_s"] = round(time.perf_counter() - start, 2)
    out["bundle_bytes"] = len(bundle)
    logs = store.root / "corpus-baseline" / key
    logs.mkdir(parents=True, exist_ok=True)
    rows_by_id = {r.id: r for r in result.rows}
    for m in chosen:
        row = {"milestone": m.id, "ours_status": rows_by_id[m.id].status if m.id in rows_by_id else "not validated"}
        out["milestones"].append(row)
        tag = f"harnessforge-baseline/{key.lower()}:{m.id.lower()}"
        try:
            ours = store.load_validation(key, m.id)
        except Exception:  # noqa: BLE001 - ours did not validate it: the baseline still runs
            ours = None
        row["ours_fail_to_pass"] = len(ours.fail_to_pass) if ours else 0
        row["ours_validation_s"] = rows_by_id[m.id].validation_s if m.id in rows_by_id else None
        record_ = images.for_milestone(m.id)
        row["ours_image"], row["ours_image_build_s"] = record_.env_hash, record_.build_seconds
        recipe = record_.recipe
        gt, test_patch = store.read_patches(key, m.id)
        t0 = time.perf_counter()
        try:
            deps = dependency_files(recipe, repo.files(record_.commit), lambda p, c=record_.commit: repo.show(c, p))
            context = build_context(recipe, m.base_commit, bundle, deps)
            docker_build(client, context, tag, logs / f"{m.id}.log")
            row["build_s"] = round(time.perf_counter() - t0, 2)
            base_runs, verify_runs = [], []
            t1 = time.perf_counter()
            for _ in range(options.repeats):
                base_runs.append(baseline_run(client, tag, recipe, [test_patch], rules))
            row["base_runs_s"] = round(time.perf_counter() - t1, 2)
            t2 = time.perf_counter()
            for _ in range(options.repeats):
                verify_runs.append(baseline_run(client, tag, recipe, [gt, test_patch], rules))
            row["verify_runs_s"] = round(time.perf_counter() - t2, 2)
            _verdict(row, m, ours, recipe, base_runs, verify_runs, rules)
        except (DockerException, RuntimeError, OSError) as e:
            row["error"] = _one_line(e)
            log(f"{result.name}: baseline {m.id}: {row['error']}")
        finally:
            row["total_s"] = round(time.perf_counter() - t0, 2)
            if not options.keep_images:
                _remove_image(client, tag)
        log(
            f"{result.name}: baseline {m.id}: {row.get('status', 'error')}, {row.get('fail_to_pass', 0)} FAIL_TO_PASS "
            f"(ours {row['ours_status']}, {row['ours_fail_to_pass']}); build {row.get('build_s', '-')}s, "
            f"runs {row.get('base_runs_s', '-')}s + {row.get('verify_runs_s', '-')}s"
        )
    if not options.keep_images:
        _remove_leftover_layers(client)
    _compare(out)
    return out


def _remove_leftover_layers(client: docker.DockerClient) -> None:
    """The untagged layers a failed baseline build left behind (a removed image takes its own with it)."""
    try:
        leftovers = [i for i in client.images.list(all=True, filters={"label": BASELINE_LABEL}) if not i.tags]
    except DockerException:
        return
    for image in leftovers:
        try:
            client.images.remove(image.id, noprune=False)
        except DockerException:  # a parent of another leftover (gone with it), or in use
            pass


def _verdict(row: dict, m, ours: Validation | None, recipe: Recipe, base_runs, verify_runs, rules: Rules) -> None:
    """The baseline's FAIL_TO_PASS over ours' candidates (else the changed files' tests), compared with ours."""
    ids = {t for r in base_runs + verify_runs for t in r.statuses}
    if ours and ours.candidates:
        candidates = list(ours.candidates)
    else:
        candidates = candidate_tests(recipe.runner, ids, m.test_files, {}, {})
    # The candidates our static trace left out (tests changed only by undescribed commits) are left out here too:
    # the comparison is of what each environment makes of the same tests.
    excluded = {t: why for t, why in (ours.rejected if ours else {}).items() if why.startswith("excluded")}
    problems = [p for r in verify_runs if (p := run_problem(r))]
    c = classify(
        candidates,
        base_runs,
        verify_runs,
        lambda t: test_files_of(recipe.runner, [t])[0],
        rules.environments.max_pass_to_pass,
        excluded=excluded,
    )
    row["candidates"] = len(candidates)
    row["fail_to_pass"] = len(c.fail_to_pass)
    row["status"] = "env_error" if problems else ("valid" if c.fail_to_pass else "no_fail_to_pass")
    if problems:
        row["reason"] = problems[0]
        row["log_tail"] = verify_runs[0].log_tail[-400:]
    if ours is not None:
        theirs, mine = set(c.fail_to_pass), set(ours.fail_to_pass)
        row["same_fail_to_pass"] = theirs == mine
        row["only_ours"], row["only_baseline"] = sorted(mine - theirs)[:10], sorted(theirs - mine)[:10]


def _compare(out: dict) -> None:
    """Wall seconds per validated milestone on the compared milestones: ours (our images' build, each
    dependency epoch once, plus validation) against the baseline (bundle, per-milestone builds and runs)."""
    rows = out["milestones"]
    epochs = {r["ours_image"]: r["ours_image_build_s"] for r in rows}
    ours_s = sum(epochs.values()) + sum(r["ours_validation_s"] or 0.0 for r in rows)
    base_s = out["bundle_s"] + sum(r.get("total_s", 0.0) for r in rows)
    ours_valid = sum(1 for r in rows if r["ours_status"] == "valid")
    base_valid = sum(1 for r in rows if r.get("status") == "valid")
    out.update(
        ours_s=round(ours_s, 2),
        baseline_s=round(base_s, 2),
        ours_valid=ours_valid,
        baseline_valid=base_valid,
        compared=len(rows),
        same_verdicts=sum(1 for r in rows if r.get("same_fail_to_pass")),
        ours_images_cached=sum(1 for s in epochs.values() if not s),
        ours_validation_timed=all(r["ours_validation_s"] is not None for r in rows),
    )
    out["ours_per_valid_s"] = round(ours_s / ours_valid, 2) if ours_valid else None
    out["baseline_per_valid_s"] = round(base_s / base_valid, 2) if base_valid else None
    ratio = None  # without our validation's seconds, ours would be only image builds: no ratio
    if out["ours_per_valid_s"] and out["baseline_per_valid_s"] and out["ours_validation_timed"]:
        ratio = out["baseline_per_valid_s"] / out["ours_per_valid_s"]
    out["speedup"] = round(ratio, 2) if ratio else None
    out["speedup_per_milestone"] = round(base_s / ours_s, 2) if ours_s and out["ours_validation_timed"] else None


# ---- the corpus -----------------------------------------------------------------------------------------------------
def run_corpus(
    entries: list[Entry], store: Store, rules: Rules, root: Path | None, options: Options, log: Log = print
) -> list[EntryResult]:
    """Every entry in turn; a failing entry is recorded and the next one runs."""
    rules.environments.repeats = options.repeats
    results: list[EntryResult] = []
    try:
        for i, entry in enumerate(entries, start=1):
            log(f"[{i}/{len(entries)}] {entry.name} ({entry.language}, {entry.from_ref} → {entry.to_ref})")
            results.append(_one_entry(entry, store, rules, root, options, log))
    except KeyboardInterrupt:  # what was measured so far is still written
        log(f"interrupted: the {len(results)} entries measured before are reported")
    return results


def _one_entry(entry: Entry, store: Store, rules: Rules, root: Path | None, options: Options, log: Log) -> EntryResult:
    try:
        result = measure_entry(entry, store, rules, root, options, log)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - a bug outside the stages still loses one entry only
        result = EntryResult(entry.name, entry.language, entry.group, errors={"entry": _one_line(e)})
        log(f"{entry.name}: failed: {result.errors['entry']}")
    if entry.name in options.baseline and result.key and result.validated and options.build:
        result.baseline = _stage(
            result, "baseline", partial(baseline_entry, store, result.key, rules, result, options, log), log
        )
    elif entry.name in options.baseline:
        result.errors.setdefault("baseline", "not run: the entry was not built and validated in Docker")
    if result.key and (options.fresh or entry.name in options.baseline) and not options.keep_images:
        removed = remove_fresh_images(result.key)
        log(f"{entry.name}: removed {removed} image(s) built under the fresh tag")
    return result


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


# ---- totals and targets ---------------------------------------------------------------------------------------------
def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def totals(results: list[EntryResult]) -> dict[str, dict]:
    """Sums per language group and overall."""
    groups: dict[str, list[EntryResult]] = {}
    for r in results:
        groups.setdefault(r.group, []).append(r)
    out = {g: _total(rs) for g, rs in sorted(groups.items())}
    out["all"] = _total(results)
    return out


def _total(rs: list[EntryResult]) -> dict:
    milestones = sum(r.milestones for r in rs)
    valid = sum(r.valid for r in rs)
    env_s = sum(r.env_s or 0.0 for r in rs)
    val_s = sum(r.validation_s or 0.0 for r in rs)
    not_valid: Counter = Counter()
    for r in rs:
        not_valid.update(r.not_valid)
    mix: Counter = Counter()
    for r in rs:
        mix.update(r.type_mix)
    return {
        "ranges": len(rs),
        "failed_entries": sum(1 for r in rs if set(r.errors) & {"entry", "clone", "plan"}),
        "milestones": milestones,
        "type_mix": dict(mix),
        "feature_titled": sum(r.feature_titled for r in rs),
        "entries_citing": sum(r.entries_citing for r in rs),
        "entries_covered": sum(r.entries_covered for r in rs),
        "validated_milestones": sum(r.milestones for r in rs if r.validated),
        "valid": valid,
        "fail_to_pass": sum(r.fail_to_pass for r in rs),
        "not_valid": dict(not_valid.most_common()),
        "env_s": round(env_s, 1),
        "validation_s": round(val_s, 1),
        "per_valid_s": round((env_s + val_s) / valid, 1) if valid else None,
    }


def targets(results: list[EntryResult], sums: dict[str, dict]) -> list[dict]:
    """Issue 16's targets, each with what was measured and whether it is met (None: nothing to judge)."""
    out = []
    rich = [r for r in results if r.entries_citing >= MIN_FEATURES]
    short = [f"{r.name} ({r.milestones})" for r in rich if r.milestones < MIN_MILESTONES]
    out.append(
        {
            "target": f"every range with >= {MIN_FEATURES} changelog features (citing entries) gives "
            f">= {MIN_MILESTONES} milestones",
            "measured": f"{len(rich) - len(short)}/{len(rich)} ranges"
            + (f"; short: {', '.join(short)}" if short else ""),
            "met": (not short) if rich else None,
        }
    )
    a = sums["all"]
    for text, num, den, goal in (
        ("milestones titled by features", a["feature_titled"], a["milestones"], TITLED_TARGET),
        ("citing changelog entries covered by a milestone", a["entries_covered"], a["entries_citing"], COVERED_TARGET),
    ):
        share = _share(num, den)
        out.append(
            {
                "target": f">= {goal:.0%} of {text}",
                "measured": _pct(num, den),
                "met": None if share is None else share >= goal,
            }
        )
    for group, goal in VALID_TARGETS.items():
        s = sums.get(group)
        den = s["milestones"] if s else 0
        num = s["valid"] if s else 0
        share = _share(num, den)
        validated = bool(s) and s["validated_milestones"] > 0
        out.append(
            {
                "target": f">= {goal:.0%} of {group} milestones valid",
                "measured": _pct(num, den),
                "met": share >= goal if share is not None and validated else None,
            }
        )
    ratios = [(r.name, r.baseline["speedup"]) for r in results if r.baseline and r.baseline.get("speedup")]
    out.append(
        {
            "target": f">= {SPEEDUP_TARGET:g}x faster per validated milestone than the per-instance way",
            "measured": ", ".join(f"{n} {x:.1f}x" for n, x in ratios) or "not measured",
            "met": all(x >= SPEEDUP_TARGET for _, x in ratios) if ratios else None,
        }
    )
    return out


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({num / den:.0%})" if den else f"{num}/0 (-)"


# ---- output ---------------------------------------------------------------------------------------------------------
def machine() -> dict:
    info = {
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 1) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        proc = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
        info["docker_server"] = proc.stdout.strip() or proc.stderr.strip()[:200]
    except OSError:
        info["docker_server"] = "no docker CLI"
    return info


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _mix(mix: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])) or "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(doc: dict) -> str:
    lines = ["# Real-repository corpus", ""]
    if doc.get("note"):
        lines += [f"> **{doc['note']}**", ""]
    lines += [
        f"Measured {doc['measured_at']} with `{doc['command']}`",
        f"(K = {doc['repeats']} runs per side; machine: {doc['machine']['cpus']} CPUs, load average "
        f"{doc['machine']['loadavg']} at the end, Docker {doc['machine'].get('docker_server', '-')}; "
        f"total wall time {doc['wall_s'] / 60:.1f} min).",
        "",
        "Columns: *feature-titled* = milestones titled by a feature (changelog, issue or work PR; "
        "`plan.report.feature_titled`); *entries covered* = changelog entries of the range that cite a PR, an "
        "issue or a commit (housekeeping excluded) and describe some milestone; *valid* = `validate` status "
        "`valid`; *F2P* = FAIL_TO_PASS tests; *not valid* = every other status (`status: reason`, count); "
        "*env s* = wall seconds of `env build` (about 0 when the images were cached); *s / valid* = "
        "(env + validation seconds) / valid milestones. JavaScript ranges count with TypeScript in the totals "
        "and targets (one Node toolchain, one recipe).",
        "",
        "| Repository | Lang | Range planned | Screen | Milestones | Type mix | Feature-titled | Entries covered "
        "| Valid | F2P | Not valid | Env s | Validation s | s / valid | Errors |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in doc["entries"]:
        screen_text = (
            "-"
            if r["screen_passed"] is None
            else ("pass" if r["screen_passed"] else "fail: " + ", ".join(r["screen_failed"]))
        )
        valid = f"{r['valid']}/{r['milestones']}" if r["validated"] else "not run"
        f2p = r["fail_to_pass"] if r["validated"] else "-"
        not_valid = "; ".join(f"{k} ×{v}" for k, v in r["not_valid"].items()) or "-"
        errors = "; ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "-"
        lines.append(
            f"| {r['name']} | {r['language']} | {_cell(r['range'] or r['requested'])} | {_cell(screen_text)} "
            f"| {r['milestones']} | {_mix(r['type_mix'])} | {_pct(r['feature_titled'], r['milestones'])} "
            f"| {_pct(r['entries_covered'], r['entries_citing'])} | {valid} | {f2p} | {_cell(not_valid)} "
            f"| {_s(r['seconds'].get('env build'))} | {_s(r['seconds'].get('validate'))} | {_s(r['per_valid_s'])} "
            f"| {_cell(errors)} |"
        )
    lines += [
        "",
        "## Totals",
        "",
        "| Language | Ranges | Milestones | Type mix | Feature-titled | Entries covered "
        "| Valid | F2P | Not valid | Env s | Validation s | s / valid |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for group, t in doc["totals"].items():
        not_valid = "; ".join(f"{k} ×{v}" for k, v in t["not_valid"].items()) or "-"
        lines.append(
            f"| {'**all**' if group == 'all' else group} | {t['ranges']} | {t['milestones']} | {_mix(t['type_mix'])} "
            f"| {_pct(t['feature_titled'], t['milestones'])} | {_pct(t['entries_covered'], t['entries_citing'])} "
            f"| {_pct(t['valid'], t['milestones'])} | {t['fail_to_pass']} | {_cell(not_valid)} | {_s(t['env_s'])} "
            f"| {_s(t['validation_s'])} | {_s(t['per_valid_s'])} |"
        )
    lines += ["", "## Targets (issue 16, item 6)", "", "| Target | Measured | Met |", "|---|---|---|"]
    for t in doc["targets"]:
        met = "not measured" if t["met"] is None else ("met" if t["met"] else "**not met**")
        lines.append(f"| {t['target']} | {_cell(t['measured'])} | {met} |")
    lines += _baseline_markdown(doc)
    lines += ["", "## Milestones", ""]
    for r in doc["entries"]:
        if not r["rows"]:
            continue
        lines += [f"**{r['name']}** {_cell(r['range'])}", ""]
        lines += [f"> {_cell(note)}" for note in r["notes"]] + ([""] if r["notes"] else [])
        lines += [
            "| Milestone | Type | Title from | Status | F2P | s | Title / why not valid |",
            "|---|---|---|---|---:|---:|---|",
        ]
        for m in r["rows"]:
            status = f"{m['status']}: {m['reason']}" if m["reason"] else m["status"]
            text = m["title"] if m["status"] == "valid" or not m["detail"] else f"{m['title']} — {m['detail']}"
            lines.append(
                f"| {m['id']} | {m['type'] or '-'} | {m['title_source'] or '-'} | {status} "
                f"| {m['fail_to_pass']} | {_s(m['validation_s'])} | {_cell(text[:240])} |"
            )
        lines.append("")
    lines += ["## How to run", "", "```", *doc["how_to_run"], "```", ""]
    return "\n".join(lines)


def _baseline_markdown(doc: dict) -> list[str]:
    runs = [(r["name"], r["baseline"]) for r in doc["entries"] if r.get("baseline")]
    if not runs:
        return []
    lines = [
        "",
        "## Per-instance baseline (the SWE-bench harness's way)",
        "",
        "Per milestone, one image from a Dockerfile (a git bundle of the repository copied in, the base commit "
        "checked out, our recipe's requirements and the project installed, `docker build --network host`, no "
        "layer cache), then K runs at base + test.patch and K at base + ground_truth.patch + test.patch, each in "
        "a fresh `--network none` container. Ours on the same milestones: our images built from scratch (under a "
        "fresh tag; each dependency epoch once) plus `validate`. Seconds are wall seconds.",
        "",
        "| Repository | Milestones | Ours s (valid) | Baseline s (valid) | Ours s / valid | Baseline s / valid "
        "| Speed-up | Same FAIL_TO_PASS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, b in runs:
        if b.get("error"):
            lines.append(f"| {name} | - | - | - | - | - | - | {_cell(b['error'])} |")
            continue
        speedup = f"{b['speedup']:.1f}x" if b.get("speedup") else "-"
        lines.append(
            f"| {name} | {b['compared']} | {_s(b['ours_s'])} ({b['ours_valid']}) | {_s(b['baseline_s'])} "
            f"({b['baseline_valid']}) | {_s(b['ours_per_valid_s'])} | {_s(b['baseline_per_valid_s'])} "
            f"| {speedup} | {b['same_verdicts']}/{b['compared']} |"
        )
    lines += [
        "",
        "| Repository | Milestone | Ours | Baseline | Baseline build s | Base runs s | Verify runs s "
        "| Ours image build s | Ours validation s |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, b in runs:
        for m in b.get("milestones", []):
            theirs = m.get("status", "error") + (f": {m['reason']}" if m.get("reason") else "")
            if m.get("error"):
                theirs = f"error: {m['error']}"
            lines.append(
                f"| {name} | {m['milestone']} | {m['ours_status']} ({m['ours_fail_to_pass']} F2P) "
                f"| {_cell(theirs)} ({m.get('fail_to_pass', 0)} F2P) | {_s(m.get('build_s'))} "
                f"| {_s(m.get('base_runs_s'))} | {_s(m.get('verify_runs_s'))} | {_s(m['ours_image_build_s'])} "
                f"| {_s(m['ours_validation_s'])} |"
            )
    return lines


def document(results: list[EntryResult], options: Options, command: str, wall_s: float, note: str = "") -> dict:
    sums = totals(results)
    entries = []
    for r in results:
        row = asdict(r)
        row["per_valid_s"] = r.per_valid_s
        entries.append(row)
    return {
        "measured_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "note": note,
        "repeats": options.repeats,
        "wall_s": round(wall_s, 1),
        "machine": machine(),
        "entries": entries,
        "totals": sums,
        "targets": targets(results, sums),
        "how_to_run": HOW_TO_RUN,
    }


HOW_TO_RUN = [
    "# the whole corpus (local clones under --root; without one an entry is cloned from GitHub); about 100 min",
    "# on 2 CPUs with K=3 (pyparsing and ky take half of it), plus the baseline's per-milestone builds and runs",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out docs/corpus.md --json benchmarks/results/corpus.json \\",
    "    --baseline pluggy,httprouter --repeats 3",
    "# some entries only; the baseline on the first 2 milestones; no Docker (plan only, or --backend local)",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out /tmp/corpus.md --only pluggy,kleur --baseline pluggy --baseline-milestones 2",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out /tmp/corpus.md --no-docker",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", required=True, type=Path, help="the corpus file (benchmarks/corpus.yaml)")
    ap.add_argument("--root", type=Path, help="where local clones are: <root>/<name>")
    ap.add_argument("--store", required=True, type=Path, help="the store to plan and build in (a scratch one)")
    ap.add_argument("--out", required=True, type=Path, help="the Markdown table (docs/corpus.md)")
    ap.add_argument("--json", type=Path, help="the same results as JSON")
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--baseline", default="", help="comma-separated entry names measured the per-instance way too")
    ap.add_argument("--baseline-milestones", type=int, help="the baseline on the first N milestones with an image")
    ap.add_argument("--repeats", type=int, default=3, help="K: validation runs per side (default 3)")
    ap.add_argument("--workers", type=int, default=1, help="validate's workers (1 gives per-milestone seconds)")
    ap.add_argument("--fresh", action="store_true", help="build every entry under a fresh image tag (from scratch)")
    ap.add_argument("--keep-images", action="store_true", help="keep the images made under fresh tags")
    ap.add_argument("--no-docker", action="store_true", help="no env build; validation only with --backend local")
    ap.add_argument("--backend", choices=("docker", "local", "none"), help="validation backend (default docker)")
    ap.add_argument("--no-collect", action="store_true", help="screening counts tests statically")
    ap.add_argument("--rules", type=Path, help="a rules file over the defaults")
    ap.add_argument("--note", default="", help="a line shown at the top of the Markdown (e.g. 'Smoke run')")
    args = ap.parse_args(argv)
    try:
        if args.repeats < 1:
            raise CorpusError("--repeats must be at least 1")
        if args.baseline_milestones is not None and args.baseline_milestones < 1:
            raise CorpusError("--baseline-milestones must be at least 1")
        backend = args.backend or ("none" if args.no_docker else "docker")
        if args.no_docker and backend == "docker":
            raise CorpusError("--no-docker with --backend docker: choose one")
        if args.root is not None and not args.root.is_dir():
            raise CorpusError(f"--root {args.root}: not a directory")
        only = [n for n in args.only.split(",") if n]
        baseline = [n for n in args.baseline.split(",") if n]
        if baseline and (args.no_docker or backend != "docker"):
            raise CorpusError("--baseline needs Docker (env build and validation in Docker)")
        entries = select(load_entries(args.repos), only, baseline)
        rules = load_rules(args.rules)
    except Exception as e:  # noqa: BLE001 - bad options or files: one line, nothing runs
        print(f"error: {e if isinstance(e, CorpusError) else _one_line(e)}", file=sys.stderr)
        return 2
    options = Options(
        build=not args.no_docker,
        backend=None if backend == "none" else backend,
        repeats=args.repeats,
        workers=args.workers,
        collect=not args.no_collect,
        fresh=args.fresh,
        keep_images=args.keep_images,
        baseline=tuple(baseline),
        baseline_milestones=args.baseline_milestones,
    )
    store = Store(args.store)
    start = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    results = run_corpus(entries, store, rules, args.root, options, log)
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/corpus.py", *(argv or sys.argv[1:])])
    doc = document(results, options, command, time.perf_counter() - start, args.note)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(doc))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    a = doc["totals"]["all"]
    wrote = f"{args.out}" + (f" and {args.json}" if args.json else "")
    log(
        f"{a['ranges']} ranges, {a['milestones']} milestones, {a['valid']} valid, {a['fail_to_pass']} FAIL_TO_PASS; "
        f"{sum(1 for r in results if r.errors)} with errors; wrote {wrote}"
    )
    for t in doc["targets"]:
        log(f"target {t['target']}: {t['measured']} -> {'-' if t['met'] is None else 'met' if t['met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
