"""Does the sandbox test the workspace? Its own install worked, and it imports the project from it.

A copy of the project from the package index (pulled in by a dependency, or by a recipe override)
sits in site-packages, which comes before `.pth` entries and editable finders on `sys.path`; the
tests would then pass or fail on the released code, not on the checkout. Checking where each of the
project's import names resolves, from the workspace root as the test runner starts, proves it.
"""

from __future__ import annotations

import json
import os
import re
import shlex

from ..errors import EnvError
from ..models.env import Recipe
from .recipes import WORKSPACE_INSTALL_LOG, WORKSPACE_INSTALL_STATUS
from .sandbox import Sandbox

# find_spec locates a top-level module without running it (its parent is not imported).
LOCATE = """
import importlib.util, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        continue
    if spec is not None:
        regular = spec.has_location and spec.origin
        found[name] = [spec.origin] if regular else list(spec.submodule_search_locations or [])
print(json.dumps(found))
"""


def _inside(path: str, root: str) -> bool:
    path = os.path.normpath(path)
    return path == root or path.startswith(root.rstrip("/") + "/")


def shadowed_packages(sandbox: Sandbox, recipe: Recipe) -> dict[str, str]:
    """Import name -> where it is imported from, for each of the recipe's packages found outside the
    workspace. A name found nowhere is not shadowed (the tests say what is missing)."""
    if recipe.language != "python" or not recipe.packages:
        return {}
    names = " ".join(shlex.quote(package) for package in recipe.packages)
    result = sandbox.exec(f"python -c {shlex.quote(LOCATE)} {names}", timeout=120)
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1]) if result.exit_code == 0 else {}
    except (ValueError, IndexError):
        found = {}
    root = os.path.normpath(sandbox.workdir)
    return {
        name: paths[0]
        for name, paths in sorted(found.items())
        if paths and not any(_inside(str(path), root) for path in paths)
    }


def shadowing_detail(shadowed: dict[str, str], workdir: str) -> str:
    where = "; ".join(f"{name} is imported from {path}" for name, path in shadowed.items())
    return f"{where}, not from the workspace {workdir}: an installed copy shadows the code under test"


def _install_error(log: str) -> str:
    """The line of pip's log that says why the build failed (the backend's exception, else pip's error)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for pattern in (r"\b\w*(Error|Exception): .*", r"^(ERROR|error): .*"):
        found = [match[0] for line in lines if (match := re.search(pattern, line))]
        if found:
            return found[-1]
    return lines[-1] if lines else "no output"


def check_workspace(sandbox: Sandbox, recipe: Recipe) -> None:
    """Before a verdict is trusted: the checkout's own install worked (else `install_failed`: its
    metadata, entry points and generated files are missing), and none of the project's packages
    loads from outside the workspace (else `package_shadowed`)."""
    if recipe.language != "python":
        return
    status = sandbox.exec(f"cat {WORKSPACE_INSTALL_STATUS}")
    if status.exit_code == 0 and status.stdout.strip() not in ("", "0"):
        why = _install_error(sandbox.exec(f"tail -c 20000 {WORKSPACE_INSTALL_LOG}").stdout)
        raise EnvError(
            f"the checkout's own install (pip install --editable .) failed with exit {status.stdout.strip()}: "
            f"{why} (log: {WORKSPACE_INSTALL_LOG} in the sandbox)",
            "install_failed",
        )
    shadowed = shadowed_packages(sandbox, recipe)
    if shadowed:
        raise EnvError(shadowing_detail(shadowed, sandbox.workdir), "package_shadowed")


__all__ = ["check_workspace", "shadowed_packages", "shadowing_detail"]
