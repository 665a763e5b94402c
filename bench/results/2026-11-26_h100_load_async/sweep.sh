#!/usr/bin/env bash
# The daemon's GetBest poller threads (--lookup-threads 1, 2, 4, 8) under
# gRPC's two poll engines (GRPC_POLL_STRATEGY epoll1, the default, and
# poll), each against loadtest at 1 client (sync and async API) and at 64
# (async API, 2-6 threads, over 16 or 64 connections), on one SQLite database
# tuned as bench/load.sh does (sgemm 1024^3, basic view). Each line adds the
# daemon's CPU µs and context switches per call (all its threads, /proc);
# loadtest prints its own CPU per call. On the GPU machine, from the
# repository root with the bundle (.bundle: tuned, tuned-worker, tunectl,
# loadtest):  bash bench/results/2026-11-26_h100_load_async/sweep.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
seconds=${RUN_SECONDS:-4}
start() {  # start [ARGS...]: the daemon, with ARGS
  tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db "$@" >> "$out/sweep_tuned.log" 2>&1 &
  d=$!
  for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done
}
cpu() { awk '{print $14 + $15}' /proc/$d/stat; }
switches() { cat /proc/$d/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
run() {  # run LOADTEST_ARGS...: one loadtest line with the daemon's cost per call
  local c0 s0 line n
  c0=$(cpu); s0=$(switches)
  line=$(loadtest --server $sock --seconds $seconds --max-requests 100000000 "$@" 1024 1024 1024)
  n=$(echo "$line" | sed 's/.*requests=\([0-9]*\).*/\1/')
  echo "$line daemon_cpu_us=$(( ($(cpu) - c0) * 10000 * 1000 / (n > 0 ? n : 1) / 1000 )) daemon_switches=$(awk -v a=$(switches) -v b=$s0 -v n=$n 'BEGIN {printf "%.2f", (a - b) / (n > 0 ? n : 1)}')"
}
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/sweep.txt"
start
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for engine in epoll1 poll; do
  for lt in 1 2 4 8; do
    GRPC_POLL_STRATEGY=$engine start --lookup-threads $lt
    {
      run --api sync --clients 1
      run --api async --threads 1 --clients 1
      for t in 2 4 6; do run --api async --threads $t --clients 64 --connections 16; done
      run --api async --threads 4 --clients 64
    } | sed "s/^/engine=$engine lookup_threads=$lt /"
    kill -TERM $d; wait $d
  done
done | tee -a "$out/sweep.txt"
