"""Distillation of crafted runs: slices, pairs, KTO rows, SFT segments and reviews."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessforge.distill import distill
from harnessforge.models.distill import KTORow, PreferencePair, Review, Segment
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import cli_command
from tests.llm_servers import AnthropicServer
from tests.test_analytics import OWN_DIFF, craft, explore, pad
from tests.trajectories import GT_FILE, CraftedRun


def rows(store, name, model):
    path = store.root / "distilled" / f"{name}.jsonl"
    return [model.model_validate_json(line) for line in path.read_bytes().splitlines()]


def craft_more(store) -> None:
    """Runs distillation needs beyond the analytics signals."""
    # stuck, then a hint that names a file, and out of it: a slice resolved after L2, a marked pair
    run = explore(CraftedRun(store, "rescued"))
    for i in range(3):
        run.say().edit(sha=f"r{i}").say().test(0, 2, "sig-a")
    run.hint(2, "same_error", "The ordering lives in src/order.py")
    run.say("Trying the hint.").read("src/order.py").say().edit("src/order.py", "o1").say().test(2, 0)
    run.finish("PASS", OWN_DIFF)
    # two runs of one milestone that part ways at their second turn, one passing
    for run_id, model, passes in (("twin-pass", "strong", True), ("twin-fail", "weak", False)):
        run = explore(CraftedRun(store, run_id, mid="m02", model=model))
        if passes:
            run.say().edit(sha="t1").say().test(1, 0).finish("PASS", OWN_DIFF)
        else:
            run.say().bash("ls -R").say().test(0, 1).finish("STUCK", OWN_DIFF)


@pytest.fixture(scope="module")
def distilled(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("distill") / "store")
    craft(store)
    craft_more(store)
    report = distill(store, load_rules(), log=lambda *_: None)
    return store, report


def test_stuck_slices_run_from_the_signal_to_the_resolution(distilled):
    store, report = distilled
    slices = {segment.provenance.run_id: segment for segment in rows(store, "stuck_slices", Segment)}
    assert slices["stuck"].label == "unresolved" and slices["stuck"].kind == "same_error"
    rescued = slices["rescued"]
    assert rescued.label == "resolved_after_hint" and rescued.hint_level == 2
    body, shown = rescued.messages[rescued.train_from :], rescued.messages[: rescued.train_from]
    assert body[0]["role"] == "assistant" and body[-1]["role"] == "tool" and "2 passed" in body[-1]["content"]
    # issue 33: trained from the turn it started to recover (after the hint), the stuck turns shown, not imitated
    assert body[0]["content"] == "Trying the hint."
    assert any("[hint L2]" in str(message["content"]) for message in shown)  # the hint the Dev got inside the slice
    assert sum(message["content"] == "0 passed, 2 failed" for message in shown) >= 1  # the stuck stretch: shown
    assert not any(message["content"] == "0 passed, 2 failed" for message in body)
    assert rescued.messages[0]["role"] == "system" and rescued.messages[1]["role"] == "user"
    # every tool result in a slice follows the assistant message that called it
    for segment in slices.values():
        called = set()
        for message in segment.messages:
            called |= {call["id"] for call in message.get("tool_calls") or []}
            if message["role"] == "tool":
                assert message["tool_call_id"] in called


def test_pairs_at_the_divergence_turn(distilled):
    store, _ = distilled
    pairs = {pair.id: pair for pair in rows(store, "dpo_pairs", PreferencePair)}
    hinted = pairs["acme__app/rescued/m01/hint-" + next(i.split("-")[-1] for i in pairs if "rescued" in i)]
    assert hinted.pair_type == "pre_vs_post_hint" and len(hinted.chosen) == len(hinted.rejected) == 1
    assert hinted.chosen[0]["tool_calls"][0]["function"]["name"] == "read_file"
    assert hinted.rejected[0]["tool_calls"][0]["function"]["name"] == "run_tests"
    # its chosen turn says "Trying the hint." and reads src/order.py, which only the hint named: by the
    # default `hint_leaks: give_hint` the pair gets the hint at the end of its prompt
    assert hinted.hint_in_prompt and hinted.prompt[-1]["content"] == "[hint L2] The ordering lives in src/order.py"
    assert hinted.evidence["hint_leak"] == "refers to the hint: 'the hint'" and not hinted.depends_on_hint
    followed = next(pair for pair in pairs.values() if pair.provenance.run_id == "hint_followed")
    assert not followed.depends_on_hint  # it searched for "priority", which the hint never said
    twin = pairs["acme__app/twin-pass/m02~twin-fail"]
    assert twin.pair_type == "fail_vs_pass" and twin.rejected_provenance.model == "weak"
    assert twin.prompt[-1]["role"] == "tool" and twin.divergence_turn == 3
    assert "edit_file" in json.dumps(twin.chosen) and "bash" in json.dumps(twin.rejected)


def test_hint_handling_is_configurable(tmp_path):
    store = Store(tmp_path / "store")
    craft_more(store)
    rules = load_rules()
    keep = rules.model_copy(update={"distill": rules.distill.model_copy(update={"hint_in_prompt": "keep"})})
    distill(store, keep, log=lambda *_: None)
    (pair,) = [
        candidate for candidate in rows(store, "dpo_pairs", PreferencePair) if candidate.pair_type == "pre_vs_post_hint"
    ]
    assert pair.hint_in_prompt and pair.prompt[-1]["content"].startswith("[hint L2]") and not pair.depends_on_hint
    mark = rules.model_copy(update={"distill": rules.distill.model_copy(update={"hint_leaks": "mark"})})
    distill(store, mark, log=lambda *_: None)
    (pair,) = [
        candidate for candidate in rows(store, "dpo_pairs", PreferencePair) if candidate.pair_type == "pre_vs_post_hint"
    ]
    assert pair.depends_on_hint and not pair.hint_in_prompt and "[hint" not in json.dumps(pair.prompt)
    drop = rules.model_copy(update={"distill": rules.distill.model_copy(update={"hint_leaks": "drop"})})
    distill(store, drop, log=lambda *_: None)
    assert [candidate.pair_type for candidate in rows(store, "dpo_pairs", PreferencePair)] == ["fail_vs_pass"]


def leaky_run(store, reasoning: str, text: str = "Let me look again.") -> None:
    """Stuck on one error, a hint with nothing to copy, then a turn whose reasoning (only) owns up to it."""
    run = explore(CraftedRun(store, "leaky"))
    for i in range(3):
        run.say().edit(sha=f"l{i}").say().test(0, 2, "sig-a")
    run.hint(1, "same_error", "Consider the filter again")
    run.say(text)
    run.events[-1].action.args["reasoning"] = reasoning
    run.read(GT_FILE).say().edit(sha="l9").say().test(2, 0)
    run.finish("PASS", OWN_DIFF)


@pytest.mark.parametrize(
    "reasoning, text, caught",
    [
        ("The hint points at the filter, so I re-read it.", "Let me look again.", "refers to the hint: 'The hint'"),
        ("Maybe the ordering.", "按照提示, I re-read the file.", "refers to the hint: '提示'"),
        ("Maybe the ordering is off.", "Let me look again.", ""),  # a change of mind of its own
    ],
)
def test_a_chosen_turn_that_refers_to_a_missing_hint_is_caught(tmp_path, reasoning, text, caught):
    store = Store(tmp_path / "store")
    leaky_run(store, reasoning, text)
    rules = load_rules()
    mark = rules.model_copy(update={"distill": rules.distill.model_copy(update={"hint_leaks": "mark"})})
    distill(store, mark, log=lambda *_: None)
    (pair,) = [pair for pair in rows(store, "dpo_pairs", PreferencePair) if pair.pair_type == "pre_vs_post_hint"]
    assert pair.evidence.get("hint_leak", "") == caught and pair.depends_on_hint == bool(caught)
    assert "[hint" not in json.dumps(pair.prompt)


def test_a_stuck_slice_gets_the_earlier_hint_its_turns_act_on(tmp_path):
    """A hint released long before a stuck stretch is outside the slice's context; a trained turn that
    says it follows the hint makes the slice carry it (or drops it, or marks it)."""
    store = Store(tmp_path / "store")
    run = explore(CraftedRun(store, "late"))
    run.say().edit(sha="a0").say().test(0, 2, "sig-a")
    run.hint(1, "explicit_request", "The sorting key is in src/order.py")
    for i in range(6):
        run.say(f"step {i}").bash(f"echo {i}")
    for i in range(3):
        run.say("again").edit(sha=f"b{i}").say().test(0, 2, "sig-b")
    run.say("As the hint said, check the key.").edit(sha="fix").say().test(2, 0)  # its recovery: trained
    run.finish("PASS", OWN_DIFF)
    rules = load_rules()
    outcomes = {}
    for policy in ("give_hint", "mark", "drop"):
        chosen = rules.model_copy(update={"distill": rules.distill.model_copy(update={"hint_leaks": policy})})
        distill(store, chosen, log=lambda *_: None)
        outcomes[policy] = [s for s in rows(store, "stuck_slices", Segment) if s.start_seq > run.events[0].seq]
    (given,) = [s for s in outcomes["give_hint"] if "As the hint said" in json.dumps(s.messages)]
    assert given.messages[2]["content"] == "[hint L1] The sorting key is in src/order.py"  # after the task
    assert not given.depends_on_hint and given.train_from > 2
    (marked,) = [s for s in outcomes["mark"] if "As the hint said" in json.dumps(s.messages)]
    assert marked.depends_on_hint and "The sorting key" not in json.dumps(marked.messages)
    assert not [s for s in outcomes["drop"] if "As the hint said" in json.dumps(s.messages)]


def test_kto_rows_label_loop_turns_and_progress_turns(distilled):
    store, _ = distilled
    kto = rows(store, "kto", KTORow)
    stuck = [row for row in kto if row.provenance.run_id == "stuck"]
    assert stuck and not any(row.label for row in stuck)
    progressive = [row for row in kto if row.provenance.run_id == "progressive_success"]
    assert len(progressive) == 3 and all(row.label for row in progressive)
    assert all(len(row.completion) == 1 and row.completion[0]["role"] == "assistant" for row in kto)


def test_sft_segments_of_passing_runs(distilled):
    store, _ = distilled
    sft = rows(store, "sft", Segment)
    assert {segment.provenance.run_id for segment in sft if segment.kind == "milestone"} == {
        "hint_followed",
        "progressive_success",
        "efficient_path",
        "memorisation",
        "git_history_probe",
        "rescued",
        "twin-pass",
    }
    phases = {segment.kind: segment for segment in sft if segment.provenance.run_id == "progressive_success"}
    assert set(phases) == {"milestone", "explore", "implement", "debug", "verify"}  # no plan stated
    explore_cut, implement, debug = phases["explore"], phases["implement"], phases["debug"]
    assert implement.train_from == len(explore_cut.messages)  # the phases follow each other
    assert debug.train_from == len(implement.messages)
    assert "edit_file" in json.dumps(implement.messages[implement.train_from])
    assert "1 passed, 2 failed" in implement.messages[-1]["content"]  # its first test run failed: debug follows


def test_reviews_grade_difficulty_and_value(distilled):
    store, report = distilled
    reviews = {review.run_id: review for review in rows(store, "reviews", Review)}
    assert (reviews["efficient_path"].difficulty, reviews["efficient_path"].discard_reasons) == (1, ["too_easy"])
    assert (reviews["progressive_success"].difficulty, reviews["progressive_success"].rl_value) == (3, "medium")
    assert (reviews["hint_followed"].difficulty, reviews["hint_followed"].rl_value) == (4, "high")
    # rescued by an L2 hint with one change of direction: 5 needs `hard_direction_changes` (2) of them
    assert (reviews["rescued"].difficulty, reviews["rescued"].rl_value) == (4, "high")
    assert "changed direction" not in reviews["rescued"].why
    # trajectory quality: waste per tool call, and a loop never left
    assert reviews["efficient_path"].trajectory_quality == "good"
    assert reviews["wasted_exploration"].trajectory_quality in ("fair", "poor")
    assert "1 edits undone" in reviews["wasted_exploration"].quality_why
    assert reviews["stuck"].trajectory_quality == "poor" and "a loop it never left" in reviews["stuck"].quality_why
    assert "suspected_memorisation" in reviews["memorisation"].discard_reasons
    assert "cheating" in reviews["git_history_probe"].discard_reasons
    assert reviews["stuck"].rl_value == "reject" and "agent_loop" in reviews["stuck"].discard_reasons
    # issue 33: a run that did not pass is never easy and never a positive, whatever its few edit -> test cycles
    failed = reviews["twin-fail"]
    assert (failed.status, failed.difficulty, failed.rl_value) == ("STUCK", 4, "reject"), failed
    assert failed.discard_reasons == ["unresolved"] and "did not pass (STUCK) without a hint" in failed.why
    assert failed.trajectory_quality == "fair" and "it did not pass" in failed.quality_why
    assert all(review.rules_hash == load_rules().hash for review in reviews.values())
    manifest = json.loads((store.root / "distilled" / "manifest.json").read_text())
    assert manifest["counts"] == report.counts and manifest["runs"] == 11


def test_difficulty_5_needs_enough_direction_changes(tmp_path):
    from harnessforge.distill.reviewer import Reviewer

    store = Store(tmp_path / "store")
    craft_more(store)
    rules = load_rules()
    one = rules.distill.reviewer.model_copy(update={"hard_direction_changes": 1})
    distill(store, rules, reviewer=Reviewer(one, rules.hash), log=lambda *_: None)
    rescued = next(review for review in rows(store, "reviews", Review) if review.run_id == "rescued")
    assert rescued.difficulty == 5 and "changed direction 1 times after hints" in rescued.why


def test_a_run_with_a_corrupt_log_is_skipped_and_the_rest_distils(tmp_path):
    store = Store(tmp_path / "store")
    CraftedRun(store, "good").say().read(GT_FILE).say().edit().say().test(1, 0).finish("PASS")
    pad(CraftedRun(store, "bad")).say().test(1, 0).finish("PASS")
    log = store.root / "trajectories" / "acme__app" / "bad" / "m01" / "trajectory.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3] + [b"{broken\n"] + lines[3:]))
    messages = []
    report = distill(store, load_rules(), log=messages.append)
    assert any("bad/m01" in message and "trajectory.jsonl:4: not valid JSON" in message for message in report.skipped)
    assert report.analytics.load.bad_lines and report.analytics.load.bad_lines[0].line == 4
    assert {segment.provenance.run_id for segment in rows(store, "sft", Segment)} == {"good"}


def test_the_distill_command(tmp_path):
    import subprocess

    store = Store(tmp_path / "store")
    craft_more(store)
    cmd = [str(Path(sys.executable).parent / "harnessforge"), "--store", str(store.root), "distill"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "loaded 3 trajectories" in proc.stdout and "dpo_pairs" in proc.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert "loaded 0 trajectories (0 events), 3 unchanged" in again.stdout


def test_an_llm_judge_grades_through_the_reviewer_interface_and_the_rules_evidence_stands(tmp_path):
    """`distill --judge anthropic`: the real SDK against a local Messages server. A usable verdict
    replaces the rule-based grade; rule-based discard reasons stand; an unusable answer or an API
    failure keeps the rule-based review and says why."""
    store = Store(tmp_path / "store")
    for run_id in ("a-normal", "b-probe", "c-garbage", "d-outage"):
        run = explore(CraftedRun(store, run_id))
        if run_id == "b-probe":
            run.say().bash("git log --all --oneline | head", "abc123 fix")
        run.say().edit(sha="n1").say().test(1, 0)
        pad(run).finish("PASS", OWN_DIFF)
    verdict = {
        "difficulty": 4,
        "rl_value": "high",
        "discard_reasons": [],
        "trajectory_quality": "poor",
        "why": "hard-won and clean",
    }
    with AnthropicServer() as server:
        server.push(
            AnthropicServer.message(AnthropicServer.text(f"My grade:\n```json\n{json.dumps(verdict)}\n```")),
            AnthropicServer.message(AnthropicServer.text(json.dumps({**verdict, "why": "looks fine to me"}))),
            AnthropicServer.message(AnthropicServer.text("A fine run, 4 out of 5.")),
            server.error(400, "prompt is malformed"),
        )
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test", "COLUMNS": "200"}
        cmd = cli_command(store, "distill --judge anthropic --judge-model claude-haiku-4-5")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        bodies = server.bodies
    assert proc.returncode == 0, proc.stderr
    reviews = {review.run_id: review for review in rows(store, "reviews", Review)}
    normal, probe, garbage, outage = (reviews[run_id] for run_id in ("a-normal", "b-probe", "c-garbage", "d-outage"))
    assert (normal.reviewer, normal.difficulty, normal.rl_value, normal.why) == (
        "llm:claude-sonnet-4-5",
        4,
        "high",
        "hard-won and clean",
    )
    assert normal.trajectory_quality == "poor"  # the judge's grade of the trajectory replaces the rules'
    assert probe.reviewer.startswith("llm:") and probe.rl_value == "reject" and probe.discard_reasons == ["cheating"]
    assert garbage.reviewer == "rules" and "the judge's answer was unusable" in garbage.why
    assert outage.reviewer == "rules" and "the judge failed" in outage.why and "prompt is malformed" in outage.why
    assert "d-outage/m01: the judge failed" in proc.stderr.replace("\n", " ")
    # each answered call: 10 input and 5 output tokens of claude-haiku-4-5 ($1 / $5 per million), unusable or not
    assert normal.judge_cost_usd == garbage.judge_cost_usd == pytest.approx(35e-6) and outage.judge_cost_usd is None
    manifest = json.loads(store.distilled_manifest().read_text())
    assert manifest["judge_cost_usd"] == pytest.approx(3 * 35e-6)
    first = bodies[0]
    assert first["model"] == "claude-haiku-4-5" and "tools" not in first
    assert "Difficulty: 5 needed L2+" in str(first["system"]) and '"cheating_probes": 0' in str(first["messages"])
    assert '"cheating_probes": 1' in str(bodies[1]["messages"])  # the probe run's signals went to the judge
    # it read the statement and the trajectory, step by step, and the rules' grade of it
    asked = bodies[1]["messages"][0]["content"]
    asked = asked if isinstance(asked, str) else asked[0]["text"]
    assert "The task statement:" in asked and "The trajectory, one line per step:" in asked
    assert 'bash {"command": "git log --all --oneline | head"} -> abc123 fix' in asked
    assert "trajectory quality good (5 tool calls" in asked


def test_a_damaged_plan_is_said_and_not_silently_no_task_cards(tmp_path):
    """Issue 32: an unreadable plan.json silently emptied the task cards."""
    from harnessforge.distill.tasks import task_cards

    store = Store(tmp_path / "store")
    key = "acme__app"
    store.repo_dir(key).mkdir(parents=True)
    (store.repo_dir(key) / "repo.json").write_text("{}\n")
    store.plan_file(key).write_text('{"repo": ')
    store.images_file(key).parent.mkdir(parents=True, exist_ok=True)
    store.images_file(key).write_text("{}\n")
    said: list[str] = []
    assert task_cards(store, [], [], "rules", load_rules().distill, log=said.append) == []
    assert len(said) == 1 and "plan.json: not valid JSON" in said[0] and "acme__app gets no task cards" in said[0]
    store.plan_file(key).unlink()  # not planned at all: nothing to say
    assert task_cards(store, [], [], "rules", load_rules().distill, log=said.append) == [] and len(said) == 1


def test_no_sft_row_imitates_a_stretch_or_a_run_that_did_not_succeed(distilled, tmp_path):
    """Issue 33: the `agent_loop` gate let a looping run's stuck slices out, and unresolved slices went to the SFT
    dialects, so a trainer imitated the very loop the Mentor exists to break. Now every SFT-dialect row is of a
    passing run, or a resolved slice trained from its recovery; a run that did not pass is a negative only."""
    from harnessforge.export import export

    store, _ = distilled
    reviews = {review.run_id: review for review in rows(store, "reviews", Review)}
    out = tmp_path / "out"
    export(store, ["all"], out, allow_synthetic=True)
    sft_rows = [
        json.loads(line)
        for family in ("sft", "stuck_slices", "chains")
        for path in (out / family).glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sft_rows and any(row["run_id"] == "rescued" for row in sft_rows)
    for row in sft_rows:
        assert row.get("resolution") != "unresolved", row["id"]
        if reviews[row["run_id"]].status != "PASS":  # a loop's run: only a slice it got out of
            assert row["kind"] != "milestone" and row["resolution"].startswith("resolved"), row["id"]
    slices = {segment.id: segment for segment in rows(store, "stuck_slices", Segment)}
    assert any(segment.label == "unresolved" for segment in slices.values())  # distilled, for analysis
    kto = [json.loads(line) for line in (out / "kto" / "trl.jsonl").read_text().splitlines()]
    failed = {run_id for run_id, review in reviews.items() if review.status != "PASS"}
    assert failed and not [row for row in kto if row["run_id"] in failed and row["label"]]  # negatives only
    assert any(row["run_id"] in failed and not row["label"] for row in kto)


def test_a_run_that_never_acted_is_poor_and_not_easy(tmp_path):
    """Issue 33: a real small model that never ran a test: its do-nothing STUCK run was "difficulty 1, solved in one
    go", `too_easy` (which the gates admit to SFT and ATIF) and "good (0% waste)"."""
    store = Store(tmp_path / "store")
    CraftedRun(store, "idle").say("I will look into it.").finish("STUCK", OWN_DIFF)
    distill(store, load_rules(), log=lambda *_: None)
    (review,) = rows(store, "reviews", Review)
    assert (review.difficulty, review.rl_value, review.discard_reasons) == (4, "reject", ["unresolved"])
    assert review.trajectory_quality == "poor" and "it never acted" in review.quality_why


def test_the_poc_counts_only_runs_that_passed_and_were_kept(distilled):
    """Issue 33: "≥ 50% of milestone runs pass the Reviewer" counted STUCK and too-easy runs (it read 100% over two
    STUCK runs). A run passes the Reviewer when it passed its milestone and has no discard reason."""
    from harnessforge.distill.poc import criteria

    store, _ = distilled
    reviews = rows(store, "reviews", Review)
    kept = [review.run_id for review in reviews if review.status == "PASS" and review.rl_value != "reject"]
    assert kept and len(kept) < len(reviews)
    assert {"stuck", "twin-fail", "efficient_path"}.isdisjoint(kept)  # STUCK, STUCK, too easy
    (share,) = [one for one in criteria(store, load_rules()) if one.name == "runs pass the Reviewer"]
    assert share.measured.startswith(f"{len(kept)} of {len(reviews)} ")
