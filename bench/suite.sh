#!/usr/bin/env bash
# On the GPU machine: tunes a shape suite through the daemon and prints the
# tuned-vs-baseline table (bench/tunebench.cc). The database is kept in
# .devdb/ so that a suite split over several calls resumes where it stopped.
# The SM clock is sampled (nvidia-smi, every 500 ms) while the suite runs and
# summarized in the log (min / median / max MHz).
# Usage: [BUNDLE=.bundle] [KEEP_DB=1] [DUMP_RESULTS=1] [MATH=mode] bench/suite.sh OUTDIR FAMILY SHAPES_FILE [tunebench flags...]
# (a math mode: pass --math MODE to tunebench, and MATH=MODE for DUMP_RESULTS' dumps)
set -u
out=$1 family=$2 shapes=$3; shift 3
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p .devdb
log=$out/suite_$family.log
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader)"
  echo "# command: tunebench --family $family --shapes $shapes $*"
} >> "$log"
tuned --gpu 0 --db .devdb/gpu0.db >> "$out/tuned_$family.log" 2>&1 &
daemon=$!
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits -lms 500 > "$out/sm_clock_$family.txt" 2>/dev/null &
sampler=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
start=$(date +%s)
timeout "${SUITE_TIMEOUT:-500}" tunebench --family "$family" --shapes "$shapes" "$@" >> "$log" 2>&1
echo "# exit $?, $(( $(date +%s) - start )) s wall" >> "$log"
kill -TERM $sampler 2>/dev/null; wait $sampler 2>/dev/null
# DUMP_RESULTS=1: every measurement of every shape, for ablation tables.
if [[ ${DUMP_RESULTS:-0} == 1 ]]; then
  grep -v '^#' "$shapes" | while read -r dims; do
    [[ -z $dims ]] && continue
    tunectl results --family "$family" ${MATH:+--math "$MATH"} --top 0 $dims \
      > "$out/results_${family}_${dims// /x}${MATH:+_$MATH}.txt" 2>&1
  done
fi
sort -n "$out/sm_clock_$family.txt" | awk '{a[NR]=$1} END {if (NR) printf "# SM clock while tuning: min %d, median %d, max %d MHz (%d samples)\n", a[1], a[int((NR+1)/2)], a[NR], NR}' >> "$log"
kill -TERM $daemon; wait $daemon
# KEEP_DB=1: the database into OUTDIR too, to carry into a later call on a
# fresh machine (the suite resumes). Off by default: it holds every compiled
# kernel's cubin and PTX (hundreds of MB after the 16-bit suite), more than a
# device call returns.
if [[ ${KEEP_DB:-0} == 1 ]]; then cp .devdb/gpu0.db "$out/gpu0.db"; fi
