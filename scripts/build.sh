#!/usr/bin/env bash
# Configures and builds into build/ (Release with debug info).
# TUNED_BUILD_BENCH=ON also builds bench/'s tools and GPU probes (tunebench,
# sbs_probe, ..., wgmma_rs_probe: the GPU machine's recipe, docs/development.md);
# unset, build/ keeps the value it was configured with (OFF by default).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  ${TUNED_BUILD_BENCH:+-DTUNED_BUILD_BENCH="$TUNED_BUILD_BENCH"} > /dev/null
cmake --build build -j "$(nproc)"
