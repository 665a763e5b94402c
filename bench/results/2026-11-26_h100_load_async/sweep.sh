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
log=sweep_tuned.log seconds=${RUN_SECONDS:-4}
source "$(dirname "$0")/common.sh"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/sweep.txt"
tune
for engine in epoll1 poll; do
  for lt in 1 2 4 8; do
    GRPC_POLL_STRATEGY=$engine start tuned --lookup-threads $lt
    {
      run --api sync --clients 1
      run --api async --threads 1 --clients 1
      for t in 2 4 6; do run --api async --threads $t --clients 64 --connections 16; done
      run --api async --threads 4 --clients 64
    } | sed "s/^/engine=$engine lookup_threads=$lt /"
    kill -TERM $d; wait $d
  done
done | tee -a "$out/sweep.txt"
