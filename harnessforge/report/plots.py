"""The report's plots: matplotlib figures rendered to inline SVG, text kept as text.

Each function takes rows already read from the analytics models and returns one `<svg>` element
as a string, ready to paste into HTML: no XML prolog, no metadata, no dates, no namespace URLs,
and ids prefixed per plot so several plots can share one page. Figures are built with the
object-oriented API (no pyplot, no global backend), so importing this module changes nothing.
"""

from __future__ import annotations

import io
import re
from collections import Counter, defaultdict
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

RC = {
    "svg.fonttype": "none",  # text stays <text>: selectable, searchable, small
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
}
EDIT, TEST_PASS, TEST_FAIL, HINT, STUCK = "#4c78a8", "#54a24b", "#e45756", "#b279a2", "#f58518"
STATUS_COLOURS = {"PASS": "#54a24b", "FAIL": "#e45756", "STUCK": "#f58518"}
DETECTORS = ("same_error", "repeat_action_observation", "repeat_action_error", "alternating")

Row = dict[str, Any]
RunKey = tuple[str, str, str]  # (repo, run_id, milestone_id)


def to_svg(fig: Figure, name: str) -> str:
    """`fig` as a deterministic inline `<svg>`: ids salted and prefixed with `name`."""
    buf = io.StringIO()
    with matplotlib.rc_context({**RC, "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{name}-\1"', svg)
    svg = re.sub(r'(href="#|url\(#)([^")]+)', rf"\g<1>{name}-\2", svg)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{name}" ', 1)


def _figure(width: float, height: float) -> Figure:
    with matplotlib.rc_context(RC):
        return Figure(figsize=(width, height), layout="constrained")


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=11, color="#666666",
            bbox={"boxstyle": "round", "facecolor": "#f6f6f6", "edgecolor": "#cccccc"})  # fmt: skip


def empty(name: str, text: str) -> str:
    """A placeholder plot saying why there is nothing to draw."""
    fig = _figure(8, 1.6)
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, fill=False, ec="#dddddd"))
        _note(ax, text)
    return to_svg(fig, name)


def timeline(runs: list[Row], labels: dict[RunKey, str], edits: list[Row], tests: list[Row], hints: list[Row],
             stuck: list[Row]) -> str:  # fmt: skip
    """One row per milestone run over its turns: edits, test runs (green or red), hints (with their
    level) and where a stuck signal fired, ending in the run's status."""
    keys = [(r["repo"], r["run_id"], r["milestone_id"]) for r in runs]
    y = {k: len(keys) - 1 - i for i, k in enumerate(keys)}  # first run on top
    fig = _figure(10, 1.2 + 0.42 * len(keys))
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        for r, k in zip(runs, keys):
            ax.hlines(y[k], 0, r["turns"] or 0, color="#cccccc", lw=1, zorder=1)
            ax.text((r["turns"] or 0) + 0.8, y[k], r["status"], va="center", fontsize=8,
                    color=STATUS_COLOURS.get(r["status"], "#444444"), fontweight="bold")  # fmt: skip

        def points(rows: list[Row], turn: str = "turn_id") -> tuple[list[int], list[float]]:
            rows = [e for e in rows if _key(e) in y]
            return [e[turn] for e in rows], [y[_key(e)] for e in rows]

        xs, ys = points(edits)
        ax.scatter(xs, [v - 0.18 for v in ys], marker="s", s=14, color=EDIT, label="edit", zorder=3)
        for green, colour, label in (
            (True, TEST_PASS, "test run, all passing"),
            (False, TEST_FAIL, "test run, failing"),
        ):
            xs, ys = points([t for t in tests if bool(t["green"]) == green])
            ax.scatter(xs, ys, marker="o", s=18, color=colour, label=label, zorder=3)
        xs, ys = points(stuck, "signal_turn")
        ax.scatter(xs, [v - 0.18 for v in ys], marker="x", s=30, color=STUCK, label="stuck signal", zorder=4)
        xs, ys = points(hints, "hint_turn")
        ax.scatter(xs, [v + 0.2 for v in ys], marker="D", s=30, color=HINT, label="hint (level)", zorder=4)
        for h, x, v in zip([h for h in hints if _key(h) in y], xs, ys):
            ax.text(x, v + 0.32, f"L{h['level']}", ha="center", va="bottom", fontsize=7, color=HINT, fontweight="bold")
        ax.set_yticks(list(y.values()), [labels[k] for k in y])
        ax.set_ylim(-0.7, len(keys) - 0.2)
        ax.set_xlim(left=-1, right=max([r["turns"] or 0 for r in runs] + [1]) * 1.08 + 4)
        ax.set_xlabel("turn")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=5, frameon=False)
    return to_svg(fig, "timeline")


