"""The trajectory viewer: crafted runs rendered to pages, checked as HTML and in headless Chromium.

Screenshots and dumped DOMs go to $HARNESSFORGE_ARTIFACTS (a directory) when it is set, else to
<repo>/test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import pytest

from harnessforge.analytics import analyze
from harnessforge.analytics.load import connect
from harnessforge.harness.recorder import Recorder, read_summary
from harnessforge.models.trajectory import MentorDecision
from harnessforge.report.viewer import page_path, render_run, write_viewers
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.browser import artifact_dir, headless
from tests.test_analytics import OWN_DIFF, explore
from tests.trajectories import GT_FILE, CraftedRun

SCRIPT = "<script>alert(1)</script>"
LONG = "\n".join(f"src/module_{i}.py: {'x' * 30}" for i in range(60))  # 60 lines: folded


def craft_viewed(store: Store) -> CraftedRun:
    """Explore, a script-bearing and a long tool output, the same failure three times (stuck), an L2 hint,
    a new direction (search + read of another file), and a pass."""
    run = explore(CraftedRun(store, "view"))
    run.say("Check the notes.").bash("cat docs/notes.html", SCRIPT)
    run.say("Everything under src.").bash("ls -R src", LONG)
    for i in range(3):
        run.say().edit(sha=f"s{i}").say().test(0, 2, "sig-a")
    hint_turn = run.turn
    run.hint(2, "same_error", "Items must be <b>sorted</b> by priority.")
    run.say("New idea.").search("priority", "src/order.py:3:def by_priority").say().read("src/order.py")
    run.say().edit("src/order.py", "o1").say().test(2, 0)
    run.finish("PASS", OWN_DIFF)
    decision = MentorDecision(
        milestone_id="m01",
        turn_id=hint_turn,
        level=2,
        rule="same_error",
        hint="Items must be <b>sorted</b> by priority.",
        snapshot={"test_runs": 3, "edit_count": 3, "best_passed": 0},
    )
    files = store.milestone_run(run.repo, run.run_id, run.mid)
    Recorder.open(files.dir).write_json(files.MENTOR_LOG, [decision.model_dump()])
    return run


@pytest.fixture(scope="module")
def viewed(tmp_path_factory):
    """The crafted run, analysed, with its viewer pages written: (store, run, pages, page of the run)."""
    store = Store(tmp_path_factory.mktemp("viewer") / "store")
    run = craft_viewed(store)
    analyze(store, load_rules())
    out = store.root.parent / "site"
    pages = write_viewers(store, out)
    return store, run, pages, page_path(out, run.repo, run.run_id, run.mid)


def events_of(page: str) -> dict[int, tuple[set[str], str]]:
    """seq -> (classes, html) of each event <li> of a page, in page order."""
    body = page[page.index('<ol id="events">') : page.index("</ol>\n<script>")]
    found = {}
    for chunk in re.split(r'(?=<li id="e\d+")', body)[1:]:
        match = re.match(r'<li id="e(\d+)" class="([^"]*)"', chunk)
        assert match, chunk[:200]
        found[int(match[1])] = (set(match[2].split()), chunk)
    return found


def text_of(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def script_of(page: str) -> str:
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1, f"{len(scripts)} script elements"
    return scripts[0]


def test_page_shows_every_event_hint_stuck_folds_and_escapes(viewed):
    store, run, pages, path = viewed
    assert pages == [path] and path == store.root.parent / "site/runs/acme__app/view/m01.html"
    page = path.read_text()
    events_by_seq = events_of(page)
    assert list(events_by_seq) == [event.seq for event in run.events] == list(range(len(run.events)))

    # the hint: highlighted, with its level and the rule that fired (event and mentor_log.json)
    (hint,) = [event for event in run.events if event.action.type == "hint"]
    classes, chunk = events_by_seq[hint.seq]
    assert {"hint", "nav-mark"} <= classes
    assert "hint L2 · rule same_error" in chunk and f"turn {hint.turn_id}, level 2, rule same_error" in chunk
    assert [seq for seq, (classes, _) in events_by_seq.items() if "hint" in classes] == [hint.seq]

    # the stuck stretch, as the analytics found it: every event inside is marked with the detector
    with connect(store) as con:
        stretches = con.execute("SELECT kind, start_seq, end_seq FROM stuck_points WHERE run_id = 'view'").fetchall()
        changed = con.execute("SELECT direction_change FROM hint_responses WHERE run_id = 'view'").fetchall()
    assert [kind for kind, _, _ in stretches] == ["same_error"] and changed == [(True,)]
    (_, start, end), inside = stretches[0], set(range(stretches[0][1], stretches[0][2] + 1))
    assert {seq for seq, (classes, _) in events_by_seq.items() if "stuck" in classes} == inside
    assert all(
        'data-stuck="same_error"' in events_by_seq[seq][1] and "stuck · same_error" in events_by_seq[seq][1]
        for seq in inside
    )
    assert "stuck-start" in events_by_seq[start][0] and "stuck-end" in events_by_seq[end][0]
    # the direction change after the hint: the search for the new pattern
    search = next(event for event in run.events if event.seq > hint.seq and event.action.type == "search")
    assert "direction-change" in events_by_seq[search.seq][0]

    # long observations folded, short ones not
    long_event = next(event for event in run.events if event.observation.startswith(LONG))
    lines = long_event.observation.count("\n") + 1
    assert (
        '<details class="fold blk obs">' in events_by_seq[long_event.seq][1]
        and f"{lines} lines" in events_by_seq[long_event.seq][1]
    )
    read_event = next(event for event in run.events if event.action.type == "read_file")
    assert "<details" not in events_by_seq[read_event.seq][1]

    # escaped: the tool output's script and the hint's markup are text, never tags
    assert SCRIPT not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>sorted</b>" not in page and "&lt;b&gt;sorted&lt;/b&gt;" in page
    script_of(page)  # the page's own script is its only one

    # the header: the summary
    facts = [
        "<dt>status</dt><dd>PASS</dd>",
        f"<dt>turns</dt><dd>{run.turn}</dd>",
        "<dt>hints</dt><dd>L2</dd>",
        "<dt>synthetic</dt><dd>no</dd>",
        "<dt>wall time</dt>",
        "<dt>cost</dt>",
        "<dt>tokens</dt>",
    ]
    assert [f for f in facts if f not in page] == []
    assert "<kbd>j</kbd>" in page and "<kbd>n</kbd>" in page
    assert "http://" not in page and "https://" not in page  # self-contained: nothing to fetch


def test_without_analytics_the_page_has_hints_but_no_marks(tmp_path):
    store = Store(tmp_path / "store")
    run = craft_viewed(store)
    (path,) = write_viewers(store, tmp_path / "site")
    assert not (store.root / "analytics").exists()  # rendering does not create the database
    page = path.read_text()
    events_by_seq = events_of(page)
    assert list(events_by_seq) == list(range(len(run.events)))
    assert sum("hint" in classes for classes, _ in events_by_seq.values()) == 1 and not any(
        "stuck" in classes for classes, _ in events_by_seq.values()
    )
    assert "no analytics database" in page
    assert render_run(store, run.repo, run.run_id, run.mid) == page


def test_the_claude_clis_own_cost_stands_next_to_ours(tmp_path):
    store = Store(tmp_path / "store")
    run = craft_viewed(store)
    files = store.milestone_run(run.repo, run.run_id, run.mid)
    assert "claude CLI" not in render_run(store, run.repo, run.run_id, run.mid)  # no CLI: nothing to show
    summary = read_summary(files.dir).model_copy(update={"cost_usd": 0.25, "cli_cost_usd": 0.5, "cost_mismatch": True})
    Recorder.open(files.dir).write_summary(summary)
    page = render_run(store, run.repo, run.run_id, run.mid)
    assert "$0.2500 (the claude CLI reported $0.5000, beyond the tolerance)" in page


def test_a_500_event_run_makes_a_light_page_with_one_delegated_listener(viewed, tmp_path):
    store = Store(tmp_path / "store")
    run = CraftedRun(store, "long")
    i = 0
    while len(run.events) < 499:  # + milestone_end = 500
        run.say(f"Step {i}: keep going.")
        kind = i % 5
        if kind == 0:
            run.read(GT_FILE, "\n".join(f"line {number}" for number in range(40)))  # folded
        elif kind == 1:
            run.search(f"pattern_{i}")
        elif kind == 2:
            run.edit(sha=f"x{i}")
        elif kind == 3:
            run.test(i % 7, 3, f"sig-{i % 4}")
        else:
            run.bash(f"echo {i}", f"<i>{i}</i>")
        i += 1
    run.finish("FAIL", OWN_DIFF)
    analyze(store, load_rules())
    (path,) = write_viewers(store, tmp_path / "site")
    page = path.read_text()
    assert list(events_of(page)) == list(range(500))
    assert len(page.encode()) < 2_000_000, f"{len(page.encode()):,} bytes"
    script = script_of(page)
    assert script == script_of(viewed[3].read_text())  # the script does not grow with the trajectory
    assert script.count("addEventListener") == 1 and "document.addEventListener(type, handle)" in script
    assert not re.search(r"<[a-z]+\b[^>]*\son[a-z]+\s*=", page, re.I)  # no inline handlers either


# ---- headless Chromium ---------------------------------------------------------------------------------------


def _browse(url: str, profile: Path, screenshot: Path | None = None) -> str:
    """The DOM after the page's script ran (and a screenshot when asked)."""
    proc = headless(url, profile, (1400, 2000), screenshot)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert 'data-viewer="ready"' in proc.stdout, f"the page's script did not finish:\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_the_page_in_headless_chromium(viewed, tmp_path):
    store, run, _, path = viewed
    artifacts = artifact_dir()
    png = artifacts / "viewer.png"
    dom = _browse(path.as_uri(), tmp_path / "profile", png)
    (artifacts / "viewer.dom.html").write_text(dom)
    events_by_seq = events_of(dom)
    assert list(events_by_seq) == list(range(len(run.events)))
    assert sum("hint" in classes for classes, _ in events_by_seq.values()) == 1
    assert sum("stuck" in classes for classes, _ in events_by_seq.values()) >= 6  # three edit/test cycles
    assert not any("hidden" in classes for classes, _ in events_by_seq.values())
    assert png.exists() and png.stat().st_size > 10_000, f"{png}: {png.stat().st_size if png.exists() else 0} bytes"

    # a link with #q=... prefills the search: events without the text are hidden, the others marked
    dom = _browse(path.as_uri() + "#q=priority", tmp_path / "profile", artifacts / "viewer_search.png")
    (artifacts / "viewer_search.dom.html").write_text(dom)
    server = events_of(path.read_text())
    expected = {seq for seq, (_, chunk) in server.items() if "priority" in text_of(chunk).lower()}
    events_by_seq = events_of(dom)
    shown = {seq for seq, (classes, _) in events_by_seq.items() if "hidden" not in classes}
    assert 0 < len(shown) < len(events_by_seq) and shown == expected
    assert all("match" in events_by_seq[seq][0] for seq in shown)
    assert f"{len(shown)} of {len(events_by_seq)} events" in dom


