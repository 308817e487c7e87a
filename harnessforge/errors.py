"""Errors a user can act on. Each message names the input at fault and says what to do."""


class HarnessForgeError(Exception):
    """Base class: the CLI prints these as one clear line instead of a traceback."""


class ConfigError(HarnessForgeError):
    """A rules or candidates file that does not parse or validate."""


class ArtifactError(HarnessForgeError):
    """A file in the store that is missing, is not JSON, or does not match its model."""


class RepoError(HarnessForgeError):
    """A repository argument that cannot be resolved, cloned or read."""


class PlanningError(HarnessForgeError):
    """A repository whose history cannot be planned (no tags, bad range, ...)."""


class GitHubError(HarnessForgeError):
    """The GitHub API could not be reached or answered with an error."""


class EnvError(HarnessForgeError):
    """An environment that cannot be built or a sandbox that cannot run.

    `reason` is one of the taxonomy in `models.env.EnvErrorReason`, so failures can be counted.
    """

    def __init__(self, message: str, reason: str = "sandbox_error"):
        super().__init__(message)
        self.reason = reason


class SandboxLost(EnvError):
    """The sandbox's container or its engine went away under a running milestone (an engine restart,
    a removed container): not the Dev's fault, and the work since the last recorded event is gone,
    so the milestone can be retried in a fresh sandbox from its event log."""
