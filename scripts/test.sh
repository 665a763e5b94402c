#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every test. Tests
# labelled `gpu` skip with "SKIPPED: no GPU" where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
