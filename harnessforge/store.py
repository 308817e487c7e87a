"""The store: one directory of plain files, every write atomic, every read validated.

`Store` alone knows this layout: every other module asks it for a path (a test enforces it).
    repos/<repo_key>/repo.json, screening.json, plan.json
    repos/<repo_key>/milestones/<mid>/milestone.json, ground_truth.patch, test.patch, hints.json,
                                     validation.json
    images/<repo_key>.json            env images per dependency epoch; images/<repo_key>/<hash>.log
    trajectories/<repo_key>/<run_id>/metadata.json                    one run of a chain
    trajectories/<repo_key>/<run_id>/<mid>/trajectory.jsonl, ...      one milestone of it (`RunFiles`)
    analytics/harnessforge.duckdb, analytics/events/<repo_key>/...    the trajectories as tables
    distilled/*.jsonl, distilled/milestones/<repo_key>/<mid>/*.jsonl  Stage 3's rows
    datasets/<name>/, report/report.html, example/<name>/             exports, the report, example repos
    cache/git/<repo_key>.git          bare clones, fetched (not re-cloned) on reuse
    cache/github/<repo_key>/...       GitHub API answers, so re-planning costs no requests
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from .atomic import atomic_write, file_lock
from .errors import ArtifactError, ConfigError
from .models import HintLadder, Milestone, MilestonePlan, RepoImages, RepoSpec, ScreeningReport, Validation
from .models.common import Model, first_error
from .models.plan import text_measures

M = TypeVar("M", bound=Model)


def default_store_dir() -> Path:
    return Path(os.environ.get("HARNESSFORGE_HOME") or "forge_store")


RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # one directory name under trajectories/<key>/


def check_run_id(run_id: str) -> str:
    """A run id names a directory: letters, digits, '.', '_' and '-', so it can never point elsewhere."""
    if not RUN_ID.match(run_id):
        raise ConfigError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-' (a directory name, at most 100)")
    return run_id


class _RunFile:
    """A file of a milestone run folder as an attribute: `files.summary` is `<dir>/summary.json`."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, files: RunFiles | None, owner: type) -> Path:
        return Path(self.name) if files is None else files.dir / self.name


@dataclass(frozen=True)
class RunFiles:
    """The files of one milestone of one run: `trajectories/<repo_key>/<run_id>/<mid>/`.

    On the class, each file attribute is the bare name (`RunFiles.summary.name == "summary.json"`)."""

    dir: Path

    TRAJECTORY = "trajectory.jsonl"  # the event log, append-only (the Recorder owns it)
    ATIF = "trajectory.atif.json"
    SUMMARY = "summary.json"  # written last: its presence marks the milestone finished
    MENTOR_LOG = "mentor_log.json"
    TEST_RESULTS = "test_results.json"
    FINAL_DIFF = "final_diff.patch"
    GROUND_TRUTH = "ground_truth.patch"
    START_PATCH = "start.patch"  # the Dev's state carried from the previous milestone
    OUTPUTS = "outputs.jsonl.gz"  # tool outputs in full where the event holds the Dev's cut view (the Recorder's)
    SCAFFOLD_TRAJECTORY = "scaffold_trajectory.json"  # a scaffold's own record of the milestone, in its own format
    # what every finished milestone run holds (a STUCK or FAIL one as well as a PASS)
    FILES = (TRAJECTORY, ATIF, FINAL_DIFF, GROUND_TRUTH, TEST_RESULTS, MENTOR_LOG, SUMMARY)

    trajectory = _RunFile(TRAJECTORY)
    atif = _RunFile(ATIF)
    summary = _RunFile(SUMMARY)
    mentor_log = _RunFile(MENTOR_LOG)
    test_results = _RunFile(TEST_RESULTS)
    final_diff = _RunFile(FINAL_DIFF)
    ground_truth = _RunFile(GROUND_TRUTH)
    outputs = _RunFile(OUTPUTS)
    start_patch = _RunFile(START_PATCH)
    scaffold_trajectory = _RunFile(SCAFFOLD_TRAJECTORY)

    @property
    def run_dir(self) -> Path:
        return self.dir.parent

    @property
    def metadata(self) -> Path:
        return self.dir.parent / RUN_METADATA

    @property
    def names(self) -> tuple[str, str, str]:
        """(repo key, run id, milestone id), read off the folder."""
        return self.dir.parent.parent.name, self.dir.parent.name, self.dir.name

    @property
    def repo_key(self) -> str:
        return self.names[0]

    @property
    def run_id(self) -> str:
        return self.names[1]

    @property
    def milestone_id(self) -> str:
        return self.names[2]

    @staticmethod
    def snapshot_name(seq: int) -> str:
        """The workspace diff saved before event `seq`'s edit, so a resumed run can restore it."""
        return f"workspace.{seq}.patch"

    def snapshot(self, seq: int) -> Path:
        return self.dir / self.snapshot_name(seq)

    def snapshots(self) -> list[tuple[int, Path]]:
        """The saved workspace snapshots as (seq, path), oldest first."""
        found = ((int(path.name.split(".")[1]), path) for path in self.dir.glob("workspace.*.patch"))
        return sorted(found)

    def started(self) -> bool:
        return self.trajectory.exists() and self.trajectory.stat().st_size > 0

    def finished(self) -> bool:
        return self.summary.exists()


