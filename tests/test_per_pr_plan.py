"""Planning one milestone per PR (`granularity: pr`, the short-task baseline), on the example repository's git."""

import re
import subprocess

import pytest
import yaml

from harnessforge.errors import PlanningError
from harnessforge.files import FileClassifier
from harnessforge.mining.describe import Withholding
from harnessforge.mining.granularity import require_granularity
from harnessforge.mining.planner import plan
from harnessforge.models import MilestonePlan
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import git, run_pytest
from tests.test_planner import FEATURE_PRS

PR_NUMBER = re.compile(r"^Merge pull request #(\d+)|\(#(\d+)\)$")
TAG_INDEX_PRS = {25, 26}  # the tag index refactor: its tests already pass at its base (as in the feature plan)


def _sources(milestone) -> list[str]:
    """The milestone's changed non-test source files: the paths its text must not name."""
    classify = FileClassifier(load_rules().planning)
    return [path for path in milestone.changed_files if classify.is_source(path)]


def _rules(tmp_path, **planning):
    """The default rules with `planning` keys overridden through a rules file, as a user would."""
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"planning": planning}))
    return load_rules(path)


@pytest.fixture(scope="module")
def per_pr(example_repo, tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("per_pr") / "store")
    return store, plan(store, str(example_repo), load_rules(), granularity="pr")


def _history_prs(repo) -> list[int]:
    """The PR numbers of the range's first-parent commits, in history order, read off git itself."""
    subjects = git(repo, "log", "--first-parent", "--reverse", "--format=%s", "v0.1.0..v0.5.0").splitlines()
    return [int(match[1] or match[2]) for subject in subjects if (match := PR_NUMBER.search(subject))]


def test_one_milestone_per_pr_in_history_order(per_pr, example_repo):
    store, result = per_pr
    chain = result.plan
    prs = _history_prs(example_repo)
    assert len(prs) == 15 and prs != sorted(prs)  # #8 landed between #4 and #6
    assert [milestone.source_prs for milestone in chain.milestones] == [[number] for number in prs]
    assert chain.granularity == "pr" and store.load_plan(chain.repo.key).granularity == "pr"
    assert [milestone.id for milestone in chain.milestones] == [f"m{i:02d}" for i in range(1, 16)]
    mainline = git(example_repo, "rev-list", "--first-parent", "--reverse", "v0.1.0..v0.5.0").split()
    assert [commit for milestone in chain.milestones for commit in milestone.commits] == mainline
    assert chain.from_commit == git(example_repo, "rev-parse", "v0.1.0^{commit}") and chain.to_commit == mainline[-1]
    for milestone in chain.milestones:
        assert milestone.type == "feature" and milestone.flags == []
        assert Withholding(_sources(milestone)).found(milestone.description) == []
    # housekeeping rides with the PR before it, and a release closes the milestone holding its commit
    subjects = {commit: git(example_repo, "log", "-1", "--format=%s", commit) for commit in mainline}
    docs = next(commit for commit, subject in subjects.items() if subject == "docs: describe tags in the README")
    assert docs in chain.milestones[2].commits and chain.milestones[2].source_prs == [6]
    assert [subjects[commit] for commit in chain.milestones[3].commits] == [
        "Merge pull request #9 from bo/json-store",
        "ci: also test on Python 3.12",
        "Tidy store tests",
        "Release 0.2.0",
    ]
    assert [milestone.release for milestone in chain.milestones].count("v0.2.0") == 4
    # the undescribed test tidy-up is left out of #9's acceptance tests, as in the feature plan
    assert [excluded.test for excluded in chain.milestones[3].excluded_tests] == [
        "tests/test_store.py::test_remove_deletes_task_and_forgets_it"
    ]
    assert chain.report.entries_covered == chain.report.entries_citing == 15


