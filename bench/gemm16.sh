#!/usr/bin/env bash
# On the GPU machine: the 16-bit GEMM suite. A daemon tunes each shape of a
# shapes file in each dtype and gemm16bench (bench/gemm16_bench.cc) times the
# served kernel in its own process beside cuBLAS and cuBLASLt's best of 8,
# one log per dtype ending in its SUMMARY line. The database is kept in
# .devdb/ so that a suite split over several calls resumes where it stopped.
# Usage: [BUNDLE=.bundle] [KEEP_DB=1] bench/gemm16.sh OUTDIR SHAPES_FILE DTYPE... [-- gemm16bench flags]
#   e.g. bash bench/gemm16.sh $OUT .bundle/shapes.txt bf16 f16
set -u
out=$1 shapes=$2; shift 2
dtypes=()
while [[ $# -gt 0 && $1 != -- ]]; do dtypes+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p .devdb "$out"
tuned --gpu 0 --db .devdb/gpu0.db >> "$out/tuned_gemm16.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
for dtype in "${dtypes[@]}"; do
  log=$out/gemm16_${dtype}_$(basename "$shapes" .txt).log
  {
    echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    echo "# command: gemm16bench --shapes $shapes --dtype $dtype $*"
  } >> "$log"
  start=$(date +%s)
  timeout "${SUITE_TIMEOUT:-500}" gemm16bench --shapes "$shapes" --dtype "$dtype" "$@" >> "$log" 2>&1
  echo "# exit $?, $(( $(date +%s) - start )) s wall" >> "$log"
done
kill -TERM $daemon; wait $daemon
# KEEP_DB=1: the database into OUTDIR too, to carry into a later call on a
# fresh machine (the suite resumes). Off by default: it holds every compiled
# kernel's cubin and PTX (hundreds of MB after the 16-bit suite), more than a
# device call returns.
if [[ ${KEEP_DB:-0} == 1 ]]; then cp .devdb/gpu0.db "$out/gpu0.db"; fi
