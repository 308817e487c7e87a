"""The Recorder: one milestone's durable event log, and the other files of its run directory.

`trajectory.jsonl` is append-only, one `Event` per line. Each line is written with a single `write`,
then fsync'd, before `append` returns, so an action is on disk before the next one happens. The newline
is the commit marker: after a crash (SIGKILL, power loss) only an unterminated or unparseable *last*
line can exist; `Recorder.open` cuts it off with a warning and the run resumes at the next seq. Readers
(`view`, `distill`, checks) open with `repair=False`: they skip that line and leave the file to its run.
Damage anywhere else is not a crash artefact, so it is an `ArtifactError`, never silently dropped.

A tool output longer than the Dev's view is kept whole beside the log, in `outputs.jsonl.gz` (one gzip
member per output, `{"seq", "observation"}`), written before its event: everything is recorded, and
Stage 3 decides what to keep.

Single writer per milestone: the run loop owns its Recorder. Everything else is written whole via
`store.atomic_write`.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..agents.pricing import priced
from ..atomic import atomic_write, disk_full
from ..errors import ArtifactError
from ..models.common import first_error
from ..models.run import MilestoneStatus, MilestoneSummary, RunMeta
from ..models.trajectory import Event, Usage
from ..store import RUN_METADATA, RunFiles, Store

log = logging.getLogger(__name__)

TRAJECTORY, ATIF, SUMMARY, OUTPUTS = RunFiles.TRAJECTORY, RunFiles.ATIF, RunFiles.SUMMARY, RunFiles.OUTPUTS


def _fsync_dir(path: Path) -> None:
    """Make a newly created directory entry durable too (the file's own fsync does not cover it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _json_bytes(data: Any) -> bytes:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


class Recorder:
    """The event log and the per-milestone files of one milestone of one run.

    `Recorder(dir)` starts a milestone (refusing a directory that already has events, so a restart
    cannot silently interleave two attempts); `Recorder.open(dir)` resumes one.
    """

    def __init__(self, milestone_dir: Path, on_warning: Callable[[str], None] | None = None):
        self._setup(milestone_dir, on_warning)
        if self.path.exists() and self.path.stat().st_size > 0:
            raise ArtifactError(f"{self.path}: already holds events; resume with Recorder.open() or delete the folder")

    @classmethod
    def open(
        cls, milestone_dir: Path, on_warning: Callable[[str], None] | None = None, repair: bool = True
    ) -> Recorder:
        """Resume: load and validate the log, repairing a torn last line (see the module docstring).
        `repair=False` reads without writing: a torn last line is skipped, and the Recorder cannot append."""
        recorder = cls.__new__(cls)
        recorder._setup(milestone_dir, on_warning)
        recorder._load(repair)
        if not repair:
            recorder._broken = f"{recorder.path}: opened read-only (repair=False); resume with Recorder.open()"
        return recorder

    def _setup(self, milestone_dir: Path, on_warning: Callable[[str], None] | None) -> None:
        self.dir = Path(milestone_dir)
        self.path = self.dir / TRAJECTORY
        self.warnings: list[str] = []
        self._on_warning = on_warning or log.warning
        self._events: list[Event] = []
        self._size = 0  # bytes of whole lines on disk: where the next line starts
        self._broken: str | None = None

    # ---- the event log -------------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        return len(self._events)

    def events(self) -> list[Event]:
        return list(self._events)

    def append(self, event: Event, full_observation: str | None = None) -> None:
        """Write one event durably. Its seq must be `next_seq`: the log has no gaps and no repeats.
        `full_observation`: the whole tool output when the event holds a cut one (written first)."""
        if self._broken:
            raise ArtifactError(self._broken)
        if full_observation is not None and event.seq == self.next_seq:
            self._append_output(event.seq, full_observation)
        if event.seq != self.next_seq:
            raise ValueError(f"{self.path}: event seq {event.seq}, expected {self.next_seq} (no gaps, no repeats)")
        if self._events:
            first = self._events[0]
            if (event.run_id, event.milestone_id) != (first.run_id, first.milestone_id):
                raise ValueError(
                    f"{self.path}: event of {event.run_id}/{event.milestone_id} in the log of "
                    f"{first.run_id}/{first.milestone_id}"
                )
        line = event.model_dump_json().encode() + b"\n"  # JSON escapes newlines: exactly one per event
        self.dir.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if os.fstat(fd).st_size != self._size:
                raise ArtifactError(f"{self.path}: changed by someone else since it was read (one writer only)")
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except BaseException as e:
                self._undo_partial(fd)
                if isinstance(e, OSError):
                    raise disk_full(self.path, e) from None
                raise
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.dir)
        self._size += len(line)
        self._events.append(event)

    def _append_output(self, seq: int, observation: str) -> None:
        """One gzip member appended and fsync'd; a torn last member (a crash) is skipped by `read_outputs`."""
        member = gzip.compress(json.dumps({"seq": seq, "observation": observation}).encode() + b"\n", mtime=0)
        path = self.dir / OUTPUTS
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "ab") as f:
                f.write(member)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise disk_full(path, e) from None

    def full_outputs(self) -> dict[int, str]:
        return read_outputs(self.dir / OUTPUTS, self.next_seq)

    def _undo_partial(self, fd: int) -> None:
        """A failed write (disk full, interrupt) must not leave half a line for the next one to follow."""
        try:
            os.ftruncate(fd, self._size)
            os.fsync(fd)
        except OSError as e:
            self._broken = f"{self.path}: a failed append could not be undone ({e}); reopen with Recorder.open()"

    def _load(self, repair: bool) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # whole (newline-terminated) lines end here
        lines = data[:end].split(b"\n")[:-1]
        keep = end  # bytes to keep: shrinks if the last whole line is torn
        for line_number, raw in enumerate(lines, start=1):
            where = f"{self.path}:{line_number}"
            try:
                payload = json.loads(raw)
            except ValueError as e:
                if line_number == len(lines) and end == len(data):
                    keep -= len(raw) + 1  # the last line, terminated but garbled: also a torn write
                    break
                raise ArtifactError(f"{where}: not valid JSON ({e}); the event log is damaged mid-file") from None
            try:
                event = Event.model_validate(payload)
            except ValidationError as e:
                raise ArtifactError(f"{where}: invalid Event: {first_error(e)}") from None
            if event.seq != line_number - 1:
                raise ArtifactError(f"{where}: seq {event.seq}, expected {line_number - 1} (events lost or repeated)")
            if self._events and (event.run_id, event.milestone_id) != (
                self._events[0].run_id,
                self._events[0].milestone_id,
            ):
                raise ArtifactError(f"{where}: event of {event.run_id}/{event.milestone_id} in another milestone's log")
            self._events.append(event)
        if keep < len(data) and not repair:
            self._warn(f"{self.path}: skipped {len(data) - keep} bytes of a torn last line (its run repairs it)")
        elif keep < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(keep)
                f.flush()
                os.fsync(f.fileno())
            self._warn(
                f"{self.path}: cut {len(data) - keep} bytes of a torn last line (interrupted write); "
                f"resuming at seq {self.next_seq}"
            )
        self._size = keep

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        self._on_warning(message)

    # ---- the other per-milestone files (written whole, atomically) -----------------------------
    def _file(self, name: str) -> Path:
        if Path(name).name != name or name in ("", ".", "..", TRAJECTORY):
            raise ValueError(f"{name!r}: not a file name the Recorder may write in {self.dir}")
        return self.dir / name

    def write_json(self, name: str, data: Any) -> Path:
        """`data` is a pydantic model or anything `json.dumps` takes (mentor_log.json, test_results.json, ...)."""
        path = self._file(name)
        atomic_write(path, _json_bytes(data))
        return path

    def write_patch(self, name: str, data: bytes) -> Path:
        """final_diff.patch, ground_truth.patch: bytes as git produced them (no re-encoding)."""
        path = self._file(name)
        atomic_write(path, data)
        return path

    def write_summary(self, summary: MilestoneSummary) -> Path:
        return self.write_json(SUMMARY, summary)


