"""What a milestone's task recalls of the earlier milestones of the chain (seed 000 §4.3).

For each earlier milestone that ran: what was built (the files of its final diff and the names its
added lines declare), its outcome (status, turns, hints), and the key errors of its test runs with
the edit that made each go away. Built from what the store keeps of the milestone (its summary,
event log, final diff and start patch) and nothing else, so a resumed run rebuilds the same memory.
Every bound is a rule (`harness.memory`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field

from ..diffs import FileDiff, split_diff
from ..files import FileClassifier
from ..models.common import Model
from ..models.run import MilestoneStatus, MilestoneSummary
from ..models.trajectory import Event
from ..rules import MemoryRules
from .symbols import changed_lines, symbols_in

FIRST = "- (none: this is your first task here; the work before it is in your workspace)"
# An earlier milestone the Dev was not given (held back, not valid): the chain applied its reference solution
APPLIED = "not given to you; its reference solution is in your workspace"
# A failing test in a run's output: run_tests / verifier lines, pytest's summary, go test, cargo test.
_FAILING = re.compile(
    r"^(?:FAILED|FAILING|ERROR collecting|ERROR)\s+(\S+)|^--- FAIL: (\S+)|^test (\S+) \.\.\. FAILED", re.M
)
_PYTEST_ERROR = re.compile(r"^E\s+(.+)$", re.M)
_ERROR_WORD = re.compile(r"(?i)\b(\w*error|exception|panic|panicked|assert\w*|expected|traceback)\b")
_COUNTS = re.compile(r"^\d+ passed, \d+ failed, \d+ total$")


class ErrorFix(Model):
    """One failure of the milestone's test runs and the edit after which it no longer appeared."""

    error: str = Field(description="The failing test ids and the last error line the run showed")
    signature: str = Field(description="The runs' error_signature")
    runs: int = Field(ge=1, description="Test runs that failed this way")
    fixed_by: list[str] = Field([], description="Files edited between its last failing run and the run without it")
    turn: int | None = Field(None, description="The Dev turn of the first of those edits (None: never fixed)")


class MilestoneMemory(Model):
    """One earlier milestone as the next milestone's task recalls it (bounded by the rules)."""

    id: str
    title: str
    outcome: MilestoneStatus
    turns: int = 0
    hints: list[int] = Field([], description="Hint levels it needed, in order")
    files: list[str] = Field([], description="Files its Dev changed (tests and work carried from before left out)")
    removed: list[str] = Field([], description="Files its Dev deleted")
    more_files: int = Field(0, description="Files changed or deleted beyond `max_files` (not listed)")
    symbols: list[str] = Field([], description="Names declared on its added lines")
    more_symbols: int = Field(0, description="Names beyond `max_symbols`")
    errors: list[ErrorFix] = []
    applied: bool = Field(False, description="Not given to the Dev: the chain applied its reference solution")


def applied(milestone_id: str, title: str) -> MilestoneMemory:
    """An earlier milestone the chain went past with its reference solution (held back, or not valid): its work
    is in the workspace, so the next task names it like the others."""
    return MilestoneMemory(id=milestone_id, title=title, outcome="PASS", applied=True)


def remember(
    milestone_id: str,
    title: str,
    summary: MilestoneSummary,
    events: Sequence[Event],
    final_diff: bytes,
    start_patch: bytes,
    classifier: FileClassifier,
    rules: MemoryRules,
) -> MilestoneMemory:
    """The memory of one finished milestone. `start_patch` (work carried in from the milestone before)
    and test files are not what this milestone built: they are left out of its files and symbols.
    Source files come first, housekeeping (changelog, docs, CI) after them."""
    carried = {file_diff.path: file_diff for file_diff in split_diff(start_patch)}
    changed: list[tuple[str, bool, list[str]]] = []  # (path, deleted, the names its added lines declare)
    for file_diff in split_diff(final_diff):
        if classifier.is_test(file_diff.path):
            continue
        added, removed = changed_lines(file_diff)
        before = carried.get(file_diff.path)
        if before is not None and _same_change(before, file_diff, (added, removed)):
            continue  # carried in unchanged
        old = set(symbols_in(before.path, changed_lines(before)[0])) if before else set()
        names = [name for name in symbols_in(file_diff.path, added) if name not in old]
        changed.append((file_diff.path, file_diff.deleted, names))
    changed.sort(key=lambda entry: not classifier.is_source(entry[0]))  # stable: diff order within each group
    symbols = list(dict.fromkeys(name for _, _, names in changed for name in names))
    listed = changed[: rules.max_files]
    return MilestoneMemory(
        id=milestone_id,
        title=title,
        outcome=summary.status,
        turns=summary.turns,
        hints=list(summary.hints_released),
        files=[path for path, deleted, _ in listed if not deleted],
        removed=[path for path, deleted, _ in listed if deleted],
        more_files=max(0, len(changed) - rules.max_files),
        symbols=symbols[: rules.max_symbols],
        more_symbols=max(0, len(symbols) - rules.max_symbols),
        errors=key_errors(events, rules, classifier),
    )


def _same_change(before: FileDiff, now: FileDiff, lines: tuple[list[str], list[str]]) -> bool:
    """The same change to a file in the start patch and the final diff (binary: the same bytes)."""
    if now.binary or before.binary:
        return now.raw == before.raw
    return changed_lines(before) == lines


def _source_first(paths: list[str], classifier: FileClassifier) -> list[str]:
    """`paths` with source files before the others (tests, housekeeping), each group in its order."""
    return sorted(paths, key=lambda path: not classifier.is_source(path))


def _is_run(event: Event) -> bool:
    return event.test_status is not None


