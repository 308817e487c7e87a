"""The memory between milestones: what each earlier milestone built (files and the names its added
lines declare, per language, from real git diffs), its outcome, the digest of its key errors and the
edit that fixed each, the rules' bounds; and the Navigator carrying it into the next milestone's
`milestone_start` through a real chain of the example repository (the offline oracle, local sandbox)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from harnessforge.agents.oracle import OracleAgent, task_from_patch
from harnessforge.errors import ConfigError
from harnessforge.files import FileClassifier
from harnessforge.harness.memory import FIRST, MilestoneMemory, error_text, header, key_errors, remember, render
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.models.run import MilestoneSummary
from harnessforge.models.trajectory import Action, Event, TestCounts
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import validated_copy

RULES = load_rules()
MEMORY = RULES.harness.memory
CLASSIFIER = FileClassifier(RULES.planning)


def _git(cwd, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def real_diff(tmp_path, before: dict[str, str], after: dict[str, str | None]) -> bytes:
    """`git diff --binary` of a real repository from `before` to `after` (None deletes a file)."""
    repo = tmp_path / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    for path, text in before.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", "--allow-empty")
    for path, text in after.items():
        if text is None:
            (repo / path).unlink()
        else:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--binary", "--no-renames", "--cached")


def summary(status="PASS", turns=9, hints=()) -> MilestoneSummary:
    return MilestoneSummary(run_id="r1", milestone_id="m01", status=status, turns=turns, hints_released=list(hints))


def memory_of(final: bytes, start: bytes = b"", events=(), rules=MEMORY, **fields) -> MilestoneMemory:
    return remember("m01", "Add the parser", summary(**fields), list(events), final, start, CLASSIFIER, rules)


# ---- what was built ---------------------------------------------------------------------------------
SOURCES = {
    "pkg/parse.py": (
        "import re\n\nclass Parser:\n    def feed(self, text):\n        pass\n\n"
        "async def parse_all(items):\n    return items\n"
    ),
    "server/handler.go": (
        "package server\n\ntype Handler struct {\n\tname string\n}\n\ntype Router interface {\n\tRoute()\n}\n\n"
        "func (h *Handler) Serve(w int) error {\n\treturn nil\n}\n\nfunc NewHandler() *Handler {\n\treturn nil\n}\n"
    ),
    "src/lib.rs": (
        "pub struct Config {\n    x: u8,\n}\n\npub(crate) enum Mode { A }\n\npub trait Render {}\n\n"
        "pub async fn load() {}\n\nfn helper() -> u8 {\n    1\n}\n"
    ),
    "web/app.ts": (
        "export interface Options {\n  debug: boolean\n}\n\nexport type Id = string\n\n"
        "export function start(o: Options) {\n  return o\n}\n\nexport const stop = async (id: Id) => id\n\n"
        "export class Widget {\n  render(): string {\n    if (true) {\n      return ''\n    }\n  }\n}\n"
    ),
    "web/util.js": "function legacy(a) {\n  return a\n}\nconst arrow = x => x\n",
    "lib/tool.rb": "module Tools\n  def self.run!(x)\n    x\n  end\nend\n",
    "native/sum.c": "struct pair {\n  int a;\n};\n\nstatic int sum(int a, int b)\n{\n  return a + b;\n}\n",
    "native/vec.cpp": "class Vec : public Base {\n};\n\nint Vec::size() const {\n  return count(0);\n}\n",
    "app/Main.java": "public class Main {\n  public static void main(String[] args) {\n    run(args);\n  }\n}\n",
}


SYMBOLS = {  # what each file of SOURCES declares, in order (`if` is no method, nor are calls; struct fields no types)
    "app/Main.java": ["Main", "main"],
    "lib/tool.rb": ["Tools", "run!"],
    "native/sum.c": ["pair", "sum"],
    "native/vec.cpp": ["Vec", "size"],
    "pkg/parse.py": ["Parser", "feed", "parse_all"],
    "server/handler.go": ["Handler", "Router", "Serve", "NewHandler"],
    "src/lib.rs": ["Config", "Mode", "Render", "load", "helper"],
    "web/app.ts": ["Options", "Id", "start", "stop", "Widget", "render"],
    "web/util.js": ["legacy", "arrow"],
}


def test_symbols_are_read_per_language_from_the_added_lines(tmp_path):
    memory = memory_of(real_diff(tmp_path, {}, SOURCES), rules=MEMORY.model_copy(update={"max_symbols": 100}))
    assert memory.files == sorted(SOURCES)  # git orders the sections by path
    assert memory.symbols == [name for path in sorted(SYMBOLS) for name in SYMBOLS[path]]
    assert memory.more_symbols == 0 and memory.more_files == 0


def test_a_changed_file_names_only_what_its_added_lines_declare_and_tests_are_left_out(tmp_path):
    before = {
        "pkg/parse.py": "def old():\n    return 1\n\n\ndef kept():\n    return 2\n",
        "pkg/gone.py": "def dropped():\n    pass\n",
        "tests/test_parse.py": "def test_old():\n    pass\n",
    }
    after = {
        "pkg/parse.py": "def old(strict=False):\n    return 1\n\n\ndef kept():\n    return 3\n",  # kept's body only
        "pkg/gone.py": None,
        "tests/test_parse.py": "def test_old():\n    pass\n\n\ndef test_new():\n    pass\n",
    }
    memory = memory_of(real_diff(tmp_path, before, after))
    assert (memory.files, memory.removed, memory.symbols) == (["pkg/parse.py"], ["pkg/gone.py"], ["old"])
    assert "  built: pkg/parse.py, pkg/gone.py (deleted)\n  symbols: old" in render([memory], MEMORY)


def test_work_carried_in_from_the_milestone_before_is_not_counted_again(tmp_path):
    base = {"pkg/a.py": "X = 1\n"}
    carried = {"NOTES.md": "my notes\n", "pkg/a.py": "X = 1\n\n\ndef carried():\n    pass\n"}
    start = real_diff(tmp_path / "start", base, carried)
    final = real_diff(
        tmp_path / "final",
        base,
        {**carried, "pkg/a.py": carried["pkg/a.py"] + "\n\ndef grown():\n    pass\n", "pkg/b.py": "class B: ...\n"},
    )
    memory = memory_of(final, start)
    assert memory.files == ["pkg/a.py", "pkg/b.py"]  # NOTES.md came unchanged from the milestone before
    assert memory.symbols == ["grown", "B"]  # `carried` was built then, not now


def test_files_and_symbols_are_bounded_by_the_rules(tmp_path):
    sources = {f"pkg/m{n}.py": f"def f{n}():\n    pass\n\n\ndef g{n}():\n    pass\n" for n in range(4)}
    rules = MEMORY.model_copy(update={"max_files": 2, "max_symbols": 3})
    memory = memory_of(real_diff(tmp_path, {}, sources), rules=rules)
    assert (memory.files, memory.more_files) == (["pkg/m0.py", "pkg/m1.py"], 2)
    assert (memory.symbols, memory.more_symbols) == (["f0", "g0", "f1"], 5)
    text = render([memory], rules)
    assert "built: pkg/m0.py, pkg/m1.py (+2 more files)" in text and "symbols: f0, g0, f1 (+5 more)" in text


def test_an_empty_final_diff_and_no_earlier_milestone():
    assert render([], MEMORY) == FIRST
    assert FIRST == "- (none: this is your first task here; the work before it is in your workspace)"
    memory = memory_of(b"", status="STUCK", turns=30, hints=(1, 2))
    assert (memory.files, memory.symbols, memory.errors) == ([], [], [])
    assert render([memory], MEMORY) == (
        "- m01 Add the parser: STUCK (30 turns; hints L1, L2)\n  built: nothing (no file changed but tests)"
    )


# ---- key errors and the edits that fixed them ----------------------------------------------------------
class Events:
    """A milestone's events as the run loop records them: runs, edits, verifications."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.turn = 0

    def _add(self, role: str, kind: str, content: str = "", **fields) -> Events:
        self.turn += role == "dev"
        action = Action(type=kind, content=content)
        where = {"run_id": "r1", "repo": "acme__app", "milestone_id": "m01", "seq": len(self.events)}
        self.events.append(Event(**where, turn_id=self.turn, role=role, action=action, **fields))
        return self

    def run(self, signature: str | None, observation: str = "", failed: int = 1) -> Events:
        counts = TestCounts(passed=1 - min(failed, 1), failed=failed, total=max(failed, 1))
        return self._add("dev", "run_tests", observation=observation, test_status=counts, error_signature=signature)

    def edit(self, *paths: str) -> Events:
        return self._add("dev", "write_file", files_touched=list(paths))

    def failed_verification(self) -> Events:
        counts = TestCounts(passed=0, failed=1, total=1)
        return self._add("verifier", "verify", "verification failed: 0/1 acceptance tests pass.", test_status=counts)


