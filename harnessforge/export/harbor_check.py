"""Check an export with Harbor's own code: run with the Harbor virtualenv's Python (Harbor needs >= 3.12).

    .venv-harbor/bin/python harnessforge/export/harbor_check.py <export dir> [more ATIF files or task folders]

Every `atif/**/*.json` goes through Harbor's ATIF validator (`TrajectoryValidator`, what
`python -m harbor.utils.trajectory_validator` runs), every `tasks/*/` through Harbor's task loader
(`Task(folder)`, which parses task.toml with `TaskConfig` and checks the folder's layout). Prints one
JSON object, {"atif": {path: [errors]}, "tasks": {path: error or null}}; exits 1 if anything failed.
`harbor lint` is a command of its own (`.venv-harbor/bin/harbor lint <task folders>`).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path


def check(paths: list[Path]) -> dict:
    # imported here: this file is run by Harbor's Python, but it sits in our package, which 3.11 imports;
    # and run as a script, its own folder comes first on sys.path, where our harbor.py would shadow Harbor
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    from harbor.models.task.task import Task
    from harbor.utils.trajectory_validator import TrajectoryValidator

    atif_files, task_folders = [], []
    for path in paths:
        if (path / "task.toml").is_file():
            task_folders.append(path)
        elif path.is_dir():
            atif_files += sorted((path / "atif").rglob("*.json"))
            task_folders += sorted(folder for folder in (path / "tasks").glob("*") if (folder / "task.toml").is_file())
        else:
            atif_files.append(path)
    result: dict = {"atif": {}, "tasks": {}}
    for path in atif_files:
        validator = TrajectoryValidator()
        validator.validate(path)
        result["atif"][str(path)] = validator.get_errors()
    for folder in task_folders:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                Task(folder)
                error = None
            except Exception as e:  # the loader raises pydantic, value and OS errors alike
                error = f"{type(e).__name__}: {e}"
        deprecated = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
        result["tasks"][str(folder)] = error or ("; ".join(deprecated) if deprecated else None)
    return result


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    result = check([Path(arg) for arg in sys.argv[1:]])
    print(json.dumps(result, indent=2))
    failed = any(result["atif"].values()) or any(result["tasks"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
