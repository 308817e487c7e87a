"""A full disk while writing (a small tmpfs store): one clear error, the old artifact intact, no temp
file or half an event line left behind."""

import subprocess

import pytest

from harnessforge.atomic import atomic_write
from harnessforge.errors import ArtifactError
from harnessforge.harness.recorder import Recorder
from harnessforge.store import Store
from tests.trajectories import CraftedRun


@pytest.fixture
def small(tmp_path):
    """A 256 KiB tmpfs: a disk that fills up (needs root, as CI has: it runs the Docker engine too)."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(mount, leave: int) -> None:
    """Fill the disk until about `leave` bytes are free."""
    import shutil

    free = shutil.disk_usage(mount).free
    (mount / "ballast").write_bytes(b"x" * max(free - leave, 0))


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_says_so(small):
    path = small / "repos" / "k" / "plan.json"
    atomic_write(path, b'{"old": true}\n')
    fill(small, 8 * 1024)
    with pytest.raises(ArtifactError, match=r"plan.json: no space left on the device \(\d+ KiB free\); nothing was"):
        atomic_write(path, b"y" * 200_000)
    assert path.read_bytes() == b'{"old": true}\n'  # the old artifact, whole
    assert [p.name for p in path.parent.iterdir()] == ["plan.json"]  # no temp file left


def test_an_event_that_does_not_fit_leaves_no_half_line(small):
    from harnessforge.store import Store

    store = Store(small / "store")
    run = CraftedRun(store, "full").say("Looking around.").say("Still looking.")
    mdir = store.root / "trajectories" / "acme__app" / "full" / "m01"
    rec = Recorder(mdir)
    for e in run.events[:2]:
        rec.append(e)
    size = (mdir / "trajectory.jsonl").stat().st_size
    fill(small, 4 * 1024)
    big = run.events[2].model_copy(update={"action": run.events[2].action.model_copy(update={"content": "z" * 64_000})})
    with pytest.raises(ArtifactError, match="trajectory.jsonl: no space left on the device"):
        rec.append(big)
    assert (mdir / "trajectory.jsonl").stat().st_size == size  # the partial line was cut off
    (small / "ballast").unlink()
    assert [e.seq for e in Recorder.open(mdir).events()] == [0, 1]  # reads back whole; the run can resume


# ---- the other writers, through the CLI: DuckDB, Parquet (load and export), git (the clone cache) --------


@pytest.fixture
def tmpfs():
    """mount(path, size): a small tmpfs at `path`, unmounted at the end."""
    mounted = []

    def mount(path, size: str = "256k"):
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=True)


def one_line_disk_full(proc, names: str) -> str:
    """The command failed with one line naming the artifact it could not write, and no traceback."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "no space left on the device" in lines[0] and names in lines[0], lines[0]
    return lines[0]


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.endswith((".tmp", ".new", ".wal.tmp")))


def test_a_new_analytics_database_on_a_full_disk_leaves_no_half_file(run_cli, tmp_path, tmpfs):
    from tests.test_analytics import craft

    store = Store(tmp_path / "store")
    craft(store)
    analytics = tmpfs(store.root / "analytics")
    fill(analytics, 0)
    one_line_disk_full(run_cli("distill", store=store.root), "analytics/harnessforge.duckdb")
    assert sorted(p.name for p in analytics.iterdir()) == ["ballast"]  # no database DuckDB could never open again
    (analytics / "ballast").unlink()
    assert run_cli("distill", store=store.root).returncode == 0


def test_run_parquet_on_a_full_disk_is_never_half_written(run_cli, tmp_path, tmpfs):
    import pyarrow.parquet as pq

    from tests.test_analytics import craft

    store = Store(tmp_path / "store")
    analytics = tmpfs(store.root / "analytics", "2m")
    run_cli("distill", store=store.root, check=True)  # the database exists; no runs yet
    manifest = (store.root / "distilled" / "manifest.json").read_bytes()
    craft(store)
    fill(analytics, 4 * 1024)
    one_line_disk_full(run_cli("distill", store=store.root), ".parquet")
    events = analytics / "events"
    assert not leftovers(analytics)
    for f in events.rglob("*.parquet"):  # what is there is whole: the models read every file
        pq.read_table(f)
    assert (store.root / "distilled" / "manifest.json").read_bytes() == manifest  # nothing distilled from it
    (analytics / "ballast").unlink()
    proc = run_cli("distill", store=store.root, check=True)
    assert proc.stdout.startswith("loaded ")
    runs = {p.name for p in (store.root / "trajectories" / "acme__app").iterdir()}
    assert {f.stem for f in events.rglob("*.parquet")} == runs


