#!/usr/bin/env bash
# Install HarnessForge from nothing: system packages (when root on Debian/Ubuntu: git, the Docker
# engine and docker-compose, debootstrap for base images, bubblewrap for the local sandbox, PostgreSQL
# for the Postgres-backed instance tests, Node.js for the claude CLI),
# then a virtualenv in .venv with the project and its test tools (OpenRLHF's dataset code in
# .tools/openrlhf), and the claude CLI (the claude-code Dev backend) in .tools/. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(git gettext ca-certificates docker.io docker-compose debootstrap bubblewrap iproute2 chromium postgresql)
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  missing=()
  for pkg in "${apt_packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
else
  for tool in git; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install.sh: please install $tool" >&2; exit 1; }
  done
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "install.sh: HarnessForge needs Python >= 3.11 (found $("$python" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
# OpenRLHF's own dataset code for tests/test_trainers.py: the package without its GPU dependencies
# (deepspeed, flash-attn, ray, vllm), in a directory of its own so pip never weighs them against ours.
openrlhf=0.11.2
if [ ! -d ".tools/openrlhf/openrlhf-$openrlhf.dist-info" ]; then
  rm -rf .tools/openrlhf
  .venv/bin/python -m pip install --quiet --no-deps --target .tools/openrlhf "openrlhf==$openrlhf" pylatexenc==2.10
fi
claude_code=${CLAUDE_CODE_VERSION:-2.1.332}
if command -v npm >/dev/null 2>&1; then
  [ "$(.tools/node_modules/.bin/claude --version 2>/dev/null | cut -d' ' -f1)" = "$claude_code" ] ||
    npm install --silent --no-audit --no-fund --prefix .tools "@anthropic-ai/claude-code@$claude_code"
else
  echo "install.sh: npm not found, so the claude-code backend is not installed" >&2
fi
# The Python scaffolds a Dev can work in (agents/scaffold_link.py), each in a virtualenv of its own so
# their dependencies (litellm, OpenHarness' chat-platform clients) never meet ours.
for scaffold in "mini-swe-agent==${MINI_SWE_AGENT_VERSION:-2.4.6}" "openharness-ai==${OPENHARNESS_VERSION:-0.1.9}"; do
  package=${scaffold%%==*}
  dir=.tools/scaffolds/${package%-ai}
  if [ "$("$dir/bin/python" -c "import importlib.metadata as m; print(m.version('$package'))" 2>/dev/null)" != "${scaffold#*==}" ]; then
    [ -x "$dir/bin/python" ] || "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet "$scaffold"
  fi
done
# Harbor (its ATIF validator, task loader and `harbor lint` check the exports in tests) needs
# Python >= 3.12: a virtualenv of its own in .venv-harbor, from HARBOR_PYTHON or the first such Python
# found; without one the Harbor tests skip (fail under HARNESSFORGE_REQUIRE_DOCKER=1).
harbor_version=${HARBOR_VERSION:-0.26.0}
if [ "$(.venv-harbor/bin/harbor --version 2>/dev/null)" != "$harbor_version" ]; then
  harbor_python=${HARBOR_PYTHON:-}
  for candidate in python3.13 python3.12 /root/.pyenv/versions/3.1[2-9]*/bin/python; do
    [ -n "$harbor_python" ] && break
    command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && harbor_python=$candidate
  done
  if [ -n "$harbor_python" ]; then
    [ -x .venv-harbor/bin/python ] || "$harbor_python" -m venv .venv-harbor
    .venv-harbor/bin/python -m pip install --quiet "harbor==$harbor_version" 2>&1 | grep -v "^WARNING: Location" >&2 || true
    [ "$(.venv-harbor/bin/harbor --version 2>/dev/null)" = "$harbor_version" ] ||
      { echo "install.sh: harbor $harbor_version did not install in .venv-harbor" >&2; exit 1; }
  else
    echo "install.sh: no Python >= 3.12 found (set HARBOR_PYTHON=...), so Harbor is not installed" >&2
  fi
fi
echo "HarnessForge installed in .venv ($(.venv/bin/harnessforge --help >/dev/null && echo ok))"
