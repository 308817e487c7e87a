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
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import jinja2

from ..analytics.load import connect_read_only
from ..harness.recorder import Recorder, read_run_metadata, read_summary
from ..models.trajectory import Event, MentorDecision
from ..store import RunFiles, Store, atomic_write
from .viewer_page import CSS, JS, TEMPLATE

log = logging.getLogger(__name__)

FOLD_LINES = 20  # observations (and arguments) longer than this are folded into a <details>
FOLD_CHARS = 2000
TARGET_ACTIONS = ("read_file", "write_file", "edit_file")  # as `hint_responses` counts a Dev's targets


def page_path(out_dir: Path, repo: str, run_id: str, milestone_id: str) -> Path:
    """Where a milestone run's page goes; the report links to the same path."""
    return Path(out_dir) / "runs" / repo / run_id / f"{milestone_id}.html"


# ---- analytics marks -----------------------------------------------------------------------------------------


@dataclass
class Marks:
    """What the analytics found in one milestone run, by event seq."""

    available: bool = False
    stretches: list[dict[str, Any]] = field(default_factory=list)  # stuck_points rows
    responses: dict[int, dict[str, Any]] = field(default_factory=dict)  # hint seq -> hint_responses row


def _rows(con: duckdb.DuckDBPyConnection, sql: str, key: tuple[str, str, str]) -> list[dict[str, Any]]:
    cur = con.execute(sql, list(key))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def read_marks(con: duckdb.DuckDBPyConnection | None, repo: str, run_id: str, mid: str) -> Marks:
    """The run's rows of `stuck_points` and `hint_responses`; no marks when the models were never built."""
    if con is None:
        return Marks()
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if not {"stuck_points", "hint_responses"} <= have:
        return Marks()
    key = (repo, run_id, mid)
    where = "WHERE repo = ? AND run_id = ? AND milestone_id = ?"
    stretches = _rows(con, f"SELECT * FROM stuck_points {where} ORDER BY start_seq, kind", key)
    responses = _rows(con, f"SELECT * FROM hint_responses {where} ORDER BY hint_seq", key)
    return Marks(True, stretches, {r["hint_seq"]: r for r in responses})


def _target(e: Event) -> str | None:
    """What `hint_responses` calls an event's target: the file it read or edited, or `search:<pattern>`."""
    args = e.action.args
    if e.role != "dev" or e.call_id is None:
        return None
    if e.action.type == "search" and isinstance(args.get("pattern"), str):
        return "search:" + args["pattern"]
    if e.action.type in TARGET_ACTIONS:
        path = e.files_touched[0] if e.files_touched else args.get("path")
        return path if isinstance(path, str) else None
    return None


def _direction_changes(events: list[Event], marks: Marks) -> dict[int, str]:
    """seq -> label: the first event after a hint that went to each target new since it (or flagged on the event)."""
    found = {e.seq: "direction change" for e in events if e.direction_change}
    for hint_seq, r in marks.responses.items():
        if not r.get("direction_change"):
            continue
        todo = set(r.get("new_targets") or [])
        for e in events[hint_seq + 1 :]:
            if not todo:
                break
            if (t := _target(e)) in todo:
                todo.discard(t)
                found.setdefault(e.seq, f"after the L{r['level']} hint (#{hint_seq}): {t}")
    return found


# ---- one event -------------------------------------------------------------------------------------------------


def _pretty(data: Any) -> str:
    """Indented JSON; a short flat object stays on one line (most tool calls: `{"path": "src/app.py"}`)."""
    flat = json.dumps(data, ensure_ascii=False, default=str)
    nested = isinstance(data, dict) and any(isinstance(v, dict | list) for v in data.values())
    if len(flat) <= 100 and not nested:
        return flat
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _pre(text: str, label: str, cls: str, note: str = "") -> dict[str, Any]:
    lines = text.count("\n") + 1
    fold = lines > FOLD_LINES or len(text) > FOLD_CHARS
    preview = next((line.strip() for line in text.splitlines() if line.strip()), "")[:100]
    return {"type": "pre", "text": text, "label": label, "cls": cls, "fold": fold, "lines": lines,
            "chars": f"{len(text):,}", "preview": preview, "note": note}  # fmt: skip


def _text(text: str, cls: str = "") -> dict[str, Any]:
    return {"type": "text", "text": text, "cls": cls}