def _clears(event: Event, signature: str) -> bool:
    """A test run that shows `signature` is gone: another failure, or nothing failing. A failing run
    without a signature (a failed verification, in older logs) says nothing either way."""
    if event.error_signature is not None:
        return event.error_signature != signature
    return event.test_status is not None and event.test_status.failed == 0


def error_text(output: str, limit: int) -> str:
    """What a failing run showed, in one line: its failing test ids (the first, and how many more)
    and its error: pytest's last `E` line that names one (the exception raised), else the first line
    that names an error (go, cargo, jest: what follows it is their summary)."""
    failing = [next(group for group in match.groups() if group) for match in _FAILING.finditer(output)]
    raised = _PYTEST_ERROR.findall(output)
    raised = [line for line in raised if _ERROR_WORD.search(line)] or raised  # not the `+ where ...` lines
    lines = [line.strip() for line in output.splitlines() if not _FAILING.match(line) and not _COUNTS.match(line)]
    named = [line for line in lines if _ERROR_WORD.search(line)]
    where = failing[0] + (f" (+{len(failing) - 1} more)" if len(failing) > 1 else "") if failing else ""
    last = raised[-1].strip() if raised else named[0] if named else ""
    text = ": ".join(part for part in (where, last) if part) or "tests failed"
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def key_errors(events: Sequence[Event], rules: MemoryRules, classifier: FileClassifier) -> list[ErrorFix]:
    """The failures of the milestone's test runs, each with the files edited between its last failing
    run and the first run that no longer showed it (unfixed ones too, with no fix). The failures seen
    in most runs are kept (`max_errors`), in the order they first appeared; one that vanished with no
    edit in between (another selection of tests) is no lesson and left out. The sandbox's own path is
    cut from the error text; the fix lists at most `max_files` files, source files first."""
    events = sorted(events, key=lambda event: event.seq)
    workdir = next((event.action.args.get("workdir") for event in events if event.action.type == "milestone_start"), "")
    seen: dict[str, list[int]] = {}  # signature -> indices of the runs that showed it
    for index, event in enumerate(events):
        if _is_run(event) and event.error_signature:
            seen.setdefault(event.error_signature, []).append(index)
    found: list[tuple[int, ErrorFix]] = []
    for signature, indices in seen.items():
        first = events[indices[0]]
        output = first.observation or first.action.content
        error = error_text(output.replace(f"{workdir}/", "") if workdir else output, rules.max_error_chars)
        after = events[indices[-1] + 1 :]
        clear = next((n for n, event in enumerate(after) if _is_run(event) and _clears(event, signature)), None)
        fixed_by: list[str] = []
        turn = None
        if clear is not None:
            edits = [event for event in after[:clear] if event.role == "dev" and event.files_touched]
            if not edits:
                continue
            edited = list(dict.fromkeys(path for event in edits for path in event.files_touched))
            fixed_by = _source_first(edited, classifier)[: rules.max_files]
            turn = edits[0].turn_id
        item = ErrorFix(error=error, signature=signature, runs=len(indices), fixed_by=fixed_by, turn=turn)
        found.append((indices[0], item))
    kept = sorted(found, key=lambda pair: (-pair[1].runs, pair[0]))[: rules.max_errors]
    return [item for _, item in sorted(kept, key=lambda pair: pair[0])]


def header(memory: MilestoneMemory) -> str:
    """`- m01 <title>: PASS (12 turns; hints L1, L2)`: the line an older milestone shrinks to."""
    if memory.applied:
        return f"- {memory.id} {memory.title}: {APPLIED}"
    hints = "hints " + ", ".join(f"L{level}" for level in memory.hints) if memory.hints else "no hints"
    return f"- {memory.id} {memory.title}: {memory.outcome} ({memory.turns} turns; {hints})"


def render_one(memory: MilestoneMemory, rules: MemoryRules) -> str:
    """One milestone's block of the task text, cut at a line to `max_chars`."""
    if memory.applied:
        return header(memory)
    lines = [header(memory)]
    if memory.files or memory.removed:
        built = ", ".join(memory.files + [f"{path} (deleted)" for path in memory.removed])
        lines.append(f"  built: {built}" + (f" (+{memory.more_files} more files)" if memory.more_files else ""))
    else:
        lines.append("  built: nothing (no file changed but tests)")
    if memory.symbols:
        more = f" (+{memory.more_symbols} more)" if memory.more_symbols else ""
        lines.append(f"  symbols: {', '.join(memory.symbols)}{more}")
    for item in memory.errors:
        if item.turn is None:
            lines.append(f"  error, not fixed: {item.error}")
        else:
            fix = ", ".join(item.fixed_by)
            lines.append(f"  error: {item.error} -> fixed by editing {fix} (turn {item.turn})")
    text = lines[0]
    for line in lines[1:]:
        if len(text) + 1 + len(line) > rules.max_chars:
            return text + "\n  [... cut to max_chars ...]"
        text += "\n" + line
    return text


def render(memories: Sequence[MilestoneMemory], rules: MemoryRules) -> str:
    """The "Earlier milestones" list: the latest in full; once `max_total_chars` is reached, older
    milestones shrink to their header line, and the oldest headers go last of all."""
    if not memories:
        return FIRST
    blocks: list[str] = []
    used, shrinking = 0, False
    for position, memory in enumerate(reversed(memories)):
        block = render_one(memory, rules)
        shrinking = shrinking or used + len(block) + 1 > rules.max_total_chars
        if shrinking:
            block = header(memory)
        if used + len(block) + 1 > rules.max_total_chars:
            blocks.append(f"- ({len(memories) - position} earlier milestones not shown)")
            break
        blocks.append(block)
        used += len(block) + 1
    return "\n".join(reversed(blocks))
