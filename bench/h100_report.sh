#!/usr/bin/env bash
# On the GPU machine: the H100 runs of issues 17 and 18 as one background
# pipeline that outlives a device call, so that its 10-minute limit cuts
# nothing (the machine stays warm 30 s after a call: the next call, issued at
# once, collects more of the logs).
#
#   bench/h100_report.sh start LOGDIR    copy the bundle and scripts to
#                                        /tmp/h100r/w, then run the steps
#                                        below under setsid, in STEPS' order
#   bench/h100_report.sh wait LOGDIR S   wait up to S seconds for it to end
#
# Steps (each marked done in LOGDIR/*.done; a step that ran is not run again):
#   gpu_tests    the whole GPU test suite (ctest label gpu)
#   mma_race     every tensor-core config of .bundle/mma_configs.txt raced
#                with cuBLAS pure fp32 on 4096^3 and 8192^3 (sbs_probe --race)
#   exh, strat   bench/regret.sh (issue 17: exhaustive, its database kept
#                as LOGDIR/exh.db.xz, less the measurements' cubins, for
#                EXH_DB= below; then the model
#                strategy leave-one-out and the two winners raced;
#                AHEAD_WAIT=S waits up to S s for the compile-ahead first,
#                default 0: the model strategy measures only configs other
#                shapes measured, compiled already; exh also dumps every
#                shape's measurements for bench/strategy_sim)
#   sbs          bench/suite.sh --side-by-side on the exhaustive database
#                (issue 17: the served choice in a separate process)
#   gemv         bench/suite.sh --gemv on bench/gemv_shapes.txt (issue 18)
#   fp32_accurate, tf32   bench/suite.sh --math MODE over the shapes (issue
#                18's SUMMARY math=... lines; not in the default STEPS)
# STEPS="..." picks the steps and their order (default: gpu_tests mma_race
# exh strat sbs gemv), GPU_TESTS_FILTER a gtest filter for gpu_tests.
# The database starts from .bundle/cache.db.xz if present: the compile
# cache, compiled without a GPU by `tuned --compile-only` (NVRTC needs none),
# so the exhaustive phase measures with a warm cache from its first shape.
#
#   bench/h100_report.sh call STATE OUT SECONDS
#       one self-contained device call (the machine may go back between
#       calls, taking what it held): STATE, a carried directory, holds the
#       database the calls before left (STATE/db.xz, less the measurements'
#       cubins, used once; else .regretdb/gpu0.db where a warm machine kept
#       it from the call before; else .bundle/cache.db.xz starts it) and their logs
#       (STATE/logs); runs STEPS (default: exh strat) of bench/regret.sh in
#       the foreground, starting no shape within 100 s of SECONDS
#       (REGRET_DEADLINE) and cutting the step 60 s after it, then writes
#       OUT/logs.tgz and, where it is under 16 MiB, OUT/db.xz, the next
#       call's STATE: the call takes up to SECONDS + 90 s.
set -u
cmd=$1 logs=$2
w=/tmp/h100r/w
keep_exh_db() {  # keep_exh_db DB OUT.xz: DB less the measurements' own cubins (the
  # compile cache's stay; the database grew past 400 MB with them), xz'd
  python3 - "$1" /tmp/exh_keep.db <<'PY'
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.executescript("""
UPDATE measurements SET binary_id = NULL
  WHERE binary_id NOT IN (SELECT binary_id FROM compiled WHERE binary_id IS NOT NULL);
DELETE FROM binaries WHERE id NOT IN (SELECT binary_id FROM compiled WHERE binary_id IS NOT NULL);
""")
dst.commit()
dst.execute("VACUUM")
PY
  xz -6 -T0 -c /tmp/exh_keep.db > "$2" && rm -f /tmp/exh_keep.db
}
export -f keep_exh_db
case $cmd in
call)
  state=$2 out=$3
  export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
  export REGRET_DEADLINE=$(( $(date +%s) + $4 ))
  mkdir -p .regretdb "$state/logs"
  if [[ -f $state/db.xz ]]; then  # carried from an earlier machine: used once
    rm -f .regretdb/gpu0.db*
    xz -dc "$state/db.xz" > .regretdb/gpu0.db && rm -f "$state/db.xz"
  elif [[ ! -f .regretdb/gpu0.db ]]; then  # else a warm machine's, the call before left it
    xz -dc .bundle/cache.db.xz > .regretdb/gpu0.db
  fi
  for name in ${STEPS:-exh strat}; do
    left=$(( REGRET_DEADLINE + 60 - $(date +%s) ))
    (( left > 60 )) || break
    [[ $name == strat && ! -f $state/logs/exh.complete ]] && break
    echo "$(date -u +%T) $name start" >> "$state/logs/calls.log"
    # a shape started just before the deadline has 160 s to end, then it is cut
    # (its job resumes in the next call's daemon)
    timeout -k 5 $left \
      bash bench/regret.sh "$state/logs" "$name" .bundle/shapes.txt > /dev/null
    rc=$?  # before a $(...) resets it
    echo "$(date -u +%T) $name rc $rc" >> "$state/logs/calls.log"
  done
  pkill -TERM -x tuned; for _ in $(seq 50); do pgrep -x tuned > /dev/null || break; sleep 0.2; done
  # the database comes back only under the 16 MiB a returned file may have (it
  # was 47-78 MB with the 12 shapes' measurements on the H100): else it stays in
  # .regretdb/ for the next call on this machine, issued at once
  keep_exh_db .regretdb/gpu0.db /tmp/h100r_db.xz
  if (( $(stat -c %s /tmp/h100r_db.xz) < 16 * 1024 * 1024 )); then mv /tmp/h100r_db.xz "$out/db.xz"
  else echo "$(date -u +%T) database $(( $(stat -c %s /tmp/h100r_db.xz) >> 20 )) MiB: kept in .regretdb/ only" >> "$state/logs/calls.log"; rm -f /tmp/h100r_db.xz; fi
  rm -f "$state/logs/gpu0.db"
  tar czf "$out/logs.tgz" -C "$state" logs
  ;;
