"""The trajectory viewer: one self-contained HTML page per milestone run, to read what the Dev did event by event.

Everything is rendered here, on the server: each event with its text, tool arguments and (folded when long)
observation, test counts, hint releases with the Mentor rule that fired, and the analytics' marks (stuck
stretches from `stuck_points`, direction changes after hints from `hint_responses`). The page's script only
filters and navigates, so a long trajectory stays fast. Pages go to `<out>/runs/<repo>/<run_id>/<mid>.html`, the
path the report links to.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from html import escape
from pathlib import Path

import duckdb
import jinja2

from ..analytics.database import connect_read_only
from ..analytics.rows import HintResponseRow, StuckPointRow, has_tables, read_rows
from ..atomic import atomic_write
from ..errors import ArtifactError
from ..harness.recorder import Recorder, read_outputs, read_run_metadata, read_summary
from ..models.run import MilestoneSummary
from ..models.trajectory import Event, MentorDecision
from ..store import RunFiles, Store
from .viewer_events import badges, blocks, when
from .viewer_page import CSS, JS, TEMPLATE

log = logging.getLogger(__name__)

TARGET_ACTIONS = ("read_file", "write_file", "edit_file")  # as `hint_responses` counts a Dev's targets


def page_path(out_dir: Path, repo: str, run_id: str, milestone_id: str) -> Path:
    """Where a milestone run's page goes; the report links to the same path."""
    return Path(out_dir) / "runs" / repo / run_id / f"{milestone_id}.html"


# ---- analytics marks -----------------------------------------------------------------------------------------


@dataclass
class Marks:
    """What the analytics found in one milestone run, by event seq."""

    available: bool = False
    stretches: list[StuckPointRow] = field(default_factory=list)
    responses: dict[int, HintResponseRow] = field(default_factory=dict)  # by hint seq


def read_marks(con: duckdb.DuckDBPyConnection | None, repo: str, run_id: str, milestone_id: str) -> Marks:
    """The run's rows of `stuck_points` and `hint_responses`; no marks when the models were never built."""
    if con is None or not has_tables(con, StuckPointRow.table, HintResponseRow.table):
        return Marks()
    match = {"repo": repo, "run_id": run_id, "milestone_id": milestone_id}
    stretches = read_rows(con, StuckPointRow, match, order_by=("start_seq", "kind"))
    responses = read_rows(con, HintResponseRow, match, order_by=("hint_seq",))
    return Marks(True, stretches, {response.hint_seq: response for response in responses})


def _target(event: Event) -> str | None:
    """What `hint_responses` calls an event's target: the file it read or edited, or `search:<pattern>`."""
    arguments = event.action.args
    if event.role != "dev" or event.call_id is None:
        return None
    if event.action.type == "search" and isinstance(arguments.get("pattern"), str):
        return "search:" + arguments["pattern"]
    if event.action.type in TARGET_ACTIONS:
        path = event.files_touched[0] if event.files_touched else arguments.get("path")
        return path if isinstance(path, str) else None
    read = arguments.get("files_read")  # a shell command: the file it changed, else the one it read
    if event.files_touched:
        return event.files_touched[0]
    return read[0] if isinstance(read, list) and read and isinstance(read[0], str) else None


def _response_label(event: Event) -> str:
    """A direction change the log records: the Mentor's response event names the hint and the new files."""
    arguments = event.action.args
    if event.action.type != "hint_response":
        return "direction change"
    new = ", ".join(arguments.get("new_files") or [])
    return f"the response to the L{event.hint_level} hint (turn {arguments.get('hint_turn')}): {new}"


def _direction_changes(events: list[Event], marks: Marks) -> dict[int, str]:
    """seq -> label: the first event after a hint that went to each target new since it (or flagged on the event)."""
    found = {event.seq: _response_label(event) for event in events if event.direction_change}
    for hint_seq, response in marks.responses.items():
        if not response.direction_change:
            continue
        todo = set(response.new_targets)
        for event in events[hint_seq + 1 :]:
            if not todo:
                break
            if (target := _target(event)) in todo:
                todo.discard(target)
                found.setdefault(event.seq, f"after the L{response.level} hint (#{hint_seq}): {target}")
    return found