def summarize(
    events: list[Event],
    *,
    status: MilestoneStatus,
    wall_s: float,
    reset_to: str | None = None,
    carried_from: str | None = None,
    stopped_by: str | None = None,
    error: str | None = None,
    synthetic: bool = False,
    cost_tolerance: float | None = None,
    warn: Callable[[str], None] | None = None,
) -> MilestoneSummary:
    """The summary the event log implies: turns, hint levels, and tokens/cost of every event that has some;
    the rest is what only the run loop knows. The one place a `MilestoneSummary` is built from a run.

    Usage is counted once per event that carries it, so the run loop sets `Event.usage` on one event per
    model call (the same contract `atif.to_atif` relies on).

    Events of the claude CLI carry what it reported spending (`args.backend.cli_cost_usd`, once per CLI
    invocation); their sum is the summary's `cli_cost_usd`. A sum more than `cost_tolerance` (a share)
    away from our `cost_usd` is a `cost_mismatch`, warned about through `warn`. An ENV_ERROR summary is
    not judged: the CLI's running invocation has not reported yet.
    """
    if not events:
        raise ValueError("no events to summarize")
    tokens = sum((event.usage for event in events if event.usage is not None), Usage())
    cost = round(sum(event.cost_usd for event in events), 6)
    reported = [
        backend["cli_cost_usd"]
        for event in events
        if isinstance(backend := event.action.args.get("backend"), dict) and "cli_cost_usd" in backend
    ]
    cli_cost = round(sum(reported), 6) if reported else None
    mismatch = (
        cli_cost is not None
        and cost_tolerance is not None
        and status != "ENV_ERROR"
        and not math.isclose(cli_cost, cost, rel_tol=cost_tolerance, abs_tol=1e-6)  # 1e-6: the rounding
    )
    if mismatch:
        (warn or log.warning)(
            f"warning: {events[0].milestone_id}: the claude CLI reported ${cli_cost:.4f}, our list prices "
            f"(agents/pricing.py) say ${cost:.4f}: more than {cost_tolerance:.0%} apart (summary cost_mismatch; "
            "the budgets count ours)"
        )
    return MilestoneSummary(
        run_id=events[0].run_id,
        milestone_id=events[0].milestone_id,
        status=status,
        turns=max(event.turn_id for event in events),
        hints_released=[
            event.hint_level for event in events if event.action.type == "hint" and event.hint_level is not None
        ],
        tokens=tokens,
        cost_usd=cost,
        wall_s=wall_s,
        reset_to=reset_to,
        carried_from=carried_from,
        error=error,
        stopped_by=stopped_by,
        synthetic=synthetic or any(event.synthetic for event in events),
        cost_unknown=any(event.usage is not None and event.model and not priced(event.model) for event in events),
        cli_cost_usd=cli_cost,
        cost_mismatch=mismatch,
    )


