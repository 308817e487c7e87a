"""Analytics by milestone: loading and rebuilding some milestones' rows gives, row for row, the tables
a whole load and rebuild gives, on several stores and in any order; a milestone's new run changes
that milestone's rows and data versions alone; the checks the models declare find what they say."""

import importlib.util
import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from harnessforge.analytics import (
    analyze,
    analyze_milestones,
    build_milestones,
    build_repos,
    load_milestones,
    partitioned_models,
)
from harnessforge.analytics.database import connect
from harnessforge.analytics.slices import Slice, build_slices, slice_stats
from harnessforge.analytics.sqlmodels import MILESTONE, REPO, SOURCES, discover
from harnessforge.errors import ConfigError
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import OWN_DIFF, craft, explore
from tests.test_distill import craft_more
from tests.trajectories import CraftedRun

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _bench():
    """benchmarks/analytics.py's generator (its directory on the path, as benchmarks/run.py has it)."""
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("hf_analytics_benchmark", BENCHMARKS / "analytics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe(store: Store, run_id: str, mid: str, located: bool) -> None:
    """A probe-mode run of another repo (memorisation_rates counts those), locating the file or not."""
    run = CraftedRun(store, run_id, mid=mid, repo="other__lib")
    (run.say().read("src/app.py") if located else run.say().search("x")).say().edit(sha="x1").say().test(1, 0)
    run.finish("PASS", OWN_DIFF)
    metadata = store.run_metadata("other__lib", run_id)
    metadata.write_text(json.dumps({**json.loads(metadata.read_text()), "mode": "probe"}))


def crafted(root: Path) -> Store:
    store = Store(root)
    craft(store)
    craft_more(store)
    probe(store, "p1", "m01", True)
    probe(store, "p2", "m01", False)
    probe(store, "p1", "m02", True)
    return store


def generated(root: Path) -> Store:
    """Two runs x 3 milestones x 1,000 generated events (bench-1 a probe run), in `root`."""
    bench = _bench()
    bench.generate(root.parent, 3_000, runs=1)
    return bench.generate(root.parent, 3_000, runs=1, first_run=1, mode="probe")


def events_of(store: Store) -> list[int]:
    with connect(store) as con:
        return sorted(row[0] for row in con.execute("SELECT hash(t) FROM raw_events t").fetchall())


def snapshot(store: Store) -> dict[str, list[int]]:
    """Every source's and model's rows, as sorted row hashes."""
    names = [*SOURCES, *discover()]
    with connect(store) as con:
        rows = {name: con.execute(f"SELECT hash(t) FROM {name} t").fetchall() for name in names}
    return {name: sorted(row[0] for row in found) for name, found in rows.items()}


def milestones_of(store: Store) -> list[tuple[str, str]]:
    return sorted({(files.repo_key, files.milestone_id) for files in store.milestone_runs()})


def by_milestone(store: Store, pairs, rng: random.Random) -> None:
    """Load and build the milestones one (or two) at a time in a random order, then the repos."""
    pairs = list(pairs)
    rng.shuffle(pairs)
    rules = load_rules()
    while pairs:
        batch, pairs = pairs[: rng.choice((1, 2))], pairs[rng.choice((1, 2)) :]
        load_milestones(store, batch)
        build_milestones(store, rules, batch)
    build_repos(store, rules, {repo for repo, _ in milestones_of(store)})


def copy_trajectories(store: Store, root: Path) -> Store:
    other = Store(root)
    shutil.copytree(store.root / "trajectories", other.root / "trajectories", dirs_exist_ok=True)
    return other


def arrive(store: Store, kind: str) -> list[tuple[str, str]]:
    """New runs: a new run of a milestone that has runs, or the next milestone of a run."""
    if kind == "crafted":
        run = explore(CraftedRun(store, "latecomer", mid="m02"))
        run.say().edit(sha="l1").say().test(0, 1, "sig-a").say().test(0, 1, "sig-a").say().test(0, 1, "sig-a")
        run.finish("STUCK", OWN_DIFF)
        probe(store, "p2", "m02", True)
        return [("acme__app", "m02"), ("other__lib", "m02")]
    bench = _bench()
    bench.generate(store.root.parent, 1_000, runs=1, first_run=2)  # bench-2 m0001: a new run
    bench.generate(store.root.parent, 1_000, runs=1, first_milestone=3)  # bench-0 m0004: its next milestone
    return [("bench__repo", "m0001"), ("bench__repo", "m0004")]


@pytest.mark.parametrize("make", [crafted, generated], ids=["crafted", "generated"])
def test_by_milestone_equals_whole_and_a_new_run_changes_only_its_milestone(make, tmp_path):
    whole = make(tmp_path / "whole" / "store")
    parts = copy_trajectories(whole, tmp_path / "parts" / "store")
    rules = load_rules()
    analyze(whole, rules)
    by_milestone(parts, milestones_of(parts), random.Random(make.__name__))
    expected = snapshot(whole)
    assert snapshot(parts) == expected
    assert all(expected[name] for name in ("raw_events", "milestone_summary", "stuck_points", "memorisation_rates"))

    changed = arrive(whole, make.__name__)
    everything = Slice.of_milestones(milestones_of(parts) + changed)  # a new milestone too: rows 0 before
    with connect(parts) as con:
        before = slice_stats(con, {name: name for name in partitioned_models(MILESTONE)}, everything)
    copy_trajectories(whole, parts.root)  # the same bytes (crafted events carry the time they were made)
    analyze(whole, rules)
    report = analyze_milestones(parts, rules, changed)
    assert snapshot(parts) == snapshot(whole) != expected
    assert {source.split("/")[3] for source in report.load.loaded} == {milestone for _, milestone in changed}
    with connect(parts) as con:
        after = slice_stats(con, {name: name for name in partitioned_models(MILESTONE)}, everything)
    moved = {key for name in before for key in before[name] if before[name][key] != after[name][key]}
    assert moved == set(changed)  # the new runs' milestones, and no other
    # built again with nothing changed: the same data versions
    first = {model.name: model.slices for model in report.models if model.name in partitioned_models(MILESTONE)}
    assert {model.name: model.slices for model in build_milestones(parts, rules, changed).models} == first


def duplicated_event(store: Store) -> None:
    """acme__app m01: a run whose event log holds one event twice (seq 2); m02: a sound run."""
    CraftedRun(store, "twice").say().test(0, 1).say().test(1, 0).finish("PASS")
    log = store.root / "trajectories" / "acme__app" / "twice" / "m01" / "trajectory.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3] + lines[2:]))
    CraftedRun(store, "fine", mid="m02").say().test(1, 0).finish("PASS")


def test_declared_checks_find_repeated_keys_and_missing_rows(tmp_path):
    store = Store(tmp_path / "store")
    duplicated_event(store)
    pairs = [("acme__app", "m01"), ("acme__app", "m02")]
    load_milestones(store, pairs)
    built = {model.name: model for model in build_milestones(store, load_rules(), pairs).models}
    m01, m02 = (built["stg_events"].slices[pair].problems for pair in pairs)
    assert m01 == {"unique": ["repo=acme__app, run_id=twice, milestone_id=m01, seq=2: 2 rows"]}
    assert m02 == {"unique": []}
    assert built["milestone_summary"].slices[pairs[0]].problems == {"unique": [], "one_row_per_raw_milestones": []}
    # a model that drops a milestone run it should have
    models = tmp_path / "models"
    models.mkdir()
    (models / "summary.sql").write_text(
        "-- materialization: table\n-- partitioned_by: repo, milestone_id\n-- one_row_per: raw_milestones\n"
        "SELECT repo, run_id, milestone_id FROM {{ source('raw_milestones') }} WHERE run_id <> 'fine'"
    )
    with connect(store) as con:
        (summary,) = build_slices(con, {}, Slice.of_milestones(pairs), directory=models)
    assert summary.whole  # it was never built: built whole, its checks still per milestone
    assert summary.slices[pairs[0]].problems == {"one_row_per_raw_milestones": []}
    assert summary.slices[pairs[1]].problems == {
        "one_row_per_raw_milestones": ["no row for repo=acme__app, run_id=fine, milestone_id=m02"]
    }


def test_a_model_is_rebuilt_only_by_its_own_partitions(tmp_path):
    store = Store(tmp_path / "store")
    CraftedRun(store, "a").say().test(0, 1).finish("STUCK")
    analyze(store, load_rules())
    with pytest.raises(ConfigError, match="memorisation_rates.sql is partitioned by repo; it cannot be rebuilt by"):
        build_milestones(store, load_rules(), [("acme__app", "m01")], ["memorisation_rates"])
    assert partitioned_models(REPO) == ["memorisation_rates"]
    assert "stuck_points" in partitioned_models(MILESTONE) and not partitioned_models(())


def test_a_runs_later_milestones_go_to_loose_files_then_into_its_file(tmp_path):
    store = Store(tmp_path / "store")
    whole = Store(tmp_path / "whole" / "store")
    events = store.analytics_events_dir() / "acme__app"
    CraftedRun(store, "chain", mid="m01").say().test(0, 1).finish("STUCK")
    load_milestones(store, [("acme__app", "m01")])
    assert sorted(path.relative_to(events).as_posix() for path in events.rglob("*.parquet")) == ["chain.parquet"]
    for number in range(2, 12):  # m02..m11, each loaded on its own as it arrives
        mid = f"m{number:02d}"
        CraftedRun(store, "chain", mid=mid).say().test(1, 0).finish("PASS")
        load_milestones(store, [("acme__app", mid)])
        loose = sorted(path.name for path in (events / "chain").glob("*.parquet"))
        if number <= 9:  # up to eight loose files beside the run's file
            assert loose == [f"m{n:02d}.parquet" for n in range(2, number + 1)]
        else:  # a ninth: all merged into the run's file; m11 the first loose one again
            assert loose == ([] if number == 10 else ["m11.parquet"])
    # m01 changes: it lives in the run's file, so that file is written again (and takes the loose one in)
    log = store.milestone_run("acme__app", "chain", "m01").trajectory
    log.write_bytes(log.read_bytes() + log.read_bytes().splitlines(keepends=True)[-1].replace(b'"seq":', b'"seq":9'))
    load_milestones(store, [("acme__app", "m01")])
    assert not list((events / "chain").glob("*.parquet"))
    copy_trajectories(store, whole.root)
    analyze(whole, load_rules())
    assert events_of(store) == events_of(whole)
    # a milestone run removed: its rows go, the others' stay
    shutil.rmtree(store.milestone_run("acme__app", "chain", "m05").dir)
    shutil.rmtree(whole.milestone_run("acme__app", "chain", "m05").dir)
    load_milestones(store, [("acme__app", "m05")])
    analyze(whole, load_rules())
    assert events_of(store) == events_of(whole)
