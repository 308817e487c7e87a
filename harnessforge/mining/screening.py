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
from ..rules import Rules, ScreeningRules
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
    """Test declarations in the tree at `rev` (test files only, except in Go and Rust)."""
    pattern = STATIC_TEST_PATTERNS.get(language)
    if not pattern:
        return 0
    globs = [f"*{extension}" for extension in LANGUAGE_EXTENSIONS[language]]
    counts = repo.run("grep", "-z", "-c", "-E", "-e", pattern, rev, "--", *globs, check=False)
    total = 0
    for line in counts.splitlines():
        name, _, count = line.rpartition(b"\0")
        path = name.split(b":", 1)[-1].decode("utf-8", "replace")
        if language in ("go", "rust") or classify.is_test(path):
            total += int(count or 0)
    return total


def _ci_config(files: list[str]) -> Criterion:
    found = [path for path in files if any(fnmatchcase(path, pattern) for pattern in CI_PATTERNS)]
    reason = f"found {', '.join(found[:5])}" if found else "no CI configuration found"
    return _criterion("ci_config", found, ">= 1 CI config file", bool(found), reason)


def _primary_language(loc: dict[str, int], primary: str | None, thresholds: ScreeningRules) -> Criterion:
    reason = (
        f"{primary} has the most lines ({loc.get(primary, 0)})" if primary else "no source files in a known language"
    )
    return _criterion(
        "primary_language",
        primary,
        f"one of {', '.join(thresholds.languages)}",
        primary in thresholds.languages,
        reason,
        method=", ".join(f"{language}={lines}" for language, lines in loc.items()),
    )


def _test_count(repo: GitRepo, head: str, primary: str | None, rules: Rules, collect: bool) -> Criterion:
    thresholds = rules.screening
    count, method = None, ""
    if primary and collect:
        count, method = collect_at(repo, head, primary, thresholds.collect_timeout_s)
    if count is None and primary:
        count = static_test_count(repo, head, primary, FileClassifier(rules.planning))
        method = f"static count of test declarations ({method or 'collection disabled'})"
    count = count or 0
    reason = f"{count} tests {'collected' if 'static' not in method else 'declared'}"
    return _criterion("test_count", count, f">= {thresholds.min_tests}", count >= thresholds.min_tests, reason, method)


def _recent_commits(times: list, newest, thresholds: ScreeningRules) -> Criterion:
    since = newest - timedelta(days=thresholds.recent_window_days)
    recent = sum(1 for time in times if time >= since)
    return _criterion(
        "recent_commits",
        recent,
        f">= {thresholds.min_recent_commits} in the {thresholds.recent_window_days} days before the newest commit",
        recent >= thresholds.min_recent_commits,
        f"{recent} commits since {since:%Y-%m-%d}",
    )


def _core_loc(loc: dict[str, int], primary: str | None, thresholds: ScreeningRules) -> Criterion:
    core = loc.get(primary, 0) if primary else 0
    return _criterion(
        "core_loc",
        core,
        f"{thresholds.min_loc}..{thresholds.max_loc} lines of {primary or 'code'}",
        thresholds.min_loc <= core <= thresholds.max_loc,
        f"{core} lines of {primary or 'code'}",
    )


def _release_tags(releases: list, thresholds: ScreeningRules) -> Criterion:
    span = f" ({releases[0].tag} .. {releases[-1].tag})" if releases else ""
    return _criterion(
        "release_tags",
        len(releases),
        f">= {thresholds.min_release_tags} release tags",
        len(releases) >= thresholds.min_release_tags,
        f"{len(releases)} releases{span}",
    )


def _lockfile(repo: GitRepo, head: str, files: list[str]) -> Criterion:
    locks = [path for path in files if path.rsplit("/", 1)[-1] in LOCKFILES and not VENDORED.search(path)]
    pins = [
        path
        for path in files
        if re.match(r"^(requirements[\w.-]*|constraints)\.txt$", path.rsplit("/", 1)[-1])
        and b"==" in (repo.show(head, path) or b"")
    ]
    found = locks + pins
    reason = f"found {', '.join(found[:5])}" if found else "no lockfile or pinned requirements"
    return _criterion("lockfile", found, ">= 1 lockfile or pinned requirements file", bool(found), reason)


def _environment_builds() -> Criterion:
    """Unknown until the environments stage has built the repo's images (see `screen`)."""
    return _criterion(
        "environment_builds",
        "unknown",
        "the repo image builds and tests run",
        None,
        "decided by the environments stage (`harnessforge env build`)",
    )


def screen_repository(
    repo: GitRepo, spec: RepoSpec, rules: Rules, github=None, collect: bool = True
) -> ScreeningReport:
    """Every criterion measured on the repository's newest commit, in the order reports show them."""
    thresholds = rules.screening
    head = repo.head()
    files = repo.files(head)
    times = repo.commit_times(head)
    newest = max(times)
    loc = language_loc(repo, head, files)
    primary = next(iter(loc), None)
    mainline = repo.text("rev-list", "--first-parent", "--reverse", head).split()
    releases, _ = find_releases(repo, repo.tags(), mainline, rules.planning.skip_prereleases)
    criteria = [
        _ci_config(files),
        _primary_language(loc, primary, thresholds),
        _test_count(repo, head, primary, rules, collect),
        _recent_commits(times, newest, thresholds),
        _core_loc(loc, primary, thresholds),
        _release_tags(releases, thresholds),
        _lockfile(repo, head, files),
        _environment_builds(),
    ]
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
        report.criteria = [built if criterion.name == built.name else criterion for criterion in report.criteria]
    store.save_screening(report)
    return report
