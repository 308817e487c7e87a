"""Harbor's ATIF validator on what our ATIF writer gives, for a model's run and for the oracle's (no LLM
call: ATIF then forbids metrics and reasoning), and on documents of the earlier writer once upgraded.
Then Harbor's task loader and `harbor lint` on a folder written from a card, and on the same folder in
the format Harbor 0.26 flags (schema 1.3, `allow_internet`, the verifier in the agent's sandbox).
Exports of a real chain (ATIF files, task folders) are checked in tests/test_run_chain.py."""

import copy
import json

import pytest

from harnessforge.distill.tasks import dockerfile
from harnessforge.export.harbor import task_files, write_folder
from harnessforge.harness.atif import to_atif, upgrade, validate_atif
from harnessforge.models.distill import CardHint, TaskCard
from harnessforge.models.env import Recipe
from harnessforge.rules import load_rules
from tests.harbor_tools import LINT_IGNORED, check, lint
from tests.test_recorder import TOOLS, milestone


def _write(tmp_path, docs: dict[str, dict]) -> list:
    paths = []
    for name, doc in docs.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc))
    return paths


def _before_the_rule(doc: dict) -> dict:
    """The earlier writer's output: a deterministic step kept its metrics and reasoning_content."""
    old = copy.deepcopy(doc)
    for step in old["steps"]:
        info = (step.get("extra") or {}).get("harnessforge", {})
        if "metrics" in info:
            step["metrics"] = info.pop("metrics")
        if "reasoning" in info:
            step["reasoning_content"] = info.pop("reasoning")
    return old


def test_harbor_accepts_the_atif_of_model_and_oracle_runs(harbor_venv, tmp_path):
    events, messages, meta = milestone()
    model = to_atif(events, messages, meta, TOOLS)
    oracle = to_atif(events, messages, meta.model_copy(update={"synthetic": True, "agent": "oracle"}), TOOLS)
    result = check(harbor_venv, _write(tmp_path, {"model": model, "oracle": oracle}))
    assert result["atif"] == {str(tmp_path / "model.json"): [], str(tmp_path / "oracle.json"): []}

    # the model's step keeps its metrics and reasoning; the oracle's carry them in extra, totals 0
    assert model["steps"][2]["metrics"]["prompt_tokens"] == 1000 and model["steps"][2]["reasoning_content"]
    scripted = oracle["steps"][2]
    assert scripted["llm_call_count"] == 0 and not {"metrics", "reasoning_content"} & set(scripted)
    assert scripted["extra"]["harnessforge"]["reasoning"] == "Start with the parser."
    assert scripted["extra"]["harnessforge"]["metrics"]["prompt_tokens"] == 1000
    assert oracle["final_metrics"]["total_prompt_tokens"] == 0


def test_an_earlier_document_fails_harbor_and_ours_until_upgraded(harbor_venv, tmp_path):
    events, messages, meta = milestone()
    oracle = to_atif(events, messages, meta.model_copy(update={"synthetic": True, "agent": "oracle"}), TOOLS)
    old = _before_the_rule(oracle)
    old["final_metrics"]["total_prompt_tokens"] = 3700  # as the earlier writer summed them
    with pytest.raises(ValueError, match="must be absent when llm_call_count is 0"):
        validate_atif(old)
    upgraded = upgrade(old)
    assert upgraded == oracle
    validate_atif(upgraded)
    result = check(harbor_venv, _write(tmp_path, {"old": old, "upgraded": upgraded}))
    errors = result["atif"][str(tmp_path / "old.json")]
    assert errors and all("must be absent when llm_call_count is 0" in error for error in errors), errors
    assert len(errors) == 3  # one per agent step (Harbor stops at a step's first field: metrics)
    assert result["atif"][str(tmp_path / "upgraded.json")] == []


def _card() -> TaskCard:
    rules = load_rules()
    recipe = Recipe(language="python", runner="pytest", base_image=rules.environments.base_images["python"])
    recipe.install = ["python3 -m venv /opt/hf/venv", "/opt/hf/venv/bin/pip install -r /hf/deps/requirements.txt"]
    base = "a" * 40
    return TaskCard(
        task_id="acme__tasklite-m01",
        repo="acme__tasklite",
        milestone_id="m01",
        title="Due dates",
        statement="Tasks get an optional due date.",
        base_commit=base,
        verify_commit="b" * 40,
        image="harnessforge/acme__tasklite:0123",
        dockerfile=dockerfile(recipe, base),
        dependency_files={"requirements.txt": "pytest==8.3.4\n"},
        test_cmd="python -m pytest -q tests/test_due.py",
        fail_to_pass=["tests/test_due.py::test_parse"],
        pass_to_pass=[],
        hint_ladder=[CardHint(level=1, name="where", content="Look at parse_due().")],
    )


def test_harbor_loads_and_lints_a_task_folder_and_flags_the_old_format(harbor_venv, tmp_path):
    rules = load_rules()
    files = task_files(_card(), rules) | {"tests/test.patch": "", "solution/solution.patch": ""}
    write_folder(tmp_path / "new" / "task", files)
    assert check(harbor_venv, [tmp_path / "new" / "task"])["tasks"] == {str(tmp_path / "new" / "task"): None}
    assert lint(harbor_venv, [tmp_path / "new" / "task"]) == (0, []) and not LINT_IGNORED

    old = files["task.toml"].replace('schema_version = "1.4"', 'schema_version = "1.3"')
    old = old.replace('network_mode = "no-network"', "allow_internet = false")
    old = "\n".join(line for line in old.splitlines() if not line.startswith(("environment_mode", "user =")))
    write_folder(tmp_path / "old" / "task", files | {"task.toml": old})
    (error,) = check(harbor_venv, [tmp_path / "old" / "task"])["tasks"].values()
    assert "'allow_internet' field is deprecated" in error
    code, findings = lint(harbor_venv, [tmp_path / "old" / "task"])
    assert code == 1 and {finding["rule"] for finding in findings} == {"shared-verifier"}
