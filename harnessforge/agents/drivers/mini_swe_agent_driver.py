"""mini-swe-agent as a HarnessForge Dev: its `DefaultAgent`, its `mini.yaml` prompts and its bash
tool (through litellm), with an environment whose every command the harness runs in the milestone's
sandbox. Run by the harness with mini-swe-agent's own Python: `python mini_swe_agent_driver.py`.

- `HarnessEnvironment.execute` asks the harness to run the command (`tool`) and gives the agent the
  output and exit code, as mini's own environments do; `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` still
  ends the agent's run (the harness grades it as the submission).
- Before every model call the agent takes the messages the harness holds (hints, feedback) as user
  messages (`next`); after its run ended it asks whether to go on (`done`).
- An answer mini cannot parse (no tool call, malformed arguments) stays in its conversation before mini's
  format-error feedback, as our own loop keeps one before its nudge (mini alone would drop it): the record is then
  what the model saw, and the feedback reaches the harness with the next answer (`received`) as an event.
- Its trajectory, in its own format (`mini-swe-agent-1.1`), is saved where the harness says, atomically: a kill
  mid-save (a budget ended) leaves the last complete record.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")  # prices are the harness's business
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches its price list from GitHub otherwise
os.environ.setdefault("LITELLM_TELEMETRY", "False")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml  # noqa: E402
from link import Link, save_atomically, settings  # noqa: E402
from minisweagent import __version__  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.config import builtin_config_dir  # noqa: E402
from minisweagent.exceptions import FormatError, Submitted  # noqa: E402
from minisweagent.models.litellm_model import LitellmModel  # noqa: E402
from minisweagent.models.utils.actions_toolcall import BASH_TOOL  # noqa: E402

link = Link()


class HarnessEnvironment:
    """mini's Environment protocol over the harness: the command runs in the sandbox, not here."""

    def __init__(self, workdir: str, env: dict | None = None):
        self.config = {"cwd": workdir, "env": env or {}}

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
        reply = link.ask("tool", id=action.get("tool_call_id") or "", name="bash", args={"command": action["command"]})
        output = {"output": reply["output"], "returncode": reply.get("exit_code", 0), "exception_info": ""}
        lines = output["output"].lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" and output["returncode"] == 0:
            submission = "".join(lines[1:])
            raise Submitted(
                {"role": "exit", "content": submission, "extra": {"exit_status": "Submitted", "submission": submission}}
            )
        return output

    def get_template_vars(self, **kwargs) -> dict:
        return {
            "cwd": self.config["cwd"],
            "system": "Linux",
            "release": "",
            "version": "",
            "machine": "x86_64",
            **kwargs,
        }

    def serialize(self) -> dict:
        return {"info": {"config": {"environment": self.config, "environment_type": "harnessforge.sandbox"}}}


