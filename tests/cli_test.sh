#!/usr/bin/env bash
# End to end as a user types it, without a GPU: starts the real daemon in
# compile-only mode on a private socket and drives it with tunectl.
# Usage: cli_test.sh BIN_DIR
set -u
bin=$1
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir/run XDG_STATE_HOME=$dir/state
unset TUNED_SERVER
fails=0; passes=0
log() { echo "cli_test: $*"; }
check() {  # check NAME EXPECTED_EXIT PATTERN -- CMD...
  local name=$1 want=$2 pattern=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    log "FAIL $name: exit $rc (want $want), output:"; echo "$out" | head -20
    fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}

"$bin/tuned" --gpu 0 --compile-only > "$dir/tuned.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [[ -S $dir/run/tuned/gpu0.sock ]] && break; sleep 0.1; done
[[ -S $dir/run/tuned/gpu0.sock ]] || { log "daemon did not start"; cat "$dir/tuned.log"; exit 1; }

T=$bin/tunectl
check device 0 'compile-only' -- "$T" device
check device-json 0 '"cc_major": 9' -- "$T" device --json
check zero-dim 1 'M must be at least 1' -- "$T" sweep 0 64 64
check negative-dim 1 'K must be at least 1' -- "$T" sweep 64 64 -5
check wrong-rank 1 'takes 3 dimensions' -- "$T" sweep 64 64
check overflow 1 '' -- "$T" sweep 64 64 99999999999999999999999
check unknown-family 1 "unknown family 'conv'" -- "$T" sweep --family conv 64 64
check untuned-best 1 'no tuned kernel' -- "$T" best 1024 1024 1024
check unknown-job 1 'not found' -- "$T" job 4242
check unknown-cancel 1 'not found' -- "$T" cancel 4242
check queue 0 'job 1 queued: transpose f32 96x40' -- "$T" sweep --family transpose 96 40
check wait 0 'state +done' -- "$T" sweep --family transpose 33 17 --wait
check job 0 'configs +[0-9]+: [0-9]+ done, 0 failed, 0 left' -- "$T" job 2
check jobs 0 '^2 +transpose f32 33x17 +done' -- "$T" jobs
check jobs-json 0 '"state": "JOB_DONE"' -- "$T" jobs --json
check results 0 'transpose_.* +compiled' -- "$T" results --family transpose 33 17 --top 3
check dump-empty 0 '^0 tuned kernels dumped' -- "$T" dump --out "$dir/dump"
check import-missing 1 'no kernel.json' -- "$T" import "$dir/dump"
check wrong-server 1 'cannot reach tuned' -- "$T" --server unix:$dir/nope.sock jobs
kill -0 $pid 2>/dev/null || { log "FAIL: daemon died"; fails=$((fails + 1)); }
kill -TERM $pid; wait $pid; rc=$?
[[ $rc -eq 0 ]] || { log "FAIL: daemon exit $rc after SIGTERM"; fails=$((fails + 1)); }
log "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
