#!/usr/bin/env bash
# On the GPU machine: the README's example sweep report. Tunes SGEMM 1024^3
# through the daemon, then writes its picture with `tunectl report`:
# OUTDIR/sgemm_1024_report.svg (committed as docs/sweep_report_h100_1024.svg)
# and the sweep's log, OUTDIR/report_example.log.
# Usage (device): bench/report_example.sh [OUTDIR]   (default $OUT)
# Needs the bundle (.bundle/bin, .bundle/lib) made by ../shared/device/bundle.sh.
set -u
out=${1:-$OUT}
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/.bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d) XDG_STATE_HOME=$(mktemp -d)
log=$out/report_example.log
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# command: bench/report_example.sh $out"
} > "$log"
tuned --gpu 0 > "$out/tuned_report.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
run() { echo "\$ $*" >> "$log"; "$@" >> "$log" 2>&1; echo "(exit $?)" >> "$log"; }
run tunectl sweep 1024 1024 1024 --wait
run tunectl best 1024 1024 1024
run tunectl report 1024 1024 1024 --out "$out/sgemm_1024_report.svg"
kill -TERM $daemon; wait $daemon; echo "daemon exit $?" >> "$log"
