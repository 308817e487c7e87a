"""Hand-built event sequences for the Mentor's tests: a ladder with material at every level, rules that keep
every trigger out of reach (each test turns on only what it is about), a Trail that writes one milestone's
events as the Recorder would, and feed, which reports the decisions those events cause."""

from __future__ import annotations

from typing import Any

from harnessforge.harness.mentor import Mentor
from harnessforge.models.plan import HINT_LEVEL_NAMES, Hint, HintLadder
from harnessforge.models.trajectory import Action, Event, TestCounts
from harnessforge.rules import MentorRules, load_rules

MID = "m01"
LADDER = HintLadder(
    milestone_id=MID, levels=[Hint(level=i, name=name, content=f"hint L{i}") for i, name in enumerate(HINT_LEVEL_NAMES)]
)
# Every rule out of reach and no cooldown: each test turns on only what it is about.
QUIET = dict(
    cooldown_turns=0,
    cooldown_test_runs=0,
    same_error_runs=99,
    thrash_cycles=99,
    wrong_direction_files=99,
    escalate_after_turns=99,
    response_window_turns=2,
    max_level=4,
    stuck_phrases=load_rules().harness.mentor.stuck_phrases,
)


def quiet_mentor(**rules: Any) -> Mentor:
    return Mentor(MID, LADDER, MentorRules(**{**QUIET, **rules}))


class Trail:
    """One milestone's event log, built tersely; `seq` is assigned in order, as the Recorder does."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(
        self,
        turn: int,
        action: str = "message",
        text: str = "",
        *,
        role: str = "dev",
        files: tuple[str, ...] = (),
        passed: int | None = None,
        failed: int = 0,
        sig: str | None = None,
        verdict: str | None = None,
        **args: Any,
    ) -> Event:
        status = None if passed is None else TestCounts(passed=passed, failed=failed, total=passed + failed)
        event = Event(
            run_id="r1",
            repo="o/r",
            milestone_id=MID,
            seq=len(self.events),
            turn_id=turn,
            role=role,
            action=Action(type=action, content=text, args=args, verdict=verdict),
            files_touched=list(files),
            test_status=status,
            error_signature=sig,
        )
        self.events.append(event)
        return event

    def say(self, turn: int, text: str) -> Event:
        return self.add(turn, "message", text)

    def ask(self, turn: int) -> Event:
        return self.add(turn, "request_hint")

    def read(self, turn: int, path: str) -> Event:
        return self.add(turn, "read_file", path=path)  # the ToolBox lists no files for a read

    def edit(self, turn: int, path: str, sha: str | None = None) -> Event:
        return self.add(turn, "edit_file", files=(path,), path=path, content_sha=sha or f"{path}@{turn}")

    def test(self, turn: int, passed: int, failed: int = 1, sig: str | None = "E") -> Event:
        return self.add(turn, "run_tests", passed=passed, failed=failed, sig=sig if failed else None)

    def verify(self, turn: int, passed: int, failed: int = 1, sig: str | None = "V") -> Event:
        """The Verifier's grading of a submission (FAIL while any acceptance test fails)."""
        verdict = "FAIL" if failed else "PASS"
        counts = {"passed": passed, "failed": failed, "sig": sig if failed else None}
        return self.add(turn, "verify", verdict, role="verifier", verdict=verdict, **counts)

    def shell(self, turn: int, command: str, *, files: dict[str, str] | None = None, **test: Any) -> Event:
        """A `bash` call: the files it changed ({path: content hash}) and, given `passed`, a test run it started."""
        changed = files or {}
        args: dict[str, Any] = {"command": command}
        if changed:
            args["content_sha"] = changed
        return self.add(turn, "bash", files=tuple(changed), **test, **args)


def feed(mentor: Mentor, events: list[Event]) -> list[tuple[int, int, int, str]]:
    """(seq, turn, level, rule) of every decision the events caused."""
    out = []
    for event in events:
        if decision := mentor.observe(event):
            out.append((event.seq, decision.turn_id, decision.level, decision.rule))
    return out