def _decision_facts(d: MentorDecision | None, r: dict[str, Any] | None) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    if d is not None:
        snap = d.snapshot
        state = ", ".join(f"{k.replace('_', ' ')} {snap[k]}" for k in ("test_runs", "edit_count", "best_passed")
                          if k in snap)  # fmt: skip
        facts.append(("released", f"turn {d.turn_id}, level {d.level}, rule {d.rule}"))
        if state:
            facts.append(("Dev state", state))
        if snap.get("evidence"):
            facts.append(("evidence", json.dumps(snap["evidence"], ensure_ascii=False, default=str)))
        if d.response:
            resp = d.response
            new = ", ".join(resp.get("new_files") or []) or "none"
            facts.append(("Mentor saw", f"direction changed: {'yes' if resp.get('direction_changed') else 'no'} "
                                        f"(new files: {new}); tests improved: "
                                        f"{'yes' if resp.get('tests_improved') else 'no'}"))  # fmt: skip
    if r is not None:
        new = ", ".join(r.get("new_targets") or []) or "none"
        after = "" if r.get("passed_after") is None else f" → {r['passed_after']}"
        facts.append(("analytics", f"direction change: {'yes' if r.get('direction_change') else 'no'} "
                                   f"(new targets: {new}); passed {r.get('passed_before')}{after}"))  # fmt: skip
    return facts


def _blocks(e: Event, by_call: dict[str, int], d: MentorDecision | None, r: dict[str, Any] | None) -> list[dict]:
    a = e.action
    args = dict(a.args)
    blocks: list[dict[str, Any]] = []
    if a.type == "hint":
        text = e.mentor_hint if e.mentor_hint is not None else a.content
        blocks.append(_text(text, "hinttext"))
        args.pop("rule", None)
        if facts := _decision_facts(d, r):
            blocks.append({"type": "facts", "facts": facts})
    elif a.type == "message":
        if isinstance(reasoning := args.pop("reasoning", None), str) and reasoning:
            blocks.append(_text(reasoning, "reasoning"))
        if a.content:
            blocks.append(_text(a.content))
        calls = []
        for c in args.pop("tool_calls", None) or []:
            if not isinstance(c, dict):
                continue
            seq = by_call.get(str(c.get("id")))
            shown = c.get("args") if seq is None or c.get("error") else None  # the tool event shows them otherwise
            calls.append({"name": str(c.get("name", "?")), "seq": seq, "error": c.get("error"),
                          "args": _pretty(shown) if shown else ""})  # fmt: skip
        if calls:
            blocks.append({"type": "calls", "calls": calls})
    elif a.content:
        blocks.append(_text(a.content, "task" if a.type == "milestone_start" else ""))
    if args:
        blocks.append(_pre(_pretty(args), "arguments", "args"))
    if e.observation or e.call_id is not None:
        cut = e.observation_chars - len(e.observation)
        note = f"truncated: {e.observation_chars:,} chars in full, {cut:,} not recorded" if cut > 0 else ""
        blocks.append(_pre(e.observation, "observation", "obs", note))
    return blocks


def _badges(e: Event) -> list[tuple[str, str, str]]:
    badges: list[tuple[str, str, str]] = []
    if e.action.type == "hint":
        rule = e.action.args.get("rule")
        badges.append(("hint", f"hint L{e.hint_level}" + (f" · rule {rule}" if rule else ""), "Mentor hint release"))
    if e.test_status is not None:
        t = e.test_status
        badges.append(("good" if t.failed == 0 else "bad", f"tests {t.passed} passed · {t.failed} failed / {t.total}",
                       f"error signature {e.error_signature}" if e.error_signature else ""))  # fmt: skip
    elif not e.ok:
        badges.append(("bad", "failed", ""))
    if e.files_touched:
        badges.append(("", "touched " + ", ".join(e.files_touched), ""))
    return badges


def _when(e: Event, t0: Any) -> str:
    parts = [f"+{(e.ts - t0).total_seconds():.1f}s"]
    if e.usage is not None:
        parts.insert(0, f"{e.usage.input:,} in / {e.usage.cached:,} cached / {e.usage.output:,} out tok")
    if e.cost_usd:
        parts.insert(-1, f"${e.cost_usd:.4f}")
    if e.latency_s:
        parts.insert(-1, f"{e.latency_s:.1f}s latency")
    if e.model:
        parts.insert(0, e.model)
    return " · ".join(parts)


# ---- the page --------------------------------------------------------------------------------------------------


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(TEMPLATE)


def _mentor_log(files: RunFiles) -> dict[tuple[int, int], MentorDecision]:
    path = files.mentor_log
    if not path.exists():
        return {}
    decisions = [MentorDecision.model_validate(d) for d in json.loads(path.read_text())]
    return {(d.turn_id, d.level): d for d in decisions}


def _status_class(status: str) -> str:
    return status.lower() if status.lower() in ("pass", "fail", "stuck", "error") else "other"


