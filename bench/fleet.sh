#!/usr/bin/env bash
# The fleet suite (issue 16): the SGEMM suite tuned by one daemon, then by one
# daemon per GPU, each run from a fresh PostgreSQL database that starts with
# the same warm compile cache (the static space compiled ahead by a
# compile-only daemon; refinement neighbours are compiled as they come, in
# both runs alike). Every shape is submitted at once, as a user queuing a
# suite would; the wall time runs from the first submission to the last job's
# end. A run with KILL_AFTER kills (-9) the daemon of the last GPU that many
# seconds in, mid-suite, and the others finish its work.
#
# On the GPU machine (carried: .bundle with tuned, tuned-worker, tunectl;
# .fleet/pg.tar.xz, PostgreSQL's postgres, initdb, pg_ctl and createdb
# unpacked from Debian's packages in their own layout (.pgroot/usr/...) with
# their libraries in .pgroot/lib; .fleet/shapes.txt, the suite):
#   bench/fleet.sh setup OUT                       server + the warm cache (database "cache")
#   bench/fleet.sh start OUT                       the server again (a later call: processes
#                                                  end with each call, /var/tmp stays)
#   bench/fleet.sh run OUT NAME GPUS [KILL_AFTER]  one run: database NAME from "cache"
#   bench/fleet.sh summary OUT ONE TWO [KILLED]    the SUMMARY line of two runs
# Locally (no GPU) FLEET_FLAGS=--compile-only checks the script itself
# (FLEET_WARM_FLAGS: the warming daemon's, such as --worker build/tests/fake_worker).
#
# Recorded workloads instead of shapes: WORKLOAD=FILE (set for setup, run and
# summary_workload) submits `tunectl workload sweep FILE` from one client and
# warms the cache with the same command on the compile-only daemon.
#   bench/fleet.sh record OUT                      OUT/workload.json: bench/models.py --record-only
#                                                  (MODELS, default gpt2,encoder; decode and
#                                                  prefill; ieee_fp32, tf32, bf16), merged
#   bench/fleet.sh run OUT NAME GPUS [KILL_AFTER]  also PG_RESTART_AFTER=S: a crash restart of
#                                                  the server S seconds in; ends by collecting
#                                                  each job's pick (OUT/run_NAME.json)
#   bench/fleet.sh summary_workload OUT GPUS ONE FLEET [FAULTED...]
#                                                  SUMMARY fleet_workload (bench/fleet_workload.py)
set -u
cmd=$1 out=$2
shift 2
root=$PWD
export LD_LIBRARY_PATH=$root/.bundle/lib:/usr/local/cuda/lib64
export PATH=$root/.bundle/bin:$PATH
shapes=${SHAPES:-$root/.fleet/shapes.txt}  # ../shared/bench/shapes.txt, carried
flags=${FLEET_FLAGS:-}
family=${FAMILY:-sgemm}  # FAMILY=transpose SHAPES=... WARM="1024 1024": a quick local check
workload=${WORKLOAD:-}
source "$root/bench/pg.sh"
log() { echo "# $(date -u +%FT%TZ) $*"; }
# The Python package, for recording and collecting (outside the work tree, beside the
# server), with $PYTHON (python3: the one with torch, for recording).
site=$pg-site py=${PYTHON:-python3}
pysite() {
  [[ -f $site/tuned/__init__.py ]] || "$py" -m pip install -q --no-index --no-build-isolation --no-deps \
    --target "$site" "$root/client/python" > /dev/null || return 1
}
# A workload's queue is one client's: the quota of jobs per client is lifted.
[[ -n $workload ]] && flags="$flags --max-jobs-per-client 100000"

