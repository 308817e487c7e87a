"""A generated repository history of any length, written with `git fast-import` in seconds.

Shaped like a real project: a package of modules with tests, PRs merged with merge commits
(2-3 side commits each) or squashed (`Title (#N)`), direct commits, docs/CI noise, and a release
every `release_every` mainline commits with a CHANGELOG.md citing the PRs and their issues.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

MODULES = 120


def _blob(text: str) -> bytes:
    data = text.encode()
    return b"data %d\n%s\n" % (len(data), data)


def generate(dest: Path, commits: int, release_every: int = 400, seed: int = 7) -> Path:
    """Create a repository at `dest` with about `commits` commits (mainline + side branches)."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    stream: list[bytes] = []
    mark = 0
    clock = 1_700_000_000
    revision = {}
    pr = issue = 0
    changelog: list[str] = []
    pending: list[str] = []
    made = 0
    release = 0
    main_tip = None

    def module_text(i: int) -> str:
        rev = revision.get(i, 0)
        lines = [f"def f{i}_{k}(x):\n    return x + {k + rev}\n" for k in range(8)]
        return f'"""Module {i}, revision {rev}."""\n\n' + "\n".join(lines)

    def test_text(i: int) -> str:
        rev = revision.get(i, 0)
        return f"from pkg.mod{i} import f{i}_0\n\n\ndef test_mod{i}_rev{rev}():\n    assert f{i}_0(1) == {1 + rev}\n"

    def commit(branch: str, message: str, files: dict[str, str], parents: list[int]) -> int:
        nonlocal mark, clock, made
        mark += 1
        clock += 600
        made += 1
        out = [b"commit refs/heads/%s\n" % branch.encode(), b"mark :%d\n" % mark]
        out.append(b"author Dev <dev@example.org> %d +0000\n" % clock)
        out.append(b"committer Dev <dev@example.org> %d +0000\n" % clock)
        out.append(_blob(message))
        if parents:
            out.append(b"from :%d\n" % parents[0])
            out += [b"merge :%d\n" % p for p in parents[1:]]
        for path, text in files.items():
            out.append(b"M 100644 inline %s\n" % path.encode())
            out.append(_blob(text))
        stream.append(b"".join(out))
        return mark

    def touch(i: int) -> dict[str, str]:
        revision[i] = revision.get(i, 0) + 1
        return {f"pkg/mod{i}.py": module_text(i), f"tests/test_mod{i}.py": test_text(i)}

    init = {"README.md": "# pkg\n", ".github/workflows/ci.yml": "on: push\n", "pkg/__init__.py": ""}
    for i in range(MODULES):
        init[f"pkg/mod{i}.py"] = module_text(i)
        init[f"tests/test_mod{i}.py"] = test_text(i)
    main_tip = commit("main", "Initial import", init, [])
    stream.append(
        b"tag v0.0.0\nfrom :%d\ntagger Dev <dev@example.org> %d +0000\n%s" % (main_tip, clock, _blob("0.0.0"))
    )
    mainline = 1
    while made < commits:
        kind = rng.random()
        feature = rng.sample(range(MODULES), 3)
        if kind < 0.45:  # merged PR with side commits
            pr += 1
            issue += 1
            side = main_tip
            for j in range(rng.randint(2, 3)):
                side = commit(
                    f"pr{pr}", f"Work on feature {pr} part {j}\n\nRefs #{issue}", {**touch(feature[j % 3])}, [side]
                )
            main_tip = commit("main", f"Merge pull request #{pr} from dev/pr{pr}\n\nFeature {pr}", {}, [main_tip, side])
            pending.append(f"- Feature {pr} improves modules {feature[0]} and {feature[1]} (#{pr}, fixes #{issue}).")
        elif kind < 0.8:  # squashed PR
            pr += 1
            issue += 1
            files = {**touch(feature[0]), **touch(feature[1])}
            main_tip = commit("main", f"Improve module {feature[0]} (#{pr})\n\nCloses #{issue}", files, [main_tip])
            pending.append(f"- Module {feature[0]} is faster (#{pr}).")
        elif kind < 0.92:  # direct commit
            main_tip = commit("main", f"Fix module {feature[0]}", touch(feature[0]), [main_tip])
        else:  # noise
            main_tip = commit("main", "docs: update README", {"README.md": f"# pkg\n\nrev {made}\n"}, [main_tip])
        mainline += 1
        if mainline % release_every == 0:
            release += 1
            changelog = [f"## [0.{release}.0]\n", *pending, "", *changelog]
            pending = []
            main_tip = commit(
                "main", f"Release 0.{release}.0", {"CHANGELOG.md": "# Changelog\n\n" + "\n".join(changelog)}, [main_tip]
            )
            stream.append(
                b"tag v0.%d.0\nfrom :%d\ntagger Dev <dev@example.org> %d +0000\n%s"
                % (release, main_tip, clock, _blob(f"0.{release}.0"))
            )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=dest, input=b"".join(stream), check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=dest, check=True)
    return dest