# ---- the page --------------------------------------------------------------------------------------------------


@cache
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    return environment.from_string(TEMPLATE)


def _mentor_log(files: RunFiles) -> dict[tuple[int, int], MentorDecision]:
    path = files.mentor_log
    if not path.exists():
        return {}
    decisions = [MentorDecision.model_validate(entry) for entry in json.loads(path.read_text())]
    return {(decision.turn_id, decision.level): decision for decision in decisions}


def _status_class(status: str) -> str:
    return status.lower() if status.lower() in ("pass", "fail", "stuck", "error") else "other"


def _cli_cost(summary: MilestoneSummary) -> str:
    """The claude CLI's own account next to ours, when the run had one."""
    if summary.cli_cost_usd is None:
        return ""
    apart = ", beyond the tolerance" if summary.cost_mismatch else ""
    return f" (the claude CLI reported ${summary.cli_cost_usd:.4f}{apart})"


def render_run(
    store: Store, repo: str, run_id: str, milestone_id: str, con: duckdb.DuckDBPyConnection | None = None
) -> str:
    """One milestone run as a self-contained HTML page; `con` (the analytics DuckDB) adds stuck/direction marks."""
    files = store.milestone_run(repo, run_id, milestone_id)
    events = Recorder.open(files.dir, repair=False).events()
    summary = read_summary(files.dir)
    metadata = read_run_metadata(files.run_dir) if files.metadata.exists() else None
    marks = read_marks(con, repo, run_id, milestone_id)
    rows, index = _event_rows(events, marks, _mentor_log(files), read_outputs(files.outputs, len(events)))
    tokens = summary.tokens
    facts = [
        ("status", summary.status),
        ("turns", str(summary.turns)),
        ("events", str(len(events))),
        ("hints", " → ".join(f"L{level}" for level in summary.hints_released) or "none"),
        ("tokens", f"{tokens.input:,} in / {tokens.cached:,} cached / {tokens.output:,} out"),
        ("cost", f"${summary.cost_usd:.4f}" + _cli_cost(summary)),
        ("wall time", _duration(summary.wall_s)),
        ("synthetic", "yes" if summary.synthetic else "no"),
    ]
    if metadata is not None:
        facts.append(("agent", metadata.agent + (f" · {metadata.model}" if metadata.model else "")))
    if summary.carried_from:
        facts.append(("carried from", summary.carried_from))
    if summary.reset_to:
        facts.append(("reset to", summary.reset_to[:12]))
    if marks.available:
        facts.append(("stuck stretches", str(len(marks.stretches))))
    note = "no analytics database: stuck stretches and direction changes are not marked (run `analyze` first)"
    return _template().render(
        repo=repo,
        run_id=run_id,
        milestone_id=milestone_id,
        summary=summary,
        status_class=_status_class(summary.status),
        facts=facts,
        marks=index,
        events=rows,
        analytics=marks.available,
        analytics_note=note,
        css=CSS,
        js=JS,
    )


