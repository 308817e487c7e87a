"""`plan --pm`: a model rewrites descriptions as a PM, through the real anthropic SDK; leaks and rewrites that
drop the interface are refused."""

import json
import os
import subprocess

import pytest

from harnessforge.agents.oracle import OracleAgent
from harnessforge.agents.pm import rewrite_plan
from harnessforge.errors import ConfigError
from harnessforge.store import Store
from tests.helpers import cli_command
from tests.llm_servers import AnthropicServer

A = AnthropicServer
GOOD = "Users can {what}.\n\nAcceptance criteria:\n- the behaviour is visible from the command line"


def test_plan_with_pm_stores_rewrites_beside_the_rule_based_text(example_repo, tmp_path):
    root = tmp_path / "store"
    with AnthropicServer() as server:
        server.push(
            A.message(A.text(GOOD.format(what="tag their tasks"))),
            A.message(A.text("Users can search. Start by editing tasklite/store.py and add def search().")),
            *[A.message(A.text(GOOD.format(what=f"do thing {i}"))) for i in range(3, 10)],
        )
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test", "COLUMNS": "200"}
        cmd = cli_command(Store(root), "plan", str(example_repo), "--pm", "anthropic", "--pm-model", "claude-haiku-4-5")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        bodies = server.bodies
    assert proc.returncode == 0, proc.stderr
    store = Store(root)
    key = next(p.name for p in (root / "repos").iterdir())
    plan = store.load_plan(key)
    n = len(plan.milestones)
    # each call: 10 input and 5 output tokens of claude-haiku-4-5 ($1 / $5 per million), refused ones too
    assert f"PM rewrite: {n - 2}/{n} descriptions accepted (${n * 35e-6:.4f})" in proc.stdout
    assert "m02: PM rewrite refused (it names" in proc.stderr and "store.py" in proc.stderr
    # checked against the task's interface: a rewrite may not drop a name the release notes give in code
    assert "m05: PM rewrite refused (it drops `tasklite`, which the release notes name)" in proc.stderr
    m01, m02 = plan.milestones[:2]
    assert m01.pm_description.startswith("Users can tag their tasks") and m01.pm_model == "claude-sonnet-4-5"
    assert m01.description and m01.description != m01.pm_description  # the rule-based text stays
    assert m01.brief == m01.pm_description and m02.pm_description is None and m02.brief == m02.description
    milestone_file = json.loads((store.milestone_dir(key, "m01") / "milestone.json").read_text())
    assert milestone_file["pm_description"] == m01.pm_description
    assert m01.pm_cost_usd == pytest.approx(35e-6) and m02.pm_cost_usd is None
    assert "pm_cost_usd" not in json.loads((store.milestone_dir(key, "m02") / "milestone.json").read_text())
    # the model saw only the title, the rule-based description and the L0 issue titles: no hints beyond L0
    first = bodies[0]
    assert first["model"] == "claude-haiku-4-5" and "tools" not in first
    asked = (
        first["messages"][0]["content"][-1]["text"]
        if isinstance(first["messages"][0]["content"], list)
        else (first["messages"][0]["content"])
    )
    assert m01.title in asked and m01.description in asked and "Issue titles:" in asked
    assert "Interface:\n" + m01.interface[0].line() in asked
    assert store.load_hints(key, "m01").levels[2].content not in asked


def test_the_pm_rewrite_needs_a_model(planned):
    store, result = planned
    with pytest.raises(ConfigError, match="needs a model backend"):
        rewrite_plan(store, result.plan.repo.key, OracleAgent())
