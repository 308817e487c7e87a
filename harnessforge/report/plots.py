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
from dataclasses import dataclass

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..analytics import rows as analytics

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


@dataclass
class MilestoneCost:
    """Tokens and cost of one milestone, summed over its runs."""

    milestone: str
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0


def to_svg(figure: Figure, name: str) -> str:
    """`figure` as a deterministic inline `<svg>`: ids salted and prefixed with `name`."""
    buffer = io.StringIO()
    with matplotlib.rc_context({**RC, "svg.hashsalt": name}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    svg = buffer.getvalue()
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


def _note(axes, text: str) -> None:
    box = {"boxstyle": "round", "facecolor": "#f6f6f6", "edgecolor": "#cccccc"}
    axes.text(
        0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center", fontsize=11, color="#666666", bbox=box
    )


def empty(name: str, text: str) -> str:
    """A placeholder plot saying why there is nothing to draw."""
    figure = _figure(8, 1.6)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        axes.set_axis_off()
        axes.add_patch(Rectangle((0, 0), 1, 1, transform=axes.transAxes, fill=False, ec="#dddddd"))
        _note(axes, text)
    return to_svg(figure, name)


def timeline(
    runs: list[analytics.MilestoneSummaryRow],
    labels: dict[analytics.RunKey, str],
    edits: list[analytics.EditRow],
    tests: list[analytics.TestRunRow],
    hints: list[analytics.HintResponseRow],
    stuck: list[analytics.StuckPointRow],
) -> str:
    """One row per milestone run over its turns: edits, test runs (green or red), hints (with their
    level) and where a stuck signal fired, ending in the run's status."""
    keys = [run.key for run in runs]
    height = {key: len(keys) - 1 - index for index, key in enumerate(keys)}  # first run on top
    figure = _figure(10, 1.2 + 0.42 * len(keys))
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        for run, key in zip(runs, keys):
            axes.hlines(height[key], 0, run.turns or 0, color="#cccccc", lw=1, zorder=1)
            colour = STATUS_COLOURS.get(run.status, "#444444")
            axes.text(
                (run.turns or 0) + 0.8,
                height[key],
                run.status,
                va="center",
                fontsize=8,
                color=colour,
                fontweight="bold",
            )

        def points(marks: list[analytics.AnalyticsRow], turn: str = "turn_id") -> tuple[list[int], list[float]]:
            shown = [mark for mark in marks if mark.key in height]
            return [getattr(mark, turn) for mark in shown], [height[mark.key] for mark in shown]

        xs, ys = points(edits)
        axes.scatter(xs, [y - 0.18 for y in ys], marker="s", s=14, color=EDIT, label="edit", zorder=3)
        for green, colour, label in (
            (True, TEST_PASS, "test run, all passing"),
            (False, TEST_FAIL, "test run, failing"),
        ):
            xs, ys = points([test for test in tests if bool(test.green) == green])
            axes.scatter(xs, ys, marker="o", s=18, color=colour, label=label, zorder=3)
        xs, ys = points(stuck, "signal_turn")
        axes.scatter(xs, [y - 0.18 for y in ys], marker="x", s=30, color=STUCK, label="stuck signal", zorder=4)
        xs, ys = points(hints, "hint_turn")
        axes.scatter(xs, [y + 0.2 for y in ys], marker="D", s=30, color=HINT, label="hint (level)", zorder=4)
        for hint, x, y in zip([hint for hint in hints if hint.key in height], xs, ys):
            axes.text(
                x, y + 0.32, f"L{hint.level}", ha="center", va="bottom", fontsize=7, color=HINT, fontweight="bold"
            )
        axes.set_yticks(list(height.values()), [labels[key] for key in height])
        axes.set_ylim(-0.7, len(keys) - 0.2)
        axes.set_xlim(left=-1, right=max([run.turns or 0 for run in runs] + [1]) * 1.08 + 4)
        axes.set_xlabel("turn")
        axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=5, frameon=False)
    return to_svg(figure, "timeline")


def progress(
    runs: list[analytics.MilestoneSummaryRow],
    labels: dict[analytics.RunKey, str],
    curves: list[analytics.ProgressCurveRow],
) -> str:
    """Passing tests after each test run, one line per milestone run (from `progress_curves`)."""
    by_run: dict[analytics.RunKey, list[analytics.ProgressCurveRow]] = defaultdict(list)
    for point in curves:
        by_run[point.key].append(point)
    figure = _figure(10, 4)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        colours = matplotlib.colormaps["tab20"]
        for index, key in enumerate(run.key for run in runs):
            points = sorted(by_run.get(key, []), key=lambda point: point.seq)
            if not points:
                continue
            axes.step(
                [point.turn_id for point in points],
                [point.tests_passed for point in points],
                where="post",
                marker="o",
                ms=3,
                lw=1.4,
                color=colours(index % 20),
                label=labels[key],
            )
        if not curves:
            _note(axes, "no test runs recorded")
        axes.set_xlabel("turn")
        axes.set_ylabel("tests passing")
        axes.yaxis.get_major_locator().set_params(integer=True)
        if curves:
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False)
    return to_svg(figure, "progress")


