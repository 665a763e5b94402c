#!/usr/bin/env bash
# The Python client (client/python) on the GPU machine, end to end.
#
# Here first, after bundling the binaries as README "Running on the GPU
# machine" says (tuned, tuned-worker, tunectl in .bundle/bin):
#   bash bench/python_gpu.sh prepare
# writes into .bundle/python/: the gRPC stubs, generated here with protoc +
# grpc_python_plugin (the GPU machine has neither), and Debian's python3-tqdm
# and python3-protobuf unpacked, each used there only if its import fails.
#
# There (device tool, carry [".bundle"]):
#   bash bench/python_gpu.sh [OUTDIR]      # default $OUT
# reports the Python packages, pip-installs ./client/python offline
# (--no-build-isolation --no-deps, stubs from .bundle/python/stubs) into a
# temporary folder, starts .bundle/bin/tuned --gpu 0, sweeps sgemm 1024^3
# (and transpose 1024x768, and 2048^3 in math tf32), then runs README's Python example and the tests:
# test_gpu.py against that daemon (tuned.matmul and tuned.linear per math
# mode, under a CUDA graph capture, in a torch.compile'd model),
# test_gpu_serving.py (serving at torch's dispatcher: the operators' table,
# tuned.enable() on and off, capture, gradients, torch.compile),
# test_client.py, test_kernel.py, test_kernel_maps.py, test_kernel_spec.py, test_blas.py,
# test_ops.py, test_ops_16bit.py, test_serving.py and test_record.py (tuned.record's CUDA graph
# replay on the GPU; the others with the driver stood in for, CPU
# tensors; the torch operators in torch.compile; a compile-only daemon of
# their own). Logs: OUTDIR/python_gpu.log (everything,
# with the commands), OUTDIR/tuned.log (the daemon). Exit 0 if all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}

if [[ ${1:-} == prepare ]]; then
  set -e
  rm -rf .bundle/python && mkdir -p .bundle/python/stubs .bundle/python/deb
  protoc --proto_path=proto --python_out=.bundle/python/stubs --grpc_python_out=.bundle/python/stubs \
    --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" tuned/v1/tuner.proto
  (cd .bundle/python/deb && apt-get download -qq python3-tqdm python3-protobuf)
  for name in tqdm protobuf; do
    dpkg -x .bundle/python/deb/python3-${name}_*.deb .bundle/python/$name
  done
  rm -rf .bundle/python/deb
  find .bundle/python -name '*.so' -delete  # CPython 3.11 extensions: the pure-Python code is used there
  du -sh .bundle/python | awk '{print "python bundle:", $1}'
  exit 0
fi

out=${1:-${OUT:?usage: bench/python_gpu.sh [OUTDIR] (or prepare)}}
mkdir -p "$out"
log=$out/python_gpu.log
exec > >(tee "$log") 2>&1
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
run() { echo "\$ $*"; local t=$SECONDS; "$@"; local rc=$?; echo "(exit $rc, $((SECONDS - t)) s)"; return $rc; }
fails=0
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); command: bench/python_gpu.sh $out"

# What the machine's Python has; tqdm and protobuf from .bundle/python if missing.
version() { "$py" -c "import $1 as m; print(getattr(m, '__version__', '?'))" 2>/dev/null; }
echo "python: $("$py" --version 2>&1) at $(command -v "$py")"
for mod in torch grpc google.protobuf setuptools pip tqdm pytest; do
  echo "  $mod: $(version $mod || echo MISSING)"
done
extra=
if ! version tqdm > /dev/null && [[ -d .bundle/python/tqdm ]]; then
  extra=$PWD/.bundle/python/tqdm/usr/lib/python3/dist-packages
  echo "  tqdm: Debian's, from .bundle/python/tqdm: $(PYTHONPATH=$extra version tqdm)"
fi
if ! version google.protobuf > /dev/null && [[ -d .bundle/python/protobuf ]]; then
  extra=${extra:+$extra:}$PWD/.bundle/python/protobuf/usr/lib/python3/dist-packages
  export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
  echo "  google.protobuf: Debian's, pure Python, from .bundle/python/protobuf: $(PYTHONPATH=$extra version google.protobuf)"
fi

site=$(mktemp -d)/site
stubs=$PWD/.bundle/python/stubs
[[ -f $stubs/tuned/v1/tuner_pb2.py ]] || { echo "no stubs in $stubs (bash bench/python_gpu.sh prepare, here)"; stubs=; }
TUNED_PYTHON_STUBS=$stubs run "$py" -m pip install -q --no-index --no-build-isolation --no-deps \
  --root-user-action=ignore --target "$site" ./client/python || { echo "pip install failed"; exit 1; }
export PYTHONPATH=$site${extra:+:$extra}
run "$py" -c "import tuned, grpc, google.protobuf as p; print('tuned from', tuned.__file__, '| grpcio', grpc.__version__, '| protobuf', p.__version__)" ||
  { echo "the package does not import"; exit 1; }

export XDG_RUNTIME_DIR=$(mktemp -d) XDG_STATE_HOME=$(mktemp -d)
unset TUNED_SERVER
.bundle/bin/tuned --gpu 0 > "$out/tuned.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
for _ in $(seq 150); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
[[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] || { echo "tuned did not start"; tail -20 "$out/tuned.log"; exit 1; }
run .bundle/bin/tunectl sweep 1024 1024 1024 --wait || fails=$((fails + 1))
run .bundle/bin/tunectl sweep --family transpose 1024 768 --wait || fails=$((fails + 1))
run .bundle/bin/tunectl sweep --math tf32 2048 2048 2048 --wait || fails=$((fails + 1))  # test_gpu.py: the TMA kernel

# README's Python example, as written there (the indented block from "import torch, tuned").
awk '/^    import torch, tuned$/ {on = 1} on && /^$/ {exit} on {print substr($0, 5)}' README.md > "$out/readme_example.py"
echo "--- README example ($(wc -l < "$out/readme_example.py") lines)"; cat "$out/readme_example.py"
run "$py" "$out/readme_example.py" || fails=$((fails + 1))

tests=client/python/tests
run "$py" -m pytest -p no:cacheprovider -v -s -rs "$tests/test_gpu.py" "$tests/test_gpu_serving.py" \
  || fails=$((fails + 1))
TUNED_BIN_DIR=$PWD/.bundle/bin run "$py" -m pytest -p no:cacheprovider -v -rs \
  "$tests/test_client.py" "$tests/test_kernel.py" "$tests/test_kernel_maps.py" "$tests/test_kernel_spec.py" \
  "$tests/test_blas.py" \
  "$tests/test_ops.py" "$tests/test_ops_16bit.py" "$tests/test_serving.py" "$tests/test_record.py" \
  || fails=$((fails + 1))
echo "python_gpu: $fails step(s) failed"
[[ $fails -eq 0 ]]
