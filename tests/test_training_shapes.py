"""Training shapes beyond one milestone's turns: DPO pairs across hint levels, chain rows, stuck slices
bounded in turns, and the explore / plan / implement / debug / verify phases, on crafted runs."""

import json

import datasets
import pytest

from harnessforge.distill import assemble, distill
from harnessforge.export import export
from harnessforge.models.distill import ChainSegment, PreferencePair, Segment
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import OWN_DIFF, explore
from tests.test_distill import rows
from tests.trajectories import GT_FILE, CraftedRun


def with_distill(rules, **changes):
    """`rules` with some `distill` keys changed (validated, as the rules file would be)."""
    distill_rules = rules.distill.model_validate(rules.distill.model_dump() | changes)
    return rules.model_copy(update={"distill": distill_rules})


def quiet(store, rules=None, **kw):
    return distill(store, rules or load_rules(), log=lambda *_: None, **kw)


def tool_results_follow_their_calls(messages) -> None:
    called = set()
    for message in messages:
        called |= {call["id"] for call in message.get("tool_calls") or []}
        if message["role"] == "tool":
            assert message["tool_call_id"] in called


# ---- DPO pairs across hint levels ---------------------------------------------------------------
def hinted_runs(store) -> None:
    """m01: a pass without hints against a pass after an L2 hint; m02: two stuck runs, L0 against L1."""
    explore(CraftedRun(store, "unaided", model="strong")).say().edit(sha="u1").say().test(1, 0).finish("PASS", OWN_DIFF)
    run = explore(CraftedRun(store, "helped", model="weak")).say().bash("ls -R")
    run.say().test(0, 1, "sig-a").hint(2, "same_error", "Filter on item.enabled")
    run.say().edit(sha="h1").say().test(1, 0).finish("PASS", OWN_DIFF)
    explore(CraftedRun(store, "lost", mid="m02")).say().read("README.md", "# app").say().test(0, 1).finish("STUCK")
    run = explore(CraftedRun(store, "lost-hinted", mid="m02")).say().bash("pytest -x", "1 failed", code=1)
    run.hint(1, "same_error").say().test(0, 1).finish("STUCK")


def test_runs_of_one_milestone_pair_the_lower_hint_level_against_the_higher(tmp_path):
    store = Store(tmp_path / "store")
    hinted_runs(store)
    quiet(store)
    pairs = {pair.id: pair for pair in rows(store, "dpo_pairs", PreferencePair) if pair.pair_type == "low_vs_high_hint"}
    assert set(pairs) == {"acme__app/unaided/m01~helped", "acme__app/lost/m02~lost-hinted"}
    passing = pairs["acme__app/unaided/m01~helped"]
    assert passing.provenance.run_id == "unaided" and passing.rejected_provenance.run_id == "helped"
    assert passing.evidence == {
        "chosen_status": "PASS",
        "rejected_status": "PASS",
        "chosen_model": "strong",
        "rejected_model": "weak",
        "chosen_max_hint_level": 0,
        "rejected_max_hint_level": 2,
    }
    # cut at their first differing turn: an edit against a shell listing, after the shared exploration
    assert passing.prompt[-1]["role"] == "tool" and passing.divergence_turn == 3
    assert "edit_file" in json.dumps(passing.chosen) and "ls -R" in json.dumps(passing.rejected)
    assert "[hint" not in json.dumps(passing.prompt)
    failing = pairs["acme__app/lost/m02~lost-hinted"]
    assert (failing.evidence["chosen_status"], failing.evidence["rejected_max_hint_level"]) == ("STUCK", 1)

    rules = load_rules()
    only_passing = with_distill(rules, hint_level_pairs={"enabled": True, "min_level_gap": 1, "only_passing": True})
    quiet(store, only_passing)
    types = [(pair.pair_type, pair.id) for pair in rows(store, "dpo_pairs", PreferencePair)]
    assert ("low_vs_high_hint", "acme__app/unaided/m01~helped") in types
    assert "acme__app/lost/m02~lost-hinted" not in {pair_id for _, pair_id in types}
    wide = with_distill(rules, hint_level_pairs={"min_level_gap": 3})
    quiet(store, wide)
    assert not [pair for pair in rows(store, "dpo_pairs", PreferencePair) if pair.pair_type == "low_vs_high_hint"]
    off = with_distill(rules, hint_level_pairs={"enabled": False})
    quiet(store, off)
    assert not [pair for pair in rows(store, "dpo_pairs", PreferencePair) if pair.pair_type == "low_vs_high_hint"]


