#!/usr/bin/env bash
# Start a Docker engine if none answers (no bridge, no iptables: containers get the host network
# at image-build time or none at all), then bootstrap the base images sandboxes start from.
# Usage: scripts/start-docker.sh [language ...]   (default: python; CI: python go typescript rust)
# Measured on 2 cores: go 44 s, rust 121 s, typescript about 150 s (Debian's npm pulls ~400 packages).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { echo "start-docker.sh: dockerd is not installed (run scripts/install.sh as root)" >&2; exit 1; }
  mkdir -p .ci-logs
  nohup dockerd --bridge=none --iptables=false >.ci-logs/dockerd.log 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "start-docker.sh: dockerd did not come up; see .ci-logs/dockerd.log" >&2; exit 1; }
fi
echo "Docker engine $(docker version --format '{{.Server.Version}}') is up"

args=()
for lang in "${@:-python}"; do args+=(--language "$lang"); done
.venv/bin/harnessforge env bootstrap-base "${args[@]}"
