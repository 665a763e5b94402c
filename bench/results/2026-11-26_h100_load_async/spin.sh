#!/usr/bin/env bash
# Four GetBest poller threads that poll on without sleeping for
# --lookup-spin-us after each call (0, 100, 1000 µs) under gRPC's poll
# engine, and 100 µs under epoll1, each against loadtest at 1 client (sync
# and async API; the client under either engine) and at 64 (async API, 4-8
# threads, over 16, 32 or 64 connections), on one SQLite database
# tuned as bench/load.sh does (sgemm 1024^3, basic view). Each line adds the
# daemon's CPU µs and context switches per call (all its threads, /proc);
# loadtest prints its own CPU per call. On the GPU machine, from the
# repository root with the bundle (.bundle: tuned, tuned-worker, tunectl,
# loadtest):  bash bench/results/2026-11-26_h100_load_async/spin.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
seconds=${RUN_SECONDS:-4}
start() {  # start [ARGS...]: the daemon, with ARGS
  tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db "$@" >> "$out/spin_tuned.log" 2>&1 &
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
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/spin.txt"
start
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
kill -TERM $d; wait $d
for daemon in "poll 0" "poll 100" "poll 1000" "epoll1 100"; do
  read -r engine spin <<< "$daemon"
  GRPC_POLL_STRATEGY=$engine start --lookup-threads 4 --lookup-spin-us $spin
  {
    run --api sync --clients 1
    GRPC_POLL_STRATEGY=poll run --api sync --clients 1 | sed 's/^/client_engine=poll /'
    GRPC_POLL_STRATEGY=poll run --api async --threads 1 --clients 1 | sed 's/^/client_engine=poll /'
    run --api async --threads 6 --clients 64 --connections 16
    GRPC_POLL_STRATEGY=poll run --api async --threads 6 --clients 64 --connections 16 | sed 's/^/client_engine=poll /'
    run --api async --threads 4 --clients 64 --connections 32
    run --api async --threads 6 --clients 64
    run --api async --threads 8 --clients 64
  } | sed "s/^/engine=$engine spin_us=$spin /"
  kill -TERM $d; wait $d
done | tee -a "$out/spin.txt"
