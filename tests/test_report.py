"""The run report: one self-contained HTML file over crafted, distilled and exported runs, checked as
markup and as rendered by headless Chromium.

The screenshot goes to $HARNESSFORGE_ARTIFACTS (a directory) when it is set, else to
<repo>/test-artifacts/ (git-ignored)."""

import shutil
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harnessforge.analytics import analyze
from harnessforge.analytics.load import connect
from harnessforge.distill import distill
from harnessforge.errors import ArtifactError
from harnessforge.export import export
from harnessforge.models.env import Validation
from harnessforge.report.report import build_report
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.browser import artifact_dir, headless
from tests.test_analytics import craft
from tests.test_distill import craft_more
from tests.trajectories import CraftedRun

FIGURES = ("fig-timeline", "fig-progress", "fig-hints", "fig-stuck", "fig-tokens", "fig-funnel")
SHAPES = {"path", "rect", "circle", "use", "polyline", "polygon", "line"}


class Page(HTMLParser):
    """What the tests look at: attribute values, shapes inside each figure, table cells, text."""

    def __init__(self, text: str):
        super().__init__()
        self.attrs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.figures: dict[str, Counter] = {}
        self.tables: dict[str, list[list[str]]] = defaultdict(list)
        self.hrefs: list[str] = []
        self.texts: list[str] = []
        self._figure = self._table = self._cell = None
        self._in_body = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.attrs += [(tag, name, value or "") for name, value in attrs]
        if tag == "figure":
            self._figure = attributes.get("id")
            self.figures[self._figure] = Counter()
        elif self._figure:
            self.figures[self._figure][tag] += 1
        if tag == "table":
            self._table = attributes.get("class")
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[self._table].append([])
        elif tag == "td" and self._in_body:
            self._cell = []
        if tag == "a" and "href" in attributes:
            self.hrefs.append(attributes["href"])

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._cell is not None:
            self._cell.append(data)


