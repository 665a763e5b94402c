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
log=spin_tuned.log seconds=${RUN_SECONDS:-4}
source "$(dirname "$0")/common.sh"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/spin.txt"
tune
for daemon in "poll 0" "poll 100" "poll 1000" "epoll1 100"; do
  read -r engine spin <<< "$daemon"
  GRPC_POLL_STRATEGY=$engine start tuned --lookup-threads 4 --lookup-spin-us $spin
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
