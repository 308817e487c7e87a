"""Prompt caching on a long Anthropic run: the share of input tokens billed as cache reads.

    prompt_cache   The real `Navigator` runs milestones of the example repository (full: m01..m05 with
                   the harness benchmark's oracle profiles, 100 turns at most, so the `stuck` m03 is one
                   100-turn conversation; --quick: m01..m03, 60 turns) in the local sandbox, with the real
                   `AnthropicBackend` as the Dev. Its model is the local Anthropic wire-protocol server
                   (tests/llm_servers.py): each answer is what the offline oracle decides from the same
                   conversation (its thought as text, its tool call as tool_use), and `usage` comes from the
                   server's `PromptCache`, which emulates Anthropic's prompt caching on the requests the
                   backend really sent (breakpoints, prefix matching, 20-block lookback, 1,024-token
                   minimum; tokens estimated as JSON length / 4). Tool outputs are the real ones.

Reported: cached share = cache reads / all input tokens, over every request of the run (the
longest conversation and each milestone in `extra`); the cost with caching (what the backend's
own `cost_usd` adds up to) against the same requests billed without caching; and, for comparison,
the share if the last breakpoint sat one message back (the backend's placement before 2026-11-30:
the same recorded requests, re-billed by a fresh emulator).
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import Result, measured, unavailable

from harnessforge.agents.anthropic_backend import CACHE, AnthropicBackend
from harnessforge.agents.oracle import OracleAgent
from harnessforge.agents.pricing import price_of
from harnessforge.envs.environment import validate
from harnessforge.envs.local_sandbox import isolation_available
from harnessforge.examples import build_example_repo
from harnessforge.harness.navigator import Navigator
from harnessforge.mining.planner import plan as plan_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.llm_servers
from tests.llm_servers import AnthropicServer, PromptCache  # noqa: E402

GROUP = "prompt_cache"
NAME = "prompt_cache_share"
TARGET = 0.8  # cached share of all input tokens; see README "Benchmarks"
MODEL = "claude-sonnet-4-5"
PROFILES = {"m01": "direct", "m02": "needs_hints", "m03": "stuck", "m04": "partial", "m05": "asks"}
BASELINE = "the same requests billed without caching (every input token at the full input price)"


class WireOracle(OracleAgent):
    """The oracle's decisions, served by the local Anthropic server to the real `AnthropicBackend`:
    the Navigator sees only what came back through the wire protocol."""

    def __init__(self, server: AnthropicServer, backend: AnthropicBackend, profiles: dict[str, str]):
        super().__init__(seed=0, profiles=profiles)
        self.server, self.backend, self.model = server, backend, backend.model

    def turn(self, messages, tools):
        decided = super().turn(messages, tools)
        blocks = [AnthropicServer.text(decided.reasoning)] if decided.reasoning else []
        blocks += [AnthropicServer.tool_use(c.id, c.name, c.args) for c in decided.tool_calls]
        stop = "tool_use" if decided.tool_calls else "end_turn"
        self.server.push(AnthropicServer.message(*blocks, stop_reason=stop, model=self.model))
        return self.backend.turn(messages, tools)


def prompt_cache_benchmarks(quick: bool, log: Callable[[str], None] = print) -> list[Result]:
    if isolation_available() is None:
        why = "neither bubblewrap nor unshare is installed: no local sandbox for the run"
        return [unavailable(NAME, GROUP, why, TARGET, "min_value")]
    return measured(NAME, GROUP, TARGET, "min_value", lambda: _measure(quick, log), log)


def _measure(quick: bool, log) -> Result:
    rules = load_rules()
    max_turns = 60 if quick else rules.harness.max_turns
    wanted = ["m01", "m02", "m03"] if quick else list(PROFILES)
    rules = rules.model_copy(update={"harness": rules.harness.model_copy(update={"max_turns": max_turns})})
    once = rules.model_copy(update={"environments": rules.environments.model_copy(update={"repeats": 1})})
    with tempfile.TemporaryDirectory(prefix="hf-bench-cache-") as tmp:
        store = Store(Path(tmp) / "store")
        repo = build_example_repo(Path(tmp) / "tasklite")
        key = plan_repo(store, str(repo), rules).plan.repo.key
        verdicts = {v.milestone_id: v for v in validate(store, key, once, backend="local", log=lambda *_: None)}
        valid = [m for m in wanted if verdicts[m].status == "valid"]
        if "m03" not in valid:  # the `stuck` milestone is the long conversation this benchmark is about
            v = verdicts["m03"]
            why = f"{v.status} {v.reason or ''}: {(v.detail or '')[:300]}"
            raise RuntimeError(f"m03 did not validate in the local sandbox: {why}")
        if valid != wanted:
            log(f"prompt cache: only {valid} of {wanted} validate in the local sandbox")
        cache = PromptCache()
        with AnthropicServer(cache=cache) as server:
            backend = AnthropicBackend(MODEL, api_key="local", base_url=server.url, max_retries=0, timeout=60)
            agent = WireOracle(server, backend, {m: PROFILES[m] for m in valid})
            nav = Navigator(store, key, agent, rules, run_id=f"bench-cache-{os.getpid()}", backend="local", log=log)
            summaries = nav.run(valid)
            backend.close()
            bodies = server.bodies
    usage = cache.log
    if len(usage) != len(bodies) or len(usage) != sum(s.turns for s in summaries):
        raise RuntimeError(f"{len(bodies)} requests, {len(usage)} billed, {sum(s.turns for s in summaries)} turns")
    turns_of = [s.turns for s in summaries]
    price = price_of(MODEL)
    totals = _bill(usage, price)
    per_milestone, at = {}, 0
    for s, n in zip(summaries, turns_of):
        per_milestone[s.milestone_id] = {"turns": n, "status": s.status, **_bill(usage[at : at + n], price)}
        at += n
    longest = max(per_milestone.values(), key=lambda m: m["turns"])
    moved = _bill(_rebill(bodies, usage), price)  # the counterfactual: a breakpoint one message back
    recorded = sum(s.cost_usd for s in summaries)
    outcome = ", ".join(f"{s.milestone_id} {s.status} in {s.turns}" for s in summaries)
    share = totals["cached_share"]
    log(
        f"prompt cache: {len(usage)} requests ({outcome}); cached share {share:.1%}, ${totals['cost_usd']:.2f} "
        f"vs ${totals['cost_uncached_usd']:.2f} uncached; breakpoint one message back: "
        f"{moved['cached_share']:.1%}, ${moved['cost_usd']:.2f}"
    )
    return Result(
        NAME,
        GROUP,
        BASELINE,
        None,
        None,
        totals["cost_usd"] / totals["cost_uncached_usd"],
        "cost",
        TARGET,
        "min_value",
        value=share,
        unit="share",
        iterations=len(usage),
        detail=f"cache reads / all input tokens over {len(usage)} Messages requests of the real AnthropicBackend "
        f"(model {MODEL}) driven by the Navigator through {outcome} of the example repository (local sandbox, "
        f"real tool outputs; oracle decisions served by the local wire-protocol server, which emulates Anthropic's "
        f"prompt cache); {totals['input_tokens']:,} input tokens: {totals['cache_read']:,} read, "
        f"{totals['cache_write']:,} written, {totals['uncached']:,} uncached; cost ${totals['cost_usd']:.2f} with "
        f"caching vs ${totals['cost_uncached_usd']:.2f} without (ratio column); longest conversation "
        f"({longest['turns']} turns) {longest['cached_share']:.1%} cached; a breakpoint one message back (the "
        f"old placement) would give {moved['cached_share']:.1%} and ${moved['cost_usd']:.2f}",
        extra={
            "model": MODEL,
            "requests": len(usage),
            **totals,
            "per_milestone": per_milestone,
            "breakpoint_one_message_back": moved,
            "backend_cost_usd_sum": round(recorded, 6),
        },
    ).judge()


def _bill(usage: list[dict[str, int]], price) -> dict:
    """Token sums, the cached share and the cost with and without caching (USD)."""
    read = sum(u["cache_read_input_tokens"] for u in usage)
    write = sum(u["cache_creation_input_tokens"] for u in usage)
    fresh = sum(u["input_tokens"] for u in usage)
    out = sum(u["output_tokens"] for u in usage)
    total = read + write + fresh
    cost = (fresh * price.input + read * price.cache_read + write * price.cache_write + out * price.output) / 1e6
    return {
        "input_tokens": total,
        "cache_read": read,
        "cache_write": write,
        "uncached": fresh,
        "output_tokens": out,
        "cached_share": read / total if total else 0.0,
        "cost_usd": round(cost, 6),
        "cost_uncached_usd": round((total * price.input + out * price.output) / 1e6, 6),
    }


def _rebill(bodies: list[dict], billed: list[dict[str, int]]) -> list[dict[str, int]]:
    """The recorded requests with the message breakpoint on the last block of the message before the
    newest (skipping thinking blocks, which cannot carry one), billed anew; output tokens stay the same."""
    cache, out = PromptCache(), []
    for body, was in zip(bodies, billed):
        body = copy.deepcopy(body)
        for m in body["messages"]:
            for block in m["content"] if isinstance(m["content"], list) else []:
                block.pop("cache_control", None)
        back = body["messages"][-2]["content"] if len(body["messages"]) >= 2 else None
        if isinstance(back, list) and back and back[-1]["type"] not in ("thinking", "redacted_thinking"):
            back[-1]["cache_control"] = CACHE
        out.append(cache.usage(body, output_tokens=was["output_tokens"]))
    return out
