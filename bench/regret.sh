#!/usr/bin/env bash
# On the GPU machine (from the bundle): the real regret report of a search
# strategy (issue 17). Phases, each resumable (the database lives in
# .regretdb/, kept between calls of one warm machine; copy it to OUTDIR):
#
#   cold     a fresh database, first start: the daemon compiles the space
#            ahead (tunectl device shows the progress, sampled every 5 s);
#            then the first shape's exhaustive tune time. Ends when the
#            compile-ahead is done.
#   exh      every shape of SHAPES exhaustively (--strategy exhaustive), with
#            the warm compile cache (what is tuned already is skipped); then
#            every shape's measurements dumped (results_sgemm_MxNxK.txt, the
#            input of bench/strategy_sim).
#   strat    every shape again with STRATEGY (and BUDGET if set): the
#            strategy never learns from its own shape's measurements
#            (server/jobs/jobs.cc JobRunner::Knowledge), so each run is a
#            leave-one-out over the other tuned shapes. Per shape: the wall
#            time of the sweep, the strategy job's winner and the exhaustive
#            job's winner, raced in one process (sbs_probe --race, as row()
#            below describes); regret = the geometric mean of strategy ms /
#            exhaustive ms over the race's placements, less 1 (0 when one
#            config won both). Also by_cublas: (strategy ms / its cuBLAS ms) /
#            (exhaustive ms / its cuBLAS ms) - 1 from the jobs' judged times,
#            which carries cuBLAS's own noise (2% on 512^3 for one config,
#            bench/RESULTS.md flush16); wait_s, the job's wait
#            on compiles. AHEAD_WAIT=S waits up to S seconds for the
#            compile-ahead first (the report's "compile cache warm"; the
#            model strategy measures only configs compiled already, so 0
#            will do).
#            Ends with
#              SUMMARY strategy=<s> median_tune_s=<s> max_tune_s=<s> max_regret=<x> shapes=<n>
#   rerace   strat's rows again (regret_rerace.log) from OUTDIR's job JSONs
#            and regret_strat.log's tune times, the winners raced anew by this
#            bundle's sbs_probe; no daemon, no database.
#
# Usage: [BUNDLE=.bundle] [STRATEGY=model] [BUDGET=] bench/regret.sh OUTDIR PHASE [SHAPES_FILE]
# STRATEGY=model is the default here (cold and exh name exhaustive
# explicitly; the daemon's default strategy is exhaustive); BUDGET empty is the daemon's default, no budget:
# the model strategy sizes its first round itself (ModelOptions::first_seconds,
# 5 s of predicted GPU time), as bench/strategy_sim simulates it.
# Two 10-minute calls on an H100 (16 cores): call 1 `cold` then `exh`
# (compile-ahead ~4-5 min on 16 cores, exhaustive 12 shapes ~5 min with a
# warm cache: SUITE 2026-11-22 took 277 s), call 2 `strat` (~1-2 min). If
# call 1 runs out, call it again with `exh`: it resumes.
set -u
out=$1 phase=$2 shapes=${3:-../shared/bench/shapes.txt}
bundle=${BUNDLE:-.bundle}
strategy=${STRATEGY:-model}
budget=${BUDGET:-}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p "$out" .regretdb
log=$out/regret_$phase.log
[[ $phase == cold ]] && rm -f .regretdb/gpu0.db*
if [[ $phase != rerace ]]; then  # rerace needs no daemon: sbs_probe compiles its configs
  tuned --gpu 0 --db .regretdb/gpu0.db >> "$out/tuned_$phase.log" 2>&1 &
  daemon=$!
  trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; cp .regretdb/gpu0.db "$out/gpu0.db" 2>/dev/null' EXIT
  for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
fi
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) phase $phase" >> "$log"

