"""The optional PM rewrite: a model restates each milestone in a product manager's voice.

The rule-based description stays the plan's record; the rewrite is stored beside it
(`pm_description`) and is what the Dev reads first when present. The model sees only what the
Dev sees anyway (title, rule-based description, the L0 issue titles), so it can rephrase but has
nothing to invent from. A rewrite that names a file, a path or code would leak a hint: it is
refused and the rule-based text stays. Hints always stay repo-native.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..mining.describe import find_leaks
from ..store import Store
from .base import AgentBackend
from .pricing import priced, unpriced_warning

SYSTEM = """You are the product manager of a software project. Rewrite the feature below for the
engineer who will build it: what users get and why, then a short list "Acceptance criteria" of
observable behaviours. Use only the facts given; add no new requirements. Never name files,
directories, functions, classes or code, and give no implementation advice."""


@dataclass
class Rewrite:
    milestone_id: str
    accepted: bool
    reason: str = ""
    cost_usd: float = 0.0  # the call's cost, accepted or not (0 for a model without a price)


def rewrite_plan(store: Store, key: str, agent: AgentBackend, log=print) -> list[Rewrite]:
    """Ask `agent` for each milestone's PM text; store the accepted ones in the plan."""
    if agent.synthetic:
        raise ConfigError(f"the PM rewrite needs a model backend, not {agent.name!r}")
    if not priced(agent.model):
        log(unpriced_warning(agent.model))
    out = []
    for milestone in store.load_plan(key).milestones:
        ladder = store.load_hints(key, milestone.id)
        prompt = (
            f"# {milestone.title}\n\n{milestone.description}\n\nIssue titles: {ladder.levels[0].content or '(none)'}"
        )
        turn = agent.turn([{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}], [])
        text = turn.text.strip()
        leaks = find_leaks(text, milestone.changed_files + milestone.test_files)
        if not text or leaks:
            reason = f"it names {', '.join(leaks[:5])}" if leaks else "the answer was empty"
            log(f"{milestone.id}: PM rewrite refused ({reason}); the rule-based description stays")
            out.append(Rewrite(milestone.id, False, reason, turn.cost_usd))
            continue
        rewrite = {"pm_description": text, "pm_model": turn.model or agent.model, "pm_cost_usd": turn.cost_usd}
        store.update_milestone(key, milestone.model_copy(update=rewrite))
        out.append(Rewrite(milestone.id, True, cost_usd=turn.cost_usd))
    return out
