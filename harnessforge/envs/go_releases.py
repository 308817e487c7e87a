"""A Go module that requires an earlier release of itself, served from the repository's own tags.

`require example.com/m v1.0.3` in example.com/m's own go.mod is an accident `go mod tidy` removes, but
until it does, Go loads that release's go.mod to build the module graph, and no module proxy answers
here. The release is the repository's own past: its go.mod (or, for a tag without one, the line Go
synthesises) is written into the module cache at image build, where Go finds it offline and checks it
against go.sum like any download. Only tags that are ancestors of the commit are read: nothing future.
"""

from __future__ import annotations

import base64
import re
import shlex

from ..gitio import GitRepo

_MODULE = re.compile(r"^module\s+\"?([^\s\"]+)", re.M)
_REQUIRE_BLOCK = re.compile(r"^require\s*\((.*?)^\)", re.M | re.S)
_REQUIRE_LINE = re.compile(r"^require\s+(?!\()(\S+)\s+(\S+)", re.M)


def module_path(gomod: str) -> str | None:
    found = _MODULE.search(gomod)
    return found[1] if found else None


def required(gomod: str) -> list[tuple[str, str]]:
    """(module path, version) of every requirement, single-line and block form."""
    pairs = [(path.strip('"'), version) for path, version in _REQUIRE_LINE.findall(gomod)]
    for block in _REQUIRE_BLOCK.findall(gomod):
        for line in block.splitlines():
            fields = line.split("//", 1)[0].split()
            if len(fields) >= 2:
                pairs.append((fields[0].strip('"'), fields[1]))
    return pairs


def escape(text: str) -> str:
    """Go's case-encoding of module paths and versions in the module cache (`!` before a lowered capital)."""
    return re.sub(r"[A-Z]", lambda capital: "!" + capital[0].lower(), text)


def own_releases(repo: GitRepo, commits: list[str], module_cache: str) -> list[str]:
    """Install steps writing into `module_cache` the go.mod of each release of the module itself that go.mod
    at one of `commits` requires, read from the tag of that name when it is an ancestor of that commit."""
    tags = {tag.name: tag.commit for tag in repo.tags()}
    files: dict[str, bytes] = {}
    for commit in commits:
        gomod = (repo.show(commit, "go.mod") or b"").decode(errors="replace")
        module = module_path(gomod)
        for path, version in required(gomod):
            tagged = tags.get(version)
            if path != module or tagged is None or not repo.is_ancestor(tagged, commit):
                continue
            released = repo.show(tagged, "go.mod")
            content = released if released is not None else f"module {module}\n".encode()
            files[f"{module_cache}/cache/download/{escape(module)}/@v/{escape(version)}.mod"] = content
    # base64: one line, whatever the file holds (exported Dockerfiles put each step on one RUN line)
    return [
        f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])} && echo {base64.b64encode(content).decode()} | base64 -d > "
        f"{shlex.quote(path)}"
        for path, content in sorted(files.items())
    ]
