"""Decisions the command line and the Dagster layer share, made in the core: which chains a `run`
starts, the oracle's `--profile` items, the window of a candidate search, and the one table of
sandbox (and agent) backends that every front validates against."""

from datetime import datetime, timedelta, timezone
from typing import get_args

import pytest
import typer
from pydantic import ValidationError

from harnessforge.agents.factory import BACKENDS, MODEL_BACKENDS, check_profiles, make_agent, parse_profiles
from harnessforge.cli.options import SANDBOX_HELP, check_sandbox
from harnessforge.envs.backends import BACKEND_NAMES, SANDBOX_BACKENDS, Backend, concrete_backends
from harnessforge.errors import ConfigError
from harnessforge.harness.jobs import ChainJob, expand_jobs
from harnessforge.mining.candidates import search_candidates, search_window_start
from harnessforge.rules import load_rules


def never() -> str:
    raise AssertionError("a run id was made up although none was needed")


# ---- jobs --------------------------------------------------------------------------------------------
def test_one_chain_per_repo_is_named_by_the_repo_and_keeps_the_run_id_and_seed():
    jobs = expand_jobs(["acme__a", "acme__b", "acme__a"], "r1", 7, 1, new_run_id=never)
    assert jobs == [ChainJob("acme__a", "acme__a", "r1", 7), ChainJob("acme__b", "acme__b", "r1", 7)]
    assert expand_jobs(["acme__a"], None, 0, 1, new_run_id=never)[0].run_id is None  # the Navigator names it


def test_several_chains_are_runs_of_their_own_with_consecutive_seeds():
    jobs = expand_jobs(["acme__a", "acme__b"], "base", 5, 3, new_run_id=never)
    assert [(job.name, job.repo, job.run_id, job.seed) for job in jobs] == [
        ("acme__a base-1", "acme__a", "base-1", 5),
        ("acme__a base-2", "acme__a", "base-2", 6),
        ("acme__a base-3", "acme__a", "base-3", 7),
        ("acme__b base-1", "acme__b", "base-1", 5),
        ("acme__b base-2", "acme__b", "base-2", 6),
        ("acme__b base-3", "acme__b", "base-3", 7),
    ]


def test_several_chains_without_a_run_id_share_one_made_up_name():
    made = iter(["oracle-1a2b3c4d", "oracle-second"])
    jobs = expand_jobs(["acme__a", "acme__b"], None, 0, 2, new_run_id=lambda: next(made))
    assert {job.run_id for job in jobs} == {"oracle-1a2b3c4d-1", "oracle-1a2b3c4d-2"}
    with pytest.raises(ValueError, match="chains must be at least 1"):
        expand_jobs(["acme__a"], None, 0, 0, new_run_id=never)


# ---- oracle profiles ---------------------------------------------------------------------------------
def test_profile_items_parse_into_a_mapping_the_last_one_winning():
    assert parse_profiles(["m01=direct", "m02=stuck", "m01=asks"]) == {"m01": "asks", "m02": "stuck"}
    assert parse_profiles([]) == {}
    with pytest.raises(ConfigError, match=r"--profile 'm02': expected MID=PROFILE, e.g. m02=needs_hints"):
        parse_profiles(["m01=direct", "m02"])


def test_unknown_profiles_get_one_message_from_the_cli_path_and_the_resource():
    assert check_profiles({"m01": "direct"}) == {"m01": "direct"}
    with pytest.raises(ConfigError) as checked:
        check_profiles(parse_profiles(["m01=lazy", "m02=", "m03=stuck"]))
    assert str(checked.value).startswith("unknown oracle profile(s) ['', 'lazy']; use direct, partial")
    with pytest.raises(ConfigError) as built:
        make_agent("oracle", profiles={"m01": "lazy", "m02": ""})
    assert str(built.value) == str(checked.value)

    from resources.agent import AgentResource

    with pytest.raises(ValidationError, match=r"unknown oracle profile\(s\) \['', 'lazy'\]"):
        AgentResource(profiles={"m01": "lazy", "m02": ""})


# ---- candidate search ----------------------------------------------------------------------------------
class RecordingClient:
    def __init__(self):
        self.calls = []

    def search_candidates(self, language, min_stars, pushed_after, limit, **preferences):
        self.calls.append((language, min_stars, pushed_after, limit, preferences))
        return ["acme/app"]


def test_candidates_are_searched_within_the_recent_activity_window():
    rules = load_rules().screening
    now = datetime(2025, 6, 30, 12, tzinfo=timezone.utc)
    assert search_window_start(rules, now) == now - timedelta(days=rules.recent_window_days)
    narrow = rules.model_copy(update={"recent_window_days": 10})
    assert search_window_start(narrow, now) == datetime(2025, 6, 20, 12, tzinfo=timezone.utc)
    client = RecordingClient()
    assert search_candidates(client, "go", 500, 3, narrow, now=now) == ["acme/app"]
    default = {"created_after": None, "max_stars": None, "sort": "stars"}
    assert client.calls == [("go", 500, datetime(2025, 6, 20, 12, tzinfo=timezone.utc), 3, default)]
    # preferring new, less-starred repositories (seed 000 §8.5)
    fresh = narrow.model_copy(
        update={
            "search": narrow.search.model_copy(update={"created_within_days": 30, "max_stars": 2000, "sort": "updated"})
        }
    )
    search_candidates(client, "go", 500, 3, fresh, now=now)
    assert client.calls[-1][4] == {"created_after": now - timedelta(days=30), "max_stars": 2000, "sort": "updated"}


# ---- backends ------------------------------------------------------------------------------------------
def test_the_sandbox_backends_table_is_what_every_front_accepts():
    assert BACKEND_NAMES == tuple(SANDBOX_BACKENDS) == get_args(Backend) == ("auto", "docker", "local")
    assert concrete_backends() == ("docker", "local")
    from resources.sandbox import SandboxResource

    field = SandboxResource.model_fields["backend"]
    for name, description in SANDBOX_BACKENDS.items():
        assert check_sandbox(name) == name and SandboxResource(backend=name).backend == name
        assert f"{name} ({description})" in SANDBOX_HELP and f"{name}: {description}" in field.description
    with pytest.raises(typer.BadParameter, match="'vm': use docker, local or auto"):
        check_sandbox("vm")
    with pytest.raises(ValidationError, match="sandbox backend 'vm' is not one of auto, docker, local"):
        SandboxResource(backend="vm")


def test_the_agent_backends_list_is_what_the_factory_and_the_resource_accept():
    from resources.agent import AgentResource

    assert MODEL_BACKENDS == ("anthropic", "openai", "claude-code") and BACKENDS[0] == "oracle"
    for name in BACKENDS:
        assert AgentResource(backend=name).backend == name
    with pytest.raises(ValidationError, match="agent backend 'gpt' is not one of oracle, anthropic, openai"):
        AgentResource(backend="gpt")
    with pytest.raises(ConfigError, match="unknown agent 'gpt'; use one of oracle, anthropic, openai, claude-code"):
        make_agent("gpt")
