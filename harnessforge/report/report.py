"""The run report: one self-contained HTML file (inline CSS and SVG, nothing fetched) over a store.

Everything about the runs comes from the analytics models in DuckDB (`milestone_summary`,
`progress_curves`, `stg_edits`, `stg_test_runs`, `hint_responses`, `stuck_points`), so the report
shows exactly what distillation graded; the plan, the Reviewer's verdicts and the export counts
come from their files in the store. Parts that do not exist yet (no reviews, no export) say so
instead of failing. Each milestone run links to its trajectory viewer page,
`runs/<repo>/<run_id>/<milestone>.html` beside the report.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
from pydantic import ValidationError

from ..analytics.load import connect_read_only
from ..errors import ArtifactError
from ..models.common import first_error
from ..models.distill import Review
from ..store import Store, atomic_write
from . import plots

Row = dict[str, Any]
RUN_COLUMNS = ("repo, run_id, milestone_id, status, turns, hints, max_hint_level, tool_calls, test_runs, edits, "
               "stuck_points, tokens_input, tokens_output, cost_usd, synthetic")  # fmt: skip


def build_report(store: Store, out: Path) -> Path:
    """Write the report to `out` (an .html file) and return its path."""
    con = _open(store)
    try:
        runs = _rows(con, f"SELECT {RUN_COLUMNS} FROM milestone_summary ORDER BY repo, run_id, milestone_id")
        figures = _figures(con, runs)
    except duckdb.Error as e:
        raise ArtifactError(f"{store.analytics_database()}: cannot read the analytics models ({e}); "
                            "run `harnessforge distill` again") from None  # fmt: skip
    finally:
        con.close()
    out = Path(out)
    body = [
        _header(store, runs),
        _section("runs", "Milestone runs", _runs_table(runs, out.parent)),
        _section("plots", "Plots", "\n".join(figures)),
        _section("plan", "Plan", _plan_table(store)),
        _section("reviews", "Reviewer verdicts", _reviews_table(store)),
        _section("exports", "Exports", _exports_table(store.datasets_dir(), store.distilled_manifest())),
    ]
    page = PAGE.replace("{css}", CSS, 1).replace("{body}", "\n".join(body), 1)
    atomic_write(out, page.encode())
    return out


# ---- analytics ---------------------------------------------------------------------------------
def _open(store: Store) -> duckdb.DuckDBPyConnection:
    """Read-only: the report never changes the store."""
    path = store.analytics_database()
    con = connect_read_only(store)
    if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'milestone_summary'").fetchall():
        con.close()
        raise ArtifactError(f"{path}: the analytics models are not built; run `harnessforge distill` first")
    return con


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[Row]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _figures(con: duckdb.DuckDBPyConnection, runs: list[Row]) -> list[str]:
    """The five plots, each a <figure> with its caption."""
    labels = _labels(runs)
    multi = len({r["repo"] for r in runs}) > 1
    milestones = list(dict.fromkeys(_milestone(r, multi) for r in sorted(runs, key=lambda r: r["milestone_id"])))
    stuck = _rows(con, "SELECT repo, run_id, milestone_id, kind, signal_turn FROM stuck_points")
    if not runs:
        svgs = [plots.empty(name, "no milestone runs yet: run `harnessforge run`, then `harnessforge distill`")
                for name in ("timeline", "progress", "hints", "stuck", "tokens")]  # fmt: skip
    else:
        edits = _rows(con, "SELECT repo, run_id, milestone_id, turn_id FROM stg_edits")
        tests = _rows(con, "SELECT repo, run_id, milestone_id, turn_id, green FROM stg_test_runs")
        hints = _rows(con, "SELECT repo, run_id, milestone_id, hint_turn, level FROM hint_responses ORDER BY hint_seq")
        curves = _rows(con, "SELECT repo, run_id, milestone_id, seq, turn_id, tests_passed FROM progress_curves")
        per_milestone: dict[str, Row] = defaultdict(lambda: {"tokens_input": 0, "tokens_output": 0, "cost_usd": 0.0})
        for r in sorted(runs, key=lambda r: r["milestone_id"]):
            m = per_milestone[_milestone(r, multi)]
            m["milestone"] = _milestone(r, multi)
            for k in ("tokens_input", "tokens_output", "cost_usd"):
                m[k] += r[k] or 0
        svgs = [
            plots.timeline(runs, labels, edits, tests, hints, stuck),
            plots.progress(runs, labels, curves),
            plots.hints_vs_outcome(runs),
            plots.stuck_heatmap(milestones, [{**s, "milestone": _milestone(s, multi)} for s in stuck]),
            plots.tokens_and_cost(list(per_milestone.values()), _token_note(runs)),
        ]
    return [_figure(i, svg, caption) for i, (svg, caption) in enumerate(zip(svgs, CAPTIONS), 1)]


CAPTIONS = [
    ("timeline", "Timeline of each milestone run over its turns: successful edits (squares), test runs (dots: "
                 "green when every test passed, red otherwise), Mentor hints (diamonds, labelled with their level), "
                 "stuck signals (crosses) and the run's outcome. From stg_edits, stg_test_runs, hint_responses, "
                 "stuck_points and milestone_summary."),
    ("progress", "Passing tests after each test run, per milestone run (progress_curves)."),
    ("hints", "Outcome by the highest hint level a milestone run received: counts of runs (milestone_summary)."),
    ("stuck", "Stuck points by milestone and detector: same error again and again, one action with one "
              "observation repeated, one failing action repeated, two actions alternating (stuck_points)."),
    ("tokens", "Tokens (bars) and cost (dots) per milestone, summed over its runs (milestone_summary)."),
]  # fmt: skip


def _figure(n: int, svg: str, caption: tuple[str, str]) -> str:
    name, text = caption
    return (f'<figure id="fig-{name}">\n{svg}\n<figcaption><b>Figure {n}.</b> {html.escape(text)}</figcaption>\n'
            "</figure>")  # fmt: skip


def _token_note(runs: list[Row]) -> str | None:
    if any(r["tokens_input"] or r["tokens_output"] for r in runs):
        return None
    if runs and all(r["synthetic"] for r in runs):
        return "no tokens: synthetic oracle run"
    return "no tokens recorded"


def _labels(runs: list[Row]) -> dict[tuple[str, str, str], str]:
    multi = len({r["repo"] for r in runs}) > 1
    return {(r["repo"], r["run_id"], r["milestone_id"]): (f"{r['repo']} " if multi else "")
            + f"{r['run_id']} {r['milestone_id']}" for r in runs}  # fmt: skip


def _milestone(row: Row, multi: bool) -> str:
    return f"{row['repo']} {row['milestone_id']}" if multi else row["milestone_id"]


# ---- HTML --------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    """Cells are HTML already (escape values with `_e`)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def _not_yet(text: str) -> str:
    return f'<p class="not-yet">Not yet: {_e(text)}</p>'


