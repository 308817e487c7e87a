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
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb

from ..analytics.database import connect_read_only
from ..analytics.rows import (
    EditRow,
    HintResponseRow,
    MemorisationRateRow,
    MilestoneSummaryRow,
    ProgressCurveRow,
    RunKey,
    StuckPointRow,
    TestRunRow,
    has_tables,
    read_rows,
)
from ..atomic import atomic_write
from ..distill.outputs import REVIEWS, read_distilled
from ..distill.poc import criteria, funnel
from ..errors import ArtifactError
from ..rules import Rules, load_rules
from ..store import Store
from . import plots
from .exports import export_counts
from .scaffolds import scaffold_comparison

KEY = ("repo", "run_id", "milestone_id")


def build_report(store: Store, out: Path, rules: Rules | None = None) -> Path:
    """Write the report to `out` (an .html file) and return its path."""
    con = _open(store)
    try:
        runs = read_rows(con, MilestoneSummaryRow, order_by=KEY)
        figures = _figures(con, runs)
        rates = memorisation_rates(con)
    except duckdb.Error as e:
        raise ArtifactError(
            f"{store.analytics_database()}: cannot read the analytics models ({e}); run `harnessforge distill` again"
        ) from None
    finally:
        con.close()
    out = Path(out)
    body = [
        _header(store, runs),
        _section("runs", "Milestone runs", _runs_table(runs, out.parent)),
        _section("plots", "Plots", "\n".join(figures)),
        _section("scaffolds", "Scaffolds", _scaffolds_table(runs)),
        _section("plan", "Plan", _plan_table(store)),
        _section("memorisation", "Memorisation probe", _memorisation_table(rates)),
        _section("reviews", "Reviewer verdicts", _reviews_table(store)),
        _section("exports", "Exports", _exports_table(store.datasets_dir(), store.distilled_manifest())),
        _section("poc", "Proof of concept", _poc(store, rules or load_rules())),
    ]
    page = PAGE.replace("{css}", CSS, 1).replace("{body}", "\n".join(body), 1)
    atomic_write(out, page.encode())
    return out


# ---- analytics ---------------------------------------------------------------------------------
def _open(store: Store) -> duckdb.DuckDBPyConnection:
    """Read-only: the report never changes the store."""
    path = store.analytics_database()
    con = connect_read_only(store)
    if not has_tables(con, MilestoneSummaryRow.table):
        con.close()
        raise ArtifactError(f"{path}: the analytics models are not built; run `harnessforge distill` first")
    return con


def _figures(con: duckdb.DuckDBPyConnection, runs: list[MilestoneSummaryRow]) -> list[str]:
    """The five plots, each a <figure> with its caption."""
    labels = _labels(runs)
    multi = len({run.repo for run in runs}) > 1
    milestones = list(dict.fromkeys(_milestone(run, multi) for run in sorted(runs, key=lambda run: run.milestone_id)))
    stuck = read_rows(con, StuckPointRow)
    if not runs:
        why = "no milestone runs yet: run `harnessforge run`, then `harnessforge distill`"
        svgs = [plots.empty(name, why) for name in ("timeline", "progress", "hints", "stuck", "tokens")]
    else:
        edits = read_rows(con, EditRow)
        tests = read_rows(con, TestRunRow)
        hints = read_rows(con, HintResponseRow, order_by=("hint_seq",))
        curves = read_rows(con, ProgressCurveRow)
        svgs = [
            plots.timeline(runs, labels, edits, tests, hints, stuck),
            plots.progress(runs, labels, curves),
            plots.hints_vs_outcome(runs),
            plots.stuck_heatmap(milestones, [(_milestone(point, multi), point.kind) for point in stuck]),
            plots.tokens_and_cost(_costs(runs, multi), _token_note(runs)),
        ]
    return [_figure(number, svg, caption) for number, (svg, caption) in enumerate(zip(svgs, CAPTIONS), 1)]


