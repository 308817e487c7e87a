"""Malformed inputs for every command and every file a user writes or points at: each is one line on
stderr naming the input (the file, the option or the value), a non-zero exit (2 for a usage error
typer catches, 1 for ours), never a traceback."""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from harnessforge.distill import distill
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import craft

RUN = "trajectories/acme__app/efficient_path/m01"  # a finished milestone run of the distilled store
NON_UTF8 = b"\xff\xfe\x00 not text"


@dataclass
class Ctx:
    tmp: Path
    store: Path
    key: str
    repo: Path

    def fmt(self, text: str) -> str:
        return text.format(tmp=self.tmp, store=self.store, key=self.key, repo=self.repo, run=self.store / RUN)


def put(where: str, data: bytes | str | None = None):
    """A setup step: write `data` at `where` (placeholders allowed); None makes a directory there."""

    def setup(ctx: Ctx) -> None:
        path = Path(ctx.fmt(where))
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            path.mkdir()
        else:
            path.write_bytes(data.encode() if isinstance(data, str) else data)

    return setup


def edit_json(where: str, change):
    def setup(ctx: Ctx) -> None:
        path = Path(ctx.fmt(where))
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return setup


PLAN = "{store}/repos/{key}/plan.json"
RULES_CASES = [
    # (id, rules file content (None: a directory, absent: missing), fragment)
    ("rules-missing", "absent", "rules file {tmp}/r.yaml does not exist"),
    ("rules-directory", None, "rules file {tmp}/r.yaml cannot be read: Is a directory"),
    ("rules-bad-yaml", "planning: [\n", "rules file {tmp}/r.yaml is not valid YAML: expected the node content"),
    ("rules-not-a-mapping", "- 1\n- 2\n", "rules file {tmp}/r.yaml must be a mapping"),
    ("rules-unknown-key", "screening:\n  nope: 1\n", "rules file {tmp}/r.yaml: screening.nope: Extra inputs"),
    ("rules-negative", "screening:\n  min_tests: -3\n", "r.yaml: screening.min_tests: Input should be greater"),
    ("rules-wrong-type", "harness:\n  max_turns: many\n", "r.yaml: harness.max_turns: Input should be a valid int"),
    ("rules-bad-enum", "distill:\n  hint_in_prompt: maybe\n", "r.yaml: distill.hint_in_prompt: Input should be"),
    ("rules-not-utf8", NON_UTF8, "rules file {tmp}/r.yaml is not UTF-8 text (byte 0xff at offset 0)"),
    # the Mentor's ladder profile, hint framings and stuck phrases name their rules key
    (
        "rules-unknown-ladder",
        "harness:\n  mentor:\n    ladder: seed999\n",
        "r.yaml: harness.mentor.ladder: Input should be",
    ),
    (
        "rules-bad-framing-placeholder",
        "harness:\n  mentor:\n    framings:\n      mine:\n        2: 'see {file}: {hint}'\n",
        "r.yaml: harness.mentor.framings: Value error, framings.mine.2: bad placeholder 'file'",
    ),
    (
        "rules-unknown-framing",
        "harness:\n  mentor:\n    framing: shouty\n",
        "r.yaml: harness.mentor: Value error, framing 'shouty' is not one of framings: mentor, plain",
    ),
    (
        "rules-bad-stuck-phrase",
        "harness:\n  mentor:\n    stuck_phrases: ['(unclosed']\n",
        "r.yaml: harness.mentor.stuck_phrases: Value error, stuck phrase '(unclosed' is not a regular expression",
    ),
    # the planning granularity (a milestone per feature or per PR) and its per-PR size rules
    (
        "rules-unknown-granularity",
        "planning:\n  granularity: commit\n",
        "r.yaml: planning.granularity: Input should be",
    ),
    (
        "rules-per-pr-bounds",
        "planning:\n  per_pr:\n    min_lines: 500\n    max_lines: 100\n",
        "r.yaml: planning.per_pr: Value error, per_pr.min_lines (500) exceeds per_pr.max_lines (100)",
    ),
    (
        "rules-bad-test-file-edits",
        "harness:\n  test_file_edits: ask\n",
        "r.yaml: harness.test_file_edits: Input should be",
    ),
]
CANDIDATES_CASES = [
    ("candidates-missing", "absent", "candidates file {tmp}/c.yaml does not exist"),
    ("candidates-directory", None, "candidates file {tmp}/c.yaml cannot be read: Is a directory"),
    ("candidates-bad-yaml", "candidates: [\n", "candidates file {tmp}/c.yaml is not valid YAML"),
    ("candidates-wrong-shape", "candidates: 5\n", "c.yaml: candidates: Input should be a valid list"),
    ("candidates-unknown-key", "repos: [a/b]\n", "c.yaml: candidates: Field required (expected `candidates: ["),
    ("candidates-empty", "", "c.yaml: candidates: Field required"),
    ("candidates-not-utf8", NON_UTF8, "candidates file {tmp}/c.yaml is not UTF-8 text"),
]


