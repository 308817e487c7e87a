"""What a Dev does through the shell is what the Recorder and the Mentor see: the files a command changed
(from the workspace, with git's content hashes, the same as `write_file`'s), the files it read, a pytest it
started (through our plugin, on both sandbox backends), and the test-file policy (warn or block)."""

from __future__ import annotations

import pytest

from harnessforge.files import FileClassifier
from harnessforge.harness.mentor import Mentor
from harnessforge.harness.tools import ToolBox
from harnessforge.harness.workspace_watch import files_read
from harnessforge.models.env import Recipe
from harnessforge.models.trajectory import Action, Event, ToolCall
from harnessforge.rules import load_rules
from tests.mentor_trail import LADDER, MID, QUIET
from tests.test_sandbox_attacks import BOTH, commits, open_sandbox  # noqa: F401  (fixtures)

RULES = load_rules()


def _toolbox(sandbox, test_file_edits="warn") -> ToolBox:
    recipe = Recipe(language="python", runner="pytest", base_image="unused")
    return ToolBox(sandbox, recipe, [], FileClassifier(RULES.planning), 120, test_file_edits)


def _call(tools: ToolBox, name: str, **args):
    return tools.call(ToolCall(id=f"c-{name}", name=name, args=args))


@BOTH
def test_shell_edits_are_files_touched_with_the_hashes_write_file_gives(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        tools = _toolbox(sandbox)
        written = _call(tools, "write_file", path="tasklite/extra.py", content="X = 1\n")
        same = _call(tools, "bash", command="printf 'X = 1\\n' > tasklite/other.py && echo '# more' >> README.md")
        assert written.files_touched == ["tasklite/extra.py"] and sorted(same.files_touched) == [
            "README.md",
            "tasklite/other.py",
        ]
        sha = written.extra["content_sha"]["tasklite/extra.py"]
        assert same.extra["content_sha"]["tasklite/other.py"] == sha  # one content, one hash, whichever tool
        assert sha == sandbox.exec("git hash-object tasklite/extra.py").stdout.strip()[:12]
        reverted = _call(tools, "bash", command="git checkout -- README.md")
        assert reverted.files_touched == ["README.md"]
        assert reverted.extra["content_sha"]["README.md"] == sandbox.exec("git rev-parse HEAD:README.md").stdout[:12]
        listing = _call(tools, "bash", command="ls && cat README.md | head -3")
        assert listing.files_touched == [] and "content_sha" not in listing.extra
        assert listing.extra["files_read"] == ["README.md"]
        removed = _call(tools, "bash", command="rm tasklite/extra.py")
        assert removed.extra["content_sha"] == {"tasklite/extra.py": "0" * 12}


@BOTH
def test_a_pytest_started_from_the_shell_is_a_counted_test_run(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        tools = _toolbox(sandbox)
        green = _call(tools, "bash", command="cd tests && python -m pytest -q test_store.py")
        assert green.test_status is not None and green.test_status.failed == 0 and green.test_status.passed > 0
        assert green.extra["test_runner"] == "pytest" and green.error_signature is None
        _call(tools, "bash", command="printf 'def test_new():\\n    assert 1 == 2\\n' > tests/test_new.py")
        red = _call(tools, "bash", command="pytest tests/test_new.py; echo done")
        assert (red.test_status.passed, red.test_status.failed, red.test_status.total) == (0, 1, 1)
        assert red.error_signature and red.ok  # `echo done` made the command succeed; the test still failed
        again = _call(tools, "bash", command="python -m pytest tests/test_new.py -x")
        assert again.error_signature == red.error_signature  # the same failure, whichever way it was started
        assert _call(tools, "bash", command="grep -rn pytest pyproject.toml").test_status is None
        own_path = _call(tools, "bash", command="PYTHONPATH=/nowhere python -m pytest -q tests/test_new.py")
        assert own_path.error_signature == red.error_signature  # the plugin is installed: no PYTHONPATH needed


@BOTH
def test_blocked_test_files_are_put_back_and_the_dev_is_told(open_sandbox, commits, backend):  # noqa: F811
    with open_sandbox(backend, commits["v0.2.0"]) as sandbox:
        tools = _toolbox(sandbox, "block")
        before = sandbox.read_file("tests/test_store.py")
        shell = _call(tools, "bash", command="echo 'def test_fake(): pass' >> tests/test_store.py && touch a.py")
        assert sandbox.read_file("tests/test_store.py") == before
        assert shell.extra["blocked_test_files"] == ["tests/test_store.py"] and shell.files_touched == ["a.py"]
        assert "test files are read-only here; restored: tests/test_store.py" in shell.observation
        new_test = _call(tools, "bash", command="echo 'def test_x(): pass' > tests/test_x.py")
        assert "tests/test_x.py" not in sandbox.list_dir("tests") and new_test.files_touched == []
        refused = _call(tools, "write_file", path="tests/test_store.py", content="")
        assert not refused.ok and "read-only" in refused.observation and sandbox.read_file("tests/test_store.py")
        warned = _call(_toolbox(sandbox), "bash", command="echo '# note' >> tests/test_store.py")
        assert warned.extra["test_file"] and "will not count" in warned.observation


@pytest.mark.parametrize(
    "command, read",
    [
        ("cat a.py", ["a.py"]),
        ("sed -n 1,20p tasklite/x.py", ["tasklite/x.py"]),
        ("head -n 50 b.py | grep x", ["b.py"]),
        ("cat > out.py <<'EOF'\nprint(1)\nEOF", []),  # a write, not a read
        ("tail -5 ./log.txt 2>&1", ["log.txt"]),
        ("grep -n foo a.py", []),  # a search
        ("cat *.py", []),
        ("python -m pytest", []),
    ],
)
def test_the_files_a_command_reads(command, read):
    assert files_read(command) == read


def test_a_shell_thrash_and_a_shell_read_are_seen_by_the_mentor():
    """The Mentor reads the hashes every mutating call carries: three shell flips of one file are thrashing."""
    mentor = Mentor(MID, LADDER, RULES.harness.mentor.model_copy(update={**QUIET, "thrash_cycles": 1}))
    events = []
    for turn, sha in enumerate(["A", "B", "A", "B"], start=1):
        args = {"command": f"sed -i s/x/{sha}/ a.py", "content_sha": {"a.py": sha}}
        events.append(
            Event(
                run_id="r",
                repo="o/r",
                milestone_id=MID,
                seq=turn - 1,
                turn_id=turn,
                role="dev",
                call_id=f"c{turn}",
                action=Action(type="bash", args=args),
                files_touched=["a.py"],
            )
        )
    fired = [(event.turn_id, decision.rule) for event in events if (decision := mentor.observe(event))]
    assert fired == [(4, "thrashing")]
