#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan + UBSan, build-fuzz/)
# and runs each for a while over a copy of its committed corpus
# (fuzz/corpus/<name>/; the committed corpus is never changed).
#
#   bash scripts/fuzz.sh [--seconds S] [--jobs J] [--parallel | --at-once N] [--out DIR] [--prebuilt DIR]
#                        [--worker PATH] [--build-only] [TARGET...]
#
#   --seconds S     how long each target runs (default 30)
#   --jobs J        fuzzing processes per target (libFuzzer's fork mode; default 1)
#   --parallel      run the targets at the same time (J processes each), not one after another
#   --at-once N     run N targets at a time (default 1; --parallel: all): with J = 1 and N
#                   the number of cores, each target still gets S seconds of a core
#   --out DIR       where the working corpora, crash inputs and logs go
#                   (default: build-fuzz/out, or a new temporary folder with --prebuilt)
#   --prebuilt DIR  run the binaries in DIR or DIR/bin (<target>_fuzz, tuned-worker
#                   beside them; shared libraries in DIR/lib, as ../shared/device/bundle.sh
#                   lays them out), or in a tar archive of such a folder, instead of
#                   building: a machine without clang or apt (docs/development.md, "Fuzzing")
#   --worker PATH   the tuned-worker that the rpc and import_kernel targets start, built
#                   from this tree (the test command's: build/bin/tuned-worker), instead
#                   of building one with clang (a compile-only process; not fuzzed)
#   --build-only    build build-fuzz/fuzz/ and stop (scripts/test.sh builds it beside ctest,
#                   then runs it with --prebuilt build-fuzz/fuzz)
#   TARGET...       some of: rpc import_kernel config tunectl spec (default: all)
#
# Fails (exit 1) on any crash, sanitizer report, leak, timeout (-timeout=10)
# or out-of-memory (-rss_limit_mb=2048); the inputs that did it are left in
# OUT/artifacts/<target>/. Ends with
#   SUMMARY fuzz targets=<n> cpu_hours=<jobs x seconds run, summed, / 3600> crashes=<n> hangs=<n>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=30 jobs=1 at_once=1 out="" prebuilt="" worker="" build_only=0 targets=()
all_targets=(rpc import_kernel config tunectl spec)
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --parallel) at_once=0; shift ;;
    --at-once) at_once=$2; shift 2 ;;
    --worker) worker=$(realpath "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${all_targets[*]})" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "fuzz.sh: --seconds takes a whole number >= 1" >&2; exit 2; }