def test_each_milestone_is_described_and_hinted_by_its_own_pr(per_pr, example_repo):
    store, result = per_pr
    key = result.plan.repo.key
    classify = FileClassifier(load_rules().planning)
    tags, filters = result.plan.milestones[0], result.plan.milestones[2]  # #4 and #6 share issue #3
    assert "Tasks can carry tags" in tags.description and "filtered" not in tags.description
    assert "Stores can be filtered by tags" in filters.description and "carry tags" not in filters.description
    # named by their release-note entries, whole, or their PR's title when the entry's sentence is too long
    assert tags.title == "Add tags to tasks"
    assert filters.title == "Stores can be filtered by tags, by completion and by words in the title"
    for milestone in result.plan.milestones:
        ladder = store.load_hints(key, milestone.id)
        assert ladder == result.hints[milestone.id] and ladder.milestone_id == milestone.id
        [number] = milestone.source_prs
        assert "#" not in ladder.levels[0].content  # bare numbers say nothing to a Dev without the network
        assert set(ladder.levels[0].sources) <= {f"PR #{number}"}  # no other PR's material
        sources = {source for hint in ladder.levels[:3] for source in hint.sources}
        assert sources <= {f"PR #{number}"} | {f"issue:#{issue}" for issue in milestone.issues}
        # L3: the source files the PR itself touched (not a release commit riding along)
        pr_commit = milestone.commits[0]  # housekeeping rides after the PR
        assert PR_NUMBER.search(git(example_repo, "log", "-1", "--format=%s", pr_commit))[0].count(str(number))
        own = git(example_repo, "diff", "--name-only", f"{pr_commit}^1", pr_commit).split()
        files = {line.split(" (")[0] for line in ladder.levels[3].content.splitlines()}
        assert files == {path for path in own if classify.is_source(path)}, milestone.id
        assert ladder.levels[4].content.startswith("--- a/tasklite/")
    assert "Tags are normalised to lower case" in result.hints["m01"].levels[1].content
    assert "Filters by all/any tags" in result.hints["m03"].levels[1].content
    assert "Tags are normalised" not in result.hints["m03"].levels[1].content
    assert "PR #8: Serialize tasks to plain dicts\nRecords are validated" in result.hints["m02"].levels[2].content


def test_patches_and_traced_tests_of_each_pr(per_pr, example_repo, tmp_path):
    """Ground truth + test patch rebuild the PR's verify tree; its traced tests fail at its base (but the tag
    index refactor's) and pass at verify."""
    store, result = per_pr
    key = result.plan.repo.key
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(example_repo), str(work)], check=True)
    for milestone in result.plan.milestones:
        folder = store.milestone_dir(key, milestone.id)
        git(work, "checkout", "-q", "-f", milestone.base_commit)
        git(work, "clean", "-qfdx")
        git(work, "apply", "--index", str(folder / "ground_truth.patch"), str(folder / "test.patch"))
        assert git(work, "write-tree") == git(work, "rev-parse", f"{milestone.verify_commit}^{{tree}}")
        git(work, "checkout", "-q", "-f", milestone.base_commit)
        git(work, "apply", str(folder / "test.patch"))
        assert milestone.acceptance_tests, milestone.id
        before = run_pytest(work, sorted({test.split("::")[0] for test in milestone.acceptance_tests}))
        reproduces = not TAG_INDEX_PRS & set(milestone.source_prs)
        assert (before.returncode != 0) == reproduces, (milestone.id, before.stdout)
        git(work, "checkout", "-q", "-f", milestone.verify_commit)
        after = run_pytest(work, milestone.acceptance_tests)
        assert after.returncode == 0, (milestone.id, after.stdout)


def test_the_feature_plan_is_unchanged_and_the_two_replace_each_other(example_repo, store, rules, planned):
    feature = plan(store, str(example_repo), rules)
    assert feature.plan.granularity == "feature" and feature.replaced is None
    assert [milestone.source_prs for milestone in feature.plan.milestones] == FEATURE_PRS
    assert feature.plan.model_dump(exclude={"provenance"}) == planned[1].plan.model_dump(exclude={"provenance"})
    per_pr = plan(store, str(example_repo), rules, granularity="pr")
    assert per_pr.replaced == "feature" and len(per_pr.plan.milestones) == 15
    folders = sorted(path.name for path in (store.repo_dir(per_pr.plan.repo.key) / "milestones").iterdir())
    assert folders == [f"m{i:02d}" for i in range(1, 16)]
    again = plan(store, str(example_repo), rules)
    assert again.replaced == "pr" and again.plan.model_dump(exclude={"provenance"}) == feature.plan.model_dump(
        exclude={"provenance"}
    )
    assert len(list((store.repo_dir(again.plan.repo.key) / "milestones").iterdir())) == 6
    # a plan written before granularity was recorded is a feature plan
    data = again.plan.model_dump(mode="json")
    del data["granularity"]
    assert MilestonePlan.model_validate(data).granularity == "feature"