PYTEST = (
    "0 passed, 2 failed, 2 total\nFAILED tests/test_p.py::test_a\nFAILED tests/test_p.py::test_b\n"
    "    def test_a():\n>       assert parse('3') == 4\nE       AssertionError: assert 3 == 4\n"
    "E        +  where 3 = parse('3')\n"
)
NAME_ERROR = "0 passed, 1 failed, 1 total\nFAILED tests/test_p.py::test_b\nE  NameError: name 'tokens' is not defined\n"
GO = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: expected 3, got 4\nFAIL\nFAIL\texample.com/p\t0.01s\n"


def test_each_error_is_paired_with_the_edits_after_which_it_no_longer_appeared():
    log = Events().run("s0", "0 passed, 1 failed, 1 total\nFAILED tests/test_q.py::test_q\n")
    log.run("s1", PYTEST)  # s0 is gone, but nothing was edited: another selection of tests, no lesson
    log.failed_verification()  # fails without a signature: not a sign that s1 went away
    log.edit("pkg/parse.py")
    log.run("s2", NAME_ERROR).edit("pkg/tokens.py").run("s2", NAME_ERROR)
    log.edit("pkg/tokens.py", "pkg/parse.py").edit("pkg/util.py").run(None, "1 passed, 0 failed, 1 total", failed=0)
    fixed = [item.model_dump() for item in key_errors(log.events, MEMORY, CLASSIFIER)]
    assert fixed == [
        {
            "error": "tests/test_p.py::test_a (+1 more): AssertionError: assert 3 == 4",
            "signature": "s1",
            "runs": 1,
            "fixed_by": ["pkg/parse.py"],
            "turn": 3,
        },
        {
            "error": "tests/test_p.py::test_b: NameError: name 'tokens' is not defined",
            "signature": "s2",
            "runs": 2,
            "fixed_by": ["pkg/tokens.py", "pkg/parse.py", "pkg/util.py"],
            "turn": 7,
        },
    ]
    memory = memory_of(b"", events=log.events)
    text = render([memory], MEMORY)
    assert "  error: tests/test_p.py::test_b: NameError: name 'tokens' is not defined -> fixed by editing " in text
    assert "pkg/tokens.py, pkg/parse.py, pkg/util.py (turn 7)" in text