def _costs(runs: list[MilestoneSummaryRow], multi: bool) -> list[plots.MilestoneCost]:
    """Tokens and cost per milestone, summed over its runs, in milestone order."""
    per_milestone: dict[str, plots.MilestoneCost] = {}
    for run in sorted(runs, key=lambda run: run.milestone_id):
        name = _milestone(run, multi)
        cost = per_milestone.setdefault(name, plots.MilestoneCost(name))
        cost.tokens_input += run.tokens_input or 0
        cost.tokens_output += run.tokens_output or 0
        cost.cost_usd += run.cost_usd or 0
    return list(per_milestone.values())


CAPTIONS = [
    (
        "timeline",
        "Timeline of each milestone run over its turns: successful edits (squares), test runs (dots: "
        "green when every test passed, red otherwise), Mentor hints (diamonds, labelled with their level), "
        "stuck signals (crosses) and the run's outcome. From stg_edits, stg_test_runs, hint_responses, "
        "stuck_points and milestone_summary.",
    ),
    ("progress", "Passing tests after each test run, per milestone run (progress_curves)."),
    ("hints", "Outcome by the highest hint level a milestone run received: counts of runs (milestone_summary)."),
    (
        "stuck",
        "Stuck points by milestone and detector: same error again and again, one action with one "
        "observation repeated, one failing action repeated, two actions alternating (stuck_points).",
    ),
    ("tokens", "Tokens (bars) and cost (dots) per milestone, summed over its runs (milestone_summary)."),
]


def _figure(number: int, svg: str, caption: tuple[str, str]) -> str:
    name, text = caption
    return (
        f'<figure id="fig-{name}">\n{svg}\n<figcaption><b>Figure {number}.</b> {html.escape(text)}</figcaption>\n'
        "</figure>"
    )


def _token_note(runs: list[MilestoneSummaryRow]) -> str | None:
    if any(run.tokens_input or run.tokens_output for run in runs):
        return None
    if runs and all(run.synthetic for run in runs):
        return "no tokens: synthetic oracle run"
    return "no tokens recorded"


def _labels(runs: list[MilestoneSummaryRow]) -> dict[RunKey, str]:
    multi = len({run.repo for run in runs}) > 1
    return {run.key: (f"{run.repo} " if multi else "") + f"{run.run_id} {run.milestone_id}" for run in runs}


def _milestone(row: MilestoneSummaryRow | StuckPointRow, multi: bool) -> str:
    return f"{row.repo} {row.milestone_id}" if multi else row.milestone_id


