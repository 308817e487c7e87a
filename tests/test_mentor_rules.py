"""When each of the Mentor's rules fires on hand-built event sequences: the cooldown, same_error,
explicit_request, thrashing, wrong_direction and no_progress_after_hint, and what evidence each records."""

from __future__ import annotations

import pytest

from harnessforge.harness.mentor import Mentor
from harnessforge.rules import MentorRules
from tests.mentor_trail import LADDER, MID, QUIET, Trail, feed, mentor

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
