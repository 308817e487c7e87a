"""The base checkout's dependencies an image needs besides the verify checkout's: one image runs both sides of a
milestone, and the sandbox has no registry, so what only the base requires must be in the image already."""

from __future__ import annotations

import base64
import json
import re
import shlex

from ..gitio import GitRepo
from .go_releases import required

# The modules to build and test, then the go.mod of every module in the graph (`go mod download` fetches those of
# the pruned graph only): a test that imports a module the base's go.mod lacks makes `go` resolve the new
# requirement's own graph offline, and progressbar's `virtualterm` needed `objx`'s go.mod ("module lookup disabled
# by GOPROXY=off"). A graph that does not resolve whole is no build failure.
GO_DOWNLOAD = "go mod download && { go list -m all >/dev/null 2>&1 || true; }"


_NODE_MAPS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")
_NOT_FROM_THE_REGISTRY = re.compile(r"^(?:file|link|workspace|git(?:\+\w+)?|github|portal|patch):|://|^\.{0,2}/")


def base_modules(repo: GitRepo, base: str, verify: str, deps_dir: str) -> list[str]:
    """Install steps downloading the modules the base checkout's go.mod requires when they differ from the verify
    checkout's: at base the milestone's tests run against the base's versions (a test dependency the milestone
    upgrades), and the sandbox has no proxy but the image's module cache."""
    files = {name: repo.show(base, name) for name in ("go.mod", "go.sum")}
    if files["go.mod"] is None or all(files[name] == repo.show(verify, name) for name in files):
        return []
    if not re.search(rb"^\s*require\b", files["go.mod"], re.M):
        return []
    folder = f"{deps_dir}-base"
    writes = [
        f"echo {base64.b64encode(content).decode()} | base64 -d > {folder}/{name}"
        for name, content in files.items()
        if content is not None
    ]
    # the modules the milestone adds: its test may import one, and `go` then resolves it from the base's go.mod, whose
    # older `go` line reads the new module's whole graph (progressbar's `virtualterm` needed `objx`'s go.mod)
    verify_mod = (repo.show(verify, "go.mod") or b"").decode("utf-8", "replace")
    before = {name for name, _ in required(files["go.mod"].decode("utf-8", "replace"))}
    added = sorted(f"{name}@{version}" for name, version in required(verify_mod) if name not in before)
    resolved = f" && {{ go get {' '.join(map(shlex.quote, added))} >/dev/null 2>&1 || true; }}" if added else ""
    return [f"mkdir -p {folder} && {' && '.join(writes)} && cd {folder} && {GO_DOWNLOAD}{resolved}"]


def _node_dependencies(text: bytes | None) -> dict[str, str]:
    try:
        manifest = json.loads(text or b"{}")
    except ValueError:
        return {}
    if not isinstance(manifest, dict):
        return {}
    maps = [manifest.get(key) for key in _NODE_MAPS]
    return {name: str(spec) for found in maps if isinstance(found, dict) for name, spec in found.items()}


def base_packages(repo: GitRepo, base: str, verify: str, deps_dir: str) -> list[str]:
    """An install step adding, without saving, the registry packages the base checkout's package.json depends on
    and the verify checkout's no longer does: express 5.1 dropped `utils-merge`, which its base code requires, and
    every test file failed to load at base."""
    before, after = (
        _node_dependencies(repo.show(base, "package.json")),
        _node_dependencies(repo.show(verify, "package.json")),
    )
    gone = [
        f"{name}@{spec}"
        for name, spec in sorted(before.items())
        if name not in after and not _NOT_FROM_THE_REGISTRY.search(spec)
    ]
    if not gone:
        return []
    return [f"cd {deps_dir} && npm install --no-save --ignore-scripts --no-audit --no-fund {shlex.join(gone)}"]
