#!/usr/bin/env bash
# The main job: installs dependencies, builds, starts the daemon on GPU 0 and
# tunes SGEMM 1024^3 through tunectl. Usage: scripts/run.sh [M N K]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
[[ $# -gt 0 ]] || set -- 1024 1024 1024
build/bin/tuned --gpu 0 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 60); do build/bin/tunectl device > /dev/null 2>&1 && break; sleep 0.5; done
build/bin/tunectl sweep "$@" --wait
build/bin/tunectl best "$@"