def steps(*setups):
    return lambda ctx: [setup(ctx) for setup in setups]


def file_at(name: str, content):
    return None if content == "absent" else put("{tmp}/" + name, content)


CASES = [
    # (id, store: empty | planned | distilled, setup, args, exit code, fragment)
    *[
        (i, "empty", file_at("r.yaml", c), ("--rules", "{tmp}/r.yaml", "plan", "{repo}"), 1, f)
        for i, c, f in RULES_CASES
    ],
    *[
        (i, "empty", file_at("c.yaml", c), ("screen", "--candidates", "{tmp}/c.yaml"), 1, f)
        for i, c, f in CANDIDATES_CASES
    ],
    # options and arguments typer checks (usage errors: exit 2)
    ("unknown-command", "empty", None, ("nope",), 2, "No such command 'nope'"),
    ("missing-argument", "empty", None, ("show",), 2, "harnessforge show: Missing argument 'repo_key'"),
    ("missing-option", "empty", None, ("export",), 2, "harnessforge export: Missing option '--out'"),
    (
        "sandbox-enum",
        "planned",
        None,
        ("validate", "{key}", "--sandbox", "xyz"),
        2,
        "Invalid value for '--sandbox': 'xyz': use docker, local or auto",
    ),
    (
        "granularity-enum",
        "empty",
        None,
        ("plan", "{repo}", "--granularity", "commit"),
        2,
        "Invalid value for '--granularity': 'commit': use feature or pr",
    ),
    ("demo-sandbox-enum", "empty", None, ("demo", "--sandbox", "xyz"), 2, "'--sandbox': 'xyz'"),
    ("workers-zero", "planned", None, ("run", "{key}", "--workers", "0"), 2, "Invalid value for '--workers'"),
    ("repeats-negative", "planned", None, ("validate", "{key}", "--repeats", "-1"), 2, "'--repeats'"),
    ("workers-not-a-number", "planned", None, ("run", "{key}", "--workers", "two"), 2, "Invalid value for '--workers'"),
    ("patch-missing", "planned", None, ("grade", "{key}", "m02", "{tmp}/x.patch"), 2, "file '{tmp}/x.patch' does not"),
    (
        "patch-directory",
        "planned",
        put("{tmp}/x.patch"),
        ("grade", "{key}", "m02", "{tmp}/x.patch"),
        2,
        "file '{tmp}/x.patch' is a directory",
    ),
    # values we check
    (
        "export-format",
        "distilled",
        None,
        ("export", "--format", "xyz", "--out", "{tmp}/o"),
        1,
        "unknown export format(s) xyz",
    ),
    ("agent-name", "planned", None, ("run", "{key}", "--agent", "xyz"), 1, "unknown agent 'xyz'"),
    ("pm-agent-name", "empty", None, ("plan", "{repo}", "--pm", "xyz"), 1, "unknown agent 'xyz'"),
    ("judge-agent-name", "distilled", None, ("distill", "--judge", "xyz"), 1, "unknown agent 'xyz'"),
    ("profile-format", "planned", None, ("run", "{key}", "--profile", "m02"), 1, "--profile 'm02': expected MID="),
    (
        "run-milestone-unknown",
        "planned",
        None,
        ("run", "{key}", "--milestones", "m02,m99", "--sandbox", "local"),
        1,
        "--milestones: m99 name no milestone of {key} (it has m01..m",
    ),
    (
        "profile-milestone-unknown",
        "planned",
        None,
        ("run", "{key}", "--profile", "m98=direct", "--sandbox", "local"),
        1,
        "--profile: m98 name no milestone of {key}",
    ),
    ("language-name", "empty", None, ("env", "bootstrap-base", "--language", "cobol"), 1, "unknown language 'cobol'"),
    (
        "patch-not-a-diff",
        "planned",
        put("{tmp}/x.patch", "please fix it\n"),
        ("grade", "{key}", "m02", "{tmp}/x.patch"),
        1,
        "patch file {tmp}/x.patch: no `diff --git` section",
    ),
    # repository arguments
    ("repo-path-missing", "empty", None, ("plan", "{tmp}/nope"), 1, "'{tmp}/nope' is not a local git repository"),
    ("repo-not-a-spec", "empty", None, ("add", "a/b/c"), 1, "'a/b/c' is not a local git repository"),
    (
        "repo-key-unknown",
        "planned",
        None,
        ("validate", "acme__nope"),
        1,
        "no repository is registered under key 'acme__nope'",
    ),
    ("env-build-key-unknown", "planned", None, ("env", "build", "acme__nope"), 1, "under key 'acme__nope'"),
    ("screen-one-bad-repo", "empty", None, ("screen", "{tmp}/nope"), 1, "'{tmp}/nope' is not a local git"),
    ("ref-unknown", "empty", None, ("plan", "{repo}", "--from", "v9.9"), 1, "'v9.9' is not a commit, tag or branch"),
    (
        "milestone-unknown",
        "planned",
        None,
        ("validate", "{key}", "--milestone", "m99", "--sandbox", "local"),
        1,
        "has no milestone 'm99'",
    ),
    # the store's files, hand-edited or damaged
    ("plan-not-json", "planned", put(PLAN, '{"repo": '), ("show", "{key}"), 1, f"{PLAN}: not valid JSON"),
    ("plan-empty", "planned", put(PLAN, ""), ("show", "{key}"), 1, f"{PLAN}: not valid JSON"),
    ("plan-not-utf8", "planned", put(PLAN, NON_UTF8), ("show", "{key}"), 1, f"{PLAN}: not valid JSON"),
    ("plan-directory", "planned", put(PLAN), ("show", "{key}"), 1, f"{PLAN}: cannot be read (Is a directory)"),
    (
        "plan-wrong-value",
        "planned",
        edit_json(PLAN, lambda d: d["milestones"][0].update(difficulty=-1)),
        ("show", "{key}"),
        1,
        f"{PLAN}: invalid MilestonePlan: milestones.0.difficulty: Input should be greater",
    ),
    (
        "plan-unknown-key",
        "planned",
        edit_json(PLAN, lambda d: d.update(bogus=1)),
        ("show", "{key}"),
        1,
        f"{PLAN}: invalid MilestonePlan: bogus: Extra inputs are not permitted",
    ),
    (
        "repo-spec-damaged",
        "planned",
        put("{store}/repos/{key}/repo.json", "{"),
        ("validate", "{key}"),
        1,
        "{store}/repos/{key}/repo.json: not valid JSON",
    ),
    (
        "validation-bad-enum",
        "planned",
        steps(
            put("{store}/repos/{key}/milestones/m02/validation.json", '{"milestone_id": "m02", "status": "maybe"}'),
            put("{tmp}/x.patch", ""),
        ),
        ("grade", "{key}", "m02", "{tmp}/x.patch"),
        1,
        "m02/validation.json: invalid Validation: status: Input should",
    ),
    (
        "images-damaged",
        "planned",
        put("{store}/images/{key}.json", "nope"),
        ("validate", "{key}", "--milestone", "m02", "--sandbox", "docker"),
        1,
        "{store}/images/{key}.json: not valid",
    ),
    (
        "summary-damaged",
        "distilled",
        put("{run}/summary.json", "{"),
        ("view", "{run}"),
        1,
        "{run}/summary.json: not valid JSON",
    ),
    (
        "trajectory-damaged",
        "distilled",
        put("{run}/trajectory.jsonl", "garbage\n{}\n"),
        ("view", "{run}"),
        1,
        "{run}/trajectory.jsonl:1: not valid JSON",
    ),
    ("view-not-a-run", "distilled", None, ("view", "{store}"), 1, "{store}: not a finished milestone run"),
    (
        "view-out-directory",
        "distilled",
        put("{tmp}/v.html"),
        ("view", "{run}", "--out", "{tmp}/v.html"),
        1,
        "{tmp}/v.html: Is a directory",
    ),
    (
        "distill-run-metadata-damaged",
        "distilled",
        put("{run}/../metadata.json", "{"),
        ("distill",),
        1,
        "efficient_path/metadata.json: not valid JSON",
    ),
    (
        "distill-summary-damaged",
        "distilled",
        put("{run}/summary.json", "[1]"),
        ("distill",),
        1,
        "m01/summary.json: expected a JSON object, got list",
    ),
    (
        "analytics-db-damaged",
        "distilled",
        put("{store}/analytics/harnessforge.duckdb", "not a database"),
        ("report",),
        1,
        "{store}/analytics/harnessforge.duckdb: the analytics database is damaged",
    ),
    (
        "manifest-damaged",
        "distilled",
        put("{store}/distilled/manifest.json", "{"),
        ("export", "--out", "{tmp}/o"),
        1,
        "{store}/distilled/manifest.json: not valid JSON",
    ),
    (
        "distilled-row-damaged",
        "distilled",
        put("{store}/distilled/reviews.jsonl", '{"repo": 1}\n'),
        ("export", "--out", "{tmp}/o"),
        1,
        "{store}/distilled/reviews.jsonl:1: invalid Review",
    ),
    ("task-cards-missing", "empty", None, ("verify-tasks",), 1, "no task cards yet; run `harnessforge distill`"),
    # output paths
    (
        "export-out-is-a-file",
        "distilled",
        put("{tmp}/o", "x"),
        ("export", "--out", "{tmp}/o"),
        1,
        "{tmp}/o: exists and is not a directory",
    ),
    (
        "schema-out-is-a-file",
        "empty",
        put("{tmp}/o", "x"),
        ("schema", "--out", "{tmp}/o"),
        1,
        "{tmp}/o: exists and is not a directory",
    ),
    (
        "example-repo-not-empty",
        "empty",
        put("{tmp}/ex/f", "x"),
        ("example-repo", "{tmp}/ex"),
        1,
        "{tmp}/ex already exists and is not empty",
    ),
]


