#!/usr/bin/env bash
# The main job: installs dependencies, builds, starts the daemon on GPU 0 and
# tunes SGEMM 1024^3 through tunectl, logging how long the tuning took.
# Usage: scripts/run.sh [M N K]
# TUNED_BIN=DIR runs the binaries of DIR (tuned, tuned-worker, tunectl)
# instead of installing and building (a host without the build packages).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TUNED_BIN:-build/bin}
if [[ -z ${TUNED_BIN:-} ]]; then
  bash scripts/deps.sh
  bash scripts/build.sh
fi
[[ $# -gt 0 ]] || set -- 1024 1024 1024
"$bin/tuned" --gpu 0 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 60); do
  "$bin/tunectl" device > /dev/null 2>&1 && break
  # A daemon that exited (no GPU, a bad setting) said why on stderr: stop at once.
  if ! kill -0 "$daemon" 2>/dev/null; then
    wait "$daemon" && rc=0 || rc=$?
    echo "run.sh: tuned exited ($rc) before it served; see its message above" >&2
    exit 1
  fi
  sleep 0.5
done
start=$(date +%s%N)
"$bin/tunectl" sweep "$@" --wait
echo "run.sh: tuned $* in $(awk -v ns=$(( $(date +%s%N) - start )) 'BEGIN { printf "%.1f", ns / 1e9 }') s"
"$bin/tunectl" best "$@"
