"""The Mentor: a rule engine (no LLM) that watches the Dev's events and releases the next hint level when it is stuck.

One `Mentor` per milestone. `observe` is called after every recorded event; it returns a `MentorDecision` when a
rule fires. L0 is given at milestone start, so the Mentor releases L1..`max_level`, one level up each time.

A test run is a Dev event with `test_status` set (`run_tests`, or a test run the Dev started from the shell) or a
Verifier's failed grading of a submission. Which rules decide is the rules' `ladder`:

`escalation` (today's). The cooldown: no hint until the Dev is at turn `cooldown_turns` (its highest `turn_id`) and
has run the tests `cooldown_test_runs` times. After it, the rules are checked on every Dev event, first match wins:

- `explicit_request`: the Dev called `request_hint`, or its message text or reasoning matches a stuck phrase. One
  request per turn releases a hint (a model that says "I am stuck" and calls `request_hint` asked once). A request
  made during the cooldown (or with no level left) is dropped, not queued: the cooldown holds "before any hint".
- `same_error`: `same_error_runs` consecutive Dev test runs failed with the same `error_signature`; a run with
  another signature starts a new streak, a run without one ends it.
- `thrashing`: one file went back to content it held earlier (a revert) more than `thrash_cycles` times, by the
  content hashes `content_hashes` reads.
- `wrong_direction`: `wrong_direction_files` distinct files modified with no rise in the best passed count.
- `no_progress_after_hint`: no new passing test in the `escalate_after_turns` turns after the last hint; fires on the
  first event of the turn after those.

Evidence (error streak, reverts, modified files) counts from the milestone start or the last hint, so each trigger
fires once; a rise in passing tests also restarts the wrong-direction count. Reads, searches and shell polling feed
no rule.

`seed000` (seed 000's ladder, no cooldown): an explicit request releases the next level; level k comes once
`failures[k-1]` test runs in a row have failed with no rise in passing tests (`consecutive_failures`; a rise starts
the count again), and level `same_file_level` as soon as one file has been edited `same_file_edits` times with no such
rise (`same_file_edits`).

Only the Dev's events and the Verifier's gradings count: the hint events the Recorder writes are ignored, which makes
replaying a milestone's log through a new Mentor rebuild the same decisions.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessforge.models.common import Model
from harnessforge.models.plan import HintLadder
from harnessforge.models.trajectory import Event, MentorDecision
from harnessforge.rules import MentorRules

from .loops import LoopThresholds, LoopWatch

EXPLICIT_REQUEST = "explicit_request"
SAME_ERROR = "same_error"
THRASHING = "thrashing"
WRONG_DIRECTION = "wrong_direction"
NO_PROGRESS_AFTER_HINT = "no_progress_after_hint"
CONSECUTIVE_FAILURES = "consecutive_failures"
SAME_FILE_EDITS = "same_file_edits"
# Actions that never modify the workspace, whatever files the Recorder lists for them.
READ_ONLY_ACTIONS = frozenset({"read_file", "list_dir", "search", "run_tests", "submit", "request_hint", "message"})


class DevTestRun(Model):
    """One Dev test run as the Mentor saw it (not `models.env.TestRun`, a runner's parsed result)."""

    __test__ = False

    turn: int
    passed: int | None = None
    failed: int | None = None
    total: int | None = None
    error_signature: str | None = None


class DevSnapshot(Model):
    """The Dev's state when a hint was released, kept in the decision for analytics."""

    turn: int
    test_runs: int
    edit_count: int
    files_modified: list[str]
    best_passed: int | None
    test_history: list[DevTestRun]
    evidence: dict[str, Any]


class HintResponse(Model):
    """What the Dev did in the `response_window_turns` turns after reading a hint (turns T+1..T+window).

    `new_files`: files touched in the window that were never touched before the hint. `tests_improved`: the best
    passed count in the window beat the best before the hint (False when there was no test run to compare).
    """

    turns_observed: int
    complete: bool
    direction_changed: bool
    new_files: list[str]
    tests_improved: bool
    passed_before: int | None
    passed_after: int | None


@dataclass
class _Evidence:
    """What the rules count since the milestone start or the last hint."""

    error_signature: str | None = None
    error_runs: int = 0
    reverts: dict[str, int] = field(default_factory=dict)
    modified: set[str] = field(default_factory=set)


@dataclass
class _Streak:
    """What seed 000's ladder counts since the last rise in passing tests (hints do not restart it)."""

    failures: int = 0
    edits: dict[str, int] = field(default_factory=dict)


@dataclass
class _Watch:
    """A released hint whose response is still being observed."""

    decision: MentorDecision
    touched_before: set[str]
    passed_before: int | None
    touched_after: set[str] = field(default_factory=set)
    passed_after: int | None = None


def canonical_action(action_type: str) -> str:
    return action_type.strip().lower()


def content_hashes(event: Event) -> dict[str, str]:
    """File -> hash of its content after the event, which is what thrashing detection compares.

    Read from `action.args["content_sha"]`: a string for the event's one file (its single `files_touched` entry,
    else `args["path"]`) or a `{path: sha}` mapping. A `write_file` without it is hashed from `args["content"]`.
    """
    args = event.action.args
    sha = args.get("content_sha")
    if isinstance(sha, dict):
        return {_norm(path): str(digest) for path, digest in sha.items() if digest}
    path = event.files_touched[0] if len(event.files_touched) == 1 else args.get("path")
    if not isinstance(path, str) or not path:
        return {}
    if isinstance(sha, str) and sha:
        return {_norm(path): sha}
    content = args.get("content")
    if canonical_action(event.action.name) == "write_file" and isinstance(content, str):
        return {_norm(path): hashlib.sha256(content.encode()).hexdigest()}
    return {}


def _norm(path: str) -> str:
    return posixpath.normpath(path)


def _files(event: Event) -> set[str]:
    """Files the event touched: the Recorder's list, any hashed file, and the file a `read_file` read.

    (`list_dir` and `search` take a `path` too, but a directory is not a file the Dev turned to.)
    """
    files = {_norm(f) for f in event.files_touched if f} | set(content_hashes(event))
    path = event.action.args.get("path")
    if canonical_action(event.action.name) == "read_file" and isinstance(path, str) and path:
        files.add(_norm(path))
    read = event.action.args.get("files_read")
    if isinstance(read, list):
        files |= {_norm(path) for path in read if isinstance(path, str) and path}
    return files


def is_test_run(event: Event) -> bool:
    """A Dev's test run (the tool, or one started from the shell), or a failed grading of a submission."""
    if event.role == "verifier":
        return event.action.verdict == "FAIL" or (event.action.verdict is None and event.action.content != "PASS")
    return canonical_action(event.action.name) == "run_tests" or event.test_status is not None


class Mentor:
    """Decides, event by event, when the Dev of one milestone gets the next hint level."""

    def __init__(
        self,
        milestone_id: str,
        ladder: HintLadder,
        rules: MentorRules,
        stuck_patterns: Sequence[str] | None = None,
        enabled: bool = True,
        loops: LoopThresholds | None = None,
    ) -> None:
        """`stuck_patterns` replaces the rules' `stuck_phrases`; a Mentor not `enabled` (the probe and hard
        modes) watches as always and releases nothing; `loops`: the live loop detectors' thresholds (`loops.py`),
        which release a hint once the cooldown's turns are over, test runs or not (a Dev that never runs one)."""
        if ladder.milestone_id != milestone_id:
            raise ValueError(f"hint ladder is for {ladder.milestone_id}, not {milestone_id}")
        self.milestone_id = milestone_id
        self.ladder = ladder
        self.rules = rules
        phrases = rules.stuck_phrases if stuck_patterns is None else stuck_patterns
        self.stuck_patterns = [re.compile(pattern, re.IGNORECASE) for pattern in phrases]
        self.enabled = enabled
        self.decisions: list[MentorDecision] = []
        self._last_seq = -1
        self._closed = False
        self._turn = 0
        self._test_runs = 0
        self._edits = 0
        self._touched: set[str] = set()
        self._modified: set[str] = set()
        self._history: list[DevTestRun] = []
        self._best_passed: int | None = None
        self._file_states: dict[str, list[str]] = {}
        self._evidence = _Evidence()
        self._streak = _Streak()
        self._progress_since_hint = False
        self._answered_request_turn = -1  # the turn whose explicit request released a hint
        self._watches: list[_Watch] = []
        self._settled: list[MentorDecision] = []  # responses filled since `settled()` was last called
        self._loops = LoopWatch(loops) if loops else None

    @classmethod
    def replay(
        cls, milestone_id: str, ladder: HintLadder, rules: MentorRules, events: Iterable[Event], **kwargs: Any
    ) -> Mentor:
        """Rebuild a Mentor from a milestone's recorded events, e.g. to resume an interrupted run."""
        mentor = cls(milestone_id, ladder, rules, **kwargs)
        for event in events:
            mentor.observe(event)
        return mentor

    @property
    def level(self) -> int:
        """The highest level released so far (0: only the milestone-start hint)."""
        return self.decisions[-1].level if self.decisions else 0

    @property
    def max_level(self) -> int:
        return min(self.rules.max_level, len(self.ladder.levels) - 1)

    @property
    def next_level(self) -> int | None:
        """The next level with material of its own (levels the ladder marks empty are skipped)."""
        return next(
            (number for number in range(self.level + 1, self.max_level + 1) if not self.ladder.levels[number].empty),
            None,
        )

    @property
    def cooldown_over(self) -> bool:
        if self.rules.ladder == "seed000":
            return True  # its failure counts are its own waiting
        return self._turn >= self.rules.cooldown_turns and self._test_runs >= self.rules.cooldown_test_runs

    def observe(self, event: Event) -> MentorDecision | None:
        """Take in one recorded event; return the hint to release now, if any. Repeated `seq`s are ignored."""
        if event.milestone_id != self.milestone_id:
            raise ValueError(f"event {event.seq} is for {event.milestone_id}, not {self.milestone_id}")
        if event.seq <= self._last_seq or self._closed:
            return None
        self._last_seq = event.seq
        if canonical_action(event.action.name) == "milestone_end":
            self.close()
            return None
        requested = False
        if event.role == "verifier" and is_test_run(event):
            self._take_test_run(event)  # a failed submission is a failing test run
        elif event.role == "dev":
            self._turn = max(self._turn, event.turn_id)
            self._settle_responses()
            requested = self._take_in(event) and event.turn_id != self._answered_request_turn
        else:
            return None
        fired = self._fired(event, requested)
        if fired is None:
            return None
        if fired[0] == EXPLICIT_REQUEST:
            self._answered_request_turn = event.turn_id
        return self._release(event, *fired)

    def close(self) -> None:
        """Milestone over: fill every pending response with what was seen (`complete` says if the window ran out)."""
        for watch in self._watches:
            self._respond(watch)
        self._watches = []
        self._closed = True

    def settled(self) -> list[MentorDecision]:
        """The decisions whose response was filled since the last call (their window closed, or the milestone ended)."""
        settled, self._settled = self._settled, []
        return settled

    def log(self) -> list[dict[str, Any]]:
        """The decisions as JSON-able dicts, for `mentor_log.json`."""
        return [decision.model_dump(mode="json") for decision in self.decisions]

    # -- state ---------------------------------------------------------------------------------------------------

    def _take_in(self, event: Event) -> bool:
        """Update the Dev's state and the rules' evidence with one Dev event; True when it asks for a hint."""
        kind = canonical_action(event.action.name)
        files = _files(event)
        if self._loops:
            self._loops.take(event)
        self._touched |= files
        for watch in self._watches:
            if event.turn_id > watch.decision.turn_id:
                watch.touched_after |= files
        if kind not in READ_ONLY_ACTIONS and files:
            self._edits += 1
            self._modified |= files
            self._evidence.modified |= files
            for path in files:
                self._streak.edits[path] = self._streak.edits.get(path, 0) + 1
        for path, sha in content_hashes(event).items():
            self._track_content(path, sha)
        if is_test_run(event):
            self._take_test_run(event)
        if kind == "message":
            return self._sounds_stuck(event.action.content) or self._sounds_stuck(event.action.args.get("reasoning"))
        return kind == "request_hint"

    def _track_content(self, path: str, sha: str) -> None:
        states = self._file_states.setdefault(path, [])
        if states and states[-1] == sha:
            return
        if sha in states:
            self._evidence.reverts[path] = self._evidence.reverts.get(path, 0) + 1
        states.append(sha)

    def _take_test_run(self, event: Event) -> None:
        counts = event.test_status
        run = DevTestRun(turn=event.turn_id, error_signature=event.error_signature)
        if counts is not None:
            run = run.model_copy(update=counts.model_dump())
        self._test_runs += 1
        self._history.append(run)
        failed = run.error_signature is not None or bool(run.failed) or event.role == "verifier"
        self._streak.failures = self._streak.failures + 1 if failed else 0
        evidence = self._evidence
        if run.error_signature is None:
            evidence.error_signature, evidence.error_runs = None, 0
        elif run.error_signature == evidence.error_signature:
            evidence.error_runs += 1
        else:
            evidence.error_signature, evidence.error_runs = run.error_signature, 1
        if run.passed is None:
            return
        for watch in self._watches:
            if event.turn_id > watch.decision.turn_id:
                watch.passed_after = max(run.passed, watch.passed_after or 0)
        if self._best_passed is None:
            self._best_passed = run.passed  # the first counts are the baseline, not a rise
        elif run.passed > self._best_passed:
            self._best_passed = run.passed
            self._progress_since_hint = True
            evidence.modified = set()
            self._streak = _Streak(failures=int(failed))  # a run that rose but still fails starts the new count

    def _sounds_stuck(self, text: Any) -> bool:
        return isinstance(text, str) and any(pattern.search(text) for pattern in self.stuck_patterns)

    # -- rules ---------------------------------------------------------------------------------------------------

    def _fired(self, event: Event, requested: bool) -> tuple[str, dict[str, Any]] | None:
        """The first rule that holds now, with its evidence; None during the cooldown or with no level left."""
        if self.next_level is None or not self.enabled:
            return None
        if requested and self.cooldown_over:
            text = event.action.content or str(event.action.args.get("reasoning") or "")
            return EXPLICIT_REQUEST, {"action": canonical_action(event.action.name), "text": text[:500]}
        turns_over = self.rules.ladder == "seed000" or self._turn >= self.rules.cooldown_turns
        if self._loops and turns_over and (loop := self._loops.fired()):
            return loop
        if not self.cooldown_over:
            return None
        if self.rules.ladder == "seed000":
            return self._seed000_fired()
        return self._escalation_fired(event)

    def _seed000_fired(self) -> tuple[str, dict[str, Any]] | None:
        level, ladder, streak = self.next_level, self.rules.seed000, self._streak
        if level is not None and streak.failures >= ladder.failures[level - 1]:
            return CONSECUTIVE_FAILURES, {"failures": streak.failures, "best_passed": self._best_passed}
        edited = sorted((-count, path) for path, count in streak.edits.items() if count >= ladder.same_file_edits)
        if edited and level is not None and level <= ladder.same_file_level:
            return SAME_FILE_EDITS, {"file": edited[0][1], "edits": -edited[0][0], "best_passed": self._best_passed}
        return None

    def _escalation_fired(self, event: Event) -> tuple[str, dict[str, Any]] | None:
        rules, evidence = self.rules, self._evidence
        if evidence.error_runs >= rules.same_error_runs:
            return SAME_ERROR, {"error_signature": evidence.error_signature, "runs": evidence.error_runs}
        thrashed = sorted(
            (-reverts, path) for path, reverts in evidence.reverts.items() if reverts > rules.thrash_cycles
        )
        if thrashed:
            return THRASHING, {"file": thrashed[0][1], "reverts": -thrashed[0][0]}
        if len(evidence.modified) >= rules.wrong_direction_files:
            return WRONG_DIRECTION, {"files": sorted(evidence.modified), "best_passed": self._best_passed}
        if self.decisions and not self._progress_since_hint:
            since = self.decisions[-1].turn_id
            if event.turn_id - since > rules.escalate_after_turns:
                return NO_PROGRESS_AFTER_HINT, {"since_turn": since, "best_passed": self._best_passed}
        return None

    def _release(self, event: Event, rule: str, evidence: dict[str, Any]) -> MentorDecision:
        level = self.next_level
        skipped = [
            {"level": skipped_level, "reason": self.ladder.levels[skipped_level].empty_reason}
            for skipped_level in range(self.level + 1, level)
        ]
        snapshot = DevSnapshot(
            turn=event.turn_id,
            test_runs=self._test_runs,
            edit_count=self._edits,
            files_modified=sorted(self._modified),
            best_passed=self._best_passed,
            test_history=list(self._history),
            evidence=evidence,
        )
        decision = MentorDecision(
            milestone_id=self.milestone_id,
            turn_id=event.turn_id,
            level=level,
            rule=rule,
            hint=self.ladder.levels[level].content,
            skipped_levels=skipped,
            snapshot=snapshot.model_dump(mode="json"),
        )
        self.decisions.append(decision)
        self._watches.append(_Watch(decision, touched_before=set(self._touched), passed_before=self._best_passed))
        self._evidence = _Evidence()
        if self._loops:
            self._loops.reset()
        if rule == SAME_FILE_EDITS:
            self._streak.edits = {}  # those edits released a level; the failure count goes on
        self._file_states = {path: states[-1:] for path, states in self._file_states.items()}
        self._progress_since_hint = False
        return decision

    # -- responses -----------------------------------------------------------------------------------------------

    def _settle_responses(self) -> None:
        """Fill the responses whose window of turns is over (called when a later turn starts)."""
        window = self.rules.response_window_turns
        pending = []
        for watch in self._watches:
            if self._turn > watch.decision.turn_id + window:
                self._respond(watch)
            else:
                pending.append(watch)
        self._watches = pending

    def _respond(self, watch: _Watch) -> None:
        window = self.rules.response_window_turns
        new_files = sorted(watch.touched_after - watch.touched_before)
        before, after = watch.passed_before, watch.passed_after
        watch.decision.response = HintResponse(
            turns_observed=min(window, max(0, self._turn - watch.decision.turn_id)),
            complete=self._turn >= watch.decision.turn_id + window,
            direction_changed=bool(new_files),
            new_files=new_files,
            tests_improved=before is not None and after is not None and after > before,
            passed_before=before,
            passed_after=after,
        ).model_dump(mode="json")
        self._settled.append(watch.decision)