case $cmd in
record)
  mkdir -p "$out/workloads"
  pysite || exit 1
  PYTHONPATH=$site "$py" bench/models.py --record-only --models "${MODELS:-gpt2,encoder}" \
    --cases decode,prefill --modes ieee_fp32,tf32,bf16 --out "$out/workloads" || exit 1
  PYTHONPATH=$site "$py" bench/fleet_workload.py merge "$out/workload.json" "$out"/workloads/*.workload.json
  ;;
setup)
  mkdir -p "$out"
  pg_setup "$out/initdb.log" || exit 1
  pgenv "$pgbin/createdb" -h "$pg/sock" -p 5432 -U postgres cache || exit 1
  # The warm cache: a compile-only daemon compiles the static space once.
  export XDG_RUNTIME_DIR=$(mktemp -d)
  log "warming the compile cache" | tee "$out/warm.log"
  tuned --compile-only --gpu 9 --db "$(pg_url cache)" ${workload:+--max-jobs-per-client 100000} ${FLEET_WARM_FLAGS:-} \
    >> "$out/warm_daemon.log" 2>&1 &
  d=$!
  for _ in $(seq 100); do tunectl --gpu 9 device > /dev/null 2>&1 && break; sleep 0.2; done
  start=$(date +%s)
  if [[ -n $workload ]]; then
    tunectl --gpu 9 workload sweep "$workload" --wait >> "$out/warm.log" 2>&1
  else
    tunectl --gpu 9 sweep --family $family ${WARM:-1024 1024 1024} --wait > /dev/null 2>> "$out/warm.log"
    tunectl --gpu 9 job 1 >> "$out/warm.log"
  fi
  log "warm cache in $(( $(date +%s) - start )) s" | tee -a "$out/warm.log"
  kill -TERM $d; wait $d
  ;;
start)
  pg_start || exit 1
  ;;
run)
  # RUN_LIMIT=S: after S seconds the run pauses (SIGTERM: the daemons hand
  # their claims back) and the same command in a later call resumes it; the
  # wall time is the sum of the parts (a device call lasts 10 minutes at most).
  name=$1 gpus=$2 kill_after=${3:-0} limit=${RUN_LIMIT:-100000} restart_after=${PG_RESTART_AFTER:-0}
  state=$pg/run_$name
  export XDG_RUNTIME_DIR=$(mktemp -d)
  rlog=$out/fleet_$name.log
  {
    log "$(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | tr '\n' ';')"
    log "command: RUN_LIMIT=$limit PG_RESTART_AFTER=$restart_after WORKLOAD=$workload bench/fleet.sh run $out $name $gpus $kill_after  (shapes: $shapes, flags: $flags)"
  } > "$rlog"
  if pgenv "$pgbin/createdb" -h "$pg/sock" -p 5432 -U postgres -T cache "$name"; then
    echo 0 > "$state.wall"; echo 0 > "$state.twice"; : > "$state.ids"
  else
    log "database $name exists: resuming after $(cat "$state.wall") s, $(wc -w < "$state.ids") jobs" >> "$rlog"
  fi
  pids=()
  for ((g = 0; g < gpus; g++)); do
    tuned --gpu $g --db "$(pg_url "$name")" --metrics-listen 127.0.0.1:$((9400 + g)) $flags \
      > "$out/tuned_${name}_gpu$g.log" 2>&1 &
    pids+=($!)
  done
  for ((g = 0; g < gpus; g++)); do
    for _ in $(seq 150); do tunectl --gpu $g device > /dev/null 2>&1 && break; sleep 0.2; done
  done
  tunectl --gpu 0 daemons >> "$rlog"
  # Scrape each daemon's counters every 2 s (a killed one keeps its last).
  (while true; do
     for ((g = 0; g < gpus; g++)); do
       python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$((9400 + g))/metrics', timeout=2).read().decode())" \
         > "$out/.metrics_${name}_$g.new" 2>/dev/null &&
         [[ -s $out/.metrics_${name}_$g.new ]] && mv "$out/.metrics_${name}_$g.new" "$out/metrics_${name}_gpu$g.txt"
     done
     sleep 2
   done) &
  scraper=$!
  start=$(date +%s.%N)
  ids=($(cat "$state.ids"))
  if [[ ${#ids[@]} -eq 0 && -n $workload ]]; then
    tunectl --gpu 0 workload sweep "$workload" --json > "$out/queued_$name.json" 2>> "$rlog"
    ids=($(python3 -c 'import json,sys; print(" ".join(str(j["job"]) for j in json.load(open(sys.argv[1]))))' \
           "$out/queued_$name.json"))
    echo "${ids[*]}" > "$state.ids"
    log "submitted the workload $workload: ${#ids[@]} jobs: ${ids[*]}" >> "$rlog"
  elif [[ ${#ids[@]} -eq 0 ]]; then
    while read -r m n k; do
      [[ -z ${m:-} || $m == \#* ]] && continue
      ids+=($(tunectl --gpu 0 sweep --family $family $m $n $k --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'))
    done < "$shapes"
    echo "${ids[*]}" > "$state.ids"
    log "submitted ${#ids[@]} jobs: ${ids[*]}" >> "$rlog"
  fi
  killed=0 restarted=0
  while true; do
    left=0
    for id in "${ids[@]}"; do
      st=$(tunectl --gpu 0 job $id --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state",""))')
      [[ $st == JOB_DONE || $st == JOB_FAILED || $st == JOB_CANCELLED ]] || left=$((left + 1))
    done
    [[ $left -eq 0 ]] && break
    now=$(date +%s.%N)
    if python3 -c "import sys; sys.exit(0 if $now - $start > $limit else 1)"; then
      sleep 2.5; kill $scraper 2>/dev/null
      python3 - "$state" "$now - $start" "$out" "$name" <<'PY'
import glob, re, sys
st = sys.argv[1]
wall = float(open(st + ".wall").read()) + eval(sys.argv[2])
twice = int(open(st + ".twice").read())
for f in glob.glob(f"{sys.argv[3]}/metrics_{sys.argv[4]}_gpu*.txt"):
    m = re.search(r"^tuned_measured_twice_total (\S+)", open(f).read(), re.M)
    twice += int(float(m.group(1))) if m else 0
open(st + ".wall", "w").write(f"{wall:.1f}")
open(st + ".twice", "w").write(str(twice))
PY
      log "paused after RUN_LIMIT $limit s ($(cat "$state.wall") s in all), $left jobs left: run again to resume" >> "$rlog"
      for p in "${pids[@]}"; do kill -TERM $p 2>/dev/null; done
      wait "${pids[@]}" 2>/dev/null
      cat "$rlog"
      exit 3
    fi
    if [[ $restart_after != 0 && $restarted == 0 ]] && python3 -c "import sys; sys.exit(0 if $now - $start > $restart_after else 1)"; then
      as_pg env LD_LIBRARY_PATH=$pg/.pgroot/lib "$pgbin/pg_ctl" -D "$pg/data" -m immediate -w stop >> "$rlog" 2>&1
      sleep 2
      pg_start >> "$rlog" 2>&1
      restarted=1
      log "crash restart (pg_ctl -m immediate) of the PostgreSQL server at $(python3 -c "print(round($now - $start, 1))") s, $left jobs left" >> "$rlog"
    fi
    if [[ $kill_after != 0 && $killed == 0 ]] && python3 -c "import sys; sys.exit(0 if $now - $start > $kill_after else 1)"; then
      kill -9 ${pids[$((gpus - 1))]}
      killed=1
      log "kill -9 of the daemon of GPU $((gpus - 1)) at $(python3 -c "print(round($now - $start, 1))") s, $left jobs left" >> "$rlog"
    fi
    sleep 1
  done
  wall=$(python3 -c "print(round($(date +%s.%N) - $start + $(cat "$state.wall"), 1))")
  sleep 2.5  # a last scrape
  kill $scraper 2>/dev/null
  log "wall $wall s for ${#ids[@]} jobs" >> "$rlog"
  tunectl --gpu 0 jobs --limit 1000 >> "$rlog"
  tunectl --gpu 0 jobs --limit 1000 --json > "$out/jobs_$name.json"
  for id in "${ids[@]}"; do tunectl --gpu 0 job $id >> "$rlog"; done
  # Every winner is a verified, timed kernel.
  [[ -n $workload ]] || while read -r m n k; do
    [[ -z ${m:-} || $m == \#* ]] && continue
    tunectl --gpu 0 best --family $family $m $n $k --json > "$out/.best.json" 2>> "$rlog"
    python3 - "$out/.best.json" "$m $n $k" >> "$rlog" <<'PY'
import json, sys
try:
    b = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(print(f"winner {sys.argv[2]}: none verified=NO"))
m = b["measurement"]
ok = m.get("status") == "MEASUREMENT_OK" and m.get("median_ms", 0) > 0 and m.get("error", 1) < 1e-4
print(f"winner {sys.argv[2]}: {m['config']['name']} {m.get('median_ms', 0):.4f} ms error {m.get('error', 0):.2e} "
      f"on {m.get('host', '?')} gpu {m.get('gpu', 0)} verified={'yes' if ok else 'NO'}")
PY
  done < "$shapes"
  python3 - "$out/jobs_$name.json" "$out" "$name" "$gpus" "${ids[*]}" "$(cat "$state.twice")" >> "$rlog" <<'PY'
import json, re, sys, glob
jobs = {int(j["id"]): j for j in json.load(open(sys.argv[1])).get("jobs", [])}
ids = [int(i) for i in sys.argv[5].split()]
lost = 0
for i in ids:
    j = jobs[i]
    left = j.get("total", 0) - j.get("done", 0) - j.get("failed", 0)
    lost += left if j.get("state") == "JOB_DONE" else max(left, 1)
twice = int(sys.argv[6])  # of the earlier parts of a resumed run
for f in glob.glob(f"{sys.argv[2]}/metrics_{sys.argv[3]}_gpu*.txt"):
    m = re.search(r"^tuned_measured_twice_total (\S+)", open(f).read(), re.M)
    twice += int(float(m.group(1))) if m else 0
print(f"RESULT lost={lost} duplicates={twice} done={sum(1 for i in ids if jobs[i].get('state') == 'JOB_DONE')}/{len(ids)}")
PY
  if [[ -n $workload ]]; then
    pysite && PYTHONPATH=$site "$py" bench/fleet_workload.py collect "unix:$XDG_RUNTIME_DIR/tuned/gpu0.sock" \
      "$out/run_$name.json" "$wall" "$(grep -oP 'RESULT lost=[0-9]+ duplicates=\K[0-9]+' "$rlog")" "${ids[@]}" >> "$rlog" 2>&1
  fi
  for p in "${pids[@]}"; do kill -TERM $p 2>/dev/null; done
  wait "${pids[@]}" 2>/dev/null
  cat "$rlog"
  ;;
summary)
  one=$1 two=$2 killed=${3:-}
  w1=$(grep -oP '(?<=# ).*wall \K[0-9.]+' "$out/fleet_$one.log")
  w2=$(grep -oP '(?<=# ).*wall \K[0-9.]+' "$out/fleet_$two.log")
  lost=0 dup=0
  for r in $one $two $killed; do
    l=$(grep -oP 'RESULT lost=\K[0-9]+' "$out/fleet_$r.log"); d=$(grep -oP 'RESULT lost=[0-9]+ duplicates=\K[0-9]+' "$out/fleet_$r.log")
    lost=$((lost + l)) dup=$((dup + d))
  done
  n=$(grep -cv '^#' "$shapes")
  python3 -c "s=$w1/$w2; print(f'# one GPU {$w1:.1f} s, two GPUs {$w2:.1f} s (lost and duplicates over runs: $one $two $killed)'); print(f'SUMMARY fleet gpus=2 speedup={s:.3f} efficiency={s/2:.3f} lost=$lost duplicates=$dup shapes=$n')"
  ;;
summary_workload)
  gpus=$1 one=$2 fleet=$3; shift 3
  faulted=(); for r in "$@"; do faulted+=("$out/run_$r.json"); done
  PYTHONPATH=$site "$py" bench/fleet_workload.py summary "$gpus" "$out/run_$one.json" "$out/run_$fleet.json" \
    "${faulted[@]}"
  ;;
esac
