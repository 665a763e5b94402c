#!/usr/bin/env bash
# On the GPU machine (from the bundle): a fresh install's first shapes
# (issue 38). A daemon with its defaults on a fresh database, the prior
# PRIOR (default: the shipped one; use a held-out prior, bench/prior_build.py
# --exclude SHAPES, so that no shape's own measurements are in it), tunes the
# shapes of SHAPES one after another in a new order (a fixed shuffle,
# ORDER_SEED, default 38), each submitted once the one before is done. Per
# shape: the wall time from submission to the end of the job, the configs
# measured, the job's compile, wait and measure seconds, and the regret of
# its winner against the exhaustive winner of the same shape
# (EXH_JOBS/ieee_fp32_MxNxK.json, bench/prior_data.sh's jobs/ from a separate
# database), both raced in one process as bench/regret.sh races them
# (sbs_probe --race, PLACEMENTS=4 placements of 100-2000 pairs). Ends with
#   SUMMARY fresh_install first_shape_s=<s> median_tune_s=<s> max_tune_s=<s> max_regret=<x> shapes=<n> [gpu=<GPU>]
#
# Usage: [BUNDLE=.bundle] [PRIOR=FILE] [GPU_TAG=TAG] EXH_JOBS=DIR bench/fresh_install.sh OUTDIR [SHAPES]
set -u
out=$1 shapes=${2:-.bundle/shapes.txt}
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p "$out" && rm -rf .freshdb && mkdir .freshdb
log=$out/fresh_install.log
source "$(dirname "$0")/common.sh"  # since, field

start=$(date +%s.%N)
tuned --gpu 0 --db .freshdb/gpu0.db ${PRIOR:+--prior-file "$PRIOR"} > "$out/tuned.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 300); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.1; done
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# daemon serving $(since "$start") s after its start; prior ${PRIOR:-shipped}"
} >> "$log"
tunectl prior >> "$log" 2>&1
mapfile -t order < <(grep -v '^#' "$shapes" | grep -v '^ *$' | python3 -c "
import random, sys
lines = [l.strip() for l in sys.stdin]
random.Random(int(sys.argv[1])).shuffle(lines)
print('\n'.join(lines))" "${ORDER_SEED:-38}")
printf "%-18s %8s %8s %9s %7s %9s %9s  %s\n" shape tune_s configs compile_s wait_s measure_s regret winner >> "$log"
for dims in "${order[@]}"; do
  name=${dims// /x}
  s=$(date +%s.%N)
  id=$(tunectl sweep $dims --json < /dev/null | field id)
  tunectl watch "$id" > /dev/null 2>&1 < /dev/null
  t=$(since "$s")
  tunectl job "$id" --json > "$out/job_$name.json" < /dev/null
  mine=$(field best.config.name < "$out/job_$name.json")
  # a job (best.config) or, from a sweep's --wait --json, the served kernel (measurement.config)
  exh=$(field best.config.name < "$EXH_JOBS/ieee_fp32_$name.json")
  [[ $exh != 0 ]] || exh=$(field measurement.config.name < "$EXH_JOBS/ieee_fp32_$name.json")
  regret=nan
  if [[ $mine == "$exh" ]]; then
    regret=0
  elif [[ $mine != 0 && $exh != 0 ]]; then
    # ~300 ms of the kernel per placement, 100-2000 pairs: a 15 us kernel's
    # placements spread +-4% over 100 pairs.
    pairs=$(python3 -c "import sys; print(max(100, min(2000, int(300 / max(float(sys.argv[1]), 1e-3)))))" \
      "$(field best.median_ms < "$out/job_$name.json")")
    sbs_probe --shape $dims --race --config "$mine" --config "$exh" --pairs "$pairs" \
      --placements "${PLACEMENTS:-4}" > "$out/race_$name.txt" 2>&1 < /dev/null
    r=$(awk -v n="$exh" '$1 == "PLACEMENTS" && $2 == n {print $4}' "$out/race_$name.txt")
    regret=$(python3 -c "import sys; print(round(1 / float(sys.argv[1]) - 1, 4) if sys.argv[1] else 'nan')" "${r:-}")
  fi
  python3 - "$out/job_$name.json" "$name" "$t" "$regret" "$exh" >> "$log" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("%-18s %8s %8d %9.1f %7.1f %9.1f %9s  %s (exhaustive: %s)" % (
    sys.argv[2], sys.argv[3], j.get('done', 0) + j.get('failed', 0), j.get('compile_seconds', 0),
    j.get('wait_seconds', 0), j.get('measure_seconds', 0), sys.argv[4],
    j.get('best', {}).get('config', {}).get('name', '-'), sys.argv[5]))
PY
done
# gpu=h200 (or another kind) from the GPU's name, none on the H100 (the issue's line).
tag=${GPU_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200|a100|b200' | tr A-Z a-z)}
[[ $tag != h100 ]] || tag=
python3 - "$log" "$tag" >> "$log" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l[:1].isdigit() and len(l.split()) >= 8]
t = [float(r[1]) for r in rows]
regrets = [float(r[6]) for r in rows if r[6] != 'nan']
print("SUMMARY fresh_install first_shape_s=%.2f median_tune_s=%.2f max_tune_s=%.2f max_regret=%.4f shapes=%d%s"
      % (t[0], statistics.median(t), max(t), max(regrets) if regrets else float('nan'), len(rows),
         " gpu=" + sys.argv[2] if sys.argv[2] else ""))
PY
tail -1 "$log"
