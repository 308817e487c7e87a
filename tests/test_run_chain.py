"""A full chain run of the offline oracle on the example repository, in Docker."""

import json
import shutil

import pytest

from harnessforge.agents.oracle import OracleAgent
from harnessforge.harness.atif import validate_atif
from harnessforge.harness.navigator import Navigator
from harnessforge.harness.recorder import Recorder
from harnessforge.models.run import MilestoneSummary, RunMeta
from harnessforge.models.trajectory import MentorDecision, VerifierReport
from harnessforge.rules import load_rules
from harnessforge.store import RunFiles, Store

PROFILES = {"m01": "direct", "m02": "needs_hints", "m03": "stuck", "m04": "partial", "m05": "asks"}
FILES = RunFiles.FILES


@pytest.fixture(scope="module")
def chain(validated, tmp_path_factory):
    """The chain in a copy of the validated store: the export below reads every run of its store, and the
    session's store also holds other test files' (non-synthetic) runs."""
    source, key, _ = validated
    store = Store(tmp_path_factory.mktemp("chain") / "store")
    shutil.copytree(source.root, store.root, ignore=shutil.ignore_patterns("trajectories", "analytics", "distilled"))
    rules = load_rules()
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": 30})})
    nav = Navigator(store, key, OracleAgent(seed=7, profiles=PROFILES), rules, run_id="oracle-e2e", log=lambda *_: None)
    return nav, {s.milestone_id: s for s in nav.run()}


def test_the_chain_runs_in_order_with_every_outcome(chain):
    nav, summaries = chain
    assert list(summaries) == ["m01", "m02", "m03", "m04", "m05"]  # m06 does not reproduce: skipped
    assert summaries["m01"].status == "PASS" and summaries["m01"].hints_released == []
    assert summaries["m02"].status == "PASS" and summaries["m02"].hints_released[:2] == [1, 2]
    assert summaries["m03"].status == "STUCK" and summaries["m03"].turns == 30
    assert summaries["m03"].reset_to == nav.plan.milestone("m03").verify_commit
    assert summaries["m04"].status == "PASS"  # a failed submission first, then the rest of the fix
    assert summaries["m05"].status == "PASS" and summaries["m05"].hints_released
    assert all(s.synthetic for s in summaries.values())
    # after a pass the next milestone starts from the Dev's own state; after STUCK, from the verify commit
    carried = {mid: s.carried_from for mid, s in summaries.items()}
    assert carried == {"m01": None, "m02": "m01", "m03": "m02", "m04": None, "m05": "m04"}


def test_every_file_exists_and_validates(chain):
    nav, summaries = chain
    meta = RunMeta.model_validate_json((nav.run_dir / "metadata.json").read_text())
    assert meta.synthetic and meta.agent == "oracle" and meta.rules_hash
    for mid in summaries:
        d = nav.run_dir / mid
        assert all((d / f).exists() for f in FILES), mid
        events = Recorder.open(d).events()
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[0].action.type == "milestone_start" and events[-1].action.type == "milestone_end"
        assert all(e.synthetic for e in events)
        MilestoneSummary.model_validate_json((d / "summary.json").read_text())
        validate_atif(json.loads((d / "trajectory.atif.json").read_text()))
        [MentorDecision.model_validate(x) for x in json.loads((d / "mentor_log.json").read_text())]
    report = VerifierReport.model_validate_json((nav.run_dir / "m01" / "test_results.json").read_text())
    assert report.passed and report.acceptance.failed == 0 and not report.missing_core_files


def test_hints_carry_their_trigger_rules(chain):
    nav, _ = chain
    log = json.loads((nav.run_dir / "m02" / "mentor_log.json").read_text())
    assert log[0]["rule"] == "same_error" and log[0]["level"] == 1
    assert log[1]["rule"] == "no_progress_after_hint" and log[1]["level"] == 2
    assert log[0]["response"] is not None
    asks = json.loads((nav.run_dir / "m05" / "mentor_log.json").read_text())
    assert "explicit_request" in {d["rule"] for d in asks}


def test_partial_submission_is_rejected_then_fixed(chain):
    nav, _ = chain
    events = Recorder.open(nav.run_dir / "m04").events()
    verdicts = [e.action.content for e in events if e.role == "verifier"]
    assert verdicts[0].startswith("verification failed") and verdicts[-1] == "PASS"


