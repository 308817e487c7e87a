"""How an image installs a package.json's modules: with its lockfile's manager (pnpm, Yarn 1, npm ci), else with
npm install, which leaves out the tools only other scripts than the tests run when it cannot install them all."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable

from ..errors import EnvError

Reader = Callable[[str], bytes | None]


def node_installer(files: list[str], read: Reader, manifest: dict, runners: tuple[str, ...]) -> str:
    """The install command of a package.json's modules: its lockfile's manager, else npm install."""
    flags = "--ignore-scripts --no-audit --no-fund"  # no lifecycle scripts: `prepare` would build absent sources
    manager = str(manifest.get("packageManager") or "")
    if "pnpm-lock.yaml" in files:
        version = manager.split("@", 1)[1].split("+", 1)[0] if manager.startswith("pnpm@") else ""
        if not version:
            lock = (read("pnpm-lock.yaml") or b"").decode(errors="replace")
            found = re.search(r"^lockfileVersion:\s*'?(\d+)", lock, re.M)
            version = {"9": "9", "6": "8", "5": "7"}.get(found[1] if found else "", "9")
        return f"npx --yes --package=pnpm@{version} pnpm install --frozen-lockfile --ignore-scripts"
    if "yarn.lock" in files:
        if "__metadata:" in (read("yarn.lock") or b"").decode(errors="replace"):
            raise EnvError(
                "yarn.lock is a Yarn 2+ (berry) lockfile: only Yarn 1 lockfiles are supported", "install_failed"
            )
        return "npx --yes --package=yarn@1 yarn install --frozen-lockfile --ignore-scripts --non-interactive"
    if "package-lock.json" in files:
        return f"npm ci {flags}"
    tooling = _tooling_only(manifest, runners)
    if not tooling:
        return f"npm install {flags}"
    # A tool's own dependency may be a git URL no build reaches (qs's `evalmd`): then tools only other scripts run go
    trim = (  # no single quote in it: one shell word as it is
        'const fs = require("fs"), p = JSON.parse(fs.readFileSync("package.json", "utf8")); '
        f"for (const d of {json.dumps(tooling)}) delete (p.devDependencies || {{}})[d]; "
        'fs.writeFileSync("package.json", JSON.stringify(p, null, 2))'
    )
    return f"{{ npm install {flags} || {{ node -e {shlex.quote(trim)} && npm install {flags}; }}; }}"


def _tooling_only(manifest: dict, runners: tuple[str, ...]) -> list[str]:
    """The dev dependencies that only scripts other than the tests run: `eslint` of `lint`, `evalmd` of `readme`."""
    words = {name: set(re.findall(r"[@\w./-]+", str(command))) for name, command in _mapping(manifest, "scripts")}
    testing = set().union(*(found for name, found in words.items() if name.startswith("test")))
    other = set().union(*(found for name, found in words.items() if not name.startswith("test")))
    development = dict(_mapping(manifest, "devDependencies"))
    return sorted(name for name in development if name in other - testing and name not in runners)


def _mapping(manifest: dict, key: str) -> list[tuple[str, object]]:
    value = manifest.get(key)
    return list(value.items()) if isinstance(value, dict) else []
