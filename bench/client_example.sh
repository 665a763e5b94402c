#!/usr/bin/env bash
# On the GPU machine: the client library end to end. Tunes 1024^3, then the
# example (built against the installed package) gets and runs the kernel for
# 1024^3 and for the untuned 1100x1000x900, each checked against cuBLAS.
# Usage: bench/client_example.sh OUTDIR
set -u
out=$1
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/.bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d) XDG_STATE_HOME=$(mktemp -d)
log=$out/client_example.log
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$log"
echo "# command: bench/client_example.sh $out" >> "$log"
tuned --gpu 0 > "$out/tuned_client.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
run() { echo "\$ $*" >> "$log"; "$@" >> "$log" 2>&1; echo "(exit $?)" >> "$log"; }
run tunectl sweep 1024 1024 1024 --wait
run sgemm_example 1024 1024 1024
run sgemm_example 1100 1000 900
run tunectl best 1100 1000 900
run tunectl best 16 4096 4096
run tunectl export 1024 1024 1024 --out "$out/export"
run client_test
kill -TERM $daemon; wait $daemon