def read_summary(milestone_dir: Path) -> MilestoneSummary:
    path = Path(milestone_dir) / SUMMARY
    return Store(path.parent).read_model(path, MilestoneSummary)


def write_run_metadata(run_dir: Path, metadata: RunMeta) -> Path:
    path = Path(run_dir) / RUN_METADATA
    atomic_write(path, _json_bytes(metadata))
    return path


def with_scaffold(run_dir: Path, scaffold: dict) -> dict:
    """The run's metadata (as JSON), its scaffold updated if it changed: a scaffold states its tool schemas
    once it has run."""
    metadata = json.loads((Path(run_dir) / RUN_METADATA).read_text())
    if scaffold != metadata.get("scaffold"):
        metadata["scaffold"] = scaffold
        write_run_metadata(run_dir, RunMeta.model_validate(metadata))
    return metadata


def read_run_metadata(run_dir: Path) -> RunMeta:
    path = Path(run_dir) / RUN_METADATA
    return Store(path.parent).read_model(path, RunMeta)


GZIP_MEMBER = b"\x1f\x8b\x08"  # what each record of the outputs sidecar starts with


def read_outputs(path: Path, events: int | None = None, damaged: list[int] | None = None) -> dict[int, str]:
    """seq -> the whole tool output, from a milestone's outputs sidecar (none: {}). Only seqs below `events`
    count when given (an output written just before a crash has no event); a torn last member is skipped. A
    damaged member inside is skipped too, the reading going on at the next member; its byte offset goes to
    `damaged`, so the caller can say so."""
    outputs: dict[int, str] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return outputs
    offset = 0
    while offset < len(data):
        decompressor = zlib.decompressobj(wbits=31)  # one gzip member at a time
        try:
            line = decompressor.decompress(data[offset:])
            whole = decompressor.eof
        except zlib.error:
            whole = False
        if not whole:
            following = data.find(GZIP_MEMBER, offset + 1)
            if following < 0:
                break  # torn at the end: the output written as the run was killed
            if damaged is not None:
                damaged.append(offset)
            offset = following
            continue
        offset = len(data) - len(decompressor.unused_data)
        try:
            record = json.loads(line)
            seq, observation = int(record["seq"]), str(record["observation"])
        except (ValueError, KeyError, TypeError):
            continue
        if events is None or seq < events:
            outputs[seq] = observation
    return outputs