RUN_METADATA = "metadata.json"  # trajectories/<repo_key>/<run_id>/metadata.json


def _without_created_at(data: object) -> object:
    if isinstance(data, dict):
        return {k: _without_created_at(value) for k, value in data.items() if k != "created_at"}
    if isinstance(data, list):
        return [_without_created_at(value) for value in data]
    return data


class Store:
    def __init__(self, root: str | Path | None = None):
        # absolute: paths handed to git (`-C elsewhere`), DuckDB views and containers must not depend on the cwd
        self.root = (Path(root).expanduser() if root is not None else default_store_dir()).absolute()

    # ---- paths -------------------------------------------------------------------------------
    def repo_dir(self, key: str) -> Path:
        return self.root / "repos" / key

    def milestone_dir(self, key: str, mid: str) -> Path:
        return self.repo_dir(key) / "milestones" / mid

    def git_cache(self, key: str) -> Path:
        return self.root / "cache" / "git" / f"{key}.git"

    def github_cache(self, key: str) -> Path:
        return self.root / "cache" / "github" / key

    def images_file(self, key: str) -> Path:
        return self.root / "images" / f"{key}.json"

    def image_log(self, key: str, env_hash: str) -> Path:
        return self.root / "images" / key / f"{env_hash}.log"

    def has_images(self, key: str) -> bool:
        return self.images_file(key).exists()

    def run_dir(self, key: str, run_id: str) -> Path:
        """`trajectories/<key>/<run_id>`: one run of a repo's chain (the run id is checked first)."""
        return self.root / "trajectories" / key / check_run_id(run_id)

    def chain_lock(self, key: str, run_id: str, wait: bool = True):
        """Held while a chain of run `run_id` runs on `key`: two Dagster runs asking for milestones of the
        same chain take turns, so the milestones still run one after another, each once; `wait=False` (the
        command line): a second command on a held run is refused, before it touches the run (one writer)."""
        return file_lock(self.root / "locks" / "chains" / key / f"{check_run_id(run_id)}.lock", wait)

    def run_dirs_of(self, key: str) -> list[Path]:
        """Every run folder of `key`, written or not, in name order."""
        folder = self.root / "trajectories" / key
        return sorted(path for path in folder.iterdir() if path.is_dir()) if folder.exists() else []

    def tool_dir(self, tool: str, key: str) -> Path:
        """A folder of a tool that works over the store (e.g. the corpus benchmark's baseline logs), per repo."""
        return self.root / tool / key

    def run_metadata(self, key: str, run_id: str) -> Path:
        return self.run_dir(key, run_id) / RUN_METADATA

    def milestone_run(self, key: str, run_id: str, mid: str) -> RunFiles:
        return RunFiles(self.run_dir(key, run_id) / mid)

    @classmethod
    def of_milestone_run(cls, path: str | Path) -> tuple[Store, RunFiles]:
        """The store and milestone run a user named by its folder, `<store>/trajectories/<repo>/<run_id>/<mid>`
        (refused unless it has a summary: only finished runs are shown)."""
        path = Path(path).expanduser().resolve()
        if len(path.parents) < 4 or path.parents[2].name != "trajectories" or not RunFiles(path).finished():
            raise ArtifactError(
                f"{path}: not a finished milestone run (expected <store>/trajectories/<repo>/<run_id>/<milestone> "
                "with a summary.json)"
            )
        return cls(path.parents[3]), RunFiles(path)

    def run_dirs(self) -> list[Path]:
        """Every run that wrote its metadata, in path order."""
        return sorted(path.parent for path in (self.root / "trajectories").glob(f"*/*/{RUN_METADATA}"))

    def milestone_runs(self, key: str = "*", finished: bool = False, milestone: str = "*") -> list[RunFiles]:
        """Every milestone run (of `key`, of `milestone`) that has an event log (`finished`: a summary), in
        path order."""
        name = RunFiles.SUMMARY if finished else RunFiles.TRAJECTORY
        found = (self.root / "trajectories").glob(f"{key}/*/{milestone}/{name}")
        return [RunFiles(path.parent) for path in sorted(found)]

    def has_finished(self, key: str, mid: str) -> bool:
        """Some run of `key` finished milestone `mid`."""
        return any((self.root / "trajectories" / key).glob(f"*/{mid}/{RunFiles.SUMMARY}"))

    def relative(self, path: Path) -> str:
        """`path` relative to the store root, as stored in tables (moves with the store)."""
        return Path(path).relative_to(self.root).as_posix()

    def path(self, relative: str) -> Path:
        """A path as tables store it (`relative`'s) back in the store."""
        return self.root / relative

    def analytics_dir(self) -> Path:
        return self.root / "analytics"

    def analytics_database(self) -> Path:
        return self.analytics_dir() / "harnessforge.duckdb"

    def analytics_events_dir(self) -> Path:
        """One Parquet file of events per run, `events/<repo_key>/<run_id>.parquet`, and one per milestone
        loaded after it, `events/<repo_key>/<run_id>/<mid>.parquet` (`analytics.event_files`)."""
        return self.analytics_dir() / "events"

    def analytics_events_file(self, key: str, run_id: str) -> Path:
        return self.analytics_events_dir() / key / f"{run_id}.parquet"

    def analytics_milestone_events_file(self, key: str, run_id: str, mid: str) -> Path:
        return self.analytics_events_dir() / key / run_id / f"{mid}.parquet"

    def distilled_dir(self, only: tuple[str, str] | None = None) -> Path:
        """Where distilled rows go: the store-wide files, or one milestone's (`only` = (repo key, mid))."""
        root = self.root / "distilled"
        return root / "milestones" / only[0] / only[1] if only else root

    def distilled_file(self, name: str, only: tuple[str, str] | None = None) -> Path:
        """One distilled output, e.g. `distilled_file("reviews")` is `distilled/reviews.jsonl`."""
        return self.distilled_dir(only) / f"{name}.jsonl"

    def distilled_manifest(self, only: tuple[str, str] | None = None) -> Path:
        return self.distilled_dir(only) / "manifest.json"

    def task_checks_file(self, only: tuple[str, str] | None = None) -> Path:
        """`verify-tasks`' verdict on every task card (JSON list)."""
        return self.distilled_dir(only) / "task_checks.json"

    def distilled_milestones(self) -> list[tuple[str, str]]:
        """(repo key, mid) of every milestone distilled on its own (it has its manifest), in path order."""
        found = (self.distilled_dir() / "milestones").glob("*/*/manifest.json")
        return sorted((path.parent.parent.name, path.parent.name) for path in found)

    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    def format_checks_file(self) -> Path:
        """What `export` into `datasets_dir()` found when each file's tool loaded it."""
        return self.datasets_dir() / "format_checks.json"

    def report_file(self) -> Path:
        return self.root / "report" / "report.html"

    def example_dir(self, name: str) -> Path:
        return self.root / "example" / name

    # ---- generic I/O ---------------------------------------------------------------------------
    def write_model(self, path: Path, model: Model) -> bool:
        """Write `model` as JSON unless the file already says the same (creation time aside).

        Returns whether the file changed, so re-running a command is idempotent on disk.
        """
        data = model.model_dump(mode="json")
        if path.exists():
            try:
                old = json.loads(path.read_bytes())
            except (OSError, ValueError):
                old = None
            if old is not None and _without_created_at(old) == _without_created_at(data):
                return False
        atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
        return True

    def write_bytes(self, path: Path, data: bytes) -> bool:
        if path.exists() and path.read_bytes() == data:
            return False
        atomic_write(path, data)
        return True

    def read_model(self, path: Path, model: type[M]) -> M:
        """Read and validate; any problem names the file and the field at fault."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactError(f"{path}: missing (has the step that writes it run?)") from None
        except OSError as e:
            raise ArtifactError(f"{path}: cannot be read ({e.strerror})") from None
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise ArtifactError(f"{path}: not valid JSON ({e})") from None
        try:
            return model.model_validate(data)
        except ValidationError as e:
            raise ArtifactError(f"{path}: invalid {model.__name__}: {first_error(e)}") from None

    # ---- typed artifacts -----------------------------------------------------------------------
    def save_repo(self, spec: RepoSpec) -> bool:
        return self.write_model(self.repo_dir(spec.key) / "repo.json", spec)

    def load_repo(self, key: str) -> RepoSpec:
        return self.read_model(self.repo_dir(key) / "repo.json", RepoSpec)

    def repo_keys(self) -> list[str]:
        base = self.root / "repos"
        return sorted(path.parent.name for path in base.glob("*/repo.json")) if base.exists() else []

    def save_screening(self, report: ScreeningReport) -> bool:
        return self.write_model(self.repo_dir(report.repo.key) / "screening.json", report)

    def load_screening(self, key: str) -> ScreeningReport:
        return self.read_model(self.repo_dir(key) / "screening.json", ScreeningReport)

    def plan_file(self, key: str) -> Path:
        return self.repo_dir(key) / "plan.json"

    def load_plan(self, key: str) -> MilestonePlan:
        return self.read_model(self.plan_file(key), MilestonePlan)

    def milestone_file(self, key: str, mid: str) -> Path:
        return self.milestone_dir(key, mid) / "milestone.json"

    def load_milestone(self, key: str, mid: str) -> Milestone:
        return self.read_model(self.milestone_file(key, mid), Milestone)

    def load_hints(self, key: str, mid: str) -> HintLadder:
        return self.read_model(self.milestone_dir(key, mid) / "hints.json", HintLadder)

    def save_images(self, images: RepoImages) -> bool:
        return self.write_model(self.images_file(images.repo_key), images)

    def load_images(self, key: str) -> RepoImages:
        return self.read_model(self.images_file(key), RepoImages)

    def save_validation(self, key: str, validation: Validation) -> bool:
        return self.write_model(self.validation_file(key, validation.milestone_id), validation)

    def validation_file(self, key: str, mid: str) -> Path:
        return self.milestone_dir(key, mid) / "validation.json"

    def load_validation(self, key: str, mid: str) -> Validation:
        return self.read_model(self.validation_file(key, mid), Validation)

    def read_patches(self, key: str, mid: str) -> tuple[bytes, bytes]:
        """(ground_truth.patch, test.patch) of a milestone."""
        folder = self.milestone_dir(key, mid)
        try:
            return (folder / "ground_truth.patch").read_bytes(), (folder / "test.patch").read_bytes()
        except FileNotFoundError as e:
            raise ArtifactError(f"{e.filename}: missing (has `plan` run?)") from None

    def plan_lock(self, key: str):
        """Held while plan.json is read and rewritten: validations of one repo in parallel Dagster runs, and a
        merge of untested milestones, each update the plan, none over another's."""
        return file_lock(self.root / "locks" / "plans" / f"{key}.lock")

    def update_milestone(self, key: str, milestone: Milestone) -> bool:
        """Rewrite one milestone in both milestone.json and plan.json (e.g. after validation)."""
        with self.plan_lock(key):
            plan = self.load_plan(key)
            plan.milestones = [milestone if other.id == milestone.id else other for other in plan.milestones]
            plan.report = plan.report.model_copy(update=text_measures(plan.milestones))
            changed = self.write_model(self.milestone_file(key, milestone.id), milestone)
            return self.write_model(self.plan_file(key), plan) or changed

    def milestone_snapshot(self, key: str, ids: list[str]) -> dict[str, dict[Path, bytes]]:
        """Every file of these milestones (their records, patches, hints and verdicts), by milestone, to put back."""
        return {
            mid: {path: path.read_bytes() for path in sorted(self.milestone_dir(key, mid).rglob("*")) if path.is_file()}
            for mid in ids
        }

    def restore_milestones(self, key: str, snapshot: dict[str, dict[Path, bytes]], plan: MilestonePlan) -> None:
        """The snapshot's milestones' files as `milestone_snapshot` read them (files written since go) and `plan` as
        the plan: the other milestones' files stay as they are now (a parallel validation's verdict is kept)."""
        for mid, files in snapshot.items():
            for path in sorted(self.milestone_dir(key, mid).rglob("*")):
                if path.is_file() and path not in files:
                    path.unlink()
            for path, content in files.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
        self.write_model(self.plan_file(key), plan)

    def archive_other_plan(self, new: MilestonePlan) -> Path | None:
        """The repository's plan, archived (`archive_plan`) when `new` is a plan of something else; its path."""
        try:
            old = self.load_plan(new.repo.key)
        except ArtifactError:  # none, or damaged: nothing to keep apart (a damaged one is rewritten)
            return None
        return self.archive_plan(new.repo.key, old.plan_id) if old.plan_id != new.plan_id else None

    def archive_plan(self, key: str, plan_id: str) -> Path:
        """Moves the repository's plan, its milestones (verdicts included), its runs and their analytics events
        to `repos/<key>/archive/<plan_id>/`: a plan of another range, clone or granularity replaces it, and
        nothing of the old one is lost, nor read as the new one's."""
        archive = self.repo_dir(key) / "archive" / plan_id
        parts = {
            self.plan_file(key): archive / "plan.json",
            self.repo_dir(key) / "milestones": archive / "milestones",
            self.root / "trajectories" / key: archive / "trajectories",
            self.analytics_events_dir() / key: archive / "analytics_events",
        }
        for source, target in parts.items():
            if source.exists():
                if target.exists():  # archived before (the same plan planned twice): the newer copy wins
                    shutil.rmtree(target) if target.is_dir() else target.unlink()
                target.parent.mkdir(parents=True, exist_ok=True)
                source.rename(target)
        return archive

    def save_plan(
        self, plan: MilestonePlan, patches: dict[str, tuple[bytes, bytes]], hints: dict[str, HintLadder]
    ) -> bool:
        """Write the plan and each milestone's files; drop milestone folders the plan no longer has.

        `patches[mid]` is `(ground_truth_patch, test_patch)`. Milestones are written before
        plan.json, so a reader that finds the plan finds all its milestones.
        """
        key = plan.repo.key
        changed = False
        for milestone in plan.milestones:
            folder = self.milestone_dir(key, milestone.id)
            ground_truth, test_patch = patches[milestone.id]
            changed |= self.write_model(folder / "milestone.json", milestone)
            changed |= self.write_bytes(folder / "ground_truth.patch", ground_truth)
            changed |= self.write_bytes(folder / "test.patch", test_patch)
            changed |= self.write_model(folder / "hints.json", hints[milestone.id])
        changed |= self.write_model(self.plan_file(key), plan)
        keep = {milestone.id for milestone in plan.milestones}
        for folder in sorted((self.repo_dir(key) / "milestones").glob("m*")):
            if folder.is_dir() and folder.name not in keep:
                shutil.rmtree(folder)
                changed = True
        return changed
