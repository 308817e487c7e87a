"""Planning the example repository: the issue's acceptance criteria, checked on real git."""

import json
import re
import subprocess

import pytest

from harnessforge.errors import PlanningError
from harnessforge.examples import build_example_repo
from harnessforge.files import FileClassifier
from harnessforge.harness.memory import FIRST
from harnessforge.mining.describe import Withholding
from harnessforge.mining.planner import plan
from harnessforge.models import HintLadder, Milestone, MilestonePlan
from harnessforge.rules import load_rules
from tests.helpers import git, run_pytest

FEATURE_PRS = [[4, 8, 6, 9], [12, 13, 14], [16, 17], [19, 20], [22, 23], [25, 26]]
# m05's CLI tests include one that is deliberately flaky (it leaks state into the work tree), and m06's
# tag index is a refactor whose new tests already pass at its base (see harnessforge/examples/tasklite.py).
FLAKY_TEST = "tests/test_cli.py::test_first_run_creates_history"
M06_TESTS = [
    "tests/test_tag_index.py::test_tags_in_use_follow_removals",
    "tests/test_tag_index.py::test_tags_added_to_a_stored_task_are_found",
    "tests/test_tag_index.py::test_tags_removed_from_a_stored_task_are_forgotten",
    "tests/test_tag_index.py::test_removed_task_is_not_found_by_tag",
    "tests/test_tag_index.py::test_loaded_store_finds_tasks_by_tag",
    "tests/test_tag_index.py::test_unknown_tags_match_nothing",
    "tests/test_tag_index.py::test_tag_filters_combine_with_other_criteria",
    "tests/test_tag_index.py::test_big_store_tag_lookups",
]


def _sources(milestone) -> list[str]:
    """The milestone's changed non-test source files: the paths its text must not name."""
    classify = FileClassifier(load_rules().planning)
    return [path for path in milestone.changed_files if classify.is_source(path)]


def test_chain_covers_the_range_contiguously(planned, example_repo):
    _, result = planned
    milestone_plan = result.plan
    assert (milestone_plan.from_ref, milestone_plan.to_ref) == ("v0.1.0", "v0.5.0")
    assert milestone_plan.from_commit == git(example_repo, "rev-parse", "v0.1.0^{commit}")
    assert milestone_plan.to_commit == git(example_repo, "rev-parse", "v0.5.0^{commit}")
    bases = [milestone.base_commit for milestone in milestone_plan.milestones]
    verifies = [milestone.verify_commit for milestone in milestone_plan.milestones]
    assert bases == [milestone_plan.from_commit] + verifies[:-1]
    assert verifies[-1] == milestone_plan.to_commit
    mainline = git(example_repo, "rev-list", "--first-parent", "--reverse", "v0.1.0..v0.5.0").split()
    assert [
        c for milestone in milestone_plan.milestones for c in milestone.commits
    ] == mainline  # every mainline commit, in order, once


def test_milestones_are_whole_features_in_real_order(planned):
    _, result = planned
    assert [milestone.source_prs for milestone in result.plan.milestones] == FEATURE_PRS
    # the interleaved features (#4/#6 tags, #8/#9 persistence) could not be split, so they share m01
    assert result.plan.milestones[0].issues == [3, 5]
    assert [milestone.release for milestone in result.plan.milestones] == [
        "v0.2.0",
        "v0.3.0",
        "v0.3.0",
        "v0.4.0",
        "v0.4.0",
        "v0.5.0",
    ]
    assert [milestone.id for milestone in result.plan.milestones] == ["m01", "m02", "m03", "m04", "m05", "m06"]
    m06 = result.plan.milestones[5]
    assert (m06.source_prs, m06.issues, m06.release) == ([25, 26], [24], "v0.5.0")
    assert {"tasklite/index.py", "tasklite/models.py", "tasklite/query.py", "tasklite/store.py"} <= set(
        m06.changed_files
    )
    for milestone in result.plan.milestones:
        assert len([f for f in milestone.changed_files if f.startswith("tasklite/")]) >= 3
        assert milestone.lines_changed >= 100 and 1 <= milestone.difficulty <= 5


def test_prerelease_tag_is_skipped(planned):
    _, result = planned
    assert [r.tag for r in result.plan.releases] == ["v0.1.0", "v0.2.0", "v0.3.0", "v0.4.0", "v0.5.0"]


