#!/usr/bin/env bash
# Where the look-ups were serialized: the daemon and loadtest before the
# fix (tuned_old, loadtest_old: the tree before it) and after, crossed, at
# 1 and 64 clients (sync API, basic view), on one SQLite database tuned as
# bench/load.sh does. Run on the GPU machine after bench/load.sh, from the
# repository root with the same bundle:  bash bench/results/2026-11-26_h100_load/compare.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
start() {
  $1 --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db > "$out/compare_$1.log" 2>&1 &
  d=$!
  for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done
}
start tuned
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for daemon in tuned_old tuned; do
  start $daemon
  for gen in loadtest_old loadtest; do
    for c in 1 64; do
      echo "daemon=$daemon generator=$gen $($gen --server $sock --clients $c --seconds 5 --max-requests 100000000 1024 1024 1024)"
    done
  done
  kill -TERM $d; wait $d
done | tee "$out/compare.txt"
