#!/usr/bin/env bash
# One client's look-up against the transport's floor, on one machine start:
# bench/loadtest with one client (sync: a blocking call after another; and
# the async API polling without sleeping) against
#   - the daemon's GetBest for a tuned shape (SQLite; as bench/load.sh), and
#   - bench/grpc_floor's grpc.health.v1 Check: a server of nothing else, on
#     the same design as the daemon's GetBest pollers (4 threads, 100 µs of
#     polling on, the poll engine),
# each twice, interleaved, then 64 clients over 16 connections against both.
# Ends with
#   SUMMARY load_floor single_p50_ms= floor_p50_ms= single_spin_p50_ms= floor_spin_p50_ms=
# (the medians of the runs' p50s) and the loadtest lines above it in OUT/load_floor.log.
# On the GPU machine (carried: .bundle with tuned, tuned-worker, tunectl,
# loadtest and grpc_floor):  bash bench/load_floor.sh OUT
set -u
out=$1
root=$PWD
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.bundle/lib:/usr/local/cuda/lib64
export PATH=$root/.bundle/bin:$PATH
seconds=${RUN_SECONDS:-3}
shape=(1024 1024 1024)
w=$(mktemp -d)
log=$out/load_floor.log
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null); $(nproc) cores"
  echo "# command: bash bench/load_floor.sh $out (RUN_SECONDS=$seconds)"
} | tee "$log"

tuned --gpu 0 --no-compile-ahead --socket "$w/d.sock" --db "$w/t.db" > "$out/tuned.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do tunectl --server unix:$w/d.sock device > /dev/null 2>&1 && break; sleep 0.1; done
tunectl --server unix:$w/d.sock sweep "${shape[@]}" --budget 24 --wait > "$out/sweep.log" 2>&1 ||
  { echo "sweep failed"; cat "$out/sweep.log"; kill $daemon; exit 1; }
grpc_floor --socket "$w/f.sock" --seconds 600 > "$out/grpc_floor.log" 2>&1 &
floor=$!
for _ in $(seq 100); do [[ -S $w/f.sock ]] && break; sleep 0.1; done

lt() {  # lt TARGET loadtest-args...: one run, its line prefixed with the target
  local target=$1; shift
  local sock=$w/d.sock
  [[ $target == floor ]] && sock=$w/f.sock
  loadtest --server unix:$sock --seconds $seconds --max-requests 100000000 "$@" 2>&1 |
    sed "s/^/target=$target /" | tee -a "$log"
}
for rep in 1 2; do
  lt floor --method health --api sync --clients 1 1 1 1
  lt daemon --method best --api sync --clients 1 "${shape[@]}"
  lt floor --method health --api async --threads 1 --spin --clients 1 1 1 1
  lt daemon --method best --api async --threads 1 --spin --clients 1 "${shape[@]}"
  lt daemon --method health --api sync --clients 1 1 1 1
done
lt floor --method health --api async --threads 6 --clients 64 --connections 16 1 1 1
lt daemon --method best --api async --threads 6 --clients 64 --connections 16 "${shape[@]}"
kill -TERM $daemon $floor; wait $daemon $floor 2> /dev/null

awk '
  function get(line, key) { line = " " line; return match(line, " " key "=[^ ]*") ? substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2) : "" }
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  get($0, "clients") == 1 {
    k = get($0, "target") "_" get($0, "method") "_" ($0 ~ / spin / ? "spin" : "plain")
    v[k, ++n[k]] = get($0, "p50_ms") + 0
  }
  END {
    split("daemon_best_plain floor_health_plain daemon_best_spin floor_health_spin", keys, " ")
    for (i = 1; i <= 4; i++) { delete a; for (j = 1; j <= n[keys[i]]; j++) a[j] = v[keys[i], j]; m[i] = median(a, n[keys[i]]) }
    printf "SUMMARY load_floor single_p50_ms=%.3f floor_p50_ms=%.3f single_spin_p50_ms=%.3f floor_spin_p50_ms=%.3f\n", m[1], m[2], m[3], m[4]
  }' "$log" | tee -a "$log"