def _section(sid: str, title: str, content: str) -> str:
    return f'<section id="{sid}">\n<h2>{_e(title)}</h2>\n{content}\n</section>'


def _status(status: str) -> str:
    return f'<span class="status s-{_e(status.lower())}">{_e(status)}</span>'


def _header(store: Store, runs: list[Row]) -> str:
    repos = sorted({r["repo"] for r in runs})
    synthetic = sum(bool(r["synthetic"]) for r in runs)
    facts = [f"{len(runs)} milestone runs", f"{len({(r['repo'], r['run_id']) for r in runs})} chain runs",
             f"{len(repos)} repositories"] + ([f"{synthetic} synthetic (oracle)"] if synthetic else [])  # fmt: skip
    nav = " · ".join(f'<a href="#{s}">{t}</a>' for s, t in NAV)
    return (f"<header><h1>HarnessForge report</h1>\n<p>{_e(', '.join(facts))} · store <code>{_e(store.root)}"
            f"</code></p>\n<nav>{nav}</nav></header>")  # fmt: skip


NAV = [("runs", "Milestone runs"), ("plots", "Plots"), ("plan", "Plan"), ("reviews", "Reviewer verdicts"),
       ("exports", "Exports")]  # fmt: skip


def viewer_path(repo: str, run_id: str, milestone_id: str) -> str:
    """Where the trajectory viewer page of a milestone run is, relative to the report."""
    return "/".join(["runs", quote(repo), quote(run_id), quote(milestone_id) + ".html"])


