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
check health 0 '^SERVING$' -- "$T" health
check jobs-client 0 '^2 +transpose f32 33x17 +done .* local$' -- "$T" jobs
kill -0 $pid 2>/dev/null || { log "FAIL: daemon died"; fails=$((fails + 1)); }
kill -TERM $pid; wait $pid; rc=$?
[[ $rc -eq 0 ]] || { log "FAIL: daemon exit $rc after SIGTERM"; fails=$((fails + 1)); }

# Logs: one JSON object per line, with ts, level, proc and msg (daemon and worker).
check json-logs 0 '^ok [1-9][0-9]* lines$' -- python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert set(e) == {"ts", "level", "proc", "pid", "msg"}, e
    assert e["proc"] in ("tuned", "worker") and e["ts"].endswith("Z"), e
    n += 1
print("ok", n, "lines")' "$dir/tuned.log"

# Remote: TLS + token, as the README's operator section sets it up.
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=tuned-ca -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
  -extfile server.ext -out server.pem 2>/dev/null
token=$(openssl rand -hex 24)
echo "ci:$token" > tokens
echo "$token" > ci.token
cd - >/dev/null
"$bin/tuned" --gpu 1 --compile-only --listen 127.0.0.1:0 --tls-cert "$dir/server.pem" \
  --tls-key "$dir/server.key" --token-file "$dir/tokens" > "$dir/tls.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'listening tcp' "$dir/tls.log" && break; sleep 0.1; done
port=$(grep -o 'listening tcp 127.0.0.1:[0-9]*' "$dir/tls.log" | cut -d: -f2)
[[ -n $port ]] || { log "TLS daemon did not start"; cat "$dir/tls.log"; exit 1; }
R=(--server "localhost:$port" --tls-ca "$dir/ca.pem")
check tls-no-token 1 'needs a token' -- "$T" "${R[@]}" sweep --family transpose 64 64
check tls-wrong-token 1 'invalid token' -- env TUNED_TOKEN=0123456789abcdef0123 "$T" "${R[@]}" jobs
check tls-env-token 0 'job 1 queued' -- env TUNED_TOKEN="$token" "$T" "${R[@]}" sweep --family transpose 64 64
check tls-token-file 0 '^1 +transpose f32 64x64 .* ci$' -- "$T" "${R[@]}" --token-file "$dir/ci.token" jobs
check tls-env-all 0 'compile-only' -- env TUNED_SERVER="localhost:$port" TUNED_TLS_CA="$dir/ca.pem" \
  TUNED_TOKEN_FILE="$dir/ci.token" "$T" device
check tls-unknown-ca 1 'cannot reach tuned' -- "$T" --server "localhost:$port" --token "$token" jobs
check tls-health 0 '^SERVING$' -- "$T" "${R[@]}" health
check listen-needs-tls 2 'pass --tls-cert FILE --tls-key FILE --token-file FILE' -- \
  "$bin/tuned" --gpu 2 --compile-only --listen 127.0.0.1:0
kill -TERM $pid; wait $pid; rc=$?
[[ $rc -eq 0 ]] || { log "FAIL: TLS daemon exit $rc after SIGTERM"; fails=$((fails + 1)); }
log "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
