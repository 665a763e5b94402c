#!/usr/bin/env bash
# GetBest while the daemon works: bench/loadtest at 64 clients (async API,
# $LOAD_THREADS threads, default 6, one connection each) for $RUN_SECONDS
# (default 6) against a daemon that compiles ahead while three sweeps run
# (3000x2000x1500, 777x4096x333, bf16 4096^3 nt), on SQLite and then on
# PostgreSQL (bench/pg.sh).
# SQLite: a daemon without its compile-ahead tunes 1024^3 (a 24-config
# sweep) and is measured quiet (for the record, the same machine's floor);
# then a fresh daemon on the same database, compiling ahead, gets the three
# sweeps and is measured busy. PostgreSQL: a fresh database, the 1024^3
# kernel imported (the SQLite run's dump), a fresh daemon compiling ahead,
# the same three sweeps. Each backend ends with
#   SUMMARY load_busy backend=B clients=64 p99_ms= qps= p50_ms= max_ms= jobs_running= compiled_ahead=
#     cpu_busy_pct= steal_pct=
# (cpu_busy_pct, steal_pct: the machine's CPU time over the load that was
# busy, and that a virtual machine's hypervisor stole, in % of all CPUs' time)
# and, where the daemon pins its look-up threads (--serving-cpus), what ran
# on their CPUs over the load:
#   serving_cpus= serving_busy_pct= serving_other_pct=
# (in % of those CPUs' time: busy, and busy with anything but the look-up
# threads: the clients, the database server, the kernel's interrupts, ...).
# (jobs_running: sweeps running or queued after the load; compiled_ahead:
# `tunectl device`'s count), and SQLite's quiet run with
#   SUMMARY load_quiet backend=sqlite clients=64 p99_ms= qps= p50_ms= max_ms=
# Nothing but the daemon's look-up threads runs on their CPUs (its
# --serving-cpus auto: the last 4 of a host of 8 CPUs or more): loadtest and
# the PostgreSQL server run on the others (CLIENT_CPUS overrides the list;
# CLIENT_CPUS=none pins nothing), as clients and a database on other hosts
# would take none of them. The daemon's other work shares those CPUs with
# them.
# TUNED_ARGS adds flags to every daemon (e.g. --compile-only to try the
# script without a GPU, where no best is served and loadtest counts errors);
# BUDGET is the 1024^3 sweep's (default 24 configs).
# On the GPU machine (carried: .fleet holding pg.tar.xz and bundle.tar.xz
# with tuned, tuned-worker, tunectl and loadtest, as bench/load.sh; about
# 3 minutes):  tar xJf .fleet/bundle.tar.xz && bash bench/load_busy.sh OUT
set -u
out=$1
root=$PWD
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.bundle/lib:/usr/local/cuda/lib64
export PATH=$root/.bundle/bin:$PATH
source "$root/bench/pg.sh"
seconds=${RUN_SECONDS:-6}
threads=${LOAD_THREADS:-6}
ncpu=$(nproc)
client_cpus=${CLIENT_CPUS:-}
if [[ -z $client_cpus ]]; then
  if ((ncpu >= 8)); then client_cpus=0-$((ncpu - 5)); else client_cpus=none; fi
fi
[[ $client_cpus == none ]] || export PG_CPUS=$client_cpus
pinned() { if [[ $1 == none ]]; then "${@:2}"; else taskset -c "$1" "${@:2}"; fi; }
shape=(1024 1024 1024)
w=$(mktemp -d)
sock=unix:$w/s.sock
ctl() { tunectl --server $sock "$@"; }
log() { echo "# $(date -u +%FT%TZ) $*"; }
{
  log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null); $(nproc) cores"
  # The topology the guest sees: where it shows one thread per core, the
  # look-up threads' cores may still share a host core with a compiler's.
  log "lscpu: $(lscpu 2> /dev/null | awk -F: '/^(Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|Hypervisor vendor)/ { gsub(/  +/, " "); printf "%s:%s; ", $1, $2 }')"
  log "command: bash bench/load_busy.sh $out (RUN_SECONDS=$seconds LOAD_THREADS=$threads BUDGET=${BUDGET:-24} TUNED_ARGS=${TUNED_ARGS:-} CLIENT_CPUS=$client_cpus)"
  log "loadtest and PostgreSQL on CPUs $client_cpus"
} | tee "$out/load_busy.log"

