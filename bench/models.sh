#!/usr/bin/env bash
# On the GPU machine: whole models through tuned (bench/models.py) as a
# client runs them: a fresh daemon of this bundle on GPU 0 with an empty
# database of its own (TUNED_FLAGS: more of its flags, e.g. "--budget 4s" for
# shorter sweeps), the Python package pip-installed into a folder of its
# own; with --tune each case is recorded (tuned.record), swept (`tunectl
# workload sweep --wait`), reported, then run through tuned.optimize and
# tuned.enable. Logs into OUTDIR; the last lines are the SUMMARY lines.
# Usage: [BUNDLE=.bundle] [TUNED_FLAGS=...] bench/models.sh OUTDIR [bench/models.py flags,
#   e.g. --tune --models encoder]
set -u
out=$1; shift
bundle=${BUNDLE:-.bundle}
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64
export PATH=$PWD/$bundle/bin:$PATH
export XDG_RUNTIME_DIR=$(mktemp -d)
mkdir -p "$out"
db=$(mktemp -d)
# shellcheck disable=SC2086 (TUNED_FLAGS: words)
tuned --gpu 0 --db "$db/gpu0.db" ${TUNED_FLAGS:-} >> "$out/tuned_models.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
site=$(mktemp -d)
# The gRPC stubs from .bundle/python/stubs where bench/python_gpu.sh prepare wrote them (the GPU
# machine has neither protoc nor grpcio-tools).
[[ -f $PWD/$bundle/python/stubs/tuned/v1/tuner_pb2.py ]] && export TUNED_PYTHON_STUBS=$PWD/$bundle/python/stubs
python3 -m pip install -q --no-index --no-build-isolation --no-deps --target "$site" ./client/python \
  >> "$out/models.log" 2>&1
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# command: python3 bench/models.py $* --out $out (daemon flags: ${TUNED_FLAGS:-none})"
} >> "$out/models.log"
PYTHONPATH=$site timeout "${SUITE_TIMEOUT:-1500}" python3 bench/models.py "$@" --out "$out" >> "$out/models.log" 2>&1
echo "# exit $?" >> "$out/models.log"
kill -TERM $daemon; wait $daemon
rm -rf "$db"
