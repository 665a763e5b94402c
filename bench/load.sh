#!/usr/bin/env bash
# The GetBest load suite: bench/loadtest against one daemon on this GPU,
# with a tuned SQLite database and then a PostgreSQL one holding the same
# kernel, over the Unix socket. For each backend: the basic view at 1 client
# (sync API: one blocking call after another, as a client program makes
# them) and, with loadtest's async API on $LOAD_THREADS threads (default 6),
# at 16 clients and at 64 over 64 connections (one each) and over 16 (four
# clients a connection, as threads of a client process share a channel);
# the full view (cubin included) at 64 over 16 connections; DescribeDevice
# (no store: the transport's floor) at 1 and 64. One client also runs with
# gRPC's retry filter off (variant=no_retries) and under the poll engine too
# (no_retries_poll), for the record, and on the async API polling without
# sleeping (variant=async_spin, as gRPC's latency benchmarks' clients poll):
# the SUMMARY's single_p50_ms is the plain client's, single_spin_p50_ms the
# polling one's. Ends with one line per backend and connection count:
#   SUMMARY load backend=B clients=64 connections=C p50_ms= p99_ms= qps= single_p50_ms=
#           single_spin_p50_ms= full_p50_ms= full_p99_ms= full_qps=
# The daemon runs without its compile-ahead, so that no compiler shares the
# cores with the look-ups (a daemon that has compiled its space ahead is in
# the same state).
# On the GPU machine (carried: .bundle with tuned, tuned-worker, tunectl and
# loadtest; .fleet/pg.tar.xz, as bench/fleet.sh):  bash bench/load.sh OUT
set -u
out=$1
root=$PWD
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.bundle/lib:/usr/local/cuda/lib64
export PATH=$root/.bundle/bin:$PATH
source "$root/bench/pg.sh"
seconds=${RUN_SECONDS:-6}
shape=(1024 1024 1024)
w=$(mktemp -d)
sock=unix:$w/s.sock
log() { echo "# $(date -u +%FT%TZ) $*"; }
{
  log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null); $(nproc) cores"
  log "command: bash bench/load.sh $out (RUN_SECONDS=$seconds)"
} | tee "$out/load.log"

start_daemon() {  # start_daemon DB NAME
  tuned --gpu 0 --no-compile-ahead --socket "$w/s.sock" --db "$1" > "$out/tuned_$2.log" 2>&1 &
  daemon=$!
  for _ in $(seq 300); do tunectl --server $sock device > /dev/null 2>&1 && return 0; sleep 0.1; done
  log "the daemon did not start"; cat "$out/tuned_$2.log"; exit 1
}

stop_daemon() { kill -TERM $daemon; wait $daemon; }

load() {  # load BACKEND: every run, appended to load.log as "backend=B <loadtest line>"
  local lt=(loadtest --server $sock --seconds $seconds --max-requests 100000000)
  local async=(--api async --threads "${LOAD_THREADS:-6}")
  {
    "${lt[@]}" --api sync --clients 1 "${shape[@]}"
    "${lt[@]}" --api sync --clients 1 --channel-arg grpc.enable_retries=0 "${shape[@]}" | sed 's/^/variant=no_retries /'
    GRPC_POLL_STRATEGY=poll "${lt[@]}" --api sync --clients 1 --channel-arg grpc.enable_retries=0 "${shape[@]}" |
      sed 's/^/variant=no_retries_poll /'
    "${lt[@]}" --api async --threads 1 --spin --clients 1 "${shape[@]}" | sed 's/^/variant=async_spin /'
    "${lt[@]}" "${async[@]}" --clients 16 "${shape[@]}"
    "${lt[@]}" "${async[@]}" --clients 64 "${shape[@]}"
    "${lt[@]}" "${async[@]}" --clients 64 --connections 16 "${shape[@]}"
    "${lt[@]}" "${async[@]}" --clients 64 --connections 16 --view full "${shape[@]}"
    "${lt[@]}" --api sync --clients 1 --method device 1 1 1
    "${lt[@]}" "${async[@]}" --clients 64 --connections 16 --method device 1 1 1
  } 2>&1 | sed "s/^/backend=$1 /" | tee -a "$out/load.log"
}

# SQLite: tune the shape (a short sweep), serve it, dump it for PostgreSQL.
start_daemon "$w/t.db" sqlite
tunectl --server $sock sweep "${shape[@]}" --budget 24 --wait > "$out/sweep.log" 2>&1 ||
  { log "sweep failed"; cat "$out/sweep.log"; exit 1; }
tunectl --server $sock best "${shape[@]}" | tee -a "$out/load.log"
load sqlite
tunectl --server $sock dump --out "$w/dump" > /dev/null
stop_daemon

pg_setup "$out/initdb.log" || exit 1
pgenv "$pgbin/createdb" -h "$pg/sock" -p 5432 -U postgres load || exit 1
start_daemon "$(pg_url load)" postgresql
tunectl --server $sock import "$w/dump" | tee -a "$out/load.log"
load postgresql
stop_daemon

# The SUMMARY lines, from the runs above.
for b in sqlite postgresql; do
  for conns in 64 16; do
    awk -v b=$b -v conns=$conns '
      function get(line, key,   m) { return match(line, " " key "=[^ ]*") ? substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2) : "" }
      $1 == "backend=" b && get($0, "method") == "best" {
        c = get($0, "clients"); v = get($0, "view")
        if (v == "basic" && c == 1 && $2 !~ /^variant=/) single = get($0, "p50_ms")
        if (v == "basic" && c == 1 && $2 == "variant=async_spin") spin = get($0, "p50_ms")
        if (v == "basic" && c == 64 && get($0, "connections") == conns) { p50 = get($0, "p50_ms"); p99 = get($0, "p99_ms"); qps = get($0, "qps") }
        if (v == "full" && c == 64) { fp50 = get($0, "p50_ms"); fp99 = get($0, "p99_ms"); fqps = get($0, "qps") }
      }
      END { printf "SUMMARY load backend=%s clients=64 connections=%s p50_ms=%s p99_ms=%s qps=%s single_p50_ms=%s single_spin_p50_ms=%s full_p50_ms=%s full_p99_ms=%s full_qps=%s\n", b, conns, p50, p99, qps, single, spin, fp50, fp99, fqps }
    ' "$out/load.log"
  done
done | tee -a "$out/load.log"
