"""When each of the Mentor's rules fires on hand-built event sequences: the cooldown, same_error,
explicit_request, thrashing, wrong_direction and no_progress_after_hint, and what evidence each records."""

from __future__ import annotations

import pytest

from harnessforge.harness.mentor import Mentor
from harnessforge.rules import MentorRules
from tests.mentor_trail import LADDER, MID, QUIET, Trail, feed, quiet_mentor

# -- cooldown ------------------------------------------------------------------------------------------------------


def test_cooldown_holds_every_rule_back_and_a_streak_fires_when_it_ends():
    mentor, trail = quiet_mentor(cooldown_turns=4, cooldown_test_runs=2, same_error_runs=2), Trail()
    trail.ask(1)  # an explicit request during the cooldown is dropped, not queued
    trail.test(1, passed=0)
    trail.test(2, passed=0)  # the streak reaches 2 at turn 2, still in the cooldown
    trail.read(3, "a.py")
    first_after = trail.read(4, "b.py")
    trail.ask(4)
    assert feed(mentor, trail.events) == [
        (first_after.seq, 4, 1, "same_error"),
        (first_after.seq + 1, 4, 2, "explicit_request"),
    ]


@pytest.mark.parametrize("runs", [1, 3])
def test_cooldown_counts_failed_submissions_as_test_runs_and_not_passed_ones(runs):
    """A Dev that only submits still runs the tests: each failed grading is a failing test run."""
    mentor, trail = quiet_mentor(cooldown_turns=2, cooldown_test_runs=runs), Trail()
    for turn in range(1, 6):
        trail.verify(turn, passed=4, failed=0)
        trail.ask(turn)
    for turn in range(6, 6 + runs - 1):
        trail.verify(turn, passed=3)
        trail.ask(turn)
    assert feed(mentor, trail.events) == [] and not mentor.cooldown_over
    trail.verify(6 + runs, passed=3)
    hit = trail.ask(6 + runs)
    assert feed(mentor, trail.events[-2:]) == [(hit.seq, 6 + runs, 1, "explicit_request")]


def test_cooldown_turns_are_configurable():
    mentor, trail = quiet_mentor(cooldown_turns=5), Trail()
    for turn in range(1, 5):
        trail.ask(turn)
    hit = trail.ask(5)
    assert feed(mentor, trail.events) == [(hit.seq, 5, 1, "explicit_request")]


# -- same_error ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_same_error_fires_on_the_nth_consecutive_failure(n):
    mentor, trail = quiet_mentor(same_error_runs=n), Trail()
    runs = []
    for turn in range(1, n + 1):
        trail.edit(turn, "a.py")  # events between runs do not break the streak
        runs.append(trail.test(turn, passed=2, sig="AssertionError@test_x"))
    assert feed(mentor, trail.events) == [(runs[-1].seq, n, 1, "same_error")]
    assert mentor.decisions[0].snapshot["evidence"] == {"error_signature": "AssertionError@test_x", "runs": n}
    assert mentor.decisions[0].hint == "hint L1"


def test_same_error_streak_breaks_on_another_signature_or_a_clean_run():
    mentor, trail = quiet_mentor(same_error_runs=3), Trail()
    for turn, sig in enumerate(["E", "E", "F", "E", "E", None, "E", "E"], start=1):
        trail.test(turn, passed=1, failed=0 if sig is None else 1, sig=sig)
    assert feed(mentor, trail.events) == []
    hit = trail.test(9, passed=1, sig="E")
    assert feed(mentor, [hit]) == [(hit.seq, 9, 1, "same_error")]


def test_same_error_fires_once_per_streak():
    mentor, trail = quiet_mentor(same_error_runs=2), Trail()
    for turn in range(1, 6):
        trail.test(turn, passed=0, sig="E")
    # runs 1-2 fire; the hint restarts the count, so runs 3-4 are a new streak; run 5 is one short of the next
    assert [(turn, level) for _, turn, level, _ in feed(mentor, trail.events)] == [(2, 1), (4, 2)]


# -- explicit_request ----------------------------------------------------------------------------------------------


