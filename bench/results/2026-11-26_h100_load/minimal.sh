#!/usr/bin/env bash
# gRPC's minimal channel stack (grpc.minimal_stack: no deadline, census or
# compression filters) on the daemon (X_MIN in the experimental tuned_x)
# and/or the client (X_MIN in the experimental loadtest_x), crossed with
# the completion queue count, at 64 clients (callback API) and 1 (sync). GPU machine:
#   bash bench/results/2026-11-26_h100_load/minimal.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
up() { for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done; }
tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db > "$out/tuned.log" 2>&1 &
d=$!; up
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for server in "X_CQS=16" "X_CQS=16 X_MIN=1" "X_CQS=4 X_MIN=1"; do
  env $server tuned_x --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db >> "$out/tuned.log" 2>&1 &
  d=$!; up
  for client in "" "X_MIN=1"; do
    for run in "callback 64" "sync 1"; do
      set -- $run
      echo "server[$server] client[$client]: $(env $client loadtest_x --server $sock --api $1 --clients $2 --seconds 4 --max-requests 100000000 1024 1024 1024)"
    done
  done
  kill -TERM $d; wait $d
done | tee "$out/minimal.txt"