def test_an_error_never_fixed_is_kept_without_a_fix_and_the_most_seen_errors_win():
    log = Events().run("once", PYTEST).edit("pkg/a.py")
    for _ in range(3):
        log.run("again", GO).edit("pkg/b.go")
    errors = key_errors(log.events, MEMORY, CLASSIFIER)
    assert [(item.signature, item.runs, item.fixed_by, item.turn) for item in errors] == [
        ("once", 1, ["pkg/a.py"], 2),
        ("again", 3, [], None),
    ]
    assert errors[1].error == "TestParse: parse_test.go:12: expected 3, got 4"
    assert "  error, not fixed: TestParse: parse_test.go:12" in render([memory_of(b"", events=log.events)], MEMORY)
    (kept,) = key_errors(log.events, MEMORY.model_copy(update={"max_errors": 1}), CLASSIFIER)
    assert kept.signature == "again"  # seen in three runs: the key one
    assert key_errors(log.events, MEMORY.model_copy(update={"max_errors": 0}), CLASSIFIER) == []


def test_an_error_text_is_one_bounded_line():
    assert error_text(PYTEST, 200) == "tests/test_p.py::test_a (+1 more): AssertionError: assert 3 == 4"
    assert error_text("thread 'tests::parse' panicked at src/lib.rs:5:9:\nerror: test failed\n", 200) == (
        "thread 'tests::parse' panicked at src/lib.rs:5:9:"
    )
    assert error_text("", 200) == "tests failed"
    cut = error_text(NAME_ERROR, 20)
    assert cut == "tests/test_p.py::..." and len(cut) == 20


# ---- the task text's bounds ------------------------------------------------------------------------------
def _memory(mid: str, files: int = 3) -> MilestoneMemory:
    return MilestoneMemory(
        id=mid, title=f"Feature {mid}", outcome="PASS", turns=5, files=[f"pkg/{mid}_{n}.py" for n in range(files)]
    )


def test_one_milestones_block_is_cut_at_a_line_to_max_chars():
    memory = _memory("m01").model_copy(update={"symbols": ["alpha"] * 1 + [f"name{n}" for n in range(40)]})
    rules = MEMORY.model_copy(update={"max_chars": 120})
    text = render([memory], rules)
    assert text.splitlines() == [
        "- m01 Feature m01: PASS (5 turns; no hints)",
        "  built: pkg/m01_0.py, pkg/m01_1.py, pkg/m01_2.py",
        "  [... cut to max_chars ...]",
    ]


