"""Each exported file loaded by the tool that will read it, at export time (PoC criterion 4).

- Trainer files: `datasets` (what TRL, ms-swift and OpenRLHF load them with) reads every Parquet file
  back with as many rows as its JSON lines.
- ATIF files and Harbor task folders: Harbor's own validator, loader and `harbor lint`, run from a
  Harbor virtualenv (Harbor needs Python >= 3.12): `$HARNESSFORGE_HARBOR`, else `.venv-harbor` in the
  current directory or beside this package's checkout (scripts/install.sh makes one).
- SWE-bench: swebench's `make_test_spec` on every instance, when swebench is installed.

A tool that is missing is a failed check with the reason, never a silent pass.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .splits import HELDOUT

HARBOR_CHECK = Path(__file__).with_name("harbor_check.py")


def harbor_venv() -> Path | None:
    candidates = [os.environ.get("HARNESSFORGE_HARBOR"), ".venv-harbor", Path(__file__).parents[2] / ".venv-harbor"]
    return next((Path(c) for c in candidates if c and (Path(c) / "bin" / "harbor").exists()), None)


def format_checks(out: Path, files: list[Path]) -> dict[str, str | None]:
    """Per exported file or folder (relative to `out`): None when its tool loaded it, else why not."""
    checks: dict[str, str | None] = {}
    for parquet in sorted(path for path in files if path.suffix == ".parquet"):
        checks[str(parquet.relative_to(out))] = _parquet(parquet)
    for root in sorted({path.parent for path in files if path.name == "instances.jsonl"}):
        checks[str((root / "instances.jsonl").relative_to(out))] = _swebench(root / "instances.jsonl")
    harbor_roots = sorted({_export_root(out, path) for path in files if _harbor_file(out, path)})
    for root in harbor_roots:
        checks.update(_harbor(out, root))
    return checks


def _parquet(path: Path) -> str | None:
    import datasets

    datasets.disable_progress_bars()  # stderr is for warnings and errors, one line each
    try:
        table = datasets.load_dataset("parquet", data_files=str(path), split="train")
    except Exception as e:  # datasets raises many kinds; any of them means a trainer cannot load it
        return f"datasets cannot load it: {type(e).__name__}: {e}"
    lines = len(path.with_suffix(".jsonl").read_bytes().splitlines())
    return None if len(table) == lines else f"{len(table)} rows, its JSON lines have {lines}"


def _swebench(path: Path) -> str | None:
    try:
        from swebench.harness.utils import load_swebench_dataset, make_test_spec
    except ImportError:
        return "swebench is not installed (pip install 'swebench>=5.0.2')"
    try:
        for row in load_swebench_dataset(str(path)):
            make_test_spec(row)
    except Exception as e:  # a KeyError, a ValueError: whatever swebench raises, it cannot run the instance
        return f"make_test_spec: {type(e).__name__}: {e}"
    return None


HARBOR_DIRS = ("atif", "tasks")  # at the top of an export (or of its heldout/): not swebench/tasks


def _harbor_file(out: Path, path: Path) -> bool:
    parts = path.relative_to(out).parts
    top = parts[1:] if parts[0] == HELDOUT else parts
    return len(top) > 1 and top[0] in HARBOR_DIRS


def _export_root(out: Path, path: Path) -> Path:
    """The export directory an ATIF file or task folder belongs to (`out`, or `out/heldout`)."""
    return out / HELDOUT if path.relative_to(out).parts[0] == HELDOUT else out


def _harbor(out: Path, root: Path) -> dict[str, str | None]:
    names = [str((root / name).relative_to(out)) for name in ("atif", "tasks") if (root / name).is_dir()]
    venv = harbor_venv()
    if venv is None:
        why = "Harbor is not installed (a Python >= 3.12 virtualenv: .venv-harbor or $HARNESSFORGE_HARBOR)"
        return dict.fromkeys(names, why)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), str(HARBOR_CHECK), str(root)], capture_output=True, text=True, timeout=600
    )
    try:
        found = json.loads(proc.stdout)
    except ValueError:
        return dict.fromkeys(names, f"Harbor's check failed: {proc.stderr.strip()[-300:]}")
    result: dict[str, str | None] = {}
    if (root / "atif").is_dir():
        bad = {path: errors for path, errors in found["atif"].items() if errors}
        result[str((root / "atif").relative_to(out))] = f"Harbor's validator: {bad}" if bad else None
    if (root / "tasks").is_dir():
        bad = {path: error for path, error in found["tasks"].items() if error}
        folders = sorted(str(folder) for folder in (root / "tasks").iterdir() if folder.is_dir())
        findings: list | str = []
        if folders:
            lint = subprocess.run(
                [str(venv / "bin" / "harbor"), "lint", "--json", *folders], capture_output=True, text=True, timeout=600
            )
            findings = json.loads(lint.stdout or "[]") if lint.returncode in (0, 1) else lint.stderr.strip()[-300:]
        why = "; ".join(
            filter(None, [f"Harbor's loader: {bad}" if bad else "", f"harbor lint: {findings}" if findings else ""])
        )
        result[str((root / "tasks").relative_to(out))] = why or None
    return result