def progress(runs: list[Row], labels: dict[RunKey, str], curves: list[Row]) -> str:
    """Passing tests after each test run, one line per milestone run (from `progress_curves`)."""
    by_run: dict[RunKey, list[Row]] = defaultdict(list)
    for c in curves:
        by_run[_key(c)].append(c)
    fig = _figure(10, 4)
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        colours = matplotlib.colormaps["tab20"]
        for i, k in enumerate(_key(r) for r in runs):
            points = sorted(by_run.get(k, []), key=lambda c: c["seq"])
            if not points:
                continue
            ax.step([c["turn_id"] for c in points], [c["tests_passed"] for c in points], where="post",
                    marker="o", ms=3, lw=1.4, color=colours(i % 20), label=labels[k])  # fmt: skip
        if not curves:
            _note(ax, "no test runs recorded")
        ax.set_xlabel("turn")
        ax.set_ylabel("tests passing")
        ax.yaxis.get_major_locator().set_params(integer=True)
        if curves:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False)
    return to_svg(fig, "progress")


def hints_vs_outcome(runs: list[Row]) -> str:
    """How many milestone runs ended in each status, by the highest hint level they received."""
    counts = Counter((r["max_hint_level"] or 0, r["status"]) for r in runs)
    statuses = sorted({s for _, s in counts}, key=lambda s: (list(STATUS_COLOURS).index(s) if s in STATUS_COLOURS
                                                               else len(STATUS_COLOURS), s))  # fmt: skip
    levels = list(range(0, max([lvl for lvl, _ in counts] + [4]) + 1))
    fig = _figure(8, 3.4)
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        width = 0.8 / max(len(statuses), 1)
        for i, status in enumerate(statuses):
            xs = [lvl + (i - (len(statuses) - 1) / 2) * width for lvl in levels]
            bars = ax.bar(xs, [counts[(lvl, status)] for lvl in levels], width, label=status,
                          color=STATUS_COLOURS.get(status, "#999999"))  # fmt: skip
            ax.bar_label(bars, [str(counts[(lvl, status)] or "") for lvl in levels], fontsize=7)
        ax.set_xticks(levels, ["no hint" if lvl == 0 else f"L{lvl}" for lvl in levels])
        ax.set_xlabel("highest hint level received")
        ax.set_ylabel("milestone runs")
        ax.yaxis.get_major_locator().set_params(integer=True)
        if statuses:
            ax.legend(title="outcome", frameon=False)
        else:
            _note(ax, "no milestone runs")
    return to_svg(fig, "hints")


def stuck_heatmap(milestones: list[str], stuck: list[Row]) -> str:
    """Stuck points per milestone and detector kind, drawn as vector cells (no raster image)."""
    kinds = list(DETECTORS) + sorted({s["kind"] for s in stuck} - set(DETECTORS))
    counts = Counter((s["milestone"], s["kind"]) for s in stuck)
    top = max(counts.values(), default=0)
    fig = _figure(8, 1.4 + 0.35 * len(milestones))
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        grid = [[counts[(m, k)] for k in kinds] for m in milestones]
        ax.pcolormesh(grid, cmap="Oranges", vmin=0, vmax=max(top, 1), edgecolors="white", linewidth=1.5)
        for i, row in enumerate(grid):
            for j, n in enumerate(row):
                ax.text(j + 0.5, i + 0.5, str(n), ha="center", va="center", fontsize=8,
                        color="white" if top and n > top / 2 else "#333333")  # fmt: skip
        ax.set_xticks([j + 0.5 for j in range(len(kinds))], [k.replace("_", " ") for k in kinds])
        ax.set_yticks([i + 0.5 for i in range(len(milestones))], milestones)
        ax.invert_yaxis()
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        if not stuck:
            ax.set_title("no stuck points detected", color="#666666")
    return to_svg(fig, "stuck")


def tokens_and_cost(per_milestone: list[Row], note: str | None) -> str:
    """Input and output tokens (bars) and cost (dots, right axis) per milestone, summed over runs."""
    names = [m["milestone"] for m in per_milestone]
    xs = list(range(len(names)))
    fig = _figure(8, 3.4)
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        ax.bar([x - 0.2 for x in xs], [m["tokens_input"] for m in per_milestone], 0.4, color=EDIT,
               label="input tokens")  # fmt: skip
        ax.bar([x + 0.2 for x in xs], [m["tokens_output"] for m in per_milestone], 0.4, color="#72b7b2",
               label="output tokens")  # fmt: skip
        ax.set_xticks(xs, names)
        ax.set_ylabel("tokens")
        ax.yaxis.get_major_locator().set_params(integer=True)
        cost = ax.twinx()
        cost.spines["right"].set_visible(True)
        cost.plot(xs, [m["cost_usd"] for m in per_milestone], "o", color=STUCK, label="cost (USD)")
        cost.set_ylabel("cost (USD)")
        cost.set_ylim(bottom=0, top=max([m["cost_usd"] for m in per_milestone] + [0]) * 1.15 or 1)
        ax.set_ylim(bottom=0, top=max([m["tokens_input"] for m in per_milestone] + [0]) * 1.15 or 1)
        handles = ax.get_legend_handles_labels()[0] + cost.get_legend_handles_labels()[0]
        ax.legend(
            handles,
            [h.get_label() for h in handles],
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncols=3,
            frameon=False,
        )
        if note:
            _note(ax, note)
    return to_svg(fig, "tokens")


def _key(row: Row) -> RunKey:
    return row["repo"], row["run_id"], row["milestone_id"]