# ---- HTML --------------------------------------------------------------------------------------
def _escape(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    """Cells are HTML already (escape values with `_escape`)."""
    head = "".join(f"<th>{_escape(header)}</th>" for header in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def _not_yet(text: str) -> str:
    return f'<p class="not-yet">Not yet: {_escape(text)}</p>'


def _section(section_id: str, title: str, content: str) -> str:
    return f'<section id="{section_id}">\n<h2>{_escape(title)}</h2>\n{content}\n</section>'


def _status(status: str) -> str:
    return f'<span class="status s-{_escape(status.lower())}">{_escape(status)}</span>'


def _header(store: Store, runs: list[MilestoneSummaryRow]) -> str:
    repos = sorted({run.repo for run in runs})
    synthetic = sum(bool(run.synthetic) for run in runs)
    facts = [
        f"{len(runs)} milestone runs",
        f"{len({(run.repo, run.run_id) for run in runs})} chain runs",
        f"{len(repos)} repositories",
    ] + ([f"{synthetic} synthetic (oracle)"] if synthetic else [])
    nav = " · ".join(f'<a href="#{section}">{title}</a>' for section, title in NAV)
    return (
        f"<header><h1>HarnessForge report</h1>\n<p>{_escape(', '.join(facts))} · store "
        f"<code>{_escape(store.root)}</code></p>\n<nav>{nav}</nav></header>"
    )


NAV = [
    ("runs", "Milestone runs"),
    ("plots", "Plots"),
    ("scaffolds", "Scaffolds"),
    ("plan", "Plan"),
    ("memorisation", "Memorisation probe"),
    ("reviews", "Reviewer verdicts"),
    ("exports", "Exports"),
    ("poc", "Proof of concept"),
]


def viewer_path(repo: str, run_id: str, milestone_id: str) -> str:
    """Where the trajectory viewer page of a milestone run is, relative to the report."""
    return "/".join(["runs", quote(repo), quote(run_id), quote(milestone_id) + ".html"])


def _runs_table(runs: list[MilestoneSummaryRow], here: Path) -> str:
    if not runs:
        return _not_yet("no milestone runs in the analytics; run `harnessforge run`, then `harnessforge distill`")
    rows, missing = [], 0
    for run in runs:
        link = viewer_path(run.repo, run.run_id, run.milestone_id)
        page = f'<a href="{_escape(link)}">trajectory</a>'
        if not (here / link).exists():
            missing += 1
            page += ' <span class="missing">(page missing)</span>'
        rows.append(
            [
                _escape(run.repo),
                _escape(run.run_id),
                _escape(run.milestone_id),
                _status(run.status),
                _escape(run.turns),
                _escape(run.hints),
                _escape(f"L{run.max_hint_level}" if run.max_hint_level else "—"),
                _escape(run.edits),
                _escape(run.test_runs),
                _escape(run.stuck_points),
                _escape(f"{run.tokens_input:,} / {run.tokens_output:,}"),
                _escape(f"${run.cost_usd or 0:.4f}"),
                _escape("yes" if run.synthetic else ""),
                page,
            ]
        )
    note = ""
    if missing:
        note = (
            f'<p class="missing">{missing} of {len(runs)} trajectory pages are missing next to this report: write '
            "them with the trajectory viewer (<code>write_viewers</code>).</p>"
        )
    headers = [
        "repo",
        "run",
        "milestone",
        "status",
        "turns",
        "hints",
        "max hint",
        "edits",
        "test runs",
        "stuck points",
        "tokens in / out",
        "cost",
        "synthetic",
        "viewer",
    ]
    return note + _table(headers, rows, "runs")


def memorisation_rates(con: duckdb.DuckDBPyConnection) -> list[MemorisationRateRow]:
    """Per repo and model, how often probe-mode runs located the ground truth (none before any probe run)."""
    if not has_tables(con, MemorisationRateRow.table):
        return []
    return read_rows(con, MemorisationRateRow, order_by=("repo", "model"))


def _scaffolds_table(runs: list[MilestoneSummaryRow]) -> str:
    rows = scaffold_comparison(runs)
    if not rows:
        return _not_yet(
            "No milestone has been run in two scaffolds yet: run the same milestones with `--agent` "
            "claude-code-native, mini-swe-agent, openharness or a plain API backend to compare them."
        )
    body = [
        [
            row.repo,
            row.milestone_id,
            row.scaffold,
            row.models,
            str(row.runs),
            f"{row.passed}/{row.runs}",
            f"{row.turns:.1f}",
            f"{row.hints:.1f}",
            f"{row.tokens:,.0f}",
        ]
        for row in rows
    ]
    headers = ["repo", "milestone", "scaffold", "model", "runs", "passed", "turns", "hints", "tokens per run"]
    return _table(headers, body, "scaffolds")


def _memorisation_table(rates: list[MemorisationRateRow]) -> str:
    if not rates:
        return _not_yet("No probe runs yet: `run --mode probe` gives the Dev only each feature's description.")
    rows = [
        [
            rate.repo,
            rate.model or "",
            str(rate.probe_runs),
            str(rate.located_runs),
            f"{rate.rate:.0%}",
            "warning: " + rate.warning_text() if rate.warning else "",
        ]
        for rate in rates
    ]
    headers = ["repo", "model", "probe runs", "located the ground truth", "rate", ""]
    return _table(headers, rows, "memorisation")


def _plan_table(store: Store) -> str:
    keys = store.repo_keys()
    if not keys:
        return _not_yet("no repositories in the store; run `harnessforge plan`")
    parts = []
    for key in keys:
        try:
            plan = store.load_plan(key)
        except ArtifactError as e:
            parts.append(f"<h3>{_escape(key)}</h3>" + _not_yet(str(e)))
            continue
        rows = []
        for milestone in plan.milestones:
            fail_to_pass = "not validated"
            if store.validation_file(key, milestone.id).exists():
                fail_to_pass = _escape(len(store.load_validation(key, milestone.id).fail_to_pass))
            cells = (milestone.id, milestone.title, milestone.release or "—", milestone.status or "not validated")
            rows.append([_escape(cell) for cell in cells] + [fail_to_pass])
        title = f"<h3>{_escape(key)} <small>{_escape(plan.from_ref)} → {_escape(plan.to_ref)}</small></h3>"
        parts.append(title + _table(["id", "title", "release", "status", "FAIL_TO_PASS"], rows, "plan"))
    return "\n".join(parts)


def _reviews_table(store: Store) -> str:
    if not store.distilled_file(REVIEWS.stem).exists():
        return _not_yet("no reviews; run `harnessforge distill`")
    reviews = read_distilled(store, REVIEWS)
    if not reviews:
        return _not_yet("the Reviewer graded no milestone runs")
    rows = [
        [
            _escape(review.repo),
            _escape(review.run_id),
            _escape(review.milestone_id),
            _status(review.status),
            _escape(review.difficulty),
            _escape(f"L{review.max_hint_level}" if review.max_hint_level else "—"),
            f'<span class="v-{_escape(review.rl_value)}">{_escape(review.rl_value)}</span>',
            _escape(", ".join(review.discard_reasons)),
            _escape(review.reviewer),
            _escape(review.why),
        ]
        for review in reviews
    ]
    headers = [
        "repo",
        "run",
        "milestone",
        "status",
        "difficulty",
        "max hint",
        "RL value",
        "discarded for",
        "reviewer",
        "why",
    ]
    return _table(headers, rows, "reviews")


# ---- exports -----------------------------------------------------------------------------------
def _exports_table(datasets: Path, distilled_manifest: Path) -> str:
    if not datasets.is_dir() or not any(datasets.iterdir()):
        return _not_yet(f"nothing exported to {datasets}; run `harnessforge export`")
    counts = export_counts(datasets)
    if not counts:
        return _not_yet(f"no exported rows in {datasets}")
    rows = []
    for what, count, stated in counts:
        check = (
            "" if stated is None else ("✓" if stated == count else f'<span class="missing">card says {stated}</span>')
        )
        rows.append(
            [f"<code>{_escape(what)}</code>", _escape(count), _escape("—" if stated is None else stated), check]
        )
    note = "" if (datasets / "README.md").exists() else _not_yet("no dataset card (README.md) in the export")
    manifest = _manifest(distilled_manifest)
    return note + manifest + _table(["file", "rows", "dataset card", ""], rows, "exports")


def _manifest(path: Path) -> str:
    if not path.exists():
        return ""
    data = json.loads(path.read_text())
    rules_hash, created_at = _escape(data.get("rules_hash")), _escape(data.get("created_at"))
    return f"<p>Distilled with rules <code>{rules_hash}</code> at {created_at}.</p>"


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


def _poc(store: Store, rules: Rules) -> str:
    """Seed 001's criteria, pass or fail, and the yield funnel per repository."""
    checks_file = store.format_checks_file()
    checks = json.loads(checks_file.read_text()) if checks_file.exists() else None
    mark = {True: "PASS", False: "FAIL", None: "not measured yet"}
    rows = [
        [_escape(c.name), _escape(c.target), _escape(c.measured), _escape(mark[c.passed])]
        for c in criteria(store, rules, checks)
    ]
    table = _table(["criterion", "target", "measured", "result"], rows, "poc")
    caption = ("funnel", "Yield: milestones per repository at each stage, from planned to verified tasks.")
    return table + "\n" + _figure(len(CAPTIONS) + 1, plots.yield_funnel(funnel(store)), caption)