def jsonl_rows(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def milestone_runs(store: Store) -> list[tuple[str, str, str]]:
    return sorted(
        tuple(path.parent.relative_to(store.root / "trajectories").parts)
        for path in (store.root / "trajectories").glob("*/*/*/summary.json")
    )


@pytest.fixture(scope="module")
def reported(tmp_path_factory, planned):
    root = tmp_path_factory.mktemp("report")
    store = Store(root / "store")
    craft(store)
    craft_more(store)
    distill(store, load_rules(), log=lambda *_: None)
    exported = export(store, ["all"], store.root / "datasets", allow_synthetic=True)
    # a planned repository, one of its milestones validated
    planned_store, _ = planned
    key = planned_store.repo_keys()[0]
    shutil.copytree(planned_store.repo_dir(key), store.repo_dir(key))
    store.save_validation(key, Validation(milestone_id="m01", status="valid", repeats=3, fail_to_pass=["t::a", "t::b"]))
    # one trajectory viewer page already written next to the report, the others missing
    site = root / "site"
    first = milestone_runs(store)[0]
    (site / "runs" / first[0] / first[1]).mkdir(parents=True)
    (site / "runs" / first[0] / first[1] / f"{first[2]}.html").write_text("<p>viewer</p>")
    report = build_report(store, site / "report.html")
    return store, exported, report


def test_the_report_is_one_self_contained_file_with_every_part(reported):
    store, exported, report = reported
    site = report.parent
    assert sorted(path.relative_to(site).as_posix() for path in site.rglob("*") if path.is_file()) == sorted(
        ["report.html", next(path.relative_to(site).as_posix() for path in (site / "runs").rglob("*.html"))]
    )
    text = report.read_text()
    page = Page(text)
    # nothing fetched: no URL in any attribute, no external stylesheet or script, no raster images
    assert not [attribute for attribute in page.attrs if "http://" in attribute[2] or "https://" in attribute[2]], (
        page.attrs
    )
    assert not [
        attribute
        for attribute in page.attrs
        if attribute[1] in ("src", "srcset") or attribute[0] in ("link", "script", "image", "img")
    ]
    assert "@import" not in text and "url(http" not in text and "data:image" not in text
    # five figures, each an svg with shapes in it and a caption
    assert list(page.figures) == list(FIGURES)
    for name, tags in page.figures.items():
        assert tags["svg"] == 1 and sum(tags[shape] for shape in SHAPES) > 5 and tags["figcaption"] == 1, (name, tags)
    # a link to every milestone run's viewer page; the missing ones are noted
    runs = milestone_runs(store)
    for repo, run_id, mid in runs:
        assert f"runs/{repo}/{run_id}/{mid}.html" in page.hrefs
    assert len(page.tables["runs"]) == len(runs)
    assert f"{len(runs) - 1} of {len(runs)} trajectory pages are missing" in text
    assert sum("(page missing)" in row[-1] for row in page.tables["runs"]) == len(runs) - 1
    # hints labelled with their level on the timeline (the `rescued` run got an L2 hint)
    assert "L2" in text[text.index('id="fig-timeline"') : text.index('id="fig-progress"')]
    # one verdict row per review
    assert len(page.tables["reviews"]) == jsonl_rows(store.root / "distilled" / "reviews.jsonl") > 0
    # export counts: what the files hold, and what the dataset card (the export's own count) says
    datasets = store.root / "datasets"
    counts = {row[0]: (int(row[1]), row[2]) for row in page.tables["exports"]}
    jsonl = sorted(datasets.rglob("*.jsonl"))
    assert jsonl and {f.relative_to(datasets).as_posix() for f in jsonl} <= set(counts)
    for f in jsonl:
        rel = f.relative_to(datasets).as_posix()
        key = rel.removesuffix(".jsonl") if "/" in rel and not rel.startswith("swebench/") else "instances"
        assert counts[rel] == (jsonl_rows(f), str(exported.rows[key])), rel
    assert counts["atif/ (ATIF trajectories)"] == (
        len(list((datasets / "atif").rglob("*.json"))),
        str(exported.rows["atif"]),
    )
    # seed 001's criteria, each with its result: this store has reviews and an export checked by its tools
    poc = {row[0]: row[-1] for row in page.tables["poc"]}
    assert list(poc) == [
        "runs pass the Reviewer",
        "a hard verified task",
        "every task's environment rebuilds and reproduces",
        "every format loads in its tool",
    ]
    assert poc["runs pass the Reviewer"] in ("PASS", "FAIL") and poc["every format loads in its tool"] == "PASS"
    assert poc["a hard verified task"] == "not measured yet"  # no verify-tasks on this store
    # the plan, with FAIL_TO_PASS where the milestone was validated
    plan = {row[0]: row for row in page.tables["plan"]}
    assert plan["m01"][-1] == "2" and plan["m02"][-1] == "not validated" and plan["m01"][1]


def test_no_analytics_is_a_clear_error_and_missing_parts_are_not_yet(tmp_path):
    empty = Store(tmp_path / "empty")
    with pytest.raises(ArtifactError, match="run `harnessforge distill` first"):
        build_report(empty, tmp_path / "r.html")
    assert not (empty.root / "analytics").exists() and not (tmp_path / "r.html").exists()
    connect(empty).close()  # a database, but no models in it
    with pytest.raises(ArtifactError, match="not built; run `harnessforge distill` first"):
        build_report(empty, tmp_path / "r.html")

    # analysed, never distilled nor exported nor planned: an oracle run that used no tokens
    store = Store(tmp_path / "store")
    run = CraftedRun(store, "oracle", synthetic=True).say("read", tokens=0).read("src/app.py")
    run.say("fix", tokens=0).edit().say("test", tokens=0).test(1, 0).finish("PASS")
    analyze(store, load_rules())
    page = Page(build_report(store, tmp_path / "site" / "report.html").read_text())
    text = " ".join(" ".join(page.texts).split())
    for note in ("Not yet: no repositories", "Not yet: no reviews", "Not yet: nothing exported"):
        assert note in text
    assert "no tokens: synthetic oracle run" in text
    assert list(page.figures) == list(FIGURES)
    assert all(sum(tags[shape] for shape in SHAPES) > 0 for tags in page.figures.values())


def test_the_report_renders_in_headless_chromium(reported, tmp_path):
    _, _, report = reported
    out = artifact_dir()
    png = out / "report.png"
    proc = headless(f"file://{report}", tmp_path / "chromium", (1400, 3000), png)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    (out / "report_dom.html").write_text(proc.stdout)
    dom = Page(proc.stdout)
    assert list(dom.figures) == list(FIGURES), f"DOM in {out / 'report_dom.html'}"
    for name, tags in dom.figures.items():
        assert tags["svg"] == 1 and sum(tags[shape] for shape in SHAPES) > 5, (name, tags)
    assert png.exists(), f"no screenshot; chromium stderr:\n{proc.stderr[-3000:]}"
    assert png.stat().st_size > 20_000, f"{png} is only {png.stat().st_size} bytes"


def test_report_command_without_analytics_says_what_to_run_first(run_cli, tmp_path):
    proc = run_cli("report", store=tmp_path / "empty")
    assert proc.returncode == 1 and "no analytics database; run `harnessforge distill` first" in proc.stderr
    assert not (tmp_path / "empty" / "analytics").exists()
