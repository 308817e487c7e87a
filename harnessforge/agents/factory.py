"""Pick a Dev backend by name, as the CLI and the Dagster resource do."""

from __future__ import annotations

from ..errors import ConfigError
from .base import AgentBackend

BACKENDS = ("oracle", "anthropic", "openai", "claude-code")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "claude-code": "claude-sonnet-4-6", "openai": "gpt-4.1"}


def make_agent(
    name: str,
    model: str | None = None,
    seed: int = 0,
    profiles: dict[str, str] | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
) -> AgentBackend:
    """`oracle` takes `seed` and per-milestone `profiles`; the API backends take `api_key` and `base_url`,
    each falling back to the provider's environment variables."""
    if name == "oracle":
        from .oracle import OracleAgent

        try:
            return OracleAgent(seed=seed, profiles=profiles)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if name == "anthropic":
        from .anthropic_backend import AnthropicBackend

        return AnthropicBackend(model or DEFAULT_MODELS["anthropic"], api_key=api_key, base_url=base_url)
    if name == "openai":
        from .openai_backend import OpenAIBackend

        return OpenAIBackend(model or DEFAULT_MODELS["openai"], api_key=api_key, base_url=base_url)
    if name == "claude-code":
        from .claude_code_backend import ClaudeCodeAgent

        return ClaudeCodeAgent(model or DEFAULT_MODELS["claude-code"])
    raise ConfigError(f"unknown agent {name!r}; use one of {', '.join(BACKENDS)}")