start_daemon() {  # start_daemon DB NAME FLAG...
  local db=$1 name=$2
  shift 2
  # shellcheck disable=SC2086  # TUNED_ARGS: flags, split on purpose
  tuned --gpu 0 --socket "$w/s.sock" --db "$db" "$@" ${TUNED_ARGS:-} > "$out/tuned_$name.log" 2>&1 &
  daemon=$!
  daemon_log=$out/tuned_$name.log
  for _ in $(seq 300); do ctl device > /dev/null 2>&1 && return 0; sleep 0.1; done
  log "the daemon did not start"; cat "$out/tuned_$name.log"; exit 1
}

stop_daemon() { kill -TERM $daemon; wait $daemon; }

busy() {  # busy: the three sweeps queued, one running before the load starts
  ctl sweep 3000 2000 1500 > /dev/null &&
    ctl sweep 777 4096 333 > /dev/null &&
    ctl sweep 4096 4096 4096 --dtype bf16 --layout nt > /dev/null || { log "a sweep was refused"; exit 1; }
  for _ in $(seq 300); do ctl jobs | grep -q " running " && return 0; sleep 0.1; done
  log "no sweep started within 30 s"
}

cpu_times() { head -1 /proc/stat; }  # "cpu user nice system idle iowait irq softirq steal ..."

# The look-up threads' CPUs, as the daemon logs them; empty where it pins nothing.
serving_cpus() { grep -o 'GetBest threads on CPUs [0-9,-]*[0-9]' "$daemon_log" | head -1 | awk '{print $5}'; }

