#!/usr/bin/env bash
# On the GPU machine (from the bundle): the measurements a prior is built
# from (bench/prior_build.py). Every shape of each SHAPES file is swept
# exhaustively on one database (.priordb/, kept between the calls of one
# warm machine: a shape tuned already is skipped), then OUTDIR gets, per
# shape, its measurements (measurements/MATH_MxNxK.json.gz, `tunectl results
# --json --top 0`) and its job (jobs/MATH_MxNxK.json: the exhaustive
# winner, for the regret of bench/fresh_install.sh), and device.json.
#
# Usage: [BUNDLE=.bundle] [MATH=ieee_fp32] [DEADLINE=EPOCH_S] bench/prior_data.sh OUTDIR SHAPES...
# OUTDIR may outlive a call (its jobs/ say what is done). DEADLINE: start
# no shape after DEADLINE - 120 s (the rest waits for the
# next call, issued at once on the warm machine).
set -u
out=$1; shift
bundle=${BUNDLE:-.bundle} math=${MATH:-ieee_fp32}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p "$out/measurements" "$out/jobs" .priordb
log=$out/prior_data_$math.log
tuned --gpu 0 --db .priordb/gpu0.db >> "$out/tuned_$math.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 150); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
tunectl device --json > "$out/device.json"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) math $math" >> "$log"
for shapes in "$@"; do
  grep -v '^#' "$shapes" | grep -v '^ *$' | while read -r dims; do
    name=${math}_${dims// /x}
    [[ -f $out/jobs/$name.json ]] && continue
    if [[ -n ${DEADLINE:-} ]] && (( $(date +%s) + 120 > DEADLINE )); then
      echo "# $(date -u +%T) deadline: $name and the shapes after it left for the next call" >> "$log"
      break
    fi
    s=$(date +%s.%N)
    if tunectl best $dims --math "$math" > /dev/null 2>&1 < /dev/null; then  # tuned by an earlier call
      tunectl jobs --limit 1000 --json < /dev/null | python3 -c "
import json, sys
for j in json.load(sys.stdin).get('jobs', []):
    p = j['problem']
    if j.get('state') == 'JOB_DONE' and 'x'.join(map(str, p['shape'])) == sys.argv[1] and p.get('math', 'MATH_IEEE_FP32') == sys.argv[2]:
        print(json.dumps(j)); break" "${dims// /x}" "MATH_${math^^}" > "$out/jobs/$name.json"
    else
      tunectl sweep $dims --math "$math" --strategy exhaustive --json --wait > "$out/jobs/$name.json" 2> "$out/jobs/$name.err" < /dev/null
    fi
    tunectl results --math "$math" --top 0 --json $dims < /dev/null | gzip -9 > "$out/measurements/$name.json.gz"
    echo "$name $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$s") s" >> "$log"
  done
done