[[ $jobs =~ ^[0-9]+$ && $jobs -ge 1 ]] || { echo "fuzz.sh: --jobs takes a whole number >= 1" >&2; exit 2; }
[[ $at_once =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --at-once takes a whole number >= 1" >&2; exit 2; }
[[ -z $prebuilt || $build_only == 0 ]] || { echo "fuzz.sh: --build-only builds; --prebuilt does not" >&2; exit 2; }
((at_once >= 1 && at_once <= ${#targets[@]})) || at_once=${#targets[@]}

# Longest input per target: a request or a kernel's files (a cubin) are the largest.
declare -A max_len=([rpc]=16384 [import_kernel]=65536 [config]=4096 [tunectl]=1024 [spec]=16384)

if [[ -n $prebuilt ]]; then
  if [[ -f $prebuilt ]]; then  # an archive of such a folder (tar, any compression tar reads)
    unpacked=$(mktemp -d /tmp/tuned_fuzz_bin.XXXXXX)
    trap 'rm -rf "$unpacked"' EXIT
    tar xf "$prebuilt" -C "$unpacked"
    prebuilt=$unpacked
  fi
  bin=$(cd "$prebuilt" && pwd)
  [[ -d $bin/lib ]] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -x $bin/${targets[0]}_fuzz || ! -d $bin/bin ]] || bin=$bin/bin
  # CUDA's own libraries (the worker's NVRTC, the client's runtime) are the machine's.
  [[ -d /usr/local/cuda/lib64 ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64"
  [[ -n $out ]] || out=$(mktemp -d /tmp/tuned_fuzz_out.XXXXXX)
else
  # Build dependencies, and clang-14 with libFuzzer and the sanitizer runtimes.
  bash scripts/deps.sh clang-14 libfuzzer-14-dev libclang-rt-14-dev
  source scripts/ccache_env.sh
  # -O1: what libFuzzer and ASan are meant for, and a quicker build.
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-O1 \
    -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    "${ccache_launcher[@]}" -DTUNED_BUILD_FUZZ=ON -DBUILD_TESTING=OFF -DTUNED_FUZZ_WORKER="$worker" > /dev/null
  cmake --build build-fuzz -j "$(nproc)" --target fuzz
  ((build_only)) && exit 0
  bin=$root/build-fuzz/fuzz
  [[ -n $out ]] || out=$root/build-fuzz/out
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Leaks fail the run; UBSan stops at its first report (built with
# -fno-sanitize-recover=undefined) and prints the stack. Allocation stacks
# are unwound whole (fast_unwind_on_malloc=0, about half the inputs a
# second): Debian's libraries have no frame pointers, so a fast unwind stops
# at the first of them, and lsan.supp's rules, which name the library that
# allocated, never see a libgrpc below it (the 50-byte leak that stopped at
# libabsl_status in bench/RESULTS.md fuzz-leaks named no caller).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:symbolize=1:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# Leaks inside gRPC's libraries are not reported (fuzz/lsan.supp says why).
export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
[[ -n $symbolizer ]] && export ASAN_SYMBOLIZER_PATH=$symbolizer

# run_target NAME: one target's run; writes "rc elapsed crashes hangs" to OUT/NAME.result.
run_target() {
  local t=$1
  local exe=$bin/${t}_fuzz corpus=$out/corpus/$t artifacts=$out/artifacts/$t log=$out/$t.log
  [[ -x $exe ]] || { echo "fuzz.sh: no $exe" >&2; echo "1 0 1 0" > "$out/$t.result"; return; }
  rm -rf "$corpus" "$artifacts" "$out/work/$t"
  mkdir -p "$corpus" "$artifacts" "$out/work/$t"
  cp -r "$root/fuzz/corpus/$t/." "$corpus/"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}"
              -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -f $root/fuzz/dict/$t.dict ]] && args+=(-dict="$root/fuzz/dict/$t.dict")
  if ((jobs > 1)); then
    # Fork mode: J processes at a time, their new inputs merged into the corpus;
    # a timeout or an out-of-memory stops the run as a crash does.
    args+=(-fork="$jobs" -ignore_timeouts=0 -ignore_ooms=0 -ignore_crashes=0)
  fi
  echo "fuzz.sh: $t for ${seconds} s x $jobs (log: $log)"
  local start rc=0 elapsed crashes hangs
  start=$(date +%s)
  (cd "$out/work/$t" && exec "$exe" "${args[@]}" "$corpus") > "$log" 2>&1 || rc=$?
  elapsed=$(($(date +%s) - start))
  ((elapsed > seconds)) && elapsed=$seconds
  crashes=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
              -o -name 'deadly-*' \) | wc -l)
  hangs=$(find "$artifacts" -maxdepth 1 -type f -name 'timeout-*' | wc -l)
  # A sanitizer or libFuzzer failure that left no input (e.g. in the set-up) counts too.
  if ((rc != 0 && crashes + hangs == 0)); then crashes=1; fi
  echo "$rc $elapsed $crashes $hangs" > "$out/$t.result"
}

# N at a time: a target starts as soon as one of the running ones ends.
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  if ((++running >= at_once)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

total_crashes=0 total_hangs=0 failed=0 cpu_seconds=0 targets_failed=0
for t in "${targets[@]}"; do
  read -r rc elapsed crashes hangs < "$out/$t.result"
  log=$out/$t.log
  cpu_seconds=$((cpu_seconds + elapsed * jobs))
  total_crashes=$((total_crashes + crashes)) total_hangs=$((total_hangs + hangs))
  # (Fork mode prints no final stats: its runs are the last "#N" line's.)
  execs=$( (grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" || true) | awk '{s += $2} END {print s + 0}')
  if ((execs == 0)); then
    execs=$( (grep -a -oE '^#[0-9]+' "$log" || true) | tail -1 | tr -d '#')
  fi
  rate=$( (grep -a -o 'stat::average_exec_per_sec: *[0-9]*' "$log" || true) | awk '{s += $2} END {print s + 0}')
  cov=$( (grep -a -oE '(cov|ft): [0-9]+' "$log" || true) | tail -2 | tr '\n' ' ')
  ((rate > 0)) || rate=$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))
  echo "fuzz.sh: $t: exit $rc, ${elapsed} s x $jobs, ${execs:-0} runs ($rate/s), ${cov:-}crashes=$crashes" \
       "hangs=$hangs, corpus $(find "$out/corpus/$t" -type f | wc -l) files"
  if ((rc != 0 || crashes + hangs > 0)); then
    failed=1 targets_failed=$((targets_failed + 1))
    echo "fuzz.sh: $t FAILED; the end of $log:"
    tail -n 60 "$log" | sed 's/^/    /'
    ls -l "$out/artifacts/$t" | sed 's/^/    /'
  fi
done
cpu_hours=$(awk -v s="$cpu_seconds" 'BEGIN {printf "%.3f", s / 3600}')
echo "fuzz: $((${#targets[@]} - targets_failed)) passed, $targets_failed failed"
echo "SUMMARY fuzz targets=${#targets[@]} cpu_hours=$cpu_hours crashes=$total_crashes hangs=$total_hangs"
exit $failed