def test_explicit_request_via_the_tool():
    mentor, trail = quiet_mentor(), Trail()
    trail.read(1, "a.py")
    hit = trail.ask(2)
    assert feed(mentor, trail.events) == [(hit.seq, 2, 1, "explicit_request")]
    assert mentor.decisions[0].snapshot["evidence"]["action"] == "request_hint"


@pytest.mark.parametrize("text", ["Hmm, I'm stuck on the parser.", "I need a hint here", "I AM STUCK", "im stuck"])
def test_explicit_request_via_message_text(text):
    mentor, trail = quiet_mentor(), Trail()
    hit = trail.say(1, text)
    assert feed(mentor, trail.events) == [(hit.seq, 1, 1, "explicit_request")]


@pytest.mark.parametrize("text", ["I'm not stuck yet", "the stuck flag is set", "no hints needed"])
def test_messages_that_are_not_requests(text):
    mentor, trail = quiet_mentor(), Trail()
    trail.say(1, text)
    trail.add(1, "bash", 'grep -rn "I\'m stuck" .', command='grep -rn "I\'m stuck" .')  # a tool call, not the Dev
    assert feed(mentor, trail.events) == []


def test_stuck_patterns_are_configurable():
    mentor, trail = Mentor(MID, LADDER, MentorRules(**QUIET), stuck_patterns=[r"\bhelp me\b"]), Trail()
    trail.say(1, "I'm stuck")
    hit = trail.say(2, "please help me")
    assert feed(mentor, trail.events) == [(hit.seq, 2, 1, "explicit_request")]


# -- thrashing -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cycles", [1, 2])
def test_thrashing_fires_when_one_file_reverts_more_than_thrash_cycles_times(cycles):
    mentor, trail = quiet_mentor(thrash_cycles=cycles), Trail()
    shas = ["A", "B"] * 4
    edits = []
    for turn, sha in enumerate(shas[: cycles + 3], start=1):
        trail.edit(turn, "tmp/../pkg/a.py", sha)  # the path is normalised
        trail.edit(turn, "pkg/b.py")  # steady work elsewhere does not count
        edits.append(trail.events[-2])
    assert feed(mentor, trail.events[:-2]) == []  # A, B, then `cycles` reverts: not yet more than allowed
    assert feed(mentor, trail.events[-2:]) == [(edits[-1].seq, cycles + 3, 1, "thrashing")]
    assert mentor.decisions[0].snapshot["evidence"] == {"file": "pkg/a.py", "reverts": cycles + 1}


def test_new_content_and_reverts_spread_over_files_are_not_thrashing():
    mentor, trail = quiet_mentor(thrash_cycles=1), Trail()
    for turn, sha in enumerate("ABCDEF", start=1):
        trail.edit(turn, "a.py", sha)
    for path in ("b.py", "c.py"):
        for sha in "XYX":  # one revert on each file
            trail.edit(7, path, sha)
    for _ in range(3):
        trail.edit(8, "d.py", "same")  # an edit that changes nothing is not a revert
    assert feed(mentor, trail.events) == []


def test_thrashing_reads_write_file_content_when_no_hash_is_given():
    mentor, trail = quiet_mentor(thrash_cycles=1), Trail()
    for turn, content in enumerate(["x = 1", "x = 2", "x = 1"], start=1):
        trail.add(turn, "write_file", files=("a.py",), path="a.py", content=content)
    hit = trail.add(4, "write_file", files=("a.py",), path="a.py", content="x = 2")
    assert feed(mentor, trail.events) == [(hit.seq, 4, 1, "thrashing")]


def test_thrashing_counts_from_the_last_hint():
    mentor, trail = quiet_mentor(thrash_cycles=1), Trail()
    for turn, sha in enumerate("ABAB", start=1):
        trail.edit(turn, "a.py", sha)
    trail.edit(5, "a.py", "A")
    trail.edit(6, "a.py", "B")  # one revert since the hint: not more than allowed
    assert [(turn, level) for _, turn, level, _ in feed(mentor, trail.events)] == [(4, 1)]
    hit = trail.edit(7, "a.py", "A")
    assert feed(mentor, [hit]) == [(hit.seq, 7, 2, "thrashing")]


