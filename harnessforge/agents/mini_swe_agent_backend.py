"""mini-swe-agent as the Dev: its DefaultAgent with its `mini.yaml` prompts and its one bash tool
(litellm to the model), every command run by the harness in the milestone's sandbox
(`drivers/mini_swe_agent_driver.py`). Its submission is its own: a command whose output starts with
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`."""

from __future__ import annotations

from ..models.trajectory import ToolCall
from .scaffold_link import ScaffoldLink

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class MiniSweAgent(ScaffoldLink):
    scaffold = "mini-swe-agent"
    package = "mini-swe-agent"
    supported = ">=2.4,<3"
    driver = "mini_swe_agent_driver.py"
    native_tools = {"bash": "bash"}

    def submitted(self, call: ToolCall, observation: str) -> bool:
        """As mini's environments decide: the output's first line is the marker and the command succeeded."""
        lines = observation.lstrip().splitlines()
        return (
            call.name == "bash"
            and bool(lines)
            and lines[0].strip() == SUBMIT_MARKER
            and observation.rstrip().endswith("[exit code 0]")
        )

    def driver_env(self) -> dict[str, str]:
        return {"MSWEA_GLOBAL_CONFIG_DIR": str(self.home / "mini-swe-agent")}
