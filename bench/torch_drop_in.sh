#!/usr/bin/env bash
# The drop-in suite on the GPU machine: bench/torch_drop_in.py (tuned.matmul,
# tuned.linear for "nt", against torch.matmul over the public shapes x 4
# layouts x 3 math modes), with the package installed as a user installs it
# and a daemon of its own.
#
# Here first: the binaries bundled as docs/development.md says (tuned,
# tuned-worker, tunectl in .bundle/bin, .bundle/lib), then
#   bash bench/torch_drop_in.sh prepare
# which writes the gRPC stubs into .bundle/python (bench/python_gpu.sh
# prepare, where they are missing: the GPU machine has no protoc) and copies
# ../shared/bench/shapes.txt (which does not travel) to .bundle/shapes.txt.
# There (device tool, carry [".bundle"]):
#   bash bench/torch_drop_in.sh [OUTDIR] [torch_drop_in.py options]   # OUTDIR default $OUT
# e.g. `bash bench/torch_drop_in.sh $OUT --modes tf32 --layouts nn,nt`.
# It pip-installs ./client/python into python3's environment (the one
# holding torch; a --target folder where that is not writable), checks in a
# separate process, from another folder, that `import tuned` is the
# installed package, starts .bundle/bin/tuned --gpu 0 on the database
# $DB (default .drop_in/tuned.db: an ignored folder that stays between calls
# on one warm machine, so that a suite split over several calls tunes each
# problem once; SEED_DB=file.db.xz starts it from a copy), and runs
#   torch_drop_in.py --shapes .bundle/shapes.txt [options]
# which sweeps the problems the database lacks, then times them. The whole
# suite (144 problems) takes longer than one call: split it by --modes or
# --layouts (over calls, or over GPUs side by side: SITE below), or pass
# --no-tune once everything is tuned. Logs in OUTDIR:
# torch_drop_in.log (everything, ending with the SUMMARY torch_drop_in
# line), tuned.log (the daemon); with KEEP_DB=1, drop_in_db.xz, the
# database after the run (for SEED_DB on a fresh machine).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}

if [[ ${1:-} == prepare ]]; then
  set -e
  [[ -f .bundle/python/stubs/tuned/v1/tuner_pb2.py ]] || bash bench/python_gpu.sh prepare
  # The stubs must be of this checkout's proto (Problem.layout).
  grep -q "LAYOUT_NT" .bundle/python/stubs/tuned/v1/tuner_pb2.py || bash bench/python_gpu.sh prepare
  cp ../shared/bench/shapes.txt .bundle/shapes.txt
  echo "prepared: .bundle/python/stubs, .bundle/shapes.txt ($(grep -cv '^#' .bundle/shapes.txt) shapes)"
  exit 0
fi

if [[ $# -gt 0 && $1 != -* ]]; then
  out=$1
  shift
else
  out=${OUT:?usage: bench/torch_drop_in.sh [OUTDIR] [options] (or prepare)}
fi
mkdir -p "$out"
exec > >(tee "$out/torch_drop_in.log") 2>&1
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
run() { echo "\$ $*"; local t=$SECONDS; "$@"; local rc=$?; echo "(exit $rc, $((SECONDS - t)) s)"; return $rc; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); command: bench/torch_drop_in.sh $out $*"
[[ -x .bundle/bin/tuned ]] || { echo "no .bundle/bin/tuned (bundle the binaries here, carry .bundle)"; exit 1; }
shapes=.bundle/shapes.txt
[[ -f $shapes ]] || { echo "no $shapes (bash bench/torch_drop_in.sh prepare, here)"; exit 1; }
stubs=$PWD/.bundle/python/stubs
[[ -f $stubs/tuned/v1/tuner_pb2.py ]] || { echo "no stubs in $stubs (bash bench/torch_drop_in.sh prepare, here)"; exit 1; }

# Install as a user would: pip into the environment holding torch. SITE=DIR:
# a folder that `pip install --target DIR ./client/python` filled already
# (for runs side by side on several GPUs, CUDA_VISIBLE_DEVICES one each, that
# must not reinstall the package under each other).
pip_flags=(-q --no-index --no-build-isolation --no-deps --root-user-action=ignore)
if [[ -n ${SITE:-} ]]; then
  [[ -d $SITE/tuned ]] || { echo "SITE=$SITE holds no tuned package"; exit 1; }
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
elif ! TUNED_PYTHON_STUBS=$stubs run "$py" -m pip install "${pip_flags[@]}" --force-reinstall ./client/python; then
  site=$(mktemp -d)/site
  TUNED_PYTHON_STUBS=$stubs run "$py" -m pip install "${pip_flags[@]}" --target "$site" ./client/python ||
    { echo "pip install failed"; exit 1; }
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$py" -c "import google.protobuf" 2>/dev/null && [[ -d .bundle/python/protobuf ]]; then
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/.bundle/python/protobuf/usr/lib/python3/dist-packages
  export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
fi
src=$PWD
(cd / && run "$py" -c "
import sys, tuned, torch
assert not tuned.__file__.startswith('$src/client'), tuned.__file__
assert tuned.pb.LAYOUT_NT == 1 and tuned.problem(2, 3, 4, layout='nt').layout == tuned.pb.LAYOUT_NT
print('tuned', tuned.__file__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())
") || { echo "the installed package does not import (or lacks layouts)"; exit 1; }

work=$(mktemp -d)
export XDG_RUNTIME_DIR=$work/run XDG_STATE_HOME=$work/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
unset TUNED_SERVER
db=${DB:-.drop_in/tuned.db}
mkdir -p "$(dirname "$db")"
if [[ -n ${SEED_DB:-} ]]; then
  xz -dc "$SEED_DB" > "$db" || { echo "cannot unpack $SEED_DB"; exit 1; }
fi
echo "# database $db ($(du -h "$db" 2>/dev/null | cut -f1 || echo new))"
.bundle/bin/tuned --gpu 0 --db "$db" > "$out/tuned.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 150); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
[[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] || { echo "tuned did not start"; tail -20 "$out/tuned.log"; exit 1; }

# From another folder, so that the installed package is the one imported.
(cd "$work" && run "$py" "$src/bench/torch_drop_in.py" --shapes "$src/$shapes" "$@")
rc=$?
kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null
trap - EXIT
# KEEP_DB=1: a copy of the database in $out (xz -9 of a whole suite's
# database takes minutes; -1 seconds).
if [[ -n ${KEEP_DB:-} ]]; then
  xz -1 -T0 -c "$db" > "$out/drop_in_db.xz" && echo "# database saved: $out/drop_in_db.xz ($(du -h "$out/drop_in_db.xz" | cut -f1))"
fi
exit $rc
