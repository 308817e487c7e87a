"""What the Mentor's decisions release and record: one ladder level up each time (empty levels skipped), the
Dev's response after the window, the snapshot, the JSON log, and a replay of recorded events that rebuilds them."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from harnessforge.harness.mentor import Mentor
from harnessforge.models.plan import HINT_LEVEL_NAMES, Hint, HintLadder
from harnessforge.models.trajectory import Event, MentorDecision
from harnessforge.rules import MentorRules, load_rules
from tests.mentor_trail import LADDER, MID, QUIET, Trail, feed, quiet_mentor

# -- levels --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_level", [0, 2, 4])
def test_each_release_is_one_level_up_and_never_above_max_level(max_level):
    mentor, trail = quiet_mentor(max_level=max_level), Trail()
    for turn in range(1, 10):
        trail.ask(turn)
    fired = feed(mentor, trail.events)
    assert [(turn, level) for _, turn, level, _ in fired] == [(i, i) for i in range(1, max_level + 1)]
    assert [decision.hint for decision in mentor.decisions] == [f"hint L{i}" for i in range(1, max_level + 1)]
    assert mentor.level == max_level


def test_empty_levels_are_skipped_to_the_next_with_material_and_the_skip_is_recorded():
    levels = [Hint(level=i, name=name, content=f"hint L{i}") for i, name in enumerate(HINT_LEVEL_NAMES)]
    levels[1] = Hint(level=1, name="issue_bodies", empty_reason="no commit message bodies")
    levels[2] = Hint(level=2, name="pr_descriptions", empty_reason="no PR descriptions")
    ladder = HintLadder(milestone_id=MID, levels=levels)
    mentor, trail = Mentor(MID, ladder, MentorRules(**QUIET)), Trail()
    for turn in range(1, 6):
        trail.ask(turn)
    fired = feed(mentor, trail.events)
    assert [level for _, _, level, _ in fired] == [3, 4]  # L1 and L2 have nothing of their own
    first = mentor.decisions[0]
    assert first.hint == "hint L3"
    assert first.skipped_levels == [
        {"level": 1, "reason": "no commit message bodies"},
        {"level": 2, "reason": "no PR descriptions"},
    ]
    assert mentor.decisions[1].skipped_levels == [] and mentor.next_level is None


def test_a_ladder_with_no_material_left_releases_nothing():
    levels = [Hint(level=0, name="issue_titles", content="hint L0")]
    levels += [Hint(level=i, name=name, empty_reason="nothing") for i, name in enumerate(HINT_LEVEL_NAMES) if i]
    mentor, trail = Mentor(MID, HintLadder(milestone_id=MID, levels=levels), MentorRules(**QUIET)), Trail()
    trail.ask(1)
    assert feed(mentor, trail.events) == [] and mentor.level == 0


def test_a_hint_needs_content_or_a_reason_to_be_empty():
    with pytest.raises(ValueError, match="no content and no empty_reason"):
        Hint(level=1, name="issue_bodies", content="  ")


# -- responses -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 3])
def test_response_is_filled_when_the_window_is_over(window):
    mentor, trail = quiet_mentor(response_window_turns=window), Trail()
    trail.read(1, "a.py")
    trail.test(1, passed=1)
    trail.ask(2)
    trail.read(2, "same_turn.py")  # same model call as the trigger: the Dev had not seen the hint yet
    trail.read(3, "a.py")
    trail.edit(3, "b.py")
    trail.test(2 + window, passed=4, failed=0)
    feed(mentor, trail.events)
    assert mentor.decisions[0].response is None
    late = trail.edit(3 + window, "late.py")  # first event past the window
    mentor.observe(late)
    assert mentor.decisions[0].response == {
        "turns_observed": window,
        "complete": True,
        "direction_changed": True,
        "new_files": ["b.py"],
        "tests_improved": True,
        "passed_before": 1,
        "passed_after": 4,
    }


def test_response_when_the_dev_stays_on_course():
    mentor, trail = quiet_mentor(response_window_turns=2), Trail()
    trail.edit(1, "a.py")
    trail.test(1, passed=3)
    trail.ask(1)
    trail.test(1, passed=5, failed=0)  # same model call as the trigger: not a response to the hint
    trail.edit(2, "a.py")
    trail.add(2, "list_dir", path=".")
    trail.add(2, "search", pattern="parse", path="src")
    trail.test(3, passed=3)
    trail.read(4, "a.py")
    feed(mentor, trail.events)
    response = mentor.decisions[0].response
    assert response is not None
    assert (response["direction_changed"], response["new_files"], response["tests_improved"]) == (False, [], False)


def test_milestone_end_fills_pending_responses_as_incomplete():
    mentor, trail = quiet_mentor(response_window_turns=3), Trail()
    trail.test(1, passed=1)
    trail.ask(1)
    trail.read(2, "new.py")
    trail.add(2, "milestone_end", role="navigator")
    trail.ask(3)  # nothing after the end counts
    assert [rule for *_, rule in feed(mentor, trail.events)] == ["explicit_request"]
    assert mentor.decisions[0].response == {
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
    mentor, trail = quiet_mentor(same_error_runs=2), Trail()
    trail.edit(1, "b.py")
    trail.edit(1, "a.py")
    trail.read(1, "c.py")
    trail.test(1, passed=1, failed=2, sig="E")
    trail.edit(2, "a.py")
    trail.test(2, passed=1, failed=2, sig="E")
    feed(mentor, trail.events)
    assert mentor.decisions[0].snapshot == {
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


def _session(trail: Trail, turn: int) -> list[Callable[[], Event]]:
    """The Dev's steps in one turn: spread files, then flip a.py back and forth, ask, then repeat one failure."""
    if turn <= 5:
        return [lambda: trail.test(turn, passed=1, sig="EF"[turn % 2]), lambda: trail.edit(turn, f"f{turn}.py")]
    if turn <= 10:
        return [lambda: trail.edit(turn, "a.py", "AB"[turn % 2]), lambda: trail.say(turn, "thinking")]
    if turn == 11:
        return [lambda: trail.say(turn, "I'm stuck")]
    return [lambda: trail.test(turn, passed=1, sig="E"), lambda: trail.read(turn, "b.py")]


