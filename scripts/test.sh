#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every test. Tests
# labelled `gpu` skip with "SKIPPED: no GPU" where no GPU is present. The
# daemons that tests start compile at normal CPU priority
# (TUNED_WORK_PRIORITY=normal; a daemon's default, idle, lets the test
# beside it starve their compiles).
#
#   bash scripts/test.sh [--all-configs] [--fuzz]
#
# The kernel compile checks (tests/compile_check.h) compile one config of
# every code path and a sample of the others seeded by the commit
# (TUNED_COMPILE_SEED, the commit's hash unless set), so that successive
# commits cover the whole space; --all-configs compiles every config
# (TUNED_ALL_CONFIGS=1), what the GPU machine runs before a result is
# recorded in bench/RESULTS.md (docs/development.md, "Tests and CI").
# --fuzz (CI, .ci/run) also runs each fuzz target 30 s after the tests
# (scripts/fuzz.sh: clang, build-fuzz/), its targets built beside ctest at
# idle CPU priority (SCHED_IDLE), so that the build takes the CPU that the
# tests leave while their daemons wait (docs/development.md, "Where the test
# command's time goes").
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz=0
for arg in "$@"; do
  case $arg in
    --all-configs) export TUNED_ALL_CONFIGS=1 ;;
    --fuzz) fuzz=1 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $arg (--all-configs, --fuzz)" >&2; exit 2 ;;
  esac
done
TUNED_COMPILE_SEED=${TUNED_COMPILE_SEED:-$(git rev-parse HEAD 2> /dev/null || echo 0)}
export TUNED_COMPILE_SEED
echo "test.sh: compile checks seeded by $TUNED_COMPILE_SEED${TUNED_ALL_CONFIGS:+ (every config)}"
if ((fuzz)); then
  bash scripts/deps.sh clang-14 libfuzzer-14-dev libclang-rt-14-dev  # fuzz.sh's, before ctest starts
else
  bash scripts/deps.sh
fi
# deps.sh installed torch: the docs' Python blocks that use it must run (tests/docs_test.py).
export TUNED_REQUIRE_TORCH=1
export TUNED_WORK_PRIORITY=${TUNED_WORK_PRIORITY:-normal}
bash scripts/build.sh

fuzz_build=""
stop_fuzz_build() { [[ -z $fuzz_build ]] || kill -- "-$fuzz_build" 2> /dev/null || true; }
if ((fuzz)); then
  mkdir -p build-fuzz
  echo "test.sh: building the fuzz targets beside ctest (log: build-fuzz/build.log)"
  # A process group of its own (setsid), so that an interrupted run stops it whole.
  setsid chrt --idle 0 bash scripts/fuzz.sh --build-only --worker build/bin/tuned-worker \
    > build-fuzz/build.log 2>&1 &
  fuzz_build=$!
  trap 'stop_fuzz_build; exit 130' INT TERM
fi
rc=0
# One test more than the cores: about a third of the tests' time is spent
# waiting for their daemons (docs/development.md, "Where the test command's
# time goes").
ctest --test-dir build --output-on-failure -j "$(($(nproc) + 1))" --timeout 600 || rc=$?
if ((fuzz)); then
  if ((rc != 0)); then
    stop_fuzz_build
    wait "$fuzz_build" || true
    exit "$rc"
  fi
  echo "test.sh: waiting for the fuzz build"
  if ! wait "$fuzz_build"; then
    echo "test.sh: the fuzz build failed; the end of build-fuzz/build.log:" >&2
    tail -n 40 build-fuzz/build.log >&2
    exit 1
  fi
  fuzz_build=""
  bash scripts/fuzz.sh --prebuilt build-fuzz/fuzz --out build-fuzz/out --seconds 30 \
    --at-once "$(nproc)"
fi
exit "$rc"
