#!/usr/bin/env bash
# The cost of a call on the GPU machine: bench/python_call.py (Kernel.sgemm,
# tuned.matmul, torch.matmul from Python) and bench/call_bench.cc
# (TunedKernel::Sgemm against a bare cudaLaunchKernel), on a daemon of its
# own with a fresh SQLite database that tunes the three shapes first.
#
# Here, first: the binaries bundled as docs/development.md says, call_bench
# among them, and the Python stubs (bench/python_gpu.sh prepare):
#   TUNED_BUILD_BENCH=ON bash scripts/build.sh   # or: cmake --build build --target call_bench ...
#   ../shared/device/bundle.sh .bundle build/bin/tuned build/bin/tuned-worker build/bin/tunectl \
#     build/bin/call_bench && strip .bundle/bin/*
#   bash bench/python_gpu.sh prepare
# There (device tool, carry [".bundle"]):
#   bash bench/python_call.sh [OUTDIR]        # default $OUT
# `tuned` is imported from $PYTHONPATH if it is there, else pip-installed
# offline into a temporary folder (as bench/python_gpu.sh does). Each
# `tunectl sweep M N K --wait` (ieee_fp32, the daemon's default strategy and
# budget; BUDGET=... passes --budget) is cut at SWEEP_TIMEOUT seconds (240);
# SEED_DB=file.db.xz starts the database from a compile cache (the seed
# docs/development.md makes) instead of empty. SHAPES overrides the shapes
# ("64,64,64 4096,1,4096 3000,2000,1500"); CALLS, BATCH, STREAM the counts.
# Logs in OUTDIR: python_call.log (everything, ending with the SUMMARY
# python_call line), tuned.log (the daemon), sweeps.log. About 3 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:?usage: bench/python_call.sh [OUTDIR]}}
py=${PYTHON:-python3}
mkdir -p "$out"
exec > >(tee "$out/python_call.log") 2>&1
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
run() { echo "\$ $*"; local t=$SECONDS; "$@"; local rc=$?; echo "(exit $rc, $((SECONDS - t)) s)"; return $rc; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); command: bench/python_call.sh $out"

if ! "$py" -c "import tuned.ops" 2>/dev/null; then
  site=$(mktemp -d)/site
  stubs=$PWD/.bundle/python/stubs
  [[ -f $stubs/tuned/v1/tuner_pb2.py ]] || { echo "no stubs in $stubs (bash bench/python_gpu.sh prepare, here)"; exit 1; }
  TUNED_PYTHON_STUBS=$stubs run "$py" -m pip install -q --no-index --no-build-isolation --no-deps \
    --root-user-action=ignore --target "$site" ./client/python || { echo "pip install failed"; exit 1; }
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
  if ! "$py" -c "import google.protobuf" 2>/dev/null && [[ -d .bundle/python/protobuf ]]; then
    export PYTHONPATH=$PYTHONPATH:$PWD/.bundle/python/protobuf/usr/lib/python3/dist-packages
    export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
  fi
fi
run "$py" -c "import tuned, torch; print('tuned from', tuned.__file__, '| torch', torch.__version__)" ||
  { echo "tuned does not import"; exit 1; }

work=$(mktemp -d)
export XDG_RUNTIME_DIR=$work/run XDG_STATE_HOME=$work/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
unset TUNED_SERVER
if [[ -n ${SEED_DB:-} ]]; then
  xz -dc "$SEED_DB" > "$work/tuned.db" || { echo "cannot unpack $SEED_DB"; exit 1; }
fi
.bundle/bin/tuned --gpu 0 --db "$work/tuned.db" > "$out/tuned.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 150); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
[[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] || { echo "tuned did not start"; tail -20 "$out/tuned.log"; exit 1; }

read -r -a shapes <<< "${SHAPES:-64,64,64 4096,1,4096 3000,2000,1500}"
for shape in "${shapes[@]}"; do
  IFS=, read -r m n k <<< "$shape"
  run timeout "${SWEEP_TIMEOUT:-240}" .bundle/bin/tunectl sweep "$m" "$n" "$k" --wait \
    ${BUDGET:+--budget "$BUDGET"} < /dev/null >> "$out/sweeps.log" 2>&1 ||
    echo "sweep $m $n $k: not finished (see sweeps.log); the nearest tuned shape serves it"
  tail -1 "$out/sweeps.log"
done

cpp=()
[[ -x .bundle/bin/call_bench ]] && cpp=(--cpp .bundle/bin/call_bench) || echo "no .bundle/bin/call_bench: Python only"
run "$py" bench/python_call.py --shapes "${shapes[@]}" --calls "${CALLS:-2000}" --batch "${BATCH:-100}" \
  --stream "${STREAM:-200}" "${cpp[@]}"