def _live_run(rules: MentorRules) -> tuple[Mentor, list[Event]]:
    """A recorded milestone as the harness writes it: navigator, Dev, verifier and the Mentor's own hint events."""
    mentor, trail = Mentor(MID, LADDER, rules), Trail()
    mentor.observe(trail.add(0, "milestone_start", role="navigator"))
    for turn in range(1, 21):
        for step in _session(trail, turn):
            if decision := mentor.observe(step()):
                assert mentor.observe(trail.add(turn, "hint", decision.hint, role="mentor")) is None
        if turn % 5 == 0:  # a submission, failed (a failing test run too)
            mentor.observe(trail.verify(turn, passed=0, failed=5))
    mentor.observe(trail.add(20, "milestone_end", role="navigator"))
    return mentor, trail.events


def test_replaying_the_recorded_events_rebuilds_identical_decisions():
    rules = load_rules().harness.mentor.model_copy(update={"cooldown_turns": 3})
    live, events = _live_run(rules)
    assert [(decision.turn_id, decision.level, decision.rule) for decision in live.decisions] == [
        (5, 1, "wrong_direction"),
        (10, 2, "thrashing"),
        (11, 3, "explicit_request"),
        (14, 4, "same_error"),
    ]
    assert all(decision.response for decision in live.decisions)
    replayed = Mentor.replay(MID, LADDER, rules, events)
    assert replayed.log() == live.log()
    again = Mentor.replay(MID, LADDER, rules, events[: len(events) // 2])
    for event in events:  # resuming over events already seen: repeated seqs are ignored
        again.observe(event)
    assert again.log() == live.log()


def test_log_is_json_and_reads_back_as_decisions():
    mentor, trail = quiet_mentor(), Trail()
    trail.test(1, passed=0)
    trail.ask(2)
    feed(mentor, trail.events)
    log = json.loads(json.dumps(mentor.log()))
    assert [MentorDecision.model_validate(decision) for decision in log] == mentor.decisions
    assert log[0]["milestone_id"] == MID and log[0]["level"] == 1


def test_default_rules_from_rules_yaml():
    mentor, trail = Mentor(MID, LADDER, load_rules().harness.mentor), Trail()
    for turn in range(1, 8):
        trail.test(turn, passed=0, sig="E")  # a streak long enough, but turns 1-7 are the cooldown
    hit = trail.read(8, "a.py")
    assert feed(mentor, trail.events) == [(hit.seq, 8, 1, "same_error")]


def test_events_of_another_milestone_or_ladder_are_refused():
    with pytest.raises(ValueError, match="m02"):
        Mentor("m02", LADDER, MentorRules(**QUIET))
    event = Trail().ask(1).model_copy(update={"milestone_id": "m02"})
    with pytest.raises(ValueError, match="m02"):
        quiet_mentor().observe(event)
