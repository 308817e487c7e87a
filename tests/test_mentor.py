"""The Mentor's rules on hand-built event sequences: when each fires, at which level, and what it records."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from harnessforge.harness.mentor import Mentor
from harnessforge.models.plan import HINT_LEVEL_NAMES, Hint, HintLadder
from harnessforge.models.trajectory import Action, Event, MentorDecision, TestCounts
from harnessforge.rules import MentorRules, load_rules

MID = "m01"
LADDER = HintLadder(
    milestone_id=MID, levels=[Hint(level=i, name=n, content=f"hint L{i}") for i, n in enumerate(HINT_LEVEL_NAMES)]
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
)


def mentor(**rules: int) -> Mentor:
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
            action=Action(type=action, content=text, args=args),
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


def feed(m: Mentor, events: list[Event]) -> list[tuple[int, int, int, str]]:
    """(seq, turn, level, rule) of every decision the events caused."""
    out = []
    for event in events:
        if d := m.observe(event):
            out.append((event.seq, d.turn_id, d.level, d.rule))
    return out


# -- cooldown ------------------------------------------------------------------------------------------------------


def test_cooldown_holds_every_rule_back_and_a_streak_fires_when_it_ends():
    m, t = mentor(cooldown_turns=4, cooldown_test_runs=2, same_error_runs=2), Trail()
    t.ask(1)  # an explicit request during the cooldown is dropped, not queued
    t.test(1, passed=0)
    t.test(2, passed=0)  # the streak reaches 2 at turn 2, still in the cooldown
    t.read(3, "a.py")
    first_after = t.read(4, "b.py")
    t.ask(4)
    assert feed(m, t.events) == [(first_after.seq, 4, 1, "same_error"), (first_after.seq + 1, 4, 2, "explicit_request")]


@pytest.mark.parametrize("runs", [1, 3])
def test_cooldown_counts_dev_test_runs_not_verifier_ones(runs):
    m, t = mentor(cooldown_turns=2, cooldown_test_runs=runs), Trail()
    for turn in range(1, 6):
        t.add(turn, "verify", role="verifier", passed=3, failed=1, sig="E")
        t.ask(turn)
    for turn in range(6, 6 + runs - 1):
        t.test(turn, passed=0)
        t.ask(turn)
    assert feed(m, t.events) == [] and not m.cooldown_over
    t.test(6 + runs, passed=0)
    hit = t.ask(6 + runs)
    assert feed(m, t.events[-2:]) == [(hit.seq, 6 + runs, 1, "explicit_request")]


def test_cooldown_turns_are_configurable():
    m, t = mentor(cooldown_turns=5), Trail()
    for turn in range(1, 5):
        t.ask(turn)
    hit = t.ask(5)
    assert feed(m, t.events) == [(hit.seq, 5, 1, "explicit_request")]


# -- same_error ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_same_error_fires_on_the_nth_consecutive_failure(n):
    m, t = mentor(same_error_runs=n), Trail()
    runs = []
    for turn in range(1, n + 1):
        t.edit(turn, "a.py")  # events between runs do not break the streak
        runs.append(t.test(turn, passed=2, sig="AssertionError@test_x"))
    assert feed(m, t.events) == [(runs[-1].seq, n, 1, "same_error")]
    assert m.decisions[0].snapshot["evidence"] == {"error_signature": "AssertionError@test_x", "runs": n}
    assert m.decisions[0].hint == "hint L1"


def test_same_error_streak_breaks_on_another_signature_or_a_clean_run():
    m, t = mentor(same_error_runs=3), Trail()
    for turn, sig in enumerate(["E", "E", "F", "E", "E", None, "E", "E"], start=1):
        t.test(turn, passed=1, failed=0 if sig is None else 1, sig=sig)
    assert feed(m, t.events) == []
    hit = t.test(9, passed=1, sig="E")
    assert feed(m, [hit]) == [(hit.seq, 9, 1, "same_error")]


def test_same_error_fires_once_per_streak():
    m, t = mentor(same_error_runs=2), Trail()
    for turn in range(1, 6):
        t.test(turn, passed=0, sig="E")
    # runs 1-2 fire; the hint restarts the count, so runs 3-4 are a new streak; run 5 is one short of the next
    assert [(turn, level) for _, turn, level, _ in feed(m, t.events)] == [(2, 1), (4, 2)]


# -- explicit_request ----------------------------------------------------------------------------------------------


def test_explicit_request_via_the_tool():
    m, t = mentor(), Trail()
    t.read(1, "a.py")
    hit = t.ask(2)
    assert feed(m, t.events) == [(hit.seq, 2, 1, "explicit_request")]
    assert m.decisions[0].snapshot["evidence"]["action"] == "request_hint"


@pytest.mark.parametrize("text", ["Hmm, I'm stuck on the parser.", "I need a hint here", "I AM STUCK", "im stuck"])
def test_explicit_request_via_message_text(text):
    m, t = mentor(), Trail()
    hit = t.say(1, text)
    assert feed(m, t.events) == [(hit.seq, 1, 1, "explicit_request")]


@pytest.mark.parametrize("text", ["I'm not stuck yet", "the stuck flag is set", "no hints needed"])
def test_messages_that_are_not_requests(text):
    m, t = mentor(), Trail()
    t.say(1, text)
    t.add(1, "bash", 'grep -rn "I\'m stuck" .', command='grep -rn "I\'m stuck" .')  # a tool call, not the Dev
    assert feed(m, t.events) == []


def test_stuck_patterns_are_configurable():
    m, t = Mentor(MID, LADDER, MentorRules(**QUIET), stuck_patterns=[r"\bhelp me\b"]), Trail()
    t.say(1, "I'm stuck")
    hit = t.say(2, "please help me")
    assert feed(m, t.events) == [(hit.seq, 2, 1, "explicit_request")]


# -- levels --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_level", [0, 2, 4])
def test_each_release_is_one_level_up_and_never_above_max_level(max_level):
    m, t = mentor(max_level=max_level), Trail()
    for turn in range(1, 10):
        t.ask(turn)
    fired = feed(m, t.events)
    assert [(turn, level) for _, turn, level, _ in fired] == [(i, i) for i in range(1, max_level + 1)]
    assert [d.hint for d in m.decisions] == [f"hint L{i}" for i in range(1, max_level + 1)]
    assert m.level == max_level


def test_empty_levels_are_skipped_to_the_next_with_material_and_the_skip_is_recorded():
    levels = [Hint(level=i, name=n, content=f"hint L{i}") for i, n in enumerate(HINT_LEVEL_NAMES)]
    levels[1] = Hint(level=1, name="issue_bodies", empty_reason="no commit message bodies")
    levels[2] = Hint(level=2, name="pr_descriptions", empty_reason="no PR descriptions")
    ladder = HintLadder(milestone_id=MID, levels=levels)
    m, t = Mentor(MID, ladder, MentorRules(**QUIET)), Trail()
    for turn in range(1, 6):
        t.ask(turn)
    fired = feed(m, t.events)
    assert [level for _, _, level, _ in fired] == [3, 4]  # L1 and L2 have nothing of their own
    first = m.decisions[0]
    assert first.hint == "hint L3"
    assert first.skipped_levels == [
        {"level": 1, "reason": "no commit message bodies"},
        {"level": 2, "reason": "no PR descriptions"},
    ]
    assert m.decisions[1].skipped_levels == [] and m.next_level is None


def test_a_ladder_with_no_material_left_releases_nothing():
    levels = [Hint(level=0, name="issue_titles", content="hint L0")]
    levels += [Hint(level=i, name=n, empty_reason="nothing") for i, n in enumerate(HINT_LEVEL_NAMES) if i]
    m, t = Mentor(MID, HintLadder(milestone_id=MID, levels=levels), MentorRules(**QUIET)), Trail()
    t.ask(1)
    assert feed(m, t.events) == [] and m.level == 0


def test_a_hint_needs_content_or_a_reason_to_be_empty():
    with pytest.raises(ValueError, match="no content and no empty_reason"):
        Hint(level=1, name="issue_bodies", content="  ")


# -- thrashing -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cycles", [1, 2])
def test_thrashing_fires_when_one_file_reverts_more_than_thrash_cycles_times(cycles):
    m, t = mentor(thrash_cycles=cycles), Trail()
    shas = ["A", "B"] * 4
    edits = []
    for turn, sha in enumerate(shas[: cycles + 3], start=1):
        t.edit(turn, "tmp/../pkg/a.py", sha)  # the path is normalised
        t.edit(turn, "pkg/b.py")  # steady work elsewhere does not count
        edits.append(t.events[-2])
    assert feed(m, t.events[:-2]) == []  # A, B, then `cycles` reverts: not yet more than allowed
    assert feed(m, t.events[-2:]) == [(edits[-1].seq, cycles + 3, 1, "thrashing")]
    assert m.decisions[0].snapshot["evidence"] == {"file": "pkg/a.py", "reverts": cycles + 1}


def test_new_content_and_reverts_spread_over_files_are_not_thrashing():
    m, t = mentor(thrash_cycles=1), Trail()
    for turn, sha in enumerate("ABCDEF", start=1):
        t.edit(turn, "a.py", sha)
    for path in ("b.py", "c.py"):
        for sha in "XYX":  # one revert on each file
            t.edit(7, path, sha)
    for _ in range(3):
        t.edit(8, "d.py", "same")  # an edit that changes nothing is not a revert
    assert feed(m, t.events) == []


def test_thrashing_reads_write_file_content_when_no_hash_is_given():
    m, t = mentor(thrash_cycles=1), Trail()
    for turn, content in enumerate(["x = 1", "x = 2", "x = 1"], start=1):
        t.add(turn, "write_file", files=("a.py",), path="a.py", content=content)
    hit = t.add(4, "write_file", files=("a.py",), path="a.py", content="x = 2")
    assert feed(m, t.events) == [(hit.seq, 4, 1, "thrashing")]


def test_thrashing_counts_from_the_last_hint():
    m, t = mentor(thrash_cycles=1), Trail()
    for turn, sha in enumerate("ABAB", start=1):
        t.edit(turn, "a.py", sha)
    t.edit(5, "a.py", "A")
    t.edit(6, "a.py", "B")  # one revert since the hint: not more than allowed
    assert [(turn, level) for _, turn, level, _ in feed(m, t.events)] == [(4, 1)]
    hit = t.edit(7, "a.py", "A")
    assert feed(m, [hit]) == [(hit.seq, 7, 2, "thrashing")]


# -- wrong_direction -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_wrong_direction_fires_on_the_nth_distinct_modified_file(n):
    m, t = mentor(wrong_direction_files=n), Trail()
    t.test(1, passed=3)
    t.add(2, "bash", "sed -i ...", files=("f0.py",), command="sed -i ...")  # a shell edit modifies files too
    for i in range(1, n):
        t.read(2, "elsewhere.py")  # reading is not modifying
        t.edit(2, f"f{i - 1}.py")  # a file already counted
        t.test(2, passed=3)  # no rise
        t.edit(3, f"f{i}.py")
    assert feed(m, t.events[:-1]) == []
    hit = t.events[-1]
    assert feed(m, [hit]) == [(hit.seq, 3, 1, "wrong_direction")]
    assert m.decisions[0].snapshot["evidence"] == {"files": [f"f{i}.py" for i in range(n)], "best_passed": 3}


def test_a_rise_in_passing_tests_restarts_the_wrong_direction_count():
    m, t = mentor(wrong_direction_files=3), Trail()
    t.test(1, passed=3)
    t.edit(2, "a.py")
    t.edit(2, "b.py")
    t.test(3, passed=2)  # worse is not a rise
    t.test(3, passed=3)  # back to the best is not a rise either
    t.test(4, passed=4)  # a rise: a.py and b.py were progress
    t.edit(5, "c.py")
    t.edit(5, "a.py")
    assert feed(m, t.events) == []
    hit = t.edit(6, "d.py")
    assert feed(m, [hit]) == [(hit.seq, 6, 1, "wrong_direction")]
    assert m.decisions[0].snapshot["evidence"] == {"files": ["a.py", "c.py", "d.py"], "best_passed": 4}


# -- no_progress_after_hint ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("after", [1, 3])
def test_escalates_when_a_hint_brings_no_new_passing_test(after):
    m, t = mentor(escalate_after_turns=after, max_level=3), Trail()
    t.test(1, passed=2)
    t.ask(1)  # L1 at turn 1
    for turn in range(2, 2 + after):  # the window: turns 2 .. 1+after
        t.edit(turn, f"x{turn}.py")
        t.test(turn, passed=2)
    fired = feed(m, t.events)
    assert [(turn, level, rule) for _, turn, level, rule in fired] == [(1, 1, "explicit_request")]
    hit = t.read(2 + after, "a.py")  # first event of the first turn past the window
    assert feed(m, [hit]) == [(hit.seq, 2 + after, 2, "no_progress_after_hint")]
    assert m.decisions[-1].snapshot["evidence"] == {"since_turn": 1, "best_passed": 2}
    for turn in range(3 + after, 30):
        t.read(turn, "a.py")
    fired = feed(m, t.events[hit.seq + 1 :])
    assert [(turn, level) for _, turn, level, _ in fired] == [(3 + 2 * after, 3)]  # then capped at max_level 3


def test_no_escalation_when_the_hint_led_to_a_new_passing_test():
    m, t = mentor(escalate_after_turns=2), Trail()
    t.test(1, passed=2)
    t.ask(1)
    t.test(3, passed=3)
    for turn in range(4, 30):
        t.read(turn, "a.py")
    assert [rule for *_, rule in feed(m, t.events)] == ["explicit_request"]


def test_progress_after_one_hint_does_not_spare_the_next():
    m, t = mentor(escalate_after_turns=2), Trail()
    t.test(1, passed=2)
    t.ask(1)
    t.test(2, passed=3)  # L1 helped
    t.ask(3)
    t.test(4, passed=3)
    t.read(5, "a.py")
    assert [(turn, level) for _, turn, level, _ in feed(m, t.events)] == [(1, 1), (3, 2)]
    hit = t.read(6, "a.py")
    assert feed(m, [hit]) == [(hit.seq, 6, 3, "no_progress_after_hint")]


def test_no_escalation_before_any_mentor_hint():
    m, t = mentor(escalate_after_turns=1), Trail()
    t.test(1, passed=2)
    for turn in range(2, 20):
        t.read(turn, "a.py")
    assert feed(m, t.events) == []


# -- responses -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 3])
def test_response_is_filled_when_the_window_is_over(window):
    m, t = mentor(response_window_turns=window), Trail()
    t.read(1, "a.py")
    t.test(1, passed=1)
    t.ask(2)
    t.read(2, "same_turn.py")  # same model call as the trigger: the Dev had not seen the hint yet
    t.read(3, "a.py")
    t.edit(3, "b.py")
    t.test(2 + window, passed=4, failed=0)
    feed(m, t.events)
    assert m.decisions[0].response is None
    late = t.edit(3 + window, "late.py")  # first event past the window
    m.observe(late)
    assert m.decisions[0].response == {
        "turns_observed": window,
        "complete": True,
        "direction_changed": True,
        "new_files": ["b.py"],
        "tests_improved": True,
        "passed_before": 1,
        "passed_after": 4,
    }


def test_response_when_the_dev_stays_on_course():
    m, t = mentor(response_window_turns=2), Trail()
    t.edit(1, "a.py")
    t.test(1, passed=3)
    t.ask(1)
    t.test(1, passed=5, failed=0)  # same model call as the trigger: not a response to the hint
    t.edit(2, "a.py")
    t.add(2, "list_dir", path=".")
    t.add(2, "search", pattern="parse", path="src")
    t.test(3, passed=3)
    t.read(4, "a.py")
    feed(m, t.events)
    response = m.decisions[0].response
    assert response is not None
    assert (response["direction_changed"], response["new_files"], response["tests_improved"]) == (False, [], False)


def test_milestone_end_fills_pending_responses_as_incomplete():
    m, t = mentor(response_window_turns=3), Trail()
    t.test(1, passed=1)
    t.ask(1)
    t.read(2, "new.py")
    t.add(2, "milestone_end", role="navigator")
    t.ask(3)  # nothing after the end counts
    assert [rule for *_, rule in feed(m, t.events)] == ["explicit_request"]
    assert m.decisions[0].response == {
        "turns_observed": 1,
        "complete": False,
        "direction_changed": True,
        "new_files": ["new.py"],
        "tests_improved": False,
        "passed_before": 1,
        "passed_after": None,
    }


# -- snapshot, log, replay -----------------------------------------------------------------------------------------


def test_snapshot_records_the_devs_state():
    m, t = mentor(same_error_runs=2), Trail()
    t.edit(1, "b.py")
    t.edit(1, "a.py")
    t.read(1, "c.py")
    t.test(1, passed=1, failed=2, sig="E")
    t.edit(2, "a.py")
    t.test(2, passed=1, failed=2, sig="E")
    feed(m, t.events)
    assert m.decisions[0].snapshot == {
        "turn": 2,
        "test_runs": 2,
        "edit_count": 3,
        "files_modified": ["a.py", "b.py"],
        "best_passed": 1,
        "test_history": [
            {"turn": 1, "passed": 1, "failed": 2, "total": 3, "error_signature": "E"},
            {"turn": 2, "passed": 1, "failed": 2, "total": 3, "error_signature": "E"},
        ],
        "evidence": {"error_signature": "E", "runs": 2},
    }


def _session(t: Trail, turn: int) -> list[Callable[[], Event]]:
    """The Dev's steps in one turn: spread files, then flip a.py back and forth, ask, then repeat one failure."""
    if turn <= 5:
        return [lambda: t.test(turn, passed=1, sig="EF"[turn % 2]), lambda: t.edit(turn, f"f{turn}.py")]
    if turn <= 10:
        return [lambda: t.edit(turn, "a.py", "AB"[turn % 2]), lambda: t.say(turn, "thinking")]
    if turn == 11:
        return [lambda: t.say(turn, "I'm stuck")]
    return [lambda: t.test(turn, passed=1, sig="E"), lambda: t.read(turn, "b.py")]


