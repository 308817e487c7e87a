"""Screening: is a repository worth planning? Every criterion reports what it measured, the
threshold it was held to, and why it passed or failed.

Test counts come from the language's own collector run in a local sandbox (envs/local_sandbox.py:
bubblewrap, else `unshare`) holding the newest commit, the same isolation every other command in a
checkout gets; when the collector cannot run (missing tool, dependencies or sandbox) a static count
of test declarations stands in, and the criterion's `method` says so.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from datetime import timedelta
from fnmatch import fnmatchcase

from ..envs.local_sandbox import LocalSandbox
from ..envs.sandbox import Limits, Sandbox, SandboxSpec
from ..errors import EnvError, RepoError
from ..files import LANGUAGE_EXTENSIONS, VENDORED, FileClassifier, language_loc
from ..gitio import GitRepo
from ..models import Criterion, GitHubMeta, Provenance, RepoSpec, ScreeningReport
from ..repos import open_repo, spec_for
from ..rules import Rules
from ..store import Store
from .releases import find_releases

CI_PATTERNS = (
    ".github/workflows/*.yml",
    ".github/workflows/*.yaml",
    ".circleci/config.yml",
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".buildkite/*",
    "appveyor.yml",
    ".drone.yml",
    "bitbucket-pipelines.yml",
)
LOCKFILES = (
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "pdm.lock",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "go.sum",
    "Cargo.lock",
)
STATIC_TEST_PATTERNS = {
    "python": r"^\s*(async\s+)?def test",
    "go": r"^func Test\w*\(",
    "rust": r"#\[(tokio::)?test\]",
    "typescript": r"\b(it|test)\(\s*['\"`]",
    "javascript": r"\b(it|test)\(\s*['\"`]",
}
COLLECT_ENV = {"CI": "1"}  # test suites that check it skip interactive or slow set-up


def _criterion(name: str, measured, threshold: str, passed: bool | None, reason: str, method: str = "") -> Criterion:
    return Criterion(name=name, measured=measured, threshold=threshold, passed=passed, reason=reason, method=method)


def collector(language: str) -> list[str] | None:
    """The language's own test collector, as argv (None: no collector on this machine)."""
    if language == "python":
        return [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    if language == "go" and shutil.which("go"):
        return ["go", "test", "-list", ".", "./..."]
    return None


def collect_tests(sandbox: Sandbox, language: str, timeout: int) -> tuple[int | None, str]:
    """(count, method) from the language's own collector run in `sandbox`, or (None, why it could not run)."""
    command = collector(language)
    if command is None:
        return None, f"no collector available for {language} here"
    result = sandbox.exec(shlex.join(command), timeout=timeout)
    if result.timed_out:
        return None, f"{command[0]} collection timed out after {timeout}s"
    if language == "python":
        summary = re.search(r"(\d+) tests? collected", result.stdout) or re.search(
            r"^(\d+) tests?", result.stdout, re.M
        )
        ids = [line for line in result.stdout.splitlines() if "::" in line]
        if result.exit_code == 0 and (summary or ids):
            return (int(summary[1]) if summary else len(ids)), "pytest --collect-only"
        output = result.stdout.strip().splitlines() or result.stderr.strip().splitlines() or ["no output"]
        return None, f"pytest collection failed ({output[-1][:120]})"
    if result.exit_code == 0:
        return sum(1 for line in result.stdout.splitlines() if line.startswith("Test")), "go test -list"
    return None, "go test -list failed"


def collect_at(repo: GitRepo, commit: str, language: str, timeout: int) -> tuple[int | None, str]:
    """`collect_tests` in a local sandbox holding `commit`: the network off, the host read-only, as
    every other command HarnessForge runs in a checkout (one isolation path)."""
    if collector(language) is None:  # nothing to run: no workspace to build
        return None, f"no collector available for {language} here"
    spec = SandboxSpec(repo.path, commit, env=COLLECT_ENV, limits=Limits(exec_timeout_s=timeout))
    try:
        with LocalSandbox(spec) as sandbox:
            return collect_tests(sandbox, language, timeout)
    except (EnvError, RepoError) as e:
        return None, f"no sandbox to collect in ({str(e).splitlines()[0][:120]})"


def static_test_count(repo: GitRepo, rev: str, language: str, classify: FileClassifier) -> int:
    pattern = STATIC_TEST_PATTERNS.get(language)
    if not pattern:
        return 0
    exts = LANGUAGE_EXTENSIONS[language]
    out = repo.run("grep", "-z", "-c", "-E", "-e", pattern, rev, "--", *[f"*{e}" for e in exts], check=False)
    total = 0
    for line in out.splitlines():
        name, _, n = line.rpartition(b"\0")
        path = name.split(b":", 1)[-1].decode("utf-8", "replace")
        if language in ("go", "rust") or classify.is_test(path):
            total += int(n or 0)
    return total


def screen_repository(
    repo: GitRepo, spec: RepoSpec, rules: Rules, github=None, collect: bool = True
) -> ScreeningReport:
    r = rules.screening
    head = repo.head()
    files = repo.files(head)
    times = repo.commit_times(head)
    newest = max(times)
    criteria: list[Criterion] = []

    ci = [f for f in files if any(fnmatchcase(f, p) for p in CI_PATTERNS)]
    criteria.append(
        _criterion(
            "ci_config",
            ci,
            ">= 1 CI config file",
            bool(ci),
            f"found {', '.join(ci[:5])}" if ci else "no CI configuration found",
        )
    )

    loc = language_loc(repo, head, files)
    primary = next(iter(loc), None)
    criteria.append(
        _criterion(
            "primary_language",
            primary,
            f"one of {', '.join(r.languages)}",
            primary in r.languages,
            f"{primary} has the most lines ({loc.get(primary, 0)})"
            if primary
            else "no source files in a known language",
            method=", ".join(f"{k}={v}" for k, v in loc.items()),
        )
    )

    count, method = None, ""
    if primary and collect:
        count, method = collect_at(repo, head, primary, r.collect_timeout_s)
    if count is None and primary:
        count = static_test_count(repo, head, primary, FileClassifier(rules.planning))
        method = f"static count of test declarations ({method or 'collection disabled'})"
    count = count or 0
    criteria.append(
        _criterion(
            "test_count",
            count,
            f">= {r.min_tests}",
            count >= r.min_tests,
            f"{count} tests {'collected' if 'static' not in method else 'declared'}",
            method,
        )
    )

    since = newest - timedelta(days=r.recent_window_days)
    recent = sum(1 for t in times if t >= since)
    criteria.append(
        _criterion(
            "recent_commits",
            recent,
            f">= {r.min_recent_commits} in the {r.recent_window_days} days before the newest commit",
            recent >= r.min_recent_commits,
            f"{recent} commits since {since:%Y-%m-%d}",
        )
    )

    core = loc.get(primary, 0) if primary else 0
    criteria.append(
        _criterion(
            "core_loc",
            core,
            f"{r.min_loc}..{r.max_loc} lines of {primary or 'code'}",
            r.min_loc <= core <= r.max_loc,
            f"{core} lines of {primary or 'code'}",
        )
    )

    mainline = repo.text("rev-list", "--first-parent", "--reverse", head).split()
    releases, _ = find_releases(repo, repo.tags(), mainline, rules.planning.skip_prereleases)
    criteria.append(
        _criterion(
            "release_tags",
            len(releases),
            f">= {r.min_release_tags} release tags",
            len(releases) >= r.min_release_tags,
            f"{len(releases)} releases" + (f" ({releases[0].tag} .. {releases[-1].tag})" if releases else ""),
        )
    )

    locks = [f for f in files if f.rsplit("/", 1)[-1] in LOCKFILES and not VENDORED.search(f)]
    pins = [
        f
        for f in files
        if re.match(r"^(requirements[\w.-]*|constraints)\.txt$", f.rsplit("/", 1)[-1])
        and b"==" in (repo.show(head, f) or b"")
    ]
    found = locks + pins
    criteria.append(
        _criterion(
            "lockfile",
            found,
            ">= 1 lockfile or pinned requirements file",
            bool(found),
            f"found {', '.join(found[:5])}" if found else "no lockfile or pinned requirements",
        )
    )

    criteria.append(
        _criterion(
            "environment_builds",
            "unknown",
            "the repo image builds and tests run",
            None,
            "decided by the environments stage (`harnessforge env build`)",
        )
    )

    meta: GitHubMeta | None = None
    if github is not None and spec.github:
        meta = github.repo_meta(spec.github)
    return ScreeningReport(
        repo=spec,
        head_commit=head,
        head_date=newest,
        primary_language=primary,
        newest_release=releases[-1].tag if releases else None,
        criteria=criteria,
        github=meta,
        provenance=Provenance(rules_hash=rules.hash),
    )


def screen(
    store: Store, arg: "str | RepoSpec", rules: Rules, github_factory=None, collect: bool = True, progress=None
) -> ScreeningReport:
    """Resolve, clone (or fetch), screen and save `repos/<key>/screening.json`."""
    spec = spec_for(store, arg)
    repo = open_repo(store, spec, progress=progress)
    github = github_factory(spec) if github_factory else None
    report = screen_repository(repo, spec, rules, github=github, collect=collect)
    if store.has_images(spec.key):  # environments were built: keep that verdict
        from ..envs.environment import environment_criterion

        built = environment_criterion(store.load_images(spec.key))
        report.criteria = [built if c.name == built.name else c for c in report.criteria]
    store.save_screening(report)
    return report
