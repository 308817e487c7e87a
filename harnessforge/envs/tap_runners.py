"""The TAP runners: ava, node's own runner, tape, node-tap and mocha all speak TAP (the Test Anything Protocol).

Each file runs on its own, into its own report, so every id knows its file without trusting a title
prefix. Ids are `<file>::<title>`, nested tests `<file>::<parent> > <child>`, as the planner names JS
tests.
"""

from __future__ import annotations

import re

from ..models.env import TestStatus
from .runner_spec import PLUGIN_DIR, RESULTS_DIR, RunnerSpec, in_process, merge_status, quoted, unique

TAP_FILES = "tap-files.tsv"  # `<n>\t<file>` per test file run; its report is tap-<n>.txt
TAP_DONE = "tap-done"  # written after the last file: the suite ran to its end
# Test files when neither the ids nor $HF_TEST_FILES (the test script's own globs) name them: each runner's defaults.
_JS_TEST = r"\.(c|m)?(j|t)sx?$"
_TAP_DEFAULT_FILES = {
    "ava": r"(^|/)(test|tests|__tests__)/.*{ext}|(^|/)test-[^/]*{ext}|\.(spec|test){ext}|^((src|source)/)?test{ext}",
    "node": r"(^|/)test/.*{ext}|(^|/)test{ext}|[._-]test{ext}|(^|/)test-[^/]*{ext}",
    "tape": r"^test/[^/]*{ext}",
    "tap": r"(^|/)(test|tests|__tests__)/.*{ext}|\.(test|spec){ext}|^tests?{ext}",
    "mocha": r"^test/[^/]*\.(c|m)?js$",
}
_TAP_SKIP_FILES = r"(^|/)(node_modules|fixtures|helpers|tap-snapshots|_[^/]*)(/|$)|\.d\.ts$"
# The runner's own options never reach the program under test (`runner_spec.in_process`): node's runner and ava run
# each file in a process or worker of its own; a tape file is a program that prints TAP; mocha runs in process, and
# exits when its tests end (`--exit`, as most projects' own test scripts say): a handle a test leaves open (multer's
# busboy streams) would otherwise hold the run until the sandbox's timeout.
_TAP_RUN = {
    "ava": 'npx --no-install ava --tap "$f"',
    "node": 'node "${req[@]}" --test --test-reporter=tap "$f"',
    "tape": 'node "${req[@]}" "$f"',
    "tap": 'node "${req[@]}" "$f"',  # a node-tap file prints TAP when node runs it
    "mocha": in_process(
        "mocha", "mocha/lib/cli/cli", "main", "{out}", test_frame=r"/[\\/]mocha[\\/]lib[\\/]runnable\.js/"
    )
    + ' "${req[@]}" --reporter tap --exit "$f"',
}
_TAP_POINT = re.compile(
    r"^(\s*)(not ok|ok)\b\s*(?:\d+)?\s*(?:-\s+)?(.*?)(?:\s+#\s*(SKIP|TODO)\b.*|\s+#\s*time=\S+)?$", re.I
)  # (node-tap ends a point with its `# time=4.8ms`)
_TAP_SUBTEST = re.compile(r"^(\s*)# Subtest: (.*)$")
_TAP_PLAN = re.compile(r"^\s*1\.\.(\d+)")
# ava's own points for a file that failed outside any test (an import error, an uncaught exception).
_AVA_UNCAUGHT = re.compile(
    r"exited with a non-zero exit code|^file://|^Uncaught exception|^Unhandled rejection|timed out"
)


