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
log=compare_tuned.log seconds=${RUN_SECONDS:-5}
source "$(dirname "$0")/common.sh"
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader); $(nproc) cores" | tee "$out/compare.txt"
tune
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