def test_view_command_writes_the_page_of_a_run_directory_and_refuses_anything_else(viewed, run_cli, tmp_path):
    store = viewed[0]
    run_dir = next((store.root / "trajectories").glob("*/*/m01"))
    proc = run_cli("view", str(run_dir), "--out", str(tmp_path / "page.html"), check=True)
    assert proc.stdout.strip().endswith("page.html") and 'class="ev' in (tmp_path / "page.html").read_text()
    proc = run_cli("view", str(tmp_path))
    assert proc.returncode == 1 and "not a finished milestone run" in proc.stderr


def test_one_runs_damaged_files_do_not_stop_the_other_pages(tmp_path):
    """Issue 32: one damaged log stopped the report for the whole store."""
    store = Store(tmp_path / "store")
    good = craft_viewed(store)
    bad = CraftedRun(store, "torn").say("Looking.").finish("FAIL", OWN_DIFF)
    summary = store.milestone_run(bad.repo, bad.run_id, bad.mid).dir / "summary.json"
    summary.write_text('{"status": ')
    said: list[str] = []
    pages = {path.parent.name: path for path in write_viewers(store, tmp_path / "site", log=said.append)}
    assert set(pages) == {good.run_id, bad.run_id}
    assert render_run(store, good.repo, good.run_id, good.mid) == pages[good.run_id].read_text()
    assert "summary.json" in pages[bad.run_id].read_text() and len(said) == 1 and "summary.json" in said[0]
