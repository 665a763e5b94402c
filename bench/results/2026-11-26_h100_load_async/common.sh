# Sourced by compare.sh, sweep.sh and spin.sh: the bundle on the PATH, a
# scratch folder with the daemon's socket and SQLite database, and
#   start BINARY [ARGS...]  the daemon (tuned or tuned_old) on them, with ARGS,
#                           its log appended to $out/$log; waits for it to answer
#   tune                    a 24-config sweep of sgemm 1024^3, then stops the daemon
#   run LOADTEST_ARGS...    one loadtest line (1024^3, $seconds s) with the daemon's
#                           CPU µs and context switches per call appended
#                           (utime+stime in clock ticks, and ctxt_switches, of
#                           all its threads, from /proc)
# The caller sets out (a folder), log (a file name) and seconds.
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH
w=$(mktemp -d); sock=unix:$w/s.sock
start() {
  "$@" --gpu 0 --no-compile-ahead --socket $w/s.sock --db $w/t.db >> "$out/$log" 2>&1 &
  d=$!
  for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return; sleep 0.1; done
}
tune() {
  start tuned
  tunectl --server $sock sweep 1024 1024 1024 --budget 24 --wait > /dev/null 2>&1
  kill -TERM $d; wait $d
}
cpu() { awk '{print $14 + $15}' /proc/$d/stat; }
switches() { cat /proc/$d/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
run() {
  local c0 s0 line n
  c0=$(cpu); s0=$(switches)
  line=$(loadtest --server $sock --seconds $seconds --max-requests 100000000 "$@" 1024 1024 1024)
  n=$(echo "$line" | sed 's/.*requests=\([0-9]*\).*/\1/')
  echo "$line daemon_cpu_us=$(( ($(cpu) - c0) * 10000 * 1000 / (n > 0 ? n : 1) / 1000 )) daemon_switches=$(awk -v a=$(switches) -v b=$s0 -v n=$n 'BEGIN {printf "%.2f", (a - b) / (n > 0 ? n : 1)}')"
}