# ---- chain rows -------------------------------------------------------------------------------
def milestone(store, run_id: str, mid: str, status: str = "PASS", **kw) -> CraftedRun:
    run = CraftedRun(store, run_id, mid=mid, **kw)
    run.events[0].action.content = f"# Task of {mid}"
    run.say(f"Working on {mid}.").search("def run").say().read(GT_FILE).say().edit(sha=f"{run_id}-{mid}")
    if status == "PASS":
        run.say().test(1, 0)
    else:
        run.say().test(0, 1)
    return run.finish(status, OWN_DIFF)


def chain_store(store) -> None:
    """`long`: m01 m02 pass, m03 is stuck, m04 m05 pass; `short`: m01 m02 pass; `single`: m01 only."""
    for mid, status in (("m01", "PASS"), ("m02", "PASS"), ("m03", "STUCK"), ("m04", "PASS"), ("m05", "PASS")):
        milestone(store, "long", mid, status)
    for mid in ("m01", "m02"):
        milestone(store, "short", mid)
    milestone(store, "single", "m01")


def test_a_chain_row_joins_a_runs_passing_milestones_with_their_boundaries_marked(tmp_path):
    store = Store(tmp_path / "store")
    chain_store(store)
    report = quiet(store)
    chains = {chain.id: chain for chain in rows(store, "chains", ChainSegment)}
    assert set(chains) == {
        "acme__app/long/chain-m01..m02",
        "acme__app/long/chain-m04..m05",
        "acme__app/short/chain-m01..m02",
    }
    assert report.counts["chains"] == 3  # `single` has one milestone: its SFT row is enough
    short = chains["acme__app/short/chain-m01..m02"]
    assert (short.label, short.cut, short.kind, short.train_from) == ("whole", None, "chain", 2)
    assert short.milestones == ["m01", "m02"] and [run.milestone_id for run in short.runs] == ["m01", "m02"]
    assert short.provenance.milestone_id == "m01..m02" and short.provenance.run_id == "short"
    assert [short.messages[index]["content"] for index in short.boundaries] == [
        "[milestone m01] # Task of m01",
        "[milestone m02] # Task of m02",
    ]
    assert short.boundaries[0] == 1 and [m["role"] for m in short.messages].count("system") == 1
    sft = {
        segment.provenance.milestone_id: segment
        for segment in rows(store, "sft", Segment)
        if segment.provenance.run_id == "short" and segment.kind == "milestone"
    }
    milestones = [sft["m01"], sft["m02"]]
    assert len(short.messages) == 1 + sum(len(segment.messages) - 1 for segment in milestones)
    assert short.messages[short.boundaries[1] + 1] == sft["m02"].messages[2]  # m02's first Dev turn follows its task
    tool_results_follow_their_calls(short.messages)
    # the stuck milestone ends one stretch and starts the next: both are parts of the run
    first, second = chains["acme__app/long/chain-m01..m02"], chains["acme__app/long/chain-m04..m05"]
    assert (first.label, first.cut) == ("part", "ends before m03 (STUCK)")
    assert (second.label, second.cut) == ("part", "starts after m03 (STUCK)")
    assert "Task of m03" not in json.dumps(first.messages + second.messages)


def test_a_compacted_milestone_is_cut_into_rows_the_model_saw_and_ends_a_chain(tmp_path):
    """m03's outputs were masked mid-run: its turns before the compaction read them whole, those after read stubs.
    Its SFT rows are one per stretch, each what its turns saw; no chain row holds it (never seen whole)."""
    store = Store(tmp_path / "store")
    for mid in ("m01", "m02", "m04", "m05"):
        milestone(store, "long", mid)
    run = CraftedRun(store, "long", mid="m03")
    run.say("Looking.").read(GT_FILE, "ORIGINAL SOURCE").say().search("def run", "src/app.py:1")
    run.compact().say("Editing.").edit(sha="c3").say().test(1, 0).finish("PASS", OWN_DIFF)
    quiet(store)
    first, second = (
        s for s in rows(store, "sft", Segment) if s.provenance.milestone_id == "m03" and s.kind == "milestone"
    )
    assert (first.id, second.id) == ("acme__app/long/m03/milestone", "acme__app/long/m03/milestone-2")
    assert "ORIGINAL SOURCE" in json.dumps(first.messages) and "Editing." not in json.dumps(first.messages)
    assert "ORIGINAL SOURCE" not in json.dumps(second.messages) and "[output elided" in json.dumps(second.messages)
    assert second.messages[second.train_from]["content"] == "Editing."  # the turns before are its context
    assert first.cut == "stretch 1 of 2 between compactions"
    chains = {chain.id: chain.cut for chain in rows(store, "chains", ChainSegment)}
    assert chains == {
        "acme__app/long/chain-m01..m02": "ends before m03 (compacted)",
        "acme__app/long/chain-m04..m05": "starts after m03 (compacted)",
    }


