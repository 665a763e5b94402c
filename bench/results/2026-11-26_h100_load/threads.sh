#!/usr/bin/env bash
# The daemon's gRPC threading against the look-up rate: the sync server's
# completion queues (X_CQS) and pollers per queue (X_MINP, X_MAXP), read
# from the environment by an experimental build of the daemon (tuned_x),
# and gRPC's poll engine (GRPC_POLL_STRATEGY); each at 64 clients (callback
# API) and 1 client (sync API), basic view, SQLite. GPU machine:
#   bash bench/results/2026-11-26_h100_load/threads.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
up() { for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done; }
tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db > "$out/tuned.log" 2>&1 &
d=$!; up
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for setting in "X_CQS=16" "X_CQS=1" "X_CQS=2" "X_CQS=4" "X_CQS=8" "X_CQS=1 X_MINP=4 X_MAXP=16" \
               "X_CQS=4 X_MINP=2 X_MAXP=4" "X_CQS=16 GRPC_POLL_STRATEGY=poll"; do
  env $setting tuned_x --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db >> "$out/tuned.log" 2>&1 &
  d=$!; up
  for run in "callback 64" "sync 1"; do
    set -- $run
    echo "$setting: $(loadtest --server $sock --api $1 --clients $2 --seconds 4 --max-requests 100000000 1024 1024 1024)"
  done
  kill -TERM $d; wait $d
done | tee "$out/threads.txt"