def render_run(
    store: Store, repo: str, run_id: str, milestone_id: str, con: duckdb.DuckDBPyConnection | None = None
) -> str:
    """One milestone run as a self-contained HTML page; `con` (the analytics DuckDB) adds stuck/direction marks."""
    files = store.milestone_run(repo, run_id, milestone_id)
    events = Recorder.open(files.dir, repair=False).events()
    summary = read_summary(files.dir)
    meta = read_run_metadata(files.run_dir) if files.metadata.exists() else None
    decisions = _mentor_log(files)
    marks = read_marks(con, repo, run_id, milestone_id)
    directions = _direction_changes(events, marks)
    stuck: dict[int, list[str]] = {}
    for s in marks.stretches:
        for seq in range(s["start_seq"], s["end_seq"] + 1):
            stuck.setdefault(seq, []).append(s["kind"])
    starts = {s["start_seq"] for s in marks.stretches}
    ends = {s["end_seq"] for s in marks.stretches}
    signals = {s["signal_seq"]: s for s in marks.stretches}
    by_call = {e.call_id: e.seq for e in events if e.call_id}

    rows, index = [], []
    t0 = events[0].ts if events else None
    for e in events:
        cls = [f"ev r-{e.role}", f"k-{e.action.type}"]
        badges = _badges(e)
        if not e.ok:
            cls.append("fail")
        decision = decisions.get((e.turn_id, e.hint_level or 0)) if e.action.type == "hint" else None
        if e.action.type == "hint":
            cls += ["hint", "nav-mark"]
            rule = e.action.args.get("rule") or (decision.rule if decision else "")
            index.append({"seq": e.seq, "cls": "hint", "badge": f"hint L{e.hint_level}", "text": f"rule {rule}"})
        kinds = stuck.get(e.seq, [])
        if kinds:
            cls.append("stuck")
            badges.append(("stuck", "stuck · " + ", ".join(dict.fromkeys(kinds)), "inside a stuck stretch"))
        if e.seq in starts:
            cls += ["stuck-start", "nav-mark"]
            for s in (s for s in marks.stretches if s["start_seq"] == e.seq):
                index.append({"seq": e.seq, "cls": "stuck", "badge": f"stuck · {s['kind']}",
                              "text": f"#{s['start_seq']}–#{s['end_seq']}, length {s['length']}, "
                                      f"signal at #{s['signal_seq']} (turn {s['signal_turn']})"})  # fmt: skip
        if e.seq in ends:
            cls.append("stuck-end")
        if e.seq in signals:
            badges.append(("stuck", f"stuck signal · {signals[e.seq]['kind']}", "the detector's threshold was reached"))
        if e.seq in directions:
            cls += ["direction-change", "nav-mark"]
            badges.append(("dir", "direction change", directions[e.seq]))
            index.append({"seq": e.seq, "cls": "dir", "badge": "direction change", "text": directions[e.seq]})
        blocks = _blocks(e, by_call, decision, marks.responses.get(e.seq))
        rows.append({"seq": e.seq, "turn": e.turn_id, "role": e.role, "kind": e.action.type, "cls": " ".join(cls),
                     "stuck": " ".join(dict.fromkeys(kinds)), "badges": badges, "when": _when(e, t0),
                     "blocks": blocks})  # fmt: skip
    index.sort(key=lambda m: m["seq"])

    tok = summary.tokens
    facts = [
        ("status", summary.status),
        ("turns", str(summary.turns)),
        ("events", str(len(events))),
        ("hints", " → ".join(f"L{h}" for h in summary.hints_released) or "none"),
        ("tokens", f"{tok.input:,} in / {tok.cached:,} cached / {tok.output:,} out"),
        ("cost", f"${summary.cost_usd:.4f}"),
        ("wall time", _duration(summary.wall_s)),
        ("synthetic", "yes" if summary.synthetic else "no"),
    ]
    if meta is not None:
        facts.append(("agent", meta.agent + (f" · {meta.model}" if meta.model else "")))
    if summary.carried_from:
        facts.append(("carried from", summary.carried_from))
    if summary.reset_to:
        facts.append(("reset to", summary.reset_to[:12]))
    if marks.available:
        facts.append(("stuck stretches", str(len(marks.stretches))))
    note = "no analytics database: stuck stretches and direction changes are not marked (run `analyze` first)"
    return _template().render(
        repo=repo, run_id=run_id, mid=milestone_id, s=summary, status_class=_status_class(summary.status),
        facts=facts, marks=index, events=rows, analytics=marks.available, analytics_note=note, css=CSS, js=JS,
    )  # fmt: skip


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, sec = divmod(round(seconds), 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m {sec:02d}s"


def milestone_runs(store: Store) -> list[tuple[str, str, str]]:
    """(repo, run_id, milestone_id) of every finished milestone run in the store (it has a summary.json)."""
    return [(f.repo_key, f.run_id, f.milestone_id) for f in store.milestone_runs(finished=True)]


def write_viewers(store: Store, out_dir: Path) -> list[Path]:
    """One viewer page per milestone run, at `out_dir/runs/<repo>/<run_id>/<mid>.html`; returns their paths."""
    con = connect_read_only(store) if store.analytics_database().exists() else None
    try:
        written = []
        for repo, run_id, mid in milestone_runs(store):
            path = page_path(out_dir, repo, run_id, mid)
            atomic_write(path, render_run(store, repo, run_id, mid, con).encode())
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