@pytest.fixture(scope="module")
def distilled_store(tmp_path_factory) -> Path:
    """Crafted runs, distilled (read-only: each case works on a copy)."""
    store = Store(tmp_path_factory.mktemp("distilled") / "store")
    craft(store)
    distill(store, load_rules(), log=lambda *_: None)
    return store.root


@pytest.mark.parametrize("kind, setup, args, code, fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_input_is_one_line_naming_it(
    run_cli, tmp_path, planned, distilled_store, example_repo, kind, setup, args, code, fragment
):
    store = tmp_path / "store"
    if kind == "planned":
        shutil.copytree(planned[0].root, store)
    elif kind == "distilled":
        shutil.copytree(distilled_store, store)
    ctx = Ctx(tmp_path / "case", store, planned[1].plan.repo.key, example_repo)
    ctx.tmp.mkdir()
    if setup:
        setup(ctx)
    proc = run_cli(*(ctx.fmt(a) for a in args), store=store, env={"HARNESSFORGE_RULES": ""})
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.splitlines()
    assert proc.returncode == code and len(lines) == 1, proc.stderr
    assert ctx.fmt(fragment) in lines[0]
    assert lines[0].startswith("error: ")


def test_rules_named_by_the_environment_variable(run_cli, tmp_path, example_repo):
    (tmp_path / "env.yaml").write_text("harness:\n  max_turns: 0\n")
    proc = run_cli("plan", str(example_repo), env={"HARNESSFORGE_RULES": str(tmp_path / "env.yaml")})
    assert proc.returncode == 1 and proc.stderr.splitlines() == [
        f"error: rules file {tmp_path / 'env.yaml'}: harness.max_turns: Input should be greater than 0"
    ]


def test_the_dagster_store_resource_names_a_bad_rules_file(tmp_path):
    from harnessforge.errors import ConfigError
    from resources.store import StoreResource

    (tmp_path / "r.yaml").write_text("environments:\n  memory: lots\n")
    resource = StoreResource(root=str(tmp_path / "store"), rules_path=str(tmp_path / "r.yaml"))
    with pytest.raises(ConfigError, match=r"r\.yaml: environments\.memory: String should match pattern"):
        resource.rules()


def test_a_damaged_clone_cache_is_cloned_again(run_cli, planned, tmp_path, example_repo):
    """The clone cache is only a cache: objects lost from it (a full disk, a bad copy) are not trusted."""
    store = tmp_path / "store"
    shutil.copytree(planned[0].root, store)
    key = planned[1].plan.repo.key
    pack = next((store / "cache" / "git" / f"{key}.git" / "objects" / "pack").glob("*.pack"))
    pack.write_bytes(pack.read_bytes()[:100])
    proc = run_cli("plan", key, store=store)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((store / "repos" / key / "plan.json").read_text())["milestones"]