# "BUSY TOTAL LOOKUP": the busy and all ticks of the CPUs of the list $1,
# and the CPU ticks of the daemon's threads bound to exactly those CPUs.
serving_ticks() {
  local cpus lookup=0 t
  cpus=$(tr ',' '\n' <<< "$1" | awk -F- '{ for (i = $1; i <= (NF == 2 ? $2 : $1); i++) printf " %d", i }')
  for t in /proc/$daemon/task/*; do
    if grep -q "^Cpus_allowed_list:[[:space:]]*$1\$" "$t/status" 2> /dev/null; then
      lookup=$((lookup + $(awk '{print $14 + $15}' "$t/stat")))
    fi
  done
  awk -v cpus="$cpus " -v lookup=$lookup '
    $1 ~ /^cpu[0-9]+$/ && index(cpus, " " substr($1, 4) " ") {
      for (i = 2; i <= 9 && i <= NF; i++) total += $i
      idle += $5 + $6
    }
    END { print total - idle, total, lookup }' /proc/stat
}

load() {  # load KIND BACKEND: one loadtest run, "KIND backend=B <loadtest line>" in the log
  ctl best "${shape[@]}" > /dev/null || log "no best of ${shape[*]}"
  local before serving serving_before
  before=$(cpu_times)
  serving=$(serving_cpus)
  [ -n "$serving" ] && serving_before=$(serving_ticks "$serving")
  pinned "$client_cpus" loadtest --server $sock --seconds "$seconds" --max-requests 100000000 --api async \
    --threads "$threads" --clients 64 "${shape[@]}" 2>&1 |
    sed "s/^/$1 backend=$2 /" | tee -a "$out/load_busy.log"
  # The machine's CPU time over the load: busy (not idle) and stolen by the
  # hypervisor (a virtual machine's vCPUs waiting for a host core), in % of
  # all CPUs' time.
  printf '%s\n%s\n' "$before" "$(cpu_times)" | awk -v kind=$1 -v b=$2 '
    { for (i = 2; i <= NF; i++) v[NR, i] = $i; n = NF }
    END {
      total = 0; for (i = 2; i <= 9 && i <= n; i++) total += v[2, i] - v[1, i]  # guest time is in user
      idle = v[2, 5] - v[1, 5] + v[2, 6] - v[1, 6]; steal = v[2, 9] - v[1, 9]
      printf "%s backend=%s cpu busy_pct=%.1f steal_pct=%.2f\n", kind, b, 100 * (total - idle) / total, 100 * steal / total
    }' | tee -a "$out/load_busy.log"
  if [ -n "$serving" ]; then
    printf '%s %s\n' "$serving_before" "$(serving_ticks "$serving")" | awk -v kind=$1 -v b=$2 -v cpus=$serving '
      { busy = $4 - $1; total = $5 - $2; lookup = $6 - $3 }
      END {
        if (total <= 0) total = 1
        printf "%s backend=%s serving cpus=%s busy_pct=%.1f other_pct=%.1f\n", kind, b, cpus, 100 * busy / total, 100 * (busy - lookup) / total
      }' | tee -a "$out/load_busy.log"
  fi
  {
    ctl jobs
    ctl device | grep -i "compiled ahead"
  } 2>&1 | tee "$out/jobs_$1_$2.txt" | tee -a "$out/load_busy.log"
}

# SQLite: tune 1024^3 quietly and measure the floor; dump it for PostgreSQL.
start_daemon "$w/t.db" sqlite_quiet --no-compile-ahead
ctl sweep "${shape[@]}" --budget "${BUDGET:-24}" --wait > "$out/sweep.log" 2>&1 ||
  { log "sweep failed"; cat "$out/sweep.log"; exit 1; }
load quiet sqlite
ctl dump --out "$w/dump" > /dev/null
stop_daemon
# A fresh daemon on the same database: compiling ahead from its start.
start_daemon "$w/t.db" sqlite --compile-ahead
busy
load busy sqlite
stop_daemon

pg_setup "$out/initdb.log" || exit 1
pgenv "$pgbin/createdb" -h "$pg/sock" -p 5432 -U postgres load_busy || exit 1
start_daemon "$(pg_url load_busy)" postgresql --compile-ahead
ctl import "$w/dump" > /dev/null || log "import failed"
busy
load busy postgresql
stop_daemon
as_pg env LD_LIBRARY_PATH=$pg/.pgroot/lib "$pgbin/pg_ctl" -D "$pg/data" -m fast stop > /dev/null

# The SUMMARY lines, from the runs above.
for run in "quiet sqlite" "busy sqlite" "busy postgresql"; do
  read -r kind b <<< "$run"
  awk -v kind=$kind -v b=$b -v jobs="$out/jobs_${kind}_$b.txt" -v client_cpus="$client_cpus" '
    function get(line, key,   m) { return match(line, " " key "=[^ ]*") ? substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2) : "" }
    $1 == kind && $2 == "backend=" b && get($0, "method") == "best" {
      p50 = get($0, "p50_ms"); p99 = get($0, "p99_ms"); qps = get($0, "qps"); max = get($0, "max_ms")
    }
    $1 == kind && $2 == "backend=" b && $3 == "cpu" { busy = get($0, "busy_pct"); steal = get($0, "steal_pct") }
    $1 == kind && $2 == "backend=" b && $3 == "serving" {
      serving = sprintf(" serving_cpus=%s serving_busy_pct=%s serving_other_pct=%s", get($0, "cpus"), get($0, "busy_pct"), get($0, "other_pct"))
    }
    END {
      running = 0; ahead = ""
      while ((getline line < jobs) > 0) {
        if (line ~ / (running|queued) /) running++
        if (line ~ /compiled ahead/) { sub(/.*compiled ahead[ :]*/, "", line); gsub(/ /, "_", line); ahead = line }
      }
      if (kind == "quiet") printf "SUMMARY load_quiet backend=%s clients=64 p99_ms=%s qps=%s p50_ms=%s max_ms=%s cpu_busy_pct=%s steal_pct=%s%s client_cpus=%s\n", b, p99, qps, p50, max, busy, steal, serving, client_cpus
      else printf "SUMMARY load_busy backend=%s clients=64 p99_ms=%s qps=%s p50_ms=%s max_ms=%s jobs_running=%d compiled_ahead=%s cpu_busy_pct=%s steal_pct=%s%s client_cpus=%s\n", b, p99, qps, p50, max, running, ahead, busy, steal, serving, client_cpus
    }
  ' "$out/load_busy.log"
done | tee -a "$out/load_busy.log"
rm -rf "$w"