def _runs_table(runs: list[Row], here: Path) -> str:
    if not runs:
        return _not_yet("no milestone runs in the analytics; run `harnessforge run`, then `harnessforge distill`")
    rows, missing = [], 0
    for r in runs:
        link = viewer_path(r["repo"], r["run_id"], r["milestone_id"])
        page = f'<a href="{_e(link)}">trajectory</a>'
        if not (here / link).exists():
            missing += 1
            page += ' <span class="missing">(page missing)</span>'
        rows.append([_e(r["repo"]), _e(r["run_id"]), _e(r["milestone_id"]), _status(r["status"]), _e(r["turns"]),
                     _e(r["hints"]), _e(f"L{r['max_hint_level']}" if r["max_hint_level"] else "—"), _e(r["edits"]),
                     _e(r["test_runs"]), _e(r["stuck_points"]), _e(f"{r['tokens_input']:,} / {r['tokens_output']:,}"),
                     _e(f"${r['cost_usd'] or 0:.4f}"), _e("yes" if r["synthetic"] else ""), page])  # fmt: skip
    note = (f'<p class="missing">{missing} of {len(runs)} trajectory pages are missing next to this report: write '
            "them with the trajectory viewer (<code>write_viewers</code>).</p>") if missing else ""  # fmt: skip
    headers = ["repo", "run", "milestone", "status", "turns", "hints", "max hint", "edits", "test runs",
               "stuck points", "tokens in / out", "cost", "synthetic", "viewer"]  # fmt: skip
    return note + _table(headers, rows, "runs")


def _plan_table(store: Store) -> str:
    keys = store.repo_keys()
    if not keys:
        return _not_yet("no repositories in the store; run `harnessforge plan`")
    parts = []
    for key in keys:
        try:
            plan = store.load_plan(key)
        except ArtifactError as e:
            parts.append(f"<h3>{_e(key)}</h3>" + _not_yet(str(e)))
            continue
        rows = []
        for m in plan.milestones:
            vpath = store.validation_file(key, m.id)
            f2p = _e(len(store.load_validation(key, m.id).fail_to_pass)) if vpath.exists() else "not validated"
            rows.append([_e(m.id), _e(m.title), _e(m.release or "—"), _e(m.status or "not validated"), f2p])
        title = f"<h3>{_e(key)} <small>{_e(plan.from_ref)} → {_e(plan.to_ref)}</small></h3>"
        parts.append(title + _table(["id", "title", "release", "status", "FAIL_TO_PASS"], rows, "plan"))
    return "\n".join(parts)


def _reviews_table(store: Store) -> str:
    path = store.distilled_file("reviews")
    if not path.exists():
        return _not_yet("no reviews; run `harnessforge distill`")
    reviews = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if line.strip():
            try:
                reviews.append(Review.model_validate_json(line))
            except ValidationError as e:
                raise ArtifactError(f"{path}:{n}: invalid Review: {first_error(e)}") from None
    if not reviews:
        return _not_yet("the Reviewer graded no milestone runs")
    rows = [[_e(r.repo), _e(r.run_id), _e(r.milestone_id), _status(r.status), _e(r.difficulty),
             _e(f"L{r.max_hint_level}" if r.max_hint_level else "—"), f'<span class="v-{_e(r.rl_value)}">'
             f"{_e(r.rl_value)}</span>", _e(", ".join(r.discard_reasons)), _e(r.reviewer), _e(r.why)]
            for r in reviews]  # fmt: skip
    headers = ["repo", "run", "milestone", "status", "difficulty", "max hint", "RL value", "discarded for", "reviewer",
               "why"]  # fmt: skip
    return _table(headers, rows, "reviews")