def test_a_full_disk_while_rebuilding_models_keeps_the_old_ones(run_cli, tmp_path, tmpfs):
    import duckdb

    from harnessforge.analytics.sqlmodels import SQL_DIR, discover, hashes
    from harnessforge.rules import load_rules
    from tests.test_analytics import craft

    store = Store(tmp_path / "store")
    craft(store)
    analytics = tmpfs(store.root / "analytics", "4m")
    run_cli("distill", store=store.root, check=True)
    manifest = (store.root / "distilled" / "manifest.json").read_bytes()

    def recorded() -> dict[str, str]:
        with duckdb.connect(str(analytics / "harnessforge.duckdb"), read_only=True) as con:
            return dict(con.execute("SELECT name, hash FROM hf_models").fetchall())

    before = recorded()
    rules = tmp_path / "rules.yaml"  # a changed threshold: the models must be rebuilt
    rules.write_text("analytics:\n  efficient_max_turns: 3\n")
    fill(analytics, 4 * 1024)
    one_line_disk_full(run_cli("--rules", str(rules), "distill", store=store.root), "analytics/harnessforge.duckdb")
    assert recorded() == before  # the database claims no model built under the new rules
    assert (store.root / "distilled" / "manifest.json").read_bytes() == manifest  # the old distillation, whole
    (analytics / "ballast").unlink()
    run_cli("--rules", str(rules), "distill", store=store.root, check=True)
    assert recorded() == hashes(discover(SQL_DIR), load_rules(rules).analytics.model_dump()) != before


def test_export_parquet_on_a_full_disk_is_never_half_written(run_cli, tmp_path, tmpfs):
    import pyarrow.parquet as pq

    from harnessforge.distill import distill
    from harnessforge.rules import load_rules
    from tests.test_analytics import craft

    store = Store(tmp_path / "store")
    craft(store)
    distill(store, load_rules(), log=lambda *_: None)
    roomy = tmp_path / "roomy"
    run_cli("export", "--out", str(roomy), store=store.root, check=True)
    first = roomy / "sft" / "trl.jsonl"  # the first file written; its Parquet twin comes next
    small = tmpfs(tmp_path / "small", "1m")
    fill(small, (first.stat().st_size // 4096 + 2) * 4096)  # room for the JSONL, not for the Parquet after it
    out = small / "dataset"
    one_line_disk_full(run_cli("export", "--out", str(out), store=store.root), "sft/trl.parquet")
    assert not leftovers(small) and not (out / "README.md").exists()  # no card: the dataset is not complete
    for f in out.rglob("*.parquet"):
        pq.read_table(f)
    (small / "ballast").unlink()
    run_cli("export", "--out", str(out), store=store.root, check=True)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == sorted(p.relative_to(roomy) for p in roomy.rglob("*"))


def test_a_clone_on_a_full_disk_leaves_no_cache_the_next_command_trusts(run_cli, tmp_path, tmpfs, example_repo):
    root = tmpfs(tmp_path / "small", "256k")  # smaller than the example repository's objects
    store = root / "store"
    line = one_line_disk_full(run_cli("add", str(example_repo), store=store), "cache/git/")
    key = line.split("cache/git/")[1].split(".git")[0]
    assert list((store / "cache" / "git").iterdir()) == []  # neither the clone nor its temp directory
    assert not (store / "repos").exists()  # not registered
    subprocess.run(["mount", "-o", "remount,size=16m", str(root)], check=True)  # space again
    assert run_cli("add", str(example_repo), store=store, check=True).stdout.strip() == key
    assert run_cli("plan", key, store=store).returncode == 0
    assert (store / "repos" / key / "plan.json").exists()


def test_files_written_together_on_a_full_disk_stay_the_old_generation_whole(small):
    """Issue 32: a disk filling during `distill` left half old, half new outputs. The outputs are written together:
    the first files fit, the last does not, and every file is still the old one."""
    from harnessforge.atomic import write_together

    folder = small / "distilled"
    old = {folder / name: f"old {name}\n".encode() for name in ("sft.jsonl", "reviews.jsonl", "manifest.json")}
    write_together(old)
    fill(small, 24 * 1024)
    new = {path: b"n" * 4_000 for path in old} | {folder / "manifest.json": b"m" * 200_000}
    with pytest.raises(ArtifactError, match=r"manifest.json: no space left on the device .*nothing was written"):
        write_together(new)
    assert {path: path.read_bytes() for path in old} == old
    assert sorted(path.name for path in folder.iterdir()) == ["manifest.json", "reviews.jsonl", "sft.jsonl"]
