#!/usr/bin/env bash
# On the GPU machine (issue 36): transpose as a kernel spec against the
# built-in transpose family it replaced. Two daemons tune the transpose
# suite, each with its own database: OLD_TUNED's with OLD_WORKER (a build
# from before transpose became a spec) and the bundle's; then spec_bench loads both
# served kernels in one client process and times them interleaved on the
# same buffers, L2 flushed. Ends with
#   SUMMARY transpose_as_spec vs_builtin=<geomean of spec GB/s / built-in GB/s> shapes=<n>
# Usage: [BUNDLE=.bundle] OLD_TUNED=path OLD_WORKER=path bench/transpose_as_spec.sh OUTDIR SHAPES_FILE
set -u
out=$1 shapes=$2
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
log=$out/transpose_as_spec.log
run=$(mktemp -d)
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader)"
  echo "# command: OLD_TUNED=$OLD_TUNED OLD_WORKER=$OLD_WORKER bench/transpose_as_spec.sh $out $shapes"
} > "$log"
for side in old new; do
  daemon=$PWD/$bundle/bin/tuned worker=$PWD/$bundle/bin/tuned-worker
  [[ $side == old ]] && daemon=$OLD_TUNED worker=$OLD_WORKER
  "$daemon" --gpu 0 --worker "$worker" --socket "$run/$side.sock" --db "$out/transpose_$side.db" \
    > "$out/tuned_transpose_$side.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ -S $run/$side.sock ]] && break; sleep 0.2; done
  grep -v '^#' "$shapes" | while read -r dims; do
    [[ -z $dims ]] && continue
    echo "# $side: tunectl sweep --family transpose $dims --wait" >> "$log"
    tunectl --server "unix:$run/$side.sock" sweep --family transpose $dims --wait >> "$log" 2>&1
  done
  kill -TERM $pid; wait $pid
done
# Both daemons serve again (their databases hold the tuned kernels), and one client times both.
"$OLD_TUNED" --gpu 0 --worker "$OLD_WORKER" --socket "$run/old.sock" --db "$out/transpose_old.db" \
  >> "$out/tuned_transpose_old.log" 2>&1 &
old=$!
tuned --gpu 0 --socket "$run/new.sock" --db "$out/transpose_new.db" >> "$out/tuned_transpose_new.log" 2>&1 &
new=$!
for _ in $(seq 100); do [[ -S $run/old.sock && -S $run/new.sock ]] && break; sleep 0.2; done
spec_bench --family transpose --problems "$shapes" --address "unix:$run/new.sock" \
  --against "unix:$run/old.sock" --summary transpose_as_spec | tee -a "$log"
kill -TERM $old $new; wait $old $new
