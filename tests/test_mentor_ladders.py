"""The Mentor as the seeds write it, from the rules: stuck phrases in any language and in the Dev's reasoning,
one request per turn, seed 000's ladder (3/5/8/12 failing runs in a row, one file edited over and over for L2)
and the framing of each level."""

from __future__ import annotations

import pytest

from harnessforge.harness.mentor import Mentor
from harnessforge.rules import MentorRules, load_rules
from tests.mentor_trail import LADDER, MID, QUIET, Trail, feed, quiet_mentor


@pytest.mark.parametrize(
    "text, reasoning",
    [
        ("[STUCK] the parser keeps failing", ""),
        ("", "I'm not sure where to look next."),
        ("我卡住了，需要提示", ""),
        ("", "不知道从哪里入手"),
        ("", "I am stuck."),
    ],
)
def test_stuck_phrases_are_read_in_the_text_and_the_reasoning(text, reasoning):
    mentor, trail = quiet_mentor(), Trail()
    hit = trail.add(1, "message", text, reasoning=reasoning)
    assert feed(mentor, trail.events) == [(hit.seq, 1, 1, "explicit_request")]
    assert mentor.decisions[0].snapshot["evidence"]["text"] == (text or reasoning)


def test_saying_stuck_and_calling_request_hint_in_one_turn_is_one_request():
    mentor, trail = quiet_mentor(), Trail()
    said = trail.add(1, "message", "", reasoning="I am stuck.")
    trail.ask(1)
    asked = trail.ask(2)  # the next turn asks again: that is a new request
    assert feed(mentor, trail.events) == [(said.seq, 1, 1, "explicit_request"), (asked.seq, 2, 2, "explicit_request")]


def test_stuck_phrases_come_from_the_rules():
    rules = MentorRules(**{**QUIET, "stuck_phrases": [r"\bhelp me\b"]})
    mentor, trail = Mentor(MID, LADDER, rules), Trail()
    trail.say(1, "I'm stuck")
    hit = trail.say(2, "please help me")
    assert feed(mentor, trail.events) == [(hit.seq, 2, 1, "explicit_request")]


def seed000(**ladder) -> Mentor:
    rules = load_rules().harness.mentor
    ladder_rules = rules.seed000.model_copy(update=ladder)
    return Mentor(MID, LADDER, rules.model_copy(update={"ladder": "seed000", "seed000": ladder_rules}))


def test_seed000_releases_levels_after_3_5_8_and_12_failing_runs_in_a_row():
    mentor, trail = seed000(), Trail()
    for turn in range(1, 13):
        trail.test(turn, passed=1, sig="E" if turn % 2 else "F")  # failing, not always the same way
    assert [(turn, level, rule) for _, turn, level, rule in feed(mentor, trail.events)] == [
        (3, 1, "consecutive_failures"),
        (5, 2, "consecutive_failures"),
        (8, 3, "consecutive_failures"),
        (12, 4, "consecutive_failures"),
    ]  # no cooldown: its counts are its waiting


def test_seed000_counts_again_after_a_rise_in_passing_tests_and_counts_failed_submissions():
    mentor, trail = seed000(), Trail()
    trail.test(1, passed=1)
    trail.test(2, passed=1)
    trail.test(3, passed=2)  # a rise: the count starts again from this failing run
    trail.verify(4, passed=2)
    hit = trail.test(5, passed=2)
    assert feed(mentor, trail.events) == [(hit.seq, 5, 1, "consecutive_failures")]


def test_seed000_gives_l2_when_one_file_is_edited_over_and_over():
    mentor, trail = seed000(same_file_edits=3), Trail()
    trail.edit(1, "a.py")
    trail.edit(2, "a.py")
    trail.ask(2)  # L1 by request: the edits still count
    hit = trail.edit(3, "a.py")
    trail.edit(4, "a.py")
    assert [rule for *_, rule in feed(mentor, trail.events)] == ["explicit_request", "same_file_edits"]
    assert mentor.decisions[-1].level == 2 and mentor.decisions[-1].snapshot["evidence"]["file"] == "a.py"
    assert mentor.decisions[-1].turn_id == hit.turn_id
    for turn in range(5, 12):
        trail.edit(turn, "a.py")
    assert (
        feed(mentor, trail.events[-7:]) == [] and len(mentor.decisions) == 2
    )  # above same_file_level, edits alone release nothing


def test_each_level_is_framed_by_the_chosen_template_after_its_mark():
    rules = load_rules().harness.mentor
    plain, framed = rules, rules.model_copy(update={"framing": "mentor"})
    assert plain.frame(2, "The PR says X.", "same_error", 7) == "[hint L2] The PR says X."
    # the first hint comes inside the task: a reader saw "[hint L0] - add >= and <=" and took it for a stray label
    first = plain.frame(0, "- add >= and <=", "milestone_start", 0)
    assert first == "[hint L0] Where this work comes from (its issue and pull-request titles):\n- add >= and <="
    text = framed.frame(1, "Add a CSV export.", "same_error", 7)
    assert text.startswith("[hint L1] [Mentor] You seem to be stuck.") and text.endswith("\nAdd a CSV export.")
    custom = rules.model_copy(update={"framing": "mine", "framings": {"mine": {3: "({rule}, turn {turn}) {hint}"}}})
    assert custom.frame(3, "a.py", "thrashing", 9) == "[hint L3] (thrashing, turn 9) a.py"
    assert custom.frame(4, "diff", "thrashing", 9) == "[hint L4] diff"  # a level without a template
