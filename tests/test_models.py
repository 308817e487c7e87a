import json

import pytest
from pydantic import ValidationError

from harnessforge.models import ARTIFACTS, Hint, HintLadder, MilestonePlan, RepoSpec, export_schemas


def test_schema_export_writes_one_valid_schema_per_artifact(tmp_path):
    paths = export_schemas(tmp_path)
    assert {p.name for p in paths} == {f"{name}.schema.json" for name in ARTIFACTS}
    for name in (
        "RepoSpec",
        "ScreeningReport",
        "Release",
        "ChangelogEntry",
        "PullRef",
        "Milestone",
        "HintLadder",
        "MilestonePlan",
    ):
        schema = json.loads((tmp_path / f"{name}.schema.json").read_text())
        assert schema["title"] == name and schema["properties"]


def test_schema_command(run_cli, tmp_path):
    proc = run_cli("schema", "--out", str(tmp_path / "schemas"), check=True)
    assert "MilestonePlan.schema.json" in proc.stdout
    assert (tmp_path / "schemas" / "HintLadder.schema.json").exists()


def test_hint_ladder_needs_all_five_levels():
    levels = [
        Hint(level=i, name=n, content="x")
        for i, n in enumerate(["issue_titles", "issue_bodies", "pr_descriptions", "files_touched", "diff_hunks"])
    ]
    assert len(HintLadder(milestone_id="m01", levels=levels).levels) == 5
    with pytest.raises(ValidationError, match="hint ladder must have levels"):
        HintLadder(milestone_id="m01", levels=levels[:4])
    with pytest.raises(ValidationError):
        Hint(level=2, name="pr_descriptions", content="")


@pytest.mark.parametrize("key", ["a|b", "owner/name", "noseparator", "o__n,x", "[o]__n"])
def test_repo_key_must_be_partition_safe(key):
    with pytest.raises(ValidationError, match="owner__name"):
        RepoSpec(input="x", kind="github", url="x", key=key)


def test_plan_rejects_a_gap_in_the_chain(planned):
    _, result = planned
    data = result.plan.model_dump(mode="json")
    data["milestones"][1]["base_commit"] = data["milestones"][0]["base_commit"]
    with pytest.raises(ValidationError, match="base .* != previous verify"):
        MilestonePlan.model_validate(data)
    data = result.plan.model_dump(mode="json")
    data["unexpected"] = 1
    with pytest.raises(ValidationError, match="Extra inputs"):
        MilestonePlan.model_validate(data)
