"""A full disk while writing (a small tmpfs store): one clear error, the old artifact intact, no temp
file or half an event line left behind."""

import subprocess

import pytest

from harnessforge.errors import ArtifactError
from harnessforge.harness.recorder import Recorder
from harnessforge.store import atomic_write
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