start)
  mkdir -p "$logs" "$w"
  cp -r .bundle bench "$w/"
  cd "$w" || exit 1
  setsid bash bench/h100_report.sh run "$logs" > "$logs/pipeline.log" 2>&1 < /dev/null &
  ;;
run)
  cd "$w" || exit 1
  export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
  steps=" ${STEPS:-gpu_tests mma_race exh strat sbs gemv} "
  step() {  # step NAME COMMAND...: runs once if in STEPS, logs its time
    local name=$1; shift
    [[ -f $logs/$name.done || $steps != *" $name "* ]] && return
    echo "$(date -u +%T) $name start"
    local s=$(date +%s)
    "$@"
    local rc=$?  # before any $(...) below resets it
    echo "$(date -u +%T) $name rc $rc after $(( $(date +%s) - s )) s"
    touch "$logs/$name.done"
  }
  mkdir -p .regretdb
  # EXH_DB=FILE.db.xz: the database an earlier exh step left (LOGDIR/exh.db.xz,
  # compile cache included): the exh step is done, strat runs on it.
  if [[ -n ${EXH_DB:-} && ! -f .regretdb/gpu0.db ]]; then
    xz -dc "$EXH_DB" > .regretdb/gpu0.db && touch "$logs/exh.done"
  fi
  [[ -f .regretdb/gpu0.db || ! -f .bundle/cache.db.xz ]] ||
    xz -dc .bundle/cache.db.xz > .regretdb/gpu0.db
  shapes=.bundle/shapes.txt
  mma_race() {
    local d
    for d in "4096 4096 4096" "8192 8192 8192"; do
      mapfile -t names < .bundle/mma_configs.txt
      timeout 120 sbs_probe --shape $d --race --pairs 10 --config "${names[@]}" \
        > "$logs/mma_race_${d// /x}.txt" 2>&1
    done
  }
  math_suite() {  # issue 18's SUMMARY math=MODE line, on a copy of the regret database
    cp .regretdb/gpu0.db .devdb/gpu0.db 2>/dev/null
    env SUITE_TIMEOUT=900 MATH=$1 DUMP_RESULTS=1 bash bench/suite.sh "$logs" sgemm "$shapes" --math $1
    rm -f "$logs/gpu0.db" .devdb/gpu0.db
  }
  mkdir -p .devdb
  for name in $steps; do  # in the order STEPS names them
    case $name in
      gpu_tests) step gpu_tests bash -c "timeout 300 .bundle/bin/gpu_tests --gtest_filter='${GPU_TESTS_FILTER:-*}' \
        > '$logs/gpu_tests.log' 2>&1" ;;
      mma_race) [[ -f .bundle/mma_configs.txt ]] && step mma_race mma_race ;;
      exh) step exh bash -c "bash bench/regret.sh '$logs' exh '$shapes' && keep_exh_db '$logs/gpu0.db' '$logs/exh.db.xz'" ;;
      strat) step strat env AHEAD_WAIT=${AHEAD_WAIT:-0} bash bench/regret.sh "$logs" strat "$shapes" ;;
      sbs)
        [[ -f $logs/sbs.done ]] || cp .regretdb/gpu0.db .devdb/gpu0.db
        step sbs env SUITE_TIMEOUT=900 DUMP_RESULTS=1 bash bench/suite.sh "$logs" sgemm "$shapes" --side-by-side
        rm -f "$logs/gpu0.db" .devdb/gpu0.db ;;
      gemv)
        step gemv env SUITE_TIMEOUT=300 bash bench/suite.sh "$logs" sgemm bench/gemv_shapes.txt --gemv
        rm -f "$logs/gpu0.db" ;;
      fp32_accurate|tf32) step $name math_suite $name ;;
      *) echo "unknown step $name" ;;
    esac
  done
  echo "$(date -u +%T) all done"
  touch "$logs/all.done"
  ;;
wait)
  end=$(( $(date +%s) + $3 ))
  while [[ ! -f $logs/all.done && $(date +%s) -lt $end ]]; do sleep 5; done
  ;;
*) echo "usage: bench/h100_report.sh start|wait LOGDIR [SECONDS]" >&2; exit 2 ;;
esac
