#!/usr/bin/env bash
# Look-ups against a daemon with gRPC's own health check service (BEFORE, a
# build without server/health.h) and with server/health.h's (AFTER),
# alternated: the threads each daemon runs, then loadtest at 16 clients over
# 4 connections (async API, one thread) twice, one client polling without
# sleeping, one sync client. A compile-only daemon holding one imported
# sgemm 1024^3 kernel (DB, made with tunectl sweep + import on such a
# daemon); this 2-core machine runs the daemon and the client both.
# Usage: compare.sh BEFORE AFTER DB LOADTEST ROUNDS
set -u
before=$1 after=$2 db=$3 lt=$4 rounds=${5:-2}
w=$(mktemp -d)
for r in $(seq "$rounds"); do
  for which in before after; do
    bin=${!which}
    "$bin" --gpu 0 --compile-only --no-compile-ahead --socket "$w/s.sock" --db "$db" > "$w/d.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do [[ -S $w/s.sock ]] && break; sleep 0.1; done
    sleep 1
    echo "== round $r $which: threads $(for t in /proc/$pid/task/*; do cat "$t/comm"; done | sort | uniq -c | tr -s ' \n' ' ')"
    for _ in 1 2; do "$lt" --server "unix:$w/s.sock" --api async --threads 1 --clients 16 --connections 4 --seconds 4 1024 1024 1024; done
    "$lt" --server "unix:$w/s.sock" --api async --threads 1 --spin --clients 1 --seconds 2 1024 1024 1024
    "$lt" --server "unix:$w/s.sock" --api sync --clients 1 --seconds 2 1024 1024 1024
    kill -TERM $pid; wait $pid
  done
done
