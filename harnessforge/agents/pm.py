"""The optional PM rewrite: a model restates each milestone in a product manager's voice.

The rule-based description stays the plan's record; the rewrite is stored beside it
(`pm_description`) and is what the Dev reads first when present. The model sees only what the
Dev sees anyway (title, rule-based description, the L0 issue titles, the interface), so it can
rephrase but has nothing to invent from. It replaces only "What to build": the Interface and
Acceptance criteria sections stay the rule-based ones. A rewrite is checked against them: one that
names a changed source file or shows solution code would leak a hint, one that drops a name the
release notes give in code (a flag, a parameter, a message) would lose the interface; either is
refused and the rule-based text stays. Hints always stay repo-native.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..files import FileClassifier
from ..mining.describe import Withholding, code_spans
from ..models import Milestone
from ..rules import Rules, load_rules
from ..store import Store
from .base import AgentBackend
from .pricing import priced, unpriced_warning

SYSTEM = """You are the product manager of a software project. Rewrite the feature below for the
engineer who will build it: what users get and why. Use only the facts given; add no new requirements.
Keep every name, option, parameter and message written in backticks exactly as given. Never name
source files or directories, show no code blocks, and give no implementation advice."""


@dataclass
class Rewrite:
    milestone_id: str
    accepted: bool
    reason: str = ""
    cost_usd: float = 0.0  # the call's cost, accepted or not (0 for a model without a price)


def rewrite_plan(store: Store, key: str, agent: AgentBackend, log=print, rules: Rules | None = None) -> list[Rewrite]:
    """Ask `agent` for each milestone's PM text; store the accepted ones in the plan."""
    if agent.synthetic:
        raise ConfigError(f"the PM rewrite needs a model backend, not {agent.name!r}")
    if not priced(agent.model):
        log(unpriced_warning(agent.model))
    out = []
    classify = FileClassifier((rules or load_rules()).planning)
    for milestone in store.load_plan(key).milestones:
        ladder = store.load_hints(key, milestone.id)
        interface = "\n".join(item.line() for item in milestone.interface) or "(none)"
        prompt = (
            f"# {milestone.title}\n\n{milestone.description}\n\nIssue titles: {ladder.levels[0].content or '(none)'}"
            f"\n\nInterface:\n{interface}"
        )
        turn = agent.turn([{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}], [])
        text = turn.text.strip()
        reason = refusal(text, milestone, classify)
        if reason:
            log(f"{milestone.id}: PM rewrite refused ({reason}); the rule-based description stays")
            out.append(Rewrite(milestone.id, False, reason, turn.cost_usd))
            continue
        rewrite = {"pm_description": text, "pm_model": turn.model or agent.model, "pm_cost_usd": turn.cost_usd}
        store.update_milestone(key, milestone.model_copy(update=rewrite))
        out.append(Rewrite(milestone.id, True, cost_usd=turn.cost_usd))
    return out


def refusal(text: str, milestone: Milestone, classify: FileClassifier) -> str:
    """Why a PM rewrite cannot stand in for the rule-based text (empty: it can)."""
    if not text:
        return "the answer was empty"
    sources = [path for path in milestone.changed_files if classify.is_source(path)]
    leaks = Withholding(sources).found(text) + (["a code block"] if "```" in text else [])
    if leaks:
        return f"it names {', '.join(leaks[:5])}"
    dropped = [span for span in code_spans(milestone.description) if span not in text]
    if dropped:
        return f"it drops {', '.join(f'`{span}`' for span in dropped[:5])}, which the release notes name"
    return ""