class TapRunner(RunnerSpec):
    """One TAP report per test file (tap-<n>.txt, listed in tap-files.tsv); `groups`: tape's assertions are
    grouped under the `# name` comment of their test; `subtest_tests`: node-tap's assertions are points inside the
    subtest (`t.test(name)`) that is the test; the others report one point per test."""

    report = TAP_FILES
    groups = False
    subtest_tests = False

    def command(self, test_ids: list[str], out_dir: str = RESULTS_DIR, plugin_dir: str = PLUGIN_DIR) -> str:
        out = out_dir.rstrip("/") or "/"
        if test_ids:
            listing = "printf '%s\\n' " + quoted(*unique(self.file_of(test_id) for test_id in test_ids))
        else:
            pattern = _TAP_DEFAULT_FILES[self.name].format(ext=_JS_TEST)
            listing = (
                'if [ -n "${HF_TEST_FILES:-}" ]; then for g in $HF_TEST_FILES; do for f in $g; do '
                '[ -d "$f" ] && git ls-files -co --exclude-standard -- "$f" || echo "$f"; done; done; '
                f"else git ls-files -co --exclude-standard | grep -E {quoted(pattern)}; fi "
                f"| grep -E {quoted(_JS_TEST)} | grep -vE {quoted(_TAP_SKIP_FILES)} | sort -u"
            )
        return (
            f"mkdir -p {quoted(out)} && rm -f {quoted(out)}/tap-* && shopt -s globstar nullglob && "
            'req=(); for m in ${HF_TEST_REQUIRE:-}; do req+=(-r "$m"); done; '
            # The listing comes in on fd 3: a test reading stdin must not eat the file names.
            "n=0; rc=0; while IFS= read -r f <&3; do n=$((n+1)); "
            f'printf \'%s\\t%s\\n\' "$n" "$f" >> {quoted(out)}/{TAP_FILES}; '
            f"{_TAP_RUN[self.name].replace('{out}', out)} > {quoted(out)}/tap-$n.txt < /dev/null || rc=1; "
            f"done 3< <({listing}); "
            f"touch {quoted(out)}/{TAP_DONE}; exit $rc"
        )

    def parse(self, files, exit_code, log):
        """The run, with what each failing test said under its point (mocha's message, the YAML block of tape, node
        and ava), its stack left out."""
        run = super().parse(files, exit_code, log)
        messages: dict[str, str] = {}
        for line in files.get(TAP_FILES, "").splitlines():
            number, _, path = line.partition("\t")
            said: dict[str, str] = {}
            report = files.get(f"tap-{number}.txt", "")
            parse_tap(report, path, self.groups, self.name == "ava", self.subtest_tests, said)
            messages.update({f"{path}::{name}": text for name, text in said.items()})
        return run.model_copy(update={"messages": messages})

    def _parse(self, files, log):
        statuses: dict[str, TestStatus] = {}
        errors: list[str] = []
        for line in files.get(TAP_FILES, "").splitlines():
            number, _, path = line.partition("\t")
            report = files.get(f"tap-{number}.txt", "")
            found, failed_outside = parse_tap(
                report, path, grouped=self.groups, uncaught=self.name == "ava", subtest_tests=self.subtest_tests
            )
            for name, status in found.items():
                merge_status(statuses, f"{path}::{name}", status)
            if failed_outside or not found:
                errors.append(path)  # the file did not load, or failed outside its tests
        return statuses, errors, TAP_DONE in files