def test_older_milestones_shrink_to_their_outcome_line_past_max_total_chars():
    memories = [_memory(f"m0{n}") for n in range(1, 6)]
    full = render(memories[-1:], MEMORY)
    header = "- m03 Feature m03: PASS (5 turns; no hints)"
    rules = MEMORY.model_copy(update={"max_total_chars": 2 * len(full) + len(header) + 4})
    assert render(memories, rules).splitlines() == [
        "- (2 earlier milestones not shown)",
        header,
        *render(memories[3:4], MEMORY).splitlines(),
        *full.splitlines(),
    ]


def test_a_bad_memory_bound_is_one_line_naming_the_rules_key(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("harness:\n  memory:\n    max_chars: 0\n")
    with pytest.raises(ConfigError, match=r"r\.yaml: harness\.memory\.max_chars: Input should be greater than 0"):
        load_rules(path)


# ---- through the Navigator ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain_store(planned, tmp_path_factory) -> tuple[Store, str]:
    """The planned example store with m01 and m02 validated in the local sandbox."""
    return validated_copy(planned, tmp_path_factory.mktemp("memory"), ("m01", "m02"))


def _start(store: Store, key: str, run_id: str, mid: str) -> Event:
    return Recorder.open(store.milestone_run(key, run_id, mid).dir).events()[0]


def test_the_next_milestone_starts_with_what_the_last_one_built_and_how_it_fixed_its_errors(chain_store):
    store, key = chain_store
    navigator = Navigator(store, key, OracleAgent(), RULES, run_id="mem", backend="local", log=lambda *_: None)
    summaries = navigator.run(["m01", "m02"])
    assert [(summary.milestone_id, summary.status) for summary in summaries] == [("m01", "PASS"), ("m02", "PASS")]
    for summary in summaries:  # the plan's turn estimate is calibrated on these runs: within a factor of 2
        estimate = store.load_milestone(key, summary.milestone_id).expected_turns
        assert summary.turns / 2 <= estimate <= summary.turns * 2, (summary.milestone_id, estimate, summary.turns)
    m01 = store.load_milestone(key, "m01")
    ground_truth, _ = store.read_patches(key, "m01")
    oracle = task_from_patch(ground_truth, lambda path: None)  # the ground truth's files and the names it declares
    source_files = sorted(path for path in oracle.files if CLASSIFIER.is_source(path))
    housekeeping = sorted(path for path in oracle.files if CLASSIFIER.is_noise(path))
    assert source_files and housekeeping  # the example's m01 changes both

    start = _start(store, key, "mem", "m02")
    (recalled,) = start.action.args["memory"]
    assert (recalled["id"], recalled["title"], recalled["outcome"]) == ("m01", m01.title, "PASS")
    assert (recalled["turns"], recalled["hints"]) == (summaries[0].turns, [])
    assert recalled["files"] == source_files + housekeeping and recalled["removed"] == []  # source files first
    assert oracle.identifiers and set(oracle.identifiers) <= set(recalled["symbols"])
    # the oracle's detour: a wrong first write fails the tests; writing the real files fixed it
    (error,) = recalled["errors"]
    assert error["fixed_by"] == (source_files + housekeeping)[: MEMORY.max_files] and error["turn"] > 0
    assert "/workspace/" not in error["error"] and "hf-sandbox" not in error["error"]  # the sandbox's path is cut
    content = start.action.content
    assert f"Earlier milestones:\n- m01 {m01.title}: PASS ({summaries[0].turns} turns; no hints)\n" in content
    assert f"  built: {', '.join(source_files + housekeeping)}\n" in content
    assert f"-> fixed by editing {', '.join(error['fixed_by'])} (turn {error['turn']})" in content

    # A later invocation of the run rebuilds the same memory from the store alone.
    m02 = store.milestone_run(key, "mem", "m02")
    shutil.rmtree(m02.dir)
    again = Navigator(store, key, OracleAgent(), RULES, run_id="mem", backend="local", log=lambda *_: None)
    assert [summary.milestone_id for summary in again.run(["m02"])] == ["m02"]
    rerun = _start(store, key, "mem", "m02")
    assert rerun.action.args["memory"] == start.action.args["memory"] and rerun.action.content == content
    assert [memory.model_dump(mode="json") for memory in again.memory[:1]] == start.action.args["memory"]


def test_once_one_milestone_shrinks_every_older_one_does_too():
    small, big, latest = _memory("m01", files=1), _memory("m02", files=8), _memory("m03")
    room = len(render([latest], MEMORY)) + len(header(big)) + len(render([small], MEMORY)) + 3
    lines = render([small, big, latest], MEMORY.model_copy(update={"max_total_chars": room})).splitlines()
    assert lines == [header(small), header(big), *render([latest], MEMORY).splitlines()]  # m01 would fit in full
