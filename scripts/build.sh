#!/usr/bin/env bash
# Configures and builds into build/ (-O2 with line tables, -g1: backtraces keep
# their functions and lines, and a file compiles in about three quarters of
# the time that full debug information takes).
# TUNED_BUILD_BENCH=ON also builds bench/'s tools and GPU probes (tunebench,
# sbs_probe, ..., wgmma_rs_probe: the GPU machine's recipe, docs/development.md);
# unset, build/ keeps the value it was configured with (OFF by default).
# Compiles through ccache where it is installed (scripts/ccache_env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ccache_launcher[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  ${TUNED_BUILD_BENCH:+-DTUNED_BUILD_BENCH="$TUNED_BUILD_BENCH"} > /dev/null
cmake --build build -j "$(nproc)"