# -- wrong_direction -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_wrong_direction_fires_on_the_nth_distinct_modified_file(n):
    mentor, trail = quiet_mentor(wrong_direction_files=n), Trail()
    trail.test(1, passed=3)
    trail.add(2, "bash", "sed -i ...", files=("f0.py",), command="sed -i ...")  # a shell edit modifies files too
    for i in range(1, n):
        trail.read(2, "elsewhere.py")  # reading is not modifying
        trail.edit(2, f"f{i - 1}.py")  # a file already counted
        trail.test(2, passed=3)  # no rise
        trail.edit(3, f"f{i}.py")
    assert feed(mentor, trail.events[:-1]) == []
    hit = trail.events[-1]
    assert feed(mentor, [hit]) == [(hit.seq, 3, 1, "wrong_direction")]
    assert mentor.decisions[0].snapshot["evidence"] == {"files": [f"f{i}.py" for i in range(n)], "best_passed": 3}


def test_a_rise_in_passing_tests_restarts_the_wrong_direction_count():
    mentor, trail = quiet_mentor(wrong_direction_files=3), Trail()
    trail.test(1, passed=3)
    trail.edit(2, "a.py")
    trail.edit(2, "b.py")
    trail.test(3, passed=2)  # worse is not a rise
    trail.test(3, passed=3)  # back to the best is not a rise either
    trail.test(4, passed=4)  # a rise: a.py and b.py were progress
    trail.edit(5, "c.py")
    trail.edit(5, "a.py")
    assert feed(mentor, trail.events) == []
    hit = trail.edit(6, "d.py")
    assert feed(mentor, [hit]) == [(hit.seq, 6, 1, "wrong_direction")]
    assert mentor.decisions[0].snapshot["evidence"] == {"files": ["a.py", "c.py", "d.py"], "best_passed": 4}


# -- no_progress_after_hint ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("after", [1, 3])
def test_escalates_when_a_hint_brings_no_new_passing_test(after):
    mentor, trail = quiet_mentor(escalate_after_turns=after, max_level=3), Trail()
    trail.test(1, passed=2)
    trail.ask(1)  # L1 at turn 1
    for turn in range(2, 2 + after):  # the window: turns 2 .. 1+after
        trail.edit(turn, f"x{turn}.py")
        trail.test(turn, passed=2)
    fired = feed(mentor, trail.events)
    assert [(turn, level, rule) for _, turn, level, rule in fired] == [(1, 1, "explicit_request")]
    hit = trail.read(2 + after, "a.py")  # first event of the first turn past the window
    assert feed(mentor, [hit]) == [(hit.seq, 2 + after, 2, "no_progress_after_hint")]
    assert mentor.decisions[-1].snapshot["evidence"] == {"since_turn": 1, "best_passed": 2}
    for turn in range(3 + after, 30):
        trail.read(turn, "a.py")
    fired = feed(mentor, trail.events[hit.seq + 1 :])
    assert [(turn, level) for _, turn, level, _ in fired] == [(3 + 2 * after, 3)]  # then capped at max_level 3


def test_no_escalation_when_the_hint_led_to_a_new_passing_test():
    mentor, trail = quiet_mentor(escalate_after_turns=2), Trail()
    trail.test(1, passed=2)
    trail.ask(1)
    trail.test(3, passed=3)
    for turn in range(4, 30):
        trail.read(turn, "a.py")
    assert [rule for *_, rule in feed(mentor, trail.events)] == ["explicit_request"]


def test_progress_after_one_hint_does_not_spare_the_next():
    mentor, trail = quiet_mentor(escalate_after_turns=2), Trail()
    trail.test(1, passed=2)
    trail.ask(1)
    trail.test(2, passed=3)  # L1 helped
    trail.ask(3)
    trail.test(4, passed=3)
    trail.read(5, "a.py")
    assert [(turn, level) for _, turn, level, _ in feed(mentor, trail.events)] == [(1, 1), (3, 2)]
    hit = trail.read(6, "a.py")
    assert feed(mentor, [hit]) == [(hit.seq, 6, 3, "no_progress_after_hint")]


def test_no_escalation_before_any_mentor_hint():
    mentor, trail = quiet_mentor(escalate_after_turns=1), Trail()
    trail.test(1, passed=2)
    for turn in range(2, 20):
        trail.read(turn, "a.py")
    assert feed(mentor, trail.events) == []
