#!/usr/bin/env bash
# On the GPU machine, from a bundle in .bundle: the 64-client GetBest load test
# (bench/loadtest.cc) with the daemon and the clients pinned to separate cores
# (taskset), to see how much of the latency is the two competing for 16 cores.
# Usage (device): bash bench/loadtest_cpus.sh
B=$PWD/.bundle; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
W=/tmp/w; mkdir -p $W
run() { # run CPUS_DAEMON CPUS_CLIENT
  taskset -c $1 $B/bin/tuned --gpu 0 --socket $W/s.sock --db $W/t.db > $W/log 2>&1 &
  for _ in $(seq 300); do $B/bin/tunectl --server unix:$W/s.sock device >/dev/null 2>&1 && break; sleep 0.1; done
  $B/bin/tunectl --server unix:$W/s.sock sweep 1024 1024 1024 --wait > /dev/null
  for i in 1 2; do taskset -c $2 $B/bin/loadtest --server unix:$W/s.sock --clients 64 --seconds 6 1024 1024 1024 | sed "s/^/daemon $1 client $2: /"; done
  kill -TERM %1; wait
}
run 0-15 0-15
run 0-7 8-15
run 0-3 4-15
run 0-11 12-15