def parse_tap(
    text: str,
    path: str,
    grouped: bool,
    uncaught: bool,
    subtest_tests: bool = False,
    said: dict[str, str] | None = None,
) -> tuple[dict[str, TestStatus], bool]:
    """(title -> status, whether the file failed outside its tests) from one file's TAP stream; into `said`, what
    each failing test said in the lines under its point (`_message`).

    YAML diagnostics (`---` ... `...`) are no points whatever they hold; only leaf points are tests (node
    reports each describe block as a point of its own, and node 18 the file itself). With `subtest_tests`
    (node-tap) a leaf point is an assertion of the subtests around it: they are the test."""
    statuses: dict[str, TestStatus] = {}
    outside = False
    subtests: dict[int, str] = {}  # indent -> name of the subtest opened there
    parents: set[int] = set()  # indents whose next point closes a subtest that had points inside
    in_yaml, plan_seen, planned, group = None, False, None, None
    speaking: tuple[str, int, list[str]] | None = None  # a failed test, its point's indent, the lines under it
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if speaking is not None and line.strip() and (indent > speaking[1] or in_yaml is not None):
            if not _TAP_POINT.match(line) and not _TAP_SUBTEST.match(line):
                speaking[2].append(line.strip())
        elif speaking is not None and line.strip():
            if said is not None and speaking[0] not in said and (message := _message(speaking[2])):
                said[speaking[0]] = message
            speaking = None
        if in_yaml is not None:
            if line.strip() == "..." and indent <= in_yaml + 2:
                in_yaml = None
            continue
        if line.strip() == "---":
            in_yaml = indent
            continue
        if line.lstrip().startswith("Bail out!"):
            outside = True
            break
        if (plan := _TAP_PLAN.match(line)) and indent == 0:
            plan_seen, planned = True, int(plan[1])
            continue
        if subtest := _TAP_SUBTEST.match(line):
            subtests[len(subtest[1])] = subtest[2].strip()
            continue
        if grouped and indent == 0 and line.startswith("# ") and not plan_seen:
            group = line[2:].strip()
            if group.startswith("SKIP "):
                statuses.setdefault(group[5:], "skipped")
                group = None
            continue
        point = _TAP_POINT.match(line)
        if not point:
            continue
        ok, title, directive = point[2].lower() == "ok", point[3].strip(), (point[4] or "").upper()
        status: TestStatus = "skipped" if directive == "SKIP" or (directive == "TODO" and not ok) else "passed"
        status = status if ok or status == "skipped" else "failed"
        level = len(point[1])
        if level in parents:  # a describe block or a file wrapper: its children were the tests
            parents.discard(level)
            continue
        parents.update(depth for depth in subtests if depth < level)
        names = [subtests[depth] for depth in sorted(subtests) if depth < level]
        names = [name for name in names if not _is_file(name, path)]
        if _is_file(title, path) and not names:
            outside = outside or status == "failed"
            continue
        if uncaught and _AVA_UNCAUGHT.search(title):
            outside = outside or status == "failed"
            continue
        if grouped:
            if group is None:
                continue
            name = group
        elif subtest_tests and names and subtests.get(level) != title:  # an assertion of the subtests around it
            name = " > ".join(names)
        else:
            name = " > ".join([*names, title])
        merge_status(statuses, name, status)
        speaking = (name, level, []) if status == "failed" else None
        for depth in [depth for depth in subtests if depth >= level]:
            del subtests[depth]
    if speaking is not None and said is not None and speaking[0] not in said and (message := _message(speaking[2])):
        said[speaking[0]] = message
    if uncaught and planned == 0:  # ava ran no test of the file: what it reported were load errors
        return {}, outside or any(status == "failed" for status in statuses.values())
    return statuses, outside


_STACK = re.compile(r"^(?:stack|at|location):|^at\s|^\^")
_NOISE = re.compile(r"^(?:---|\.\.\.|duration_ms:|failureType:|type:|code:\s*'?ERR_TEST_FAILURE)")


def _message(lines: list[str]) -> str:
    """What a failing point's lines say: up to the first stack frame (`at ...`, a YAML `stack:` or `at:`)."""
    kept: list[str] = []
    for line in lines:
        if _STACK.match(line):
            break
        if not _NOISE.match(line):
            kept.append(line)
    return "\n".join(kept)


def _is_file(title: str, path: str) -> bool:
    """node 18 wraps each file's tests in a subtest named by the file's path (as given, or absolute)."""
    return title == path or title.endswith("/" + path)


class AvaRunner(TapRunner):
    name = "ava"


class NodeTestRunner(TapRunner):
    name = "node"


class TapeRunner(TapRunner):
    name = "tape"
    groups = True


class NodeTapRunner(TapRunner):
    name = "tap"
    subtest_tests = True


class MochaRunner(TapRunner):
    name = "mocha"


TAP_RUNNERS: tuple[RunnerSpec, ...] = (AvaRunner(), NodeTestRunner(), TapeRunner(), NodeTapRunner(), MochaRunner())
