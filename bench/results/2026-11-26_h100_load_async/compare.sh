#!/usr/bin/env bash
# GetBest served by gRPC's callback API (tuned_old: the tree at 3bac48e) and
# by its asynchronous API on a poller thread per core (tuned: BestPollers; and
# on 8 and 4 of them, --lookup-threads),
# each under loadtest's client APIs, at 64 clients and at 1, on one SQLite
# database tuned as bench/load.sh does (sgemm 1024^3, basic view). Each line
# adds the daemon's CPU µs and context switches per call (all its threads,
# from /proc). On the GPU machine, from the repository root with the bundle
# (.bundle: tuned, tuned_old, tuned-worker, tunectl, loadtest):
#   bash bench/results/2026-11-26_h100_load_async/compare.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
seconds=${RUN_SECONDS:-5}
start() {  # start DAEMON [ARGS...]
  "$@" --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db >> "$out/compare_$1.log" 2>&1 &
  d=$!
  for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done
}
# utime+stime in clock ticks, and context switches, of every thread of $d
cpu() { awk '{print $14 + $15}' /proc/$d/stat; }
switches() { cat /proc/$d/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
run() {  # run LOADTEST_ARGS...: one loadtest line with the daemon's cost per call
  local c0 s0 line n
  c0=$(cpu); s0=$(switches)
  line=$(loadtest --server $sock --seconds $seconds --max-requests 100000000 "$@" 1024 1024 1024)
  n=$(echo "$line" | sed 's/.*requests=\([0-9]*\).*/\1/')
  echo "$line daemon_cpu_us=$(( ($(cpu) - c0) * 10000 * 1000 / (n > 0 ? n : 1) / 1000 )) daemon_switches=$(awk -v a=$(switches) -v b=$s0 -v n=$n 'BEGIN {printf "%.2f", (a - b) / (n > 0 ? n : 1)}')"
}
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/compare.txt"
start tuned
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for daemon in tuned_old tuned "tuned --lookup-threads 8" "tuned --lookup-threads 4"; do
  start $daemon
  {
    run --api sync --clients 1
    run --api async --threads 1 --clients 1
    run --api sync --clients 64
    run --api callback --clients 64
    for t in 2 4 8; do run --api async --threads $t --clients 64; done
    run --api async --threads 4 --clients 64 --connections 16
  } | sed "s/^/daemon=${daemon// /_} /"
  kill -TERM $d; wait $d
done | tee -a "$out/compare.txt"
