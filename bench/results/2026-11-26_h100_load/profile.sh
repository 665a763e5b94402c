#!/usr/bin/env bash
# Where a look-up's CPU goes at 64 clients: the daemon's and loadtest's CPU
# seconds (utime + stime from /proc) and context switches per request for
# each client API, then a perf profile (cpu-clock, the VM has no hardware
# counters) of each process during a sync run. GPU machine, from the
# repository root with the bundle (perf included):
#   bash bench/results/2026-11-26_h100_load/profile.sh OUT
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
tuned --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db > "$out/tuned.log" 2>&1 &
d=$!
for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && break; sleep 0.1; done
tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
switches() { cat /proc/$1/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
for api in sync callback; do
  for c in 1 64; do
    t0=$(ticks $d); s0=$(switches $d)
    line=$( { /usr/bin/time -f "loadtest_cpu_s=%U+%S loadtest_switches=%w+%c" \
      loadtest --server $sock --api $api --clients $c --seconds 5 --max-requests 100000000 1024 1024 1024; } 2>&1 | tr '\n' ' ')
    echo "$line daemon_cpu_s=$(( $(ticks $d) - t0 ))e-2 daemon_switches=$(( $(switches $d) - s0 ))"
  done
done | tee "$out/cpu.txt"
loadtest --server $sock --clients 64 --seconds 8 --max-requests 100000000 1024 1024 1024 > "$out/perf_run.txt" &
l=$!
sleep 1
perf record -e cpu-clock -F 2000 -g -p $d -o $w/daemon.data -- sleep 4 > /dev/null 2>&1 &
perf record -e cpu-clock -F 2000 -g -p $l -o $w/loadtest.data -- sleep 4 > /dev/null 2>&1
wait $l
for p in daemon loadtest; do
  perf report -i $w/$p.data --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25 > "$out/perf_${p}_dso.txt"
  perf report -i $w/$p.data --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 | cut -c1-220 > "$out/perf_${p}_sym.txt"
done
kill -TERM $d; wait $d
