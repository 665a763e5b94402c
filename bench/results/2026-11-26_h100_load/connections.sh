#!/usr/bin/env bash
# 64 clients over fewer connections (loadtest --connections: clients share
# them round robin, as the threads of one client program share its
# channel), each client API, basic view, SQLite. GPU machine:
#   bash bench/results/2026-11-26_h100_load/connections.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db > "$out/tuned.log" 2>&1 &
d=$!
for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && break; sleep 0.1; done
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
for api in callback sync; do
  for n in 64 16 8 4 2 1; do
    loadtest --server $sock --api $api --clients 64 --connections $n --seconds 4 --max-requests 100000000 1024 1024 1024
  done
done | tee "$out/connections.txt"
loadtest --server $sock --api sync --clients 1 --seconds 4 --max-requests 100000000 1024 1024 1024 | tee -a "$out/connections.txt"
kill -TERM $d; wait $d
