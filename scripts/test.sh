#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every test. Tests
# labelled `gpu` skip with "SKIPPED: no GPU" where no GPU is present. Then
# each fuzz target runs 30 s, as many at a time as there are cores
# (scripts/fuzz.sh: clang, build-fuzz/; TUNED_SKIP_FUZZ=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
[[ ${TUNED_SKIP_FUZZ:-0} == 1 ]] || bash scripts/fuzz.sh --seconds 30 --at-once "$(nproc)" --worker build/bin/tuned-worker