def test_noise_commits_fold_into_neighbours(planned, example_repo):
    _, result = planned
    subjects = {
        c: git(example_repo, "log", "-1", "--format=%s", c)
        for milestone in result.plan.milestones
        for c in milestone.commits
    }
    for milestone in result.plan.milestones:
        assert any(
            subjects[c].startswith(
                ("Merge pull request", "Add", "Serialize", "Sort", "Export", "Filter", "Task", "CLI")
            )
            for c in milestone.commits
        )
    docs = next(c for c, s in subjects.items() if s == "docs: describe tags in the README")
    assert docs in result.plan.milestones[0].commits


def test_descriptions_have_no_paths_or_code(planned):
    _, result = planned
    for milestone in result.plan.milestones:
        assert milestone.description and milestone.title
        assert Withholding(_sources(milestone)).found(milestone.description) == [], milestone.description
        assert not re.search(r"\w+\.(py|toml|md)\b|/", milestone.description), milestone.description
        assert "tasklite/" not in milestone.title


def test_descriptions_carry_the_changelog_behaviour(planned):
    _, result = planned
    m01 = result.plan.milestones[0].description
    assert "Tasks can carry tags" in m01 and "saved to and loaded from JSON documents" in m01
    assert "#4" not in m01 and "fixes" not in m01


def test_hint_ladders_have_all_five_levels(planned):
    store, result = planned
    key = result.plan.repo.key
    empty = []
    for milestone in result.plan.milestones:
        ladder = store.load_hints(key, milestone.id)
        assert [hint_ladder.level for hint_ladder in ladder.levels] == [0, 1, 2, 3, 4]
        assert all(hint_ladder.content.strip() or hint_ladder.empty_reason for hint_ladder in ladder.levels)
        empty += [(milestone.id, hint_ladder.level) for hint_ladder in ladder.levels if hint_ladder.empty]
        l3 = ladder.levels[3].content
        assert "tests/" not in l3 and "tasklite/" in l3
        l4 = ladder.levels[4].content
        assert l4.startswith("--- a/tasklite/") and "@@" in l4
        assert len(l4) <= 6000 + 500
        # L0-L2 carry their own material: no line of one repeats the description or an earlier level
        said = [milestone.description]
        for hint_ladder in ladder.levels[:3]:
            for line in filter(None, (ln.strip("- ") for ln in hint_ladder.content.splitlines())):
                assert not any(line in earlier for earlier in said), (milestone.id, hint_ladder.level, line)
            said.append(hint_ladder.content)
    m01 = store.load_hints(key, "m01").levels
    # L0: the work's own names (its PR titles) the description does not say, never bare numbers...
    assert m01[0].content.splitlines() == ["- Filter tasks by tag", "- Save and load task stores as JSON"]
    assert "Tasks can carry tags" not in m01[0].content  # ...and never restating the description
    assert "Tags are normalised to lower case" in m01[1].content  # L1: commit message body
    assert "PR #8: Serialize tasks to plain dicts\nRecords are validated" in m01[2].content  # L2: the squash message
    assert ("m03", 2) in empty  # #16/#17's merge and squash messages hold no text beyond their titles
    m03 = store.load_hints(key, "m03").levels[2]
    assert "no PR descriptions" in m03.empty_reason and m03.content == ""