def test_the_run_distils_and_exports(chain, tmp_path):
    """The real oracle chain through analytics, distillation and export: signals from a real run."""
    from harnessforge.analytics.load import connect
    from harnessforge.distill import distill
    from harnessforge.export import export

    nav, summaries = chain
    report = distill(nav.store, load_rules(), log=lambda *_: None)
    assert not report.analytics.load.bad_lines and not report.skipped
    with connect(nav.store) as con:
        rows = con.execute(
            "SELECT milestone_id, status, hints, stuck_points, synthetic FROM milestone_summary "
            "WHERE run_id = 'oracle-e2e' ORDER BY milestone_id"
        ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(m, s.status) for m, s in summaries.items()]
    assert all(r[4] for r in rows)  # synthetic all the way through
    by_id = {r[0]: r for r in rows}
    assert by_id["m02"][2] >= 2 and by_id["m03"][3] > 0  # hints on m02; m03 is a loop the oracle never left
    refused = export(nav.store, ["sft", "atif"], tmp_path / "refused")
    assert refused.rows["sft/trl"] == 0 and refused.refused_synthetic["sft"] > 0 and refused.rows["atif"] == 0
    allowed = export(nav.store, ["sft", "atif"], tmp_path / "allowed", allow_synthetic=True)
    assert allowed.rows["atif"] >= 1 and allowed.rows["sft/trl"] > 0
    atif = json.loads(next((tmp_path / "allowed" / "atif").rglob("m0*.json")).read_text())
    validate_atif(atif)


def only_this_chain(nav, root):
    """A copy of the chain's store with only this module's run: other modules run more chains on the
    shared validated store, and their runs would stand behind task cards too."""
    import shutil

    from harnessforge.store import Store

    store = Store(shutil.copytree(nav.store.root, root, symlinks=True))
    for run in store.run_dir(nav.key, "oracle-e2e").parent.iterdir():
        if run.name != "oracle-e2e":
            shutil.rmtree(run)
    store.analytics_database().unlink(missing_ok=True)
    shutil.rmtree(store.distilled_dir(), ignore_errors=True)
    return store