def _event_rows(
    events: list[Event],
    marks: Marks,
    decisions: dict[tuple[int, int], MentorDecision],
    full_outputs: dict[int, str] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Each event as the template shows it, and the index of marks (hints, stuck stretches, direction
    changes) in seq order."""
    directions = _direction_changes(events, marks)
    stuck: dict[int, list[str]] = {}
    for stretch in marks.stretches:
        for seq in range(stretch.start_seq, stretch.end_seq + 1):
            stuck.setdefault(seq, []).append(stretch.kind)
    ends = {stretch.end_seq for stretch in marks.stretches}
    signals = {stretch.signal_seq: stretch for stretch in marks.stretches}
    by_call = {event.call_id: event.seq for event in events if event.call_id}
    rows, index = [], []
    start = events[0].ts if events else None
    for event in events:
        classes = [f"ev r-{event.role}", f"k-{event.action.name}"]
        shown_badges = badges(event)
        if not event.ok:
            classes.append("fail")
        decision = None
        if event.action.type == "hint":
            decision = decisions.get((event.turn_id, event.hint_level or 0))
            classes += ["hint", "nav-mark"]
            rule = event.action.args.get("rule") or (decision.rule if decision else "")
            index.append(
                {"seq": event.seq, "cls": "hint", "badge": f"hint L{event.hint_level}", "text": f"rule {rule}"}
            )
        kinds = stuck.get(event.seq, [])
        if kinds:
            classes.append("stuck")
            shown_badges.append(("stuck", "stuck · " + ", ".join(dict.fromkeys(kinds)), "inside a stuck stretch"))
        starting = [stretch for stretch in marks.stretches if stretch.start_seq == event.seq]
        if starting:
            classes += ["stuck-start", "nav-mark"]
            index += [_stretch_mark(stretch) for stretch in starting]
        if event.seq in ends:
            classes.append("stuck-end")
        if event.seq in signals:
            kind = signals[event.seq].kind
            shown_badges.append(("stuck", f"stuck signal · {kind}", "the detector's threshold was reached"))
        if event.seq in directions:
            classes += ["direction-change", "nav-mark"]
            shown_badges.append(("dir", "direction change", directions[event.seq]))
            index.append({"seq": event.seq, "cls": "dir", "badge": "direction change", "text": directions[event.seq]})
        rows.append(
            {
                "seq": event.seq,
                "turn": event.turn_id,
                "role": event.role,
                "kind": event.action.name,
                "cls": " ".join(classes),
                "stuck": " ".join(dict.fromkeys(kinds)),
                "badges": shown_badges,
                "when": when(event, start),
                "blocks": blocks(
                    event, by_call, decision, marks.responses.get(event.seq), (full_outputs or {}).get(event.seq)
                ),
            }
        )
    index.sort(key=lambda mark: mark["seq"])
    return rows, index


def _stretch_mark(stretch: StuckPointRow) -> dict:
    text = (
        f"#{stretch.start_seq}–#{stretch.end_seq}, length {stretch.length}, "
        f"signal at #{stretch.signal_seq} (turn {stretch.signal_turn})"
    )
    return {"seq": stretch.start_seq, "cls": "stuck", "badge": f"stuck · {stretch.kind}", "text": text}


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m {rest:02d}s"


def milestone_runs(store: Store) -> list[tuple[str, str, str]]:
    """(repo, run_id, milestone_id) of every finished milestone run in the store (it has a summary.json)."""
    return [(files.repo_key, files.run_id, files.milestone_id) for files in store.milestone_runs(finished=True)]


def write_viewers(store: Store, out_dir: Path, log: Callable[[str], None] = lambda message: None) -> list[Path]:
    """One viewer page per milestone run, at `out_dir/runs/<repo>/<run_id>/<mid>.html`; returns their paths. A run
    whose files cannot be read gets a page saying so (and `log` names it): the other pages are still written."""
    con = connect_read_only(store) if store.analytics_database().exists() else None
    try:
        written = []
        for repo, run_id, milestone_id in milestone_runs(store):
            path = page_path(out_dir, repo, run_id, milestone_id)
            try:
                page = render_run(store, repo, run_id, milestone_id, con)
            except ArtifactError as e:
                log(f"{e}; its viewer page says so, the other pages are written")
                page = f"<!doctype html><title>{escape(run_id)} {escape(milestone_id)}</title><p>{escape(str(e))}</p>"
            atomic_write(path, page.encode())
            written.append(path)
        return written
    finally:
        if con is not None:
            con.close()


def view_run_dir(run_dir: Path, out: Path | None = None) -> Path:
    """`harnessforge view`: the page of one milestone run directory, `<store>/trajectories/<repo>/<run_id>/<mid>`
    (written to `out`, default `<run_dir>/viewer.html`)."""
    store, files = Store.of_milestone_run(run_dir)
    con = connect_read_only(store) if store.analytics_database().exists() else None
    try:
        page = render_run(store, files.repo_key, files.run_id, files.milestone_id, con)
    finally:
        if con is not None:
            con.close()
    out = out or files.dir / "viewer.html"
    atomic_write(out, page.encode())
    return out
