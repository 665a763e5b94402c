#!/usr/bin/env bash
# The job system on the GPU machine (issue 5), from a bundle (.bundle/bin):
#  1. the fault_test family: each failure class recorded, the worker restarted
#     each time, the right best (an ok config with WORK=1);
#  2. kill -9 of the daemon mid-sweep (sgemm 4096^3), restart: the job resumes,
#     every measurement stored before the kill is kept unchanged, none repeated;
#  3. 64-client GetBest load test (bench/loadtest.cc) alone and during a sweep.
# Usage (device): [PARTS="1 2 3"] bash bench/jobs_gpu.sh BUNDLE_DIR OUT_DIR
set -u
B=$1; OUT=$2
PARTS=${PARTS:-1 2 3}
part() { [[ " $PARTS " == *" $1 "* ]]; }
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
T=$B/bin/tunectl
W=/tmp/jobs_gpu; rm -rf $W; mkdir -p $W
start() {  # start NAME ARGS...: a daemon on $W/NAME.sock, $W/NAME.db
  local name=$1; shift
  setsid $B/bin/tuned --gpu 0 --socket $W/$name.sock --db $W/$name.db "$@" >> $OUT/tuned_$name.log 2>&1 &
  echo $! > $W/$name.pid
  for _ in $(seq 300); do $T --server unix:$W/$name.sock device >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "daemon $name did not start"; return 1
}

if part 1; then
echo "== 1. fault_test family (run timeout floor 3 s, compile timeout 10 s)"
start faults --enable-fault-test-family --run-timeout-floor 3 --compile-timeout 10
F="--server unix:$W/faults.sock"
time $T $F sweep --family fault_test 16777216 --wait
$T $F job 1
$T $F results --family fault_test 16777216 --top 0
grep -E "broke the GPU worker|restarting|compile batch|compiler:" $OUT/tuned_faults.log | sed 's/^/log: /'
kill -TERM $(cat $W/faults.pid); sleep 1
fi

K="--server unix:$W/kill.sock"
start kill
if part 2; then
echo "== 2. kill -9 mid-sweep (sgemm 4096^3) and restart"
$T $K sweep 4096 4096 4096
sleep 15
$T $K results 4096 4096 4096 --top 0 --json > $W/before.json
kill -9 $(cat $W/kill.pid); sleep 2
echo "killed with kill -9; worker processes left: $(pgrep -c tuned-worker || true)"
start kill
$T $K watch 1 > /dev/null
$T $K job 1
$T $K results 4096 4096 4096 --top 0 --json > $W/after.json
python3 - $W/before.json $W/after.json <<'PY'
import json, sys
def rows(p):
    d = json.load(open(p))
    ms = d.get("measurements", d) if isinstance(d, dict) else d
    return {m["config"]["name"]: (m["status"], m.get("median_ms", 0), m.get("created_unix")) for m in ms}
before, after = rows(sys.argv[1]), rows(sys.argv[2])
lost = [k for k in before if k not in after]
changed = [k for k in before if k in after and after[k] != before[k]]
print(f"before kill: {len(before)} stored; after resume: {len(after)} stored; "
      f"lost {len(lost)}, changed {len(changed)}")
PY
grep -E "interrupted|already measured|done:" $OUT/tuned_kill.log | sed 's/^/log: /'
else
  $T $K sweep 4096 4096 4096 --wait > /dev/null  # a tuned shape to look up
fi

if part 3; then
echo "== 3. load test: 64 clients, GetBest 4096^3"
$B/bin/loadtest --server unix:$W/kill.sock --clients 64 --seconds 8 --method device 4096 4096 4096 | sed 's/^/alone: /'
for v in basic full; do
  $B/bin/loadtest --server unix:$W/kill.sock --clients 64 --seconds 8 --view $v 4096 4096 4096 | sed 's/^/alone: /'
done
$T $K sweep 8192 8192 8192 > /dev/null
sleep 3
for v in basic full; do
  $B/bin/loadtest --server unix:$W/kill.sock --clients 64 --seconds 8 --view $v 4096 4096 4096 | sed 's/^/during sweep: /'
done
$T $K job 2 | grep -E "state|configs"
fi
kill -TERM $(cat $W/kill.pid)