# ---- exports -----------------------------------------------------------------------------------
_CARD_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \|$", re.M)


def export_counts(datasets: Path) -> list[tuple[str, int, int | None]]:
    """(what, rows found in the files, rows the dataset card states) per exported file or folder:
    JSON lines per .jsonl file, one per ATIF trajectory, one per Harbor task folder; and what the
    card lists but no file holds (found: 0)."""
    card_path = datasets / "README.md"
    card = {k: int(n) for k, n in _CARD_ROW.findall(card_path.read_text())} if card_path.exists() else {}
    found: list[tuple[str, int, int | None]] = []
    used = set()
    for f in sorted(datasets.rglob("*.jsonl")):
        rel = f.relative_to(datasets).with_suffix("").as_posix()
        key = rel if rel in card else f.stem if f.stem in card else None
        used.add(key)
        found.append((f"{rel}.jsonl", _lines(f), card.get(key)))
    folders = {"atif": ("atif/ (ATIF trajectories)", "*/*/*.json"), "harbor_tasks": ("tasks/ (Harbor tasks)", "*/")}
    for key, (what, pattern) in folders.items():
        folder = datasets / what.split("/")[0]
        if folder.is_dir() or key in card:
            used.add(key)
            found.append((what, len(list(folder.glob(pattern))) if folder.is_dir() else 0, card.get(key)))
    found += [(f"{key} (card only)", 0, n) for key, n in card.items() if key not in used]
    return found


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def _exports_table(datasets: Path, distilled_manifest: Path) -> str:
    if not datasets.is_dir() or not any(datasets.iterdir()):
        return _not_yet(f"nothing exported to {datasets}; run `harnessforge export`")
    counts = export_counts(datasets)
    if not counts:
        return _not_yet(f"no exported rows in {datasets}")
    rows = []
    for what, n, stated in counts:
        check = "" if stated is None else ("✓" if stated == n else f'<span class="missing">card says {stated}</span>')
        rows.append([f"<code>{_e(what)}</code>", _e(n), _e("—" if stated is None else stated), check])
    note = "" if (datasets / "README.md").exists() else _not_yet("no dataset card (README.md) in the export")
    manifest = _manifest(distilled_manifest)
    return note + manifest + _table(["file", "rows", "dataset card", ""], rows, "exports")


def _manifest(path: Path) -> str:
    if not path.exists():
        return ""
    data = json.loads(path.read_text())
    return f"<p>Distilled with rules <code>{_e(data.get('rules_hash'))}</code> at {_e(data.get('created_at'))}.</p>"


CSS = """
body{margin:0 auto;max-width:1280px;padding:0 24px 60px;color:#1d1f21;background:#fafaf8;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header{padding:14px 0 6px;border-bottom:1px solid #ddd}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}h3{font-size:15px;margin:18px 0 6px}
header p{margin:2px 0;color:#555}nav a{color:#2f6fdf}
code{font-family:ui-monospace,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e2e2de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0ec;font-weight:600}tbody tr:nth-child(even){background:#fbfbf9}
td:nth-child(n+5){white-space:nowrap}table.reviews td:last-child,table.plan td:nth-child(2){white-space:normal}
.status{display:inline-block;border-radius:8px;padding:0 7px;font-size:12px;font-weight:600;color:#fff;
background:#78909c}.s-pass{background:#2e7d32}.s-fail{background:#c62828}.s-stuck{background:#e65100}
.v-high{color:#2e7d32;font-weight:600}.v-reject{color:#c62828;font-weight:600}
.missing{color:#c62828}.not-yet{color:#6b7075;font-style:italic;background:#f3f3ef;padding:6px 10px;
border-left:3px solid #bbb}
figure{margin:18px 0;padding:10px;background:#fff;border:1px solid #e2e2de;border-radius:4px}
figure svg{display:block;max-width:100%;height:auto;margin:0 auto}
figcaption{color:#444;font-size:13px;margin-top:6px}
"""
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>HarnessForge report</title>
<style>{css}</style>
</head>
<body>
{body}
</body>
</html>
"""