class HarnessAgent(DefaultAgent):
    """DefaultAgent whose model calls are reported to the harness, each after the messages it holds."""

    told = 2  # messages[told:] were added since the last answer was reported (the system prompt and task before)

    def query(self) -> dict:
        received = [  # what mini itself said to the model since its last answer (its format-error feedback)
            message["content"]
            for message in self.messages[self.told :]
            if message.get("role") == "user" and not message.get("extra", {}).get("harnessforge")
        ]
        self.take(link.ask("next")["messages"])
        started = time.monotonic()
        try:
            message = super().query()
        except FormatError as e:  # a model call all the same: reported (no calls), kept, then mini answers it
            message = {"content": "", "extra": e.messages[0].get("extra", {})}
            response = message["extra"].get("response")
            if isinstance(response, dict):
                message["content"] = ((response.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
            self.add_messages({"role": "assistant", "content": message["content"]})
            self._report(message, time.monotonic() - started, received)
            raise
        except Exception as e:  # the model call failed for good (litellm's retries spent): said to the harness
            link.ask("error", message=f"{type(e).__name__}: {e}", status_code=getattr(e, "status_code", None))
            raise
        self._report(message, time.monotonic() - started, received)
        return message

    def take(self, texts: list[str]) -> None:
        """The harness's messages (hints, feedback, its go-on) as user messages, marked as the harness's."""
        for text in texts:
            message = self.model.format_message(role="user", content=text)
            message["extra"] = {"harnessforge": True}  # (mini sends no `extra` to the model)
            self.add_messages(message)

    def save(self, path: Path | None, *extra_dicts) -> dict:
        data = self.serialize(*extra_dicts)
        if path:
            save_atomically(str(path), data, indent=2)
        return data

    def _report(self, message: dict, latency: float, received: list[str]) -> None:
        self.told = len(self.messages)
        response = message.get("extra", {}).get("response") or {}
        usage = response.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        calls = [
            {
                "id": action.get("tool_call_id") or f"mini-{self.n_calls}-{index}",
                "name": "bash",
                "args": {"command": action["command"]},
            }
            for index, action in enumerate(message.get("extra", {}).get("actions", []))
        ]
        for call, action in zip(calls, message.get("extra", {}).get("actions", [])):
            action["tool_call_id"] = call["id"]
        choice = (response.get("choices") or [{}])[0]
        link.ask(
            "answer",
            text=message.get("content") or "",
            reasoning=message.get("reasoning_content") or "",
            calls=calls,
            usage={
                "input": usage.get("prompt_tokens") or 0,
                "output": usage.get("completion_tokens") or 0,
                "cached": details.get("cached_tokens") or 0,
            },
            model=response.get("model") or self.model.config.model_name,
            stop_reason=choice.get("finish_reason") or "",
            latency_s=latency,
            received=received,
        )


def main() -> None:
    run = settings()
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    agent_config = {
        k: v for k, v in config["agent"].items() if k != "mode"
    }  # `mode: confirm` is the interactive agent's
    agent_config |= {"step_limit": 0, "cost_limit": 0.0}  # the harness keeps the budgets
    if run["trajectory"]:
        agent_config["output_path"] = Path(run["trajectory"])
    model_kwargs = dict(config["model"].get("model_kwargs") or {}) | {"api_key": run["api_key"]}
    if run["base_url"]:
        model_kwargs["api_base"] = run["base_url"]
    if run["max_tokens"]:
        model_kwargs["max_tokens"] = run["max_tokens"]
    model_config = {k: v for k, v in config["model"].items() if k != "model_kwargs"}
    model = LitellmModel(
        model_name=f"{run['provider']}/{run['model']}",
        model_kwargs=model_kwargs,
        cost_tracking="ignore_errors",
        **model_config,
    )
    env = HarnessEnvironment(run["workdir"], config.get("environment", {}).get("env"))
    agent = HarnessAgent(model, env, **agent_config)
    link.ask("hello", scaffold="mini-swe-agent", version=__version__, tools=[BASH_TOOL])
    try:
        exit_info = agent.run(run["task"])
        while True:  # its run ended (a submission the harness did not accept): go on if the harness says so
            reply = link.ask("done", reason=exit_info.get("exit_status", ""))
            if reply.get("stop"):
                return
            agent.messages = [message for message in agent.messages if message.get("role") != "exit"]
            agent.take(reply["messages"])
            exit_info = resume(agent)
    except (EOFError, OSError):  # the harness closed the link (a budget ended): the record is saved, stop
        return


def resume(agent: HarnessAgent) -> dict:
    """DefaultAgent.run's loop without its reset: the same conversation goes on."""
    from minisweagent.exceptions import FormatError, InterruptAgentFlow

    while True:
        try:
            agent.step()
        except FormatError as e:
            agent.add_messages(*e.messages)
        except InterruptAgentFlow as e:
            agent.add_messages(*e.messages)
        finally:
            agent.save(agent.config.output_path)
        if agent.messages[-1].get("role") == "exit":
            return agent.messages[-1].get("extra", {})


if __name__ == "__main__":
    main()