def test_a_chain_over_the_cap_is_cut_at_milestone_boundaries(tmp_path):
    store = Store(tmp_path / "store")
    for mid in ("m01", "m02", "m03"):
        milestone(store, "three", mid)
    quiet(store)
    (whole,) = rows(store, "chains", ChainSegment)
    per_milestone = (len(whole.messages) - 1) // 3
    rules = load_rules()
    capped = with_distill(rules, chains=rules.distill.chains.model_dump() | {"max_messages": 1 + 2 * per_milestone})
    quiet(store, capped)
    (part,) = rows(store, "chains", ChainSegment)
    cap = f"max_messages {1 + 2 * per_milestone}"
    assert (part.milestones, part.label, part.cut) == (["m01", "m02"], "part", f"ends before m03 ({cap} reached)")
    assert len(part.messages) <= 1 + 2 * per_milestone
    tiny = with_distill(rules, chains=rules.distill.chains.model_dump() | {"max_chars": 100})
    assert quiet(store, tiny).counts["chains"] == 0  # every milestone alone is over it
    off = with_distill(rules, chains=rules.distill.chains.model_dump() | {"enabled": False})
    assert quiet(store, off).counts["chains"] == 0


def test_assembled_milestone_cuts_give_the_same_chains(tmp_path):
    """Dagster cuts one milestone at a time; `assemble` joins them and makes the chains."""
    store = Store(tmp_path / "store")
    chain_store(store)
    rules = load_rules()
    quiet(store, rules)
    whole = [chain.id for chain in rows(store, "chains", ChainSegment)]
    for mid in ("m01", "m02", "m03", "m04", "m05"):
        quiet(store, rules, only=("acme__app", mid))
        assert not store.distilled_file("chains", ("acme__app", mid)).exists()
    store.distilled_file("chains").unlink()
    counts = assemble(store, rules)
    assert counts["chains"] == 3 and [chain.id for chain in rows(store, "chains", ChainSegment)] == whole


def test_the_export_gates_a_chain_by_each_of_its_milestone_runs(tmp_path):
    store = Store(tmp_path / "store")
    chain_store(store)
    # `probed`: m02 probes the git history (cheating: it feeds nothing), so its chain goes
    milestone(store, "probed", "m01")
    run = CraftedRun(store, "probed", mid="m02").say().bash("git log --all --oneline | head", "abc123 fix")
    run.say().read(GT_FILE).say().edit(sha="p2").say().test(1, 0).finish("PASS", OWN_DIFF)
    for mid in ("m01", "m02"):
        milestone(store, "oracle", mid, synthetic=True)
    quiet(store)
    assert len(rows(store, "chains", ChainSegment)) == 5
    report = export(store, ["sft"], tmp_path / "out")
    exported = [json.loads(line) for line in (tmp_path / "out" / "chains" / "trl.jsonl").read_text().splitlines()]
    assert {row["id"] for row in exported} == {
        "acme__app/long/chain-m01..m02",
        "acme__app/long/chain-m04..m05",
        "acme__app/short/chain-m01..m02",
    }
    assert report.discarded["chains"] == 1 and report.refused_synthetic["chains"] == 1
    assert report.rows["chains/trl"] == report.rows["chains/swift"] == report.rows["chains/openrlhf"] == 3
    row = next(row for row in exported if row["id"] == "acme__app/short/chain-m01..m02")
    assert row["kind"] == "chain" and row["milestone_id"] == "m01..m02"
    assert row["completion"][0]["role"] == "assistant" and "[milestone m02] # Task of m02" in json.dumps(row)
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "chains" / "trl.parquet"))
    assert loaded["train"].to_list() == exported
    assert "| `chains/trl` | 3 |" in (tmp_path / "out" / "README.md").read_text()


# ---- stuck slices bounded in turns -------------------------------------------------------------
def assistant_turns(messages) -> int:
    return sum(message["role"] == "assistant" for message in messages)


