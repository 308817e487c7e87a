"""The store: one directory of plain files, every write atomic, every read validated.

Layout (later stages add to it):
    repos/<repo_key>/repo.json, screening.json, plan.json
    repos/<repo_key>/milestones/<mid>/milestone.json, ground_truth.patch, test.patch, hints.json,
                                     validation.json
    images/<repo_key>.json            env images per dependency epoch; images/<repo_key>/<hash>.log
    cache/git/<repo_key>.git          bare clones, fetched (not re-cloned) on reuse
    cache/github/<repo_key>/...       GitHub API answers, so re-planning costs no requests
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TypeVar

from pydantic import ValidationError

from .errors import ArtifactError
from .models import HintLadder, Milestone, MilestonePlan, RepoImages, RepoSpec, ScreeningReport, Validation
from .models.common import Model, first_error

M = TypeVar("M", bound=Model)
E = TypeVar("E", bound=Exception)


def default_store_dir() -> Path:
    return Path(os.environ.get("HARNESSFORGE_HOME") or "forge_store")


def no_space(e: BaseException) -> bool:
    """A full disk or quota: by its errno, or by the message alone (DuckDB's and git's errors carry no errno)."""
    code = getattr(e, "errno", None)
    return code in (errno.ENOSPC, errno.EDQUOT) or (
        code is None and any(s in str(e) for s in ("No space left on device", "Disk quota exceeded"))
    )


def disk_full(path: Path, e: E) -> E | ArtifactError:
    """A full disk (or quota) as one clear line that the CLI prints; any other error unchanged."""
    if not no_space(e):
        return e
    try:
        free = f"{shutil.disk_usage(path.parent).free // 1024} KiB free"
    except OSError:
        free = "no free space"
    return ArtifactError(f"{path}: no space left on the device ({free}); nothing was written. Free space and re-run")


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same directory + rename: readers never see half a file, and a
    failed write (a full disk) leaves the old file as it was and no temp file behind."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise disk_full(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):  # named by the artifact's path, not the temp file's
            raise disk_full(path, type(e)(e.errno, e.strerror, str(path))) from None
        raise


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temp path beside `path` for writers that want a file name (pyarrow, datasets): renamed over
    `path` when the block succeeds, removed when it fails, so `path` is never half written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
    except OSError as e:
        raise disk_full(path, e) from None
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise disk_full(path, e) from None
        raise


def _without_created_at(data: object) -> object:
    if isinstance(data, dict):
        return {k: _without_created_at(v) for k, v in data.items() if k != "created_at"}
    if isinstance(data, list):
        return [_without_created_at(v) for v in data]
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
        return sorted(p.parent.name for p in base.glob("*/repo.json")) if base.exists() else []

    def save_screening(self, report: ScreeningReport) -> bool:
        return self.write_model(self.repo_dir(report.repo.key) / "screening.json", report)

    def load_screening(self, key: str) -> ScreeningReport:
        return self.read_model(self.repo_dir(key) / "screening.json", ScreeningReport)

    def load_plan(self, key: str) -> MilestonePlan:
        return self.read_model(self.repo_dir(key) / "plan.json", MilestonePlan)

    def load_milestone(self, key: str, mid: str) -> Milestone:
        return self.read_model(self.milestone_dir(key, mid) / "milestone.json", Milestone)

    def load_hints(self, key: str, mid: str) -> HintLadder:
        return self.read_model(self.milestone_dir(key, mid) / "hints.json", HintLadder)

    def save_images(self, images: RepoImages) -> bool:
        return self.write_model(self.root / "images" / f"{images.repo_key}.json", images)

    def load_images(self, key: str) -> RepoImages:
        return self.read_model(self.root / "images" / f"{key}.json", RepoImages)

    def save_validation(self, key: str, validation: Validation) -> bool:
        return self.write_model(self.milestone_dir(key, validation.milestone_id) / "validation.json", validation)

    def load_validation(self, key: str, mid: str) -> Validation:
        return self.read_model(self.milestone_dir(key, mid) / "validation.json", Validation)

    def read_patches(self, key: str, mid: str) -> tuple[bytes, bytes]:
        """(ground_truth.patch, test.patch) of a milestone."""
        d = self.milestone_dir(key, mid)
        try:
            return (d / "ground_truth.patch").read_bytes(), (d / "test.patch").read_bytes()
        except FileNotFoundError as e:
            raise ArtifactError(f"{e.filename}: missing (has `plan` run?)") from None

    def update_milestone(self, key: str, milestone: Milestone) -> bool:
        """Rewrite one milestone in both milestone.json and plan.json (e.g. after validation)."""
        plan = self.load_plan(key)
        plan.milestones = [milestone if m.id == milestone.id else m for m in plan.milestones]
        changed = self.write_model(self.milestone_dir(key, milestone.id) / "milestone.json", milestone)
        return self.write_model(self.repo_dir(key) / "plan.json", plan) or changed

    def save_plan(
        self, plan: MilestonePlan, patches: dict[str, tuple[bytes, bytes]], hints: dict[str, HintLadder]
    ) -> bool:
        """Write the plan and each milestone's files; drop milestone folders the plan no longer has.

        `patches[mid]` is `(ground_truth_patch, test_patch)`. Milestones are written before
        plan.json, so a reader that finds the plan finds all its milestones.
        """
        key = plan.repo.key
        changed = False
        for m in plan.milestones:
            d = self.milestone_dir(key, m.id)
            gt, tp = patches[m.id]
            changed |= self.write_model(d / "milestone.json", m)
            changed |= self.write_bytes(d / "ground_truth.patch", gt)
            changed |= self.write_bytes(d / "test.patch", tp)
            changed |= self.write_model(d / "hints.json", hints[m.id])
        changed |= self.write_model(self.repo_dir(key) / "plan.json", plan)
        keep = {m.id for m in plan.milestones}
        for d in sorted((self.repo_dir(key) / "milestones").glob("m*")):
            if d.is_dir() and d.name not in keep:
                shutil.rmtree(d)
                changed = True
        return changed
