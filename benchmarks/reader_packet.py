"""A blind reader's packet (`../shared/research/task-quality.md`): per milestone of every plan in a store, the task
exactly as the Dev receives it (`harnessforge show --task --tests hidden`), the two patches and the verdict, and
INDEX.txt listing each milestone's status. The reader gets this folder and the rubric, never the code.

    python benchmarks/reader_packet.py STORE OUT
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

VERDICT_FIELDS = ("status", "reason", "detail", "fail_to_pass", "flaky", "broken")


def write_packet(store: Path, out: Path) -> int:
    """Write the packet; returns how many milestones it holds."""
    command = str(Path(sys.executable).with_name("harnessforge"))
    index = []
    for repo_dir in sorted((store / "repos").iterdir()):
        if not (repo_dir / "plan.json").exists():
            continue
        key = repo_dir.name
        for milestone in json.loads((repo_dir / "plan.json").read_text())["milestones"]:
            mid = milestone["id"]
            source, target = repo_dir / "milestones" / mid, out / key / mid
            target.mkdir(parents=True, exist_ok=True)
            shown = subprocess.run(
                [command, "--store", str(store), "show", key, "--task", mid, "--tests", "hidden"],
                capture_output=True,
                text=True,
            )
            (target / "task.md").write_text(shown.stdout if shown.returncode == 0 else f"(no task: {shown.stderr})")
            for name in ("ground_truth.patch", "test.patch"):
                if (source / name).exists():
                    shutil.copy(source / name, target / name)
            verdict = {"status": "not validated"}
            if (source / "validation.json").exists():
                validation = json.loads((source / "validation.json").read_text())
                verdict = {field: validation.get(field) for field in VERDICT_FIELDS}
                verdict["pass_to_pass_count"] = len(validation.get("pass_to_pass", []))
            (target / "verdict.json").write_text(json.dumps(verdict, indent=2) + "\n")
            index.append(f"{key}/{mid}\t{verdict['status']}\t{verdict.get('reason') or ''}")
    (out / "INDEX.txt").write_text("\n".join(index) + "\n")
    return len(index)


if __name__ == "__main__":
    print(f"{write_packet(Path(sys.argv[1]), Path(sys.argv[2]))} milestones")