def test_a_long_stuck_stretch_keeps_its_last_turns_up_to_the_resolution(tmp_path):
    store = Store(tmp_path / "store")
    run = explore(CraftedRun(store, "long-loop"))
    for i in range(15):
        run.say().edit(sha=f"l{i}").say().test(0, 2, "sig-a")
    run.say().edit(sha="fix").say().test(2, 0).finish("PASS", OWN_DIFF)
    quiet(store)
    (stuck,) = rows(store, "stuck_slices", Segment)
    body = stuck.messages[stuck.train_from :]
    assert assistant_turns(stuck.messages[2:]) == 20  # at max: no room for context
    # issue 33: trained only from the recovery (the fix and the test that shows it), the loop before it shown
    assert assistant_turns(body) == 2 and body[0]["role"] == "assistant" and "2 passed" in body[-1]["content"]
    assert stuck.cut == "the first 11 of its 31 turns (slice_turns.max 20)"
    tool_results_follow_their_calls(stuck.messages)
    narrow = with_distill(load_rules(), slice_turns={"min": 1, "max": 4})
    quiet(store, narrow)
    (stuck,) = rows(store, "stuck_slices", Segment)
    assert assistant_turns(stuck.messages[2:]) == 4 and "2 passed" in stuck.messages[-1]["content"]


def test_a_short_stuck_stretch_gets_earlier_turns_as_context_up_to_the_minimum(tmp_path):
    store = Store(tmp_path / "store")
    run = explore(CraftedRun(store, "short-loop"))
    for i in range(8):
        run.say(f"step {i}").bash(f"echo {i}")
    for i in range(3):
        run.say().edit(sha=f"s{i}").say().test(0, 2, "sig-a")
    run.say().edit(sha="fix").say().test(2, 0).finish("PASS", OWN_DIFF)
    quiet(store)
    (stuck,) = rows(store, "stuck_slices", Segment)
    body, context = stuck.messages[stuck.train_from :], stuck.messages[2 : stuck.train_from]
    assert assistant_turns(body) < 10 and assistant_turns(context + body) == 10 and stuck.cut is None
    assert context[0]["role"] == "assistant" and body[0]["role"] == "assistant"
    tool_results_follow_their_calls(stuck.messages)
    wider = with_distill(load_rules(), slice_turns={"min": 14, "max": 20})
    quiet(store, wider)
    (stuck,) = rows(store, "stuck_slices", Segment)
    assert assistant_turns(stuck.messages[2:]) == 14


def test_slice_turns_must_be_ordered(tmp_path):
    from harnessforge.errors import ConfigError

    bad = tmp_path / "rules.yaml"
    bad.write_text("distill:\n  slice_turns: {min: 30, max: 20}\n")
    with pytest.raises(ConfigError, match="slice_turns: min 30 is more than max 20"):
        load_rules(bad)


# ---- phases -------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["content", "reasoning"])
def test_phases_explore_plan_implement_debug_verify_follow_each_other(tmp_path, where):
    store = Store(tmp_path / "store")
    run = explore(CraftedRun(store, "phased"))
    run.say("Plan: filter on enabled in src/app.py, then sort." if where == "content" else "Next.")
    if where == "reasoning":
        run.events[-1].action.args["reasoning"] = "Here is my plan: filter, then sort."
    run.read("src/order.py").say().edit(sha="p1").say().test(1, 2, "sig-a")  # implement, ending in a failure
    run.say().read(GT_FILE).say().edit(sha="p2").say().test(3, 0)  # debug, up to the green run
    run.say().bash("git diff", "diff").finish("PASS", OWN_DIFF)  # verify
    quiet(store)
    phases = {segment.kind: segment for segment in rows(store, "sft", Segment)}
    assert list(phases) == ["milestone", "explore", "plan", "implement", "debug", "verify"]
    order = [phases[kind] for kind in ("explore", "plan", "implement", "debug", "verify")]
    assert order[0].train_from == 2 and order[-1].messages == phases["milestone"].messages
    for earlier, later in zip(order, order[1:], strict=False):
        assert later.train_from == len(earlier.messages)  # consecutive
    plan, implement, debug = phases["plan"], phases["implement"], phases["debug"]
    stated = plan.messages[plan.train_from]
    assert "plan" in (stated.get("content", "") + stated.get("reasoning_content", "")).lower()
    assert "edit_file" not in json.dumps(plan.messages[plan.train_from :])
    assert "edit_file" in json.dumps(implement.messages[implement.train_from])
    assert implement.messages[-1]["role"] == "tool" and "2 failed" in implement.messages[-1]["content"]
    assert debug.messages[debug.train_from]["role"] == "assistant" and "3 passed" in debug.messages[-1]["content"]


def test_no_plan_no_failure_no_plan_or_debug_phase(tmp_path):
    store = Store(tmp_path / "store")
    explore(CraftedRun(store, "direct")).say("I will edit now.").edit(sha="d1").say().test(1, 0).finish("PASS")
    quiet(store)
    assert [segment.kind for segment in rows(store, "sft", Segment)] == ["milestone", "explore", "implement"]