shapes_list() { grep -v '^#' "$shapes" | grep -v '^ *$'; }
# REGRET_DEADLINE=EPOCH_S: start no shape after EPOCH_S - SHAPE_S (default
# 100 s, about the longest strategy tune with its race): the rest is left for
# the next call, which resumes (bench/h100_report.sh call).
past_deadline() {
  [[ -n ${REGRET_DEADLINE:-} ]] && (( $(date +%s) + ${SHAPE_S:-100} > REGRET_DEADLINE )) &&
    echo "# $(date -u +%T) deadline: ${1// /x} and the shapes after it left for the next call" >> "$log"
}
source "$(dirname "$0")/common.sh"  # since, field

# row DIMS TUNE_S: the regret row of one shape, from OUTDIR's job_strat_ and
# job_exh_ JSONs. The two winners raced in one process (sbs_probe --race:
# interleaved with cuBLAS, caches flushed, 100 rounds) on PLACEMENTS=4 fresh
# allocations of the buffers, with fresh data, the modules loaded again and
# the two configs' places in the round swapped each time (at 512^3 the config
# in the first place ran 4.5% slower, whichever it was:
# bench/RESULTS.md race-places): regret = the
# geometric mean over the placements of strategy ms / exhaustive ms, less 1 (0
# when the same config won both). by_cublas: the jobs' own judged times
# normalized by their cuBLAS, noisier by cuBLAS's noise.
row() {
  local dims=$1 t=$2 names race=0
  names=$(python3 -c "import json,sys; print(*(json.load(open(p)).get('best',{}).get('config',{}).get('name','-') for p in sys.argv[1:]))" \
    "$out/job_strat_${dims// /x}.json" "$out/job_exh_${dims// /x}.json")
  if [[ ${names% *} != "${names#* }" ]]; then
    sbs_probe --shape $dims --race --config ${names% *} --config ${names#* } --pairs 100 \
      --placements "${PLACEMENTS:-4}" > "$out/race_${phase}_${dims// /x}.txt" 2>&1
    race=$(awk -v n="${names#* }" '$1 == "PLACEMENTS" && $2 == n {print $4}' "$out/race_${phase}_${dims// /x}.txt")
    race=$(python3 -c "import sys; print(1 / float(sys.argv[1]) - 1 if sys.argv[1] else 'nan')" "${race:-}")
  fi
  python3 - "$out/job_strat_${dims// /x}.json" "$out/job_exh_${dims// /x}.json" "$t" "${dims// /x}" "$race" >> "$log" <<'EOF'
import json, sys
s, e = (json.load(open(p)) for p in sys.argv[1:3])
ms = lambda j: j.get('best', {}).get('medianMs', j.get('best', {}).get('median_ms', 0))
base = lambda j: j.get('baselineMs', j.get('baseline_ms', 0))
sm, em = ms(s), ms(e)
by_cublas = (sm / base(s)) / (em / base(e)) - 1 if sm and em and base(s) and base(e) else float('nan')
print("%-18s %8.1f %8d %12.4f %12.4f %9.4f %9.4f %7.1f  %s" % (sys.argv[4], float(sys.argv[3]),
      s.get('done', 0) + s.get('failed', 0), sm, em, float(sys.argv[5]), by_cublas,
      s.get('wait_seconds', 0), s.get('best', {}).get('config', {}).get('name', '-')))
EOF
}
header() {
  printf "%-18s %8s %8s %12s %12s %9s %9s %7s  %s\n" shape tune_s configs strategy_ms exh_ms regret by_cublas wait_s winner >> "$log"
}
# the SUMMARY line of the log's rows
summary() {
  python3 - "$log" "$strategy" >> "$log" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l[:1].isdigit() and len(l.split()) >= 8]
t = sorted(float(r[1]) for r in rows)
regret = max(float(r[5]) for r in rows)
print("SUMMARY strategy=%s median_tune_s=%.2f max_tune_s=%.2f max_regret=%.4f shapes=%d"
      % (sys.argv[2], statistics.median(t), t[-1], regret, len(rows)))
EOF
}

