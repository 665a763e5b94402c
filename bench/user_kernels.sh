#!/usr/bin/env bash
# On the GPU machine: the five kernel specs of examples/kernels/ (matmul,
# reduction, stencil, softmax, histogram) registered with `tunectl family
# add`, each tuned at three problems (the first from Python, the others with
# tunectl), and each served kernel checked and timed as a client runs it, side
# by side with the default config (bench/spec_bench.cc; the histogram's counts
# reset before every timed run, as its spec says); each spec's seconds in the log.
# Ends with
#   SUMMARY user_kernels specs=<n> tuned=<n> wrong_served=<n> geomean_vs_default=<x> problems=<n> seconds=<s>
# Usage: [BUNDLE=.bundle] [PYSITE=dir] bench/user_kernels.sh OUTDIR
set -u
out=$1
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p "$out"
log=$out/user_kernels.log
start=$SECONDS
sock=$XDG_RUNTIME_DIR/tuned/gpu0.sock
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader)"
  echo "# command: bench/user_kernels.sh (tuned --gpu 0 --allow-user-kernels; tunectl family add, sweep; spec_bench)"
} > "$log"
tuned --gpu 0 --allow-user-kernels --db "$out/user_kernels.db" > "$out/tuned_user_kernels.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.2; done
# spec folder, family name, then problems (dims comma-separated).
specs=(
  "matmul matmul_tiled 1024,1024,1024 2048,512,1024 512,4096,256"
  "reduction reduce_sum 16777216 1000003 262144"
  "stencil stencil5 4096,4096 8192,1024 1000,3001"
  "softmax softmax_rows 4096,1024 65536,100 1024,4096"
  "histogram histogram256 16777216 1000003 67108864"
)
n_specs=0 n_tuned=0
for line in "${specs[@]}"; do
  read -r dir name first rest <<< "$line"
  n_specs=$((n_specs + 1))
  spec_start=$SECONDS
  tunectl family add "examples/kernels/$dir/spec.toml" >> "$log" 2>&1
  # The first problem from Python, as a user of the Python package tunes it.
  PYTHONPATH=${PYSITE:-} python3 - "$name" "${first//,/ }" >> "$log" 2>&1 <<'PY'
import sys, tuned
name, dims = sys.argv[1], [int(d) for d in sys.argv[2].split()]
with tuned.Client() as c:
    job = c.sweep(*dims, family=name)
    best = c.best(*dims, family=name, basic=True)
    print(f"python: {name} {dims}: job {job.id} {tuned.v1.tuner_pb2.JobState.Name(job.state)}, "
          f"best {best.measurement.config.name} {best.measurement.median_ms:.4f} ms ({best.serving_reason})")
PY
  if [[ $? -ne 0 ]]; then  # no Python client there (PYSITE): tuned with tunectl instead, and said so
    echo "# python: the sweep of $name ${first//,/x} failed; tuned with tunectl" | tee -a "$log"
    tunectl sweep --family "$name" ${first//,/ } --wait >> "$log" 2>&1
  fi
  for p in $rest; do
    tunectl sweep --family "$name" ${p//,/ } --wait >> "$log" 2>&1
  done
  problems=()
  for p in $first $rest; do problems+=(--problem "$p"); done
  spec_bench --spec "examples/kernels/$dir/spec.toml" "${problems[@]}" | tee -a "$log" > "$out/spec_bench_$dir.txt" 2>&1
  grep -q "^SUMMARY user_kernels specs=1 tuned=1 " "$out/spec_bench_$dir.txt" && n_tuned=$((n_tuned + 1))
  echo "# $name: $((SECONDS - spec_start)) s" >> "$log"
done
# Every problem's line: "..., speedup <x>x, error <e> (right|WRONG)".
cat "$out"/spec_bench_*.txt | awk -v specs="$n_specs" -v tuned="$n_tuned" -v seconds=$((SECONDS - start)) '
  / speedup / { for (i = 1; i <= NF; ++i) if ($i == "speedup") { x = $(i + 1); sub(/x,$/, "", x); s += log(x); ++n } }
  /\(WRONG\)|no best|timing:/ { ++wrong }
  END { printf "SUMMARY user_kernels specs=%d tuned=%d wrong_served=%d geomean_vs_default=%.3f problems=%d seconds=%d\n",
               specs, tuned, wrong + 0, n ? exp(s / n) : 0, n, seconds }' | tee -a "$log"
tunectl families >> "$log" 2>&1
kill -TERM $daemon; wait $daemon