def _live_run(rules: MentorRules) -> tuple[Mentor, list[Event]]:
    """A recorded milestone as the harness writes it: navigator, Dev, verifier and the Mentor's own hint events."""
    m, t = Mentor(MID, LADDER, rules), Trail()
    m.observe(t.add(0, "milestone_start", role="navigator"))
    for turn in range(1, 21):
        for step in _session(t, turn):
            if d := m.observe(step()):
                assert m.observe(t.add(turn, "hint", d.hint, role="mentor")) is None
        m.observe(t.add(turn, "verify", role="verifier", passed=0, failed=5, sig="V"))
    m.observe(t.add(20, "milestone_end", role="navigator"))
    return m, t.events


def test_replaying_the_recorded_events_rebuilds_identical_decisions():
    rules = load_rules().harness.mentor.model_copy(update={"cooldown_turns": 3})
    live, events = _live_run(rules)
    assert [(d.turn_id, d.level, d.rule) for d in live.decisions] == [
        (5, 1, "wrong_direction"),
        (10, 2, "thrashing"),
        (11, 3, "explicit_request"),
        (14, 4, "same_error"),
    ]
    assert all(d.response for d in live.decisions)
    replayed = Mentor.replay(MID, LADDER, rules, events)
    assert replayed.log() == live.log()
    again = Mentor.replay(MID, LADDER, rules, events[: len(events) // 2])
    for event in events:  # resuming over events already seen: repeated seqs are ignored
        again.observe(event)
    assert again.log() == live.log()


def test_log_is_json_and_reads_back_as_decisions():
    m, t = mentor(), Trail()
    t.test(1, passed=0)
    t.ask(2)
    feed(m, t.events)
    log = json.loads(json.dumps(m.log()))
    assert [MentorDecision.model_validate(d) for d in log] == m.decisions
    assert log[0]["milestone_id"] == MID and log[0]["level"] == 1


def test_default_rules_from_rules_yaml():
    m, t = Mentor(MID, LADDER, load_rules().harness.mentor), Trail()
    for turn in range(1, 8):
        t.test(turn, passed=0, sig="E")  # a streak long enough, but turns 1-7 are the cooldown
    hit = t.read(8, "a.py")
    assert feed(m, t.events) == [(hit.seq, 8, 1, "same_error")]


def test_events_of_another_milestone_or_ladder_are_refused():
    with pytest.raises(ValueError, match="m02"):
        Mentor("m02", LADDER, MentorRules(**QUIET))
    event = Trail().ask(1).model_copy(update={"milestone_id": "m02"})
    with pytest.raises(ValueError, match="m02"):
        mentor().observe(event)