case $phase in
cold)
  first=$(shapes_list | head -1)
  start=$(date +%s.%N)
  tunectl sweep $first --strategy exhaustive --wait > "$out/cold_first_shape.txt" 2>&1
  echo "cold start: first shape $first tuned in $(since $start) s wall, the compile-ahead running beside it" >> "$log"
  while true; do
    line=$(tunectl device | grep -i "compiled ahead" || true)
    echo "$(date +%T) $line" >> "$log"
    done_=$(tunectl device --json | field compiled_ahead) total=$(tunectl device --json | field compile_ahead_total)
    [[ $total != 0 && $done_ -ge $total ]] && break
    sleep 5
  done
  echo "compile-ahead done after $(since $start) s" >> "$log"
  ;;
exh)
  shapes_list | while read -r dims; do
    tunectl best $dims > /dev/null 2>&1 && continue
    past_deadline "$dims" && break
    s=$(date +%s.%N)
    tunectl sweep $dims --strategy exhaustive --wait > /dev/null 2>&1
    echo "exhaustive ${dims// /x}: $(since $s) s wall" >> "$log"
  done
  # OUTDIR/exh.complete once every shape is tuned (the strat phase of
  # bench/h100_report.sh call waits for it: each shape's leave-one-out needs the other 11)
  shapes_list | while read -r dims; do tunectl best $dims < /dev/null > /dev/null 2>&1 || echo missing; done |
    grep -q missing || touch "$out/exh.complete"
  # every shape's measurements, the input of bench/strategy_sim
  shapes_list | while read -r dims; do
    tunectl results --family sgemm --top 0 $dims > "$out/results_sgemm_${dims// /x}.txt" 2>&1
  done
  ;;
strat)
  # Resumes: a shape with a row in the log already is skipped (carry OUTDIR
  # to the next call with the database when one call cannot hold the phase).
  # AHEAD_WAIT=S: first wait up to S seconds for the compile-ahead to finish
  # (issue 17 times the strategy with the compile cache warm; a restarted
  # daemon compiles on from where the cache stands), its progress logged.
  if (( ${AHEAD_WAIT:-0} > 0 )); then
    s=$(date +%s.%N)
    while true; do
      done_=$(tunectl device --json | field compiled_ahead) total=$(tunectl device --json | field compile_ahead_total)
      echo "# $(date -u +%T) compiled ahead $done_ of $total" >> "$log"
      [[ $total != 0 && $done_ -ge $total ]] && break
      python3 -c "import sys, time; sys.exit(time.time() - float(sys.argv[1]) < float(sys.argv[2]))" "$s" "$AHEAD_WAIT" && break
      sleep 15
    done
    echo "# waited $(since $s) s for the compile-ahead" >> "$log"
  fi
  header
  shapes_list | while read -r dims; do
    grep -q "^${dims// /x} " "$log" && continue
    past_deadline "$dims" && break
    # the exhaustive job of the shape: the newest DONE one
    exh=$(tunectl jobs --limit 1000 --json | python3 -c "
import json,sys
for j in json.load(sys.stdin).get('jobs', []):
    if j.get('state') == 'JOB_DONE' and 'x'.join(map(str, j['problem']['shape'])) == '${dims// /x}' and j.get('strategy', 'exhaustive') in ('', 'exhaustive'):
        print(j['id']); break")
    s=$(date +%s.%N)
    id=$(tunectl sweep $dims --strategy "$strategy" ${budget:+--budget "$budget"} --json | field id)
    tunectl watch "$id" > /dev/null 2>&1
    t=$(since $s)
    tunectl job "$id" --json > "$out/job_strat_${dims// /x}.json"
    tunectl job "$exh" --json > "$out/job_exh_${dims// /x}.json"
    row "$dims" "$t"
  done
  summary
  ;;
rerace)
  # The strat phase's winners raced again by the sbs_probe of this bundle, with
  # the tune times of OUTDIR/regret_strat.log: for a race that changed after
  # the jobs ran (as when the configs' places in the round began to rotate), without the
  # database.
  header
  awk '$1 ~ /^[0-9]+x[0-9]+x[0-9]+$/ {print $1, $2}' "$out/regret_strat.log" | sort -u -k1,1 |
    while read -r shape t; do row "${shape//x/ }" "$t" < /dev/null; done
  summary
  ;;
*) echo "unknown phase $phase (cold, exh, strat, rerace)" >&2; exit 2 ;;
esac
cat "$log"
