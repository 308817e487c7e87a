"""A blind reader's packet (`../shared/research/task-quality.md`): per milestone of every plan in a store, the task
exactly as the Dev receives it (`harnessforge show --task --tests hidden`), the two patches and the verdict, and
INDEX.txt listing each milestone's status. The reader gets this folder and the rubric, never the code.

    python benchmarks/reader_packet.py STORE OUT
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harnessforge.store import Store  # noqa: E402

PATCHES = ("ground_truth.patch", "test.patch")  # as the store names them (`Store.read_patches`)
VERDICT_FIELDS = ("status", "reason", "detail", "fail_to_pass", "flaky", "broken")


def write_packet(store: Store, out: Path) -> int:
    """Write the packet; returns how many milestones it holds."""
    command = str(Path(sys.executable).with_name("harnessforge"))
    index = []
    for key in store.repo_keys():
        if not store.plan_file(key).exists():
            continue
        for milestone in store.load_plan(key).milestones:
            target = out / key / milestone.id
            target.mkdir(parents=True, exist_ok=True)
            shown = subprocess.run(
                [command, "--store", str(store.root), "show", key, "--task", milestone.id, "--tests", "hidden"],
                capture_output=True,
                text=True,
            )
            (target / "task.md").write_text(shown.stdout if shown.returncode == 0 else f"(no task: {shown.stderr})")
            for name, patch in zip(PATCHES, store.read_patches(key, milestone.id)):
                (target / name).write_bytes(patch)
            verdict: dict = {"status": "not validated"}
            if store.validation_file(key, milestone.id).exists():
                validation = store.load_validation(key, milestone.id).model_dump(mode="json")
                verdict = {field: validation[field] for field in VERDICT_FIELDS}
                verdict["pass_to_pass_count"] = len(validation["pass_to_pass"])
            (target / "verdict.json").write_text(json.dumps(verdict, indent=2) + "\n")
            index.append(f"{key}/{milestone.id}\t{verdict['status']}\t{verdict.get('reason') or ''}")
    (out / "INDEX.txt").write_text("\n".join(index) + "\n")
    return len(index)


if __name__ == "__main__":
    print(f"{write_packet(Store(Path(sys.argv[1])), Path(sys.argv[2]))} milestones")
