"""The scaffold's end of the link to the harness: standard library only, since it runs in the
scaffold's own virtualenv (its packages are not ours, ours are not its).

Every exchange is one request and one reply over a local socket (`multiprocessing.connection`, its
key in `HF_LINK_KEY`). The scaffold says what its model answered, asks the harness to run each tool
call in the milestone's sandbox, and asks before each model call for the messages the harness holds
for it (Mentor hints, Verifier feedback). The requests, as `ScaffoldLink` in the harness serves them:

- {"op": "hello", "scaffold", "version", "tools"}            -> {}
- {"op": "answer", "text", "reasoning", "calls", "usage", "model", "stop_reason", "latency_s",
   "received": [text, ...]}  (what the scaffold itself told its model since its last answer)   -> {}
- {"op": "tool", "id", "name", "args"}                       -> {"output", "ok", "exit_code"}
- {"op": "next"}                                             -> {"messages": [text, ...]}
- {"op": "done", "reason"}   (its loop ended)                -> {"messages": [...]} to go on, or {"stop": true}
- {"op": "error", "message", "status_code"}  (a model call failed for good) -> {}
"""

from __future__ import annotations

import json
import os
import tempfile
from multiprocessing.connection import Client


class Link:
    def __init__(self) -> None:
        self.conn = Client(os.environ["HF_LINK_SOCKET"], family="AF_UNIX", authkey=os.environ["HF_LINK_KEY"].encode())

    def ask(self, op: str, **fields) -> dict:
        self.conn.send({"op": op, **fields})
        return self.conn.recv()


def settings() -> dict:
    """The run's model settings, from the environment the harness started this process with."""
    return {
        "provider": os.environ["HF_PROVIDER"],  # anthropic | openai
        "model": os.environ["HF_MODEL"],
        "base_url": os.environ.get("HF_BASE_URL") or None,
        "api_key": os.environ["HF_API_KEY"],
        "task": open(os.environ["HF_TASK_FILE"]).read(),
        "workdir": os.environ.get("HF_WORKDIR", "/workspace"),
        "trajectory": os.environ.get("HF_TRAJECTORY") or None,
        "max_tokens": int(os.environ.get("HF_MAX_TOKENS") or 0) or None,  # an answer's cap (the rules')
        "context_window": int(os.environ.get("HF_CONTEXT_WINDOW") or 0) or None,  # the rules' window of the model
    }


def save_atomically(path: str, data, **dump) -> None:
    """Write the scaffold's record as JSON so that a kill mid-save leaves the last complete one (the harness
    stops a scaffold when a budget ends, whatever it is doing): a temporary file beside it, then a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".partial-", suffix=".json")
    try:
        with os.fdopen(handle, "w") as f:
            json.dump(data, f, **dump)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