def hints_vs_outcome(runs: list[analytics.MilestoneSummaryRow]) -> str:
    """How many milestone runs ended in each status, by the highest hint level they received."""
    counts = Counter((run.max_hint_level or 0, run.status) for run in runs)
    known = list(STATUS_COLOURS)
    statuses = sorted(
        {status for _, status in counts},
        key=lambda status: (known.index(status) if status in known else len(known), status),
    )
    levels = list(range(0, max([level for level, _ in counts] + [4]) + 1))
    figure = _figure(8, 3.4)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        width = 0.8 / max(len(statuses), 1)
        for index, status in enumerate(statuses):
            xs = [level + (index - (len(statuses) - 1) / 2) * width for level in levels]
            heights = [counts[(level, status)] for level in levels]
            bars = axes.bar(xs, heights, width, label=status, color=STATUS_COLOURS.get(status, "#999999"))
            axes.bar_label(bars, [str(counts[(level, status)] or "") for level in levels], fontsize=7)
        axes.set_xticks(levels, ["no hint" if level == 0 else f"L{level}" for level in levels])
        axes.set_xlabel("highest hint level received")
        axes.set_ylabel("milestone runs")
        axes.yaxis.get_major_locator().set_params(integer=True)
        if statuses:
            axes.legend(title="outcome", frameon=False)
        else:
            _note(axes, "no milestone runs")
    return to_svg(figure, "hints")


def stuck_heatmap(milestones: list[str], stuck: list[tuple[str, str]]) -> str:
    """Stuck points (milestone, detector kind) counted per milestone and kind, drawn as vector cells
    (no raster image)."""
    kinds = list(DETECTORS) + sorted({kind for _, kind in stuck} - set(DETECTORS))
    counts = Counter(stuck)
    top = max(counts.values(), default=0)
    figure = _figure(8, 1.4 + 0.35 * len(milestones))
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        grid = [[counts[(milestone, kind)] for kind in kinds] for milestone in milestones]
        axes.pcolormesh(grid, cmap="Oranges", vmin=0, vmax=max(top, 1), edgecolors="white", linewidth=1.5)
        for row, cells in enumerate(grid):
            for column, count in enumerate(cells):
                colour = "white" if top and count > top / 2 else "#333333"
                axes.text(column + 0.5, row + 0.5, str(count), ha="center", va="center", fontsize=8, color=colour)
        axes.set_xticks([column + 0.5 for column in range(len(kinds))], [kind.replace("_", " ") for kind in kinds])
        axes.set_yticks([row + 0.5 for row in range(len(milestones))], milestones)
        axes.invert_yaxis()
        axes.tick_params(length=0)
        for side in ("left", "bottom"):
            axes.spines[side].set_visible(False)
        if not stuck:
            axes.set_title("no stuck points detected", color="#666666")
    return to_svg(figure, "stuck")


def tokens_and_cost(per_milestone: list[MilestoneCost], note: str | None) -> str:
    """Input and output tokens (bars) and cost (dots, right axis) per milestone, summed over runs."""
    names = [cost.milestone for cost in per_milestone]
    xs = list(range(len(names)))
    figure = _figure(8, 3.4)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        inputs = [cost.tokens_input for cost in per_milestone]
        outputs = [cost.tokens_output for cost in per_milestone]
        dollars = [cost.cost_usd for cost in per_milestone]
        axes.bar([x - 0.2 for x in xs], inputs, 0.4, color=EDIT, label="input tokens")
        axes.bar([x + 0.2 for x in xs], outputs, 0.4, color="#72b7b2", label="output tokens")
        axes.set_xticks(xs, names)
        axes.set_ylabel("tokens")
        axes.yaxis.get_major_locator().set_params(integer=True)
        cost_axes = axes.twinx()
        cost_axes.spines["right"].set_visible(True)
        cost_axes.plot(xs, dollars, "o", color=STUCK, label="cost (USD)")
        cost_axes.set_ylabel("cost (USD)")
        cost_axes.set_ylim(bottom=0, top=max(dollars + [0]) * 1.15 or 1)
        axes.set_ylim(bottom=0, top=max(inputs + [0]) * 1.15 or 1)
        handles = axes.get_legend_handles_labels()[0] + cost_axes.get_legend_handles_labels()[0]
        axes.legend(
            handles,
            [handle.get_label() for handle in handles],
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncols=3,
            frameon=False,
        )
        if note:
            _note(axes, note)
    return to_svg(figure, "tokens")


def yield_funnel(funnel: dict[str, dict[str, int]]) -> str:
    """Milestones per repository at each stage, planned to verified: where the yield is lost."""
    figure = _figure(8, 3.4)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        if not funnel:
            _note(axes, "no planned repository")
            return to_svg(figure, "funnel")
        stages = list(next(iter(funnel.values())))
        width = 0.8 / len(funnel)
        for index, (repo, counts) in enumerate(funnel.items()):
            xs = [stage + (index - (len(funnel) - 1) / 2) * width for stage in range(len(stages))]
            bars = axes.bar(xs, [counts[name] for name in stages], width, label=repo)
            axes.bar_label(bars, [str(counts[name]) for name in stages], fontsize=7)
        axes.set_xticks(range(len(stages)), stages)
        axes.set_ylabel("milestones")
        axes.yaxis.get_major_locator().set_params(integer=True)
        axes.legend(frameon=False, fontsize=7)
    return to_svg(figure, "funnel")