def _checkouts(repo, tmp_path, milestones):
    """One work tree, reset to each milestone's base commit in turn."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True)
    for milestone in milestones:
        git(work, "checkout", "-q", "-f", milestone.base_commit)
        git(work, "clean", "-qfdx")
        yield work, milestone


def test_patches_apply_cleanly_on_base(planned, example_repo, tmp_path):
    store, result = planned
    key = result.plan.repo.key
    for work, milestone in _checkouts(example_repo, tmp_path, result.plan.milestones):
        ground_truth = store.milestone_dir(key, milestone.id) / "ground_truth.patch"
        test_patch = store.milestone_dir(key, milestone.id) / "test.patch"
        assert ground_truth.stat().st_size > 0 and test_patch.stat().st_size > 0
        git(work, "apply", "--check", str(ground_truth))
        git(work, "apply", "--check", str(test_patch))
        # together they are exactly the verify commit's tree
        git(work, "apply", "--index", str(ground_truth), str(test_patch))
        assert git(work, "write-tree") == git(work, "rev-parse", f"{milestone.verify_commit}^{{tree}}")
        assert all(f.startswith("tests/") for f in milestone.test_files)


def test_acceptance_tests_fail_on_base_and_pass_on_verify(planned, example_repo, tmp_path):
    """Except m06 (the tag index refactor), whose tests pass on base too: it does not reproduce."""
    store, result = planned
    key = result.plan.repo.key
    for work, milestone in _checkouts(example_repo, tmp_path, result.plan.milestones):
        assert milestone.acceptance_tests, milestone.id
        git(work, "apply", str(store.milestone_dir(key, milestone.id) / "test.patch"))
        files = sorted({t.split("::")[0] for t in milestone.acceptance_tests})
        before = run_pytest(work, files)
        if milestone.id == "m06":
            assert before.returncode == 0, f"m06: tag index tests fail before the refactor\n{before.stdout}"
            assert f"{len(M06_TESTS)} passed" in before.stdout, before.stdout
        else:
            assert before.returncode != 0, f"{milestone.id}: acceptance tests pass before the change\n{before.stdout}"
        git(work, "checkout", "-q", "-f", milestone.verify_commit)
        after = run_pytest(work, milestone.acceptance_tests)
        assert after.returncode == 0, f"{milestone.id}: acceptance tests fail at verify\n{after.stdout}"


def test_test_ids_name_changed_tests(planned):
    _, result = planned
    m01, m04 = result.plan.milestones[0], result.plan.milestones[3]
    assert "tests/test_tags.py::test_tags_are_normalised" in m01.acceptance_tests
    assert "tests/test_query.py::test_prebuilt_query" in m01.acceptance_tests
    # m04 changes two existing tests in test_export.py (new CSV column) and one in test_serialize.py
    assert "tests/test_export.py::test_csv_has_header_and_rows" in m04.acceptance_tests
    assert "tests/test_serialize.py::test_dict_is_plain_data" in m04.acceptance_tests
    assert "tests/test_export.py::test_markdown_checklist" not in m04.acceptance_tests  # untouched by m04
    m05, m06 = result.plan.milestones[4], result.plan.milestones[5]
    assert FLAKY_TEST in m05.acceptance_tests
    assert "tests/test_cli.py::test_overdue_command" in m05.acceptance_tests
    assert m06.acceptance_tests == M06_TESTS and m06.excluded_tests == []


def test_tests_traced_to_undescribed_changes_are_left_out_and_logged(planned):
    _, result = planned
    m01 = result.plan.milestones[0]
    [excluded] = m01.excluded_tests
    assert excluded.test == "tests/test_store.py::test_remove_deletes_task_and_forgets_it"
    assert "Tidy store tests" in excluded.reason
    assert excluded.test not in m01.acceptance_tests
    assert any("left out tests/test_store.py" in w for w in result.plan.warnings)


def test_store_layout_and_validated_reads(planned):
    store, result = planned
    key = result.plan.repo.key
    assert key == "harnessforge-examples__tasklite"
    assert store.load_plan(key) == result.plan
    for milestone in result.plan.milestones:
        d = store.milestone_dir(key, milestone.id)
        assert {milestone_plan.name for milestone_plan in d.iterdir()} == {
            "milestone.json",
            "ground_truth.patch",
            "test.patch",
            "hints.json",
        }
        assert Milestone.model_validate_json((d / "milestone.json").read_text()) == milestone
        HintLadder.model_validate_json((d / "hints.json").read_text())


def test_replanning_is_idempotent(example_repo, store, rules):
    first = plan(store, str(example_repo), rules)
    files = {
        milestone_plan: (milestone_plan.read_bytes(), milestone_plan.stat().st_mtime_ns)
        for milestone_plan in store.repo_dir(first.plan.repo.key).rglob("*")
        if milestone_plan.is_file()
    }
    second = plan(store, str(example_repo), rules)
    assert second.plan.model_dump(exclude={"provenance"}) == first.plan.model_dump(exclude={"provenance"})
    for milestone_plan, (data, mtime) in files.items():
        assert milestone_plan.read_bytes() == data and milestone_plan.stat().st_mtime_ns == mtime, (
            f"{milestone_plan} was rewritten"
        )


def test_range_options_and_dropped_milestones(example_repo, store, rules):
    full = plan(store, str(example_repo), rules)
    assert len(full.plan.milestones) == 6
    part = plan(store, str(example_repo), rules, from_ref="v0.2.0", to_ref="v0.3.0")
    assert [milestone.source_prs for milestone in part.plan.milestones] == FEATURE_PRS[1:3]
    assert part.plan.milestones[0].id == "m01"
    kept = sorted(
        milestone_plan.name for milestone_plan in (store.repo_dir(part.plan.repo.key) / "milestones").iterdir()
    )
    assert kept == ["m01", "m02"]


def test_a_plan_of_another_range_archives_the_old_one_with_its_verdicts_and_runs(example_repo, store, rules, run_cli):
    """Issue 32: re-planning another range deleted the milestone folders the new plan lacked with their verdicts,
    kept old `validation.json` files under ids that now named other milestones, and old runs' rows took the new
    milestones' provenance; exit 0, no warning. The old plan now goes to an archive, whole, and the command says
    where."""
    full = plan(store, str(example_repo), rules)
    key = full.plan.repo.key
    verdict = store.milestone_dir(key, "m05") / "validation.json"
    verdict.write_text('{"milestone_id": "m05"}\n')  # what `validate` left (its content is not read here)
    run = store.root / "trajectories" / key / "r1"
    (run / "m05").mkdir(parents=True)
    (run / "metadata.json").write_text("{}\n")
    assert plan(store, str(example_repo), rules).archived is None  # the same plan again: nothing archived
    proc = run_cli("plan", str(example_repo), "--from", "v0.2.0", "--to", "v0.3.0", store=store.root)
    assert proc.returncode == 0, proc.stderr
    archive = store.repo_dir(key) / "archive" / full.plan.plan_id
    assert f"its verdicts and runs: {archive}" in " ".join((proc.stdout + proc.stderr).split())
    assert (archive / "milestones" / "m05" / "validation.json").read_text() == '{"milestone_id": "m05"}\n'
    assert (archive / "trajectories" / "r1" / "m05").is_dir() and not run.exists()
    assert len(MilestonePlan.model_validate_json((archive / "plan.json").read_text()).milestones) == 6
    now = store.load_plan(key)
    assert now.plan_id != full.plan.plan_id and len(now.milestones) == 2
    assert sorted(path.name for path in (store.repo_dir(key) / "milestones").iterdir()) == ["m01", "m02"]
    assert not (store.milestone_dir(key, "m01") / "validation.json").exists()  # no verdict of another milestone


@pytest.mark.parametrize(
    "from_ref, to_ref, message",
    [
        ("v0.3.0", "v0.2.0", "is not older than"),
        ("v0.2.0", "v7.0.0", "'v7.0.0' is not a commit"),
    ],
)
def test_bad_ranges_are_clear_errors(example_repo, store, rules, from_ref, to_ref, message):
    with pytest.raises(PlanningError if "older" in message else Exception, match=message):
        plan(store, str(example_repo), rules, from_ref=from_ref, to_ref=to_ref)


def test_repo_without_tags_is_a_clear_error(tmp_path, store, rules, run_cli):
    repo = build_example_repo(tmp_path / "untagged", tags=False)
    with pytest.raises(PlanningError, match="no release tags.*--from and --to"):
        plan(store, str(repo), rules)
    proc = run_cli("plan", str(repo))
    assert proc.returncode == 1 and "has no release tags" in proc.stderr and "Traceback" not in proc.stderr
    # explicit revisions still plan it
    first, last = git(repo, "rev-list", "--max-parents=0", "HEAD"), git(repo, "rev-parse", "HEAD")
    result = plan(store, str(repo), rules, from_ref=first, to_ref=last)
    assert result.plan.milestones and result.plan.releases == []


def test_repo_without_changelog_falls_back_to_pr_titles(tmp_path, store, rules):
    repo = build_example_repo(tmp_path / "nochangelog", changelog=False)
    result = plan(store, str(repo), rules)
    milestone_plan = result.plan
    assert milestone_plan.changelog_sources == [] and milestone_plan.changelog == []
    assert any("no changelog found" in w for w in milestone_plan.warnings)
    # commit messages still link PRs to issues ("Part of #3", "Closes #3"), so features hold together
    assert [milestone.source_prs for milestone in milestone_plan.milestones] == FEATURE_PRS
    assert "Add tags to tasks" in milestone_plan.milestones[0].description
    for milestone in milestone_plan.milestones:
        assert Withholding(_sources(milestone)).found(milestone.description) == []
        ladder = result.hints[milestone.id]  # the PR titles are the description: L0 has nothing of its own
        assert (
            ladder.levels[0].content.strip()
            or "the work's names are the description's" in ladder.levels[0].empty_reason
        )


def test_non_utf8_and_binary_files(tmp_path, store, rules):
    repo = build_example_repo(tmp_path / "odd", odd_files=True)
    result = plan(store, str(repo), rules)
    milestone = next(milestone for milestone in result.plan.milestones if 16 in milestone.source_prs)
    assert "tasklite/data/logo.png" in milestone.changed_files
    assert "tasklite/data/caf\ufffd.bin" in milestone.changed_files  # the latin-1 name, made JSON-safe
    assert "tasklite/locale/messages_de.py" in milestone.changed_files
    json.loads((store.milestone_dir(result.plan.repo.key, milestone.id) / "hints.json").read_text())
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True)
    git(work, "checkout", "-q", milestone.base_commit)
    ground_truth = store.milestone_dir(result.plan.repo.key, milestone.id) / "ground_truth.patch"
    assert b"GIT binary patch" in ground_truth.read_bytes() and b"F\xe4llig" in ground_truth.read_bytes()
    git(
        work,
        "apply",
        "--index",
        str(ground_truth),
        str(store.milestone_dir(result.plan.repo.key, milestone.id) / "test.patch"),
    )
    assert git(work, "write-tree") == git(work, "rev-parse", f"{milestone.verify_commit}^{{tree}}")


def test_corrupt_plan_json_is_a_clear_error(planned, tmp_path, run_cli):
    store, result = planned
    import shutil

    copy = tmp_path / "store"
    shutil.copytree(store.root, copy)
    key = result.plan.repo.key
    plan_file = copy / "repos" / key / "plan.json"
    data = json.loads(plan_file.read_text())
    del data["milestones"][0]["verify_commit"]
    plan_file.write_text(json.dumps(data))
    proc = run_cli("show", key, store=copy)
    assert proc.returncode == 1
    assert f"{plan_file}: invalid MilestonePlan: milestones.0.verify_commit: Field required" in proc.stderr
    plan_file.write_text("{truncated")
    proc = run_cli("show", key, store=copy)
    assert proc.returncode == 1 and "plan.json: not valid JSON" in proc.stderr


def test_plan_command_prints_the_chain(run_cli, example_repo, tmp_path):
    proc = run_cli("plan", str(example_repo), "--from", "v0.2.0", check=True)
    assert "v0.2.0 → v0.5.0, 5 milestones" in proc.stdout
    assert "m04" in proc.stdout and "#22, #23" in proc.stdout
    assert "m05" in proc.stdout and "#25, #26" in proc.stdout
    saved = MilestonePlan.model_validate_json(
        (tmp_path / "store" / "repos" / "harnessforge-examples__tasklite" / "plan.json").read_text()
    )
    assert len(saved.milestones) == 5


def test_show_task_prints_the_devs_first_message(planned, run_cli):
    store, result = planned
    key = result.plan.repo.key
    first, second = result.plan.milestones[:2]
    shown = run_cli("show", key, "--task", first.id, "--tests", "hidden", store=store.root)
    assert shown.returncode == 0, shown.stderr
    hint = store.load_hints(key, first.id).levels[0]
    assert shown.stdout.startswith(first.task("hidden"))  # the task as the Dev reads it, unwrapped
    assert "[hint L0] " in shown.stdout and hint.content.splitlines()[0] in shown.stdout
    assert f"Earlier milestones:\n{FIRST}" in shown.stdout
    later = run_cli("show", key, "--task", second.id, "--json", store=store.root)
    data = json.loads(later.stdout)
    assert data["message"].startswith(second.task("visible")) and data["test_visibility"] == "visible"
    assert data["milestone"] == second.id  # outside a run: the earlier titles, never a placeholder
    assert data["message"].split("Earlier milestones:\n", 1)[1].startswith(f"- {first.id} {first.title}")
    assert "in a run" not in data["message"].lower() and "each earlier milestone also carries" in data["note"]
    store.update_milestone(key, first.model_copy(update={"status": "does_not_reproduce"}))  # the chain skips it
    skipped = json.loads(run_cli("show", key, "--task", second.id, "--json", store=store.root).stdout)
    # its reference solution is applied all the same: the next task says so (toml's readers found m04's edits in
    # m05's workspace, and no word of m04 in its text)
    applied = f"- {first.id} {first.title}: not given to you; its reference solution is in your workspace"
    assert skipped["message"].split("Earlier milestones:\n", 1)[1].startswith(applied)
    missing = run_cli("show", key, "--task", "m99", store=store.root)
    assert missing.returncode == 1 and "has no milestone 'm99' (it has m01" in missing.stderr
    bad = run_cli("show", key, "--json", store=store.root)
    assert bad.returncode == 2 and "--task" in bad.stderr