def test_per_pr_size_rules(example_repo, store, tmp_path):
    """Over the maximum a PR stays whole (flagged); under the minimum it joins the next one's milestone."""
    big = plan(store, str(example_repo), _rules(tmp_path, per_pr={"max_lines": 100}), granularity="pr")
    assert [milestone.source_prs for milestone in big.plan.milestones] == [
        [number] for number in _history_prs(example_repo)
    ]
    assert {milestone.source_prs[0] for milestone in big.plan.milestones if milestone.flags} == {22, 25}
    assert all(milestone.flags == ["oversized"] for milestone in big.plan.milestones if milestone.flags)
    rules = _rules(tmp_path, per_pr={"min_lines": 60})
    small = plan(store, str(example_repo), rules, granularity="pr")
    assert [(milestone.source_prs, milestone.flags) for milestone in small.plan.milestones] == [
        ([4], []),
        ([8], []),
        ([6], []),
        ([9], []),
        ([12], []),
        ([13, 14], ["several_prs"]),  # #13 changes 56 lines
        ([16], []),
        # over the v0.3.0 tag (a release closes only a milestone at its minimum); the Markdown export and the
        # priorities share the module, not one definition: unrelated, and said so
        ([17, 19], ["several_prs", "unrelated_parts"]),
        ([20, 22], ["several_prs", "unrelated_parts"]),  # joined, related or not: and said so
        ([23, 25, 26], ["several_prs", "unrelated_parts"]),  # the small last one (#26) joins the one before
    ]
    # the feature plan's size rules are not per_pr's
    assert [milestone.source_prs for milestone in plan(store, str(example_repo), rules).plan.milestones] == (
        FEATURE_PRS
    )


def test_the_rules_key_chooses_and_the_option_overrides(example_repo, tmp_path, run_cli):
    rules_file = tmp_path / "pr.yaml"
    rules_file.write_text("planning:\n  granularity: pr\n")
    assert load_rules(rules_file).planning.granularity == "pr"
    proc = run_cli("--rules", str(rules_file), "plan", str(example_repo), "--from", "v0.3.0", check=True)
    assert "v0.3.0 → v0.5.0, 6 milestones (one per PR)" in proc.stdout
    saved = MilestonePlan.model_validate_json(
        (tmp_path / "store" / "repos" / "harnessforge-examples__tasklite" / "plan.json").read_text()
    )
    assert saved.granularity == "pr" and [m.source_prs for m in saved.milestones] == [
        [19],
        [20],
        [22],
        [23],
        [25],
        [26],
    ]
    proc = run_cli(
        "--rules",
        str(rules_file),
        "plan",
        str(example_repo),
        "--from",
        "v0.3.0",
        "--granularity",
        "feature",
        check=True,
    )
    assert "v0.3.0 → v0.5.0, 3 milestones" in proc.stdout and "one per PR" not in proc.stdout
    assert "replaced harnessforge-examples__tasklite's pr-granularity plan" in proc.stderr
    proc = run_cli("plan", str(example_repo), "--from", "v0.3.0", "--granularity", "pr", check=True)
    assert "6 milestones (one per PR)" in proc.stdout and "feature-granularity plan" in proc.stderr


def test_a_run_needing_a_per_pr_plan_says_how_to_make_one(planned, per_pr):
    feature_plan, per_pr_plan = planned[1].plan, per_pr[1].plan
    assert require_granularity(per_pr_plan, "pr", "--mode per-pr") is per_pr_plan
    with pytest.raises(PlanningError) as caught:
        require_granularity(feature_plan, "pr", "--mode per-pr")
    assert str(caught.value) == (
        "--mode per-pr needs a plan made with granularity pr, but harnessforge-examples__tasklite's plan has "
        "granularity feature: re-plan with `harnessforge plan harnessforge-examples__tasklite --from v0.1.0 "
        "--to v0.5.0 --granularity pr` (or set planning.granularity: pr)"
    )
