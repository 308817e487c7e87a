"""Pick a Dev backend by name, as the CLI and the Dagster resource do, and read the oracle's
per-milestone profiles the same way for both."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import ConfigError
from ..rules import ContextRules, HarnessRules, Sampling
from .base import AgentBackend
from .oracle import PROFILES, OracleAgent

BACKENDS = ("oracle", "anthropic", "openai", "claude-code", "claude-code-native", "mini-swe-agent", "openharness")
SCAFFOLDS = ("claude-code-native", "mini-swe-agent", "openharness")  # Devs in a scaffold's own loop and tools
# the ones a PM or a judge can be: a plain model call, no scaffold around it
MODEL_BACKENDS = tuple(name for name in BACKENDS if name != "oracle" and name not in SCAFFOLDS)
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "claude-code": "claude-sonnet-4-6",
    "claude-code-native": "claude-sonnet-4-6",
    "openai": "gpt-4.1",
    "mini-swe-agent": "openai/gpt-4.1",  # PROVIDER/MODEL: the Python scaffolds reach either API
    "openharness": "anthropic/claude-sonnet-4-6",
}


def make_agent(
    name: str,
    model: str | None = None,
    seed: int = 0,
    profiles: dict[str, str] | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    sampling: Sampling | None = None,
    context: ContextRules | None = None,
) -> AgentBackend:
    """`oracle` takes `seed` and per-milestone `profiles`; the API backends take `api_key` and `base_url`,
    each falling back to the provider's environment variables, and `sampling` (`sampling_of`); a scaffold that
    compacts its own conversation, its model's window in `context` (when the rules list the model)."""
    tuning = _tuning(sampling) if sampling else {}
    window = _listed_window(context, model or DEFAULT_MODELS.get(name, ""))
    if name == "oracle":
        try:
            return OracleAgent(seed=seed, profiles=profiles)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if name == "anthropic":
        from .anthropic_backend import AnthropicBackend

        return AnthropicBackend(model or DEFAULT_MODELS["anthropic"], api_key=api_key, base_url=base_url, **tuning)
    if name == "openai":
        from .openai_backend import OpenAIBackend

        return OpenAIBackend(model or DEFAULT_MODELS["openai"], api_key=api_key, base_url=base_url, **tuning)
    if name == "claude-code":
        from .claude_code_backend import ClaudeCodeAgent

        return ClaudeCodeAgent(model or DEFAULT_MODELS["claude-code"], context_window=window)
    if name == "claude-code-native":
        from .claude_code_native import ClaudeCodeNative

        return ClaudeCodeNative(
            model or DEFAULT_MODELS[name], api_key=api_key, base_url=base_url, context_window=window
        )
    if name in ("mini-swe-agent", "openharness"):
        provider, separator, bare = (model or DEFAULT_MODELS[name]).partition("/")
        if not separator:
            raise ConfigError(f"{name}: give the model as PROVIDER/MODEL (anthropic/... or openai/...), got {model!r}")
        if name == "mini-swe-agent":
            from .mini_swe_agent_backend import MiniSweAgent as scaffold
        else:
            from .openharness_backend import OpenHarnessAgent as scaffold
        cap = sampling.max_output_tokens if sampling else None
        return scaffold(
            bare, provider, api_key=api_key, base_url=base_url, max_output_tokens=cap, context_window=window
        )
    raise ConfigError(f"unknown agent {name!r}; use one of {', '.join(BACKENDS)}")


def sampling_of(name: str, model: str | None, harness: HarnessRules, asked: Sampling | None = None) -> Sampling | None:
    """How backend `name` asks `model` (the rules' `harness.sampling`, then `asked`); None for a Dev that is no
    plain model call (the oracle, a CLI). A Python scaffold keeps its own settings but the output cap."""
    if name in ("mini-swe-agent", "openharness"):
        return harness.sampling.of((model or DEFAULT_MODELS[name]).partition("/")[2], harness.context, asked)
    if name not in ("openai", "anthropic"):
        return None
    return harness.sampling.of(model or DEFAULT_MODELS[name], harness.context, asked)


def _listed_window(context: ContextRules | None, model: str) -> int | None:
    """The context window the rules list for `model` (None when they do not: the scaffold's own knowledge wins
    over the rules' default)."""
    if context is None:
        return None
    window, known = context.window(model)
    return window.context if known else None


def _tuning(sampling: Sampling) -> dict:
    tuning = {"temperature": sampling.temperature, "top_p": sampling.top_p, "extra_body": sampling.extra_body}
    tuning["max_tokens"] = sampling.max_output_tokens
    return tuning | ({"timeout": sampling.timeout_s} if sampling.timeout_s else {})


def parse_profiles(items: Iterable[str]) -> dict[str, str]:
    """`MID=PROFILE` items (the CLI's repeated `--profile`) as {milestone id: oracle profile}; a later
    item for the same milestone wins. The names are checked where the oracle is built (`check_profiles`)."""
    profiles = {}
    for item in items:
        milestone_id, separator, name = item.partition("=")
        if not separator:
            raise ConfigError(f"--profile {item!r}: expected MID=PROFILE, e.g. m02=needs_hints")
        profiles[milestone_id] = name
    return profiles


def check_profiles(profiles: Mapping[str, str]) -> dict[str, str]:
    """`profiles` when every one is an oracle profile; else a ConfigError naming the unknown ones."""
    unknown = sorted({name for name in profiles.values() if name not in PROFILES})
    if unknown:
        raise ConfigError(f"unknown oracle profile(s) {unknown}; use {', '.join(PROFILES)}")
    return dict(profiles)