def test_only_accepted_verified_milestones_become_harbor_tasks_and_swebench_instances(
    chain, harbor_venv, docker_client, tmp_path
):
    """A task card needs a passing run the gates let be a reference; `verify-tasks` keeps the cards that
    rebuild from the card alone; only those become Harbor folders and SWE-bench instances, checked
    against their published field lists, with a repository bundle holding no commit after the base."""
    import subprocess
    import tomllib

    from harnessforge.distill import distill
    from harnessforge.distill.outputs import REVIEWS, TASK_CARDS, read_distilled
    from harnessforge.envs.images import bootstrap_packages
    from harnessforge.errors import ArtifactError
    from harnessforge.export import export
    from harnessforge.export.harbor import TASK_TOML_KEYS
    from harnessforge.export.swebench import FIELDS
    from harnessforge.export.verify import verify_tasks
    from tests.harbor_tools import LINT_IGNORED, check, lint

    nav, summaries = chain
    store = only_this_chain(nav, tmp_path / "store")
    rules = load_rules()
    distill(store, rules, log=lambda *_: None)
    reviews = {r.milestone_id: r for r in read_distilled(store, REVIEWS)}
    accepted = sorted(
        mid for mid, r in reviews.items() if r.status == "PASS" and rules.distill.allows(r.discard_reasons, "tasks")
    )
    cards = {card.milestone_id: card for card in read_distilled(store, TASK_CARDS)}
    assert sorted(cards) == accepted and "m03" not in cards  # STUCK: no run to stand behind a task
    assert all(cards[mid].reference_run == "oracle-e2e" for mid in cards)
    assert all(card.provenance["plan_id"] == store.load_plan(nav.key).plan_id for card in cards.values())
    # issue 33: the card's difficulty is its reference run's, the spread over every run beside it
    assert all(card.difficulty == card.difficulty_by_run[card.reference_run] for card in cards.values())
    # the reference run's solution and verification report, as seed 001's cards give them
    m02 = cards["m02"]
    assert m02.solution.run_id == "oracle-e2e" and m02.solution.turns == summaries["m02"].turns
    assert m02.solution.hints_received == summaries["m02"].hints_released and m02.solution.edit_attempts > 0
    assert [entry.text.split("]")[0] for entry in m02.solution.hint_log] == [
        f"[hint L{level}" for level in summaries["m02"].hints_released
    ]
    kinds = [moment.kind for moment in m02.solution.key_moments]
    assert kinds[-1] == "passed" and "hint" in kinds and "submitted" in kinds
    assert m02.solution.diff.startswith("diff --git")
    graded = m02.verification
    assert graded.acceptance_failed == 0 and graded.acceptance_passed >= graded.fail_to_pass > 0
    assert graded.regressions == 0 and graded.same_core_files and not graded.missing_core_files

    with pytest.raises(ArtifactError, match="run `harnessforge verify-tasks` first"):
        export(store, ["harbor"], tmp_path / "early", allow_synthetic=True, rules=rules)
    early = export(store, ["all"], tmp_path / "early", allow_synthetic=True, rules=rules)
    assert not early.verified and "harbor_tasks" not in early.rows and not (tmp_path / "early" / "tasks").exists()
    assert "`harnessforge verify-tasks` has not run" in (tmp_path / "early" / "README.md").read_text()

    # one card that does not reproduce (its test command runs a test that does not exist) is dropped
    broken, *fine = sorted(cards)
    path = store.root / "distilled" / "task_cards.jsonl"
    edited = [
        c.model_copy(update={"test_cmd": "python -m pytest -q tests/no_such_test.py"})
        if c.milestone_id == broken
        else c
        for c in cards.values()
    ]
    path.write_text("".join(c.model_dump_json() + "\n" for c in edited))
    checks = {c.task_id: c for c in verify_tasks(store, rules, log=lambda *_: None)}
    assert not checks[f"{nav.key}-{broken}"].reproduced
    assert "reference solution scored 0" in checks[f"{nav.key}-{broken}"].reason
    for mid in fine:
        good = checks[f"{nav.key}-{mid}"]
        assert good.reproduced and (good.reference_reward, good.empty_reward) == ("1", "0"), good
    # checking one card again keeps the others' verdicts
    verify_tasks(store, rules, only=[f"{nav.key}-{fine[0]}"], log=lambda *_: None)
    verdicts = json.loads((store.root / "distilled" / "task_checks.json").read_text())
    assert sorted(v["task_id"] for v in verdicts) == sorted(checks)

    report = export(store, ["atif", "harbor", "swebench"], tmp_path / "out", allow_synthetic=True, rules=rules)
    assert report.rows["harbor_tasks"] == report.rows["instances"] == len(fine)
    assert sorted(p.name for p in (tmp_path / "out" / "tasks").iterdir()) == [f"{nav.key}-{mid}" for mid in fine]
    assert report.unverified_cards == [f"{nav.key}-{broken}"]
    assert (
        f"not (or no longer) verified, so not Harbor tasks or SWE-bench instances: 1 ({nav.key}-{broken})"
        in (tmp_path / "out" / "README.md").read_text()
    )
    for m in [nav.plan.milestone(mid) for mid in fine]:
        task = tmp_path / "out" / "tasks" / f"{nav.key}-{m.id}"
        toml = tomllib.loads((task / "task.toml").read_text())
        for section, keys in TASK_TOML_KEYS.items():
            table = toml if not section else toml[section]
            assert set(keys) <= set(table), (section, keys)
        assert toml["environment"]["network_mode"] == "no-network" and toml["agent"]["user"] == 1000
        assert toml["schema_version"] == "1.4" and toml["verifier"]["environment_mode"] == "separate"
        ladder = store.load_hints(nav.key, m.id)  # levels with no material of their own are left out
        assert [h["level"] for h in toml["metadata"]["mentor_hints"]] == [h.level for h in ladder.levels if not h.empty]
        assert len(toml["metadata"]["mentor_hints"]) >= 3  # L3 and L4 always have material
        assert m.title in (task / "instruction.md").read_text() and "hint" not in (task / "instruction.md").read_text()
        assert (task / "tests" / "test.sh").stat().st_mode & 0o111 and (
            task / "solution" / "solve.sh"
        ).stat().st_mode & 0o111
        assert "reward.txt" in (task / "tests" / "test.sh").read_text()
        config = json.loads((task / "tests" / "config.json").read_text())
        assert set(FIELDS) <= set(config) and config["base_commit"] == m.base_commit
        dockerfile = (task / "environment" / "Dockerfile").read_text()
        assert "ARG BASE_IMAGE=debian:bookworm-slim\nFROM ${BASE_IMAGE}\n" in dockerfile and "repo.bundle" in dockerfile
        assert toml["metadata"]["base_image"] == load_rules().environments.base_images["python"]
        clone = tmp_path / f"clone-{m.id}"
        subprocess.run(["git", "clone", "-q", str(task / "environment" / "repo.bundle"), str(clone)], check=True)
        head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert head.stdout.strip() == m.base_commit
        later = subprocess.run(["git", "-C", str(clone), "cat-file", "-e", m.verify_commit], capture_output=True)
        assert later.returncode != 0  # the answer is not in the history the agent gets
    instances = [
        json.loads(line) for line in (tmp_path / "out" / "swebench" / "instances.jsonl").read_text().splitlines()
    ]
    assert [i["milestone_id"] for i in instances] == fine and all(json.loads(i["FAIL_TO_PASS"]) for i in instances)

    # seed 001's criteria, measured: the broken card did not reproduce; every format loaded in its tool
    poc = {criterion.name: criterion for criterion in report.poc}
    rebuilt = poc["every task's environment rebuilds and reproduces"]
    assert rebuilt.passed is False and f"{len(fine)} of {len(fine) + 1} reproduced" in rebuilt.measured
    assert poc["every format loads in its tool"].passed, poc["every format loads in its tool"].measured
    assert {"atif", "tasks", "swebench/instances.jsonl"} <= set(report.format_checks)
    valid = [m for m in nav.plan.milestones if m.status == "valid"]
    assert report.funnel[nav.key] == {
        "planned": len(nav.plan.milestones),
        "valid": len(valid),
        "run": len(summaries),
        "passed": sum(s.status == "PASS" for s in summaries.values()),
        "accepted": len(cards),
        "verified": len(fine),
    }
    assert "## Proof of concept (seed 001's criteria)" in (tmp_path / "out" / "README.md").read_text()
    # Harbor's own tools on the export as written: its ATIF validator on every trajectory, its task loader
    # on every folder, `harbor lint` on them all (clean: no rule ignored, see LINT_IGNORED)
    result = check(harbor_venv, [tmp_path / "out"])
    assert len(result["atif"]) == report.rows["atif"] > 0  # the runs the Reviewer's gates let into atif
    assert {path: errors for path, errors in result["atif"].items() if errors} == {}
    assert len(result["tasks"]) == report.rows["harbor_tasks"] == len(fine)
    assert {path: error for path, error in result["tasks"].items() if error} == {}
    code, findings = lint(harbor_venv, sorted((tmp_path / "out" / "tasks").iterdir()))
    assert (code, findings) == (0, []) and not LINT_IGNORED
    # the public base's packages are the local base's: there the Dockerfile's install step does nothing
    environments = rules.environments
    packages = bootstrap_packages("python", environments)
    output = docker_client.containers.run(
        environments.base_images["python"], ["dpkg", "-s", *packages], remove=True, network_mode="none"
    )
    assert output.count(b"Status: install ok installed") == len(packages)

    # rules that let a flaky run stand behind a task: m05 gets a card, but no Harbor task until verified
    assert reviews["m05"].discard_reasons == ["flaky_test"] and "m05" not in cards
    gates = rules.distill.gates | {"flaky_test": ["tasks"]}
    lenient = rules.model_copy(update={"distill": rules.distill.model_copy(update={"gates": gates})})
    distill(store, lenient, log=lambda *_: None)
    assert "m05" in {card.milestone_id for card in read_distilled(store, TASK_CARDS)}
    later = export(store, ["harbor"], tmp_path / "lenient", allow_synthetic=True, rules=lenient)
    assert f"{nav.key}-m05" in later.unverified_cards and later.rows["harbor_tasks"] == len(fine)

    # the repository held out: its ATIF, tasks and instances move under heldout/, in the same layout
    from harnessforge.rules import HeldoutRules

    held = rules.model_copy(
        update={"export": rules.export.model_copy(update={"heldout": HeldoutRules(repos=[nav.key])})}
    )
    split = export(store, ["atif", "harbor", "swebench"], tmp_path / "split", allow_synthetic=True, rules=held)
    assert split.heldout_repos == [nav.key] and split.rows["harbor_tasks"] == split.rows["atif"] == 0
    assert split.rows["heldout/harbor_tasks"] == split.rows["heldout/instances"] == len(fine)
    assert sorted(p.name for p in (tmp_path / "split" / "heldout" / "tasks").iterdir()) == [
        f"{nav.key}-{mid}" for mid in fine
    ]
    assert split.rows["heldout/atif"] == report.rows["atif"] and (tmp_path / "split" / "heldout" / "atif").is_dir()
