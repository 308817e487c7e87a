"""Harbor's ATIF validator on what our ATIF writer gives, for a model's run and for the oracle's (no LLM
call: ATIF then forbids metrics and reasoning), and on documents of the earlier writer once upgraded.
Exports of a real chain (ATIF files, task folders, `harbor lint`) are checked in tests/test_run_chain.py."""

import copy
import json

import pytest

from harnessforge.harness.atif import to_atif, upgrade, validate_atif
from tests.harbor_tools import check
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
