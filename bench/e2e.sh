#!/usr/bin/env bash
# On the GPU machine: the GPU tests, then the end-to-end path as a user types it.
# Usage: bench/e2e.sh OUTDIR [SHAPE ...]   (SHAPE as "M N K"; default 1024^3, 4096^3, 1000^3)
# Needs the bundle (.bundle/bin, .bundle/lib) made by ../shared/device/bundle.sh.
set -u
out=$1; shift
[[ $# -gt 0 ]] || set -- "1024 1024 1024" "4096 4096 4096" "1000 1000 1000"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/.bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d) XDG_STATE_HOME=$(mktemp -d)
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# command: bench/e2e.sh $out $*"
} > "$out/e2e.log"
if [[ ${SKIP_GPU_TESTS:-0} != 1 ]]; then
  gpu_tests > "$out/gpu_tests.log" 2>&1; echo "gpu_tests exit $?" >> "$out/e2e.log"
  tail -n 5 "$out/gpu_tests.log" >> "$out/e2e.log"
fi
tuned --gpu 0 > "$out/tuned.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
for shape in "$@"; do
  {
    echo; echo "\$ tunectl sweep $shape --wait"; start=$(date +%s)
    tunectl sweep $shape --wait; echo "(exit $?, $(( $(date +%s) - start )) s)"
    echo "\$ tunectl best $shape"; tunectl best $shape
    echo "\$ tunectl results $shape --top 5"; tunectl results $shape --top 5
  } >> "$out/e2e.log" 2>&1
done
{ echo; echo "\$ tunectl jobs"; tunectl jobs; } >> "$out/e2e.log" 2>&1
kill -TERM $daemon; wait $daemon; echo "daemon exit $?" >> "$out/e2e.log"
