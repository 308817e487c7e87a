"""Dagster resources: thin, configurable wrappers over the core's store, rules and clients."""

from .agent import AgentResource
from .github import GitHubResource
from .sandbox import SandboxResource
from .store import StoreResource
from .upstream import UpstreamResource

__all__ = ["AgentResource", "GitHubResource", "SandboxResource", "StoreResource", "UpstreamResource"]
