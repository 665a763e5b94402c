#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every test. Tests
# labelled `gpu` skip with "SKIPPED: no GPU" where no GPU is present. Then
# each fuzz target runs 30 s, as many at a time as there are cores
# (scripts/fuzz.sh: clang, build-fuzz/; TUNED_SKIP_FUZZ=1 skips it).
#
#   bash scripts/test.sh [--all-configs]
#
# The kernel compile checks (tests/compile_check.h) compile one config of
# every code path and a sample of the others seeded by the commit
# (TUNED_COMPILE_SEED, the commit's hash unless set), so that successive
# commits cover the whole space; --all-configs compiles every config
# (TUNED_ALL_CONFIGS=1), what the GPU machine runs before a result is
# recorded in bench/RESULTS.md (docs/development.md, "Tests and CI").
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case $arg in
    --all-configs) export TUNED_ALL_CONFIGS=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $arg (--all-configs)" >&2; exit 2 ;;
  esac
done
TUNED_COMPILE_SEED=${TUNED_COMPILE_SEED:-$(git rev-parse HEAD 2> /dev/null || echo 0)}
export TUNED_COMPILE_SEED
echo "test.sh: compile checks seeded by $TUNED_COMPILE_SEED${TUNED_ALL_CONFIGS:+ (every config)}"
bash scripts/deps.sh
# deps.sh installed torch: the docs' Python blocks that use it must run (tests/docs_test.py).
export TUNED_REQUIRE_TORCH=1
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
[[ ${TUNED_SKIP_FUZZ:-0} == 1 ]] || bash scripts/fuzz.sh --seconds 30 --at-once "$(nproc)" --worker build/bin/tuned-worker
