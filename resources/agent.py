"""The Dev agent that walks the milestone chain: which backend, which model, and under which run id."""

from typing import Optional

import dagster as dg
from pydantic import Field, field_validator

from harnessforge.agents.base import AgentBackend
from harnessforge.agents.factory import BACKENDS, MODEL_BACKENDS, SCAFFOLDS, check_profiles, make_agent, sampling_of
from harnessforge.agents.oracle import PROFILES
from harnessforge.errors import ConfigError
from harnessforge.rules import Rules
from harnessforge.store import check_run_id

from .choices import one_of


class AgentResource(dg.ConfigurableResource):
    """Builds the Dev backend for `raw_trajectories`; model backends read their API key from the environment."""

    backend: str = Field(
        "oracle",
        description=f"oracle: the offline ground-truth Dev (synthetic runs); {', '.join(MODEL_BACKENDS)}: a model "
        "(claude-code through the claude CLI; ANTHROPIC_API_KEY / OPENAI_API_KEY in the run's environment); "
        f"{', '.join(SCAFFOLDS)}: a model in that scaffold's own loop and tools (needs the docker sandbox for "
        "claude-code-native)",
    )
    model: Optional[str] = Field(
        None, description="Model name (default: the factory's); PROVIDER/MODEL for mini-swe-agent and openharness"
    )
    api_key: Optional[str] = Field(
        None,
        description="anthropic/openai: the API key; set it with EnvVar('ANTHROPIC_API_KEY') or "
        "EnvVar('OPENAI_API_KEY') so it never shows in the UI (unset: the SDK reads that variable itself)",
    )
    base_url: Optional[str] = Field(None, description="anthropic/openai: an API endpoint other than the vendor's")
    seed: int = Field(0, description="oracle: random seed of its detours")
    profiles: dict[str, str] = Field(
        default_factory=dict,
        description=f"oracle: behaviour per milestone id, e.g. {{m02: needs_hints}} ({', '.join(PROFILES)})",
    )
    mode: str = Field("standard", description="What the Dev is given: a name of the rules' harness.modes")
    harness_profile: str = Field("V0", description="V0-V3 (seed 000): a name of the rules' harness.harness_profiles")
    parallel_chains: int = Field(
        2, ge=1, description="Repos whose chains run at once in one run (a backfill's range); each chain in order"
    )
    run_id: Optional[str] = Field(
        None,
        description="Run name: trajectories go to trajectories/<repo>/<run_id>/<milestone>/ "
        "(default: dagster-<backend>). Every milestone of one chain must use the same run id.",
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return one_of(value, BACKENDS, "agent backend")

    @field_validator("profiles")
    @classmethod
    def _known_profiles(cls, value: dict[str, str]) -> dict[str, str]:
        try:
            return check_profiles(value)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @field_validator("run_id")
    @classmethod
    def _safe_run_id(cls, value: Optional[str]) -> Optional[str]:
        try:
            return None if value is None else check_run_id(value)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    def run_name(self) -> str:
        """The run id every milestone of this chain is recorded under."""
        return self.run_id or f"dagster-{self.backend}"

    def build(self, rules: Rules | None = None) -> AgentBackend:
        """A fresh Dev backend (raises the core's ConfigError/AgentError when it cannot be built); a model backend
        asks as the rules' `harness.sampling` says, as `harnessforge run` does (one policy, whichever resumes)."""
        sampling = sampling_of(self.backend, self.model, rules.harness) if rules else None
        return make_agent(
            self.backend,
            self.model,
            seed=self.seed,
            profiles=self.profiles or None,
            api_key=self.api_key,
            base_url=self.base_url,
            sampling=sampling,
        )
